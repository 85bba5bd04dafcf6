"""The staircase of the landing page: every heaven's headline kernel at 4096^3, TFLOP/s on a
log scale, each labelled with its ratio to cuBLAS of its own dtype, beside the measured roofs.

Drawn from the running-table records (:func:`helpers.chapters.common.running`: live, or
recorded with their provenance) and the ceilings (:func:`helpers.runtime.roofline.ceilings`).
"""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.runtime import results
from helpers.runtime.bench import where

from .style import GROUP_COLORS

DTYPE_COLORS = {"float32": GROUP_COLORS[0], "float16": GROUP_COLORS[1], "bfloat16": GROUP_COLORS[2]}


def staircase_figure(recs: list, ceilings: dict):
    """One marker per heaven (x) at its TFLOP/s (log y), text = ratio to cuBLAS of its
    dtype; horizontal lines: the FP32 spec peak and cuBLAS of each dtype, measured."""
    ok = [r for r in recs if r.get("value")]
    fig = go.Figure()
    for dt in dict.fromkeys(r["dtype"] for r in ok):
        rs = [r for r in ok if r["dtype"] == dt]
        fig.add_trace(go.Scatter(
            x=[str(r["chapter"]) for r in rs], y=[r["value"] for r in rs], mode="lines+markers+text",
            line=dict(shape="hv", color=DTYPE_COLORS.get(dt)), marker=dict(size=10), name=dt,
            text=[f"{r['ratio']:.2f}×" for r in rs], textposition="top center",
            customdata=[[r.get("title", r["kernel"]), r["reference_value"]] for r in rs],
            hovertemplate="heaven %{x}: %{customdata[0]}<br>%{y} TFLOP/s, cuBLAS %{customdata[1]}<extra></extra>"))
    spec = ceilings.get("spec") or {}
    roofs = [("FP32 peak (spec)", spec.get("fp32_peak_TFLOPs"), "dash", "float32")]
    roofs += [(f"cuBLAS {dt}, measured", v, "dot", dt) for dt, v in (ceilings.get("cublas_TFLOPs") or {}).items()]
    xs = list(dict.fromkeys(str(r["chapter"]) for r in ok))
    for name, v, dash, dt in roofs:                  # traces, not shapes: annotations misplace on log axes
        if v and xs:
            fig.add_trace(go.Scatter(x=[xs[0], xs[-1]], y=[v, v], mode="lines", name=f"{name}: {v:.0f}",
                                     line=dict(dash=dash, width=1.5, color=DTYPE_COLORS.get(dt, "gray")),
                                     opacity=0.7, hovertemplate=f"{name}: {v:.1f} TFLOP/s<extra></extra>"))
    live = any(r.get("source") == "live" for r in recs)
    gpu_name = (results.load().get("provenance") or {}).get("gpu", "the recorded GPU")
    w = where(recs) if live else f"recorded on {gpu_name}; provenance under the table"
    fig.update_layout(
        title=dict(text=f"The staircase: each heaven at 4096³<br><sup>label: ratio to cuBLAS of the same dtype, "
                        f"same run<br>{w}</sup>", x=0.01),
        xaxis=dict(title="heaven", type="category"), yaxis=dict(title="TFLOP/s (log)", type="log", dtick=1),
        height=520, legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=110, b=60))
    return fig
