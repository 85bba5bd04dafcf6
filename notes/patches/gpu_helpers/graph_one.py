"""Development measurement (notes only): is a one-launch plan faster through gemm() as a CUDA
graph than as a packed cuLaunchKernel? packed.GRAPH_MIN_STEPS = 2 today ("a plan of one launch
gains nothing from a graph"); on the H200 record of d59a3f5, graph plans cost 15.5-17 us of CPU
per gemm() against 19-20 for packed one-launch plans, and on the zoo's smallest shapes the
one-launch plan lost to two-launch ones by 20-30 %.

Per shape (fp16): CPU us per call (timing.host_cost, median of 200) with GRAPH_MIN_STEPS 1 and 2,
two rounds in opposite order; each end to end against cuBLAS (bench.measure: NaN-poisoned C,
float64 check, alternating rounds, 5 rounds); C bit-equal between the two; the launch path taken.

    python3 .gpu/graph_one.py OUT.json
"""
import json
import sys

sys.path.insert(0, ".")
import helpers  # noqa: F401
from helpers.runtime import anyshape as rt, bench, gpu, packed, timing

SHAPES = [(64, 64, 64), (256, 256, 64), (64, 30000, 64), (30000, 64, 64), (1000, 1001, 64),
          (1, 4096, 4096), (4096, 4096, 4096), (8192, 8192, 64)]
cp = gpu.cupy()
sync = cp.cuda.get_current_stream().synchronize
out = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": []}
for M, N, K in SHAPES:
    data = bench.inputs((M, N, K), "float16")
    A, B, C = data.args()
    row = {"shape": f"{M} x {N} x {K}", "plan": rt.plan_for("auto", M, N, K, rt.aligned_inputs(A, B)).name}
    want = None
    for rep in range(2):
        for g in ((2, 1) if rep == 0 else (1, 2)):
            packed.GRAPH_MIN_STEPS = g
            for _ in range(3):
                rt.gemm(A, B, out=C)
            sync()
            row[f"path {g}"] = packed.PATH["launch"]
            if want is None:
                want = C.copy()
            else:
                row[f"C equal {g}"] = bool((C.view(cp.uint16) == want.view(cp.uint16)).all())
            row.setdefault(f"host us {g}", []).append(round(timing.host_cost(lambda: rt.gemm(A, B, out=C), sync)["median_us"], 1))
    for g in (2, 1, 2, 1):
        packed.GRAPH_MIN_STEPS = g

        def run(a, b, c):
            rt.gemm(a, b, out=c)
        r = bench.measure(run, (M, N, K), "float16", data=data, rounds=5)
        row.setdefault(f"ratio {g}", []).append(round(r.ratio, 3))
        row[f"rel err {g}"] = r.rel_err
    packed.GRAPH_MIN_STEPS = 2
    print(json.dumps(row), flush=True)
    out["rows"].append(row)
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "graph_one.json", "w"), indent=1)
