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
prediction (helpers/fragments.py: predict_ncu_mma_sync,
predict_ncu_wmma_ldsm) and their comparison; plus metrics this ncu does not
know (queried with ``ncu --query-metrics``), the exact ncu command, and
provenance. tests/gpu/test_swizzle_ncu.py asserts on that JSON.

Exit status: 0 when ncu ran and the JSON was written (whether or not the model
matched: the summary line says), 1 when ncu is missing or failed.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

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
    """The launches, in order: helpers.fragments.ncu_plan with the shape attached."""
    from helpers import fragments
    return [{**it, "shape": shape} for it in fragments.ncu_plan(shape)]


def predict(item) -> dict:
    from helpers import fragments
    shape = tuple(item["shape"])
    if item["key"].startswith("mma_sync"):
        return fragments.predict_ncu_mma_sync(item["params"], shape)
    return fragments.predict_ncu_wmma_ldsm(item["params"], shape)


# ------------------------------------------------------------------ child: the launches
def child(plan_file: str) -> None:
    import numpy as np
    from helpers import catalog, gpu, launch, verify
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
def find_ncu(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    p = shutil.which("ncu")
    for d in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if not p and d and os.path.isfile(os.path.join(d, "bin", "ncu")):
            p = os.path.join(d, "bin", "ncu")
    return p


def available_metrics(ncu: str) -> tuple[list, list, str]:
    """Split METRICS into (known, unknown) by ``ncu --query-metrics`` (base
    names). If the query fails or looks empty, keep all and say so."""
    r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    text = r.stdout
    if r.returncode != 0 or text.count("\n") < 50:
        return list(METRICS), [], f"query failed (rc={r.returncode}); using all metrics"
    names = {line.split()[0] for line in text.splitlines() if line.strip() and "__" in line.split()[0]}
    known = [m for m in METRICS if m.rsplit(".", 1)[0] in names]
    unknown = [m for m in METRICS if m not in known]
    return known, unknown, "ok"


def parse_csv(path: str) -> list[dict]:
    """ncu --csv rows -> one dict per kernel launch, in launch order:
    {"id", "kernel", "grid", "block", "metrics": {name: float}}."""
    lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.startswith('"')]
    launches: dict[str, dict] = {}
    for row in csv.DictReader(lines):
        lid = row.get("ID")
        if lid is None or row.get("Metric Name") is None:
            continue
        L = launches.setdefault(lid, {"id": int(lid), "kernel": row.get("Kernel Name", ""),
                                      "grid": row.get("Grid Size", ""), "block": row.get("Block Size", ""),
                                      "metrics": {}})
        raw = (row.get("Metric Value") or "").replace(",", "").strip()
        try:
            L["metrics"][row["Metric Name"]] = float(raw)
        except ValueError:
            L["metrics"][row["Metric Name"]] = raw
    return sorted(launches.values(), key=lambda x: x["id"])


def compare(pred: dict, meas: dict) -> dict:
    """For every predicted metric that was measured: predicted, measured, equal?"""
    out = {}
    for k, v in pred.items():
        if k in meas and isinstance(meas[k], float):
            out[k] = {"predicted": v, "measured": meas[k], "match": abs(meas[k] - v) <= 0.01 * max(abs(v), 1)}
    return out


def provenance(ncu: str) -> dict:
    """helpers.results.provenance() (GPU, driver, CUDA runtime, CuPy, date, commit) plus the ncu version."""
    from helpers import results
    prov = results.provenance()
    try:
        prov["ncu"] = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    except Exception:
        pass
    return prov


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write (required unless --child)")
    ap.add_argument("--shape", nargs=3, type=int, default=[512, 512, 512], metavar=("M", "N", "K"))
    ap.add_argument("--ncu", help="path of ncu (default: PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return 0
    if not a.out:
        ap.error("--out is required")
    ncu = find_ncu(a.ncu)
    if not ncu:
        print("ncu_ldmatrix: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    items = plan(a.shape)
    known, unknown, qstate = available_metrics(ncu)
    with tempfile.TemporaryDirectory() as tmp:
        plan_file = os.path.join(tmp, "plan.json")
        Path(plan_file).write_text(json.dumps(items))
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--print-units", "base",
               "--csv", "--log-file", log, "--kernel-name", KERNEL_REGEX, "--metrics", ",".join(known),
               sys.executable, str(Path(__file__).resolve()), "--child", plan_file]
        print("running:", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout[-4000:], r.stderr[-4000:], sep="\n", flush=True)
        launches = parse_csv(log) if os.path.exists(log) else []
        if r.returncode != 0 or len(launches) != len(items):
            print(f"ncu_ldmatrix: ncu rc={r.returncode}, {len(launches)} profiled launches for "
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
    doc = {"provenance": provenance(ncu), "shape": a.shape, "command": " ".join(cmd),
           "metrics_query": qstate, "unavailable_metrics": unknown, "runs": runs}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(f"ncu_ldmatrix: {passed} passed, {failed} failed (model vs ncu); wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
