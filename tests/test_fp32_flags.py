"""Chapter 5's two build switches of cp_async (SERPENTINE, FAST_INTERIOR), CPU only.

* The recording (results/h200-fp32-flags.json, scripts/ch5_flags.py) is complete: two tiles,
  four builds each, every build verified and timed the same number of times, its median the
  median of its timings.
* Every number the chapter's prose quotes from it is what the recording says.
* The kernel's defaults are what the prose says: both switches on without a register cap,
  both off under one (MIN_BLOCKS > 1), and each can be turned off with -D.
"""
from __future__ import annotations

import re
import statistics
from pathlib import Path

import nbformat
import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch05_register_tiling as ch5
from helpers.runtime import catalog, compile as kc, results


DOC = results.artifact(ch5.FLAGS_ARTIFACT)
needs_doc = pytest.mark.skipif(DOC is None, reason="results/h200-fp32-flags.json not recorded")
NB = Path(__file__).resolve().parents[1] / "book" / "05_register_tiling.ipynb"


def _cell(start: str) -> str:
    """The one Markdown cell that opens with ``start``, as a paragraph or as a dropdown's title."""
    nb = nbformat.read(NB, as_version=4)
    found = [c.source for c in nb.cells if c.cell_type == "markdown"
             and (c.source.startswith(start) or c.source.startswith(":::{dropdown} " + start))]
    assert len(found) == 1, start
    return found[0]


def _pct(x: float) -> str:
    return f"{abs(x - 1) * 100:.1f} %"


@needs_doc
def test_the_recording_is_complete_and_its_medians_are_medians():
    spec = catalog.get("cp_async")
    assert DOC["provenance"]["gpu"] == "NVIDIA H200" and DOC["command"].startswith("python scripts/ch5_flags.py")
    tiles = [s["params"] for s in DOC["sets"]]
    assert tiles[0] == spec.defaults and tiles[1]["BK"] == 8 and tiles[1]["BN"] == 128
    for st in DOC["sets"]:
        flags = [(r["flags"]["SERPENTINE"], r["flags"]["FAST_INTERIOR"]) for r in st["rows"]]
        assert flags == [(1, 1), (1, 0), (0, 1), (0, 0)]
        n = {len(r["timings"]) for r in st["rows"]}
        assert len(n) == 1 and n.pop() >= 3
        for r in st["rows"]:
            assert r["rel_err"] < 1e-4 and r["local_bytes"] == 0
            assert r["ratio"] == pytest.approx(statistics.median(t["ratio"] for t in r["timings"]), abs=1e-4)


@needs_doc
def test_the_prose_glues_the_recording_and_its_words_hold():
    """The numbers of the switch paragraph and of the controls paragraph are glued from
    helpers.chapters.register_tiling_prose, which reads this recording; the words around them
    ("gains", "*slower*", "neither switch helps alone", "faster", "no faster", "the register count
    does not explain it") hold for the recorded numbers."""
    from helpers.chapters import register_tiling_prose
    out = ch5.flag_rows()
    tiles = list(out["effects"])
    big, small = out["effects"][tiles[0]], out["effects"][tiles[1]]
    med = {(r["tile"], r["FMA order"], r["copies"]): r["ratio"] for r in out["rows"]}
    both = lambda t: med[t, "serpentine", "interior tiles unchecked"]      # noqa: E731
    neither = lambda t: med[t, "plain", "every copy checked"]              # noqa: E731
    v = register_tiling_prose.prose_values()
    assert v["serp_checked_pct"] == pytest.approx((big["serpentine (checked copies)"] - 1) * 100)
    assert v["interior_plain_loss_pct"] == pytest.approx((1 - big["interior (plain order)"]) * 100)
    assert (v["flags_both"], v["flags_neither"]) == (both(tiles[0]), neither(tiles[0]))
    assert v["small_both_pct"] == pytest.approx((both(tiles[1]) / neither(tiles[1]) - 1) * 100)
    text = " ".join(_cell("Two small changes that do not add up").split())
    for name in ("flags_both", "flags_neither", "serp_checked_pct", "interior_plain_loss_pct", "small_serp_x",
                 "small_interior_x", "small_both_pct", "small_interior_regs", "small_interior_pct"):
        assert f"{{glue:text}}`{name}" in text, name
    assert big["serpentine (checked copies)"] > 1 > big["interior (plain order)"]       # gains; *slower*
    assert small["serpentine (checked copies)"] < 1 and small["interior (plain order)"] < 1   # neither alone
    assert both(tiles[1]) > neither(tiles[1])                                            # together faster
    interior = [r for r in out["rows"] if r["tile"] == tiles[1] and r["copies"] == "interior tiles unchecked"]
    assert len({r["registers"] for r in interior}) == 1          # the same register count ...
    assert len({r["ratio"] for r in interior}) == 2              # ... and two different speeds
    controls = " ".join(_cell("Read the first table by its last column").split())
    serp_checked = med[tiles[1], "serpentine", "every copy checked"]    # how warptile_db is built
    wt = results.lookup("warptile_db", dict(catalog.get("warptile_db").defaults), "float32", (4096,) * 3)
    assert (v["ca_plain_small"], v["db_small"]) == (serp_checked, wt["ratio"])
    assert "{glue:text}`ca_plain_small" in controls and "{glue:text}`db_small" in controls
    assert serp_checked <= wt["ratio"] * 1.01                                 # "no faster"


def _defines(source: str, **d) -> dict:
    """Evaluate the two switches' #ifndef defaults for -D values ``d`` (the file's own text)."""
    env = {"MIN_BLOCKS": d.get("MIN_BLOCKS", 1)}
    for name in ("FAST_INTERIOR", "SERPENTINE"):
        m = re.search(rf"#ifndef {name}\n#define {name} (.+)\n#endif", source)
        assert m, name
        env[name] = d[name] if name in d else int(eval(m.group(1).replace("MIN_BLOCKS", str(env["MIN_BLOCKS"]))))
    return env


def test_both_switches_default_on_without_a_register_cap():
    src = kc.source("05_register_tiling.cu")
    assert _defines(src) == {"MIN_BLOCKS": 1, "FAST_INTERIOR": 1, "SERPENTINE": 1}
    assert _defines(src, MIN_BLOCKS=2) == {"MIN_BLOCKS": 2, "FAST_INTERIOR": 0, "SERPENTINE": 0}
    assert _defines(src, SERPENTINE=0, FAST_INTERIOR=0)["FAST_INTERIOR"] == 0


def test_chapter8_quotes_both_builds_counters():
    """Chapter 8's note on its FP32 profiles: the glued registers and issue rates are those of
    the default's run (results/h200-ncu-tuned.json) and of the cuBLAS comparison's run
    (results/h200-ncu-cublas.json), the prose quotes them by those glue names, and, as the note
    says, both runs profiled the build the book ships (the same parameters, the same registers)."""
    from helpers.chapters import prose_ch08
    tuned, blas = results.artifact("ncu-tuned"), results.artifact("ncu-cublas")
    if tuned is None or blas is None:
        pytest.skip("an Nsight Compute record is missing")
    ship = next(r["metrics"] for r in tuned["runs"] if r["key"] == "cp_async" and r["role"] == "default")
    old = next(r["metrics"] for r in blas["runs"] if r.get("key") == "cp_async")
    v = prose_ch08.prose_values()
    issue = "sm__inst_issued.avg.pct_of_peak_sustained_active"
    assert v["regs_shipped"] == round(ship["launch__registers_per_thread"])
    assert v["issue_shipped"] == pytest.approx(ship[issue])
    assert v["regs_cmp"] == round(old["launch__registers_per_thread"])
    assert v["issue_cmp"] == pytest.approx(old[issue], abs=0.05)      # the comparison keeps one decimal
    nb = nbformat.read(NB.parent / "08_profiling.ipynb", as_version=4)
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for name in ("regs_shipped", "issue_shipped", "regs_cmp", "issue_cmp"):
        assert f"{{glue:text}}`{name}" in text, name
    ship_p = next(r["params"] for r in tuned["runs"] if r["key"] == "cp_async" and r["role"] == "default")
    old_p = next(r["params"] for r in blas["runs"] if r.get("key") == "cp_async")
    assert ship_p == old_p == catalog.get("cp_async").defaults
    assert ship["launch__registers_per_thread"] == old["launch__registers_per_thread"]
    assert "as the book ships it" in text and "every copy checked" not in text
