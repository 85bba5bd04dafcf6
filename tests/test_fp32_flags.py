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
    nb = nbformat.read(NB, as_version=4)
    found = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(start)]
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
def test_the_prose_quotes_the_recording():
    out = ch5.flag_rows()
    tiles = list(out["effects"])
    big, small = out["effects"][tiles[0]], out["effects"][tiles[1]]
    med = {(r["tile"], r["FMA order"], r["copies"]): r["ratio"] for r in out["rows"]}
    both = lambda t: med[t, "serpentine", "interior tiles unchecked"]      # noqa: E731
    neither = lambda t: med[t, "plain", "every copy checked"]              # noqa: E731
    text = " ".join(_cell("**Two small changes that do not add up.**").split())
    for claim in (
            f"serpentine order gains {_pct(big['serpentine (checked copies)'])} with every copy checked",
            f"unchecked interior {_pct(big['interior (serpentine order)'])} with the serpentine order",
            f"together run at {both(tiles[0]):.3f} of cuBLAS against {neither(tiles[0]):.3f} with neither",
            f"is {abs(big['interior (plain order)'] - 1) * 100:.0f} % *slower*",
            f"(serpentine alone x{small['serpentine (checked copies)']:.3f}, unchecked interior alone x{small['interior (plain order)']:.3f})",
            f"{(both(tiles[1]) / neither(tiles[1]) - 1) * 100:.1f} % faster than neither",
            f"{both(tiles[1]):.3f} against {neither(tiles[1]):.3f}"):
        assert claim in text, claim
    assert big["interior (plain order)"] < 1 < big["interior (serpentine order)"]
    assert small["serpentine (checked copies)"] < 1 and small["interior (plain order)"] < 1
    controls = " ".join(_cell("Read the first table by its last column").split())
    assert f"`cp_async` ran at {neither(tiles[1]):.3f} of cuBLAS at that tile" in controls
    wt = results.lookup("warptile_db", dict(catalog.get("warptile_db").defaults), "float32", (4096,) * 3)
    assert f"`warptile_db` measured {wt['ratio']:.2f} on the H200" in controls


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
