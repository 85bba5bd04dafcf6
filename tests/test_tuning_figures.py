"""Chapter 8's autotuner section: the figures of helpers.figures.tuning (drawn from tuning runs,
no GPU), the chapter calls of helpers.chapters.ch08_profiling, scripts/ncu_panels.py --tuned,
and the notebook's rule that measured numbers come from the JSON, not the prose."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch08_profiling as ch
from helpers.figures import tuning as tf
from helpers.models import tuning
from helpers.runtime import catalog, gpu, panels

REPO = Path(__file__).resolve().parent.parent
MMA = catalog.get("mma_sync_f16")
SHAPE = [4096, 4096, 4096]


def _rec(p, value, score, rank, stage=None):
    r = {"kernel": "mma_sync_f16", "params": p, "dtype": "float16", "shape": SHAPE, "value": value,
         "ratio": value / 800.0, "score": score, "rank": rank}
    return {**r, "stage": stage} if stage else r


def _run(baseline=True):
    """Ten configurations: values 400 down to 220; the model's scores in the reverse of the
    measured order for the last four (so rho is below 1); the default timed as the baseline."""
    ps = [{**MMA.defaults, "GROUP_M": g, "STAGES": s, "BK": bk} for bk in (32, 64) for s in (2, 3, 4, 5, 3)
          for g in (1,)][:10]
    ps = [dict(p, LOAD_SPREAD=i % 2) for i, p in enumerate(ps)]
    values = [400, 390, 380, 370, 300, 290, 280, 250, 240, 220]
    scores = [0.9, 0.8, 0.85, 0.7, 0.6, 0.5, 0.2, 0.3, 0.4, 0.45]
    timed = [_rec(p, v, s, i + 1, "model" if i < 6 else "sample") for i, (p, v, s) in enumerate(zip(ps, values, scores))]
    run = {"kernel": "mma_sync_f16", "shape": SHAPE, "space": 2304, "refused": 1248, "ranked": 96, "timed": timed,
           "best": {"params": ps[0], "value": 400, "ratio": 0.5}}
    if baseline:
        run["timed"].append(_rec(MMA.defaults, 330.0, None, None, "baseline"))
        run["baseline"] = {"params": MMA.defaults, "value": 330.0, "ratio": 330.0 / 800}
    return run


def _traces(fig, mode=None, symbol=None):
    out = []
    for t in fig.data:
        sym = getattr(t.marker, "symbol", None) if t.marker is not None else None
        if (mode is None or t.mode == mode) and (symbol is None or sym == symbol):
            out.append(t)
    return out


def test_measured_counts_the_baseline_once_and_sorts_fastest_first():
    run = _run()
    recs = tf.measured(run)
    assert len(recs) == 11 and [r["value"] for r in recs] == sorted((r["value"] for r in recs), reverse=True)
    assert tf.near_best(run) == sum(v >= 0.9 * 400 for v in [400, 390, 380, 370, 300, 290, 280, 250, 240, 220, 330])
    bare = _run(baseline=False)
    bare["baseline"] = {"params": MMA.defaults, "value": 330.0, "ratio": 0.41}   # not among the timed
    assert len(tf.measured(bare)) == 11 and any(r.get("baseline") for r in tf.measured(bare))


def test_distribution_figure_marks_the_90_percent_line_the_winner_and_the_default():
    run = _run()
    fig = tf.distribution_figure([run], "recorded on X", {"mma_sync_f16": MMA.defaults})
    line = _traces(fig, "lines+markers")[0]
    assert list(line.y) == sorted(line.y, reverse=True) and len(line.y) == 11
    cut = [t for t in _traces(fig, "lines") if t.line.dash == "dot"][0]
    assert cut.y[0] == pytest.approx(0.9 * 0.5)
    star = _traces(fig, symbol="star")[0]
    assert star.x[0] == 1 and star.y[0] == pytest.approx(0.5)
    dia = _traces(fig, symbol="diamond")[0]
    assert dia.y[0] == pytest.approx(330 / 800) and dia.x[0] == 1 + sum(v > 330 / 800 for v in line.y)
    assert "recorded on X" in fig.layout.title.text
    assert "picked as: random sample" in " ".join(line.hovertext) and "the default (baseline)" in " ".join(line.hovertext)


def test_a_default_from_another_run_is_drawn_hollow_and_said_to_be_so():
    run = _run(baseline=False)
    other = {"mma_sync_f16": {"ratio": 0.47, "recorded": {"date": "2026-11-29"}}}
    fig = tf.distribution_figure([run], "w", {"mma_sync_f16": MMA.defaults}, other)
    assert not _traces(fig, symbol="diamond")
    hollow = _traces(fig, symbol="diamond-open")[0]
    assert hollow.y[0] == 0.47 and "another run (2026-11-29)" in hollow.hovertext
    assert "2026-11-29" in fig.layout.annotations[0].text


def test_rank_figure_ranks_and_rho():
    run = _run()
    pairs = tf.rank_pairs(run)
    assert len(pairs) == 10                                   # the baseline has no score: not ranked
    assert sorted(a for a, _, _ in pairs) == list(range(1, 11)) == sorted(b for _, b, _ in pairs)
    scored = [r for r in run["timed"] if r["score"] is not None]
    rho = tuning.spearman([r["score"] for r in scored], [r["value"] for r in scored])
    assert tf.spearman(run) == pytest.approx(rho) and 0 < rho < 1
    fig = tf.rank_figure([run], "w")
    assert f"mma_sync_f16 {rho:+.2f}" in fig.layout.title.text
    assert fig.layout.yaxis.autorange == "reversed"


def test_panel_figure_says_what_is_not_recorded():
    heav, _, _ = panels.recorded()
    d = next(r for r in heav if r["key"] == "cp_async")
    fig = tf.panel_figure([("shipped default", d), ("tuner's winner", None)], "somewhere")
    assert len(fig.data) == 1 and "tuner's winner: not recorded yet" in fig.layout.title.text
    both = tf.panel_figure([("shipped default", d), ("tuner's winner", d)], "somewhere")
    assert len(both.data) == 2 and "not recorded" not in both.layout.title.text
    rows = tf.panel_rows([("shipped default", d), ("tuner's winner", None)])
    assert rows[1]["kernel"] == "not recorded yet" and rows[0]["sm"] == round(d["panel"]["sm_pct"], 1)


def test_chapter_rows_and_verdicts_come_from_the_run():
    run = _run()
    row = ch.search_rows([run])[0]
    assert row["default"] == f"{330 / 800:.3f} (same run)" and row["near"].endswith("of 11")
    assert row["winner"] == tf.fmt_params(run["best"]["params"], MMA.defaults)
    assert "ratio to cuBLAS is +21.2% against the default's, timed in the same run" in ch.default_verdict(run)
    assert ch.rho_verdict(0.9).startswith("the model orders them well") and "backwards" in ch.rho_verdict(-0.5)
    lines = ch.summary_lines([run], "recorded on X")
    assert lines[0] == "Source: recorded on X." and "2304 configurations" in lines[1]


def test_show_tuned_panels_with_and_without_the_winners_counters(monkeypatch):
    notes, tables, figs = [], [], []
    monkeypatch.setattr(ch.show, "note", lambda text, title="": notes.append(title))
    monkeypatch.setattr(ch.show, "table", lambda rows, cols, cap: tables.append((rows, cap)))
    monkeypatch.setattr(ch.show, "figure", lambda f: figs.append(f))
    spec = catalog.get("cp_async")
    win = {**spec.defaults, "STAGES": 4}
    run = {"kernel": "cp_async", "shape": SHAPE, "timed": [], "best": {"params": win, "value": 1, "ratio": 1}}
    ch.show_tuned_panels([run], "cp_async", live=False)
    assert notes == ["Winner's panel: not recorded yet"] and len(figs[0].data) == 1
    heav, _, _ = panels.recorded()
    d = next(r for r in heav if r["key"] == "cp_async")
    tuned = [{**d, "params": spec.defaults, "role": "default"}, {**d, "params": win, "role": "winner"}]
    real = panels.recorded
    monkeypatch.setattr(panels, "recorded", lambda slug="h200", name=panels.ARTIFACT:
                        (tuned, {}, "recorded on T") if name == panels.TUNED_ARTIFACT else real(slug, name))
    notes.clear(), figs.clear()
    ch.show_tuned_panels([run], "cp_async", live=False)
    assert not notes and len(figs[0].data) == 2 and "recorded on T" in tables[-1][1]


def test_live_tune_without_a_gpu_prints_one_line(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "live", lambda: False)
    assert ch.live_tune() is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "needs a CUDA GPU" in out[0]


def test_ncu_panels_tuned_plan(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    sys.modules.pop("ncu_panels", None)
    import ncu_panels
    spec = catalog.get("mma_sync_f16")
    win = {**spec.defaults, "STAGES": 3}
    doc = {"runs": [{"kernel": "mma_sync_f16", "shape": SHAPE, "best": {"params": win, "ratio": 0.56}},
                    {"kernel": "mma_sync_bf16", "shape": SHAPE, "best": {"params": spec.defaults, "ratio": 0.55}},
                    {"kernel": "cp_async", "shape": [2048] * 3, "best": {"params": catalog.get("cp_async").defaults}}]}
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    items = ncu_panels.tuned_plan(str(f))
    assert [(it["key"], it["role"]) for it in items] == [("mma_sync_f16", "default"), ("mma_sync_f16", "winner"),
                                                         ("mma_sync_bf16", "default"), ("cp_async", "default")]
    assert items[1]["params"] == win and items[0]["params"] == spec.defaults
    assert [it["key"] for it in ncu_panels.tuned_plan(str(f), ["mma_sync_bf16"])] == ["mma_sync_bf16"]
    # with timed records, the winner is the best ratio to cuBLAS (as the defaults), not the best value
    by_ratio = {**spec.defaults, "GROUP_M": 1}
    doc["runs"][0]["timed"] = [{"params": win, "value": 402.0, "ratio": 0.540},
                               {"params": by_ratio, "value": 397.0, "ratio": 0.551}]
    f.write_text(json.dumps(doc))
    assert ncu_panels.tuned_plan(str(f), ["mma_sync_f16"])[1]["params"] == by_ratio
    assert ch.winner(doc["runs"][0]) == by_ratio


RECORDED, WHERE = ch.tuning_recorded()
needs_file = pytest.mark.skipif(not RECORDED, reason="results/h200-tuning.json not recorded yet")


@needs_file
def test_recorded_search_is_labelled_and_its_rho_is_the_tuners():
    assert WHERE.startswith("recorded on NVIDIA H200, 20") and WHERE.endswith("results/h200-tuning.json")
    for run in RECORDED:
        if run.get("model_spearman") is not None:
            assert tf.spearman(run) == pytest.approx(run["model_spearman"])


@needs_file
def test_the_tuner_section_quotes_no_measured_number_in_its_prose():
    """Every measured number of the tuner's section is printed from the JSON: none of the
    recorded ratios, TFLOP/s or rho values appears in the chapter's markdown."""
    nb = nbformat.read(REPO / "book" / "08_profiling.ipynb", as_version=4)
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    start = md.index("## Tuning the configuration")
    prose = md[start:]
    numbers = set()
    for run in RECORDED:
        for r in tf.measured(run):
            numbers |= {f"{r['ratio']:.3f}", f"{r['ratio']:.2f}", f"{r['value']:.1f}"}
        if run.get("model_spearman") is not None:
            numbers.add(f"{run['model_spearman']:.2f}")
    quoted = sorted(n for n in numbers if n in prose)
    assert not quoted, f"measured numbers written into the tuner's prose: {quoted}"
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert any("ch.tuning_recorded()" in c for c in code) and any("ch.live_tune()" in c for c in code)
