"""The one shared look of the book's figures: colours, colour scales, compact data.

Every module of helpers/figures/ takes its palettes and helpers from here, so
the figures of all chapters look alike (#10).
"""
from __future__ import annotations

import numpy as np

# Wavefront phases of one warp instruction (chapter 4): none, 1st, 2nd, 3rd.
PHASE_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c")
# Eight categorical colours (bank groups, warps; Tableau 10).
GROUP_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7"]


def discrete_scale(colors):
    """A Plotly colorscale that gives integer z = 0..len(colors)-1 one flat colour each."""
    n = len(colors)
    scale = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def small(a) -> np.ndarray:
    """``a`` as the smallest of uint8 / int16 / int32 that holds it (compact figure data)."""
    a = np.asarray(a)
    lo, hi = int(a.min(initial=0)), int(a.max(initial=0))
    if lo >= 0 and hi < 256:
        return a.astype(np.uint8)
    if -32768 <= lo and hi < 32768:
        return a.astype(np.int16)
    return a.astype(np.int32)


def model_note() -> str:
    """What every model figure's title says about where its data come from."""
    return "model of the kernel's index arithmetic, no GPU involved"


def step_scale(steps: int):
    """A discrete colour scale for z = 0 .. steps-1 (Viridis)."""
    import plotly.colors as pc
    cols = pc.sample_colorscale("Viridis", [i / max(steps - 1, 1) for i in range(steps)])
    n = len(cols)
    out = []
    for i, c in enumerate(cols):
        out += [[i / n, c], [(i + 1) / n, c]]
    return out
