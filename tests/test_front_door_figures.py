"""The front door (#14): the landing page's staircase is a static SVG drawn from the
records (no plotly.js on that page), its committed output is what the recorded results
give, the page with its assets stays under 1.5 MB; chapter 8's distribution figure has a
key that fits a phone and says what its star marks, read from the run."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import common
from helpers.figures import staircase, style, tuning as tf
from helpers.runtime import catalog, roofline

REPO = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"
INTRO_LIMIT = 1_500_000          # bytes a first visit of the landing page may download


# ------------------------------------------------------------------ the staircase
@pytest.fixture(scope="module")
def recs():
    return common.running(upto=10)


@pytest.mark.parametrize("narrow", [False, True])
def test_staircase_svg_draws_every_record_and_roof(recs, narrow):
    ceil = roofline.ceilings()
    root = ET.fromstring(staircase.staircase_svg(recs, ceil, narrow=narrow))
    assert root.get("viewBox").split()[2] == ("380" if narrow else "760")
    ok = [r for r in recs if r.get("value")]
    points = root.findall(f"{SVG}g")
    assert len(points) == len(ok)
    for g, r in zip(points, ok):
        tip = g.find(f"{SVG}title").text
        assert f"heaven {r['chapter']}:" in tip and f"{r['value']:.4g} TFLOP/s" in tip
        assert g.find(f"{SVG}text").text == f"{style.ratio_text(r['ratio'])}×"
    roofs = [t.text for t in root.iter(f"{SVG}title") if "TFLOP/s" in t.text and "heaven" not in t.text]
    assert len(roofs) == len(staircase.roofs(ceil)) >= 2
    # the text follows the page (light and dark themes)
    assert root.get("fill") == "currentColor"


def test_staircase_html_says_where_the_numbers_came_from(recs):
    html = staircase.staircase_html(recs, roofline.ceilings())
    assert "plotly" not in html.lower() and "<script" not in html
    assert html.count("<svg") == 2 and "@media (max-width:" in html
    assert "recorded on NVIDIA H200" in html or "live" in html


def test_intro_has_the_svg_staircase_and_no_plotly_figure():
    nb = nbformat.read(REPO / "book" / "intro.ipynb", as_version=4)
    htmls = ["".join(o["data"]["text/html"]) if isinstance(o["data"]["text/html"], list) else o["data"]["text/html"]
             for c in nb.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert any("book-staircase" in h for h in htmls)
    assert not any("plotly-graph-div" in h for h in htmls)
    # no formula in its text: MathJax is not loaded there (_ext/book_offline.py)
    assert not any(re.search(r"\$[^$\n]+\$", c.source) for c in nb.cells if c.cell_type == "markdown")


def test_committed_staircase_is_what_the_recorded_results_give():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "render_staircase.py"), "--check"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]


# ------------------------------------------------------------- chapter 8's key
MMA = catalog.get("mma_sync_f16")


def _run(rounds, exhaustive=False, confirmed=None):
    ps = [{**MMA.defaults, "GROUP_M": g, "STAGES": s} for g in (1, 8) for s in (2, 3, 4)]
    timed = [{"params": p, "value": 400 - 10 * i, "ratio": (400 - 10 * i) / 800, "rounds": rounds}
             for i, p in enumerate(ps)]
    run = {"kernel": "mma_sync_f16", "timed": timed, "best": {"params": ps[0]}}
    if exhaustive:
        run["exhaustive"] = True
    if confirmed is not None:
        run["confirmed"] = confirmed
    return run, ps


def _keys(fig):
    return [t for t in fig.data if t.legendgroup == "key"]


def test_the_star_is_named_from_the_run():
    tuned, _ = _run(3)
    assert tf.star_label(tuned) == "the tuner's pick: fastest by ratio to cuBLAS (3 alternating rounds)"
    single, _ = _run(1, exhaustive=True)
    assert "single-round pass" in tf.star_label(single)
    fig = tf.distribution_figure([single], "w", {"mma_sync_f16": MMA.defaults})
    assert any("single-round pass" in t.name for t in _keys(fig))
    assert not any("tuner's pick" in t.name for t in _keys(fig))


def test_the_confirmed_best_is_marked_where_it_stood_in_the_pass():
    _, ps = _run(1)
    conf = [{"params": ps[3], "value": 380, "ratio": 0.6, "rounds": 3},
            {"params": ps[0], "value": 390, "ratio": 0.55, "rounds": 3}]
    run, _ = _run(1, exhaustive=True, confirmed=conf)
    assert tf.confirmed_best(run)["params"] == ps[3]
    fig = tf.distribution_figure([run], "w")
    ring = [t for t in fig.data if t.marker is not None and t.marker.symbol == "circle-open" and t.x[0] is not None]
    assert len(ring) == 1 and ring[0].x[0] == 4 and ring[0].y[0] == pytest.approx(370 / 800)
    assert "0.600 of cuBLAS timed again" in ring[0].hovertext
    assert any("confirmed best" in t.name for t in _keys(fig))


def test_the_key_fits_a_phone_and_lists_only_what_is_drawn():
    run, _ = _run(3)
    fig = tf.distribution_figure([run], "w")            # no default known: no diamond
    names = [t.name for t in _keys(fig)]
    assert not any("shipped default" in n for n in names)
    assert all(max(len(line) for line in n.split("<br>")) <= tf.KEY_WIDTH for n in names)
    assert all(list(t.x) == [None] for t in _keys(fig))          # the key draws no point
    # notes (here: "default: not timed") sit above the plot, where the page wraps them
    assert all(a.y >= 1 and a.yanchor == "bottom" for a in fig.layout.annotations)
    assert "not timed" in fig.layout.annotations[0].text


# --------------------------------------------------------------- page weight
def test_intro_page_weight_under_limit(tmp_path):
    """Build the book and load the landing page in Chromium as a first visit: what it
    downloads (scripts/page_weight.py) stays under 1.5 MB."""
    from test_book_build import _need_browser, build_book

    _need_browser()
    b = build_book(REPO, tmp_path)
    assert b.returncode == 0, b.log[-3000:]
    sys.path.insert(0, str(REPO / "scripts"))
    import page_weight
    from playwright.sync_api import sync_playwright
    from test_book_build import CHROMIUM_ARGS, chromium_path, serve

    with serve(b.html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        ctx = browser.new_context(service_workers="block")
        sizes = page_weight.visit(ctx, base + "book/intro.html")
        browser.close()
    total = sum(sizes.values())
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total < INTRO_LIMIT, f"{total:,} bytes: " + json.dumps(top)
    assert not any("plotly" in u or "mathjax" in u or "fontawesome.js" in u for u in sizes)
