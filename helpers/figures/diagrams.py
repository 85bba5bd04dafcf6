"""Two teaching diagrams of chapters 5 and 7, drawn from the catalog's parameters and the models.

* :func:`hierarchy_figure`: the tile hierarchy of a warp-tiled kernel: the block tile
  in C with the A and B panels it reads, the warp tiles of a block, and a lane's thread
  tile (``warptile``, ``warptile_db``, ``cp_async``) or the m16n8k16 tiles of a warp
  (``mma_sync_f16``, ``mma_sync_bf16``); a slider zooms from one level to the next
  (:mod:`helpers.models.hierarchy`, block ids from :mod:`helpers.models.raster`).
* :func:`raster_figure`: the order in which blocks take the tiles of C, row order
  against GROUP_M groups, and the A and B panels the first wave of blocks shares
  (:func:`helpers.models.raster.wave_panels`).

Both take a catalog key and a parameter dict (``catalog.get(key).full(p)`` gives every
-D value), so a live notebook can redraw them for the sliders' values. Every title says
that the figure is a model of the kernel's index arithmetic, not a measurement. One
colour rule in every view: blue is the unit the title names and what it reads, grey the
rest, a red outline one k step.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from helpers.models import hierarchy, raster
from helpers.runtime import catalog

from .style import GROUP_COLORS, SELECTED, discrete_scale, model_note, small

HIGHLIGHT = GROUP_COLORS[0]
OTHER = "#b4b4b4"                                 # opaque: cell text keeps its contrast in both themes
TWO = discrete_scale([OTHER, HIGHLIGHT])          # z = 0: the rest, z = 1: the unit and what it reads
FP32_ENTRIES = ("sgemm_warptile", "sgemm_warptile_db", "sgemm_cp_async")
MMA_ENTRIES = ("gemm_mma_sync",)


def _params(key: str, p: dict | None) -> tuple:
    spec = catalog.get(key)
    return spec, spec.full(spec.params(**(p or {})))


def _cells(z, x0, y0, dx, dy, custom, hover, text=None, visible=True, name=""):
    """A heatmap of cells dx x dy whose first cell has its top-left corner at (x0, y0)."""
    z = np.asarray(z)
    return go.Heatmap(
        z=small(z), x0=x0 + dx / 2, dx=dx, y0=y0 + dy / 2, dy=dy, zmin=-0.5, zmax=1.5, colorscale=TWO,
        showscale=False, xgap=1, ygap=1, customdata=custom, hovertemplate=hover + "<extra></extra>",
        text=text, texttemplate="%{text}" if text is not None else None, textfont=dict(size=10),
        visible=visible, name=name)


def _box(x0, x1, y0, y1, color=SELECTED, width=2.5, dash=None) -> dict:
    return dict(type="rect", xref="x", yref="y", x0=x0, x1=x1, y0=y0, y1=y1,
                line=dict(color=color, width=width, dash=dash))


def _label(x, y, text, xanchor, yanchor) -> dict:
    return dict(x=x, y=y, xref="x", yref="y", text=text, showarrow=False, xanchor=xanchor, yanchor=yanchor,
                font=dict(size=12))


class _View:
    """One zoom level: C (W wide, H high) at the origin, A's slice left of it and B's above,
    ``ka`` and ``kb`` elements of K deep; traces, shapes, labels and a title."""

    def __init__(self, W, H, ka):
        self.W, self.H, self.ka = W, H, ka
        self.gap = 0.04 * max(W, H)
        self.ax = -self.gap - ka          # A's left edge
        self.by = -self.gap - ka          # B's top edge
        self.traces, self.shapes, self.title = [], [], ""
        self.labels = [_label(self.ax + ka / 2, -self.gap / 2, "A", "center", "bottom"),
                       _label(-self.gap / 2, self.by + ka / 2, "B", "right", "middle")]

    def ranges(self) -> dict:
        pad = 0.02 * max(self.W, self.H)
        return {"xaxis.range": [self.ax - pad, self.W + pad], "yaxis.range": [self.H + pad, self.by - pad]}


def _block_view(key, q, tile, grid, pid_of) -> _View:
    BM, BN, BK = q["BM"], q["BN"], q["BK"]
    gm, gn = grid
    tr, tc = tile
    nk = int(max(2, min(8, round(0.25 * gn * BN / BK))))
    v = _View(gn * BN, gm * BM, nk * BK)
    r = np.arange(gm)[:, None]
    c = np.arange(gn)[None, :]
    zC = (r == tr) & (c == tc)
    cd = np.stack(np.broadcast_arrays(pid_of[:gm, :gn], r, c, r * BM, c * BN), -1)
    v.traces.append(_cells(zC, 0, 0, BN, BM, small(cd),
                           "block %{customdata[0]}: tile (%{customdata[1]}, %{customdata[2]}) of C,<br>"
                           f"rows %{{customdata[3]}}.. (+{BM}), columns %{{customdata[4]}}.. (+{BN})",
                           text=pid_of[:gm, :gn].astype(str), name="C: block tiles"))
    kk = np.arange(nk)
    cdA = np.stack(np.broadcast_arrays(r, kk[None, :], r * BM, kk[None, :] * BK), -1)
    v.traces.append(_cells(np.broadcast_to(r == tr, (gm, nk)), v.ax, 0, BK, BM, small(cdA),
                           "A: rows %{customdata[2]}.. (+" + str(BM) + "), k-tile %{customdata[1]} "
                           "(k %{customdata[3]}..)<br>read by every block of tile row %{customdata[0]}",
                           name="A: k-tiles"))
    cdB = np.stack(np.broadcast_arrays(kk[:, None], c, kk[:, None] * BK, c * BN), -1)
    v.traces.append(_cells(np.broadcast_to(c == tc, (nk, gn)), 0, v.by, BN, BK, small(cdB),
                           "B: k-tile %{customdata[0]} (k %{customdata[2]}..), columns %{customdata[3]}.. "
                           "(+" + str(BN) + ")<br>read by every block of tile column %{customdata[1]}",
                           name="B: k-tiles"))
    v.shapes = [_box(v.ax, v.ax + BK, tr * BM, tr * BM + BM), _box(tc * BN, tc * BN + BN, v.by, v.by + BK),
                _box(tc * BN, tc * BN + BN, tr * BM, tr * BM + BM, HIGHLIGHT, 1)]
    v.title = (f"{key}: block {pid_of[tr, tc]} computes a {BM} x {BN} tile of C from a {BM} x K panel of A "
               f"and a K x {BN} panel of B<br><sup>blue: the block and what it reads; red: its first k-tile "
               f"(BK = {BK}; {nk} of K drawn); numbers: block ids in launch order (GROUP_M = "
               f"{q.get('GROUP_M', 0)}); {model_note()}</sup>")
    return v


def _warp_view(key, q, tree, warp) -> _View:
    BM, BN, BK = tree["block"]
    ws = tree["warps"]
    w = ws[warp]
    WM, WN = w["rows"], w["cols"]
    v = _View(BN, BM, BK)
    nm, nn = BM // WM, BN // WN
    ids = np.array([x["warp"] for x in ws]).reshape(nm, nn)
    r = np.arange(nm)[:, None]
    c = np.arange(nn)[None, :]
    cd = np.stack(np.broadcast_arrays(ids, r * WM, c * WN), -1)
    v.traces.append(_cells(ids == warp, 0, 0, WN, WM, small(cd),
                           "warp %{customdata[0]}: rows %{customdata[1]}.. (+" + str(WM) + "), columns "
                           "%{customdata[2]}.. (+" + str(WN) + ") of the block tile",
                           text=np.char.add("w", ids.astype(str)), visible=False, name="C: warp tiles"))
    v.traces.append(_cells(r == w["wm"], v.ax, 0, BK, WM, small(np.stack(np.broadcast_arrays(r * WM, r), -1)),
                           "A tile in shared memory: rows %{customdata[0]}.. (+" + str(WM) + ") x BK = "
                           + str(BK) + "<br>read by the warps of warp row %{customdata[1]}",
                           visible=False, name="A: warp rows"))
    v.traces.append(_cells(c == w["wn"], 0, v.by, WN, BK, small(np.stack(np.broadcast_arrays(c * WN, c), -1)),
                           "B tile in shared memory: BK = " + str(BK) + " x columns %{customdata[0]}.. (+"
                           + str(WN) + ")<br>read by the warps of warp column %{customdata[1]}",
                           visible=False, name="B: warp columns"))
    v.title = (f"{key}: a {BM} x {BN} block tile is {len(ws)} warp tiles of {WM} x {WN}"
               f"<br><sup>blue: warp {warp} and the {WM} rows of A and {WN} columns of B it reads from the "
               f"block's k-tile in shared memory ({BM} x {BK} and {BK} x {BN}); {model_note()}</sup>")
    return v


def _thread_view(key, q, tree, warp, lane) -> _View:
    BK = tree["block"][2]
    w = tree["warps"][warp]
    WM, WN = w["rows"], w["cols"]
    TM, TN = tree["thread"]
    v = _View(WN, WM, BK)
    lane_at = np.zeros((WM // 4, WN // 4), dtype=np.int64)
    sub = np.zeros((WM // 4, WN // 4, 2), dtype=np.int64)
    for ln in tree["lanes"]:
        for im, i_n, r0, c0 in ln["blocks"]:
            lane_at[r0 // 4, c0 // 4] = ln["lane"]
            sub[r0 // 4, c0 // 4] = (im, i_n)
    rr, cc = np.meshgrid(np.arange(WM // 4) * 4, np.arange(WN // 4) * 4, indexing="ij")
    cd = np.stack([lane_at, sub[..., 0], sub[..., 1], rr + w["r0"], cc + w["c0"]], -1)
    v.traces.append(_cells(lane_at == lane, 0, 0, 4, 4, small(cd),
                           "lane %{customdata[0]} (thread " + str(32 * warp) + " + lane): its 4 x 4 block "
                           "(%{customdata[1]}, %{customdata[2]})<br>block-tile rows %{customdata[3]}..+3, "
                           "columns %{customdata[4]}..+3",
                           text=lane_at.astype(str), visible=False, name="C: 4 x 4 blocks of lanes"))
    me = tree["lanes"][lane]
    a = np.isin(np.arange(WM // 4) * 4, me["a_rows"])[:, None]
    b = np.isin(np.arange(WN // 4) * 4, me["b_cols"])[None, :]
    v.traces.append(_cells(a, v.ax, 0, BK, 4, small(np.arange(WM // 4)[:, None] * 4 + w["r0"]),
                           "A tile: rows %{customdata}..+3 of the block's, all BK = " + str(BK) + " k",
                           visible=False, name="A: rows of lanes"))
    v.traces.append(_cells(b, 0, v.by, 4, BK, small(np.arange(WN // 4)[None, :] * 4 + w["c0"]),
                           "B tile: columns %{customdata}..+3 of the block's, all BK = " + str(BK) + " k",
                           visible=False, name="B: columns of lanes"))
    v.shapes = [_box(v.ax, v.ax + 1, r, r + 4) for r in sorted(set(x - x % 4 for x in me["a_rows"]))]
    v.shapes += [_box(c, c + 4, v.by, v.by + 1) for c in sorted(set(x - x % 4 for x in me["b_cols"]))]
    LM, LN = tree["lane_grid"]
    v.title = (f"{key}: lane {lane} of warp {warp} owns {TM} x {TN} outputs, {len(me['blocks'])} blocks of "
               f"4 x 4 spread over the {WM} x {WN} warp tile<br><sup>blue: its blocks ({4 * LM} rows, {4 * LN} "
               f"columns apart) and the {TM} A rows and {TN} B columns it reads; red: one k; numbers: "
               f"the lane of each 4 x 4 block; {model_note()}</sup>")
    return v


def _mma_view(key, q, tree, warp) -> _View:
    BK = tree["block"][2]
    w = tree["warps"][warp]
    WM, WN = w["rows"], w["cols"]
    MT, NT = tree["grid"]
    v = _View(WN, WM, BK)
    r, c = np.arange(WM)[:, None], np.arange(WN)[None, :]
    lane = tree["c_lane"][r % 16, c % 8]
    reg = tree["c_reg"][r % 16, c % 8]
    cd = np.stack(np.broadcast_arrays(r // 16, c // 8, lane, reg, r + w["r0"], c + w["c0"]), -1)
    tr = go.Heatmap(
        z=small((r < 16) & (c < 8)), x0=0.5, dx=1, y0=0.5, dy=1, zmin=-0.5, zmax=1.5, colorscale=TWO,
        showscale=False, customdata=small(cd), visible=False, name="C: accumulators of the lanes",
        hovertemplate=("mma tile (%{customdata[0]}, %{customdata[1]}) of warp " + str(warp) + ": lane "
                       "%{customdata[2]}, accumulator c%{customdata[3]}<br>block-tile row %{customdata[4]}, "
                       "column %{customdata[5]}<extra></extra>"))
    v.traces.append(tr)
    ks = np.arange(BK // 16)
    mi, nj = np.arange(MT)[:, None], np.arange(NT)[None, :]
    v.traces.append(_cells(np.broadcast_to(mi == 0, (MT, len(ks))), v.ax, 0, 16, 16,
                           small(np.stack(np.broadcast_arrays(mi, ks[None, :]), -1)),
                           "A: the 16 x 16 operand of mma row %{customdata[0]} at k16 step %{customdata[1]}",
                           visible=False, name="A: m16k16 tiles"))
    v.traces.append(_cells(np.broadcast_to(nj == 0, (len(ks), NT)), 0, v.by, 8, 16,
                           small(np.stack(np.broadcast_arrays(ks[:, None], nj), -1)),
                           "B: the 16 x 8 operand of mma column %{customdata[1]} at k16 step %{customdata[0]}",
                           visible=False, name="B: k16n8 tiles"))
    grey = "rgba(128,128,128,0.8)"
    v.shapes = [_box(f["c0"], f["c0"] + 8, f["r0"], f["r0"] + 16, grey, 0.75) for f in tree["frags"]]
    v.shapes += [_box(v.ax, v.ax + 16, 0, 16), _box(0, 8, v.by, v.by + 16), _box(0, 8, 0, 16)]
    v.title = (f"{key}: warp {warp}'s {WM} x {WN} tile is {MT} x {NT} m16n8k16 accumulator tiles"
               f"<br><sup>blue: tile (0, 0) and the A rows and B columns its mma reads; red: one k16 step "
               f"(A 16 x 16, B 16 x 8; BK = {BK} is {BK // 16}); hover: the lane and accumulator of each "
               f"element; {model_note()}</sup>")
    return v


def hierarchy_figure(key: str, p: dict | None = None, warp: int = 0, lane: int = 0, tile=(1, 1), grid=(3, 3)):
    """The tile hierarchy of a warp-tiled kernel, one zoom level per step of a Plotly slider.

    ``key``: ``warptile``, ``warptile_db`` or ``cp_async`` (FP32, chapter 5: block -> warp
    -> thread tile) or ``mma_sync_f16`` / ``mma_sync_bf16`` (chapter 7: block -> warp ->
    m16n8k16 tiles), with parameters ``p`` (catalog defaults where missing). Views: the
    block at tile ``tile`` of a ``grid`` = (tile rows, tile columns) corner of C, numbered
    by block id, with the A and B panels it reads; the warps of a block tile, warp ``warp``
    and the rows of A and columns of B it reads; lane ``lane`` of that warp and its thread
    tile (FP32) or the warp's accumulator tiles (mma.sync). From
    :mod:`helpers.models.hierarchy` and :func:`helpers.models.raster.block_raster`; the
    owner models say the same element by element (tests/test_diagrams.py). Raises
    ValueError for another kernel, or a warp, lane or tile outside the configuration.
    """
    spec, q = _params(key, p)
    if spec.entry in FP32_ENTRIES:
        tree = hierarchy.warptile_tree(q)
    elif spec.entry in MMA_ENTRIES:
        tree = hierarchy.mma_sync_tree(q)
    else:
        raise ValueError(f"key={key!r}: must be a warp-tiled kernel (warptile, warptile_db, cp_async, mma_sync_*)")
    nw = len(tree["warps"])
    if not 0 <= warp < nw:
        raise ValueError(f"warp={warp}: must be in [0, {nw}) for {key} at these parameters")
    if not 0 <= lane < 32:
        raise ValueError(f"lane={lane}: must be in [0, 32)")
    gm, gn = grid
    if not (0 <= tile[0] < gm and 0 <= tile[1] < gn):
        raise ValueError(f"tile={tuple(tile)}: must lie in the grid of {gm} x {gn} tiles")
    rast = raster.block_raster(q, (gm * q["BM"], gn * q["BN"], q["BK"]))
    pid_of = np.empty((gm, gn), dtype=np.int64)
    pid_of[rast[:, 0], rast[:, 1]] = np.arange(len(rast))
    views = [_block_view(key, q, tuple(tile), (gm, gn), pid_of), _warp_view(key, q, tree, warp)]
    views.append(_mma_view(key, q, tree, warp) if "frags" in tree else _thread_view(key, q, tree, warp, lane))
    names = ["block", "warp", "mma tiles" if "frags" in tree else "thread"]
    fig = go.Figure()
    for v in views:
        fig.add_traces(v.traces)
    n = [len(v.traces) for v in views]

    def args(i):
        vis = [j == i for j, m in enumerate(n) for _ in range(m)]
        return [{"visible": vis}, {"shapes": views[i].shapes, "annotations": views[i].labels,
                                   "title.text": views[i].title, **views[i].ranges()}]

    steps = [dict(method="update", label=name, args=args(k)) for k, name in enumerate(names)]
    ax = dict(showticklabels=False, showgrid=False, zeroline=False, showline=False, ticks="")
    fig.update_xaxes(**ax, constrain="domain")
    fig.update_yaxes(**ax, scaleanchor="x", constrain="domain")
    first = args(0)[1]
    fig.update_layout(
        title=dict(text=first["title.text"], x=0.01), shapes=first["shapes"], annotations=first["annotations"],
        xaxis_range=first["xaxis.range"], yaxis_range=first["yaxis.range"], height=580,
        margin=dict(l=10, r=10, t=110, b=40), showlegend=False,
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="zoom: "), x=0.08, len=0.84,
                      pad=dict(t=10))])
    return fig


# ------------------------------------------------------------------ block order (GROUP_M)
WAVE_COLORS = [HIGHLIGHT, GROUP_COLORS[1], "#9a9a9a", OTHER]




def raster_figure(key: str, p: dict | None = None, shape=(4096, 4096, 4096), sms: int = 132,
                  blocks_per_sm: int = 1, groups=None):
    """The order in which the blocks of kernel ``key`` (a chapter 5 warp-tile kernel or a
    chapter 7 one: any entry whose parameters include GROUP_M) take the tiles of C on
    ``shape`` = (M, N, K), with a Plotly slider over GROUP_M: row order first (GROUP_M = 0
    in kernels/05, 1 in kernels/07), then ``groups`` (default 2, 4, 8, 16 and the
    kernel's default, those up to the number of tile rows; plus ``p``'s value).

    Colour: the wave a tile's block runs in, ``sms * blocks_per_sm`` blocks at a time,
    assuming blocks start in block-id order (blue: the first wave, orange: the second);
    the red line joins the first wave's tiles in launch order; the strips left of and
    above C mark the row panels of A and the column panels of B the first wave reads
    (:func:`helpers.models.raster.wave_panels`). The title counts them for the step and
    for row order. The slider starts at ``p``'s GROUP_M (the catalog default unless given). A model of the block raster: which tiles share operands, not what
    the caches keep or how fast the kernel runs. Raises ValueError for a kernel without
    GROUP_M, a bad GROUP_M or a wave size below 1.
    """
    spec, q = _params(key, p)
    if "GROUP_M" not in q:
        raise ValueError(f"key={key!r}: has no GROUP_M parameter (no block raster to draw)")
    if not isinstance(sms, int) or not isinstance(blocks_per_sm, int) or sms < 1 or blocks_per_sm < 1:
        raise ValueError(f"sms={sms!r}, blocks_per_sm={blocks_per_sm!r}: must be integers >= 1")
    M, N, K = shape
    BM, BN = q["BM"], q["BN"]
    gm, gn = raster.cdiv(M, BM), raster.cdiv(N, BN)
    row_order = 0 if 0 in spec.choices.get("GROUP_M", ()) else 1
    default, current = int(spec.defaults["GROUP_M"]), int(q["GROUP_M"])
    for g in list(groups or ()) + [current]:
        if not isinstance(g, int) or isinstance(g, bool) or g < row_order:
            raise ValueError(f"GROUP_M={g!r}: must be an integer >= {row_order} for {key} "
                             f"({'0 = row order' if row_order == 0 else '1 = row order; 0 divides by zero'})")
    values = sorted(set(groups) | {current}) if groups is not None else sorted(
        {row_order, default, current} | {g for g in (2, 4, 8, 16) if g <= gm})
    flight = sms * blocks_per_sm
    eb = 4 if spec.dtype == "float32" else 2
    gap, strip = 0.06 * max(M, N), 0.04 * max(M, N)
    base = raster.wave_panels({**q, "GROUP_M": row_order}, shape, flight, elem_bytes=eb)
    fig = go.Figure()
    steps, titles = [], []
    colors = WAVE_COLORS + WAVE_COLORS[-1:] * max(0, base["waves"] - len(WAVE_COLORS))
    for i, g in enumerate(values):
        qg = {**q, "GROUP_M": g}
        tiles = raster.block_raster(qg, shape)
        pid = np.empty((gm, gn), dtype=np.int64)
        pid[tiles[:, 0], tiles[:, 1]] = np.arange(len(tiles))
        wave = pid // flight
        w0 = raster.wave_panels(qg, shape, flight, elem_bytes=eb)
        r, c = np.arange(gm)[:, None], np.arange(gn)[None, :]
        cd = np.stack(np.broadcast_arrays(pid, wave, r, c), -1)
        vis = i == values.index(current)
        fig.add_trace(go.Heatmap(
            z=small(wave), x0=BN / 2, dx=BN, y0=BM / 2, dy=BM, zmin=-0.5, zmax=len(colors) - 0.5,
            colorscale=discrete_scale(colors), showscale=False, xgap=1, ygap=1, customdata=small(cd),
            text=pid.astype(str) if gm * gn <= 64 else None, texttemplate="%{text}" if gm * gn <= 64 else None,
            hovertemplate=("tile (%{customdata[2]}, %{customdata[3]}): block %{customdata[0]}, wave "
                           "%{customdata[1]}<br>reads row panel %{customdata[2]} of A and column panel "
                           "%{customdata[3]} of B<extra></extra>"), visible=vis, name=f"GROUP_M={g}"))
        ina = np.isin(np.arange(gm), w0["a_panels"])[:, None]
        inb = np.isin(np.arange(gn), w0["b_panels"])[None, :]
        fig.add_trace(_cells(ina, -gap - strip, 0, strip, BM, small(np.arange(gm)[:, None]),
                             "A row panel %{customdata} (" + f"{BM} x {K}" + ")", visible=vis, name="A panels"))
        fig.add_trace(_cells(inb, 0, -gap - strip, BN, strip, small(np.arange(gn)[None, :]),
                             "B column panel %{customdata} (" + f"{K} x {BN}" + ")", visible=vis, name="B panels"))
        first = tiles[:flight]
        fig.add_trace(go.Scatter(x=(first[:, 1] + 0.5) * BN, y=(first[:, 0] + 0.5) * BM, mode="lines",
                                 line=dict(color=SELECTED, width=1.5), hoverinfo="skip", visible=vis,
                                 name="launch order"))
        mb = (w0["a_bytes"] + w0["b_bytes"]) / 2 ** 20
        mb0 = (base["a_bytes"] + base["b_bytes"]) / 2 ** 20
        titles.append(
            f"{key}, {M} x {N} x {K}, {'row order' if g == row_order else f'GROUP_M = {g}'}"
            f"{' (default)' if g == default else ''}: the first {min(flight, gm * gn)} blocks read "
            f"{len(w0['a_panels'])} panels of A and {len(w0['b_panels'])} of B ({mb:.0f} MiB)"
            f"<br><sup>row order: {len(base['a_panels'])} + {len(base['b_panels'])} ({mb0:.0f} MiB). "
            f"{gm} x {gn} tiles of {BM} x {BN}; {sms} SMs x {blocks_per_sm} "
            f"block{'' if blocks_per_sm == 1 else 's'} at a time, started in block-id order; colour: wave (blue: the first); red: its launch order; which panels the blocks "
            f"in flight share, not a timing; {model_note()}</sup>")
        steps.append(dict(method="update", label="row order" if g == row_order else str(g),
                          args=[{"visible": [j // 4 == i for j in range(4 * len(values))]},
                                {"title.text": titles[-1]}]))
    active = values.index(current)
    ax = dict(showticklabels=False, showgrid=False, zeroline=False, showline=False, ticks="")
    fig.update_xaxes(**ax, constrain="domain", range=[-gap - strip * 1.1, gn * BN * 1.01])
    fig.update_yaxes(**ax, scaleanchor="x", constrain="domain", range=[gm * BM * 1.01, -gap - strip * 1.1])
    fig.update_layout(
        title=dict(text=titles[active], x=0.01), height=600, margin=dict(l=10, r=10, t=120, b=40),
        showlegend=False,
        annotations=[_label(-gap - strip / 2, -gap / 2, "A", "center", "bottom"),
                     _label(-gap / 2, -gap - strip / 2, "B", "right", "middle")],
        sliders=[dict(active=active, steps=steps, currentvalue=dict(prefix="GROUP_M: "), x=0.08, len=0.84,
                      pad=dict(t=20))])
    return fig
