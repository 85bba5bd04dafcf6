"""Chapter 7, mma.sync PTX, ldmatrix, swizzled shared memory, multistage pipeline (kernels/07_mma_sync.cu).

The catalog entries (two dtypes); :func:`ncu_plan` / :func:`ncu_rows` /
:func:`show_ncu_ldmatrix` (the launches ``scripts/ncu_ldmatrix.py`` profiles,
and the model next to ``results.artifact("ldmatrix")``); :func:`show_probes`
(the PROBE ladder: leave one stage out).
"""
from __future__ import annotations

from helpers.figures import probes as probes_fig, show
from helpers.models import mma_sync
from helpers.models.mma_sync import MMA_TEACHING, WMMA_NCU, predict_ncu_mma_sync, predict_ncu_wmma_ldsm
from helpers.runtime import catalog, probes, results
from helpers.runtime.catalog import Kernel, frozen_sweep, register

from .common import TC_BLOCK, TC_GRID, tc_rules


def _mma_sync_rules(p, s):
    t = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32 if p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0 else 0
    return tc_rules(p, s) + [
        (not p["SWIZZLE"] or t == 0 or t % p["BN"] == 0, "SWIZZLE", p["SWIZZLE"],
         f"=1 needs threads per block ({t}) to be a multiple of BN={p['BN']}: each thread's 16-byte "
         "chunks must lie a multiple of 8 rows apart to share one swizzle key"),
        (t == 0 or (p["BM"] + p["BN"]) * p["BK"] // 8 <= 16 * t, "cp.async chunks per thread",
         (p["BM"] + p["BN"]) * p["BK"] // 8 // max(t, 1),
         "must be <= 16 per k-tile (more in-flight copies per thread spill registers next to the "
         "128 accumulators); use more warps or a smaller BK"),
        (p["BM"] * s[2] < 2 ** 31, "K", s[2],
         f"BM*K = {p['BM'] * s[2]} must be < 2^31: a thread's chunk offsets in A are 32-bit"),
        (p["BK"] * s[1] < 2 ** 31, "N", s[1],
         f"BK*N = {p['BK'] * s[1]} must be < 2^31: a thread's chunk offsets in B are 32-bit"),
    ]


# The sweep: candidate configurations timed on the H200 around _M_SWEEP_BASE (its
# points keep that meaning). Defaults: the best of the sweep recorded on the H200
# (2026-11-29) over both dtypes: BK 64 with 4 stages on 128 x 256 blocks, with the
# copies spread over the k16 steps; {"LOAD_SPREAD": 0} at the defaults is the burst.
_M_SWEEP_BASE = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4,
                 "SWIZZLE": 1, "GROUP_M": 8, "LOAD_SPREAD": 1}
_M_SWEEP = frozen_sweep(_M_SWEEP_BASE, (
    {"STAGES": 3}, {"STAGES": 5}, {"STAGES": 2},
    {"BM": 256, "BN": 128, "STAGES": 3}, {"BM": 256, "BN": 128},
    {"BK": 64, "STAGES": 3}, {"BK": 64}, {"BM": 256, "BN": 128, "BK": 64, "STAGES": 3},
    {"BM": 128, "BN": 128}, {"BM": 128, "BN": 128, "WM": 32}, {"BM": 128, "BN": 128, "WN": 32},
    {"GROUP_M": 1}, {"SWIZZLE": 0}, {"BM": 256, "BN": 128, "BK": 64}, {"BK": 64, "LOAD_SPREAD": 0},
    # around the defaults (BK 64, 4 stages), for the pipeline figure: SWIZZLE, GROUP_M, STAGES
    {"BK": 64, "SWIZZLE": 0}, {"BK": 64, "GROUP_M": 1}, {"BK": 64, "STAGES": 2},
    {"BK": 64, "SWIZZLE": 0, "GROUP_M": 1}))
# mma.sync.m16n8k16 (fp16 and bf16), cp.async and ldmatrix's use here: sm_80 or newer.
_M = dict(chapter=7, file="07_mma_sync.cu", entry="gemm_mma_sync", op="gemm", align=16, min_cc=(8, 0),
          defaults={**_M_SWEEP_BASE, "BK": 64},
          choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64), "WM": (32, 64),
                   "WN": (32, 64), "STAGES": (2, 3, 4, 5), "SWIZZLE": (0, 1), "GROUP_M": (1, 8),
                   "LOAD_SPREAD": (0, 1)},
          block=TC_BLOCK, grid=TC_GRID,
          smem=lambda p: p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2,
          rules=_mma_sync_rules, sweep=_M_SWEEP, owner=mma_sync.owner_mma_sync)
register(Kernel(key="mma_sync_f16", title="mma.sync m16n8k16 + ldmatrix + swizzle, fp16",
                dtype="float16", out_dtype="float16", **_M))
register(Kernel(key="mma_sync_bf16", title="mma.sync m16n8k16 + ldmatrix + swizzle, bf16",
                dtype="bfloat16", out_dtype="bfloat16", fixed={"BF16": 1}, **_M))


# ------------------------------------------------------------------ notebook calls
_NCU_SHORT = {
    "sm__sass_inst_executed_op_ldsm.sum": "ldmatrix instructions",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": "ldmatrix wavefronts",
    "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum": "ldmatrix bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts (op_ld)",
    "sm__sass_inst_executed_op_ldgsts.sum": "cp.async instructions",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum": "cp.async bank conflicts",
}


def ncu_plan(shape=(512, 512, 512)) -> list[dict]:
    """The four launches ``scripts/ncu_ldmatrix.py`` profiles, in its order."""
    mma, wm = catalog.get("mma_sync_f16"), catalog.get("wmma_f16")
    return [
        {"key": "mma_sync_f16", "params": mma.params(**{**MMA_TEACHING, "SWIZZLE": 1}), "label": "mma.sync, swizzled smem"},
        {"key": "mma_sync_f16", "params": mma.params(**{**MMA_TEACHING, "SWIZZLE": 0}),
         "label": "mma.sync, plain row-major smem"},
        {"key": "wmma_f16", "params": wm.params(**{**WMMA_NCU, "PAD": 8}), "label": "WMMA, rows padded by 8"},
        {"key": "wmma_f16", "params": wm.params(**{**WMMA_NCU, "PAD": 0}), "label": "WMMA, unpadded rows"},
    ]


def ncu_rows(doc: dict | None = None, shape=(512, 512, 512)) -> list[dict]:
    """Model vs Nsight Compute, one row per launch and counter.

    ``doc``: ``results.artifact("ldmatrix")``, or None (then every
    ``measured`` is None and only the model is shown). Rows: {"launch",
    "counter", "model", "measured", "agree"}."""
    rows = []
    if doc:
        items = [(r["label"], r["predicted"], r.get("measured", {})) for r in doc.get("runs", [])]
    else:
        items = []
        for it in ncu_plan(shape):
            pred = (predict_ncu_mma_sync if it["key"].startswith("mma_sync") else predict_ncu_wmma_ldsm)(
                it["params"], tuple(shape))
            items.append((it["label"], pred, {}))
    for label, pred, meas in items:
        for metric, short in _NCU_SHORT.items():
            if metric not in pred:
                continue
            m = meas.get(metric)
            m = m if isinstance(m, (int, float)) else None
            rows.append({"launch": label, "counter": short, "model": pred[metric], "measured": m,
                         "agree": None if m is None else ("yes" if abs(m - pred[metric]) <= 0.01 * max(abs(pred[metric]), 1)
                                                          else "NO")})
    return rows


def show_ncu_ldmatrix(shape=(512, 512, 512)) -> None:
    """Model vs Nsight Compute table of the ldmatrix and cp.async counters
    (``results.artifact("ldmatrix")``; the model alone when not recorded)."""
    doc = results.artifact("ldmatrix")
    prov = (doc or {}).get("provenance", {})
    where = (f"measured with {prov.get('ncu', 'Nsight Compute')} on {prov.get('gpu', '?')} on "
             f"{prov.get('date', '?')} (results/h200-ldmatrix.json)" if doc else
             "Nsight Compute counters not recorded yet (results/h200-ldmatrix.json is absent): model only")
    show.table(ncu_rows(doc, shape), ["launch", "counter", "model", "measured", "agree"],
               f"Model (helpers/models/mma_sync.py) vs Nsight Compute, M = N = K = 512, one launch each; {where}.")


def show_probes(shape=(4096, 4096, 4096)) -> None:
    """The PROBE ladder of 07_mma_sync.cu for fp16 and bf16 (figure for fp16,
    one table for both), measured live or read from the results file; a note
    per dtype that was never recorded."""
    probe_rows, pr_where = [], ""
    for dt in ("float16", "bfloat16"):
        pr, pr_where = probes.probe_results(dt, shape)
        if pr is None:
            show.note(f"The probe ladder is not recorded yet ({pr_where}); run this notebook on a GPU.",
                      title=f"Probes, {dt}")
            continue
        probe_rows += [{"dtype": dt, **r} for r in pr["rows"]]
        if dt == "float16":
            show.figure(probes_fig.probe_figure(pr, title=f"mma.sync fp16 4096^3: leave one stage out ({pr_where})"))
        top, base = pr["rows"][-1]["ratio"], pr["rows"][0]["ratio"]
        print(f"{dt}: the mma instructions alone reach {top:.3f} of cuBLAS; the kernel {base:.3f}, "
              f"{base / top:.0%} of that ceiling. {probes.power_note(pr['power'])}")
    if probe_rows:
        show.table(probe_rows, ["dtype", "probe", "label", "stage", "TFLOP/s", "cuBLAS TFLOP/s", "ratio", "saves"],
                   f"PROBE ladder of 07_mma_sync.cu at its defaults, M = N = K = 4096, each rung timed next to cuBLAS "
                   f"(medians of 3 interleaved rounds); {pr_where}.")
