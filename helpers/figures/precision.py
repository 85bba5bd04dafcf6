"""The fp16-accumulator figure of chapter 6 (a NumPy model, no GPU)."""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.models.precision import DEMO, fp16_sum_emulation


def fp16_accumulator_figure(K: int = DEMO["K"]):
    """The running sum of the demo against k: fp32 grows to 16384, the fp16
    accumulator (4 per k16 step) flattens at 8192, a scalar fp16 sum (0.25 per
    k) at 512. Computed with NumPy (no GPU): a model of the arithmetic."""
    e16 = fp16_sum_emulation(K, step=16, every=512)
    e1 = fp16_sum_emulation(K, step=1, every=512)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=e16["k"], y=e16["fp32"], name="fp32 accumulator", line=dict(width=3)))
    fig.add_trace(go.Scatter(x=e16["k"], y=e16["fp16"], name="fp16 accumulator, +4 per k16 step (WMMA)",
                             line=dict(width=3, dash="dash")))
    fig.add_trace(go.Scatter(x=e1["k"], y=e1["fp16"], name="fp16 accumulator, +0.25 per k (scalar loop)",
                             line=dict(width=2, dash="dot")))
    fig.update_layout(
        title=dict(text="A sum that stops growing: C[i, j] = sum over k of 0.5 x 0.5"
                        "<br><sup>NumPy float16 / float32 emulation on the CPU (a model, not a measurement)</sup>",
                   x=0.01),
        xaxis_title="k (terms added so far)", yaxis_title="running sum",
        height=400, margin=dict(l=60, r=20, t=70, b=50), legend=dict(x=0.98, xanchor="right", y=0.12, yanchor="bottom", orientation="v"))
    return fig
