"""Chapter 11's figures: the FP8 formats beside fp16 and bf16 (a model), what per-tensor and
per-block scales do to a tensor's values (a model), the measured error against K with and
without promotion, and the measured speed of the rungs against cuBLASLt FP8.

Models come from :mod:`helpers.models.fp8`; measurements from the records of
``results/<gpu>-fp8.json`` (or a live run); each title says which.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from helpers.models import fp8 as qm

from .style import GROUP_COLORS

FORMAT_COLORS = {"e4m3": GROUP_COLORS[0], "e5m2": GROUP_COLORS[1], "float16": GROUP_COLORS[2],
                 "bfloat16": GROUP_COLORS[3]}


def formats_figure(lo: float = -30.0, hi: float = 20.0):
    """Relative gap between neighbouring values (spacing / value) against log2 of the value,
    for e4m3, e5m2, fp16 and bf16, each drawn over its own range (smallest subnormal to
    largest finite): how far each format reaches and how coarse it is there."""
    fig = go.Figure()
    for row in qm.format_table():
        name = row["format"]
        a = max(lo, float(np.log2(row["min subnormal"])))
        b = min(hi, float(np.log2(row["max"])))
        x = np.linspace(a, b, 241)
        rel = qm.spacing(name, np.exp2(x)) / np.exp2(x)
        fig.add_trace(go.Scatter(
            x=x, y=rel, mode="lines", name=f"{name} ({row['exponent bits']} exponent, {row['mantissa bits']} mantissa bits, max {row['max']:g})",
            line=dict(color=FORMAT_COLORS[name], width=2, shape="hv"),
            hovertemplate=f"{name}<br>value 2^%{{x:.1f}}<br>gap / value %{{y:.3g}}<extra></extra>"))
    fig.update_xaxes(title_text="log2 |value|", dtick=5)
    fig.update_yaxes(title_text="gap to the next value / value", type="log")
    fig.update_layout(title=dict(text="Range and spacing of e4m3, e5m2, fp16 and bf16"
                                      "<br><sup>a model (ml_dtypes' formats); below each format's smallest "
                                      "normal the gap stays fixed and the relative gap grows</sup>", x=0.01),
                      height=460)
    return fig


def scaling_figure(x, labels=("as it is", "per-tensor scale", "1 x 128 block scales")):
    """Histogram of log2 |value| of matrix ``x`` as it is, divided by its per-tensor scale
    (amax / 448) and by its 1 x 128 block scales, with e4m3's range shaded (normal values
    between the two solid lines, subnormals down to the dotted one): where the values land
    in the format's grid. Zeros are left out."""
    q_t, s = qm.quantize_tensor(x)
    _, S = qm.quantize_blocks(x, 1, 128)
    full = np.repeat(S, 128, axis=1)[:, :x.shape[1]]
    fig = go.Figure()
    edges = np.arange(-24.0, 10.25, 0.25)                   # quarter-binade bins, counted here (a small figure)
    mid = (edges[:-1] + edges[1:]) / 2
    for i, (lab, v) in enumerate(zip(labels, (x, x / s, x / full))):
        a = np.abs(np.asarray(v, np.float64)).ravel()
        counts, _ = np.histogram(np.log2(a[a > 0]), bins=edges)
        fig.add_trace(go.Scatter(x=mid, y=counts, name=lab, mode="lines", line=dict(color=GROUP_COLORS[i + 4],
                                 shape="hvh", width=2), fill="tozeroy", opacity=0.5,
                                 hovertemplate=f"{lab}<br>log2 |value| %{{x:.2f}}<br>%{{y}} values<extra></extra>"))
    fi = {r["format"]: r for r in qm.format_table()}["e4m3"]
    for val, dash, text in ((fi["min subnormal"], "dot", "smallest subnormal"),
                            (fi["min normal"], "solid", "smallest normal"), (fi["max"], "solid", "448")):
        fig.add_vline(x=float(np.log2(val)), line=dict(color="#888", dash=dash, width=1.5),
                      annotation_text=text, annotation_position="top")
    fig.update_layout(height=440,
                      title=dict(text="Where a tensor's values fall in e4m3, unscaled and scaled"
                                      f"<br><sup>a model, no GPU involved: a {x.shape[0]} x {x.shape[1]} matrix, standard normal "
                                      "with a few large columns</sup>", x=0.01))
    fig.update_xaxes(title_text="log2 |value| (after scaling)")
    fig.update_yaxes(title_text="values")
    return fig


ACC_SERIES = (("promote_0", "fp8, no promotion"), ("promote_4", "fp8, promoted every 4 k-tiles"),
              ("promote_2", "fp8, every 2"), ("promote_1", "fp8, every k-tile"),
              ("block", "fp8 block scales (promoted every k-tile)"),
              ("bf16_tensor", "cuBLAS bf16, C stored in bf16 (same inputs)"))
# One dash and one marker per series: promoted every k-tile and block-scaled can give the same
# error, and a later line would hide an earlier one drawn alike.
ACC_DASH = ("solid", "dash", "dashdot", "solid", "dot", "longdash")
ACC_SYMBOL = ("circle", "square", "diamond", "circle-open", "x", "triangle-up")


def accuracy_figure(rows: list, where: str, dist: str = "positive"):
    """Measured relative error against float64 of the dequantized inputs, against K (log-log),
    one line per accumulation scheme (``rows``: the recorder's accuracy rows of one ``dist``)."""
    rows = sorted((r for r in rows if r["dist"] == dist), key=lambda r: r["K"])
    fig = go.Figure()
    for i, (k, lab) in enumerate(ACC_SERIES):
        if not rows or k not in rows[0]:
            continue
        fig.add_trace(go.Scatter(x=[r["K"] for r in rows], y=[r[k] for r in rows], mode="lines+markers", name=lab,
                                 line=dict(color=GROUP_COLORS[i], dash=ACC_DASH[i]),
                                 marker=dict(symbol=ACC_SYMBOL[i], size=11 - i),   # equal values stay visible
                                 hovertemplate=f"{lab}<br>K %{{x}}<br>relative error %{{y:.3g}}<extra></extra>"))
    m = f"{rows[0]['M']} x {rows[0]['N']}" if rows else ""
    fig.update_xaxes(title_text="K", type="log")
    fig.update_yaxes(title_text="||C - C64|| / ||C64||", type="log")
    fig.update_layout(height=480, margin=dict(t=130), title=dict(
        text=f"Error against K: the Tensor Core's accumulator with and without promotion<br><sup>measured, "
             f"{m} x K, {'uniform [0, 1)' if dist == 'positive' else 'standard normal'} inputs, reference float64 of "
             f"the dequantized inputs<br>fp8 builds: C in fp32; cuBLAS bf16: C in bf16, its line mostly that rounding "
             f"(fp32 C: not measured)<br>{where}</sup>", x=0.01))
    return fig


def probe_figure(probe: dict, where: str):
    """The accumulator probe: the fraction of the small term kept (1 = exact, 0 = lost)
    against how many bits it sits below the running sum, in the three placements. The probe
    builds the small term from two pairs of factors, so some distances are probed twice; each
    distance is one point, the mean of its probes, and the hover lists every probe's value."""
    names = {"within": "inside one k32 instruction", "steps": "across k32 steps", "tiles": "across k-tiles"}
    fig = go.Figure()
    twice = 0
    for i, (mode, v) in enumerate(probe.items()):
        by_e: dict = {}
        for e, k in zip(v["e"], v["kept"]):
            by_e.setdefault(e, []).append(k)
        es = sorted(by_e)
        twice = max(twice, sum(len(by_e[e]) > 1 for e in es))
        fig.add_trace(go.Scatter(x=es, y=[sum(by_e[e]) / len(by_e[e]) for e in es], mode="markers+lines",
                                 name=names.get(mode, mode), line=dict(color=GROUP_COLORS[i]), marker=dict(size=8 - 2 * i),
                                 customdata=[", ".join(f"{k:.3g}" for k in by_e[e]) for e in es],
                                 hovertemplate="2^-%{x} of the sum<br>kept %{customdata}<extra></extra>"))
    fig.add_vline(x=23.5, line=dict(color="#888", dash="dot"), annotation_text="fp32 keeps 23 bits",
                  annotation_position="top left")
    fig.update_xaxes(title_text="bits below the running sum (small term = sum x 2^-e)", dtick=2)
    fig.update_yaxes(title_text="small term kept (result / small term)")
    note = (f"<br>{twice} distances are probed twice (the small term built two ways): each point is their mean, "
            "the hover lists both<br>" if twice else "; ")
    fig.update_layout(height=440, margin=dict(t=120), title=dict(
        text=f"How many bits the FP8 Tensor Core keeps in its accumulator<br><sup>measured: big + small - big "
             f"through wgmma e4m3, C in fp32{note}{where}</sup>", x=0.01))
    return fig


def speed_figure(recs: list, where: str):
    """Bars: each rung's ratio to its same-run reference at each shape (records)."""
    fig = go.Figure()
    shapes = sorted({tuple(r["shape"]) for r in recs})
    for i, s in enumerate(shapes):
        rs = [r for r in recs if tuple(r["shape"]) == s]
        fig.add_trace(go.Bar(x=[r["label"] for r in rs], y=[r["ratio"] for r in rs], name=f"{s[0]}^3",
                             marker_color=GROUP_COLORS[i],
                             customdata=[[r["value"], r["reference"], r["reference_value"]] for r in rs],
                             hovertemplate="%{x}<br>ratio %{y:.3g}<br>%{customdata[0]} TFLOP/s<br>"
                                           "%{customdata[1]}: %{customdata[2]} TFLOP/s<extra></extra>"))
    fig.add_hline(y=1.0, line=dict(color="#888", dash="dot"))
    fig.update_yaxes(title_text="ratio to the same-run reference")
    fig.update_layout(barmode="group", height=440, title=dict(
        text=f"FP8 GEMM against cuBLASLt FP8, same run, alternating rounds<br><sup>{where}</sup>", x=0.01))
    return fig
