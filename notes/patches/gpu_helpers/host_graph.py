"""Development measurement of graph replay (2f5ed2e): what a
repeated gemm() call costs on the host with its launches replayed as one CUDA graph, against
the same calls launched step by step (packed), through CuPy's launch, and cupy.matmul; a
control with new arrays every call (never a graph); bitwise equality of the graph's C with
the step-by-step C; and each mode end to end against cuBLAS (bench.measure: NaN-poisoned C,
float64 check, alternating rounds)."""
import json
import sys

sys.path.insert(0, ".")
import helpers  # noqa: F401
from helpers.chapters import end_to_end
from helpers.runtime import anyshape as rt, bench, gpu, packed, timing

cp = gpu.cupy()
sync = cp.cuda.get_current_stream().synchronize
out = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": []}
for M, N, K in end_to_end.HOST_SHAPES:
    data = bench.inputs((M, N, K), "float16")
    A, B, C = data.args()
    sets = [bench.inputs((M, N, K), "float16").args() for _ in range(3)]
    row = {"shape": f"{M} x {N} x {K}", "plan": rt.plan_for("auto", M, N, K, rt.aligned_inputs(A, B)).name}
    with packed.no_graphs():
        rt.gemm(A, B, out=C)
        sync()
        want = C.copy()
    for _ in range(3):
        rt.gemm(A, B, out=C)
    sync()
    row["path after 3 calls"] = packed.PATH["launch"]
    row["graph C == step-by-step C"] = bool((C.view(cp.uint16) == want.view(cp.uint16)).all())
    modes = {"graph": lambda: rt.gemm(A, B, out=C), "cupy.matmul": lambda: cp.matmul(A, B, out=C)}
    for rep in range(2):
        for name in (list(modes) + ["packed", "cupy launch", "new arrays"])[:: 1 if rep == 0 else -1]:
            if name == "packed":
                with packed.no_graphs():
                    h = timing.host_cost(lambda: rt.gemm(A, B, out=C), sync)
            elif name == "cupy launch":
                with packed.disabled():
                    h = timing.host_cost(lambda: rt.gemm(A, B, out=C), sync)
            elif name == "new arrays":
                i = [0]

                def call():
                    i[0] = (i[0] + 1) % 3
                    a, b, c = sets[i[0]]
                    rt.gemm(a, b, out=c)
                h = timing.host_cost(call, sync)
            else:
                h = timing.host_cost(modes[name], sync)
            row.setdefault(f"{name} us", []).append(round(h["median_us"], 1))
    for name, ctx in (("graph", None), ("packed", packed.no_graphs)):
        def run(a, b, c):
            rt.gemm(a, b, out=c)
        if ctx is None:
            r = bench.measure(run, (M, N, K), "float16", data=data, rounds=5)
        else:
            with ctx():
                r = bench.measure(run, (M, N, K), "float16", data=data, rounds=5)
        row[f"{name} ratio to cuBLAS"] = round(r.ratio, 3)
        row[f"{name} rel err"] = r.rel_err
    print(json.dumps(row), flush=True)
    out["rows"].append(row)
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "host_graph.json", "w"), indent=1)
