"""Figures of chapter 9 (any shape): strategies side by side, the split-count model,
wave quantization with its control, and the shape zoo.

Drawn from measurement records (live or recorded; each title says which, and where
they came from) and from :mod:`helpers.models.anyshape` (the models, labelled so).
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from helpers.models import anyshape as model

from . import style
from .style import GROUP_COLORS

DTYPE_COLORS = {"float16": GROUP_COLORS[0], "bfloat16": GROUP_COLORS[1]}


def _title(text: str, sub: str) -> dict:
    return dict(text=f"{text}<br><sup>{sub}</sup>", x=0.01)


def strategy_figure(recs: list, where: str, title: str = "Ratio to cuBLAS, same shape, same run"):
    """Horizontal bars: each record's ratio to cuBLAS (``ratio``), grouped by dtype, one bar
    per strategy (``title`` of the record: the plan's name); a dashed line at 1 (cuBLAS)."""
    fig = go.Figure()
    for dt in dict.fromkeys(r["dtype"] for r in recs):
        rs = [r for r in recs if r["dtype"] == dt and r.get("ratio")]
        fig.add_trace(go.Bar(
            y=[f"{r['title']} @ {'x'.join(map(str, r['shape']))}" for r in rs], x=[r["ratio"] for r in rs],
            orientation="h", name=dt, marker_color=DTYPE_COLORS.get(dt),
            text=[style.ratio_text(r['ratio']) for r in rs], textposition="outside", cliponaxis=False,
            customdata=[[r["value"], r["reference_value"], r.get("note") or ""] for r in rs],
            hovertemplate="%{y}<br>%{customdata[0]} TFLOP/s, cuBLAS %{customdata[1]}<br>%{customdata[2]}<extra></extra>"))
    fig.add_vline(x=1.0, line_dash="dash", line_color="gray")
    n = len({r["title"] + str(r["shape"]) for r in recs})
    fig.update_layout(title=_title(title, where), barmode="group", height=max(260, 60 + 34 * n * 2),
                      xaxis_title="ratio to cuBLAS (> 1: faster than cuBLAS)", yaxis=dict(autorange="reversed"),
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=30, t=80, b=60))
    return fig


def splitk_model_figure(M: int, N: int, K: int, sms: int, measured: list | None = None, where: str = ""):
    """Model time of split-K (:func:`helpers.models.anyshape.splitk_time`) against the split
    count, the model's choice marked; ``measured`` records (with ``splits`` and ``ms``) as dots."""
    kt = model.cdiv(K, model.CFG["BK"])
    ss = list(range(1, min(kt // 4, 128) + 1)) or [1]
    t = [model.splitk_time(M, N, K, s, sms) * 1e3 for s in ss]
    best = model.choose_splits(M, N, K, sms)[0]
    fig = go.Figure(go.Scatter(x=ss, y=t, mode="lines", name="model", line_color=GROUP_COLORS[0],
                               hovertemplate="s = %{x}: %{y:.3f} ms (model)<extra></extra>"))
    fig.add_trace(go.Scatter(x=[best], y=[model.splitk_time(M, N, K, best, sms) * 1e3], mode="markers",
                             marker=dict(symbol="star", size=14, color=GROUP_COLORS[3]), name=f"model's choice: {best}"))
    if measured:
        pts = [r for r in measured if r.get("ms")]
        fig.add_trace(go.Scatter(x=[r["splits"] for r in pts], y=[r["ms"] for r in pts], mode="markers",
                                 marker=dict(size=9, color=GROUP_COLORS[2]), name="measured",
                                 text=[r["title"] for r in pts], hovertemplate="%{text}: %{y:.3f} ms<extra></extra>"))
    fig.update_layout(title=_title(f"Split-K on {M} x {N} x {K}, {sms} SMs: time against the number of splits",
                                   f"time model splitk_time, no GPU involved (line); {where or 'no measurement'} (dots)"),
                      xaxis=dict(title="splits s", type="log"), yaxis=dict(title="time (ms)", type="log"),
                      height=380, legend=dict(orientation="h", y=-0.25), margin=dict(l=50, r=20, t=80, b=60))
    return fig


def wave_figure(data: dict, where: str):
    """Left: efficiency against the number of tiles (measured rate over the best whole-wave
    rate) for the data-parallel kernel and the stream-K hybrid, beside the naive wave model
    and the model corrected with the control's clock. Right: the control, one wave of b
    tiles: time of the wave and SM clock against b."""
    sw, ctl, sms = data["sweep"], data["control"], data["sms"]
    full = [r["dp_TFLOPs"] for r in sw if r["model_last_wave_full"] == 1.0] or [max(r["dp_TFLOPs"] for r in sw)]
    peak = max(full)
    x = [r["tiles"] for r in sw]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, column_widths=[0.6, 0.4],
                        subplot_titles=("efficiency vs tiles", "control: one wave of b tiles"),
                        specs=[[{}, {"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[r["model_efficiency"] for r in sw], mode="lines+markers", name="naive model",
                             line=dict(dash="dot", color="gray"), marker=dict(symbol="x")), row=1, col=1)
    if ctl:
        corr = [model.corrected_efficiency(r["tiles"], sms, [c["busy SMs"] for c in ctl], [c["ms"] for c in ctl]) for r in sw]
        fig.add_trace(go.Scatter(x=x, y=corr, mode="lines", name="model with the control's clock",
                                 line=dict(dash="dash", color=GROUP_COLORS[3])), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=[r["dp_TFLOPs"] / peak for r in sw], mode="markers", name="data-parallel",
                             marker=dict(size=9, color=GROUP_COLORS[0])), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=[r["streamk_TFLOPs"] / peak for r in sw], mode="markers", name="stream-K hybrid",
                             marker=dict(size=9, symbol="diamond", color=GROUP_COLORS[2])), row=1, col=1)
    fig.update_xaxes(title_text=f"tiles of 128 x 256 ({sms} SMs: a wave)", row=1, col=1)
    fig.update_yaxes(title_text="rate / best whole-wave rate", rangemode="tozero", row=1, col=1)
    if ctl:
        b = [c["busy SMs"] for c in ctl]
        fig.add_trace(go.Scatter(x=b, y=[c["ms"] for c in ctl], mode="lines+markers", name="time of the wave (ms)",
                                 line_color=GROUP_COLORS[4]), row=1, col=2)
        clk = [c.get("SM clock (MHz, median)") for c in ctl]
        if any(clk):
            fig.add_trace(go.Scatter(x=b, y=clk, mode="lines+markers", name="SM clock (MHz)",
                                     line=dict(color=GROUP_COLORS[5], dash="dot")), row=1, col=2, secondary_y=True)
        fig.update_xaxes(title_text="busy SMs b", row=1, col=2)
        fig.update_yaxes(title_text="ms", rangemode="tozero", row=1, col=2)
        fig.update_yaxes(title_text="MHz", secondary_y=True, row=1, col=2, tickmode="linear", tick0=0, dtick=500,
                         showgrid=False)        # round clock ticks, not ones synced to the ms axis
    fig.update_layout(title=_title(f"Wave quantization, M x {data['N']} x {data['K']} {data['dtype']}", where),
                      height=440, legend=dict(orientation="h", y=-0.3), margin=dict(l=50, r=50, t=90, b=90))
    return fig


# What a zoo cell's short plan name means (the pages give this key beside the figures).
SHORT_KEY = ("dir: A and B read in place; rep: repacked; pad: padded; regs: through registers; "
             "hop: chapter 10's kernel; 64: the 128 x 64 tile; +sK8: split-K into 8; +stK: stream-K")


def _short(plan: str) -> str:
    """A plan's name short enough for a zoo cell on a phone (:data:`SHORT_KEY`):
    "repack, 128 x 64 tiles" -> "rep64", "direct + split-K 8 (fused)" -> "dir+sK8"."""
    return (plan.replace(", 128 x 64 tiles", "64").replace("direct", "dir").replace("repack", "rep").replace(" + split-K ", "+sK").replace(" (twopass)", "").replace(" (fused)", "")
            .replace(" (atomic)", "a").replace(" + stream-K (hybrid2)", "+stK").replace("padding", "pad").replace("hopper", "hop"))


ZOO_TITLE = "The shape zoo: the dispatcher's plan<br>and its ratio to cuBLAS"


def zoo_figure(rows: list, where: str):
    """The shape zoo as a heatmap: rows = output shape M x N, columns = K (four columns, so
    the cells stay readable on a phone); colour = the dispatcher's ratio to cuBLAS (log
    scale, 1 = white); text = its plan and ratio; a star where it beats cuBLAS, a ring where
    another strategy was more than 3 % faster; hover: the best other strategy."""
    outs = list(dict.fromkeys(f"{r['M']}x{r['N']}" for r in rows))
    ks = sorted({r["K"] for r in rows})
    z = np.full((len(outs), len(ks)), np.nan)
    text = [["" for _ in ks] for _ in outs]
    hover = [["" for _ in ks] for _ in outs]
    for r in rows:
        i, j = outs.index(f"{r['M']}x{r['N']}"), ks.index(r["K"])
        z[i, j] = math.log2(r["ratio"]) if r.get("ratio") else np.nan
        mark = " ★" if (r.get("ratio") or 0) > 1 else ""
        ring = "" if r.get("within 3% of best") else " ○"
        text[i][j] = f"{_short(r['plan'])}<br>{style.ratio_text(r['ratio'])}{mark}{ring}" if r.get("ratio") else "-"
        hover[i][j] = (f"{r['M']} x {r['N']} x {r['K']}: {r['plan']}, {r.get('TFLOP/s')} TFLOP/s, "
                       f"{r['ratio']} of cuBLAS<br>best other: {r['best other']} ({r['best other ratio']})"
                       + (f"<br>chapter 10 kernel: {r['hopper ratio']}" if r.get("hopper ratio") else ""))
    lim = max(1.0, float(np.nanmax(np.abs(z)))) if np.isfinite(z).any() else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"K={k}" for k in ks], y=outs, zmin=-lim, zmax=lim, colorscale="RdBu", xgap=2, ygap=2,
        text=text, texttemplate="%{text}", textfont=dict(size=10), customdata=hover,
        hovertemplate="%{customdata}<extra></extra>",
        colorbar=dict(title="ratio", tickvals=[-3, -2, -1, 0, 1, 2, 3], ticktext=["1/8", "1/4", "1/2", "1", "2", "4", "8"])))
    fig.update_xaxes(type="category", side="top")
    fig.update_yaxes(title_text="M x N", type="category", autorange="reversed")
    fig.update_layout(title=_title(ZOO_TITLE, f"★ faster than cuBLAS, ○ another strategy >3 % faster<br>{where}"),
                      height=120 + 52 * len(outs), margin=dict(l=60, r=20, t=150, b=20))
    return fig


def _grid(rows: list, ykey, xkey, xlabel):
    ys = list(dict.fromkeys(ykey(r) for r in rows))
    xs = sorted({r[xkey] for r in rows})
    z = np.full((len(ys), len(xs)), np.nan)
    text = [["" for _ in xs] for _ in ys]
    hover = [["" for _ in xs] for _ in ys]
    for r in rows:
        i, j = ys.index(ykey(r)), xs.index(r[xkey])
        z[i, j] = math.log2(r["ratio"]) if r.get("ratio") else np.nan
        text[i][j] = f"{_short(r['plan'])}<br>{style.ratio_text(r['ratio'])}" + ("" if r["auto within 5% of best"] else " ○")
        hover[i][j] = (f"{r['M']} x {r['N']} x {r['K']}: auto = {r['plan']}<br>gemm(): {r['ratio']} of cuBLAS, "
                       f"kernel only: {r['kernel ratio']}, host share {r['host share']:.0%}<br>"
                       f"fastest: {r['best plan']} ({r['best ratio']})")
    return z, [f"{xlabel}={x}" for x in xs], ys, text, hover


def end_to_end_figure(rows: list, where: str):
    """The end-to-end zoo as two heatmaps sharing one colour scale (log2 of the ratio to
    cuBLAS of ``gemm(A, B, out=C)``, 1 = white): the shape zoo (rows M x N, columns K) and
    the LLM GEMMs (rows: the GEMM, columns: tokens = M). Text: auto's plan and ratio; a ring
    where another strategy was more than 5 % faster end to end; hover: the kernel-only ratio,
    the host share and the fastest strategy. Rows: chapter 9's end-to-end records
    (``group`` "zoo" or "LLM", "ratio", "kernel ratio", "host share", "plan", "best plan")."""
    zoo = [r for r in rows if r["group"] == "zoo"]
    llm = [r for r in rows if r["group"] == "LLM"]
    parts = [p for p in ((zoo, lambda r: f"{r['M']}x{r['N']}", "K", "K"),
                         (llm, lambda r: f"{r['label'].split(' (')[0]}<br>N={r['N']}, K={r['K']}", "M", "tokens"))
             if p[0]]
    grids = [_grid(*p) for p in parts]
    lim = max([1.0] + [float(np.nanmax(np.abs(g[0]))) for g in grids if np.isfinite(g[0]).any()])
    heights = [len(g[2]) for g in grids]
    fig = make_subplots(rows=len(grids), cols=1, row_heights=heights, vertical_spacing=0.08)
    for i, (z, xs, ys, text, hover) in enumerate(grids, start=1):
        fig.add_trace(go.Heatmap(
            z=z, x=xs, y=ys, zmin=-lim, zmax=lim, colorscale="RdBu", xgap=2, ygap=2, text=text,
            texttemplate="%{text}", textfont=dict(size=10), customdata=hover, hovertemplate="%{customdata}<extra></extra>",
            showscale=i == 1, colorbar=dict(title="ratio", tickvals=[-3, -2, -1, 0, 1, 2, 3],
                                            ticktext=["1/8", "1/4", "1/2", "1", "2", "4", "8"])), row=i, col=1)
        fig.update_xaxes(type="category", side="top", row=i, col=1)
        fig.update_yaxes(type="category", autorange="reversed", row=i, col=1)
    g = math.exp(sum(math.log(r["ratio"]) for r in rows if r.get("ratio")) / max(1, sum(1 for r in rows if r.get("ratio"))))
    fig.update_layout(title=_title("gemm(A, B, out=C) end to end: ratio to cuBLAS<br>with auto's plan",
                                   f"geomean {g:.2f} over {len(rows)} shapes; ○ another strategy >5 % faster; "
                                   f"a measurement, {where}"),
                      height=160 + 52 * sum(heights), margin=dict(l=60, r=20, t=160, b=20))
    return fig


def memory_bound_figure(rows: list, where: str):
    """Horizontal bars: each (shape, plan) row's fraction of the copy bound (``of the copy
    bound``: the compulsory bytes at the same run's copy rate over the measured time); a dashed
    line at 1 (the copy's rate). Hover: TFLOP/s, ratio to cuBLAS, FLOP per byte."""
    fig = go.Figure()
    names = {"auto": "auto's plan", "dp": "the wide 128 x 256 tile (control)",
             "regs narrow": "registers path, narrow tile (control)"}
    for i, (st, name) in enumerate(names.items()):
        rs = [r for r in rows if r["strategy"] == st]
        if not rs:
            continue
        fig.add_trace(go.Bar(
            y=[f"{r['M']} x {r['N']} x {r['K']}" for r in rs], x=[r["of the copy bound"] for r in rs], orientation="h",
            name=name, marker_color=GROUP_COLORS[i],
            text=[style.ratio_text(r["of the copy bound"]) for r in rs], textposition="outside", cliponaxis=False,
            customdata=[[r["plan"], r["TFLOP/s"], r["of cuBLAS"], r["FLOP/B"]] for r in rs],
            hovertemplate="%{y}: %{customdata[0]}<br>%{x:.2f} of the copy bound, %{customdata[1]} TFLOP/s, "
                          "%{customdata[2]} of cuBLAS<br>%{customdata[3]} FLOP/B<extra></extra>"))
    fig.add_vline(x=1.0, line_dash="dash", line_color="gray")
    n = len({(r["M"], r["N"], r["K"]) for r in rows})
    fig.update_layout(title=_title("Memory-bound shapes: fraction of the copy bound", where), barmode="group",
                      height=max(260, 90 + 56 * n), xaxis_title="compulsory bytes at the copy's rate / time (1: the copy's rate)",
                      yaxis=dict(autorange="reversed"), legend=dict(orientation="h", y=-0.2),
                      margin=dict(l=10, r=30, t=80, b=60))
    return fig

