"""Nsight Compute bank-conflict counters of the Tensor Core kernels, model vs hardware.

Usage (on a GPU machine with Nsight Compute; counters may need root or
NVreg_RestrictProfilingToAdminUsers=0):

    python scripts/ncu_ldmatrix.py --out gpu-logs/ncu_ldmatrix.json
    python scripts/ncu_ldmatrix.py --out x.json --shape 512 512 512 --ncu /usr/local/cuda/bin/ncu

It runs itself under

    ncu --clock-control none --target-processes all --print-units base --csv
        --log-file <tmp.csv> --kernel-name regex:^gemm_(mma_sync|wmma)$
        --metrics <METRICS> python scripts/ncu_ldmatrix.py --child <plan.json>

where the child launches, once each and in this order: gemm_mma_sync
(mma_sync_f16 defaults) with SWIZZLE=1 and SWIZZLE=0, and gemm_wmma
(wmma_f16 defaults) with PAD=8 and PAD=0, on (M, N, K) = --shape (default
512^3), checking each result against cuBLAS. The parent parses the CSV (one
row per kernel launch and metric), pairs the launches with the plan in order,
and writes JSON: for every launch the measured counters, the model's
prediction (helpers/models/mma_sync.py: predict_ncu_mma_sync,
predict_ncu_wmma_ldsm) and their comparison; plus metrics this ncu does not
know (queried with ``ncu --query-metrics``), the exact ncu command, and
provenance. tests/gpu/test_swizzle_ncu.py asserts on that JSON.

Exit status: 0 when ncu ran and the JSON was written (whether or not the model
matched: the summary line says), 1 when ncu is missing or failed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers.chapters import ch07_mma_sync as ch7  # noqa: E402  (after the path set-up)
from helpers.models import mma_sync  # noqa: E402
from helpers.runtime import catalog, gpu, launch, ncu as ncu_tool, verify  # noqa: E402

METRICS = [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "sm__sass_inst_executed_op_ldsm.sum",
    "sm__sass_inst_executed_op_ldgsts.sum",
    "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
]
KERNEL_REGEX = "regex:^gemm_(mma_sync|wmma)$"


def plan(shape) -> list:
    """The launches, in order: helpers.chapters.ch07_mma_sync.ncu_plan with the shape attached."""
    return [{**it, "shape": shape} for it in ch7.ncu_plan(shape)]


def predict(item) -> dict:
    shape = tuple(item["shape"])
    if item["key"].startswith("mma_sync"):
        return mma_sync.predict_ncu_mma_sync(item["params"], shape)
    return mma_sync.predict_ncu_wmma_ldsm(item["params"], shape)


# ------------------------------------------------------------------ child: the launches
def child(plan_file: str) -> None:
    import numpy as np
    cp = gpu.cupy()
    items = json.loads(Path(plan_file).read_text())
    rng = np.random.default_rng(0)
    for it in items:
        spec = catalog.get(it["key"])
        M, N, K = it["shape"]
        dt = verify.np_dtype(spec.dtype)
        A = cp.asarray(rng.standard_normal((M, K)).astype(np.float32).astype(dt))
        B = cp.asarray(rng.standard_normal((K, N)).astype(np.float32).astype(dt))
        C = cp.empty((M, N), dtype=dt)
        verify.poison(C)
        launch.gemm(it["key"], A, B, C, **it["params"])
        cp.cuda.Device().synchronize()
        err = verify.check(C, verify.reference_gemm(A, B), spec.dtype, what=it["label"])
        print(f"child: {it['label']} rel_err {err:.2e}", flush=True)


# ------------------------------------------------------------------ parent: run ncu, compare
def compare(pred: dict, meas: dict) -> dict:
    """For every predicted metric that was measured: predicted, measured, equal?"""
    out = {}
    for k, v in pred.items():
        if k in meas and isinstance(meas[k], float):
            out[k] = {"predicted": v, "measured": meas[k], "match": abs(meas[k] - v) <= 0.01 * max(abs(v), 1)}
    return out


def main() -> int:
    a = ncu_tool.command_line(__doc__)
    if a.child:
        child(a.child)
        return 0
    ncu = ncu_tool.find(a.ncu)
    if not ncu:
        print("ncu_ldmatrix: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    items = plan(a.shape)
    known, unknown, qstate = ncu_tool.query_metrics(ncu, METRICS)
    res = ncu_tool.profile(ncu, __file__, items, KERNEL_REGEX, known)
    print(res["stdout"][-4000:], res["stderr"], sep="\n", flush=True)
    launches = res["launches"]
    if res["returncode"] != 0 or len(launches) != len(items):
        print(f"ncu_ldmatrix: ncu rc={res['returncode']}, {len(launches)} profiled launches for "
              f"{len(items)} planned; see the output above", file=sys.stderr)
        if not launches:
            return 1
    runs, passed, failed = [], 0, 0
    for it, L in zip(items, launches):
        pred = predict(it)
        cmp_ = compare(pred, L["metrics"])
        passed += sum(c["match"] for c in cmp_.values())
        failed += sum(not c["match"] for c in cmp_.values())
        runs.append({**it, "kernel": L["kernel"], "grid": L["grid"], "block": L["block"],
                     "measured": L["metrics"], "predicted": pred, "comparison": cmp_})
        for k, c in cmp_.items():
            print(f"  {it['label']:34s} {k:70s} model {c['predicted']:>12.0f}  ncu {c['measured']:>12.0f}"
                  f"  {'ok' if c['match'] else 'DIFFERS'}")
    doc = {"provenance": ncu_tool.provenance(ncu), "shape": a.shape, "command": res["command"],
           "metrics_query": qstate, "unavailable_metrics": unknown, "runs": runs}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(f"ncu_ldmatrix: {passed} passed, {failed} failed (model vs ncu); wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
