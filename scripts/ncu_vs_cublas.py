"""Chapter 5's best FP32 kernel and cuBLAS's FP32 GEMM under the same Nsight Compute run.

Usage (on a GPU with Nsight Compute):

    python scripts/ncu_vs_cublas.py --out results/h200-ncu-cublas.json [--key cp_async]
                                    [--shape 4096 4096 4096]
    python scripts/ncu_vs_cublas.py --child-cublas float32 M N K     # the profiled child
    python scripts/ncu_vs_cublas.py --tile-control --out results/h200-ncu-cublas.json
        # add (or redo) the timing of the kernel at its default tile and at cuBLAS's tile

Two profiles, each of one launch and with the same sections and counters (chapter 8's
panel sections, LaunchStats and InstructionStats, chapter 8's panel metrics and the
counters that :mod:`helpers.models.counters` compares per FFMA):

    ncu --clock-control none --target-processes all --kernel-name regex:(gemm|xmma|cutlass)
        --launch-count 1 --section ... --metrics ... --page raw --csv --print-units base
        python scripts/ncu_vs_cublas.py --child-cublas float32 4096 4096 4096
    ncu ... --kernel-name regex:^(sgemm_cp_async)$ ...
        python scripts/ncu_panels.py --launch cp_async --shape 4096 4096 4096

The first child runs ``cupy.matmul`` once on random inputs (cuBLAS picks its kernel by the
shape; the profiled launch is the GEMM kernel itself, whose name gives its tile); the second
launches the catalog kernel once at its defaults, checked against float64. The record keeps
both launches' raw metrics (numeric ones), their launch configuration (block size, registers,
shared memory, grid), both exact command lines and the provenance, for chapter 8's "the last
few per cent" table (``helpers.chapters.ch08_profiling.cublas_rows``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import helpers  # noqa: F401  (fills the catalog)
from helpers.models import counters
from helpers.runtime import catalog, ncu as ncu_tool, panels

SECTIONS = tuple(ncu_tool.PANEL_SECTIONS) + ("LaunchStats", "InstructionStats")
EXTRA = [counters.LSU_PCT, counters.L1_WAVE_PCT, counters.MIO_PCT, counters.CYCLES, counters.SMS,
         counters.ALL_INST, counters.SHARED_WAVES, counters.L2_TAG_PCT, counters.L2_SECTOR_PCT,
         "l1tex__t_sector_hit_rate.pct", "smsp__inst_executed.sum",
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active"]
CUBLAS_REGEX = "regex:(gemm|xmma|cutlass)"


def child_cublas(dtype: str, M: int, N: int, K: int) -> None:
    import cupy as cp
    A = cp.random.standard_normal((M, K), dtype=cp.float32).astype(dtype)
    B = cp.random.standard_normal((K, N), dtype=cp.float32).astype(dtype)
    C = cp.matmul(A, B)
    cp.cuda.Device().synchronize()
    print(f"child: cupy.matmul {M}x{N}x{K} {dtype}, C[0,0] = {float(C[0, 0]):.4f}", flush=True)


def tile_control(doc: dict, key: str) -> dict:
    """Time ``key`` at its default tile and at cuBLAS's (from ``doc``'s cuBLAS kernel name),
    warp tile 64 x 64 for both, the default first and last (bench.gemm, 5 alternating rounds)."""
    from helpers.runtime import bench, results
    p = dict(catalog.get(key).params())
    t = counters.cublas_tile(doc["runs"][0]["kernel"])
    theirs = {**p, **{k: t[k] for k in ("BM", "BN", "BK", "STAGES") if k in t}}
    theirs_bk16 = {**theirs, "BK": 16}
    recs = bench.gemm([(key, p), (key, theirs), (key, theirs_bk16), (key, p)], tuple(doc["shape"]), rounds=5)
    return {"provenance": results.provenance(),     # the profile above may come from another commit
            "what": f"{key} at its default tile and at cuBLAS's tile ({t}), {doc['shape']}, "
                    "helpers.runtime.bench.gemm with 5 alternating rounds against cuBLAS, in the order listed",
            "command": "python scripts/ncu_vs_cublas.py --tile-control",
            "rows": [{"BM": r["params"]["BM"], "BN": r["params"]["BN"], "BK": r["params"]["BK"],
                      "STAGES": r["params"]["STAGES"], "TFLOP/s": r["value"], "cuBLAS TFLOP/s": r["reference_value"],
                      "ratio": r["ratio"], "rel_err": r["rel_err"]} for r in recs]}


def one(ncu: str, child: list, regex: str, metrics: list) -> dict:
    res = ncu_tool.profile_raw(ncu, child, regex, metrics, sections=SECTIONS, launch_count=1, echo=True)
    if len(res["launches"]) != 1:
        raise SystemExit(f"ncu_vs_cublas: ncu profiled {len(res['launches'])} launches (rc={res['returncode']}): "
                         f"{(res['stderr'] or res['stdout'])[-1500:]}")
    L = res["launches"][0]
    return {"kernel": L["kernel"], "grid": L["grid"], "block": L["block"], "command": res["command"],
            "metrics": {k: v for k, v in L["metrics"].items() if isinstance(v, float)}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--key", default="cp_async", help="catalog kernel compared with cuBLAS (default cp_async)")
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--ncu", help="path of ncu (default: PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    ap.add_argument("--tile-control", action="store_true",
                    help="time the kernel at its default tile and at cuBLAS's; add it to --out")
    ap.add_argument("--child-cublas", nargs=4, metavar=("DTYPE", "M", "N", "K"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child_cublas:
        dt, *mnk = a.child_cublas
        child_cublas(dt, *map(int, mnk))
        return 0
    if not a.out:
        ap.error("--out is required")
    if a.tile_control:
        doc = json.loads(Path(a.out).read_text())
        doc["tile_control"] = tile_control(doc, a.key)
        Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
        for r in doc["tile_control"]["rows"]:
            print(r, flush=True)
        return 0
    ncu = ncu_tool.find(a.ncu)
    if not ncu:
        print("ncu_vs_cublas: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    spec = catalog.get(a.key)
    known, unknown, qstate = ncu_tool.query_metrics(ncu, list(dict.fromkeys(panels.METRICS + EXTRA)))
    M, N, K = a.shape
    me = Path(__file__).resolve()
    blas = one(ncu, [sys.executable, str(me), "--child-cublas", spec.dtype, str(M), str(N), str(K)],
               CUBLAS_REGEX, known)
    ours = one(ncu, panels.child_argv(a.key, a.shape), panels.kernel_regex([a.key]), known)
    runs = [{"who": "cuBLAS (cupy.matmul)", "dtype": spec.dtype, "shape": list(a.shape), **blas},
            {"who": a.key, "key": a.key, "params": dict(spec.params()), "dtype": spec.dtype, "shape": list(a.shape),
             **ours}]
    for r in runs:
        m = r["metrics"]
        print(f"  {r['who']:22s} {r['kernel'][:90]}  regs {m.get('launch__registers_per_thread')}  "
              f"block {m.get('launch__block_size')}  issue {m.get('sm__inst_issued.avg.pct_of_peak_sustained_active')}%  "
              f"duration {m.get('gpu__time_duration.sum')} ns", flush=True)
    doc = {"provenance": ncu_tool.provenance(ncu), "shape": list(a.shape), "sections": list(SECTIONS),
           "metrics_query": qstate, "unavailable_metrics": unknown, "runs": runs}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"ncu_vs_cublas: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
