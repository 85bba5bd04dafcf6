"""The index-mapping figure of heavens 1-2: who computes each C element, who loads what.

Drawn from :mod:`helpers.models.mapping` (the kernels' index arithmetic).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models.words import counted
from helpers.models.mapping import _threads_of, owner, warp_loads


def figure(key: str, p: dict, shape=(32, 32, 8), block=(0, 0), warp: int = 0, steps: int = 4):
    """Three heatmaps: C colored by warp (hover: block, warp, lane, thread),
    and A and B with the elements that warp ``warp`` of ``block`` loads at
    k-step t highlighted; a Plotly slider moves t (works in the static book)."""

    M, N, K = shape
    own = owner(key, p, shape)
    blk, thr = own // 1024, own % 1024
    wid = blk * ((p["BLOCK_X"] * p["BLOCK_Y"] + 31) // 32) + thr // 32
    gx = _threads_of(key, p, shape)[4]
    target_blk = block[1] * gx + block[0]
    sel = (blk == target_blk) & (thr // 32 == warp)
    tpb = p["BLOCK_X"]
    custom = np.stack([blk % gx, blk // gx, thr // 32, thr % 32, thr % tpb, thr // tpb], -1)
    custom = custom.astype(np.uint8 if custom.max() < 256 else np.uint16)   # compact in the notebook
    zc = (wid % 12).astype(np.uint8)
    zc[sel] = 13
    fig = make_subplots(rows=1, cols=3, column_widths=[0.22, 0.39, 0.39], horizontal_spacing=0.06,
                        subplot_titles=(f"A ({M}x{K})", f"B ({K}x{N})", f"C ({M}x{N}): one color per warp"))

    def z_for(step):
        zA, zB = np.zeros((M, K), np.uint8), np.zeros((K, N), np.uint8)
        notes = []
        for ld in warp_loads(key, p, shape, block, warp, step):
            z = zA if ld["operand"] == "A" else zB
            for (r, c) in ld["elements"]:
                if r < z.shape[0] and c < z.shape[1]:
                    z[r, c] = 1
            notes.append((ld["operand"], len(ld["elements"]), ld["sectors"]))
        return zA, zB, _load_notes(notes)

    zA, zB, notes0 = z_for(0)
    scale = [[0, "#eeeeee"], [1, "#d62728"]]
    fig.add_trace(go.Heatmap(z=zA, colorscale=scale, showscale=False, zmin=0, zmax=1,
                             hovertemplate="A[%{y}][%{x}]<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=zB, colorscale=scale, showscale=False, zmin=0, zmax=1,
                             hovertemplate="B[%{y}][%{x}]<extra></extra>"), 1, 2)
    fig.add_trace(go.Heatmap(z=zc, colorscale="Turbo", zmin=0, zmax=13, showscale=False, customdata=custom,
                             hovertemplate="C[%{y}][%{x}]<br>block (%{customdata[0]}, %{customdata[1]})"
                                           "<br>warp %{customdata[2]}, lane %{customdata[3]}"
                                           "<br>thread (%{customdata[4]}, %{customdata[5]})<extra></extra>"), 1, 3)
    steps_ui = []
    for s in range(steps):
        a, b, notes = z_for(s)
        kk = f"k = {s}" if key.startswith("naive") else f"k = {4 * s}..{4 * s + 3}"
        steps_ui.append(dict(method="update", label=str(s),
                             args=[{"z": [a.tolist(), b.tolist()]}, {"title.text": _title(key, warp, block, kk, notes)}, [0, 1]]))
    for c in (1, 2, 3):
        fig.update_yaxes(autorange="reversed", row=1, col=c)
    fig.update_layout(title=dict(text=_title(key, warp, block, "k = 0" if key.startswith("naive") else "k = 0..3",
                                             notes0), x=0.01),
                      height=430, margin=dict(l=40, r=20, t=90, b=70),
                      sliders=[dict(active=0, steps=steps_ui, currentvalue=dict(prefix="k-loop step "),
                                    pad=dict(t=30))])
    return fig


def _title(key, warp, block, kk, notes):
    return (f"{key}: warp {warp} of block {block} (outlined dark red in C), loads at {kk}"
            f"<br><sup>{'; '.join(notes)} (a 32-byte sector is the unit of a memory transaction)</sup>")


def _load_notes(loads) -> list:
    """One note per operand from ``loads`` ((operand, floats, sectors) per warp load, in order):
    "A: 4 floats in 1 sector", or "B: 4 loads of 128 floats in 16 sectors each" when an operand's
    loads at the step are all alike."""
    notes = []
    for op in dict.fromkeys(o for o, _, _ in loads):
        mine = [(n, s) for o, n, s in loads if o == op]
        if len(mine) > 1 and len(set(mine)) == 1:
            n, s = mine[0]
            notes.append(f"{op}: {len(mine)} loads of {counted(n, 'float')} in {counted(s, 'sector')} each")
        else:
            notes += [f"{op}: {counted(n, 'float')} in {counted(s, 'sector')}" for n, s in mine]
    return notes
