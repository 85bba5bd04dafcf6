"""Chapter 8's autotuner figures, drawn from tuning runs (no GPU).

A *run* is one entry of ``results/<gpu>-tuning.json``'s "runs" (or what
:func:`helpers.runtime.tune.tune` returns): {"kernel", "shape", "space", "refused",
"ranked", "timed": [records with "params", "value", "ratio", "score", "rank"], "best",
"model_spearman", optional "baseline" (the shipped default timed in the same run)}.

* :func:`distribution_figure`: every timed configuration sorted by its ratio to cuBLAS,
  a line at 90 % of each kernel's best, the fastest (named from the run: :func:`star_label`),
  the confirmed best and the shipped default marked, with a key that fits a phone;
* :func:`rank_figure`: the model's rank of each timed configuration against its measured
  rank, Spearman's rho in the title;
* :func:`panel_figure` / :func:`panel_rows`: the winner's Nsight Compute panel beside the
  default's (a "not recorded yet" label when the winner's counters are missing).

Every title carries ``where`` (recorded on which GPU and when, or measured live).
"""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.models import tuning

from .profiling import panel_row
from . import style
from .style import GROUP_COLORS, wrap

NEAR = 0.9          # "within 90 % of the best"


def fmt_params(p: dict, ref: dict | None = None, same: str = "(the shipped default)") -> str:
    """Parameters as 'K=V ...'; with ``ref``, only those that differ from it, and ``same`` when
    none does (name ``ref`` there: the shipped default, or the default a run timed)."""
    items = [(k, v) for k, v in p.items() if ref is None or ref.get(k) != v]
    return " ".join(f"{k}={v}" for k, v in items) or same


def speed(r: dict) -> float:
    """What "faster" means here: the ratio to cuBLAS timed beside the configuration in the same
    run (robust to the clock drifting over a long run), else the value."""
    return r["ratio"] if r.get("ratio") is not None else r["value"]


def measured(run: dict) -> list:
    """The run's timed records plus its same-run ``baseline`` when that is not among them,
    fastest (by :func:`speed`) first; records without a value are left out."""
    recs = [r for r in run.get("timed", []) if r.get("value") is not None]
    base = run.get("baseline")
    if isinstance(base, dict) and base.get("value") is not None and all(r["params"] != base["params"] for r in recs):
        recs.append({**base, "baseline": True})
    return sorted(recs, key=lambda r: -speed(r))


def near_best(run: dict, frac: float = NEAR) -> int:
    """How many measured configurations of ``run`` reach ``frac`` of its fastest."""
    recs = measured(run)
    return sum(speed(r) >= frac * speed(recs[0]) for r in recs) if recs else 0


def head_size(run: dict) -> int:
    """How many of the timed configurations were the model's head (ranks 1..n all timed):
    ``run["top"]`` when recorded, else inferred from the ranks."""
    if run.get("top") is not None:
        return int(run["top"])
    ranks = {r.get("rank") for r in run.get("timed", [])}
    n = 0
    while n + 1 in ranks:
        n += 1
    return n


STAGES = {"model": "the model's head", "sample": "random sample", "baseline": "the default (baseline)",
          "local": "neighbour of the fastest (local refinement)"}


def stage(r: dict, head: int) -> str:
    """Why a configuration was timed: its recorded "stage", else inferred from its model rank."""
    if r.get("stage"):
        return STAGES.get(r["stage"], r["stage"])
    if r.get("baseline"):
        return STAGES["baseline"]
    return STAGES["model"] if (r.get("rank") or 10 ** 9) <= head else STAGES["sample"]


def star_label(run: dict, recs: list | None = None) -> str:
    """What a run's star (its fastest measured configuration, by ratio to cuBLAS) is, read
    from the run: the leader of a single-round pass (every record timed once: a quick look,
    not a verdict), else, timed in alternating rounds against cuBLAS, the tuner's pick (what
    the chapter's tables and :mod:`helpers.runtime.defaults` take) or, for an exhaustive
    run, simply the fastest."""
    recs = measured(run) if recs is None else recs
    rounds = {r.get("rounds") for r in recs} - {None}
    if rounds == {1}:
        return "fastest in the single-round pass (one timing each)"
    how = f"{next(iter(rounds))} alternating rounds" if len(rounds) == 1 else "alternating rounds"
    if run.get("exhaustive"):
        return f"fastest by ratio to cuBLAS ({how})"
    return f"the tuner's pick: fastest by ratio to cuBLAS ({how})"


def confirmed_best(run: dict) -> dict | None:
    """The fastest (by ratio to cuBLAS) of a run's ``confirmed`` records: its leaders timed
    again, together, by the full method (``scripts/tune.py --confirm``); None without them."""
    conf = [r for r in run.get("confirmed") or [] if r.get("ratio") is not None]
    return max(conf, key=lambda r: r["ratio"]) if conf else None


KEY_COLOR = "#8c8c8c"        # the key's marks: grey, since every kernel has its own colour
KEY_WIDTH = 44               # characters per line of a key entry: fits a 412 px phone


def _key(fig, name: str, **kw) -> None:
    """A legend entry that draws nothing (the key of the marks on every kernel's line)."""
    fig.add_trace(go.Scatter(x=[None], y=[None], name=wrap(name, KEY_WIDTH), hoverinfo="skip",
                             legendgroup="key", **kw))


def distribution_figure(runs: list, where: str, defaults: dict | None = None, other_default: dict | None = None):
    """Every measured configuration of each run, sorted by ratio to cuBLAS (x: 1 = fastest),
    one colour per kernel; a dotted line at :data:`NEAR` of each kernel's best; the fastest
    (star, named by :func:`star_label`), the confirmed best when the run has a confirmation
    (open circle, :func:`confirmed_best`) and the shipped default (diamond) marked. ``defaults``:
    {kernel: shipped default params}, to find the default among the measured. ``other_default``:
    {kernel: record} of the default measured in *another* run (the results file), drawn hollow
    where its ratio would rank when the run did not time it, and said to be from another run.
    The key is the legend (it wraps on a narrow screen); notes on defaults not timed here sit
    above the plot."""
    fig = go.Figure()
    defaults, other_default = defaults or {}, other_default or {}
    notes, stars, drawn = [], {}, set()
    for i, run in enumerate(runs):
        k, col = run["kernel"], GROUP_COLORS[i % len(GROUP_COLORS)]
        recs = measured(run)
        if not recs:
            continue
        best = recs[0]
        head = head_size(run)
        label = star_label(run, recs)
        stars.setdefault(label, []).append(k)
        x = list(range(1, len(recs) + 1))
        text = [f"{k} #{j}: {style.ratio_text(r['ratio'])} of cuBLAS ({r['value']:.4g} TFLOP/s)<br>{fmt_params(r['params'])}<br>"
                + f"model rank {r.get('rank') or '-'}, picked as: {stage(r, head)}" for j, r in zip(x, recs)]
        fig.add_trace(go.Scatter(x=x, y=[r["ratio"] for r in recs], mode="lines+markers", name=k,
                                 line=dict(color=col, width=1), marker=dict(color=col, size=6),
                                 hovertext=text, hoverinfo="text"))
        cut = NEAR * best["ratio"]
        fig.add_trace(go.Scatter(x=[1, len(recs)], y=[cut, cut], mode="lines", showlegend=False,
                                 line=dict(color=col, dash="dot", width=1), hoverinfo="text",
                                 hovertext=f"{k}: {NEAR:.0%} of the best = {style.ratio_text(cut)} of cuBLAS"))
        fig.add_trace(go.Scatter(x=[1], y=[best["ratio"]], mode="markers", showlegend=False,
                                 marker=dict(symbol="star", size=16, color=col, line=dict(width=1, color="black")),
                                 hovertext=f"{k}, {label}: {style.ratio_text(best['ratio'])} of cuBLAS<br>{fmt_params(best['params'])}",
                                 hoverinfo="text"))
        conf = confirmed_best(run)
        at = next((j for j, r in zip(x, recs) if conf is not None and r["params"] == conf["params"]), None)
        if at is not None:
            r = recs[at - 1]
            fig.add_trace(go.Scatter(x=[at], y=[r["ratio"]], mode="markers", showlegend=False,
                                     marker=dict(symbol="circle-open", size=21, color=col, line=dict(width=2.5)),
                                     hovertext=f"{k}, the confirmed best: {style.ratio_text(conf['ratio'])} of cuBLAS timed again "
                                               f"({conf.get('rounds', '?')} alternating rounds), {style.ratio_text(r['ratio'])} in "
                                               f"this pass (#{at})<br>{fmt_params(conf['params'])}", hoverinfo="text"))
            drawn.add("confirmed")
        dflt = (run.get("baseline") or {}).get("params") or defaults.get(k)
        at = next((j for j, r in zip(x, recs) if dflt is not None and r["params"] == dflt), None)
        if at is not None:
            r = recs[at - 1]
            fig.add_trace(go.Scatter(x=[at], y=[r["ratio"]], mode="markers", showlegend=False,
                                     marker=dict(symbol="diamond", size=13, color=col, line=dict(width=1, color="black")),
                                     hovertext=f"{k} shipped default, same run: {style.ratio_text(r['ratio'])} of cuBLAS", hoverinfo="text"))
            drawn.add("default")
        elif k in other_default and other_default[k].get("ratio") is not None:
            o = other_default[k]
            pos = 0.5 + sum(r["ratio"] > o["ratio"] for r in recs)
            stamp = (o.get("recorded") or {}).get("date", "another run")
            fig.add_trace(go.Scatter(x=[pos], y=[o["ratio"]], mode="markers", showlegend=False,
                                     marker=dict(symbol="diamond-open", size=13, color=col, line=dict(width=2)),
                                     hovertext=f"{k} shipped default: {style.ratio_text(o['ratio'])} of cuBLAS, measured in another "
                                               f"run ({stamp}), not timed in this one", hoverinfo="text"))
            notes.append(f"◇ {k}'s shipped default, measured in another run ({stamp})")
            drawn.add("other")
        else:
            notes.append(f"{k}'s default: not timed")
    # the key: one legend entry per kind of mark drawn, named from the runs
    for label, ks in stars.items():
        name = label if len(stars) == 1 else f"{', '.join(ks)}: {label}"
        _key(fig, name, mode="markers", marker=dict(symbol="star", size=13, color=KEY_COLOR,
                                                    line=dict(width=1, color="black")))
    if "confirmed" in drawn:
        _key(fig, "the confirmed best: the pass's leaders timed again, together, by the full method",
             mode="markers", marker=dict(symbol="circle-open", size=13, color=KEY_COLOR, line=dict(width=2.5)))
    if "default" in drawn:
        _key(fig, "the shipped default, timed in the same run", mode="markers",
             marker=dict(symbol="diamond", size=11, color=KEY_COLOR, line=dict(width=1, color="black")))
    if "other" in drawn:
        _key(fig, "the shipped default, timed in another run", mode="markers",
             marker=dict(symbol="diamond-open", size=11, color=KEY_COLOR, line=dict(width=2)))
    _key(fig, f"{NEAR:.0%} of each kernel's fastest", mode="lines", line=dict(color=KEY_COLOR, dash="dot", width=1.5))
    fig.update_layout(title=dict(text=f"Every timed configuration, fastest first<br><sup>{where}</sup>", x=0.01,
                                 font=dict(size=14)),
                      xaxis=dict(title="configuration, by measured speed (1 = fastest)"),
                      yaxis=dict(title="fraction of cuBLAS (same run)", rangemode="tozero"),
                      height=520, legend=dict(orientation="h", y=-0.2, font=dict(size=11)),
                      margin=dict(l=60, r=20, t=70, b=60))
    if notes:        # above the plot: style.polish and the book's pages wrap them and make room
        fig.add_annotation(text="<br>".join(notes), xref="paper", yref="paper", x=0, y=1, yanchor="bottom",
                           xanchor="left", showarrow=False, align="left", font=dict(size=10))
    return fig


def rank_pairs(run: dict) -> list:
    """(model rank, measured rank, record) of each timed configuration of ``run``: both ranks
    among the timed configurations only (1 = best), the model's by its score."""
    recs = [r for r in run.get("timed", []) if r.get("value") is not None and r.get("score") is not None]
    by_model = sorted(range(len(recs)), key=lambda i: (-recs[i]["score"], recs[i].get("rank", 0)))
    by_speed = sorted(range(len(recs)), key=lambda i: -recs[i]["value"])   # as the tuner's rho
    m = {i: n + 1 for n, i in enumerate(by_model)}
    s = {i: n + 1 for n, i in enumerate(by_speed)}
    return [(m[i], s[i], recs[i]) for i in range(len(recs))]


def spearman(run: dict) -> float | None:
    """Spearman's rho of the model's scores and the measured values of ``run``'s timed
    configurations (what :func:`helpers.runtime.tune.tune` records as "model_spearman")."""
    recs = [r for r in run.get("timed", []) if r.get("value") is not None and r.get("score") is not None]
    return tuning.spearman([r["score"] for r in recs], [r["value"] for r in recs]) if len(recs) > 1 else None


def rank_figure(runs: list, where: str):
    """Model rank (x) against measured rank (y) of each run's timed configurations that the model
    scored (:func:`rank_pairs`: its head, the random sample and any neighbour it had ranked; the
    default and the other neighbours are timed without a score), one colour per kernel, both ranks counted among those points;
    a perfect model puts every point on the diagonal. Spearman's rho per kernel, and how many of
    its timed configurations are drawn, in the title."""
    fig = go.Figure()
    n_max, rhos = 1, []
    for i, run in enumerate(runs):
        col = GROUP_COLORS[i % len(GROUP_COLORS)]
        pairs = rank_pairs(run)
        if not pairs:
            continue
        rho = spearman(run)
        shown = f" ({len(pairs)} of {len(run.get('timed', []))} timed)"
        rhos.append(f"{run['kernel']} {rho:+.2f}{shown}" if rho is not None else f"{run['kernel']} -{shown}")
        n_max = max(n_max, len(pairs))
        fig.add_trace(go.Scatter(
            x=[a for a, _, _ in pairs], y=[b for _, b, _ in pairs], mode="markers", name=run["kernel"],
            marker=dict(color=col, size=8, opacity=0.8),
            hovertext=[f"{run['kernel']}: model #{a}, measured #{b}<br>score {r['score']:.3f}, "
                       f"{style.ratio_text(r['ratio'])} of cuBLAS<br>{fmt_params(r['params'])}" for a, b, r in pairs], hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[1, n_max], y=[1, n_max], mode="lines", name="perfect model",
                             line=dict(color="#888", dash="dash", width=1), hoverinfo="skip"))
    fig.update_layout(title=dict(text=f"The cost model's order against the measured one<br><sup>Spearman rho: "
                                      f"{' · '.join(rhos)}<br>points: the configurations with a model score (not the default, not "
                                      f"most neighbours); ranks among them<br>{where}</sup>", x=0.01, font=dict(size=14)),
                      xaxis=dict(title="model rank (1 = predicted fastest)"),
                      yaxis=dict(title="measured rank (1 = fastest)", autorange="reversed"),
                      height=500, legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=120, b=40))
    return fig


PANEL_BARS = (("sm_pct", "SM throughput"), ("mem_pct", "memory throughput"), ("fma_pct", "FMA pipe"),
              ("tensor_pct", "Tensor pipe"), ("occ_achieved", "achieved occupancy"), ("l2_hit", "L2 hit rate"))


def panel_rows(pairs: list) -> list:
    """Table rows (:func:`helpers.figures.profiling.panel_row`) of (label, panel run or None)
    pairs; a missing run is a row saying it is not recorded yet."""
    out = []
    for label, run in pairs:
        if run is None:
            out.append({"heaven": label, "kernel": "not recorded yet"})
        else:
            out.append({**panel_row(run), "heaven": label})
    return out


def panel_figure(pairs: list, where: str):
    """Grouped bars (% of peak) of the panels of (label, run or None) pairs, e.g. the shipped
    default and the tuner's winner; a pair without a run is named in the title as not recorded."""
    fig = go.Figure()
    missing = []
    for i, (label, run) in enumerate(pairs):
        if run is None:
            missing.append(label)
            continue
        p = run["panel"]
        fig.add_trace(go.Bar(x=[n for _, n in PANEL_BARS], y=[p.get(f) for f, _ in PANEL_BARS], name=label,
                             marker_color=GROUP_COLORS[i % len(GROUP_COLORS)],
                             hovertemplate=label + "<br>%{x}: %{y:.1f} %<extra></extra>"))
    sub = "<br>".join(part.strip() for part in where.split(";"))
    if missing:
        sub += f"<br><b>{' and '.join(missing)}: not recorded yet</b>"
    fig.update_layout(barmode="group", title=dict(text=f"Nsight Compute panel, {' vs '.join(l for l, _ in pairs)}"
                                                       f"<br><sup>{sub}</sup>", x=0.01, font=dict(size=14)),
                      yaxis=dict(title="% (of peak, of warps, of L2 requests)", range=[0, 105]),
                      height=420 + 14 * sub.count("<br>"), showlegend=True,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=60, r=20, t=80 + 14 * sub.count("<br>"), b=40))
    return fig
