"""Chapter 7, mma.sync PTX, ldmatrix, swizzled shared memory, multistage pipeline (kernels/07_mma_sync.cu).

The catalog entries (two dtypes); :func:`ncu_plan` / :func:`ncu_rows` /
:func:`show_ncu_ldmatrix` (the launches ``scripts/ncu_ldmatrix.py`` profiles,
and the model next to ``results.artifact("ldmatrix")``); :func:`mma_sync_probes` /
:func:`probe_results` / :func:`show_probes` (the PROBE ladder: leave one stage out);
:func:`ladder_rungs` / :func:`show_ladder` (from
WMMA to this chapter's defaults one parameter at a time, timed against cuBLAS in one run).
The numbers its Markdown quotes are read from the records in :mod:`helpers.chapters.prose_ch07`.
"""
from __future__ import annotations

from helpers.figures import fragments as fragments_fig, probes as probes_fig, show, style
from helpers.models import mma_sync
from helpers.models.mma_sync import MMA_TEACHING, WMMA_NCU, predict_ncu_mma_sync, predict_ncu_wmma_ldsm
from helpers.runtime import bench, catalog, gpu, launch, ncu, power, precision, results, timing
from helpers.runtime.catalog import Kernel, frozen_sweep, register

from . import common
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
          rules=_mma_sync_rules, sweep=_M_SWEEP, owner=mma_sync.owner_mma_sync,
          # the probe ladder (helpers.runtime.probes): the kernel with stages left out
          experiments={"PROBE": ("experiments/07_mma_probe.cu", "gemm_mma_probe")})
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
            m = style.count(m) if isinstance(m, (int, float)) else None
            rows.append({"launch": label, "counter": short, "model": style.count(pred[metric]), "measured": m,
                         "agree": None if m is None else ("yes" if abs(m - pred[metric]) <= 0.01 * max(abs(pred[metric]), 1)
                                                          else "NO")})
    return rows


def show_ncu_ldmatrix(shape=(512, 512, 512)) -> None:
    """Model vs Nsight Compute table of the ldmatrix and cp.async counters
    (``results.artifact("ldmatrix")``; the model alone when not recorded)."""
    doc = results.artifact("ldmatrix")
    prov = (doc or {}).get("provenance", {})
    where = (f"measured with {ncu.version_text(prov.get('ncu'))} on {prov.get('gpu', '?')} on "
             f"{prov.get('date', '?')} (results/h200-ldmatrix.json)" if doc else
             "Nsight Compute counters not recorded yet (results/h200-ldmatrix.json is absent): model only")
    show.table(ncu_rows(doc, shape), ["launch", "counter", "model", "measured", "agree"],
               f"Model (helpers/models/mma_sync.py) vs Nsight Compute, M = N = K = 512, one launch each; {where}.")


# ------------------------------------------------------------------ the PROBE ladder: leave one stage out
# Without hardware counters, the cost of a stage of a kernel can still be measured: build
# variants that skip it and time them in the same run. kernels/07_mma_sync.cu has such a
# ladder behind -DPROBE=n; each rung leaves out one more stage, so the difference between
# two rungs is the cost of the stage the second one drops. Rungs 1-4 compute wrong results
# on purpose and are never checked; rung 0 is checked like every kernel. The GPU's clock and
# power are sampled during the timings: a Tensor Core kernel on an H200 can run into the
# board's power limit, and then the clock, not the kernel, sets the pace.
PROBE_LADDER = (
    (0, "the kernel", "-"),
    (1, "no C stores", "epilogue (C stores)"),
    (2, "... and no main-loop cp.async", "global -> shared copies"),
    (3, "... and no barrier", "cp.async.wait + __syncthreads"),
    (4, "... and no ldmatrix: mma only", "shared -> register loads (ldmatrix)"),
)
PROBE_KEYS = {"float16": "mma_sync_f16", "bfloat16": "mma_sync_bf16"}


def mma_sync_probes(dtype: str = "float16", shape=(4096, 4096, 4096), rounds: int = 3, **params) -> dict:
    """Time the PROBE ladder of 07_mma_sync.cu live, each rung against cuBLAS.

    Args:
        dtype: "float16" or "bfloat16" (picks ``mma_sync_f16`` / ``mma_sync_bf16``).
        shape: (M, N, K).
        rounds: each rung is one :func:`helpers.runtime.bench.measure` on the same inputs,
            timed against cuBLAS in this many alternating rounds; rows report medians.
        params: overrides of the kernel's default tile parameters
            (``LOAD_SPREAD`` must stay 1: the probes live in that loop).

    Returns ``{"rows": [...], "power": PowerSampler.summary(), "params", "dtype", "shape"}``;
    each row has ``probe``, ``label``, ``stage`` (what the rung drops),
    ``ms``, ``TFLOP/s``, ``cuBLAS TFLOP/s``, ``ratio`` (of the rung's TFLOP/s to cuBLAS's)
    and ``saves`` (ratio gained over the previous rung).
    Raises ValueError for bad parameters, RuntimeError without a GPU,
    WrongResult if rung 0 is wrong.
    """
    key = PROBE_KEYS.get(dtype)
    if key is None:
        raise ValueError(f"dtype={dtype!r}: must be one of {tuple(PROBE_KEYS)}")
    timing.check_rounds(rounds)
    spec = catalog.get(key)
    p = spec.params(**params)
    if p.get("LOAD_SPREAD") != 1:
        raise ValueError(f"LOAD_SPREAD={p.get('LOAD_SPREAD')}: must be 1 (the probes are in that loop)")
    shape = tuple(shape)
    builds = [launch.prepare(key, shape, extra_defines={"PROBE": n} if n else None, **p) for n, _, _ in PROBE_LADDER]
    data = bench.inputs(shape, dtype)

    def rung(n, L, check=False, timed=True):
        return bench.measure(lambda A, B, C: L(A, B, C, *shape), shape, dtype, data=data, check=check,
                             timed=timed, rounds=rounds, chapter=7, kernel=key, params={**p, "PROBE": n})
    rung(0, builds[0], check=True, timed=False)   # the kernel is checked; rungs 1-4 are wrong on purpose
    with power.PowerSampler() as ps:              # each rung against its own cuBLAS runs, alternated
        recs = [rung(n, L) for (n, _, _), L in zip(PROBE_LADDER, builds)]
    rows, prev = [], None
    for (n, label, stage), r in zip(PROBE_LADDER, recs):
        rows.append({"probe": n, "label": label, "stage": stage, "ms": r.ms, "TFLOP/s": r.value,
                     "cuBLAS TFLOP/s": r.reference_value, "ratio": r.ratio,
                     "saves": None if prev is None else round(r.ratio - prev, 4)})
        prev = r.ratio
    return {"rows": rows, "power": ps.summary(), "params": p, "dtype": dtype, "shape": list(shape)}


def probe_results(dtype: str = "float16", shape=(4096, 4096, 4096)) -> tuple[dict | None, str]:
    """:func:`mma_sync_probes` live, or the run recorded in results/<gpu>.json
    (``extras.mma_sync_probes[dtype]``) without a GPU or on one that cannot run the
    kernel (:func:`helpers.runtime.launch.unable`, said in the label); returns (result, where-label).
    The result is None when nothing was recorded."""
    key = PROBE_KEYS.get(dtype, PROBE_KEYS["float16"])
    why = launch.unable(catalog.get(key))
    if gpu.live() and not why:
        return mma_sync_probes(dtype, shape), results.where(True)
    data = results.load()
    rec = data.get("extras", {}).get("mma_sync_probes", {}).get(dtype)
    where = results.where(False, data["provenance"])
    if why:
        where = f"{where.split('; no GPU in this run')[0]} ({key} {why})"
    return rec, where


def show_probes(shape=(4096, 4096, 4096)) -> None:
    """The PROBE ladder of 07_mma_sync.cu for fp16 and bf16 (figure for fp16,
    one table for both), measured live or read from the results file; a note
    per dtype that was never recorded."""
    probe_rows, pr_where = [], ""
    for dt in ("float16", "bfloat16"):
        pr, pr_where = probe_results(dt, shape)
        if pr is None:
            show.note(f"The probe ladder is not recorded yet ({pr_where}); run this notebook on a GPU.",
                      title=f"Probes, {dt}")
            continue
        probe_rows += [{"dtype": dt, **r, "saves TFLOP/s": None if i == 0 else
                        round(r["TFLOP/s"] - pr["rows"][i - 1]["TFLOP/s"], 1)} for i, r in enumerate(pr["rows"])]
        if dt == "float16":
            show.figure(probes_fig.probe_figure(pr, title=f"mma.sync fp16 4096^3: leave one stage out ({pr_where})"))
        top, base = pr["rows"][-1]["ratio"], pr["rows"][0]["ratio"]
        print(f"{dt}: the mma instructions alone reach {top:.3f} of cuBLAS; the kernel {base:.3f}, "
              f"{base / top:.0%} of that ceiling. {power.power_note(pr['power'])}")
    if probe_rows:
        show.table(probe_rows, ["dtype", "probe", "label", "stage", "TFLOP/s", "cuBLAS TFLOP/s", "ratio", "saves",
                                ("saves TFLOP/s", "saves (TFLOP/s)")],
                   f"PROBE ladder of 07_mma_sync.cu at its defaults, M = N = K = 4096, each rung timed next to cuBLAS "
                   f"(medians of 3 interleaved rounds); 'saves' is the gain in the ratio to cuBLAS, each rung "
                   f"divided by the cuBLAS of its own rounds, so it can differ in sign from the TFLOP/s columns when "
                   f"cuBLAS moved between rungs ('saves (TFLOP/s)' is the same step without cuBLAS); {pr_where}.")


# ------------------------------------------------------------------ from WMMA to mma.sync, one change at a time
# Rung 0 is chapter 6's WMMA kernel at its shipped defaults. Rung 1 is the mma.sync kernel at
# the same block tile, warp tile, BK, stages and block order, with its copies issued in one
# burst at the top of each k-tile, as WMMA issues them (LOAD_SPREAD=0). Each later rung changes
# one parameter toward chapter 7's shipped defaults; the last rung is those defaults.
# What rung 0 -> 1 changes is the code, which no parameter separates: mma.sync m16n8k16 with
# explicit ldmatrix instead of WMMA's fragments, the XOR swizzle instead of padded rows (both
# conflict-free), fragments double-buffered in registers, the epilogue without a shared strip.
LADDER_FIRST = {"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 64, "STAGES": 3, "SWIZZLE": 1,
                "GROUP_M": 8, "LOAD_SPREAD": 0}
LADDER_STEPS = (
    ("LOAD_SPREAD", 1, "the next tile's copies spread over the k16 steps instead of one burst"),
    ("STAGES", 4, "a fourth shared-memory stage"),
    ("BN", 256, "128 x 256 block tiles: 8 warps of 64 x 64 instead of 4 (tile and warp count together)"),
    ("BK", 64, "BK 64: half as many k-tiles, barriers and waits"),
)
LADDER_KEYS = {"float16": ("wmma_f16", "mma_sync_f16"), "bfloat16": ("wmma_bf16", "mma_sync_bf16")}
LADDER_ARTIFACT = "ladder"      # results/<gpu>-ladder.json, written by scripts/record_ladder.py


def ladder_rungs(dtype: str = "float16") -> list[dict]:
    """The rungs, in order: {"rung", "key", "params", "change" (short), "what" (in words)}.
    ValueError for a dtype other than float16 / bfloat16."""
    if dtype not in LADDER_KEYS:
        raise ValueError(f"dtype={dtype!r}: must be one of {tuple(LADDER_KEYS)}")
    wk, mk = LADDER_KEYS[dtype]
    out = [{"rung": 0, "key": wk, "params": dict(catalog.get(wk).defaults), "change": "WMMA",
            "what": "chapter 6's WMMA kernel at its defaults (rows padded by 8, copies in one burst)"},
           {"rung": 1, "key": mk, "params": dict(LADDER_FIRST), "change": "mma.sync",
            "what": "the mma.sync kernel at WMMA's tiles, stages and block order: the code changes, "
                    "no parameter does"}]
    p = dict(LADDER_FIRST)
    for name, v, what in LADDER_STEPS:
        p = {**p, name: v}
        out.append({"rung": len(out), "key": mk, "params": dict(p), "change": f"{name} {v}", "what": what})
    return out


def ladder_check(rungs: list, shape=(4096, 4096, 4096), smem_limit: int | None = None) -> None:
    """Every rung against its catalog entry's rules (ValueError naming the rung), before
    anything compiles."""
    for r in rungs:
        try:
            catalog.get(r["key"]).validate(r["params"], shape, smem_limit=smem_limit)
        except ValueError as e:
            raise ValueError(f"ladder rung {r['rung']} ({r['change']}): {e}") from None


def ladder_measure(dtype: str = "float16", shape=(4096, 4096, 4096)) -> list:
    """Time every rung live (needs a GPU): one :func:`helpers.runtime.bench.gemm` call, so every
    rung is verified and timed against cuBLAS in alternating rounds in the same run. Returns
    the records, each with "rung", "change" and "what" added."""
    rungs = ladder_rungs(dtype)
    ladder_check(rungs, shape)
    recs = bench.gemm([(r["key"], r["params"]) for r in rungs], shape)
    return [{**rec, "rung": r["rung"], "change": r["change"], "what": r["what"]} for r, rec in zip(rungs, recs)]


def ladder_results(dtype: str = "float16", shape=(4096, 4096, 4096)) -> tuple[list, str, str]:
    """(records, where, short where): measured now on a GPU that runs both kernels; else the
    ladder recorded in one run (``results/<gpu>-ladder.json``); else each rung's own record in
    results/<gpu>.json (the sweeps, each timed against cuBLAS in its own run; a rung never
    recorded has value None)."""
    rungs = ladder_rungs(dtype)
    ladder_check(rungs, shape)
    if gpu.live() and not any(launch.unable(catalog.get(r["key"]), r["params"]) for r in rungs):
        recs = ladder_measure(dtype, shape)
        w = bench.where(recs) + ", every rung in the same run"
        return recs, w, w
    doc = results.artifact(LADDER_ARTIFACT)
    got = ((doc or {}).get("runs") or {}).get(dtype)
    if got and [g["params"] for g in got] == [r["params"] for r in rungs] and list(doc.get("shape", [])) == list(shape):
        prov = doc["provenance"]
        short = f"recorded on {prov.get('gpu', '?')} on {prov.get('date', '?')}, every rung in the same run"
        return got, (f"{short}, commit {prov.get('commit', '?')} "
                     f"(results/{results.DEFAULT_SLUG}-{LADDER_ARTIFACT}.json)"), short
    out = []
    for r in rungs:
        spec = catalog.get(r["key"])
        rec = results.lookup(r["key"], r["params"], spec.dtype, list(shape))
        out.append({**(rec or {"kernel": r["key"], "params": r["params"], "value": None, "ratio": None}),
                    "rung": r["rung"], "change": r["change"], "what": r["what"]})
    gpu_name = results.load()["provenance"].get("gpu", "?")
    dates = ", ".join(sorted({(x.get("recorded") or {}).get("date", "?") for x in out if x.get("value")}))
    return out, (f"the ladder is not recorded in one run yet: each rung is its own sweep record in "
                 f"results/{results.DEFAULT_SLUG}.json ({gpu_name}, {dates}), timed against cuBLAS in its "
                 f"own run; rungs without a record are blank"), \
        f"recorded on {gpu_name} ({dates}): sweep records, separate runs"


def ladder_rows(recs: list) -> list:
    """Table rows: rung, change, what, TFLOP/s, ratio to cuBLAS, "step" (ratio minus that of
    the nearest rung above with a value, whose number is "over"; None without a value) and
    "step TFLOP/s" (the same difference in TFLOP/s, which does not move with cuBLAS)."""
    rows, prev = [], None
    for r in recs:
        ratio = r.get("ratio")
        step = None if ratio is None or prev is None else round(ratio - prev["ratio"], 4)
        rows.append({"rung": r["rung"], "change": r["change"], "what": r["what"], "TFLOP/s": r.get("value"),
                     "ratio": ratio, "step": step,
                     "step TFLOP/s": None if step is None or r.get("value") is None or prev.get("TFLOP/s") is None
                     else round(r["value"] - prev["TFLOP/s"], 1),
                     "over": None if step is None else prev["rung"],
                     "when": (r.get("recorded") or {}).get("date")})
        prev = rows[-1] if ratio is not None else prev
    return rows


def show_ladder(dtype: str = "float16", shape=(4096, 4096, 4096)) -> list:
    """The ladder from WMMA to this chapter's defaults: a bar figure of each rung's ratio to
    cuBLAS and a table of the steps, measured now or recorded (labelled). Returns the rows."""
    recs, where, short = ladder_results(dtype, shape)
    rows = ladder_rows(recs)
    show.figure(probes_fig.ladder_figure(rows, f"From WMMA to mma.sync, one change per rung ({dtype}, "
                                               f"{shape[0]}^3)<br><sup>{short}</sup>"))
    cols = ["rung", "change", "TFLOP/s", ("ratio", "ratio to cuBLAS"), ("step", "step (ratio gained)"),
            ("step TFLOP/s", "step (TFLOP/s gained)"), ("over", "over rung")]
    if any(r["when"] for r in rows) and len({r["when"] for r in rows if r["when"]}) > 1:
        cols.append(("when", "recorded"))
    show.table(rows, cols, f"Each rung changes one thing from the rung above (hover a bar for what); {dtype}, "
                           f"M = N = K = {shape[0]}; the step is the gain in the ratio to cuBLAS, each rung against "
                           f"the cuBLAS of its own rounds, so a step and the TFLOP/s can disagree in sign when "
                           f"cuBLAS moved (the TFLOP/s step beside it does not move with cuBLAS); {where}.")
    have = [r for r in rows if r["ratio"] is not None]
    if len(have) == len(rows):
        total = rows[-1]["ratio"] - rows[0]["ratio"]
        print(f"WMMA {rows[0]['ratio']:.3f} -> mma.sync {rows[-1]['ratio']:.3f} of cuBLAS: "
              + "; ".join(f"{r['change']} {r['step']:+.3f} ({r['step'] / total:.0%})" for r in rows[1:]) + ".")
    else:
        print(f"{len(rows) - len(have)} of {len(rows)} rungs have no record yet (rungs "
              + ", ".join(str(r["rung"]) for r in rows if r["ratio"] is None) + "): run this notebook on a GPU, "
              "or python scripts/record_ladder.py there.")
    return rows


def swizzle_values() -> dict:
    """The swizzle paragraph of this chapter, to glue: ``fig_BK``, the BK of its figure, its table and the
    recorded Nsight Compute run (:data:`helpers.models.mma_sync.MMA_TEACHING`), and ``mma_BK``, the
    default; for each, the bytes of a row of A (``fig_A_row_bytes``, ...) and the ways of the bank
    conflict a plain row-major layout gives its ldmatrix phases (``fig_A_ways``, the bank model)."""
    out = {}
    for name, bk in (("fig", MMA_TEACHING["BK"]), ("mma", catalog.get("mma_sync_f16").params()["BK"])):
        ways = next(r["phase 0"] for r in fragments_fig.ldmatrix_phase_table({"BK": bk})
                    if r["layout"].startswith("plain") and r["operand"].startswith("A"))
        out.update({f"{name}_BK": bk, f"{name}_A_row_bytes": 2 * bk, f"{name}_A_ways": ways})
    return out


# ------------------------------------------------------------------ thin notebook cells (each cell one call)
def show_timings(shape=(4096, 4096, 4096)) -> None:
    """Measure (or read) WMMA and mma.sync in each dtype, each dtype in one run against its own
    cuBLAS: the records as a table, and one line per dtype (mma.sync's ratio to cuBLAS and to
    WMMA). A wrong result raises in :func:`helpers.runtime.bench.gemm` (an AssertionError)."""
    f16 = bench.gemm(["wmma_f16", "mma_sync_f16"], shape)
    bf16 = bench.gemm(["wmma_bf16", "mma_sync_bf16"], shape)
    common.show_records(f16 + bf16, f"Heavens 6 and 7, {common.mnk(shape)}.")
    for w, m in (f16, bf16):
        if w["value"] and m["value"]:
            print(f"{m['dtype']}: mma.sync reaches {m['ratio']:.0%} of cuBLAS, "
                  f"{bench.speedup(m, w):.2f}x the WMMA kernel (the quotient of the two ratios to cuBLAS)")


RESOURCE_POINTS = ({}, {"STAGES": 2}, {"STAGES": 3}, {"STAGES": 5}, {"BK": 32}, {"BK": 32, "STAGES": 5},
                   {"SWIZZLE": 0}, {"LOAD_SPREAD": 0})


def show_resources(shape=(4096, 4096, 4096)) -> None:
    """Registers, shared memory and occupancy of mma_sync_f16 at :data:`RESOURCE_POINTS` (changes
    from the defaults) as a table (:func:`helpers.runtime.launch.resource_rows`). A configuration
    that is refused keeps its row, marked "refused", and the rule it breaks is printed under the
    table, one line each. A note when neither a GPU nor nvcc is here."""
    rows, where = launch.resource_rows([("mma_sync_f16", pt) for pt in RESOURCE_POINTS], shape, label="params")
    if not rows:
        show.note(f"Registers and shared memory are read from the compiled kernel: this {where}.", title="Resources")
        return
    refused = []
    for r in rows:
        if "refused" in r:
            name, _, gpu_why = r["config"].partition(" [not on this GPU: ")
            refused.append(f"{name}: {gpu_why.rstrip(']') or r['refused']}")
            r.clear()
            r.update({"config": f"{name} (refused)", "registers": "not compiled: the rule is under the table"})
    show.table(rows, ["config", "threads", "registers", "shared memory (KiB)", "spill bytes", "blocks/SM",
                      "occupancy"], f"Resources of mma_sync_f16 (changes from the defaults), {where}.")
    for line in refused:
        print("refused before compiling:", line)


REFUSED = ({"BM": 64, "BN": 64}, {"BM": 256, "BN": 128, "BK": 64, "STAGES": 5})


def show_refusals(shape=(4096, 4096, 4096), bad=REFUSED) -> None:
    """Validate each partial configuration of ``bad`` of mma_sync_f16 on ``shape`` against the
    shared memory per block of this GPU (or the recorded one's) and print the rule it breaks.
    Raises AssertionError if one is accepted: the catalog's rules would be broken."""
    spec = catalog.get("mma_sync_f16")
    limit = (gpu.device_info() if gpu.live() else results.load()["ceilings"]["spec"])["smem_per_block_optin"]
    for b in bad:
        try:
            spec.validate(spec.params(**b), shape, smem_limit=limit)
        except ValueError as err:
            print(f"{style.params_text(b)}: refused before compiling: {err}")
            continue
        raise AssertionError(f"{b} was accepted")


def show_tf32(n: int = 4096) -> None:
    """cuBLAS SGEMM n^3 with FP32 and with TF32 on the same inputs, as a table
    (:func:`helpers.runtime.precision.tf32_results`: live, or recorded), or a note when not
    recorded. Raises AssertionError if cuBLAS FP32 fails the float32 tolerance."""
    tf, where = precision.tf32_results(n)
    if not tf:
        show.note(f"The TF32 comparison is not recorded yet ({where}); run this notebook on a GPU.",
                  title="TF32 vs FP32")
        return
    show.table(tf, ["mode", "ms", "TFLOP/s", "speedup", "rel_err", "tolerance", "passes"],
               f"cuBLAS SGEMM {n}^3, FP32 vs TF32, same inputs; {where}.")
    if not tf[0]["passes"]:
        raise AssertionError("cuBLAS FP32 must pass the float32 tolerance")


def gpu_sms() -> int:
    """SMs of the GPU the book decides for: this one live, the recorded one's without a GPU."""
    return gpu.device_info()["sms"] if gpu.live() else results.load()["ceilings"]["spec"]["sms"]
