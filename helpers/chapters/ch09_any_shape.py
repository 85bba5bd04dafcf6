"""Chapter 9, any shape: predication and padding, split-K, stream-K, and a dispatcher
(kernels/09_any_shape.cu, sm_80 or newer).

The catalog entries (the predicated kernel, cp.async and register builds) and the
measurements the notebook shows (strategies side by side, reproducibility, waves and
their control, the shape zoo). The runner and the dispatcher :func:`gemm` live in
:mod:`helpers.runtime.anyshape` (re-exported here). Chapter 9 measures its own kernels only:
its live measurements run inside ``anyshape.without_hopper()`` and its recorded tables leave
out the rows of the "hopper" strategies, which chapter 10 adds to the dispatcher at its end
(helpers/chapters/hopper_dispatch.py). Live, each measurement checks every
strategy against a float64 reference after a NaN poison and times it against cuBLAS on
the same inputs in alternating rounds; without a
GPU (or on one older than sm_80) the notebook reads ``results/h200-anyshape.json``
(written by ``scripts/record_anyshape.py``), labelled as recorded.
"""
from __future__ import annotations

import functools

import ipywidgets as w
import numpy as np

from helpers.figures import anyshape as fig, show
from helpers.models import anyshape as model
from helpers.models.raster import cdiv
from helpers.runtime import anyshape as rt, bench, checks, gpu, power, results, timing, verify
from helpers.runtime.anyshape import (DTYPES, FILE, H200_SMS, MIN_CC, STRATEGIES, aligned_inputs, can_run,  # noqa: F401
                                      check_inputs, gemm, plan_for, run)
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of, require

from . import prose_ch09
from .common import control_note, replacing


def _rules(p, s, aligned: bool = True):
    M, N, K = s
    out = [(p["BK"] in (32, 64), "BK", p["BK"], "must be 32 or 64 (static_assert in the kernel)"),
           (p["STAGES"] >= 3, "STAGES", p["STAGES"], "must be >= 3 (static_assert in the kernel)"),
           (max(M, N, K) < 2 ** 31, "M, N, K", (M, N, K), "must each be < 2^31 (32-bit tile coordinates)")]
    if aligned:
        out += [multiple_of("K", K, 8, "cp.async moves 16-byte chunks: A's row pitch must be a multiple of 8 "
                            "elements (the any_regs build or ch9.gemm take any K)"),
                multiple_of("N", N, 8, "cp.async moves 16-byte chunks: B's row pitch must be a multiple of 8 "
                            "elements (the any_regs build or ch9.gemm take any N)")]
    return out


def _args(p, A, B, C, M, N, K, *extra):
    """gemm_any's arguments for one data-parallel launch on C-contiguous arrays:
    (A, B, C, W, M, N, K, lda = K, ldb = N, ldc = N, k-tiles per split = all, mode 0, flags)."""
    i = np.int32
    return (A, B, C, rt.scratch("w_unused", (4,), np.float32), *map(i, (M, N, K, K, N, N, cdiv(K, p["BK"]), 0)),
            rt.scratch("flags_unused", (1,), np.int32))


_CHOICES = {"BK": (32, 64), "STAGES": (3, 4), "GROUP_M": (1, 8, 16)}
for _dt, (_sfx, _fixed) in DTYPES.items():
    for _name, _aligned, _title in (("any_shape", 1, "9: predicated mma.sync (cp.async, zero fill)"),
                                     ("any_regs", 0, "9: predicated mma.sync (loads through registers)")):
        register(Kernel(
            key=f"{_name}_{_sfx}", chapter=9, title=f"{_title} ({_sfx})", file=FILE, entry="gemm_any", op="gemm",
            dtype=_dt, out_dtype=_dt, align=16 if _aligned else 2, defaults=dict(model.CFG),
            fixed={**_fixed, "ALIGNED": _aligned}, choices=_CHOICES,
            block=lambda p: (rt.threads(p), 1, 1), grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
            smem=rt.smem, rules=functools.partial(_rules, aligned=bool(_aligned)), min_cc=MIN_CC, args=_args))


def key(dtype: str = "float16", aligned: bool = True) -> str:
    """Catalog key of the predicated kernel: "any_shape_f16" (cp.async build) or "any_regs_f16"."""
    return f"{'any_shape' if aligned else 'any_regs'}_{DTYPES[dtype][0]}"


# ------------------------------------------------------------------ measurements (live) and records (recorded)
def _labels(name, p, offsets, note=None) -> dict:
    """The record labels of strategy ``name`` run as plan ``p`` (None: not run, ``note`` says why)."""
    title = (f"auto: {p.name}" if name == "auto" else p.name) if p else name
    return dict(chapter=9, kernel=f"any:{name}", title=title, params={"strategy": name, "offsets": list(offsets)},
                note=p.reason if p else note)


def measure(strategies, shape, dtype: str = "float16", offsets=(0, 0, 0), rounds: int = 3,
            budget_ms: float = 300.0, check_only: bool = False) -> list:
    """Check and time each of ``strategies`` (names of :data:`STRATEGIES`, or
    :class:`~helpers.models.anyshape.Plan` objects) on one shape, live.

    One set of fresh random inputs for all (:func:`helpers.runtime.bench.inputs`; ``offsets``:
    elements into the buffers of A, B, C, so 1 gives base pointers that are only 2-byte
    aligned); each strategy is one :func:`helpers.runtime.bench.measure`: C NaN-poisoned,
    computed, checked against float64 (:class:`helpers.runtime.verify.WrongResult` if wrong),
    then timed against cuBLAS on the same inputs in ``rounds`` alternating rounds.
    Returns records (the results contract): ``value`` TFLOP/s, ``reference_value`` cuBLAS
    TFLOP/s, ``ratio``, ``rel_err``, ``ms``, ``note`` (the plan's reason); a strategy this GPU
    cannot run has ``value`` None and a ``note`` saying why. ``check_only``: no timing.
    Raises ValueError (bad strategy or shape) before any launch, RuntimeError without a GPU.
    """
    M, N, K = (int(x) for x in shape)
    for n in strategies:
        require(isinstance(n, model.Plan) or n in STRATEGIES, "strategy", n, f"must be a Plan or one of {STRATEGIES}")
    checks.require_all(checks.positive_int(n, v) for n, v in zip("MNK", (M, N, K)))
    data = bench.inputs((M, N, K), dtype, offsets=offsets)
    al = aligned_inputs(data.arrays["A"], data.arrays["B"])
    out = []
    for item in strategies:
        name = "plan" if isinstance(item, model.Plan) else item
        why = can_run("hopper" if name == "plan" and item.operands == "hopper" else name)
        if why:
            out.append(results.Record(**_labels(name, None, offsets, why), dtype=dtype, shape=[M, N, K],
                                      metric="TFLOP/s", value=None, reference="cuBLAS", reference_value=None,
                                      ratio=None, rel_err=None, source="live").as_dict())
            continue
        p = item if name == "plan" else plan_for(name, M, N, K, al)
        out.append(bench.measure(lambda A, B, C, p=p: run(p, A, B, C), (M, N, K), dtype, data=data,
                                 timed=not check_only, rounds=rounds, budget_ms=budget_ms,
                                 what=f"{name} ({p.name}) at {M} x {N} x {K}, offsets {offsets}",
                                 **_labels(name, p, offsets)).as_dict())
    return out


def recorded(section: str) -> tuple[list | dict | None, str]:
    """A section of ``results/h200-anyshape.json`` (written by scripts/record_anyshape.py)
    with its rows marked ``source="recorded"``, and where it came from. (None, where) when
    not recorded."""
    doc = results.artifact("anyshape")
    where = results.artifact_where(doc, "anyshape")
    data = (doc or {}).get(section)
    if isinstance(data, list):
        data = [{**r, "source": "recorded"} if isinstance(r, dict) else r for r in data]
    return data, where


def live_here() -> bool:
    """True when this GPU can run the chapter's kernels (sm_80 or newer)."""
    return gpu.live() and can_run("dp") is None


# The shapes of the correctness grid: small, odd, tall and skinny, every permutation
# of 64/128/256, misaligned bases (offsets in elements of A, B, C) and odd leading dimensions.
CHECK_GRID = ([((1, 1, 1), (0, 0, 0)), ((35, 79, 19), (0, 0, 0)), ((100, 100, 100), (0, 0, 0)),
               ((127, 127, 127), (0, 0, 0)), ((128, 128, 128), (0, 0, 0)), ((129, 129, 129), (0, 0, 0)),
               ((1000, 1001, 1002), (0, 0, 0)), ((30000, 64, 64), (0, 0, 0)), ((4093, 4093, 4093), (0, 0, 0))]
              + [((a, b, c), (0, 0, 0)) for a, b, c in
                 ((64, 128, 256), (64, 256, 128), (128, 64, 256), (128, 256, 64), (256, 64, 128), (256, 128, 64))]
              + [((257, 263, 271), (1, 1, 1)), ((300, 264, 136), (1, 0, 1)), ((200, 136, 264), (0, 3, 0)),
                 ((4093, 4093, 4093), (1, 1, 1))])


def check_grid(dtypes=("float16", "bfloat16"), strategies=None, grid=None) -> list:
    """Every strategy on every shape of :data:`CHECK_GRID`, checked against float64 (no
    timing). Live only; returns one row per (dtype, shape, offsets): strategies passed and
    the largest relative error. A wrong result raises WrongResult."""
    strategies = strategies or [s for s in STRATEGIES if can_run(s) is None]
    rows = []
    for dt in dtypes:
        for shape, offs in (grid or CHECK_GRID):
            recs = measure(strategies, shape, dt, offs, check_only=True)
            ran = [r for r in recs if r.get("rel_err") is not None]
            rows.append({"dtype": dt, "M x N x K": " x ".join(map(str, shape)), "offsets (A, B, C)": str(offs),
                         "strategies checked": len(ran),
                         "max rel. error": max(r["rel_err"] for r in ran),
                         "tolerance": verify.TOLERANCE[dt]})
    return rows


SPLITK_SHAPES = ((512, 512, 32768), (256, 256, 65536), (1024, 1024, 16384))


def splitk_rows(dtype: str = "float16", shapes=SPLITK_SHAPES, rounds: int = 3) -> list:
    """Live: on each shape the kernel without split-K, and split-K at the model's split count
    with the two-pass and the atomic reduction, and the two-pass one at half and twice the
    model's count (chapter 9's kernels only). Records gain ``over_no_split`` (speed over the same kernel unsplit, same run) and
    ``splits``."""
    out = []
    for shape in shapes:
        M, N, K = shape
        s = max(2, model.choose_splits(M, N, K, rt.sm_count())[0])
        items = ["dp", "splitk", "splitk_atomic"] + [
            model.Plan(schedule="splitk", splits=x, reason=f"split-K {x}: the model's {s} {'halved' if x < s else 'doubled'}")
            for x in (s // 2, 2 * s) if x >= 2]
        with rt.without_hopper():
            recs = measure(items, shape, dtype, rounds=rounds)
        for r, it in zip(recs, items):
            p = it if isinstance(it, model.Plan) else plan_for(it, M, N, K, True)
            base = recs[0]["value"]
            out.append({**r, "splits": p.splits,
                        "over_no_split": bench.sig(r["value"] / base, 3) if r["value"] and base else None})
    return out


def reproducibility(shapes=SPLITK_SHAPES, dtypes=("float16", "bfloat16"), runs: int = 10) -> list:
    """Live: the two split-K reductions ``runs`` times on the same inputs, per shape and dtype;
    per reduction, how many elements and bits of C differ from run 0 (min and max over runs
    1..). The two-pass sum has a fixed order, so it must differ nowhere; the atomic order
    follows the order in which blocks finish."""
    cp = gpu.cupy()
    rows = []
    for dtype in dtypes:
        for M, N, K in shapes:
            A, B, C = bench.inputs((M, N, K), dtype).args()
            s = max(2, model.choose_splits(M, N, K, rt.sm_count())[0])
            for red in ("twopass", "atomic"):
                p = model.Plan(schedule="splitk", splits=s, reduction=red)
                outs = []
                for _ in range(runs):
                    verify.poison(C)
                    run(p, A, B, C)
                    outs.append(C.view(cp.uint16).copy())
                elems = [int((o != outs[0]).sum()) for o in outs[1:]]
                bits = [int(cp.unpackbits((o ^ outs[0]).view(cp.uint8)).sum()) for o in outs[1:]]
                rows.append({"dtype": dtype, "M x N x K": f"{M} x {N} x {K}", "reduction": red, "splits": s,
                             "runs": runs, "elements differing from run 0 (min-max)": f"{min(elems)}-{max(elems)} of {M * N}",
                             "bits differing (min-max)": f"{min(bits)}-{max(bits)}", "bitwise identical": max(elems) == 0})
    return rows


STREAMK_SHAPES = ((2176, 4096, 8192), (4096, 4096, 4096), (8192, 8192, 8192))


def streamk_rows(dtype: str = "float16", shapes=STREAMK_SHAPES, rounds: int = 5) -> list:
    """Live: data-parallel, the stream-K hybrid (whole waves but one data-parallel), pure
    stream-K and the dispatcher, each against cuBLAS; ``over_dp``: speed over the
    data-parallel kernel with the same tile, same run."""
    out = []
    for shape in shapes:
        recs = measure(["dp", "streamk", "streamk_sk", "auto"], shape, dtype, rounds=rounds)
        base = recs[0]["value"]
        out += [{**r, "over_dp": bench.sig(r["value"] / base, 3)} for r in recs]
    return out


WAVE_TILE_ROWS = (8, 9, 12, 16, 17, 20, 24, 25, 33, 34)    # tile rows of 128 at N = 4096: 16 tiles each
CONTROL_TILES = (8, 16, 33, 66, 99, 132)


def wave_rows(dtype: str = "float16", n: int = 4096, k: int = 8192, tile_rows=WAVE_TILE_ROWS,
              control=CONTROL_TILES, rounds: int = 3) -> dict:
    """Live: wave quantization and its control.

    ``sweep``: M = 128 r for each r of ``tile_rows`` (16 r tiles at N = 4096), K = ``k``:
    the data-parallel kernel and the stream-K hybrid, with the naive model's efficiency
    (:func:`helpers.models.anyshape.waves`). ``control``: ONE wave of b tiles (M = 128,
    N = 256 b, the same K), checked, then timed alone, back to back for 1.5 s (no cuBLAS
    in between, so the sampled clock is the kernel's): with a fixed clock its time would
    not depend on b; the SM clock and board power are sampled meanwhile (nvidia-smi, read
    only). Returns
    ``{"sweep": [...], "control": [...], "sms": ...}``.
    """
    sms = rt.sm_count()
    sweep = []
    for r in tile_rows:
        shape = (128 * r, n, k)
        recs = measure(["dp", "streamk"], shape, dtype, rounds=rounds)
        w = model.waves(model.tiles(128 * r, n), sms)
        sweep.append({"M": 128 * r, "tiles": model.tiles(128 * r, n), **{f"model_{a}": b for a, b in w.items()},
                      "dp_TFLOPs": recs[0]["value"], "streamk_TFLOPs": recs[1]["value"],
                      "cublas_TFLOPs": recs[0]["reference_value"]})
    ctl = []
    for b in (x for x in control if x <= sms):
        M, N, K = 128, 256 * b, k
        data = bench.inputs((M, N, K), dtype)
        p = model.Plan(reason="one wave")
        bench.measure(lambda A, B, C: run(p, A, B, C), (M, N, K), dtype, data=data, timed=False,
                      what=f"control wave of {b} tiles")      # checked here, timed alone below
        A, B, C = data.args()
        fn = lambda: run(p, A, B, C)          # noqa: E731
        with power.PowerSampler() as ps:      # the kernel alone, back to back: the clock it gets
            t = timing.time_ms(fn, budget_ms=1500.0, max_repeat=20000)
        clk = ps.summary() or {}
        ctl.append({"busy SMs": b, "ms": bench.sig(t["ms"]), "TFLOP/s per SM":
                    bench.sig(timing.tflops(timing.gemm_flops(M, N, K), t["ms"]) / b, 4),
                    "SM clock (MHz, median)": clk.get("clock_MHz_median"), "power (W, median)": clk.get("power_W_median")})
    return {"sweep": sweep, "control": ctl, "sms": sms, "dtype": dtype, "K": k, "N": n}


ZOO_OUT = ((64, 64), (256, 256), (1000, 1001), (2176, 4096), (4093, 4093), (30000, 64), (64, 30000), (8192, 8192))
ZOO_K = (64, 1002, 4093, 16384)
ZOO_SMALL = (((256, 256), (1000, 1001), (4093, 4093)), (64, 4093))


def candidates(M: int, N: int, K: int, aligned: bool) -> list:
    """The strategies the zoo compares with the dispatcher's choice on one shape; "hopper" and
    "hopper_splitk" where the runner has a Hopper kernel named and this GPU runs it (chapter 10's zoo)."""
    ops = ["dp"] if aligned else ["regs", "repack", "padding"]
    out = ["auto"] + ops + ["splitk", "streamk"]
    return out + (["hopper", "hopper_splitk"] if can_run("hopper") is None else [])


def zoo(outs=ZOO_OUT, ks=ZOO_K, dtype: str = "float16", rounds: int = 3, budget_ms: float = 150.0) -> list:
    """Live: every (M, N) of ``outs`` times every K of ``ks``, each candidate strategy
    (:func:`candidates`) checked and timed against cuBLAS. One row per shape: the
    dispatcher's plan, its ratio to cuBLAS, the fastest other strategy and whether the
    dispatcher's ratio was within 3 % of that strategy's (the run-to-run noise of this GPU;
    see :func:`helpers.models.anyshape.zoo_row`)."""
    rows = []
    with rt.without_hopper():
        for M, N in outs:
            for K in ks:
                recs = measure(candidates(M, N, K, (K % 8 == 0 and N % 8 == 0)), (M, N, K), dtype, rounds=rounds,
                               budget_ms=budget_ms)
                rows.append(model.zoo_row(recs))
    return rows


# ------------------------------------------------------------------ notebook calls
def _get(section: str, live_fn, title: str, live: bool = True):
    """Live measurement when this GPU runs sm_80 kernels (and ``live``), else the recorded
    section. Returns (data, where); when there is neither, shows a note and returns (None, where)."""
    if live and live_here():
        with rt.without_hopper():
            return live_fn(), results.where(True)
    data, where = recorded(section)
    data = _sm80(data)
    if live and gpu.live():
        where += f" (not live: {can_run('dp')})"
    if not data:
        show.note(f"{title}: {where}.", title=title)
        return None, where
    return data, where


def odd_shapes(dtypes=("float16", "bfloat16")) -> list:
    """Live: per dtype, the aligned kernel at 4096^3 and every operand path at 4093^3 (chapter
    9's kernels only). Records gain ``of_aligned``: speed over the aligned kernel at 4096^3,
    same run."""
    out = []
    with rt.without_hopper():
        for dt in dtypes:
            al = measure(["dp"], (4096, 4096, 4096), dt)
            odd = measure(["regs", "repack", "padding", "auto"], (4093, 4093, 4093), dt)
            x = al[0].get("value")
            out += al + [{**r, "of_aligned": bench.sig(r["value"] / x, 3) if r.get("value") and x else None}
                         for r in odd]
    return out


def _sm80(recs):
    """Recorded rows without those of chapter 10's kernel (strategy "hopper..." or a plan that ran it)."""
    if not isinstance(recs, list):
        return recs
    return [r for r in recs if not (isinstance(r, dict) and ("hopper" in str(r.get("title") or "")
                                                              or str((r.get("params") or {}).get("strategy", ""))
                                                              .startswith("hopper")))]


_COLS = {"dtype": "dtype", "title": "strategy", "shape": "M, N, K", "value": "TFLOP/s", "reference_value": "cuBLAS",
         "ratio": "ratio to cuBLAS", "rel_err": "rel. error"}


def show_odd_shapes() -> list:
    """Table and bars: the three ways to take any shape at 4093^3 against the aligned kernel."""
    recs, where = _get("odd", odd_shapes, "Any shape")
    if not recs:
        return []
    show.table(recs, {**_COLS, "of_aligned": "of aligned 4096^3", "note": "why / plan"},
               f"Any shape at 4093^3 beside the aligned kernel at 4096^3; ratios to cuBLAS on the same shape, same "
               f"run; {where}.")
    show.figure(fig.strategy_figure([r for r in recs if r.get("ratio")], where))
    return recs


def show_check_grid() -> None:
    """The correctness grid: live, every strategy on the shapes of :data:`CHECK_GRID` under
    4000 (the 4093^3 cases are in the recorded grid and the GPU suite); recorded, all of it."""
    rows, where = _get("check_grid", lambda: check_grid(grid=[c for c in CHECK_GRID if max(c[0]) < 4000]),
                       "Correctness")
    if not rows:
        return
    show.table(rows, list(rows[0]), f"Every strategy on every shape, checked against float64 after a NaN poison; "
               f"{where}. A wrong result would have stopped the run.")


def show_splitk(dtype: str = "float16", live: bool = True) -> list:
    """Split-K on the three skinny shapes: table, and the split-count model for the first.
    ``live=False`` shows the recorded rows even on a GPU (labelled as recorded)."""
    recs, where = _get(f"splitk_{dtype}", lambda: splitk_rows(dtype), "Split-K", live)
    if not recs:
        return []
    show.table(prose_ch09.with_shape_cublas(recs), {**_COLS, "of_shape_cublas": "of the shape's cuBLAS median", "splits":
               "splits", "over_no_split": "over no split"}, f"Split-K, {dtype}; cuBLAS on the same shape, same run "
               f"(ratio: against the row's own cuBLAS timing; the median: against all of the shape's); {where}.")
    recs = [{**r, "where": where} for r in recs]
    M, N, K = recs[0]["shape"]
    sms = rt.sm_count() if (live and live_here()) else H200_SMS
    show.figure(fig.splitk_model_figure(M, N, K, sms, [r for r in recs if list(r["shape"]) == [M, N, K]
                                                        and r["params"]["strategy"] in ("splitk", "plan")], where))
    return recs


def show_reproducibility() -> None:
    """Ten runs of each split-K reduction on the same inputs (live: fp16 on the first shape)."""
    rows, where = _get("reproducibility", lambda: reproducibility(shapes=SPLITK_SHAPES[:1], dtypes=("float16",)),
                       "Reproducibility")
    if not rows:
        return
    show.table(rows, list(rows[0]), f"Ten runs of each reduction on the same inputs; {where}.")


def show_streamk(dtype: str = "float16", live: bool = True) -> list:
    """Stream-K against data-parallel on the three shapes (``live=False``: the recorded rows)."""
    recs, where = _get(f"streamk_{dtype}", lambda: streamk_rows(dtype), "Stream-K", live)
    if not recs:
        return []
    show.table(recs, {**_COLS, "over_dp": "over data-parallel", "note": "plan"},
               f"Stream-K, {dtype}, 5 alternating rounds; {where}.")
    return recs


def show_waves(dtype: str = "float16") -> dict | None:
    data, where = _get("waves", lambda: wave_rows(dtype), "Waves")
    if not data:
        return None
    show.figure(fig.wave_figure(data, where))
    show.table(data["control"], list(data["control"][0]), f"The control: one wave of b tiles, M = 128, N = 256 b, "
               f"K = {data['K']}; SM clock and power sampled with nvidia-smi during the timing (its power "
               f"reading averages over time, so short runs read unevenly); {where}.")
    return {**data, "where": where}


def show_splitk_cap(splitk: list, waves: dict | None) -> list:
    """:func:`helpers.models.anyshape.splitk_cap_rows` as a table (nothing when either input is missing)."""
    if not splitk or not waves:
        print("The split-K cap needs both the split-K table and the wave control above.")
        return []
    rows = model.splitk_cap_rows(splitk, waves)
    show.table(rows, list(rows[0]), "An estimate of what split-K can gain at most: the SMs it adds, weighted by "
               "the per-SM rate the wave control measured at each count; computed from the split-K records "
               f"({splitk[0].get('where', '?')}) and the wave control ({waves.get('where', '?')}).")
    return rows


def zoo_summary(rows: list, which: str = "") -> str:
    """One line: on how many zoo shapes the dispatcher was within 3 % of the best other
    strategy, and on how many it beat cuBLAS; ``which`` names the grid (e.g. "the recorded grid")."""
    ok = sum(1 for r in rows if r["within 3% of best"])
    beat = sum(1 for r in rows if (r.get("ratio") or 0) > 1)
    return (f"{f'In {which}, the' if which else 'The'} dispatcher's plan was within 3 % of the fastest other "
            f"strategy on {ok} of {len(rows)} shapes ({ok / len(rows):.0%}) and faster than cuBLAS on {beat}.")


def show_zoo(live_small: bool = True) -> None:
    """The recorded zoo (the full grid) and, live, a small grid re-measured now."""
    rows, where = recorded("zoo")
    rows = [{**r, "hopper ratio": None} for r in rows or [] if "hopper" not in r["plan"]]   # chapter 9's kernels
    if rows:
        show.figure(fig.zoo_figure(rows, where))
        print(zoo_summary(rows, "the recorded grid (the figure above)"))
    else:
        show.note(f"The full zoo: {where}.", title="Zoo")
    if live_small and live_here():
        small = zoo(*ZOO_SMALL)                # chapter 9's kernels (zoo runs without the Hopper path)
        show.figure(fig.zoo_figure(small, results.where(True) + ", the small grid"))
        print(zoo_summary(small, "the small grid measured in this run"))


def show_plans(shapes=((1, 1, 1), (35, 79, 19), (4093, 4093, 4093), (512, 512, 32768), (2176, 4096, 8192),
                       (4096, 4096, 4096), (30000, 64, 64))) -> None:
    """The dispatcher's plan and its one-line reason for a few shapes on this GPU's SM count
    (the H200's without a GPU), with chapter 9's kernels. A model: no GPU needed;
    C-contiguous inputs, so "aligned" means K % 8 == 0 and N % 8 == 0."""
    sms = rt.sm_count()
    rows = []
    for s in shapes:
        p = model.plan(*s, aligned=s[1] % 8 == 0 and s[2] % 8 == 0, sms=sms)
        rows.append({"M, N, K": " x ".join(map(str, s)), "plan": p.name, "why": p.reason})
    gpu_name = gpu.device_info()["name"] if gpu.live() else "the H200 of the records"
    show.table(rows, {"M, N, K": "M, N, K", "plan": "plan", "why": "why"},
               f"The dispatcher's rules (helpers.models.anyshape.plan) on this GPU ({gpu_name}, {sms} SMs) with this "
               "chapter's kernels (on an H100/H200 chapter 10's kernel adds 'hopper' plans). A model: no GPU involved.")


def dispatcher_widget():
    """Live only: M, N, K boxes and a strategy menu; each press of "measure" checks, runs and
    times the strategy against cuBLAS. Bad values are refused before anything reaches the GPU."""
    if not show.live_controls() or not live_here():
        return control_note("Boxes for M, N, K and a strategy menu run the dispatcher on any shape (sm_80 or newer)")
    box = {n: w.IntText(value=v, description=n, layout=w.Layout(width="160px"))
           for n, v in (("M", 4093), ("N", 4093), ("K", 4093))}
    dt = w.Dropdown(options=list(DTYPES), value="float16", description="dtype")
    st = w.Dropdown(options=[x for x in STRATEGIES if not x.startswith("hopper")], value="auto",
                    description="strategy")
    go_ = w.Button(description="measure")
    out = w.Output()
    say = replacing(out)

    def on_click(_=None):
        with out:
            try:
                shape = tuple(box[n].value for n in "MNK")
                checks.require_all(checks.positive_int(n, v) for n, v in zip("MNK", shape))
                checks.require(shape[0] * shape[1] * shape[2] <= 2 ** 40, "M*N*K", shape, "must be <= 2^40 here")
                say(f"{st.value}, {dt.value}, {' x '.join(map(str, shape))}: compiling (first use) and measuring…")
                with rt.without_hopper():
                    r = measure([st.value], shape, dt.value, rounds=2, budget_ms=200)[0]
            except ValueError as e:
                return say(f"refused before launch: {e}")
            say(f"{st.value}: {r.get('note')}" if r.get("value") is None else
                f"{r['title']}: {r['value']:.1f} TFLOP/s = {r['ratio']:.3f} x cuBLAS (same run), "
                f"rel_err {r['rel_err']:.1e}\n  why: {r.get('note')}")
    go_.on_click(on_click)
    return w.VBox([w.HBox(list(box.values())), w.HBox([dt, st, go_]), out])
