"""Chapter-level things shared by several chapters: the banner, the running
table, the live controls (the slider, the note shown instead of one, the sweep's
progress bar), the roofline cell, and the rule helpers of the catalog entries of
chapters 4-7 (every rule mirrors a ``static_assert`` of its kernel)."""
from __future__ import annotations

import ipywidgets as w
from IPython.core.formatters import format_display_data
from IPython.display import display
from tqdm.auto import tqdm

from helpers.figures import (profiling as prof_fig, records, roofline as roofline_fig, show, staircase as staircase_fig,
                             style, sweep as sweep_fig)
from helpers.models import diagnosis
from helpers.models.raster import cdiv
from helpers.runtime import bench, catalog, gpu, launch, panels, results, roofline, sweep
from helpers.runtime.checks import multiple_of

from . import heaven_steps

SMEM_OPTIN_SM90 = 232448      # bytes: the per-block opt-in limit of an H100/H200 (227 KB)

# Blocks of the one-output-per-thread kernels of chapters 1-2, and their sweep.
BLOCK_SWEEP = tuple({"BLOCK_X": x, "BLOCK_Y": y} for x, y in
                    ((32, 1), (32, 2), (32, 4), (32, 8), (32, 16), (32, 32), (16, 16), (8, 32), (64, 4), (64, 8)))


# Every FMA loads one float of A and one of B: 8 bytes per 2 FLOP, plus C once.
def naive_bytes(p, s):
    """Global bytes a one-output-per-thread fp32 GEMM requests on (M, N, K)."""
    return 8 * s[0] * s[1] * s[2] + 4 * s[0] * s[1]


# ------------------------------------------------------------------ rule helpers (chapters 4-7)
def even_split(name, total, threads, what):
    return (threads > 0 and total % threads == 0, name, total, f"must be a multiple of the {threads} threads ({what})")


def divides_threads(name, v, threads, what):
    return (v > 0 and threads % v == 0, name, v, f"must divide the {threads} threads per block ({what})")


def staged(*groups):
    """Rules in stages: each group (a function returning rules) is built only
    if every rule of the groups before it holds, so later formulas never see
    a broken geometry (e.g. zero threads)."""
    out = []
    for g in groups:
        rules = g()
        out += rules
        if not all(r[0] for r in rules):
            break
    return out


def threads_rules(t):
    return [(t >= 32, "threads per block", t, "must be >= 32 (one warp)")]


def static_smem_rule(floats, formula):
    b = 4 * floats
    return (b <= 48 * 1024, "static shared memory (bytes)", b,
            f"{formula} must be <= 49152 (48 KB, the static limit; only cp_async uses dynamic shared memory)")


# ------------------------------------------------------------------ Tensor Core entries (chapters 6-7)
def tc_rules(p, s):
    """Rules shared by the Tensor Core kernels of chapters 6 and 7 (16-bit
    inputs, 16-byte cp.async chunks, 64x64 warp tiles at ~230 registers)."""
    M, N, K = s
    BM, BN, BK, WM, WN = p["BM"], p["BN"], p["BK"], p["WM"], p["WN"]
    warps = (BM // WM) * (BN // WN) if BM % WM == 0 and BN % WN == 0 else 0
    t = 32 * warps
    return [
        multiple_of("K", K, 8, "each row of A is copied in 16-byte chunks of 8 elements: "
                               "rows must start 16-byte aligned and no chunk may straddle K"),
        multiple_of("N", N, 8, "rows of B and C move in 16-byte chunks of 8 elements"),
        (BM % WM == 0, "WM", WM, f"must divide BM={BM} (warp tiles tile the block tile)"),
        (BN % WN == 0, "WN", WN, f"must divide BN={BN} (warp tiles tile the block tile)"),
        (t in (128, 256), "threads per block", t,
         f"must be 128 or 256 (BM/WM x BN/WN = {warps} warp{'' if warps == 1 else 's'}; a 64x64 warp tile holds "
         "128 fp32 accumulators per thread, ~230 registers: at most 256 threads fit the 65536 registers of an SM)"),
        (t == 0 or (BM * BK // 8) % t == 0, "BM*BK/8", BM * BK // 8,
         f"16-byte chunks of the A tile must spread evenly over the {t} threads"),
        (t == 0 or (BK * BN // 8) % t == 0, "BK*BN/8", BK * BN // 8,
         f"16-byte chunks of the B tile must spread evenly over the {t} threads"),
        (cdiv(M, BM) <= 65535, "M", M, f"needs ceil(M/BM) <= 65535 blocks along grid.y (BM={BM})"),
    ]


TC_BLOCK = lambda p: ((p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32, 1, 1)  # noqa: E731
TC_GRID = lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1)          # noqa: E731


# ------------------------------------------------------------------ notebook calls
def runs_here() -> dict:
    """Per chapter (number -> "all", "some" or "none"): how many of its kernels, at their
    defaults, the GPU the book decides for can run live (:func:`helpers.runtime.launch.unable`).
    In recorded mode without a simulated GPU every chapter is "none"."""
    if gpu.target() is None:
        return {n: "none" for n in sorted({k.chapter for k in catalog.KERNELS.values()})}
    out: dict = {}
    for k in catalog.KERNELS.values():
        ok = launch.unable(k) is None
        prev = out.get(k.chapter)
        out[k.chapter] = ("all" if ok else "none") if prev is None else (prev if prev == ("all" if ok else "none") else "some")
    return dict(sorted(out.items()))


def runs_here_line() -> str:
    """"chapters 0-4 run live; 5 in part; ..." for the banner, numbered as the pages are."""
    r, name = runs_here(), {11: "the appendix", 12: "11 (FP8)"}      # catalog chapter -> page title
    group = {v: [name.get(n, str(n)) for n, x in r.items() if x == v] for v in ("all", "some", "none")}
    parts = []
    if group["all"]:
        parts.append(f"chapters {', '.join(group['all'])} run live")
    if group["some"]:
        parts.append(f"{', '.join(group['some'])} in part")
    if group["none"]:
        parts.append(f"{', '.join(group['none'])} show recorded numbers only")
    return "; ".join(parts)


def banner() -> None:
    """Display whether this notebook runs live (and on which GPU) or recorded, and, when a GPU
    is simulated (``GEMM_BOOK_SIMULATE``) or cannot run every chapter, which chapters run live."""
    t = gpu.target()
    data = results.load()
    rec = f"recorded on {results.describe(data['provenance'], data)}"
    if gpu.live():
        info = gpu.device_info()
        text = (f"**Live.** This page was run on {results.live_label()} (sm_{info['cc'][0]}{info['cc'][1]}, "
                f"{info['sms']} SMs): its kernels were compiled and measured there, each speed against a "
                "reference timed in the same run. The numbers quoted in the prose, and the tables and figures "
                "whose caption says *recorded* (the running table of heavens, Nsight Compute panels, exercise "
                "checks in the built book), are read from the record instead, and say which run.")
        if t.get("simulated") or any(v != "all" for v in runs_here().values()):
            text += (f" Deciding as {gpu.describe_target(t)}: {runs_here_line()}; a kernel this GPU cannot "
                     f"run shows the numbers {rec}, labelled with what it needs.")
        show.note(text, title="Where the numbers come from")
    else:
        text = (f"**Recorded mode**: {gpu.recorded_reason() or 'no CUDA GPU is visible here'}. Figures are computed, but "
                f"measurements are read from `results/{results.DEFAULT_SLUG}.json`, {rec}. "
                "Run the notebook on a GPU to measure your own.")
        if t is not None:
            text += (f" Simulating {gpu.describe_target(t)}, {t['sms']} SMs, "
                     f"{t['smem_per_block_max'] // 1024} KB of shared memory per block: on it, "
                     f"{runs_here_line()}; rows it could not run are labelled with what they need.")
        show.note(text, title="Where the numbers come from")


# The kernel that stands for each heaven in the running table (its default parameters).
HEADLINE = {1: "naive_yfirst", 2: "vec4", 3: "smem_tiled", 4: "tile1d_swizzle", 5: "cp_async",
            6: "wmma_f16", 7: "mma_sync_f16", 9: "any_shape_f16",
            10: "hopper_r5_tma_store_f16"}

# A heaven whose kernel's catalog title names only the last rung of its chapter's ladder.
HEADLINE_TITLE = {10: "Hopper: TMA + wgmma, warp-specialized, persistent, clusters of 2, TMA store"}


def running(upto: int, shape=(4096, 4096, 4096)) -> list:
    """The headline kernel of every heaven from 1 to ``upto``, one record each.

    Where a record of this GPU exists (no GPU in this run, or the GPU that ``results/<slug>.json``
    was recorded on), every row is read from that record: the same record each owning
    chapter's prose reads, so the table agrees on every page and with its chapter. On any
    other GPU every row is measured now: FP32 heavens in one call (one cuBLAS SGEMM
    reference), each Tensor Core dtype in its own call with its own cuBLAS reference.
    Heavens whose headline kernel is not in the catalog are left out."""
    keys = [HEADLINE[h] for h in sorted(HEADLINE) if h <= upto and HEADLINE[h] in catalog.KERNELS]
    by_dtype: dict = {}
    for k in keys:
        by_dtype.setdefault(catalog.get(k).dtype, []).append(k)
    read = bench.record_is_this_gpu()
    recs = []
    for dt, ks in by_dtype.items():
        recs += bench.recorded(ks, shape, dtype=dt) if read else bench.gemm(ks, shape, dtype=dt)
    recs = [{**r, "title": HEADLINE_TITLE[r["chapter"]]} if r["chapter"] in HEADLINE_TITLE else r for r in recs]
    return sorted(recs, key=lambda r: r["chapter"])


def show_running(recs: list) -> None:
    """The running table: one row per heaven, TFLOP/s and ratio to cuBLAS of its dtype."""
    rows = [{"heaven": r["chapter"], "kernel": bench.kernel_label(r), "dtype": r["dtype"],
             "TFLOP/s": r["value"], "cuBLAS TFLOP/s": r["reference_value"], "ratio": r["ratio"]} for r in recs]
    show.table(rows, list(rows[0]) if rows else ["heaven"],
               f"The heavens so far at 4096^3, each against cuBLAS of its dtype in the same run. "
               f"{bench.where(recs)[0].upper() + bench.where(recs)[1:]}.")


def measured_intensities() -> dict:
    """{(kernel, (M, N, K)): 2MNK / DRAM bytes} of the Nsight Compute panels recorded for
    chapter 8 (:func:`helpers.runtime.panels.recorded`), with "where" they were recorded;
    {} when none are, or when this is a live run on another GPU than the recording's."""
    runs, doc, where = panels.recorded()
    if doc and gpu.live() and gpu.device_info()["name"] != doc.get("provenance", {}).get("gpu"):
        return {}
    out = {(r["key"], tuple(r["shape"])): diagnosis.measured_intensity(r["shape"], r["panel"]["dram_read"],
                                                                       r["panel"]["dram_write"]) for r in runs}
    return {**{k: v for k, v in out.items() if v}, "where": "Nsight Compute, " + where} if doc else {}


def show_roofline(recs: list, title: str = "Roofline", measured: bool = True) -> None:
    """Measure (or read) this GPU's ceilings and display the roofline with ``recs`` on it.
    ``measured``: also place each record that has a recorded Nsight Compute panel at its measured
    DRAM traffic (:func:`measured_intensities`). Returns nothing, so a cell ending in this call
    shows the figure and no repr (:func:`helpers.runtime.roofline.ceilings` gives the numbers)."""
    ceil = roofline.ceilings()
    show.figure(roofline_fig.figure(recs, ceil, title=title, measured=measured_intensities() if measured else None))


def show_records(recs: list, caption: str = "", bar_title: str | None = None) -> None:
    """The records as a table (and, with ``bar_title``, as bars of their ratio to the same-run reference)."""
    records.show_table(recs, caption)
    if bar_title:
        show.figure(records.bar(recs, bar_title))


def show_owner_checks(configs, shape=(200, 264, 72)) -> None:
    """Print one line per owner check (:func:`helpers.runtime.launch.check_owner`) of
    ``configs``: catalog keys, or (key, params) pairs, on ``shape`` (M, N, K; by default a
    multiple of no tile). Live, an AssertionError names the kernel whose recorded owners
    differ from its model; without a GPU each line says where the GPU suite checks it. A line of
    a (key, params) pair starts with its parameters (``TILE=16: ...``)."""
    for item in configs:
        key, params = (item, {}) if isinstance(item, str) else item
        line = launch.check_owner(key, shape=shape, **params)
        print(f"{style.params_text(params)}: {line}" if params else line)


def show_refusal(key: str, shape) -> None:
    """Print the rule kernel ``key`` breaks on ``shape`` ("refused before launch: ..."),
    found by :func:`helpers.runtime.launch.prepare` before anything compiles or launches.
    Raises AssertionError if the shape is accepted: the rules that should refuse it are broken."""
    try:
        launch.prepare(key, shape)
    except ValueError as err:
        print("refused before launch:", err)
        return
    raise AssertionError(f"{key} accepted M, N, K = {tuple(shape)}: its rules should have refused it")


def show_resources(items, columns, caption: str, shape=(4096, 4096, 4096), label: str = "key+diff",
                   missing: str = "print") -> list:
    """Registers, shared memory, spills and occupancy of ``items`` ((key, partial params)
    pairs) as a table (:func:`helpers.runtime.launch.resource_rows`); ``caption`` is a format
    string whose ``{where}`` says where the numbers come from. Where neither a GPU nor nvcc is
    here, ``missing`` = "print" prints one line, "note" shows a note box. Returns the rows.
    Raises ValueError for another ``missing``."""
    if missing not in ("print", "note"):
        raise ValueError(f"missing={missing!r}: must be 'print' or 'note'")
    rows, where = launch.resource_rows(items, shape, label=label)
    if rows:
        show.table(rows, columns, caption.format(where=where))
    elif missing == "note":
        show.note(f"Registers and shared memory are read from the compiled kernel: this {where}.", title="Resources")
    else:
        print("resources: " + where)
    return rows


def mnk(shape) -> str:
    """"M = N = K = 4096" for a cube, else "M, N, K = 1000 x 1001 x 1002": the shape in a caption."""
    return f"M = N = K = {shape[0]}" if len(set(shape)) == 1 else "M, N, K = " + " x ".join(map(str, shape))


# ------------------------------------------------------------------ numbers the prose quotes
GLUE_PREFIX = "application/papermill.record/"     # what MyST-NB's glue reads (myst_nb.glue, display=False)


class Sentence(str):
    """Prose glued as Markdown, for ``{glue:md}`` (in the text's weight; ``{glue:text}`` is bold)."""


def glue(values: dict) -> None:
    """Glue each ``{name: value}`` for the notebook's Markdown: ``{glue:text}`name``` (or
    ``{glue:text}`name:.2f```; ``{glue:md}`` for a :class:`Sentence`) shows the value this cell
    computed, so a quoted default or measurement comes from the code or the records and cannot go
    stale. Shows nothing: the outputs of ``myst_nb.glue(name, value, display=False)`` without
    MyST-NB; the built book reads them from the committed outputs of the gluing cell."""
    for name, value in values.items():
        bundle, meta = ({"text/markdown": str(value), "text/plain": repr(str(value))}, {}) \
            if isinstance(value, Sentence) else format_display_data(value)
        display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True,
                metadata={**meta, "scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


def bounds(values) -> tuple[float, float]:
    """(smallest, largest) of ``values``, Nones left out: the two ends of a range the prose quotes.
    KeyError when nothing is recorded."""
    v = [x for x in values if x is not None]
    if not v:
        raise KeyError("no recorded value for a range the prose quotes")
    return min(v), max(v)


def span(lo: float, hi: float, fmt: str) -> str:
    """A range the prose quotes, as text to glue: "0.51 to 0.76", or one value ("726") where
    both ends print the same in ``fmt`` (a format spec such as ".2f" or "#.3g")."""
    a, b = format(lo, fmt), format(hi, fmt)
    return a if a == b else f"{a} to {b}"


def default_values(key: str, prefix: str) -> dict:
    """{``prefix_NAME``: value} for kernel ``key``'s defaults on the GPU the book decides for
    (:meth:`helpers.runtime.catalog.Kernel.params`), plus ``prefix_threads`` (threads per block)
    and, for a warp-tiled kernel (WM, WN), ``prefix_warps`` and ``prefix_acc_per_lane`` (the
    WM x WN outputs of a warp over its 32 lanes): what the prose quotes, to glue."""
    spec = catalog.get(key)
    p = spec.params()
    out = {f"{prefix}_{n}": v for n, v in p.items()}
    out[f"{prefix}_threads"] = spec.threads(p)
    if "WM" in p and "WN" in p:
        out[f"{prefix}_warps"] = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
        out[f"{prefix}_acc_per_lane"] = p["WM"] * p["WN"] // 32
    return out


# ------------------------------------------------------------------ live controls
NEEDS_GPU = "needs a GPU: open this chapter in Colab or JupyterLab"
NEEDS_NOTEBOOK = "needs a running notebook, with or without a GPU: open this chapter in Colab or JupyterLab"


def control_note(what: str, needs: str = NEEDS_GPU) -> None:
    """The one line shown where a live control would be when none is built: without a GPU
    (recorded mode) and in batch execution, whose outputs are what the static book shows
    (:func:`helpers.figures.show.live_controls`). ``what``: the control, in words; ``needs``:
    what it takes, :data:`NEEDS_GPU` (it measures) or :data:`NEEDS_NOTEBOOK` (it redraws a model)."""
    show.note(f"{what}. This control {needs}.", title="Live control")


def replacing(out):
    """``say(text)``: replace what the ``ipywidgets.Output`` ``out`` shows with ``text``."""
    def say(text: str) -> None:
        out.clear_output(wait=True)
        with out:
            print(text)
    return say


def run_control(key: str, shape, p: dict, say) -> dict | None:
    """One measurement of kernel ``key`` at the slider values ``p``, saying what it does before
    each blocking step: "compiling…" (the catalog's rules first, then NVRTC, cached after the
    first build), "measuring…" (checked against the float64 reference, timed against the
    same-run reference), then the result line. ``say(text)`` replaces the control's output
    (:func:`replacing`). A combination the rules refuse ends as one line, "refused before
    launch: ...", before anything compiles or reaches the GPU. Returns the record, or None."""
    spec = catalog.get(key)
    label = f"{key} " + " ".join(f"{n}={v}" for n, v in p.items())
    say(f"{label}: compiling… (cached after the first build)")
    try:
        L = launch.prepare(key, shape, **p)
    except ValueError as e:
        say(f"refused before launch: {e}")
        return None
    ref = "cuBLAS" if spec.op == "gemm" else "a device-to-device copy"
    say(f"{label}: measuring… (checked against a float64 reference, timed against {ref} in the same run)")
    r = bench.prepared(L)                     # the launch validated and compiled above, measured once
    res = L.resources()
    say(f"{label}: {r['value']:.2f} {r['metric']} = {r['ratio']:.3f} x {r['reference']} "
        f"(same run), rel_err {r['rel_err']:.1e}; {res['registers']} regs, "
        f"{res['smem_static'] + res['smem_dynamic']} B smem, {res['local_bytes']} B local, "
        f"occupancy {res['occupancy']:.0%} ({res['limited_by']})")
    return r


def live_slider(key: str, shape, choices: dict | None = None):
    """ipywidgets controls for kernel ``key`` (live only; returns None without a GPU, after
    the one-line :func:`control_note`).

    A kernel with one parameter re-measures when its slider is released; one with two or
    more gets a Run button, so that moving three sliders costs one compile, not three. Each
    run (:func:`run_control`) validates the combination in Python first; an invalid one
    shows the rule it breaks. A valid one is compiled (cached) and measured, and the result
    line shows TFLOP/s or GB/s, the ratio to the same-run reference, registers, shared
    memory, spills and theoretical occupancy. Runs once at the start, at the defaults.
    """
    spec = catalog.get(key)
    choices = choices or spec.slider_choices
    if not show.live_controls():       # no GPU, or batch execution (the static book's outputs)
        control_note(f"Sliders for `{key}` ({', '.join(choices)}) recompile and re-measure it on your GPU")
        return None
    if not spec.runs_on(gpu.capability()):    # no configuration of it runs on this GPU
        show.note(f"No live slider for `{key}`: it {launch.unable(spec)}. The sweep above shows the "
                  "recorded numbers.", title="Live slider")
        return None
    start = spec.params()                     # the defaults on this GPU (a tuned one that fits: runtime.defaults)
    ctl = {n: w.SelectionSlider(options=list(v), value=start[n] if start[n] in v else spec.defaults[n], description=n,
                                continuous_update=False) for n, v in choices.items()}
    out = w.Output()
    say = replacing(out)
    button = w.Button(description="Run", icon="play", tooltip="compile (if needed) and measure these values") \
        if len(ctl) >= 2 else None

    def run(_=None):
        if button is not None:
            button.button_style = ""
        with out:                             # an error (a wrong result, a failed build) shows here
            run_control(key, shape, {n: c.value for n, c in ctl.items()}, say)

    def changed(_=None):                      # the result shown is no longer that of the sliders
        button.button_style = "primary"

    for c in ctl.values():
        c.observe(run if button is None else changed, names="value")
    if button is not None:
        button.on_click(run)
    box = w.VBox([*ctl.values(), *([button] if button else []), out])
    display(box)
    run()
    return box


def artifact_note(name: str, what: str, script: str) -> tuple[dict | None, str]:
    """The Nsight Compute artifact ``name`` (:func:`helpers.runtime.results.artifact`)
    and a caption fragment saying where it came from; when it is absent, also
    display a note saying it is not recorded yet and how to record it (``script``)."""
    doc = results.artifact(name)
    where = results.artifact_where(doc, name)
    if doc is None:
        show.note(f"{what}: **not recorded yet** (`results/{results.DEFAULT_SLUG}-{name}.json` is written on a GPU "
                  f"by `{script}`). The table shows the model only.", title="Measurement")
    return doc, where


def sweep_progress(key: str):
    """A ``tqdm.auto`` progress bar for a live sweep of ``key`` (a widget in Jupyter, text
    elsewhere), one step per configuration, gone when the sweep is done: the ``progress``
    of :func:`helpers.runtime.sweep.run`."""
    return lambda items: tqdm(items, desc=f"{key}: compiling and measuring the sweep", unit="config", leave=False)


def show_sweep(key: str, shape, names=None, title: str = "", labels: str = "plain", only_names: bool = False,
               live: bool = True) -> None:
    """Measure (or read) kernel ``key`` over its recorded sweep, draw it, and
    (``live``) add the live slider. ``only_names``: only the sweep points that
    change nothing but ``names`` (:func:`helpers.runtime.sweep.sweep_points`).
    ``labels``: "plain" (:func:`helpers.figures.sweep.figure` labelled by
    ``names``), "changes" (each bar by what it changes from the kernel's shipped
    defaults, which are printed) or "full" (all of ``names``, room for long
    labels). Returns nothing: a cell ending in this call shows the figure, not the records'
    repr (:func:`helpers.runtime.sweep.run` gives the records)."""
    points = sweep.sweep_points(key, names) if only_names else None
    recs = sweep.run(key, shape, points=points, progress=sweep_progress(key) if show.live_controls() else None)
    if labels == "plain":
        fig = sweep_fig.figure(recs, names, title=title)
    elif labels == "changes":
        fig, base = sweep_fig.labelled_figure(recs, title=title, base=catalog.get(key).params())
        print(f"{key}: each bar is labelled by what it changes from the defaults "
              + " ".join(f"{k}={v}" for k, v in base.items()))
    elif labels == "full":
        fig, _ = sweep_fig.labelled_figure(recs, names, title=title, short=False)
    else:
        raise ValueError(f"labels={labels!r}: must be 'plain', 'changes' or 'full'")
    show.figure(fig)
    if live:
        live_slider(key, shape)


def show_staircase(interactive: bool = False) -> list:
    """The landing page's staircase: every heaven's headline kernel at 4096^3 (live on a
    GPU, else the H200's records, labelled) on a log scale with the measured roofs, and
    one line per heaven on what limited it before and what the step does. The figure is
    a static SVG (the landing page loads no plotly.js); ``interactive``: a Plotly figure."""
    recs = running(upto=10)
    if interactive:
        show.figure(staircase_fig.staircase_figure(recs, roofline.ceilings()))
    else:
        show.static_figure(staircase_fig.staircase_html(recs, roofline.ceilings()),
                           f"<{staircase_fig.TITLE}: SVG>")
    rows = heaven_steps.step_rows(recs, wmma_key=HEADLINE[6], fp32_key=HEADLINE[5])
    show.table(rows, ["heaven", "limited before by", "this step", "ratio to cuBLAS"],
               f"Ratios at 4096^3 against cuBLAS of the kernel's dtype (heaven 8 adds no kernel); {bench.where(recs)}.")
    return recs


def recorded_counter_rows(key_a: str, key_b: str, kind: str, fields, shape=(4096, 4096, 4096)) -> tuple[list, str]:
    """(rows, where): the recorded Nsight Compute panels (:func:`helpers.runtime.panels.recorded`)
    of catalog kernels ``key_a`` and ``key_b`` at ``shape``, compared per FFMA or per HMMA
    (``kind``) on ``fields`` (:func:`helpers.models.counters.compare`); ``where`` says which GPU
    recorded them, when, in which file. Raises KeyError when either panel is not recorded."""
    runs, doc, _ = panels.recorded()
    a, b = prof_fig.find_run(runs, key_a, shape), prof_fig.find_run(runs, key_b, shape)
    where = prof_fig.ncu_label(doc, f"results/{results.DEFAULT_SLUG}-{panels.ARTIFACT}.json")
    return prof_fig.counter_comparison(a, b, kind, fields), where


def recorded_run(key: str, params: dict | None = None, shape=(4096, 4096, 4096), dtype: str | None = None) -> dict:
    """The recorded run of catalog kernel ``key`` at its shipped defaults updated with ``params``
    (dict of -D values), on ``shape`` (M, N, K) in ``dtype`` (default: the kernel's), read from the
    results file only (``results/<gpu>.json``, the same on every GPU), never measured: what a
    chapter's ``prose_values`` glue into the prose. Raises KeyError naming the run when it is not
    recorded."""
    spec = catalog.get(key)
    p, dt = {**spec.defaults, **(params or {})}, dtype or spec.dtype
    r = results.lookup(key, p, dt, shape)
    if r is None:
        raise KeyError(f"{key} {p} {dt} {tuple(shape)}: not recorded in results/{results.DEFAULT_SLUG}.json")
    return r
