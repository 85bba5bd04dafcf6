"""Chapter 6, Tensor Cores with WMMA (kernels/06_wmma.cu).

The catalog entries (two dtypes, two pitfalls); :func:`wrong_layout_run` and
:func:`side_by_side` (the layout pitfall, live or replayed on the CPU);
:func:`fp16_accumulator_demo` / :func:`fp16_accumulator_results` / :func:`fp16_accumulator_table`
(the fp16-accumulator pitfall, model vs kernels);
:func:`show_counters` (what the recorded Nsight Compute counters say holds WMMA back,
beside chapter 7's kernel).
"""
from __future__ import annotations

import numpy as np

from helpers.figures import profiling as prof_fig, show
from helpers.models import counters, mma_sync
from helpers.models.pipeline import emulate_wmma, round_to
from helpers.models.precision import DEMO, fp16_sum_emulation
from helpers.runtime import bench, catalog, gpu, launch, panels, precision, results, verify
from helpers.runtime.catalog import Kernel, frozen_sweep, register

from . import common
from .common import TC_BLOCK, TC_GRID, Sentence, tc_rules


def _wmma_smem(p, acc_bytes=4, cpad=4):
    """Dynamic shared memory of 06_wmma.cu, bytes: the padded stage buffers,
    or the epilogue's per-warp 16 x (WN+CPAD) accumulator strips if larger."""
    pipe = p["STAGES"] * (p["BM"] * (p["BK"] + p["PAD"]) + p["BK"] * (p["BN"] + p["PAD"])) * 2
    warps = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    return max(pipe, warps * 16 * (p["WN"] + cpad) * acc_bytes)


# Defaults and sweep. The sweep was recorded around 128 x 256 blocks of 64 x 64
# warps, BK 32 (_W_SWEEP_BASE: its points keep that meaning); the defaults are its
# winner on the H200 (2026-11-29) for both dtypes: 128 x 128 blocks of four 64 x 64 warps.
_W_SWEEP_BASE = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "PAD": 8, "STAGES": 3, "GROUP_M": 8}
_W_DEFAULTS = {**_W_SWEEP_BASE, "BN": 128}
_W_SWEEP = frozen_sweep(_W_SWEEP_BASE, (
    {"STAGES": 2}, {"STAGES": 4}, {"BM": 256, "BN": 128}, {"BM": 128, "BN": 128},
    {"BM": 128, "BN": 128, "WN": 32}, {"BK": 64}, {"BK": 64, "STAGES": 2},
    {"PAD": 0}, {"PAD": 16}, {"GROUP_M": 1},
    # around the defaults (128 x 128 blocks), for the pipeline figure: PAD, STAGES, GROUP_M
    {"BN": 128, "PAD": 0}, {"BN": 128, "PAD": 16}, {"BN": 128, "STAGES": 2}, {"BN": 128, "STAGES": 4},
    {"BN": 128, "GROUP_M": 1}))
# Minimum compute capability: WMMA fp16 fragments alone would need 7.0, but every entry
# of 06_wmma.cu fills its stages with cp.async (sm_80 or higher, PTX ISA), and bf16
# fragments need 8.0 as well: 8.0 for all (a T4, sm_75, shows the recorded numbers).
_W = dict(chapter=6, file="06_wmma.cu", entry="gemm_wmma", op="gemm", align=16, min_cc=(8, 0),
          choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64), "WM": (32, 64),
                   "WN": (32, 64), "PAD": (0, 8, 16), "STAGES": (2, 3, 4), "GROUP_M": (1, 8)},
          block=TC_BLOCK, grid=TC_GRID, rules=tc_rules, owner=mma_sync.owner_wmma)
register(Kernel(key="wmma_f16", title="WMMA, fp16 in, fp32 accumulate", dtype="float16", out_dtype="float16",
                defaults=dict(_W_DEFAULTS), smem=_wmma_smem, sweep=_W_SWEEP, **_W))
register(Kernel(key="wmma_bf16", title="WMMA, bf16 in, fp32 accumulate", dtype="bfloat16", out_dtype="bfloat16",
                defaults=dict(_W_DEFAULTS), fixed={"BF16": 1}, smem=_wmma_smem, sweep=_W_SWEEP, **_W))
# The pitfalls keep the sweep's base configuration (128 x 256 blocks).
register(Kernel(key="wmma_wrong_layout_pitfall", title="pitfall: B fragment declared col_major",
                dtype="float16", out_dtype="float16", defaults=dict(_W_SWEEP_BASE), fixed={"WRONG_LAYOUT": 1},
                smem=_wmma_smem,
                pitfall="matrix_b declared col_major over a row-major tile: load_matrix_sync reads every 16x16 "
                        "block of B transposed; values look plausible, relative error ~1 (fails the fp16 check)",
                **_W))
register(Kernel(key="wmma_acc_f16_pitfall", title="pitfall: fp16 accumulator fragment",
                dtype="float16", out_dtype="float16", defaults=dict(_W_SWEEP_BASE), fixed={"ACC_F16": 1},
                smem=lambda p: _wmma_smem(p, acc_bytes=2, cpad=8),
                pitfall="accumulator fragment in fp16: with all-positive inputs and large K the running sum's "
                        "ulp outgrows the addends and the sum stops growing. Demo: A = B = 0.5 (exact in fp16), "
                        "K = 65536: every k16 step adds 4; the true sum 16384 is exact in fp16 and wmma_f16 "
                        "returns it, but an fp16 accumulator stops at 8192 (ulp 8: +4 is a tie, rounded back to "
                        "even) after K = 32768. With random normal inputs the error is merely larger than fp32's.",
                **_W))


# ------------------------------------------------------------------ notebook calls
def wrong_layout_run(shape=None, seed: int = 0) -> dict:
    """Run the WMMA layout pitfall and the correct kernel on the same inputs.

    Live: ``wmma_wrong_layout_pitfall`` and ``wmma_f16`` through
    :func:`helpers.runtime.launch.gemm` on fresh fp16 inputs of ``shape`` (default
    1024^3), outputs NaN-poisoned first, and the float64 reference of
    :func:`helpers.runtime.verify.reference_gemm`; ``check`` is
    :func:`helpers.runtime.verify.check`. Recorded, or on a GPU that cannot run them
    (:func:`helpers.runtime.launch.unable`): the same two kernels replayed by
    :func:`emulate_wmma` on the CPU (default shape 128 x 256 x 64, one block), and
    ``check`` is the same :func:`helpers.runtime.verify.check` on NumPy arrays. Returns
    {"C_wrong", "C_right", "ref" (device arrays live, NumPy recorded), "check", "shape",
    "source", "where"}.
    """
    p = catalog.get("wmma_f16").params()
    why = [w for w in (launch.unable(catalog.get(k)) for k in ("wmma_wrong_layout_pitfall", "wmma_f16")) if w]
    if gpu.live() and not why:
        cp = gpu.cupy()
        M, N, K = shape or (1024, 1024, 1024)
        A = verify.random_matrix((M, K), "float16")
        B = verify.random_matrix((K, N), "float16")
        out = {}
        for key, name in (("wmma_wrong_layout_pitfall", "C_wrong"), ("wmma_f16", "C_right")):
            C = cp.empty((M, N), dtype=cp.float16)
            verify.poison(C)
            launch.gemm(key, A, B, C)
            out[name] = C
        return {**out, "ref": verify.reference_gemm(A, B), "check": verify.check, "shape": (M, N, K),
                "source": "live", "where": results.where(True)}
    M, N, K = shape or (128, 256, 64)
    rng = np.random.default_rng(seed)
    A = round_to(rng.standard_normal((M, K)), "float16")
    B = round_to(rng.standard_normal((K, N)), "float16")
    return {"C_wrong": emulate_wmma(A, B, p, wrong_layout=True), "C_right": emulate_wmma(A, B, p),
            "ref": A.astype(np.float64) @ B.astype(np.float64), "check": verify.check,
            "shape": (M, N, K), "source": "emulated",
            "where": "replayed on the CPU by helpers.models.pipeline.emulate_wmma ("
                     + (f"the kernels {why[0]}" if why else "no GPU in this run") + "; the GPU run uses the real kernel)"}


def side_by_side(run: dict, n: int = 6, row: int = 0) -> list[dict]:
    """The first ``n`` elements of row ``row`` of C from :func:`wrong_layout_run`:
    reference, correct kernel, wrong-layout kernel (host floats)."""
    def host(x):
        return np.asarray(x.get() if hasattr(x, "get") else x, dtype=np.float64)
    ref, right, wrong = (host(run[k])[row, :n] for k in ("ref", "C_right", "C_wrong"))
    return [{"element": f"C[{row}, {j}]", "float64 reference": round(float(ref[j]), 3),
             "correct layout (row_major B)": round(float(right[j]), 3),
             "wrong layout (col_major B)": round(float(wrong[j]), 3)} for j in range(n)]


# ------------------------------------------------------------------ the fp16-accumulator pitfall
# A sum that stops growing. With A = B = 0.5 (exact in fp16) and K = 65536, every element of
# C is exactly 16384 (also exact in fp16). wmma_f16 (fp32 accumulator) returns it; the same
# kernel with an fp16 accumulator fragment (wmma_acc_f16_pitfall) stops at 8192: each
# 16x16x16 step adds 16 * 0.25 = 4, and once the running sum reaches 8192 its fp16 spacing
# (ulp) is 8, so 8192 + 4 is a tie that rounds back to the even 8192. The NumPy float16
# emulation of the same sum (helpers.models.precision.fp16_sum_emulation) runs anywhere and
# predicts the stall.
ACCUMULATOR_KERNELS = (("wmma_f16", "kernel_fp32_acc"), ("wmma_acc_f16_pitfall", "kernel_fp16_acc"))


def fp16_accumulator_demo(M: int = DEMO["M"], N: int = DEMO["N"], K: int = DEMO["K"]) -> dict:
    """The fp16-accumulator pitfall on A = B = 0.5 (M x K, K x N, fp16).

    Always returns the NumPy emulation: ``emulated_fp16_k16`` (fp16 sum, 4
    added per k16 step), ``emulated_fp16_scalar`` (fp16 sum, 0.25 per k) and
    ``exact``. Live (GPU), also runs ``wmma_f16`` (fp32 accumulator) and
    ``wmma_acc_f16_pitfall`` (fp16 accumulator) through
    :func:`helpers.runtime.launch.gemm` and adds ``kernel_fp32_acc`` and
    ``kernel_fp16_acc`` (the value of C[0, 0]) and ``*_all_equal`` (True when
    every element of C has that value); without a GPU those are None.
    ``source`` is "live" or "emulated"; ``where`` says on what.
    This is what the GPU recorder stores as ``extras.fp16_accumulator``.
    (Constant inputs on purpose: the demonstration needs the exact sum, not a timing.)
    """
    e16 = fp16_sum_emulation(K, step=16)
    e1 = fp16_sum_emulation(K, step=1)
    out = {"M": M, "N": N, "K": K, "a": DEMO["a"], "b": DEMO["b"], "exact": e16["exact"],
           "emulated_fp16_k16": e16["final_fp16"], "emulated_fp16_k16_stalls_at": e16["stalls_at_k"],
           "emulated_fp16_scalar": e1["final_fp16"], "emulated_fp16_scalar_stalls_at": e1["stalls_at_k"],
           "emulated_fp32": e16["final_fp32"],
           "kernel_fp32_acc": None, "kernel_fp16_acc": None,
           "kernel_fp32_acc_all_equal": None, "kernel_fp16_acc_all_equal": None,
           "source": "emulated", "where": "NumPy float16 on the CPU"}
    if not gpu.live():
        return out
    cp = gpu.cupy()
    A = cp.full((M, K), DEMO["a"], dtype=cp.float16)
    B = cp.full((K, N), DEMO["b"], dtype=cp.float16)
    for key, name in ACCUMULATOR_KERNELS:
        C = cp.empty((M, N), dtype=cp.float16)
        verify.poison(C)
        launch.gemm(key, A, B, C)
        Ch = cp.asnumpy(C).astype(np.float64)
        out[name] = float(Ch[0, 0])
        out[name + "_all_equal"] = bool((Ch == Ch[0, 0]).all())
    out["source"] = "live"
    out["where"] = results.where(True)
    return out


def fp16_accumulator_results() -> dict:
    """Live: :func:`fp16_accumulator_demo`. Recorded, or on a GPU that cannot run the two
    kernels (:func:`helpers.runtime.launch.unable`, said in ``where``): ``extras.fp16_accumulator``
    of the results file if present (``source`` "recorded", ``where`` naming the
    GPU run), else the emulation alone with ``recorded`` False."""
    why = [w for w in (launch.unable(catalog.get(k)) for k, _ in ACCUMULATOR_KERNELS) if w]
    if gpu.live() and not why:
        return {**fp16_accumulator_demo(), "recorded": True}
    data = results.load()
    rec = data.get("extras", {}).get("fp16_accumulator")
    if rec:
        where = results.where(False, data["provenance"])
        if why:
            where = f"{where.split('; no GPU in this run')[0]} (this GPU cannot run the kernels: they {why[0]})"
        return {**rec, "source": "recorded", "where": where, "recorded": True}
    return {**fp16_accumulator_demo(), "recorded": False}


def fp16_accumulator_table() -> None:
    """The fp16-accumulator table: exact sum, NumPy models and (when a GPU ran
    them) both kernels, from :func:`fp16_accumulator_results`.
    AssertionError when the fp32-accumulating kernel is not exact."""
    d = fp16_accumulator_results()
    d = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in d.items()}
    rows = [{"accumulator": "exact (0.25 x K)", "C[i, j]": d["exact"], "how": "arithmetic"},
            {"accumulator": "fp32, NumPy model", "C[i, j]": d["emulated_fp32"], "how": "NumPy float32 on the CPU"},
            {"accumulator": "fp16, +4 per k16 step, NumPy model", "C[i, j]": d["emulated_fp16_k16"],
             "how": f"NumPy float16 on the CPU; stops growing after k = {d['emulated_fp16_k16_stalls_at']}"},
            {"accumulator": "fp16, +0.25 per k, NumPy model", "C[i, j]": d["emulated_fp16_scalar"],
             "how": f"NumPy float16 on the CPU; stops growing after k = {d['emulated_fp16_scalar_stalls_at']}"}]
    if d["recorded"] and d["kernel_fp32_acc"] is not None:
        rows += [{"accumulator": "fp32: wmma_f16 kernel", "C[i, j]": d["kernel_fp32_acc"],
                  "how": f"{d['where']}; all elements equal: {d['kernel_fp32_acc_all_equal']}"},
                 {"accumulator": "fp16: wmma_acc_f16_pitfall kernel", "C[i, j]": d["kernel_fp16_acc"],
                  "how": f"{d['where']}; all elements equal: {d['kernel_fp16_acc_all_equal']}"}]
        assert d["kernel_fp32_acc"] == d["exact"], "the fp32-accumulating kernel must be exact here"
        print(f"fp16 accumulator kernel: {d['kernel_fp16_acc']} of {d['exact']}; the NumPy model predicted "
              f"{d['emulated_fp16_k16']}" + (" (agrees)" if d["kernel_fp16_acc"] == d["emulated_fp16_k16"] else ""))
    else:
        rows.append({"accumulator": "the kernels", "C[i, j]": None,
                     "how": "not recorded yet: run this notebook on a GPU (or record extras.fp16_accumulator)"})
    show.table(rows, ["accumulator", "C[i, j]", "how"],
               f"C = A B with A = B = 0.5 in fp16, K = {d['K']}: every element should be {d['exact']:.0f}.")


# What holds WMMA back: its Nsight Compute panel beside chapter 7's mma.sync kernel, per
# HMMA (both issue the same 16x8x16 Tensor Core instructions), recorded on the H200.
COUNTERS = (
    ("duration_us", "duration of the launch under ncu (us)", 0),
    ("tensor_pct", "Tensor pipe busy, % of peak", 1),
    ("inst_per_op", "instructions executed per HMMA (all kinds, counted)", 2),
    ("lsu_per_op", "LSU-pipe instructions per HMMA (estimate)", 2),
    ("shared_waves_per_op", "shared-memory wavefronts per HMMA (counted)", 2),
    ("conflict_share", "bank conflicts, share of shared wavefronts", 3),
    ("fma_pct", "FMA pipe busy (it also runs integer IMAD), % of peak", 1),
    ("issue_pct", "issue slots used, % of peak", 1),
    ("l2_pct", "L2 busy, % of peak (its busiest sub-unit)", 1),
    ("l2_tag_time", "L2 tag requests, for the same work (WMMA = 1)", 2, "relative"),
    ("l2_sector_time", "L2 sectors, for the same work (WMMA = 1)", 2, "relative"),
    ("stall:wait", "stall: fixed-latency wait, cycles per instruction", 2),
    ("stall:math_pipe_throttle", "stall: math pipe throttle (a math pipe is full)", 2),
    ("stall:long_scoreboard", "stall: long scoreboard (global data)", 2),
    ("stall:short_scoreboard", "stall: short scoreboard (shared-memory data)", 2),
    ("stall:barrier", "stall: barrier", 2),
)


def counter_rows(shape=(4096, 4096, 4096)) -> tuple[list, str]:
    """(rows, where): wmma_f16 (heaven 6) against mma_sync_f16 (heaven 7) per HMMA, from the
    recorded panels (:func:`helpers.runtime.panels.recorded`); KeyError when not recorded."""
    return common.recorded_counter_rows("wmma_f16", "mma_sync_f16", "hmma", COUNTERS, shape)


def show_counters(shape=(4096, 4096, 4096)) -> list:
    """The counter table of WMMA against mma.sync at their default parameters, labelled,
    and what it shows in two sentences, every number read from the rows. Returns the rows."""
    rows, where = counter_rows(shape)
    prof_fig.show_counter_comparison(
        rows, "WMMA", "mma.sync",
        f"Heaven 6 (wmma_f16) against heaven 7 (mma_sync_f16), {where}: one launch each, M = N = K = {shape[0]}, "
        "each kernel at its default "
        "parameters (WMMA 128 x 128 x 32 blocks of 4 warps, 3 stages; mma.sync 128 x 256 x 64 blocks of 8 warps, "
        "4 stages). Counts are per HMMA instruction (the same number in both); 'estimate' and 'WMMA = 1' rows: "
        "see helpers.models.counters. Stalls: cycles per issued instruction. Not profiled live here.")
    r = counters.by_field(rows)
    print(f"Same Tensor Core work, but the Tensor pipe is busy {r['tensor_pct']['a']:.0f} % of the time under WMMA "
          f"against {r['tensor_pct']['b']:.0f} % under mma.sync; WMMA executes {r['inst_per_op']['a']:.1f} "
          f"instructions per HMMA against {r['inst_per_op']['b']:.1f}. Shared memory is not the difference "
          f"({r['shared_waves_per_op']['a']:.2f} vs {r['shared_waves_per_op']['b']:.2f} wavefronts per HMMA, "
          f"{r['conflict_share']['a']:.1%} of them conflicts). WMMA's busiest unit is the L2 "
          f"({r['l2_pct']['a']:.0f} % of peak; {1 / r['l2_tag_time']['b']:.1f}x mma.sync's tag requests for the "
          f"same work); mma.sync's warps wait on a full math pipe, the Tensor pipe being its busy one "
          f"({r['stall:math_pipe_throttle']['b']:.2f} cycles per instruction, WMMA's "
          f"{r['stall:math_pipe_throttle']['a']:.2f}).")
    return rows


# ------------------------------------------------------------------ thin notebook cells (each cell one call)
def show_timings(shape=(4096, 4096, 4096)) -> None:
    """Measure (or read) wmma_f16 and wmma_bf16, each against cuBLAS of its own dtype: the
    records as a table, and one line per kernel with its ratio and relative error. A wrong
    result raises in :func:`helpers.runtime.bench.gemm` (an AssertionError)."""
    recs = bench.gemm(["wmma_f16"], shape) + bench.gemm(["wmma_bf16"], shape)
    common.show_records(recs, f"Heaven 6, {common.mnk(shape)}, each kernel against cuBLAS of its own dtype.")
    for r in recs:
        if r["value"]:
            print(f"{r['kernel']}: {r['ratio']:.0%} of cuBLAS {r['dtype']}, relative error {r['rel_err']:.1e}")


def show_tolerances() -> None:
    """The tolerance of every dtype's check beside its unit roundoff, as a table (definitions)."""
    show.table(precision.tolerance_rows(), ["dtype", "tolerance", "unit roundoff", "tolerance / roundoff"],
               "verify.TOLERANCE (the relative error a check accepts) and the unit roundoff of each format "
               "(half the spacing of numbers in [1, 2)). Definitions, not measurements.")


def show_wrong_layout(shape=None) -> dict:
    """Run the layout pitfall beside the correct kernel (:func:`wrong_layout_run`) and show the
    first elements of C of both beside the reference. Returns the run, for :func:`show_layout_check`."""
    run = wrong_layout_run(shape)
    show.table(side_by_side(run), ["element", "float64 reference", "correct layout (row_major B)",
                                   "wrong layout (col_major B)"],
               f"The first elements of C, M, N, K = {run['shape']}, {run['where']}.")
    return run


def show_layout_check(run: dict) -> None:
    """Check both outputs of ``run`` against the float64 reference: the correct kernel must
    pass and the wrong layout must be caught; print what the check says about the latter.
    Raises AssertionError (verify.WrongResult) if the correct kernel fails, and AssertionError
    if the wrong layout passes (the check would be broken)."""
    err = run["check"](run["C_right"], run["ref"], "float16", what="wmma_f16")   # raises WrongResult if wrong
    if not err <= verify.TOLERANCE["float16"]:
        raise AssertionError(f"wmma_f16: relative error {err:.3e} above the float16 tolerance")
    try:
        run["check"](run["C_wrong"], run["ref"], "float16", what="wmma_wrong_layout_pitfall")
    except verify.WrongResult as err:
        print("caught:", err)
        return
    raise AssertionError("the wrong layout passed the check: the check is broken")


RESOURCE_POINTS = ({}, {"STAGES": 2}, {"STAGES": 4}, {"BN": 256}, {"WN": 32})


def show_resources(shape=(4096, 4096, 4096)) -> None:
    """Registers, shared memory and occupancy of wmma_f16 at :data:`RESOURCE_POINTS` (changes from
    the defaults), or a note saying what is missing (:func:`helpers.chapters.common.show_resources`)."""
    common.show_resources([("wmma_f16", pt) for pt in RESOURCE_POINTS],
                          ["config", "threads", "registers", "shared memory (KiB)", "spill bytes", "blocks/SM",
                           "occupancy"], "Resources of wmma_f16, {where}.", shape, label="params", missing="note")


def ldsm_rows(pads=(0, 8, 16), shape=(512, 512, 512)) -> list:
    """Per PAD: the ldmatrix instructions and bank conflicts of one wmma_f16 launch on ``shape``
    predicted by :func:`helpers.models.mma_sync.predict_ncu_wmma_ldsm`, and conflicts per ldmatrix."""
    rows = []
    for pad in pads:
        pred = mma_sync.predict_ncu_wmma_ldsm(catalog.get("wmma_f16").params(PAD=pad), shape)
        n = pred["sm__sass_inst_executed_op_ldsm.sum"]
        conflicts = pred["sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"]
        rows.append({"PAD": pad, "ldmatrix instructions": n, "bank conflicts": conflicts,
                     "conflicts per ldmatrix": conflicts / n})
    return rows


def show_ldsm_model(pads=(0, 8, 16), shape=(512, 512, 512)) -> None:
    """The table of :func:`ldsm_rows`, captioned as a prediction."""
    rows = ldsm_rows(pads, shape)
    d = catalog.get("wmma_f16").defaults
    show.table(rows, list(rows[0]), "Model of the WMMA kernel's fragment loads (helpers/models/mma_sync.py), "
               f"default tile {d['BM']} x {d['BN']} x {d['BK']} (warp tile {d['WM']} x {d['WN']}), "
               f"M = N = K = {shape[0]}; a prediction, not a measurement.")


# ------------------------------------------------------------------ numbers the prose quotes (MyST-NB glue)
def _ratio(key: str, shape=(4096, 4096, 4096), **changes) -> float:
    """The recorded ratio to cuBLAS of ``key`` at its shipped defaults with ``changes``
    (results/<gpu>.json); KeyError naming the configuration when it is not recorded."""
    spec = catalog.get(key)
    p = {**spec.defaults, **changes}
    rec = results.lookup(key, p, spec.dtype, list(shape))
    if rec is None or rec.get("ratio") is None:
        raise KeyError(f"{key} {p} at {list(shape)} is not recorded in results/{results.DEFAULT_SLUG}.json")
    return rec["ratio"]


def sweep_verdict(sweep: list, default: float) -> Sentence:
    """What the prose says of the recorded sweep (ratios to cuBLAS) against the default's ratio."""
    above = [x for x in sweep if x > default]
    if not above:
        return Sentence("no configuration beats the defaults")
    return Sentence(f"{len(above)} of {len(sweep)} configurations come out above the defaults, by at most "
                    f"{max(above) - default:.3f}")


def prose_values(shape=(4096, 4096, 4096)) -> dict:
    """Every measured number chapter 6's prose quotes, read from the records only: the ratios to
    cuBLAS of results/<gpu>.json (``wmma_*``, ``mma_ratio``), the recorded Nsight Compute panels of
    WMMA and mma.sync compared per HMMA (``cmp_*``, :func:`counter_rows`; percentages in %,
    stalls in cycles per instruction, ``*_x`` multiples), the shared-memory bank conflicts of
    WMMA's panel by kind (``wmma_conflicts_ld`` / ``_st``, counts) and chapter 7's recorded ladder
    (``ladder_*``, results/<gpu>-ladder.json), ``wmma_stages4`` / ``wmma_group1`` (a fourth stage,
    plain block order) and ``wmma_sweep_verdict`` (:func:`sweep_verdict`). ``bytes_per_flop_x``: the operand bytes per FLOP
    of WMMA's block tile over mma.sync's (1/BM + 1/BN, arithmetic). ``wmma_pitch_a0`` / ``_b0``: the
    bytes between two rows of the shared A and B tiles at the defaults with ``PAD = 0`` (2 * BK,
    2 * BN; arithmetic). KeyError when a record is missing."""
    r = counters.by_field(counter_rows(shape)[0])
    wm, mm = catalog.get("wmma_f16").defaults, catalog.get("mma_sync_f16").defaults
    sweep = [x["ratio"] for x in results.load()["runs"] if x["kernel"] == "wmma_f16" and x.get("ratio")
             and list(x["shape"]) == list(shape)]
    runs, _, _ = panels.recorded()
    m = prof_fig.find_run(runs, "wmma_f16", shape)["metrics"]
    ladder = (results.artifact("ladder") or {}).get("runs", {}).get("float16")
    if not ladder:
        raise KeyError(f"chapter 7's ladder is not recorded (results/{results.DEFAULT_SLUG}-ladder.json)")
    return {
        "wmma_ratio": _ratio("wmma_f16", shape),
        "wmma_best": max(sweep), "wmma_pad0": _ratio("wmma_f16", shape, PAD=0),
        "wmma_stages4": _ratio("wmma_f16", shape, STAGES=4), "wmma_group1": _ratio("wmma_f16", shape, GROUP_M=1),
        "wmma_sweep_verdict": sweep_verdict(sweep, _ratio("wmma_f16", shape)),
        "mma_ratio": _ratio("mma_sync_f16", shape),
        "cmp_tensor_wmma": r["tensor_pct"]["a"], "cmp_tensor_mma": r["tensor_pct"]["b"],
        "cmp_tensor_idle": 100 - r["tensor_pct"]["a"],
        "cmp_duration_x": r["duration_us"]["a"] / r["duration_us"]["b"],
        "cmp_inst_wmma": r["inst_per_op"]["a"], "cmp_inst_mma": r["inst_per_op"]["b"],
        "cmp_inst_x": r["inst_per_op"]["a"] / r["inst_per_op"]["b"],
        "cmp_waves_wmma": r["shared_waves_per_op"]["a"], "cmp_waves_mma": r["shared_waves_per_op"]["b"],
        "cmp_conflict_pct": 100 * r["conflict_share"]["a"],
        "cmp_fma_wmma": r["fma_pct"]["a"], "cmp_fma_mma": r["fma_pct"]["b"],
        "cmp_l2_wmma": r["l2_pct"]["a"], "cmp_l2_tag_x": 1 / r["l2_tag_time"]["b"],
        "cmp_l2_sector_x": 1 / r["l2_sector_time"]["b"],
        "cmp_wait_wmma": r["stall:wait"]["a"], "cmp_wait_mma": r["stall:wait"]["b"],
        "cmp_throttle_wmma": r["stall:math_pipe_throttle"]["a"],
        "cmp_throttle_mma": r["stall:math_pipe_throttle"]["b"],
        "wmma_conflicts_ld": int(m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]),
        "wmma_conflicts_st": int(m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]),
        "bytes_per_flop_x": (1 / wm["BM"] + 1 / wm["BN"]) / (1 / mm["BM"] + 1 / mm["BN"]),
        "wmma_pitch_a0": 2 * wm["BK"], "wmma_pitch_b0": 2 * wm["BN"],
        "ladder_wmma": ladder[0]["ratio"], "ladder_mma_equal": ladder[1]["ratio"], "ladder_top": ladder[-1]["ratio"],
        "ladder_equal_share": (ladder[1]["ratio"] - ladder[0]["ratio"]) / (ladder[-1]["ratio"] - ladder[0]["ratio"]),
    }
