"""Measurement records as a bar chart or a table, captioned with where they were measured.

Records are :class:`helpers.runtime.results.Record`-shaped dicts from
:func:`helpers.runtime.bench.gemm` / :func:`~helpers.runtime.bench.transpose`.
"""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.runtime.bench import where

from . import show, style


COLUMNS = {"title": "kernel", "params": "parameters", "shape": "shape", "value": "value",
           "metric": "unit", "reference_value": "reference", "ratio": "ratio", "rel_err": "rel. error"}


def show_table(recs: list, caption: str = "") -> None:
    """Display measurement records as a table captioned with where they were measured."""
    rows = [{**r, "params": " ".join(f"{k}={v}" for k, v in r["params"].items())} for r in recs]
    ref = recs[0].get("reference", "") if recs else ""
    w = where(recs)
    cap = (caption + " " if caption else "") + f"Reference: {ref}, same run. {w[0].upper() + w[1:]}."
    show.table(rows, COLUMNS, cap)


def bar(recs: list, title: str):
    """A bar chart of records' ratio to their same-run reference (plotly Figure)."""
    ok = [r for r in recs if r.get("value") is not None]
    ref = ok[0]["reference"] if ok else ""
    fig = go.Figure(go.Bar(x=[r["title"] for r in ok], y=[r["ratio"] for r in ok], marker_color=style.BAR,
                           text=[f"{r['value']:.0f} {r['metric']}" if r["value"] >= 10 else f"{r['value']:.2f} {r['metric']}"
                                 for r in ok], textposition="outside",
                           hovertext=[f"{style.params_text(r['params'])}, {r['ms']} ms" if r.get("ms")
                                      else style.params_text(r["params"]) for r in ok],
                           hoverinfo="x+y+text"))
    fig.update_layout(title=dict(text=f"{title}<br><sup>{where(recs)}</sup>", x=0.01),
                      yaxis=dict(title=f"fraction of {ref} (same run)", rangemode="tozero"),
                      height=380, margin=dict(l=60, r=20, t=70, b=40),
                      # a value that does not fit above its bar at 9 px is left to the hover and
                      # the table beside the chart (Plotly would shrink it to 4-5 px on a phone)
                      uniformtext=dict(minsize=9, mode="hide"))
    return fig
