"""Chapter 8's figures: Nsight Compute panels as tables and bars, the decision table's verdicts.

Inputs are panel runs (:func:`helpers.runtime.panels.recorded` or
:func:`~helpers.runtime.panels.profile`): dicts with "heaven" (optional),
"key", "shape", "metrics" and "panel" (:func:`helpers.models.diagnosis.panel`).
Every title and caption carries ``where`` (live, or recorded on which GPU and when).
"""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.models import counters, diagnosis

from helpers.runtime.roofline import intensity_min

from . import roofline as roofline_fig, show
from . import style
from .style import GROUP_COLORS

PANEL_COLUMNS = {"heaven": "heaven", "kernel": "kernel", "sm": "SM %", "mem": "memory %",
                 "dram_rd": "DRAM read (MB)", "dram_wr": "DRAM written (MB)", "l2_hit": "L2 hit %",
                 "occ": "occupancy achieved / theoretical %", "stalls": "top warp stalls (cycles per instruction)",
                 "fma": "FMA pipe %", "tensor": "Tensor pipe %", "conflicts": "shared bank conflicts (share of wavefronts)"}


def _r(x, d=1):
    return None if x is None else round(x, d)


def panel_row(run: dict) -> dict:
    """One row of :data:`PANEL_COLUMNS` for a panel run."""
    p = run["panel"]
    share = p.get("conflict_share")
    return {"heaven": run.get("heaven"), "kernel": run["key"], "sm": _r(p["sm_pct"]), "mem": _r(p["mem_pct"]),
            "dram_rd": _r((p["dram_read"] or 0) / 1e6), "dram_wr": _r((p["dram_write"] or 0) / 1e6),
            "l2_hit": _r(p["l2_hit"]), "occ": f"{_r(p['occ_achieved'])} / {_r(p['occ_theoretical'])}",
            "stalls": ", ".join(f"{k} {v:.2f}" for k, v in p["stalls"]), "fma": _r(p["fma_pct"]),
            "tensor": _r(p["tensor_pct"]),
            "conflicts": None if share is None else f"{p['bank_conflicts']:.3g} ({share:.1%})"}


def show_panels(runs: list, where: str) -> None:
    """The panels as one table, one row per kernel (no heaven column when no run names one)."""
    rows = [panel_row(r) for r in runs]
    cols = PANEL_COLUMNS if any(r["heaven"] is not None for r in rows) else \
        {k: h for k, h in PANEL_COLUMNS.items() if k != "heaven"}
    what = (f"Nsight Compute panel of {runs[0]['key']} at its default configuration, one launch"
            if len(runs) == 1 else
            "Nsight Compute panel of each heaven's headline kernel at its default configuration, one launch each")
    show.table(rows, cols, f"{what}, {where}. % are of the unit's peak over the launch; stalls are the "
               "WarpStateStats cycles per issued instruction.")


def sol_figure(runs: list, where: str):
    """Grouped bars per kernel: SM and memory throughput, FMA and Tensor pipe activity (% of peak)."""
    x = [f"{r.get('heaven', '')}: {r['key']}" for r in runs]
    fig = go.Figure()
    for i, (field, name) in enumerate((("sm_pct", "SM throughput"), ("mem_pct", "memory throughput"),
                                       ("fma_pct", "FMA pipe active"), ("tensor_pct", "Tensor pipe active"))):
        fig.add_trace(go.Bar(x=x, y=[r["panel"][field] for r in runs], name=name, marker_color=GROUP_COLORS[i],
                             hovertemplate="%{x}<br>" + name + ": %{y:.1f} % of peak<extra></extra>"))
    fig.add_hline(y=diagnosis.BUSY, line_dash="dot", annotation_text=f"busy: {diagnosis.BUSY:.0f} %",
                  annotation_position="top left")
    fig.update_layout(barmode="group", title=dict(text=f"Speed of light, heaven by heaven<br><sup>{where}</sup>", x=0.01),
                      yaxis=dict(title="% of peak", range=[0, 105]), height=420,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=60, r=20, t=70, b=40))
    return fig


def stall_figure(runs: list, where: str, top: int = 6):
    """Stacked bars: the ``top`` largest warp-stall reasons of each kernel (others summed)."""
    stalls = {r["key"]: diagnosis.stalls(r["metrics"]) for r in runs}
    rank: dict = {}
    for s in stalls.values():
        for k, v in s.items():
            rank[k] = max(rank.get(k, 0.0), v)
    keep = sorted(rank, key=lambda k: -rank[k])[:top]
    x = [f"{r.get('heaven', '')}: {r['key']}" for r in runs]
    fig = go.Figure()
    for i, reason in enumerate(keep + ["other"]):
        ys = [(sum(v for k, v in stalls[r["key"]].items() if k not in keep) if reason == "other"
               else stalls[r["key"]].get(reason, 0.0)) for r in runs]
        fig.add_trace(go.Bar(x=x, y=ys, name=reason, marker_color=(GROUP_COLORS + ["#bab0ac"])[i % 9],
                             hovertemplate="%{x}<br>" + reason + ": %{y:.2f} cycles per instruction<extra></extra>"))
    fig.update_layout(barmode="stack", title=dict(text=f"Where warps wait (WarpStateStats)<br><sup>{where}</sup>", x=0.01),
                      yaxis=dict(title="stall cycles per issued instruction", type="log"), height=420,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=60, r=20, t=70, b=40))
    return fig


def diagnosis_rows(runs: list, heaven_steps: dict, excuses: dict) -> list:
    """One row per recorded heaven N: its bottleneck, the step the decision table names, the
    step heaven N+1 takes (``heaven_steps``), and whether they agree ("no: see why" when
    ``excuses`` has the heaven)."""
    heavens = sorted(heaven_steps)
    rows = []
    for r in sorted(runs, key=lambda r: r.get("heaven", 0)):
        d = diagnosis.diagnose(r["panel"])
        h = r.get("heaven")
        nxt = next((n for n in heavens if h is not None and n > h), None)
        takes = sorted(heaven_steps[nxt]) if nxt else []
        agree = None if nxt is None else ("yes" if d["step"] in heaven_steps[nxt] else
                                          ("no: see why below" if h in excuses else "NO"))
        rows.append({"heaven": h, "kernel": r["key"], "rule": d["rule"], "bottleneck": d["bottleneck"],
                     "names": d["step"], "next": nxt, "takes": ", ".join(takes), "agree": agree})
    return rows


def show_diagnosis(runs: list, where: str, heaven_steps: dict, excuses: dict) -> list:
    """Display :func:`diagnosis_rows`, each step in words (:func:`helpers.models.diagnosis.step_words`);
    returns the rows (identifiers)."""
    rows = diagnosis_rows(runs, heaven_steps, excuses)
    shown = [{**r, "names": diagnosis.step_words(r["names"]), "takes": diagnosis.step_words(r["takes"])} for r in rows]
    show.table(shown, {"heaven": "heaven", "kernel": "kernel", "rule": "rule that fired", "bottleneck": "bottleneck",
                      "names": "step it names", "next": "next heaven", "takes": "steps that heaven takes",
                      "agree": "agree"},
               f"The nine-heavens decision table (helpers.models.diagnosis) applied to the panels, {where}.")
    return rows


def roofline_measured(recs: list, ceil: dict, runs: list, title: str = "Roofline at measured traffic"):
    """The roofline (:func:`helpers.figures.roofline.figure`'s roofs, captioned with where the
    TFLOP/s and ceilings come from) with each record of ``recs``
    at two intensities: 2MNK over the DRAM bytes Nsight Compute counted for that kernel (filled
    diamond, from ``runs``) and the minimal intensity of the problem (hollow circle), joined by a
    dotted line. The y value is the record's TFLOP/s. Records without a panel are left out."""
    # The points are drawn here, not by figure(): its subtitle names only the roofs' source.
    ceil = dict(ceil, where=f"roofs: {ceil.get('where', '?')}")
    fig = roofline_fig.figure([], ceil, title=title, dtypes={r.get("dtype") for r in recs})
    by_key = {(r["key"], tuple(r["shape"])): r for r in runs}
    for i, rec in enumerate(recs):
        run = by_key.get((rec["kernel"], tuple(rec["shape"])))
        if run is None or rec.get("value") is None:
            continue
        p = run["panel"]
        x_meas = diagnosis.measured_intensity(rec["shape"], p["dram_read"], p["dram_write"])
        isz = 2 if rec["dtype"] in ("float16", "bfloat16") else 4
        x_min = intensity_min(*rec["shape"], in_bytes=isz, out_bytes=isz)
        label = f"{rec['chapter']}: {rec['kernel']}"
        hover = (f"{label}<br>{rec['value']:.2f} TFLOP/s, {style.ratio_text(rec['ratio'])} of cuBLAS<br>"
                 f"DRAM {((p['dram_read'] or 0) + (p['dram_write'] or 0)) / 1e6:.0f} MB (ncu)")
        fig.add_trace(go.Scatter(
            x=[x_meas, x_min], y=[rec["value"]] * 2, mode="lines+markers", name=label,
            line=dict(dash="dot", width=1, color=GROUP_COLORS[i % len(GROUP_COLORS)]),
            marker=dict(size=[12, 9], symbol=["diamond", "circle-open"], color=GROUP_COLORS[i % len(GROUP_COLORS)]),
            hovertext=[hover + f"<br>measured intensity {x_meas:.1f} FLOP/B",
                       hover + f"<br>minimal intensity {x_min:.0f} FLOP/B"], hoverinfo="text"))
    fig.update_layout(height=520, margin=dict(t=90), title=dict(font=dict(size=14)))
    return fig


def find_run(runs: list, key: str, shape) -> dict:
    """The panel run of ``key`` at ``shape`` among ``runs``; KeyError when it is not recorded."""
    for r in runs:
        if r["key"] == key and list(r["shape"]) == list(shape):
            return r
    raise KeyError(f"no Nsight Compute panel of {key} at {list(shape)}")


def ncu_label(doc: dict | None, file: str) -> str:
    """'recorded with Nsight Compute on <gpu> (<date>, <file>)' for a recorded panels document."""
    prov = (doc or {}).get("provenance", {})
    return f"recorded with Nsight Compute on {prov.get('gpu', '?')} ({prov.get('date', '?')}, {file})"


def counter_comparison(a: dict, b: dict, kind: str, fields) -> list:
    """Rows of :func:`helpers.models.counters.compare` for two panel runs ``a`` and ``b``
    (runs with "key", "shape", "metrics"), per FFMA or per HMMA (``kind``)."""
    return counters.compare(counters.derived(a["metrics"], a["shape"], kind),
                            counters.derived(b["metrics"], b["shape"], kind), fields)


def show_counter_comparison(rows: list, a: str, b: str, caption: str) -> None:
    """:func:`counter_comparison`'s rows as a table: one row per counter, a column per kernel
    (``a``, ``b``: their names) and their ratio."""
    show.table(rows, {"quantity": "counter", "a": a, "b": b, "b / a": f"{b} / {a}"}, caption)
