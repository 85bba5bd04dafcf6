"""Figures and tables of chapters 3 and 5, drawn from :mod:`helpers.models.tiles`.

* :func:`staging_figure`: which A and B tiles a block of heaven 3 stages at
  each k step and which thread loads which element (``tiles.staging``), with a
  Plotly slider over k steps; :func:`reuse_rows`: global bytes saved
  (``tiles.reuse``).
* :func:`ownership_figure`: which warp and lane owns which C element of one
  block tile of a chapter-5 kernel, with a slider over the lanes of warp 0.

Every figure's title says that it is a model of the kernel's index
arithmetic (no GPU involved). Figure data are small integer numpy arrays
(uint8/int16), which Plotly stores base64-encoded, so the notebooks stay small.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models import tiles
from helpers.models.raster import cdiv
from helpers.runtime import catalog

from .style import OUTLINE, model_note, small, step_scale


def staging_figure(p: dict | None = None, shape=(32, 32, 32), block=(1, 2)):
    """A, B and C of a small problem for ``sgemm_smem_tiled`` (kernels/03):
    C shows the tile block ``block`` = (bx, by) computes; A and B are coloured
    by the k step at which that block stages each element (blank: never
    staged by it), and hovering an element names the thread (ty, tx) that
    loads it. A Plotly slider over k steps outlines the two tiles staged at
    that step. From :func:`helpers.models.tiles.staging` for every step.
    Raises ValueError for a block outside the grid."""

    q = dict(p or {"TILE": 8})
    if set(q) != {"TILE"} or not isinstance(q["TILE"], int) or isinstance(q["TILE"], bool) or q["TILE"] < 1:
        raise ValueError(f"p={p!r}: must be {{'TILE': T}} with T a positive integer (the tile of sgemm_smem_tiled)")
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
            z=z, zmin=-0.5, zmax=steps - 0.5, colorscale=step_scale(steps), customdata=thr,
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
                f"that loads it; C: the block's tile; {model_note()}</sup>")

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


def reuse_rows(shape=(4096, 4096, 4096), tile_sizes=(8, 16, 32)) -> list[dict]:
    """Global bytes the loads of heaven 1 and of heaven 3 request, per TILE
    (:func:`helpers.models.tiles.reuse`), in GB (1e9 bytes)."""
    rows = []
    for T in tile_sizes:
        r = tiles.reuse({"TILE": T}, shape)
        rows.append({"TILE": T, "untiled GB": round(r["naive"] / 1e9, 1), "tiled GB": round(r["tiled"] / 1e9, 2),
                     "reuse factor": round(r["ratio"], 2), "saved GB": round((r["naive"] - r["tiled"]) / 1e9, 1)})
    return rows


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
    (helpers/models/tiles.py), checked against the kernels on a GPU."""

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
    fig.add_trace(go.Heatmap(z=small(wz), colorscale="Turbo", showscale=False,
                             hovertemplate="C tile[%{y}][%{x}]: warp %{z}<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=small(sub), x0=int(c0), y0=int(r0), colorscale="Turbo", zmin=-0.5, zmax=31.5,
                             colorbar=dict(title="lane", tickvals=[0, 8, 16, 24, 31]),
                             hovertemplate="C tile[%{y}][%{x}]: lane %{z}<extra></extra>"), 1, 2)
    outline = dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c1 - 0.5, y0=r0 - 0.5, y1=r1 - 0.5,
                   line=dict(color=OUTLINE, width=2))

    def shapes(lane):
        m = tid == warp * 32 + lane
        return [outline] + [dict(type="rect", xref="x2", yref="y2", x0=b0 - 0.5, x1=b1 - 0.5, y0=a0 - 0.5,
                                 y1=a1 - 0.5, line=dict(color=OUTLINE, width=2.5))
                            for a0, a1, b0, b1 in _rects(m)]

    per = int((tid == warp * 32).sum())
    geo = ", ".join(f"{k}={q[k]}" for k in ("BM", "BN", "BK", "WM", "WN", "TM", "TN") if k in q)

    def title(lane):
        n = len(shapes(lane)) - 1
        return (f"{key}: lane {lane} of warp {warp} owns {per} outputs in {n} "
                f"rectangle{'s' if n > 1 else ''} (outlined)<br><sup>{geo}<br>{model_note()}; checked against "
                "a build of the kernel that stores each output's thread index (-DRECORD_OWNER=1)</sup>")

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
