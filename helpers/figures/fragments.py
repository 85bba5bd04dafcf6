"""Figures and tables of chapters 6-7 (Tensor Core fragments, ldmatrix, the swizzle).

Drawn from :mod:`helpers.models.fragments` and :mod:`helpers.models.mma_sync`:
:func:`figure_fragments` (who holds what in one mma.sync.m16n8k16),
:func:`figure_swizzle` and :func:`ldmatrix_phase_table` (bank groups and
wavefronts, plain vs swizzled), :func:`figure_warp_tiles` (one block tile in
warp tiles and fragments). Arrays in traces are small integer NumPy arrays
(Plotly stores them base64-encoded), so the figures stay small.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models.fragments import (frag_a, frag_b, frag_c, fragment_grid, ldmatrix_lane_rows,
                                      phase_wavefronts, swizzle)
from helpers.models.mma_sync import MMA_TEACHING, MmaSyncGeometry, mma_sync_ldsm_logical, mma_sync_ldsm_offsets
from helpers.runtime import catalog

from .style import GROUP_COLORS, OUTLINE, discrete_scale


def figure_fragments():
    """Who holds what in one ``mma.sync.m16n8k16`` (PTX ISA fragment layouts).

    Four heatmaps, each cell labelled and coloured by lane: the A fragment
    (16 x 16, m x k), the B fragment (16 x 8, k x n), the C/D fragment
    (16 x 8, m x n), and the row addresses the kernels hand to
    ``ldmatrix .x4`` (row ``lane % 16`` of a 16-row slice, 16-byte chunk
    ``lane / 16``): the same lanes address A's m rows and, with ``.trans``,
    B's k rows. Hover shows the element index, the register, and for ldmatrix
    which 8x8 matrix the row belongs to. A slider picks one lane and outlines
    everything it holds and the row it addresses. Model (PTX ISA), no GPU.
    """

    panels = []
    for op, what in (("A", "a"), ("B", "b"), ("C", "c")):
        lane_of, idx_of = fragment_grid(op)
        reg = idx_of // 2 if op != "C" else idx_of
        cd = np.stack([idx_of, reg], axis=-1).astype(np.int16)
        panels.append((op, lane_of.astype(np.uint8), cd, what))
    ld_lane = np.zeros((16, 2), dtype=np.uint8)
    for lane in range(32):
        r, c = ldmatrix_lane_rows(lane)
        ld_lane[r, c] = lane
    ld_cd = np.stack([ld_lane // 8, ld_lane % 8], axis=-1).astype(np.int16)

    pos = [(1, 1), (1, 2), (2, 1), (2, 2)]          # A, B, C, ldmatrix rows
    fig = make_subplots(rows=2, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.1, vertical_spacing=0.12,
                        subplot_titles=["A fragment (m x k)", "B fragment (k x n)", "C / D fragment (m x n)",
                                        "ldmatrix .x4: row address of each lane"])
    for (op, z, cd, what), (r, c) in zip(panels, pos):
        reg_word = "register" if op != "C" else "f32 register"
        fig.add_trace(go.Heatmap(
            z=z, customdata=cd, zmin=0, zmax=31, colorscale="Turbo", showscale=False, xgap=1, ygap=1,
            texttemplate="%{z}", textfont=dict(size=9),
            hovertemplate=(f"{op}[row %{{y}}, col %{{x}}]<br>held by lane %{{z}}<br>"
                           f"as {what}%{{customdata[0]}}, {reg_word} %{{customdata[1]}}<extra></extra>")),
            row=r, col=c)
    fig.add_trace(go.Heatmap(
        z=ld_lane, customdata=ld_cd, zmin=0, zmax=31, colorscale="Turbo", showscale=False, xgap=1, ygap=1,
        texttemplate="lane %{z}", textfont=dict(size=9),
        hovertemplate=("row %{y} of the 16-row slice, 16-byte chunk %{x}<br>address given by lane %{z}"
                       "<br>= row %{customdata[1]} of 8x8 matrix %{customdata[0]}: it lands in register "
                       "%{customdata[0]} of every lane<extra></extra>")),
        row=2, col=2)

    def marks(lane):
        a = np.array(frag_a(lane))
        b = np.array(frag_b(lane))
        c = np.array(frag_c(lane))
        r, ch = ldmatrix_lane_rows(lane)
        return [(a[:, 1], a[:, 0]), (b[:, 1], b[:, 0]), (c[:, 1], c[:, 0]), (np.array([ch]), np.array([r]))]

    for (x, y), (r, c) in zip(marks(0), pos):
        fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=15, color=OUTLINE, line=dict(width=3))),
                      row=r, col=c)
    steps = []
    for lane in range(32):
        m = marks(lane)
        steps.append(dict(method="restyle", label=str(lane),
                          args=[{"x": [v[0].tolist() for v in m], "y": [v[1].tolist() for v in m]}, [4, 5, 6, 7]]))
    names = [("m", "k", 16), ("k", "n", 8), ("m", "n", 8), ("row of the slice", "16-byte chunk", 2)]
    for (ylab, xlab, ncols), (r, c) in zip(names, pos):
        fig.update_yaxes(range=[15.5, -0.5], dtick=2, title_text=ylab, row=r, col=c)
        fig.update_xaxes(range=[-0.5, ncols - 0.5], dtick=1 if ncols <= 8 else 2, title_text=xlab, row=r, col=c)
    fig.update_annotations(font=dict(size=12))
    fig.update_layout(
        title=dict(text="mma.sync.m16n8k16: which lane holds which element"
                        "<br><sup>number = lane; PTX ISA fragment layouts, groupID = lane / 4, "
                        "threadID_in_group = lane % 4; a model, no GPU involved</sup>", x=0.01),
        height=860, margin=dict(l=50, r=20, t=90, b=40),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="outlined: lane "), pad=dict(t=50))])
    return fig


def _swizzle_panel(rows: int, R: int, on: bool):
    """(bank group of each logical chunk's stored place, stored (row, chunk)) for a tile."""
    q = np.arange(rows * R).reshape(rows, R)
    phys = swizzle(q, R, on)
    return (phys % 8).astype(np.uint8), np.stack([phys // R, phys % R], axis=-1).astype(np.int16)


def ldmatrix_phase_table(p: dict | None = None) -> list[dict]:
    """Wavefronts of each of the 4 phases (8x8 matrices) of warp 0's first
    ldmatrix of A (``.x4``) and of B (``.x4.trans``), plain vs swizzled, from
    the kernel's addresses (:func:`mma_sync_ldsm_offsets`). 1 wavefront is
    conflict-free; n is an n-way conflict."""
    base = dict(MMA_TEACHING, **(p or {}))
    rows = []
    for sw in (0, 1):
        g = MmaSyncGeometry.of({**base, "SWIZZLE": sw})
        a, b = mma_sync_ldsm_offsets(g, 0, 0)
        for name, addr in (("A (ldmatrix .x4)", a[0]), ("B (ldmatrix .x4.trans)", b[0])):
            wf = phase_wavefronts(addr)
            rows.append({"layout": "swizzled" if sw else "plain row-major", "operand": name,
                         **{f"phase {j}": w for j, w in enumerate(wf)},
                         "conflicts per instruction": sum(wf) - len(wf)})
    return rows


def figure_swizzle(p: dict | None = None, show_rows: int = 16, show_chunks: int = 16):
    """Bank group (banks 4g..4g+3) of every 16-byte chunk of the A and B
    stage tiles of 07_mma_sync.cu, plain (SWIZZLE=0) and swizzled, drawn at
    each chunk's *logical* place (row, chunk of the tile): a column of 8
    identical colours under one ldmatrix phase is an 8-way conflict.

    The outlined cells are the 8 rows one phase of warp 0's first ldmatrix
    reads (a slider picks the phase, lanes 8j..8j+7); the panel titles give
    that phase's wavefronts, computed from the kernel's byte addresses with
    :func:`phase_wavefronts`. Shows the first ``show_rows`` rows and
    ``show_chunks`` chunks of each tile. Model, no GPU.
    """

    base = dict(MMA_TEACHING, **(p or {}))
    g0 = MmaSyncGeometry.of({**base, "SWIZZLE": 0})
    offs = {}
    for sw in (0, 1):
        g = MmaSyncGeometry.of({**base, "SWIZZLE": sw})
        a, b = mma_sync_ldsm_offsets(g, 0, 0)
        offs[sw] = {"A": a[0], "B": b[0]}
    la, lb = mma_sync_ldsm_logical(g0, 0, 0)
    logical = {"A": (la[0][0], la[0][1]), "B": (lb[0][0], lb[0][1])}    # (rows, chunks) per lane

    def title(op, sw, phase):
        wf = phase_wavefronts(offs[sw][op])[phase]
        kind = "swizzled" if sw else "plain"
        return f"{op}, {kind}: {wf} wavefront" + (f"s ({wf}-way)" if wf > 1 else " (no conflict)")

    panels = [("A", 0, 1, 1), ("B", 0, 1, 2), ("A", 1, 2, 1), ("B", 1, 2, 2)]    # (op, swizzle, row, col)
    size = {"A": (g0.BM, g0.RA), "B": (g0.BK, g0.RB)}
    nc = {op: min(R, show_chunks) for op, (_, R) in size.items()}
    fig = make_subplots(rows=2, cols=2, subplot_titles=[title(op, sw, 0) for op, sw, _, _ in panels],
                        vertical_spacing=0.16, horizontal_spacing=0.08,
                        column_widths=[nc["A"] / (nc["A"] + nc["B"]) + 0.05, nc["B"] / (nc["A"] + nc["B"]) - 0.05])
    scale = discrete_scale(GROUP_COLORS)
    for op, sw, r, c in panels:
        rows_, R = size[op]
        nr = min(rows_, show_rows)
        z, cd = _swizzle_panel(rows_, R, bool(sw))
        fig.add_trace(go.Heatmap(
            z=z[:nr, :nc[op]], customdata=cd[:nr, :nc[op]], zmin=-0.5, zmax=7.5, colorscale=scale,
            showscale=(r == 1 and c == 2), xgap=1, ygap=1, texttemplate="%{z}", textfont=dict(size=9),
            colorbar=dict(title="bank<br>group", tickvals=list(range(8)), len=0.9),
            hovertemplate=(f"{op} tile, row %{{y}}, logical chunk %{{x}}<br>stored at row %{{customdata[0]}}, "
                           "chunk %{customdata[1]}<br>bank group %{z}: banks 4g..4g+3<extra></extra>")),
            row=r, col=c)
        fig.update_yaxes(range=[nr - 0.5, -0.5], title_text=("k row" if op == "B" else "m row") if c == 1 or op == "B" else "",
                         row=r, col=c)
        fig.update_xaxes(range=[-0.5, nc[op] - 0.5], title_text="chunk (16 B)", row=r, col=c)

    def marks(op, phase):
        rows_l, chunks_l = logical[op]
        sel = slice(8 * phase, 8 * phase + 8)
        return chunks_l[sel], rows_l[sel]

    for op, sw, r, c in panels:
        x, y = marks(op, 0)
        fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=16, color=OUTLINE, line=dict(width=3))),
                      row=r, col=c)
    steps = []
    for ph in range(4):
        xs, ys = [], []
        for op, sw, _, _ in panels:
            x, y = marks(op, ph)
            xs.append(x.tolist())
            ys.append(y.tolist())
        ann = {f"annotations[{i}].text": title(op, sw, ph) for i, (op, sw, _, _) in enumerate(panels)}
        steps.append(dict(method="update", label=f"phase {ph} (lanes {8 * ph}-{8 * ph + 7})",
                          args=[{"x": xs, "y": ys}, ann, [4, 5, 6, 7]]))
    fig.update_annotations(font=dict(size=12))
    fig.update_layout(
        title=dict(text="Bank group of each 16-byte chunk, plain (top) vs swizzled (bottom)"
                        f"<br><sup>tiles of 07_mma_sync.cu at BM={g0.BM} BN={g0.BN} BK={g0.BK} (first {show_rows} "
                        f"rows and chunks)<br>outlined: the 8 rows one ldmatrix phase of warp 0 reads; "
                        "model of the kernel's addresses, no GPU involved</sup>", x=0.01),
        height=840, margin=dict(l=60, r=20, t=120, b=40),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="outlined: "), pad=dict(t=50))])
    return fig


def figure_warp_tiles(key: str, p: dict | None = None):
    """One block tile of C split into warp tiles and Tensor Core fragments,
    for kernel ``key`` (a chapter 6 or 7 catalog entry): one cell per
    fragment (16 x 16 for WMMA, 16 x 8 for mma.sync m16n8k16), coloured by
    the warp that owns it; the label is the fragment's index inside the warp
    tile. From the kernels' index arithmetic (the owner models), no GPU."""
    spec = catalog.get(key)
    q = spec.params(**(p or {}))
    BM, BN, WM, WN = q["BM"], q["BN"], q["WM"], q["WN"]
    fm, fn = 16, (8 if spec.entry == "gemm_mma_sync" else 16)
    rr, cc = np.arange(BM // fm)[:, None], np.arange(BN // fn)[None, :]
    warp = ((rr * fm) // WM) * (BN // WN) + (cc * fn) // WN
    i, j = (rr * fm % WM) // fm, (cc * fn % WN) // fn
    cd = np.stack(np.broadcast_arrays(i, j, rr * fm, cc * fn), axis=-1).astype(np.int16)
    warps = (BM // WM) * (BN // WN)
    colors = (GROUP_COLORS * 2)[:warps]
    frag = "acc" if fn == 16 else "mma"
    fig = go.Figure(go.Heatmap(
        z=warp.astype(np.uint8), customdata=cd, zmin=-0.5, zmax=warps - 0.5,
        colorscale=discrete_scale(colors), xgap=1, ygap=1,
        colorbar=dict(title="warp", tickvals=list(range(warps))),
        text=[[f"{a},{b}" for a, b in zip(ri, rj)] for ri, rj in zip(*np.broadcast_arrays(i, j))]
        if BN // fn <= 16 else None, texttemplate="%{text}" if BN // fn <= 16 else "", textfont=dict(size=9),
        hovertemplate=(f"warp %{{z}}, {frag}[%{{customdata[0]}}][%{{customdata[1]}}]<br>C rows "
                       f"%{{customdata[2]}}..+{fm - 1}, cols %{{customdata[3]}}..+{fn - 1} of the block tile<extra></extra>")))
    fig.update_yaxes(autorange="reversed", title_text=f"fragment row (x {fm} rows of C)")
    fig.update_xaxes(title_text=f"fragment column (x {fn} columns of C)")
    fig.update_layout(
        title=dict(text=f"{key}: block tile {BM} x {BN}, {warps} warps of {WM} x {WN}, {fm} x {fn} fragments"
                        f"<br><sup>colour = warp; {'label' if BN // fn <= 16 else 'hover'}: the fragment's index "
                        "inside its warp tile; from the kernel's index arithmetic, no GPU involved</sup>", x=0.01),
        height=360 if BN // fn <= 16 else 380, margin=dict(l=60, r=20, t=80, b=50))
    return fig
