"""Figures of chapter 10 (Hopper): the TMA swizzle, the wgmma accumulator layout,
the mbarrier ring of the warp-specialized kernel, and the ladder of rungs.

Each figure is drawn from :mod:`helpers.models.hopper` (the swizzle, the
accumulator layout, the pipeline model) or from measurement records (the
ladder); its title says which.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models import hopper as model
from helpers.runtime.bench import where

from .schedules import stage_bar, stage_color
from . import style
from .style import GROUP_COLORS, discrete_scale, model_note


def swizzle_figure(rows: int = 16):
    """Two panels: where 16-byte chunk c of row r of a TMA box lands in shared memory,
    without a swizzle and with the 128-byte swizzle (``rows`` rows of 128 bytes)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=("no swizzle", "SWIZZLE_128B: c -> c ^ (r % 8)"))
    for col, mode in enumerate(("none", "128B"), start=1):
        z = model.chunk_map(rows, mode)
        fig.add_trace(go.Heatmap(
            z=z, x=list(range(8)), y=list(range(rows)), zmin=-0.5, zmax=7.5,
            colorscale=discrete_scale(GROUP_COLORS), showscale=False, xgap=2, ygap=2,
            text=z, texttemplate="%{text}",
            hovertemplate="row %{y}, logical chunk %{x}<br>stored in chunk %{z} (banks 4z..4z+3)<extra></extra>"),
            row=1, col=col)
        fig.update_xaxes(title_text="logical 16-byte chunk c", dtick=1, constrain="domain", row=1, col=col)
        fig.update_yaxes(autorange="reversed", dtick=1, title_text="box row r" if col == 1 else None,
                         scaleanchor=f"x{'' if col == 1 else col}", constrain="domain", row=1, col=col)
    fig.update_layout(title=dict(text=f"Where TMA stores each 16-byte chunk (the number: its chunk in shared memory)"
                                      f"<br><sup>{model_note()}; checked on the GPU against a tile TMA wrote</sup>",
                                 x=0.01),
                      height=560, margin=dict(l=50, r=20, t=110, b=50))
    return fig


def accumulator_figure(n: int = 32):
    """Which lane of warp 0 holds each element of rows 0-15 and the first ``n`` columns of
    an m64nNk16 fp32 accumulator (warp w holds rows 16w..16w+15 the same way): number =
    lane, colour = the lane's quad (lane // 4, the row it starts in), hover = register."""
    full = n if n % 8 == 0 else 8 * (n // 8 + 1)
    thread, reg = model.accumulator_owner(full)
    lane, reg = thread[:16, :n], reg[:16, :n]
    fig = go.Figure(go.Heatmap(
        z=lane // 4, zmin=-0.5, zmax=7.5, colorscale=discrete_scale(GROUP_COLORS), showscale=False,
        text=lane, texttemplate="%{text}", textfont=dict(size=9), xgap=1, ygap=1,
        customdata=reg,
        hovertemplate="C[%{y}, %{x}]: lane %{text}, register d[%{customdata}]<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text="row (warp 0)", dtick=2, scaleanchor="x", constrain="domain")
    fig.update_xaxes(title_text="column", dtick=8, constrain="domain")
    fig.update_layout(title=dict(text=f"wgmma m64nNk16 accumulators: the lane of warp 0 that holds each element"
                                      f"<br><sup>{model_note()} (PTX ISA register fragments); checked on the GPU "
                                      "with an instrumented build</sup>", x=0.01),
                      height=460, margin=dict(l=50, r=20, t=90, b=40))
    return fig


def pipeline_figure(events: list, title: str = ""):
    """A timeline of the mbarrier ring (:func:`helpers.models.hopper.pipeline_schedule`):
    one row per stage for the TMA loads in flight into it, one row for the consumers'
    wgmma; bars numbered by k-tile, coloured by stage (:func:`helpers.figures.schedules.stage_bar`,
    the look of chapters 5 and 7's cp.async timeline too); hover gives the barrier parity
    and the time the waiter was blocked."""
    stages = max(e["stage"] for e in events) + 1
    rows = [f"TMA into stage {s}" for s in range(stages)] + ["wgmma (consumers)"]
    fig = go.Figure()
    for s in range(stages):
        ev = [e for e in events if e["stage"] == s]
        ys = [f"TMA into stage {s}" if e["who"] == "producer" else "wgmma (consumers)" for e in ev]
        fig.add_trace(stage_bar(
            ys, [e["start"] for e in ev], [e["end"] for e in ev], [str(e["tile"]) for e in ev], stage_color(s),
            [[e["tile"], e["phase"], e["waited"]] for e in ev],
            "k-tile %{customdata[0]} in stage " + str(s) + ", barrier parity %{customdata[1]}"
            "<br>from %{base:.2f}, %{x:.2f} long; waited %{customdata[2]:.2f} before", f"stage {s}"))
    eff = model.pipeline_efficiency(events)
    fig.update_layout(barmode="overlay", height=170 + 38 * len(rows), margin=dict(l=130, r=20, t=90, b=40),
                      showlegend=False,
                      title=dict(text=(title or f"{stages} stages") + f"<br>consumers busy {eff:.0%} of the time"
                                 "<br><sup>a model of the full/empty mbarrier ring, not a measurement</sup>", x=0.01),
                      xaxis_title="time (one unit = one k-tile of wgmma)",
                      yaxis=dict(categoryorder="array", categoryarray=rows[::-1]))
    return fig


def ladder_figure(recs: list, title: str = "The Hopper ladder", pipe: dict | None = None, pipe_where: str = ""):
    """Bars of each rung's ratio to cuBLAS (same run), one group per (dtype, shape); with
    ``pipe`` ({rung label: tensor-pipe active %} from Nsight Compute), a line of that
    activity in %, on a second axis at the right (``pipe_where`` says where it was measured)."""
    fig = go.Figure()
    groups: dict = {}
    for r in recs:
        if r.get("value") is not None:
            groups.setdefault((r["dtype"], tuple(r["shape"])), []).append(r)
    for (dt, shape), rs in groups.items():
        fig.add_trace(go.Bar(
            x=[r.get("rung_label", r["title"]) for r in rs], y=[r["ratio"] for r in rs],
            name=f"{dt} {shape[0]}x{shape[1]}x{shape[2]}",
            # the value inside its bar, rotated: a label above a bar near 1.0 would
            # sit on the cuBLAS line, and side by side at a phone's width the labels touch
            text=[style.ratio_text(r['ratio']) for r in rs], textposition="inside", insidetextanchor="middle",
            textangle=-90, insidetextfont=dict(size=11),
            hovertext=[f"{r['title']}<br>{r['value']:.0f} TFLOP/s, cuBLAS {r['reference_value']:.0f}" for r in rs],
            hoverinfo="text+y"))
    if pipe:
        fig.add_trace(go.Scatter(x=list(pipe), y=list(pipe.values()), mode="lines+markers", yaxis="y2",
                                 name="tensor pipe active, % (right axis; Nsight Compute, bf16 4096^3)",
                                 hovertemplate="%{x}: tensor pipe active %{y:.1f} %<br>" + pipe_where
                                 + "<extra></extra>"))
    top = max([1.0] + [r["ratio"] for rs in groups.values() for r in rs])
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="cuBLAS", annotation_position="top left")
    fig.update_layout(barmode="group", height=420, margin=dict(l=60, r=60 if pipe else 20, t=80, b=40),
                      title=dict(text=f"{title}<br><sup>bars: {where(recs)}"
                                      + (f"; tensor-pipe line: {pipe_where}" if pipe else "") + "</sup>", x=0.01),
                      yaxis=dict(title="ratio to cuBLAS (same run)", range=[0, 1.08 * top]),
                      legend=dict(orientation="h", y=-0.25))
    if pipe:
        # ticks of its own every 20 %: left to Plotly, an overlaying axis ticks where the left
        # axis's grid lines fall (19.4, 38.9, ... %)
        fig.update_layout(yaxis2=dict(title="tensor pipe active (%)", overlaying="y", side="right",
                                      range=[0, 105], showgrid=False, tickmode="linear", tick0=0, dtick=20))
    return fig
