"""Figures and tables of chapters 3-5 (shared-memory tiling, bank conflicts,
register and warp tiling), built from the index and bank models of
helpers/tiles.py and helpers/banks.py. Nothing here runs a kernel except
:func:`check_owner` and, live, :func:`resource_rows`.

* :func:`staging_figure`: which A and B tiles a block of heaven 3 stages at
  each k step and which thread loads which element (``tiles.staging``), with a
  Plotly slider over k steps; :func:`reuse_rows`: global bytes saved
  (``tiles.reuse``).
* :func:`check_owner`: any catalog kernel's owner model against its
  ``-DRECORD_OWNER=1`` build (live), element by element.
* :func:`bank_state`, :func:`bank_figure`: the chapter-4 A tile as a grid
  coloured by bank, the words one warp instruction touches, its wavefronts;
  Plotly controls over precomputed states (tile width x access direction,
  layout); :func:`bank_explorer`: the same with ipywidgets (live).
* :func:`bank_counter_rows`: Nsight Compute counters
  (``scripts/ncu_banks.py``) next to ``banks.predict``; :func:`padding_rows`:
  when +1 padding stops removing conflicts.
* :func:`ownership_figure`: which warp and lane owns which C element of one
  block tile of a chapter-5 kernel, with a slider over the lanes of warp 0.
* :func:`resource_rows`: registers, shared memory, spills and theoretical
  occupancy of compiled configurations.

Every figure's title says that it is a model of the kernel's index
arithmetic (no GPU involved); tables of measurements say where they were
measured. Figure data are small integer numpy arrays (uint8/int16), which
Plotly stores base64-encoded, so the notebooks stay small.
"""
from __future__ import annotations


import importlib.util
import json
from pathlib import Path

import numpy as np

from . import banks, catalog, gpu, tiles
from .catalog import cdiv

REPO = Path(__file__).resolve().parent.parent
BANKS_JSON = REPO / "results" / "h200-banks.json"
PHASE_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c")


def _small(a) -> np.ndarray:
    """``a`` as the smallest of uint8 / int16 / int32 that holds it (compact figure data)."""
    a = np.asarray(a)
    lo, hi = int(a.min(initial=0)), int(a.max(initial=0))
    if lo >= 0 and hi < 256:
        return a.astype(np.uint8)
    if -32768 <= lo and hi < 32768:
        return a.astype(np.int16)
    return a.astype(np.int32)


def _model_note() -> str:
    return "model of the kernel's index arithmetic, no GPU involved"


# ------------------------------------------------------------------ heaven 3: staging and reuse
def staging_figure(p: dict | None = None, shape=(32, 32, 32), block=(1, 2)):
    """A, B and C of a small problem for ``sgemm_smem_tiled`` (kernels/03):
    C shows the tile block ``block`` = (bx, by) computes; A and B are coloured
    by the k step at which that block stages each element (blank: never
    staged by it), and hovering an element names the thread (ty, tx) that
    loads it. A Plotly slider over k steps outlines the two tiles staged at
    that step. From :func:`helpers.tiles.staging` for every step.
    Raises ValueError for a block outside the grid."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    q = catalog.get("smem_tiled").params(**(p or {"TILE": 8}))
    T = q["TILE"]
    M, N, K = shape
    bx, by = block
    steps = cdiv(K, T)
    zA = np.full((M, K), np.nan, np.float32)      # NaN: never staged by this block (drawn blank)
    zB = np.full((K, N), np.nan, np.float32)
    thrA = np.zeros((M, K, 2), np.uint8)
    thrB = np.zeros((K, N, 2), np.uint8)
    info = []
    for t in range(steps):
        s = tiles.staging(q, shape, bx, by, t)
        info.append(s)
        ty, tx = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
        for load, z, thr, ncols in ((s["A_load"], zA, thrA, K), (s["B_load"], zB, thrB, N)):
            ok = load >= 0
            r, c = load[ok] // ncols, load[ok] % ncols
            z[r, c] = t
            thr[r, c, 0], thr[r, c, 1] = ty[ok], tx[ok]
    own = tiles.owner_smem_tiled(q, shape) // 1024
    gx = cdiv(N, T)
    zC = (own == by * gx + bx).astype(np.uint8)

    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.07,
                        subplot_titles=(f"A ({M} x {K})", f"B ({K} x {N})", f"C ({M} x {N})"))
    for z, thr, col, name in ((zA, thrA, 1, "A"), (zB, thrB, 2, "B")):
        fig.add_trace(go.Heatmap(
            z=z, zmin=-0.5, zmax=steps - 0.5, colorscale=_step_scale(steps), customdata=thr,
            xgap=1, ygap=1, showscale=(col == 2), colorbar=dict(title="k step", tickvals=list(range(steps))),
            hovertemplate=(f"{name}[%{{y}}][%{{x}}]<br>staged at k step %{{z}}"
                           "<br>loaded by thread (ty, tx) = (%{customdata[0]}, %{customdata[1]})<extra></extra>")),
            1, col)
    fig.add_trace(go.Heatmap(z=zC, colorscale=[[0, "#f2f2f2"], [1, "#d62728"]], zmin=0, zmax=1,
                             showscale=False, xgap=1, ygap=1,
                             hovertemplate="C[%{y}][%{x}]<extra></extra>"), 1, 3)

    def rects(s):
        (r0, r1), (k0, k1) = s["A_rows"], s["A_cols"]
        (kb0, kb1), (c0, c1) = s["B_rows"], s["B_cols"]
        box = lambda x0, x1, y0, y1, ref: dict(type="rect", xref=f"x{ref}", yref=f"y{ref}",  # noqa: E731
                                               x0=x0 - 0.5, x1=x1 - 0.5, y0=y0 - 0.5, y1=y1 - 0.5,
                                               line=dict(color="#d62728", width=3))
        return [box(k0, k1, r0, r1, ""), box(c0, c1, kb0, kb1, "2")]

    def title(t):
        s = info[t]
        return (f"Block (bx, by) = ({bx}, {by}) of sgemm_smem_tiled, TILE = {T}: k step {t} of {steps} stages "
                f"A[{s['A_rows'][0]}:{s['A_rows'][1]}][{s['A_cols'][0]}:{s['A_cols'][1]}] and "
                f"B[{s['B_rows'][0]}:{s['B_rows'][1]}][{s['B_cols'][0]}:{s['B_cols'][1]}] (outlined)"
                f"<br><sup>colour: the k step at which this block stages each element; hover: the thread "
                f"that loads it; C: the block's tile; {_model_note()}</sup>")

    fig.update_layout(shapes=rects(info[0]))
    slider = [dict(method="relayout", label=str(t), args=[{"shapes": rects(info[t]), "title.text": title(t)}])
              for t in range(steps)]
    for c in (1, 2, 3):
        fig.update_yaxes(autorange="reversed", scaleanchor=f"x{'' if c == 1 else c}", constrain="domain",
                         row=1, col=c)
        fig.update_xaxes(constrain="domain", row=1, col=c)
    fig.update_layout(title=dict(text=title(0), x=0.01, font=dict(size=13)), height=470,
                      margin=dict(l=40, r=20, t=100, b=40),
                      sliders=[dict(active=0, steps=slider, currentvalue=dict(prefix="k step "), pad=dict(t=30))])
    return fig


def _step_scale(steps: int):
    """A discrete colour scale for z = 0 .. steps-1 (Viridis)."""
    import plotly.colors as pc
    cols = pc.sample_colorscale("Viridis", [i / max(steps - 1, 1) for i in range(steps)])
    n = len(cols)
    out = []
    for i, c in enumerate(cols):
        out += [[i / n, c], [(i + 1) / n, c]]
    return out


def reuse_rows(shape=(4096, 4096, 4096), tile_sizes=(8, 16, 32)) -> list[dict]:
    """Global bytes the loads of heaven 1 and of heaven 3 request, per TILE
    (:func:`helpers.tiles.reuse`), in GB (1e9 bytes)."""
    rows = []
    for T in tile_sizes:
        r = tiles.reuse({"TILE": T}, shape)
        rows.append({"TILE": T, "untiled GB": round(r["naive"] / 1e9, 1), "tiled GB": round(r["tiled"] / 1e9, 2),
                     "reuse factor": round(r["ratio"], 2), "saved GB": round((r["naive"] - r["tiled"]) / 1e9, 1)})
    return rows


# ------------------------------------------------------------------ owner model vs kernel
def check_owner(key: str, shape=(200, 264, 72), **params) -> str:
    """Compare ``catalog.get(key).owner(p, shape)`` with what the kernel's
    ``-DRECORD_OWNER=1`` build records (:func:`helpers.launch.record_owner`),
    element by element, on a shape that is not a multiple of the tiles.
    Live: AssertionError on any difference, else a one-line report.
    Recorded: a line saying where the GPU suite runs this check."""
    spec = catalog.get(key)
    if spec.owner is None:
        raise ValueError(f"kernel={key!r}: has no owner model in the catalog")
    if not gpu.live():
        return f"{key}: no GPU here; checked by tests/gpu/test_kernels.py::test_owner_model_matches_kernel"
    from . import launch
    p = spec.params(**params)
    got = launch.record_owner(key, shape, **params)
    want = spec.owner(p, shape)
    bad = int((got != want).sum())
    assert bad == 0, f"{key} {p}: owner model and kernel disagree on {bad} of {got.size} elements of C"
    return (f"{key} at M, N, K = {tuple(shape)}: the (block, thread) the kernel recorded for all "
            f"{got.size} elements of C equals the model.")


# ------------------------------------------------------------------ heaven 4: banks
LAYOUTS = {"PAD=0": ("tile1d_conflict", {}), "PAD=1": ("tile1d_padded", {"PAD": 1}),
           "PAD=2": ("tile1d_padded", {"PAD": 2}), "PAD=4": ("tile1d_padded", {"PAD": 4}),
           "XOR swizzle": ("tile1d_swizzle", {})}
DIRECTIONS = {"row": "the tile store: a warp writes along rows (STS, 4 bytes per lane)",
              "column": "the A read: a warp reads down a column (as wide as the row alignment allows)"}


def bank_state(width: int = 32, direction: str = "column", layout: str = "PAD=0", rows: int = 16) -> dict:
    """One state of the bank figure: the first ``rows`` rows of the chapter-4
    A tile (``BK = width`` floats per row plus padding), and the first
    instruction of warp 0 of that kind (``direction`` "row": the tile store,
    "column": the A read), from :func:`helpers.banks.warp_access`.

    Returns ``{"bank": uint8 (rows, cols) bank of every word, "elem": int16
    (rows, cols, 2) the A element (m, k) each word holds, (-1, -1) for
    padding, "lanes": {(row, col): [lanes]}, "phase": {(row, col): phase},
    "per_bank": uint8 (32,) distinct words per bank in the worst phase,
    "cost": the wavefronts dict, "width": bytes per lane, "key", "params"}``.
    Raises ValueError for a width, direction or layout the figure has no state for.
    """
    if width not in (16, 32):
        raise ValueError(f"width={width}: must be 16 or 32 (BK of the chapter-4 kernels)")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction={direction!r}: must be one of {tuple(DIRECTIONS)}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}: must be one of {tuple(LAYOUTS)}")
    key, extra = LAYOUTS[layout]
    p = {"BK": width, **extra}
    q = banks._full(key, p)
    pad = q["PAD"] if q["LAYOUT"] == 0 else 0
    cols = width + pad
    acc = banks.warp_access(key, p, direction)
    word = np.arange(rows * cols).reshape(rows, cols)
    elem = np.full((rows, cols, 2), -1, np.int16)
    for m in range(rows):
        for k in range(width):
            off = banks.a_tile_offset(q, m, k)
            elem[off // cols, off % cols] = (m, k)
    lanes, phase = {}, {}
    plist = banks.phases(acc["addrs"], acc["width"], load=(direction == "column"))
    phase_of = {ln: i for i, grp in enumerate(plist) for ln in grp}
    for lane, a in enumerate(acc["addrs"]):
        for w in range(a // 4, (a + acc["width"]) // 4):
            cell = divmod(w, cols)
            if cell[0] < rows:
                lanes.setdefault(cell, []).append(lane)
                phase.setdefault(cell, phase_of[lane])
    worst = int(np.argmax(acc["cost"]["phases"]))
    per_bank = np.zeros(32, np.uint8)
    words = {w for ln in plist[worst] for w in range(acc["addrs"][ln] // 4, (acc["addrs"][ln] + acc["width"]) // 4)}
    for w in words:
        per_bank[w % 32] += 1
    return {"bank": banks.bank(4 * word).astype(np.uint8), "elem": elem, "lanes": lanes, "phase": phase,
            "per_bank": per_bank, "worst_phase": worst, "phases": plist, "cost": acc["cost"],
            "width": acc["width"], "key": key, "params": p, "pad": pad}


def _bank_title(st: dict, width: int, direction: str, layout: str) -> str:
    c = st["cost"]
    per4k = 16 // st["width"] if direction == "column" else None
    ideal = len(c["phases"])
    head = (f"BK = {width}, {layout}, {direction} access: "
            + ("no conflict" if c["wavefronts"] == ideal else f"{c['ways']}-way conflict")
            + f", {c['wavefronts']} wavefronts (ideal {ideal})")
    line2 = f"{8 * st['width']}-bit per lane, {ideal} phase{'s' if ideal > 1 else ''}"
    if per4k:
        line2 += f"; {per4k} instruction{'s' if per4k > 1 else ''} per 4 k = {per4k * c['wavefronts']} wavefronts"
    return (f"{head}<br><sup>{line2}; {st['key']}, warp 0's first such instruction<br>boxes: the words it "
            f"touches (hover: lanes; outline colour: phase); {_model_note()}</sup>")


def _bank_traces(st: dict, visible: bool):
    import plotly.graph_objects as go
    rows, cols = st["bank"].shape
    cells = sorted(st["lanes"])
    ys = np.array([c[0] for c in cells], np.uint8)
    xs = np.array([c[1] for c in cells], np.uint8)
    text = [",".join(str(x) for x in sorted(set(st["lanes"][c]))) for c in cells]
    colors = [PHASE_COLORS[st["phase"][c] % 4] for c in cells]
    heat = go.Heatmap(z=st["bank"], zmin=-0.5, zmax=31.5, colorscale="Phase", xgap=1, ygap=1,
                      visible=visible, showscale=False,
                      hovertemplate="row %{y}, word %{x}: bank %{z}<extra></extra>")
    py, px = np.nonzero(st["elem"][:, :, 0] < 0)
    pads = go.Scatter(x=_small(px), y=_small(py), mode="markers", visible=visible, showlegend=False,
                      marker=dict(symbol="x-thin", size=7, line=dict(width=1, color="#555555")),
                      hovertemplate="padding word (row %{y}, word %{x})<extra></extra>")
    el = np.array([st["elem"][c] for c in cells], np.uint8).reshape(-1, 2)
    hi = go.Scatter(x=xs, y=ys, mode="markers", text=text, customdata=el, visible=visible, showlegend=False,
                    marker=dict(symbol="square-open", size=13, line=dict(width=2.5), color=colors),
                    hovertemplate="row %{y}, word %{x} holds A[%{customdata[0]}][%{customdata[1]}]"
                                  "<br>touched by lanes %{text}<extra></extra>")
    bar = go.Bar(x=np.arange(32, dtype=np.uint8), y=st["per_bank"], visible=visible, showlegend=False,
                 marker_color="#d62728", hovertemplate="bank %{x}: %{y} distinct words<extra></extra>",
                 xaxis="x2", yaxis="y2")
    return [heat, pads, hi, bar]


def bank_figure(width: int | None = None, direction: str | None = None, layout: str | None = None):
    """The bank-assignment figure of chapter 4.

    With all three arguments: one state (what the live widgets draw).
    Without: every state precomputed (tile width 16/32 x direction row/column
    x layout PAD=0/1/2/4/XOR swizzle), with a dropdown for width and direction
    and a slider for the layout; both are Plotly controls that work in the
    static book (the dropdown swaps in the slider of its width and direction).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fixed = width is not None
    combos = [(width, direction)] if fixed else [(w, d) for d in ("column", "row") for w in (32, 16)]
    lays = [layout] if fixed else list(LAYOUTS)
    fig = make_subplots(rows=2, cols=1, row_heights=[0.7, 0.3], vertical_spacing=0.17)
    states, titles = [], {}
    for w, d in combos:
        for lay in lays:
            st = bank_state(w, d, lay)
            first = not states
            for tr in _bank_traces(st, first):
                fig.add_trace(tr, row=2 if isinstance(tr, go.Bar) else 1, col=1)
            states.append((w, d, lay))
            titles[(w, d, lay)] = _bank_title(st, w, d, lay)
    n = len(fig.data) // len(states)

    def vis(i):
        return [j // n == i for j in range(len(fig.data))]

    def slider_for(w, d, active=0):
        steps = [dict(method="update", label=lay,
                      args=[{"visible": vis(states.index((w, d, lay)))}, {"title.text": titles[(w, d, lay)]}])
                 for lay in lays]
        return dict(active=active, steps=steps, currentvalue=dict(prefix="layout: "), pad=dict(t=60),
                    x=0.03, len=0.92)

    w0, d0 = combos[0]
    fig.update_yaxes(autorange="reversed", title_text="row of the tile", row=1, col=1)
    fig.update_xaxes(title_text="word in the row: BK floats, then padding (x); colour and hover: bank",
                     row=1, col=1)
    fig.update_yaxes(title_text="words", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="bank: distinct words it must deliver in the worst phase (tallest bar = "
                                "that phase's wavefronts)", dtick=4, range=[-0.5, 31.5], row=2, col=1)
    fig.update_layout(title=dict(text=titles[states[0]], x=0.01, font=dict(size=14)), height=680,
                      margin=dict(l=60, r=20, t=160 if not fixed else 100, b=40), bargap=0.15)
    if not fixed:
        menu = [dict(method="update", label=f"BK = {w}, {d} access",
                     args=[{"visible": vis(states.index((w, d, lays[0])))},
                           {"title.text": titles[(w, d, lays[0])], "sliders": [slider_for(w, d)]}])
                for w, d in combos]
        fig.update_layout(sliders=[slider_for(w0, d0)],
                          updatemenus=[dict(buttons=menu, direction="down", x=1.0, xanchor="right", y=1.0,
                                            yanchor="bottom", showactive=True, active=0, pad=dict(b=6))])
    return fig


def bank_explorer():
    """ipywidgets controls (tile width, access direction, layout) redrawing
    :func:`bank_figure` for one state. Live only (returns None without a GPU,
    like the book's other live controls; the Plotly controls of the static
    figure cover the same states; None also in batch execution, see
    :func:`helpers.show.live_controls`)."""
    from . import show
    if not show.live_controls():
        return None
    import ipywidgets as w
    from IPython.display import display
    ctl = {"width": w.ToggleButtons(options=[16, 32], value=32, description="BK"),
           "direction": w.ToggleButtons(options=list(DIRECTIONS), value="column", description="access"),
           "layout": w.SelectionSlider(options=list(LAYOUTS), value="PAD=0", description="layout",
                                       continuous_update=False)}
    out = w.Output()

    def redraw(_=None):
        out.clear_output(wait=True)
        with out:
            show.figure(bank_figure(ctl["width"].value, ctl["direction"].value, ctl["layout"].value))

    for c in ctl.values():
        c.observe(redraw, names="value")
    box = w.VBox([*ctl.values(), out])
    display(box)
    redraw()
    return box


def padding_rows() -> list[dict]:
    """When does +1 padding stop removing conflicts? A warp reads one column
    of a 32-element-wide tile (lane i: row i), for elements of 4, 8 and 16
    bytes and a padding of 1, 2 or 4 words per row (costed by
    :func:`helpers.banks.wavefronts`; the 4-byte and 1-word rows are the
    probes ``ld32_column33``, ``ld64_stride34``, ``ld128_stride36`` ...)."""
    rows = []
    for e in (4, 8, 16):
        for pad in (0, 1, 2, 4):
            if pad and (pad * 4) % e:
                # a pad smaller than the element breaks its alignment: the hardware cannot
                # load a misaligned double/float4, so that row does not exist in practice
                rows.append({"element": f"{e} B", "pad (words)": pad, "row stride (words)": 32 * e // 4 + pad,
                             "wavefronts": None, "ideal": e // 4,
                             "verdict": f"not possible: rows would not be {e}-byte aligned"})
                continue
            stride = 32 * e + 4 * pad
            c = banks.wavefronts([i * stride for i in range(32)], e)
            ideal = len(c["phases"])
            rows.append({"element": f"{e} B", "pad (words)": pad, "row stride (words)": stride // 4,
                         "wavefronts": c["wavefronts"], "ideal": ideal,
                         "verdict": "conflict-free" if c["wavefronts"] == ideal else f"{c['ways']}-way conflict"})
    return rows


def store_rows(width: int = 16) -> list[dict]:
    """The tile store of the chapter-4 GEMMs at ``BK = width``: padding and
    the swizzle, conflict degree of the store and width and count of the A
    reads (from :func:`helpers.banks.warp_access`)."""
    rows = []
    for lay in LAYOUTS:
        st = bank_state(width, "row", lay)
        rd = bank_state(width, "column", lay)
        rows.append({"layout": lay, "store: ways": st["cost"]["ways"],
                     "read: bits per lane": 8 * rd["width"], "read: instructions per 4 k": 16 // rd["width"],
                     "read: wavefronts per 4 k": (16 // rd["width"]) * rd["cost"]["wavefronts"]})
    return rows


def _ncu_plan(shape):
    spec = importlib.util.spec_from_file_location("_ncu_banks_plan", REPO / "scripts" / "ncu_banks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.plan(tuple(shape)), mod.predict


def load_bank_counters(path=None) -> dict | None:
    """The JSON ``python scripts/ncu_banks.py --out results/h200-banks.json``
    wrote on a GPU (Nsight Compute counters per variant), or None when it
    has not been recorded yet."""
    p = Path(path) if path else BANKS_JSON
    if not p.is_file():
        return None
    return json.loads(p.read_text())


SHORT = {banks.LD_CONFLICTS: "ld conflicts", banks.ST_CONFLICTS: "st conflicts",
         banks.LD_WAVEFRONTS: "ld wavefronts", banks.LD_INSTRUCTIONS: "ld instructions"}


ST_INSTRUCTIONS = "smsp__inst_executed_op_shared_st.sum"
ST_NOISE = 0.15     # tolerated store-side excess, as a fraction of the store instructions


def counter_agrees(metric: str, model: int, measured: dict) -> bool:
    """Whether Nsight Compute's ``measured`` counters (each the minimum over the
    variant's launches, see scripts/ncu_banks.py) agree with
    the model's value ``model`` of ``metric``: exactly, except for the store
    conflicts. On the H200, ncu reports a few store wavefronts beyond the
    access pattern's that change from run to run of the same kernel (3-14 %
    of the store instructions in the 2026-11-29 run), so there the pattern's
    part must be present (ncu >= model) and the excess within
    :data:`ST_NOISE` of the store instructions (the rule of
    tests/gpu/test_banks_ncu.py)."""
    got = measured.get(metric)
    if got is None:
        return False
    if metric == banks.ST_CONFLICTS and ST_INSTRUCTIONS in measured:
        return 0 <= got - model <= ST_NOISE * measured[ST_INSTRUCTIONS]
    return got == model


def bank_counter_rows(doc: dict | None = None, which: str = "gemm") -> list[dict]:
    """Model (``banks.predict`` / ``banks.predict_probe``, recomputed here)
    next to Nsight Compute's counters, one row per launch of
    ``scripts/ncu_banks.py``'s plan: ``which`` = "gemm" (the chapter-4
    variants) or "probe" (one-warp probes). ``doc``: :func:`load_bank_counters`
    or None (then every measured cell is None). Each row has, per counter,
    "<short> model" and "<short> ncu", "st excess" (ncu - model store
    conflicts) and "agree": "yes", "NO" or None (:func:`counter_agrees`)."""
    shape = tuple(doc["_meta"]["shape"]) if doc else (512, 512, 512)
    plan, predict = _ncu_plan(shape)
    rows = []
    for it in plan:
        kind = "probe" if it["key"] == "probe" else ("gemm" if it["key"].startswith("tile1d") else "other")
        if kind != which:
            continue
        meta = ((doc or {}).get("_meta", {}).get("variants", {})).get(it["name"])
        if meta:                                   # what was actually launched (e.g. the probe reps)
            it = {**it, "params": meta.get("params", it["params"]), "shape": meta.get("shape", it["shape"])}
        pred = predict(it)
        meas = (doc or {}).get(it["name"])
        row = {"variant": it["name"]}
        for m, short in SHORT.items():
            row[f"{short} model"] = pred[m]
            row[f"{short} ncu"] = None if meas is None else meas.get(m)
        if meas is None:
            row["st excess"], row["agree"] = None, None
        else:
            st = meas.get(banks.ST_CONFLICTS)
            row["st excess"] = None if st is None else st - pred[banks.ST_CONFLICTS]
            ok = all(counter_agrees(m, pred[m], meas) for m in SHORT)
            row["agree"] = "yes" if ok else "NO"
        rows.append(row)
    return rows


# ------------------------------------------------------------------ heaven 5: ownership
def _block_owner(key: str, p: dict) -> np.ndarray:
    """Thread index (threadIdx.x, 0..1023) owning each element of block (0, 0)'s tile."""
    spec = catalog.get(key)
    BM = p.get("BM")
    BN = p.get("BN")
    shape = (BM, BN, p.get("BK", 8))
    return spec.owner(p, shape) % 1024


def _rects(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Cover the True cells of ``mask`` by rectangles (row0, row1, col0, col1),
    half-open: runs along rows, merged down identical runs."""
    out, open_ = [], {}
    for r in range(mask.shape[0] + 1):
        runs = set()
        if r < mask.shape[0]:
            row = np.concatenate([[False], mask[r], [False]])
            d = np.flatnonzero(np.diff(row.astype(np.int8)))
            runs = set(zip(d[::2].tolist(), d[1::2].tolist()))
        for run in list(open_):
            if run not in runs:
                out.append((open_.pop(run), r, *run))
        for run in runs:
            open_.setdefault(run, r)
    return out


def ownership_figure(key: str, p: dict | None = None, warp: int = 0):
    """Who owns which element of one block tile of C, for a chapter-5 kernel
    (``reg1d``, ``reg2d``, ``reg2d_vec4``, ``warptile``, ``warptile_db``,
    ``cp_async``). Left: the block tile coloured by warp; right: the part of
    it that warp ``warp`` owns, coloured by lane. A Plotly slider over the
    lanes of that warp outlines the cells one thread owns (its TM x TN
    outputs, contiguous or spread). From the catalog's owner models
    (helpers/tiles.py), checked against the kernels on a GPU."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    spec = catalog.get(key)
    q = spec.params(**(p or {}))
    tid = _block_owner(key, q)
    wz, lz = tid // 32, tid % 32
    warps = int(wz.max()) + 1
    sel = np.argwhere(wz == warp)
    (r0, c0), (r1, c1) = sel.min(0), sel.max(0) + 1
    sub = lz[r0:r1, c0:c1]
    BM, BN = tid.shape
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, column_widths=[0.5, 0.5],
                        subplot_titles=(f"block tile {BM} x {BN}: colour = warp ({warps} warps)",
                                        f"warp {warp}'s {r1 - r0} x {c1 - c0} elements: colour = lane"))
    fig.add_trace(go.Heatmap(z=_small(wz), colorscale="Turbo", showscale=False,
                             hovertemplate="C tile[%{y}][%{x}]: warp %{z}<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=_small(sub), x0=int(c0), y0=int(r0), colorscale="Turbo", zmin=-0.5, zmax=31.5,
                             colorbar=dict(title="lane", tickvals=[0, 8, 16, 24, 31]),
                             hovertemplate="C tile[%{y}][%{x}]: lane %{z}<extra></extra>"), 1, 2)
    outline = dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c1 - 0.5, y0=r0 - 0.5, y1=r1 - 0.5,
                   line=dict(color="#000000", width=2))

    def shapes(lane):
        m = tid == warp * 32 + lane
        return [outline] + [dict(type="rect", xref="x2", yref="y2", x0=b0 - 0.5, x1=b1 - 0.5, y0=a0 - 0.5,
                                 y1=a1 - 0.5, line=dict(color="#000000", width=2.5))
                            for a0, a1, b0, b1 in _rects(m)]

    per = int((tid == warp * 32).sum())
    geo = ", ".join(f"{k}={q[k]}" for k in ("BM", "BN", "BK", "WM", "WN", "TM", "TN") if k in q)

    def title(lane):
        n = len(shapes(lane)) - 1
        return (f"{key}: lane {lane} of warp {warp} owns {per} outputs in {n} "
                f"block{'s' if n > 1 else ''} (outlined)<br><sup>{geo}<br>{_model_note()}; the GPU suite "
                "checks the model against the kernel's -DRECORD_OWNER=1 build</sup>")

    steps = [dict(method="relayout", label=str(l), args=[{"shapes": shapes(l), "title.text": title(l)}])
             for l in range(32)]
    for c in (1, 2):
        fig.update_yaxes(autorange="reversed", row=1, col=c)
    fig.update_yaxes(scaleanchor="x", constrain="domain", row=1, col=1)
    fig.update_xaxes(constrain="domain", row=1, col=1)
    fig.update_layout(shapes=shapes(0), title=dict(text=title(0), x=0.01, font=dict(size=13)), height=540,
                      margin=dict(l=40, r=20, t=110, b=40),
                      sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix=f"lane of warp {warp}: "),
                                    pad=dict(t=30))])
    return fig


# ------------------------------------------------------------------ resources
def resource_rows(items, shape=(4096, 4096, 4096)) -> tuple[list, str]:
    """Registers, shared memory, spills and theoretical occupancy of each
    compiled configuration; ``items`` are (key, partial params) pairs.

    Live: the kernel compiled here, read from the CUDA driver
    (:meth:`helpers.launch.Launch.resources`). Recorded: ``nvcc -Xptxas -v``
    for sm_90 (:func:`helpers.compile.nvcc_check`) and the occupancy model of
    :func:`helpers.launch.occupancy` for an H100/H200. An invalid set is
    listed with the rule it breaks (nothing compiled). Returns (rows, where);
    rows is [] when neither a GPU nor nvcc is here. "spills" is "SPILLS"
    when the compiled kernel uses local memory (register spills)."""
    from concurrent.futures import ThreadPoolExecutor
    from . import compile as kc, launch
    live = gpu.live()
    if not live and not kc.nvcc_path():
        return [], "needs nvcc or a GPU (neither is here)"

    def one(item):
        key, pt = item
        spec = catalog.get(key)
        p = spec.params(**pt)
        diff = {k: v for k, v in p.items() if v != spec.defaults.get(k)}
        label = key + (" " + " ".join(f"{k}={v}" for k, v in diff.items()) if diff else "")
        try:
            r = launch.resources_of(key, shape, **p)
        except ValueError as e:
            return {"config": label, "refused": str(e)}
        spill = r["spill_bytes"]
        return {"config": label, "threads": r["threads"], "registers": r["registers"],
                "shared memory (KiB)": round((r["smem_static"] + r["smem_dynamic"]) / 1024, 1),
                "spill bytes": spill, "spills": "SPILLS" if spill else "no",
                "blocks/SM": r["blocks_per_sm"], "occupancy": f"{r['occupancy']:.0%} ({r['limited_by']})"}

    with ThreadPoolExecutor(max_workers=1 if live else 4) as ex:
        rows = list(ex.map(one, list(items)))
    where = ("compiled here; registers, shared memory and local memory from the CUDA driver on "
             + gpu.device_info()["name"] if live else
             "nvcc -Xptxas -v for sm_90 on this machine (no GPU here); spills are ptxas's spill stores + "
             "loads; occupancy from the Occupancy Calculator model for an H100/H200")
    return rows, where


# ------------------------------------------------------------------ sweeps with short labels
def sweep_base(recs: list) -> dict:
    """The most common value of each parameter over a sweep's records (the
    configuration most points vary from)."""
    from collections import Counter
    names = list(recs[0]["params"])
    return {n: Counter(r["params"][n] for r in recs).most_common(1)[0][0] for n in names}


def sweep_figure(recs: list, title: str = ""):
    """:func:`helpers.sweep.figure` with each bar labelled by what it changes
    from :func:`sweep_base` ("base" for the base itself), so that sweeps over
    many parameters stay readable; bars, slider and title otherwise as there.
    Returns (figure, base)."""
    from . import sweep
    base = sweep_base(recs)
    names = [n for n in base if len({str(r["params"][n]) for r in recs}) > 1]
    fig = sweep.figure(recs, names, title=title)
    full = [" ".join(f"{n}={r['params'][n]}" for n in names) for r in recs]
    short = [" ".join(f"{n}={r['params'][n]}" for n in names if r["params"][n] != base[n]) or "base"
             for r in recs]
    fig.data[0].x = short
    for st, old, new in zip(fig.layout.sliders[0].steps, full, short):
        st.label = new
        st.args[1]["title.text"] = st.args[1]["title.text"].replace(old, new, 1)
    best = fig.layout.sliders[0].active
    fig.layout.title.text = fig.layout.title.text.replace(full[best], short[best], 1)
    room = int(3.4 * max(len(s) for s in short))       # tick labels at -30 degrees
    fig.update_layout(height=420 + room)
    fig.layout.sliders[0].pad.t = 30 + room
    return fig, base
