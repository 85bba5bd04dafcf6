"""Chapter 7's two ladders: the PROBE ladder (leave one stage of the kernel out) and the
configuration ladder from WMMA to mma.sync (one change per rung)."""
from __future__ import annotations

import plotly.graph_objects as go

from . import style


def probe_figure(result: dict, title: str = ""):
    """Bar chart of the ladder: ratio to cuBLAS per rung, the stage each rung drops on hover."""
    rows = result["rows"]
    fig = go.Figure(go.Bar(
        x=[r["label"] for r in rows], y=[r["ratio"] for r in rows],
        text=[style.ratio_text(r['ratio']) for r in rows], textposition="outside",
        customdata=[[r["stage"], r["TFLOP/s"], r["cuBLAS TFLOP/s"]] for r in rows],
        hovertemplate="%{x}<br>drops: %{customdata[0]}<br>%{customdata[1]:.0f} TFLOP/s, "
                      "cuBLAS %{customdata[2]:.0f}<br>ratio %{y:.3g}<extra></extra>"))
    fig.update_layout(title=title or f"mma.sync {result['dtype']}: leave one stage out",
                      yaxis_title="ratio to cuBLAS (same run)", height=360, margin=dict(t=50, b=40, l=60, r=20),
                      yaxis_range=[0, max(r["ratio"] for r in rows) * 1.2])
    return fig


def ladder_figure(rows: list, title: str):
    """Bars of the configuration ladder (rows of ``helpers.chapters.ch07_mma_sync.ladder_rows``):
    each rung's ratio to cuBLAS, labelled with the change it makes and the step's gain; a rung
    without a record is a grey stub marked "not recorded" (the next step is then taken over the
    nearest rung with a value, and says so); the last rung (chapter 7's shipped
    default) carries the default marker."""
    x = [f"{r['rung']}: {r['change']}" for r in rows]
    have = [r["ratio"] is not None for r in rows]
    top = max([r["ratio"] for r in rows if r["ratio"] is not None] or [1.0])
    y = [r["ratio"] if ok else top * 0.03 for r, ok in zip(rows, have)]
    def label(r, prev):
        if r["ratio"] is None:
            return "not recorded"
        if r["step"] is None:
            return style.ratio_text(r['ratio'])
        return f"{style.ratio_text(r['ratio'])}<br>{r['step']:+.3f}" + ("" if r["over"] == prev else f" vs {r['over']}")
    text = [label(r, i - 1) for i, r in enumerate(rows)]
    fig = go.Figure(go.Bar(
        x=x, y=y, text=text, textposition="outside", textfont=dict(size=11), cliponaxis=False,
        name="ratio to cuBLAS",
        marker_color=[style.BAR if ok else style.NOT_RECORDED for ok in have], showlegend=False,
        customdata=[[r["what"], r["TFLOP/s"] if r["TFLOP/s"] is not None else float("nan")] for r in rows],
        hovertemplate="%{x}<br>%{customdata[0]}<br>%{customdata[1]:.0f} TFLOP/s<br>ratio (step): %{text}"
                      "<extra></extra>"))
    if have[-1]:
        fig.add_trace(go.Scatter(x=[x[-1]], y=[rows[-1]["ratio"] + top * 0.24], mode="markers",
                                 marker=style.DEFAULT_MARKER, name=style.DEFAULT_NAME, hoverinfo="skip"))
    fig.update_layout(title=title, yaxis=dict(title="ratio to cuBLAS", range=[0, top * 1.35]),
                      height=400, margin=dict(t=70, b=60, l=60, r=20))
    return fig
