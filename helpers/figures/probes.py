"""The PROBE ladder figure of chapter 7 (leave one stage of the kernel out)."""
from __future__ import annotations

import plotly.graph_objects as go


def probe_figure(result: dict, title: str = ""):
    """Bar chart of the ladder: ratio to cuBLAS per rung, the stage each rung drops on hover."""
    rows = result["rows"]
    fig = go.Figure(go.Bar(
        x=[r["label"] for r in rows], y=[r["ratio"] for r in rows],
        text=[f"{r['ratio']:.3f}" for r in rows], textposition="outside",
        customdata=[[r["stage"], r["TFLOP/s"], r["cuBLAS TFLOP/s"]] for r in rows],
        hovertemplate="%{x}<br>drops: %{customdata[0]}<br>%{customdata[1]:.0f} TFLOP/s, "
                      "cuBLAS %{customdata[2]:.0f}<br>ratio %{y:.3f}<extra></extra>"))
    fig.update_layout(title=title or f"mma.sync {result['dtype']}: leave one stage out",
                      yaxis_title="ratio to cuBLAS (same run)", height=360, margin=dict(t=50, b=40, l=60, r=20),
                      yaxis_range=[0, max(r["ratio"] for r in rows) * 1.2])
    return fig
