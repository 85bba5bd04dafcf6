"""Nsight Compute counters of chapter 10's ladder: tensor-pipe activity and memory traffic per rung.

Usage (on an sm_90 GPU with Nsight Compute):

    python scripts/ncu_hopper.py --out results/h200-hopper.json [--shape 4096 4096 4096]

It runs itself under

    ncu --clock-control none --target-processes all --print-units base --csv
        --log-file <tmp.csv> --kernel-name regex:^hopper_(tma_wgmma|ws)$
        --metrics <METRICS> python scripts/ncu_hopper.py --child <plan.json>

where the child launches every rung of helpers.chapters.ch10_hopper.LADDER once
(bf16, defaults, on --shape), each checked against a float64 reference. The
parent writes, per rung: the measured counters, the exact ncu command and
provenance. Nsight Compute serializes and replays each launch, so its durations
are not the book's timings; the activity percentages and byte counts are what
the chapter reads (``results.artifact("hopper")``).

Exit status: 0 when the JSON was written, 1 when ncu is missing or profiled nothing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers.chapters import ch10_hopper as ch  # noqa: E402  (after the path set-up)
from helpers.runtime import catalog, gpu, launch, ncu as ncu_tool, verify  # noqa: E402

METRICS = [
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "gpu__time_duration.sum",
]
KERNEL_REGEX = "regex:^hopper_(tma_wgmma|ws)$"


def plan(shape) -> list:
    """Every rung at its defaults, then rung 2's control (CONSUMERS=1, ``ch.SPLIT_STEPS``)."""
    rungs = [{"rung": r, "key": ch.key(r, "bfloat16"), "shape": list(shape), "params": {}} for r in ch.LADDER]
    return rungs + [{"rung": ch.CONTROL, "key": ch.key("r2_warp_specialized", "bfloat16"), "shape": list(shape),
                     "params": dict(ch.SPLIT_STEPS[1][2])}]


def child(plan_file: str) -> None:
    cp = gpu.cupy()
    for it in json.loads(Path(plan_file).read_text()):
        spec = catalog.get(it["key"])
        M, N, K = it["shape"]
        A = verify.random_matrix((M, K), spec.dtype)
        B = verify.random_matrix((K, N), spec.dtype)
        C = cp.empty((M, N), dtype=verify.np_dtype(spec.dtype))
        verify.poison(C)
        launch.gemm(it["key"], A, B, C, **it.get("params", {}))
        cp.cuda.Device().synchronize()
        err = verify.check(C, verify.reference_gemm(A, B), spec.dtype, what=it["key"])
        print(f"child: {it['key']} rel_err {err:.2e}", flush=True)


def main() -> int:
    a = ncu_tool.command_line(__doc__, shape_help="GEMM shape (default 4096 4096 4096)",
                              default_shape=(4096, 4096, 4096))
    if a.child:
        child(a.child)
        return 0
    shape = a.shape
    if gpu.device_info()["cc"] != (9, 0):
        print("ncu_hopper: chapter 10's kernels need an sm_90 GPU; nothing to profile here")
        return 0
    ncu = ncu_tool.find(a.ncu)
    if not ncu:
        print("ncu_hopper: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    items = plan(shape)
    known, unknown, qstate = ncu_tool.query_metrics(ncu, METRICS)
    res = ncu_tool.profile(ncu, __file__, items, KERNEL_REGEX, known)
    print(res["stdout"][-3000:], res["stderr"][-2000:], sep="\n", flush=True)
    if not res["launches"]:
        return 1
    runs = [{**it, "kernel": L["kernel"], "grid": L["grid"], "block": L["block"], "measured": L["metrics"]}
            for it, L in zip(items, res["launches"])]
    for r in runs:
        m = r["measured"]
        print(f"  {r['rung']:22s} tensor pipe {m.get(METRICS[0], float('nan')):5.1f} %  "
              f"DRAM read {m.get('dram__bytes_read.sum', 0) / 1e6:7.1f} MB  L2 {m.get('lts__t_bytes.sum', 0) / 1e9:5.2f} GB")
    doc = {"provenance": ncu_tool.provenance(ncu), "shape": shape, "command": res["command"],
           "metrics_query": qstate, "unavailable_metrics": unknown, "runs": runs}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(f"ncu_hopper: {len(runs)} rungs profiled; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
