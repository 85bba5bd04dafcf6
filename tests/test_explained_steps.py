"""Issue 14, item 4 for chapters 3, 6 and 7: what each claimed cause rests on (CPU).

* Chapter 3: the recorded Nsight Compute panels show what the chapter says about
  smem_tiled against vec4 (more LSU instructions and L1 data-pipe wavefronts per FFMA,
  MIO-throttle stalls first, DRAM far from busy), and the LSU estimate of
  helpers.models.counters matches the count of the compiled loops.
* Chapter 6: the panels show what the chapter says about WMMA against mma.sync.
* Chapter 7: the ladder from WMMA to mma.sync starts at WMMA's configuration, changes one
  parameter per rung, ends at chapter 7's shipped defaults, and every rung passes the
  catalog's rules; the recorded-mode display works without a GPU.
"""
from __future__ import annotations

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch03_smem_tiling as ch3, ch06_wmma as ch6, ch07_mma_sync as ch7
from helpers.models import counters, diagnosis
from helpers.runtime import catalog, panels, results

SHAPE = (4096, 4096, 4096)


def _rows(mod):
    rows, where = mod.counter_rows(SHAPE)
    assert where.startswith("recorded with Nsight Compute on NVIDIA H200 (")
    return counters.by_field(rows)


def test_ch3_counters_show_more_l1_work_per_fma_in_smem_tiled():
    r = _rows(ch3)
    # The compiled loops (SASS, sm_90): vec4 issues 5 LDG.128 per 16 FFMA; smem_tiled per 32 FFMA
    # 32 LDS + 8 LDS.128 + 2 STS + 2 LDG. The % of peak estimate must agree within 2 %.
    assert r["lsu_per_op"]["a"] == pytest.approx(5 / 16, rel=0.02)
    assert r["lsu_per_op"]["b"] == pytest.approx(44 / 32, rel=0.02)
    assert r["l1_waves_per_op"]["b / a"] > 1.2
    assert r["shared_waves_per_op"]["b"] > 1.0 and r["shared_waves_per_op"]["a"] < 0.01
    assert r["l1_pct"]["a"] >= diagnosis.BUSY and r["l1_pct"]["b"] >= diagnosis.BUSY
    assert r["duration_us"]["b / a"] > 1.2
    assert max(r["dram_pct"]["a"], r["dram_pct"]["b"]) < diagnosis.BUSY


def test_ch3_top_stalls_are_what_the_text_names():
    runs, _, _ = panels.recorded()
    top = {k: max(diagnosis.stalls(next(x for x in runs if x["key"] == k)["metrics"]).items(), key=lambda kv: kv[1])[0]
           for k in ("vec4", "smem_tiled")}
    assert top == {"vec4": "long_scoreboard", "smem_tiled": "mio_throttle"}


def test_ch6_counters_show_an_idle_tensor_pipe_not_shared_memory():
    r = _rows(ch6)
    runs, _, _ = panels.recorded()
    hm = [counters.math_instructions(next(x for x in runs if x["key"] == k)["metrics"], SHAPE, "hmma")
          for k in ("wmma_f16", "mma_sync_f16")]
    assert hm[0] == hm[1] == SHAPE[0] * SHAPE[1] * SHAPE[2] / (16 * 8 * 16)
    assert r["tensor_pct"]["a"] < r["tensor_pct"]["b"]
    assert r["inst_per_op"]["a"] > 1.5 * r["inst_per_op"]["b"]
    assert r["shared_waves_per_op"]["b / a"] == pytest.approx(1.0, abs=0.05)
    assert r["conflict_share"]["a"] < diagnosis.CONFLICT_SHARE
    assert r["l2_pct"]["a"] >= diagnosis.BUSY > r["l2_pct"]["b"]
    assert r["stall:math_pipe_throttle"]["b"] > 3 * r["stall:math_pipe_throttle"]["a"]


def test_compare_relative_rows_and_zero_baseline():
    a = {"x": 2.0, "y": 0.0, "stalls": {"barrier": 1.0}}
    b = {"x": 3.0, "y": 5.0, "stalls": {}}
    rows = counters.by_field(counters.compare(a, b, [("x", "x", 2, "relative"), ("y", "y", 2),
                                                     ("stall:barrier", "b", 2)]))
    assert rows["x"]["a"] == 1.0 and rows["x"]["b"] == 1.5
    assert rows["y"]["b / a"] is None
    assert rows["stall:barrier"]["b"] == 0.0
    with pytest.raises(ValueError):
        counters.math_instructions({}, SHAPE, "dmma")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ladder_changes_one_parameter_per_rung(dtype):
    rungs = ch7.ladder_rungs(dtype)
    wk, mk = ch7.LADDER_KEYS[dtype]
    w, m = catalog.get(wk), catalog.get(mk)
    assert rungs[0]["key"] == wk and rungs[0]["params"] == w.defaults
    assert all(r["key"] == mk for r in rungs[1:])
    first = rungs[1]["params"]
    for name in ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP_M"):      # what WMMA shares
        assert first[name] == w.defaults[name], name
    for a, b in zip(rungs[1:], rungs[2:]):
        diff = {k for k in a["params"] if a["params"][k] != b["params"][k]}
        assert len(diff) == 1 and b["change"].split()[0] in diff, (a, b)
    assert rungs[-1]["params"] == m.defaults
    ch7.ladder_check(rungs, SHAPE)
    for r in rungs:                    # within the sliders' values (test_rules_vs_kernels covers them)
        spec = catalog.get(r["key"])
        assert all(v in spec.choices[k] for k, v in r["params"].items()), r


def test_ladder_rejects_a_bad_rung():
    bad = [{**ch7.ladder_rungs()[1], "params": {**ch7.LADDER_FIRST, "BM": 64, "BN": 64}}]
    with pytest.raises(ValueError, match="ladder rung 1"):
        ch7.ladder_check(bad, SHAPE)


def test_ladder_recorded_mode_reuses_the_sweep_records(monkeypatch):
    monkeypatch.setattr(ch7.gpu, "live", lambda: False)
    recs, where, short = ch7.ladder_results("float16", SHAPE)
    rows = ch7.ladder_rows(recs)
    assert [r["rung"] for r in rows] == list(range(len(ch7.ladder_rungs())))
    assert "recorded" in short or "recorded" in where
    assert rows[0]["ratio"] is not None and rows[-1]["ratio"] is not None
    for a, b in zip(rows, rows[1:]):
        if b["step"] is not None:
            over = next(r for r in rows if r["rung"] == b["over"])
            assert b["step"] == pytest.approx(b["ratio"] - over["ratio"], abs=1e-4)
            if b["TFLOP/s"] is not None and over["TFLOP/s"] is not None:   # the same step without cuBLAS
                assert b["step TFLOP/s"] == pytest.approx(b["TFLOP/s"] - over["TFLOP/s"], abs=0.06)


def test_recorded_ladder_matches_the_rungs_and_has_provenance():
    from helpers.runtime import results
    doc = results.artifact(ch7.LADDER_ARTIFACT)
    if doc is None:
        pytest.skip(f"results/{results.DEFAULT_SLUG}-{ch7.LADDER_ARTIFACT}.json is not recorded yet "
                    "(python scripts/record_ladder.py on a GPU)")
    assert set(results.load()["provenance"]) <= set(doc["provenance"])
    assert list(doc["shape"]) == list(SHAPE)
    for dtype, recs in doc["runs"].items():
        assert [(r["kernel"], r["params"]) for r in recs] == \
            [(r["key"], r["params"]) for r in ch7.ladder_rungs(dtype)], f"{dtype}: recorded rungs are stale"
        for r in recs:
            assert r["ratio"] == pytest.approx(r["value"] / r["reference_value"], rel=2e-3)


def test_counter_captions_name_the_recorded_parameters():
    """Chapters 3 and 6 name in their captions the parameters the panels were recorded at."""
    import json
    doc = json.loads((results.RESULTS_DIR / "h200-ncu-panels.json").read_text())
    params = {r["key"]: r["params"] for r in doc["runs"]}
    assert params["smem_tiled"] == {"TILE": 32} and params["vec4"] == {"BLOCK_X": 32, "BLOCK_Y": 8}
    # chapter 6's caption: "WMMA 128 x 128 x 32 blocks of 4 warps, 3 stages; mma.sync 128 x 256 x 64
    # blocks of 8 warps, 4 stages"
    w, m = params["wmma_f16"], params["mma_sync_f16"]
    assert (w["BM"], w["BN"], w["BK"], w["STAGES"], (w["BM"] // w["WM"]) * (w["BN"] // w["WN"])) == (128, 128, 32, 3, 4)
    assert (m["BM"], m["BN"], m["BK"], m["STAGES"], (m["BM"] // m["WM"]) * (m["BN"] // m["WN"])) == (128, 256, 64, 4, 8)


def test_verdicts_glued_from_the_record_follow_their_numbers():
    """The landing page's heaven 9 sentence and chapter 6's sweep sentence are computed, so a
    re-recording that reorders the numbers changes the words with them."""
    from helpers.chapters import ch06_wmma, intro
    assert intro.h9_words(0.53, 0.56, 0.045).startswith("Heaven 9 sits below heaven 7: ")
    assert "by more than the spread" in intro.h9_words(0.50, 0.56, 0.045)
    assert "level with or above" in intro.h9_words(0.57, 0.56, 0.045)
    assert ch06_wmma.sweep_verdict([0.40, 0.44], 0.44) == "no configuration beats the defaults"
    assert ch06_wmma.sweep_verdict([0.40, 0.45, 0.46], 0.44).startswith("2 of 3 configurations come out above")


def test_block_order_reading_follows_the_spread():
    """Chapter 7 says plain block order cannot be told apart only while its gap to the default is
    within the default kernel's own spread between recorded runs."""
    from helpers.chapters import prose_ch07
    assert "cannot say" in prose_ch07.group1_reading(0.54, 0.56, 0.045)
    assert prose_ch07.group1_reading(0.50, 0.56, 0.045).endswith("plain order is slower at 4096³")
    assert prose_ch07.group1_reading(0.62, 0.56, 0.045).endswith("plain order is faster at 4096³")


def test_one_rule_names_a_change_for_every_chapter():
    """helpers.chapters.verdicts.change_kind: within the bound (inclusive), else the sign."""
    from helpers.chapters.verdicts import STEP_NOISE, change_kind
    assert change_kind(0.0) == change_kind(STEP_NOISE) == change_kind(-STEP_NOISE) == "within"
    assert change_kind(0.031) == "gain" and change_kind(-0.031) == "loss"
    assert change_kind(0.05, bound=0.1) == "within"
