"""The staircase of the landing page: every heaven's headline kernel at 4096^3, TFLOP/s on a
log scale, each labelled with its ratio to cuBLAS of its own dtype, beside the measured roofs.

Drawn from the running-table records (:func:`helpers.chapters.common.running`: live, or
recorded with their provenance) and the ceilings (:func:`helpers.runtime.roofline.ceilings`).

* :func:`staircase_svg` / :func:`staircase_html`: the landing page's figure, a static SVG
  written here (no plotly.js: the page stays light, #14), in the book's style (its palette,
  font, grid and axis colours); text and axes take the page's text colour
  (``currentColor``), so it follows the light and the dark theme. The HTML holds a wide
  and a narrow drawing, one shown by the screen's width, a caption that wraps, and a
  tooltip (``<title>``) on every point.
* :func:`staircase_figure`: the same as an interactive Plotly figure (for a live notebook).
"""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from helpers.runtime import results
from helpers.runtime.bench import kernel_label, where

from . import style
from .style import AXIS_LINE, FONT, GRID, GROUP_COLORS

DTYPE_COLORS = {"float32": GROUP_COLORS[0], "float16": GROUP_COLORS[1], "bfloat16": GROUP_COLORS[2]}
SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
TITLE = "The staircase: each heaven at 4096³"
SUBTITLE = "label: ratio to cuBLAS of the same dtype, same run"
NARROW_PX = 640         # screens up to this wide get the narrow drawing


def _provenance(recs: list) -> str:
    """Where the numbers came from, for the caption: live (this run) or recorded (on which GPU)."""
    if any(r.get("source") == "live" for r in recs):
        return where(recs)
    gpu_name = (results.load().get("provenance") or {}).get("gpu", "the recorded GPU")
    return f"recorded on {gpu_name}; provenance under the table"


def roofs(ceilings: dict) -> list:
    """(label, TFLOP/s, dash, dtype) of each horizontal roof: the FP32 spec peak and the
    cuBLAS of each dtype timed alone (the ceilings' run; missing values are left out)."""
    spec = ceilings.get("spec") or {}
    out = [("FP32 peak (spec)", spec.get("fp32_peak_TFLOPs"), "dash", "float32")]
    out += [(f"cuBLAS {SHORT.get(dt, dt)} timed alone", v, "dot", dt)
            for dt, v in (ceilings.get("cublas_TFLOPs") or {}).items()]
    return [r for r in out if r[1]]


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
            text=[f"{style.ratio_text(r['ratio'])}×" for r in rs], textposition="top center",
            customdata=[[kernel_label(r), r["reference_value"]] for r in rs],
            hovertemplate="heaven %{x}: %{customdata[0]}<br>%{y} TFLOP/s, cuBLAS %{customdata[1]}<extra></extra>"))
    xs = list(dict.fromkeys(str(r["chapter"]) for r in ok))
    for name, v, dash, dt in roofs(ceilings):        # traces, not shapes: annotations misplace on log axes
        if xs:
            fig.add_trace(go.Scatter(x=[xs[0], xs[-1]], y=[v, v], mode="lines", name=f"{name}: {v:.0f}",
                                     line=dict(dash=dash, width=1.5, color=DTYPE_COLORS.get(dt, "gray")),
                                     opacity=0.7, hovertemplate=f"{name}: {v:.1f} TFLOP/s<extra></extra>"))
    fig.update_layout(
        title=dict(text=f"{TITLE}<br><sup>{SUBTITLE}<br>{_provenance(recs)}</sup>", x=0.01),
        xaxis=dict(title="heaven", type="category"), yaxis=dict(title="TFLOP/s (log)", type="log", dtick=1),
        height=520, legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=110, b=60))
    return fig


# ------------------------------------------------------------------ the static SVG
_DASH = {"dash": "6 4", "dot": "2 3"}
# A ratio label may sit on a roof line: a halo of the page's background keeps it legible
# (pydata-sphinx-theme's and JupyterLab's background variables, else white).
_HALO = ("paint-order:stroke;stroke:var(--pst-color-background,var(--jp-layout-color0,#fff));"
         "stroke-width:3px;stroke-linejoin:round")


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def staircase_svg(recs: list, ceilings: dict, narrow: bool = False) -> str:
    """The staircase as one ``<svg>`` element (a string): a step line and a marker per
    heaven for each dtype at its TFLOP/s on a log axis, its ratio to cuBLAS above it, the
    roofs of :func:`roofs` as dashed or dotted lines, a key under the plot. ``narrow``: a
    drawing for a phone (380 units wide, to be shown about 1:1, a key in two columns)
    instead of a 760-unit one. Every number comes from ``recs`` and ``ceilings``."""
    ok = [r for r in recs if r.get("value")]
    heavens = list(dict.fromkeys(r["chapter"] for r in ok))
    rf = roofs(ceilings)
    W = 380 if narrow else 760
    fs = 12 if narrow else 13                      # tick and key text; labels are one smaller
    left, right, top = 46, 12, 22
    plot_h = 250 if narrow else 300
    cols = 2 if narrow else 3
    key = [(f"{SHORT.get(dt, dt)} kernels", None, DTYPE_COLORS.get(dt, "gray"))
           for dt in dict.fromkeys(r["dtype"] for r in ok)]
    key += [(f"{name}: {v:.0f}", dash, DTYPE_COLORS.get(dt, "gray")) for name, v, dash, dt in rf]
    key_rows = math.ceil(len(key) / cols)
    axis_h = 44                                    # tick labels and the axis title under the plot
    H = top + plot_h + axis_h + key_rows * (fs + 8) + 6
    x0, x1, y0, y1 = left, W - right, top, top + plot_h
    vals = [r["value"] for r in ok] + [v for _, v, _, _ in rf]
    lo = 10 ** math.floor(math.log10(min(vals) * 0.9)) if vals else 1
    hi = 10 ** math.ceil(math.log10(max(vals) * 1.15)) if vals else 10

    def X(h):
        i = heavens.index(h)
        return x0 + (i + 0.5) * (x1 - x0) / max(len(heavens), 1)

    def Y(v):
        return y1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (y1 - y0)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H:.0f}" width="{W}" height="{H:.0f}" '
           f'class="{"narrow" if narrow else "wide"}" role="img" font-family="{_e(FONT)}" font-size="{fs}" '
           f'fill="currentColor" aria-label="{_e(TITLE)}: TFLOP/s of each heaven on a log scale">']
    # grid and y ticks: decades only (no minor labels that read like values)
    d = lo
    while d <= hi * 1.0001:
        y = Y(d)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + fs * 0.35:.1f}" text-anchor="end">{_num(d)}</text>')
        d *= 10
    out.append(f'<path d="M{x0} {y0}V{y1}H{x1}" fill="none" stroke="{AXIS_LINE}"/>')
    for h in heavens:
        out.append(f'<line x1="{X(h):.1f}" x2="{X(h):.1f}" y1="{y1}" y2="{y1 + 5}" stroke="{AXIS_LINE}"/>'
                   f'<text x="{X(h):.1f}" y="{y1 + 7 + fs}" text-anchor="middle">{h}</text>')
    out.append(f'<text x="{(x0 + x1) / 2:.0f}" y="{y1 + 14 + 2 * fs}" text-anchor="middle">heaven</text>')
    out.append(f'<text transform="translate({fs},{(y0 + y1) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">TFLOP/s (log scale)</text>')
    # the roofs, across the plot
    for name, v, dash, dt in rf:
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="{DTYPE_COLORS.get(dt, "gray")}" '
                   f'stroke-width="1.5" stroke-dasharray="{_DASH[dash]}" opacity="0.75">'
                   f'<title>{_e(name)}: {v:.1f} TFLOP/s</title></line>')
    # one step line per dtype, its markers, and the ratio above each
    for dt in dict.fromkeys(r["dtype"] for r in ok):
        rs = [r for r in ok if r["dtype"] == dt]
        col = DTYPE_COLORS.get(dt, "gray")
        path = f"M{X(rs[0]['chapter']):.1f} {Y(rs[0]['value']):.1f}"
        for r in rs[1:]:
            path += f"H{X(r['chapter']):.1f}V{Y(r['value']):.1f}"
        out.append(f'<path d="{path}" fill="none" stroke="{col}" stroke-width="2"/>')
        for r in rs:
            x, y = X(r["chapter"]), Y(r["value"])
            tip = (f"heaven {r['chapter']}: {kernel_label(r)} ({dt}): {r['value']:.4g} TFLOP/s, "
                   f"cuBLAS {r['reference_value']:.4g} in the same run ({style.ratio_text(r['ratio'])}×)")
            out.append(f'<g><title>{_e(tip)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{4.5 if narrow else 5.5}" '
                       f'fill="{col}" stroke="{col}"/>'
                       f'<text x="{x:.1f}" y="{y - 9:.1f}" text-anchor="middle" font-size="{fs - 1}" style="{_HALO}">'
                       f'{style.ratio_text(r["ratio"])}×</text></g>')
    # the key, under the axis title
    cw = (x1 - 8) / cols
    for i, (label, dash, col) in enumerate(key):
        kx, ky = 8 + (i % cols) * cw, y1 + axis_h + (i // cols) * (fs + 8) + fs
        if dash is None:
            mark = (f'<line x1="{kx:.0f}" x2="{kx + 22:.0f}" y1="{ky - fs * 0.35:.1f}" y2="{ky - fs * 0.35:.1f}" '
                    f'stroke="{col}" stroke-width="2"/><circle cx="{kx + 11:.0f}" cy="{ky - fs * 0.35:.1f}" r="4" fill="{col}"/>')
        else:
            mark = (f'<line x1="{kx:.0f}" x2="{kx + 22:.0f}" y1="{ky - fs * 0.35:.1f}" y2="{ky - fs * 0.35:.1f}" '
                    f'stroke="{col}" stroke-width="1.5" stroke-dasharray="{_DASH[dash]}"/>')
        out.append(f'{mark}<text x="{kx + 28:.0f}" y="{ky:.1f}" font-size="{fs - 1}">{_e(label)}</text>')
    out.append("</svg>")
    return "".join(out)


_CSS = (".book-staircase{{margin:0 0 1em 0}}"
        ".book-staircase svg{{display:block;max-width:100%;height:auto}}"
        ".book-staircase svg.narrow{{display:none}}"
        "@media (max-width:{px}px){{.book-staircase svg.wide{{display:none}}.book-staircase svg.narrow{{display:block}}}}"
        ".book-staircase figcaption{{margin:0 0 .4em 0;line-height:1.35;text-align:left}}"
        ".book-staircase figcaption small{{opacity:.85}}")


def reference_note(recs: list, ceilings: dict) -> str:
    """One sentence on the two cuBLAS numbers a reader sees: the roof (cuBLAS timed alone)
    and the cuBLAS each heaven was timed against, alternately, in its own run, as the
    range of the latter per 16-bit dtype. Empty when the records hold no 16-bit run."""
    alone = ceilings.get("cublas_TFLOPs") or {}
    parts = []
    for dt in ("float16", "bfloat16"):
        rs = [r for r in recs if r.get("dtype") == dt and r.get("reference_value")]
        if rs and alone.get(dt):
            lo, hi = min(r["reference_value"] for r in rs), max(r["reference_value"] for r in rs)
            span = f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f} to {hi:.0f}"
            hv = sorted({r["chapter"] for r in rs})
            who = f"heaven {hv[0]}" if len(hv) == 1 else f"heavens {hv[0]} to {hv[-1]}"
            parts.append(f"cuBLAS {SHORT[dt]} ran at {alone[dt]:.0f} TFLOP/s alone, {span} beside {who}")
    if not parts:
        return ""
    return "; ".join(parts) + ": each label divides by the cuBLAS of its own rounds, not by the roof"


def staircase_html(recs: list, ceilings: dict) -> str:
    """The landing page's figure as HTML: a ``<figure>`` with the title, what the labels
    mean and where the numbers came from as its caption (wrapped by the page), and the two
    drawings of :func:`staircase_svg` (the narrow one on screens up to :data:`NARROW_PX`
    wide). Renders the same in JupyterLab and in the book; no script."""
    return (f'<figure class="book-svg-figure book-staircase"><style>{_CSS.format(px=NARROW_PX)}</style>'
            f'<figcaption><strong>{_e(TITLE)}</strong><br><small>{_e(SUBTITLE)}; '
            f'{_e(_provenance(recs))}'
            f'{"<br>" + _e(reference_note(recs, ceilings)) + "." if reference_note(recs, ceilings) else ""}'
            f'</small></figcaption>'
            f'{staircase_svg(recs, ceilings)}{staircase_svg(recs, ceilings, narrow=True)}</figure>')
