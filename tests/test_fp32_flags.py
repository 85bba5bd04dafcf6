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
    helpers.chapters.register_tiling_prose, which reads this recording; the words that could flip
    with a re-recording (faster or slower, which switch helps alone) are glued too and follow the
    numbers; the typed ones ("no faster", "the register count does not explain it") hold."""
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
    for name in ("flags_both", "flags_neither", "small_serp_x", "small_interior_x", "small_interior_regs",
                 "small_interior_pct"):
        assert f"{{glue:text}}`{name}" in text, name
    for name in ("serp_checked_words", "interior_plain_words", "small_alone_words", "small_both_words"):
        assert f"{{glue:md}}`{name}`" in text, name
    sign = lambda x: "faster" if x >= 1 else "slower"                      # noqa: E731
    assert v["serp_checked_words"].endswith(sign(big["serpentine (checked copies)"]))
    assert v["interior_plain_words"].endswith(sign(big["interior (plain order)"]))
    assert v["small_both_words"].endswith(sign(both(tiles[1]) / neither(tiles[1])))
    assert ("neither switch" in v["small_alone_words"]) == (max(small["serpentine (checked copies)"],
                                                                 small["interior (plain order)"]) <= 1)
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


def _script():
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "ch5_flags.py"
    spec = importlib.util.spec_from_file_location("ch5_flags_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_launch_bounds_control_changes_one_switch_at_a_time():
    """scripts/ch5_flags.py's ``cap`` group: the pitfall, a build one switch (MIN_BLOCKS) away from
    it, and the twin the chapter's pitfall table shows, which differs from that control only in the
    two build switches. Each set of parameters passes its catalog entry's rules, and the switches
    each build records are what the kernel file's #ifndef defaults make of its -D values."""
    s = _script()
    trap, ctl, twin = s.cap_builds()
    src = kc.source("05_register_tiling.cu")
    for b in (trap, ctl, twin):
        catalog.get(b["key"]).validate(b["params"], s.SHAPE)
        seen = _defines(src, MIN_BLOCKS=b["params"]["MIN_BLOCKS"], **b["defines"])
        assert {f: seen[f] for f in s.FLAGS} == b["switches"], b
    assert trap["key"] == "cp_async_pitfall" and trap["params"] == catalog.get("cp_async_pitfall").defaults
    diff = {k for k in trap["params"] if trap["params"][k] != ctl["params"][k]}
    assert diff == {"MIN_BLOCKS"} and trap["switches"] == ctl["switches"]
    assert twin["params"] == ctl["params"] and twin["switches"] != ctl["switches"] and twin["defines"] == {}
    assert twin["params"] == {**catalog.get("cp_async_pitfall").defaults, "MIN_BLOCKS": 1}   # the page's twin


def test_the_flag_script_times_every_build_alike_and_writes_the_cap_group(tmp_path, monkeypatch):
    """The script's loop, with a fake GPU: every build is checked once and timed once per rotation,
    the sets keep their layout (flags, then the medians), and ``cap`` holds the three builds with
    the median of their timings."""
    import types
    s = _script()
    calls = []

    class FakeLaunch:
        def __init__(self, key, defines, params):
            self.tag = (key, tuple(sorted((defines or {}).items())), params["MIN_BLOCKS"], params["BN"], params["BK"])

        def __call__(self, *a):
            pass

        def resources(self):
            return {"registers": 100 + len(self.tag[1]), "local_bytes": 0}

    def prepare(key, shape, extra_defines=None, **params):
        return FakeLaunch(key, extra_defines, params)

    speeds = iter(0.5 + 0.001 * i for i in range(10_000))

    def measure(run, shape, data=None, timed=True, check=True, rounds=3, what=None):
        calls.append("check" if not timed else "time")
        r = next(speeds)
        return types.SimpleNamespace(ratio=r, value=100 * r, reference_value=100.0, rel_err=1e-6)

    monkeypatch.setattr(s.gpu, "live", lambda: True)
    monkeypatch.setattr(s.launch, "prepare", prepare)
    monkeypatch.setattr(s.bench, "measure", measure)
    monkeypatch.setattr(s.bench, "inputs", lambda shape, dtype: None)
    monkeypatch.setattr(s.results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(s.results, "provenance", lambda: {"gpu": "fake"})
    assert s.main(["--rotations", "3"]) == 0
    import json
    doc = json.loads((tmp_path / f"{results.DEFAULT_SLUG}-{s.ARTIFACT}.json").read_text())
    assert calls.count("check") == 4 + 4 + 3 and calls.count("time") == 3 * (4 + 4 + 3)
    for st in doc["sets"]:
        assert [list(r) for r in st["rows"]] == [["flags", "registers", "local_bytes", "rel_err", "timings",
                                                  "ratio", "tflops", "cublas_tflops"]] * 4
        assert [(r["flags"]["SERPENTINE"], r["flags"]["FAST_INTERIOR"]) for r in st["rows"]] == [(1, 1), (1, 0), (0, 1), (0, 0)]
    assert [(r["key"], r["params"]["MIN_BLOCKS"]) for r in doc["cap"]] == \
        [("cp_async_pitfall", 2), ("cp_async", 1), ("cp_async", 1)]
    for r in doc["cap"]:
        assert len(r["timings"]) == 3
        assert r["ratio"] == pytest.approx(statistics.median(t["ratio"] for t in r["timings"]), abs=1e-4)


def test_the_pitfall_sentence_quotes_the_control_once_recorded():
    """Without the ``cap`` group the sentence says the comparison mixes three changes and where the
    switches are timed apart; with it, it quotes the control's, the pitfall's and the twin's ratios
    and their quotient. The page glues it (``lb_control``) in the pitfall's paragraph."""
    from helpers.chapters import register_tiling_prose as prose
    old = prose.launch_bounds_sentence({"sets": []})
    assert "also turns on" in old and "hundredths" in old and "{" not in old and isinstance(old, str)
    cap = [{"ratio": 0.1}, {"ratio": 0.9}, {"ratio": 0.93}]
    new = prose.launch_bounds_sentence({"sets": [], "cap": cap})
    assert "0.900 of cuBLAS" in new and "pitfall's 0.100" in new and "9.0x slower" in new and "0.930" in new
    text = " ".join(_cell("## Pitfall: `__launch_bounds__`").split())
    assert "{glue:md}`lb_control`" in text
    assert prose.prose_values()["lb_control"] == prose.launch_bounds_sentence()
