"""Figures and tables of chapter 4 (bank conflicts), drawn from :mod:`helpers.models.banks`.

* :func:`bank_state`, :func:`bank_figure`: the chapter-4 A tile as a grid
  coloured by bank, the words one warp instruction touches, its wavefronts;
  Plotly controls over precomputed states (tile width x access direction,
  layout); the live ipywidgets twin is
  :func:`helpers.chapters.ch04_bank_conflicts.bank_explorer`.
* :func:`padding_rows`: when +1 padding stops removing conflicts;
  :func:`store_rows`: the tile store and A reads of each layout.

Every figure's title says that it is a model (no GPU involved).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models import banks
from helpers.runtime import catalog

from .style import PHASE_COLORS, model_note, small


# The layouts of the A tile the figure shows, as the -D values of kernels/04_bank_conflicts.cu
# (LAYOUT 0: row-major, PAD floats after each row; 1: XOR-swizzled). Which catalog kernel
# builds each one is read from the kernels chapter 4 named to the "tile1d" bank model
# (:func:`kernel_of`).
LAYOUTS = {"PAD=0": {"LAYOUT": 0, "PAD": 0}, "PAD=1": {"LAYOUT": 0, "PAD": 1}, "PAD=2": {"LAYOUT": 0, "PAD": 2},
           "PAD=4": {"LAYOUT": 0, "PAD": 4}, "XOR swizzle": {"LAYOUT": 1, "PAD": 0}}


def kernel_of(layout: str) -> tuple[str, dict]:
    """(catalog key, parameter overrides) of the first kernel of the "tile1d" bank model
    (:func:`helpers.models.banks.kernels_of`) that builds ``layout`` of :data:`LAYOUTS`:
    one whose fixed -D values are the layout's, or whose PAD is a parameter. ValueError for
    an unknown layout, LookupError when no kernel builds it."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}: must be one of {tuple(LAYOUTS)}")
    want = LAYOUTS[layout]
    for key in banks.kernels_of("tile1d"):
        spec = catalog.get(key)
        if spec.fixed.get("LAYOUT") != want["LAYOUT"]:
            continue
        if spec.fixed.get("PAD") == want["PAD"]:
            return key, {}
        if "PAD" not in spec.fixed and "PAD" in spec.defaults:
            return key, {"PAD": want["PAD"]}
    raise LookupError(f"layout={layout!r}: no kernel of the tile1d bank model builds {want}")


DIRECTIONS = {"row": "the tile store: a warp writes along rows (STS, 4 bytes per lane)",
              "column": "the A read: a warp reads down a column (as wide as the row alignment allows)"}


def bank_state(width: int = 32, direction: str = "column", layout: str = "PAD=0", rows: int = 16) -> dict:
    """One state of the bank figure: the first ``rows`` rows of the chapter-4
    A tile (``BK = width`` floats per row plus padding), and the first
    instruction of warp 0 of that kind (``direction`` "row": the tile store,
    "column": the A read), from :func:`helpers.models.banks.warp_access`.

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
    key, extra = kernel_of(layout)
    p = {"BK": width, **extra}
    q = {"PAD": 0, **catalog.get(key).full(p)}
    pad = q["PAD"] if q["LAYOUT"] == 0 else 0
    cols = width + pad
    acc = banks.warp_access(key, q, direction)
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
            f"touches (hover: lanes; outline colour: phase); {model_note()}</sup>")


def _bank_traces(st: dict, visible: bool):
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
    pads = go.Scatter(x=small(px), y=small(py), mode="markers", visible=visible, showlegend=False,
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


def padding_rows() -> list[dict]:
    """When does +1 padding stop removing conflicts? A warp reads one column
    of a 32-element-wide tile (lane i: row i), for elements of 4, 8 and 16
    bytes and a padding of 1, 2 or 4 words per row (costed by
    :func:`helpers.models.banks.wavefronts`; the 4-byte and 1-word rows are the
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
    reads (from :func:`helpers.models.banks.warp_access`)."""
    rows = []
    for lay in LAYOUTS:
        st = bank_state(width, "row", lay)
        rd = bank_state(width, "column", lay)
        rows.append({"layout": lay, "store: ways": st["cost"]["ways"],
                     "read: bits per lane": 8 * rd["width"], "read: instructions per 4 k": 16 // rd["width"],
                     "read: wavefronts per 4 k": (16 // rd["width"]) * rd["cost"]["wavefronts"]})
    return rows
