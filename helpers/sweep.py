"""Parameter sweeps: a live ipywidgets slider, and its static twin for the book.

* :func:`run` measures a kernel over the catalog's recorded sweep (live), or
  reads those records (recorded mode).
* :func:`figure` draws the sweep as bars with a Plotly-native slider that
  highlights one configuration at a time; it works in the static HTML book.
* :func:`live_slider` gives ipywidgets controls that validate, recompile
  (cached) and re-measure one configuration on the reader's GPU. An invalid
  combination shows the violated rule and launches nothing.
"""
from __future__ import annotations

from . import bench, catalog, launch


def run(key: str, shape, points=None) -> list:
    """Measure (or read) kernel ``key`` at every configuration of its sweep.

    ``points``: list of partial parameter dicts; default the catalog's sweep.
    Live records also carry ``resources`` (registers, shared memory, spills,
    occupancy of the compiled kernel)."""
    spec = catalog.get(key)
    pts = points if points is not None else spec.configs()
    items = [(key, {**spec.defaults, **pt}) for pt in pts]
    measure = bench.gemm if spec.op == "gemm" else bench.transpose
    recs = []
    for it in items:       # one config at a time: a failure names its config
        r = measure([it], shape)[0]
        if r.get("source") == "live":
            r["resources"] = launch.prepare(key, shape, **it[1]).resources()
        recs.append(r)
    return recs


def _label(params: dict, names) -> str:
    return " ".join(f"{n}={params[n]}" for n in names)


def figure(recs: list, names=None, title: str = ""):
    """Bars of a sweep (one per configuration), with a Plotly slider that
    highlights one bar and shows its numbers. Records with no value are shown
    as empty bars labelled 'not recorded'."""
    import plotly.graph_objects as go

    if not recs:
        raise ValueError("recs=[]: nothing to draw")
    names = names or [k for k in recs[0]["params"] if len({str(r["params"].get(k)) for r in recs}) > 1]
    labels = [_label(r["params"], names) for r in recs]
    vals = [r["value"] if r["value"] is not None else 0 for r in recs]
    unit = recs[0]["metric"]
    ref = recs[0].get("reference", "")

    def info(r):
        if r["value"] is None:
            return "not recorded"
        s = f"{r['value']:.2f} {unit} = {r['ratio']:.3f} x {ref}"
        res = r.get("resources")
        if res:
            s += (f"; {res['registers']} regs, {res['smem_static'] + res.get('smem_dynamic', 0)} B smem, "
                  f"{res['local_bytes']} B local, occupancy {res['occupancy']:.0%} ({res['limited_by']})")
        return s

    best = max(range(len(recs)), key=lambda i: vals[i])
    colors = lambda i: ["#d62728" if j == i else ("#1f77b4" if recs[j]["value"] is not None else "#cccccc")
                        for j in range(len(recs))]
    where = bench.where(recs)
    head = lambda i: (f"{title}: {labels[i]} -> {info(recs[i])}<br><sup>{where}</sup>")
    fig = go.Figure(go.Bar(x=labels, y=vals, marker_color=colors(best),
                           hovertext=[info(r) for r in recs], hoverinfo="x+text"))
    steps = [dict(method="update", label=labels[i],
                  args=[{"marker.color": [colors(i)]}, {"title.text": head(i)}, [0]]) for i in range(len(recs))]
    fig.update_layout(title=dict(text=head(best), x=0.01, font=dict(size=13)),
                      yaxis_title=unit, height=420, margin=dict(l=60, r=20, t=80, b=40),
                      xaxis=dict(tickangle=-30, tickfont=dict(size=10)),
                      sliders=[dict(active=best, steps=steps, currentvalue=dict(prefix="config: "),
                                    pad=dict(t=60))])
    return fig


def live_slider(key: str, shape, choices: dict | None = None):
    """ipywidgets controls for kernel ``key`` (live only; returns None without a GPU).

    Each change validates the combination in Python first; an invalid one
    shows the rule it breaks. A valid one is compiled (cached) and measured,
    and the result line shows TFLOP/s or GB/s, the ratio to the same-run
    reference, registers, shared memory, spills and theoretical occupancy.
    """
    from . import show
    if not show.live_controls():       # no GPU, or batch execution
        return None
    import ipywidgets as w
    from IPython.display import display

    spec = catalog.get(key)
    choices = choices or spec.slider_choices
    ctl = {n: w.SelectionSlider(options=list(v), value=spec.defaults[n], description=n,
                                continuous_update=False) for n, v in choices.items()}
    out = w.Output()

    def on_change(_=None):
        p = {n: c.value for n, c in ctl.items()}
        out.clear_output()
        with out:
            try:
                L = launch.prepare(key, shape, **p)
            except ValueError as e:
                print(f"refused before launch: {e}")
                return
            measure = bench.gemm if spec.op == "gemm" else bench.transpose
            r = measure([(key, p)], shape)[0]
            res = L.resources()
            print(f"{_label(p, choices)}: {r['value']:.2f} {r['metric']} = {r['ratio']:.3f} x {r['reference']} "
                  f"(same run), rel_err {r['rel_err']:.1e}; {res['registers']} regs, "
                  f"{res['smem_static'] + res['smem_dynamic']} B smem, {res['local_bytes']} B local, "
                  f"occupancy {res['occupancy']:.0%} ({res['limited_by']})")

    for c in ctl.values():
        c.observe(on_change, names="value")
    box = w.VBox([*ctl.values(), out])
    display(box)
    on_change()
    return box
