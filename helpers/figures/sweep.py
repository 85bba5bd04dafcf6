"""Parameter sweeps as bars with a Plotly-native slider (works in the static book).

:func:`figure` draws one bar per configuration and a slider that highlights
one at a time; :func:`labelled_figure` labels each bar by what it changes from
the most common configuration (long sweeps over many parameters stay readable).
The measurement is :func:`helpers.runtime.sweep.run`; the live ipywidgets
twin is :func:`helpers.chapters.common.live_slider`.
"""
from __future__ import annotations

from collections import Counter

import plotly.graph_objects as go

from helpers.runtime import catalog
from helpers.runtime.bench import where

from . import style


def _label(params: dict, names) -> str:
    return " ".join(f"{n}={params[n]}" for n in names)


def figure(recs: list, names=None, title: str = ""):
    """Bars of a sweep (one per configuration), with a Plotly slider that
    highlights one bar and shows its numbers. Records with no value are shown
    as empty bars labelled 'not recorded'; records of configurations this GPU cannot
    run (``unable``, :mod:`helpers.runtime.bench`) are hatched and say where they were recorded."""

    if not recs:
        raise ValueError("recs=[]: nothing to draw")
    names = names or [k for k in recs[0]["params"] if len({str(r["params"].get(k)) for r in recs}) > 1]
    labels = [_label(r["params"], names) for r in recs]
    vals = [r["value"] if r["value"] is not None else 0 for r in recs]
    unit = recs[0]["metric"]
    ref = recs[0].get("reference", "")

    def info(r):
        if r["value"] is None:
            return "not recorded" + (f" ({r['unable']})" if r.get("unable") else "")
        s = f"{r['value']:.2f} {unit} = {style.ratio_text(r['ratio'])} x {ref}"
        if r.get("unable"):          # this GPU cannot run it: a recorded number, said on the bar
            s = f"recorded on {r.get('gpu') or 'the recorded GPU'} ({r['unable']}): {s}"
        res = r.get("resources")
        if res:
            s += (f"; {res['registers']} regs, {res['smem_static'] + res.get('smem_dynamic', 0)} B smem, "
                  f"{res['local_bytes']} B local, occupancy {res['occupancy']:.0%} ({res['limited_by']})")
        return s

    # The highlighted bar is the best by the book's currency, the ratio to the reference timed
    # beside it; its TFLOP/s can rank otherwise when the reference's own clock moved between bars.
    best = max(range(len(recs)), key=lambda i: (recs[i].get("ratio") is not None, recs[i].get("ratio") or 0, vals[i]))
    def colors(i):
        return [style.SELECTED if j == i else (style.BAR if recs[j]["value"] is not None else style.NOT_RECORDED)
                for j in range(len(recs))]
    wh = where(recs)

    def head(i):
        return f"{title}: {labels[i]} -> {info(recs[i])}<br><sup>{wh}</sup>"
    unable = ["/" if r.get("unable") else "" for r in recs]
    # a pattern only where some bar needs one, drawn over each bar's own colour ("replace":
    # in Plotly's default "overlay" mode a list of bar colours is an invalid colour)
    pattern = dict(shape=unable, fillmode="replace") if any(unable) else None
    fig = go.Figure(go.Bar(x=labels, y=vals, marker=dict(color=colors(best), pattern=pattern), showlegend=False,
                           hovertext=[info(r) for r in recs], hoverinfo="x+text"))
    # the key: what the colours mean, and a star on the default configuration
    key = [(style.SELECTED_NAME, style.SELECTED), ("measured", style.BAR)]
    if any(r["value"] is None for r in recs):
        key.append(("not recorded", style.NOT_RECORDED))
    for name, color in key:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                                 marker=dict(symbol="square", size=11, color=color)))
    d = default_index(recs)
    if d is not None:
        fig.add_trace(go.Scatter(x=[labels[d]], y=[vals[d]], mode="markers", name=style.DEFAULT_NAME,
                                 marker=style.DEFAULT_MARKER, hoverinfo="text",
                                 hovertext=[f"default configuration: {info(recs[d])}"]))
    steps = [dict(method="update", label=labels[i],
                  args=[{"marker.color": [colors(i)]}, {"title.text": head(i)}, [0]]) for i in range(len(recs))]
    fig.update_layout(title=dict(text=head(best), x=0.01, font=dict(size=13)),
                      yaxis_title=unit, height=420, margin=dict(l=60, r=20, t=80, b=40),
                      xaxis=dict(tickangle=-30, tickfont=dict(size=10)),
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"),
                      sliders=[dict(active=best, steps=steps, currentvalue=dict(prefix="config: "),
                                    pad=dict(t=60))])
    return fig


def default_index(recs: list):
    """Index of the record measured at its kernel's default parameters on the GPU the
    book decides for (:meth:`helpers.runtime.catalog.Kernel.params`), or None."""
    for i, r in enumerate(recs):
        try:
            dflt = catalog.get(r["kernel"]).params()
        except (KeyError, ValueError):
            continue
        p = r.get("params") or {}
        if p and all(p[k] == dflt[k] for k in p if k in dflt):
            return i
    return None


def sweep_base(recs: list) -> dict:
    """The most common value of each parameter over a sweep's records (the
    configuration most points vary from)."""
    names = list(recs[0]["params"])
    return {n: Counter(r["params"][n] for r in recs).most_common(1)[0][0] for n in names}


def labelled_figure(recs: list, names=None, title: str = "", short: bool = True, base: dict | None = None):
    """:func:`figure` with room under the bars for long configuration labels.

    ``names``: the parameters to label with (default: those that vary over
    ``recs``). ``short=True``: each bar is labelled by what it changes from
    ``base`` (a kernel's shipped defaults; its own bar reads "default"), or, without
    ``base``, from :func:`sweep_base` ("base" for that bar), so that sweeps over many
    parameters stay readable; ``short=False``: every bar names all of
    ``names``. Bars, slider and title otherwise as :func:`figure`.
    Returns (figure, base). Raises ValueError for ``recs=[]`` or a ``base`` that lacks
    one of the records' parameters."""
    if not recs:
        raise ValueError("recs=[]: nothing to draw")
    own = "base" if base is None else "default"
    if base is None:
        base = sweep_base(recs)
    elif set(recs[0]["params"]) - set(base):
        raise ValueError(f"base={base!r}: must name every parameter of the records "
                         f"({', '.join(sorted(recs[0]['params']))})")
    base = {n: base[n] for n in recs[0]["params"]}
    names = list(names) if names else [n for n in base if len({str(r["params"][n]) for r in recs}) > 1]
    fig = figure(recs, names, title=title)
    labels = [" ".join(f"{n}={r['params'][n]}" for n in names) for r in recs]
    if short:
        full = labels
        labels = [" ".join(f"{n}={r['params'][n]}" for n in names if r["params"][n] != base[n]) or own
                  for r in recs]
        fig.data[0].x = labels
        for tr in fig.data[1:]:                 # the default's star stands on its bar
            if tr.name == style.DEFAULT_NAME:
                tr.x = [labels[full.index(tr.x[0])]]
        for st, old, new in zip(fig.layout.sliders[0].steps, full, labels):
            st.label = new
            st.args[1]["title.text"] = st.args[1]["title.text"].replace(old, new, 1)
        best = fig.layout.sliders[0].active
        fig.layout.title.text = fig.layout.title.text.replace(full[best], labels[best], 1)
    room = int(3.4 * max(len(s) for s in labels))      # tick labels at -30 degrees, ~6.5 px per character
    fig.update_layout(height=420 + room)
    fig.layout.sliders[0].pad.t = 30 + room
    return fig, base
