"""The autotuner's CPU half (heaven 8): the space, pruning by the catalog's rules, the cost
model and its ranking, the best configuration that fits a smaller GPU (simulated limits),
and how the model ranks the sweeps recorded on the H200."""
import json
import random

import pytest

from helpers.models import tuning
from helpers.models.occupancy import DEVICE_LIMITS
from helpers.runtime import catalog, compile as kc, results, tune

SHAPE = (4096, 4096, 4096)


def test_space_is_the_product_of_the_choices():
    s = tuning.space({"A": (1, 2), "B": (3, 4, 5)}, {"A": 0, "B": 0, "C": 9})
    assert len(s) == 6 and {"A": 2, "B": 5, "C": 9} in s and all(p["C"] == 9 for p in s)


def test_pruning_is_the_catalogs_validation():
    """Every survivor passes Kernel.validate; a sample of the refused fails it."""
    ok, refused = tune.candidates("mma_sync_f16", SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    spec = catalog.get("mma_sync_f16")
    assert len(ok) + refused == len(tuning.space(spec.slider_choices, spec.defaults)) and ok and refused
    assert spec.defaults in ok
    everything = tuning.space(spec.slider_choices, spec.defaults)
    bad = [p for p in everything if p not in ok]
    for p in random.Random(0).sample(bad, 20):
        with pytest.raises(ValueError):
            spec.validate(p, SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])


def test_a_smaller_gpu_prunes_more():
    big, _ = tune.candidates("mma_sync_f16", SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    small, _ = tune.candidates("mma_sync_f16", SHAPE, smem_limit=DEVICE_LIMITS["sm_86"]["smem_per_block_max"])
    spec = catalog.get("mma_sync_f16")
    assert 0 < len(small) < len(big)
    assert all(spec.smem(p) <= DEVICE_LIMITS["sm_86"]["smem_per_block_max"] for p in small)
    assert spec.smem(spec.defaults) > DEVICE_LIMITS["sm_86"]["smem_per_block_max"]   # the default does not fit


def _fake_res(configs, spill_every=0):
    return [{"registers": 200, "spills": (4 if spill_every and i % spill_every == 0 else 0)}
            for i, _ in enumerate(configs)]


def test_rank_drops_spills_and_orders_by_score():
    ok, _ = tune.candidates("mma_sync_f16", SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    ok = ok[:60]
    ranked = tune.rank("mma_sync_f16", ok, SHAPE, limits=DEVICE_LIMITS["sm_90"], sms=132, res=_fake_res(ok, 3))
    assert len(ranked) == len(ok) - len(range(0, len(ok), 3))
    assert all(a["score"] >= b["score"] for a, b in zip(ranked, ranked[1:]))
    assert all(0 < it["score"] <= 1 for it in ranked)


def test_score_terms():
    f = tuning.features({"BM": 128, "BN": 256, "STAGES": 4}, SHAPE, threads=256, smem=196608, registers=232,
                        in_bytes=2, sms=132, limits="sm_90")
    assert f["blocks_per_sm"] == 1 and f["tiles"] == 512 and f["waves"] == 4
    assert f["wave_eff"] == pytest.approx(512 / (4 * 132))
    assert f["i_block"] == pytest.approx(2 * 128 * 256 / (384 * 2))
    assert tuning.score(f, i_need=1.0) == pytest.approx(f["wave_eff"])          # reuse and hiding saturate
    f2 = {**f, "in_flight": tuning.W_NEED / 2}
    assert tuning.score(f2, i_need=1.0) == pytest.approx(f["wave_eff"] / 2)


def test_spearman():
    assert tuning.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert tuning.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert tuning.spearman([1, 1, 2], [5, 5, 9]) == pytest.approx(1.0)


def test_pick_is_the_head_plus_a_seeded_sample():
    ranked = [{"params": {"i": i}, "score": 1 - i / 100} for i in range(50)]
    a, b = tune.pick(ranked, 5, 4, seed=1), tune.pick(ranked, 5, 4, seed=1)
    assert a == b and a[:5] == ranked[:5] and len(a) == 9 and all(x in ranked[5:] for x in a[5:])


def test_best_fitting_prefers_the_timed_winner_that_fits():
    spec = catalog.get("mma_sync_f16")
    limit = DEVICE_LIMITS["sm_86"]["smem_per_block_max"]
    small = {**spec.defaults, "BK": 32, "STAGES": 3, "BN": 128}
    doc = {"runs": [{"kernel": "mma_sync_f16", "timed": [
        {"params": spec.defaults, "value": 400.0}, {"params": small, "value": 350.0}]}]}
    assert spec.smem(small) <= limit < spec.smem(spec.defaults)
    assert tune.best_fitting("mma_sync_f16", limit, doc=doc) == small
    assert tune.best_fitting("mma_sync_f16", 10 ** 6, doc=doc) == spec.defaults
    ranked = [{"params": spec.defaults}, {"params": small}]
    assert tune.best_fitting("mma_sync_f16", limit, ranked=ranked) == small
    assert tune.best_fitting("mma_sync_f16", 1024, ranked=ranked) is None


def test_pre_rank_orders_the_fp32_space_without_nvcc():
    ok, refused = tune.candidates("cp_async", SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    assert len(ok) > 10000 and refused > len(ok)             # far too many to compile-check
    head = tune.pre_rank("cp_async", ok[:3000], SHAPE, sms=132, limits=DEVICE_LIMITS["sm_90"])
    assert head and all(a["score"] >= b["score"] for a, b in zip(head, head[1:]))


@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: registers come from nvcc -Xptxas -v")
def test_model_against_the_recorded_h200_sweep():
    """The model's order of the mma.sync sweep recorded on the H200 (results/h200.json), with
    registers from nvcc and chapter 7's ldmatrix bank model: better than chance, and the
    measured slowest points (the unswizzled layout's 8-way conflicts) ranked last. Without the
    bank model they tie with the best: the model knows only what it is told."""
    from helpers.chapters.ch08_profiling import TUNE_SHARED_EFF
    d = results.load()
    recs = [r for r in d["runs"] if r["kernel"] == "mma_sync_f16" and r["shape"] == list(SHAPE)]
    assert len(recs) >= 10
    params = [r["params"] for r in recs]
    res = tune.resources("mma_sync_f16", params)
    rhos = {}
    for name, eff in (("plain", None), ("banks", TUNE_SHARED_EFF["mma_sync_f16"])):
        ranked = tune.rank("mma_sync_f16", params, SHAPE, limits=DEVICE_LIMITS["sm_90"], sms=132, res=res,
                           shared_eff=eff)
        by = {json.dumps(it["params"], sort_keys=True): it["score"] for it in ranked}
        pairs = [(by[json.dumps(r["params"], sort_keys=True)], r["value"]) for r in recs]
        rhos[name] = tuning.spearman([a for a, _ in pairs], [b for _, b in pairs])
        bottom = [it["params"] for it in ranked[-sum(r["params"]["SWIZZLE"] == 0 for r in recs):]]
    # The unswizzled points (8-way conflicts) are the measured slowest, and the model with the
    # bank model ranks exactly them last (their order among themselves is within 1 %: noise).
    unswizzled = sorted(recs, key=lambda r: r["value"])[:len(bottom)]
    assert all(r["params"]["SWIZZLE"] == 0 for r in unswizzled)
    assert all(b["SWIZZLE"] == 0 for b in bottom), bottom
    assert rhos["banks"] > rhos["plain"] > 0, rhos


def test_neighbours_move_one_parameter_one_step():
    choices = {"A": (1, 2, 4), "B": (8, 16)}
    n = tune.neighbours({"A": 2, "B": 8, "C": 0}, choices)
    assert sorted((q["A"], q["B"]) for q in n) == [(1, 8), (2, 16), (4, 8)] and all(q["C"] == 0 for q in n)
    assert tune.neighbours({"A": 3, "B": 16}, choices) == [{"A": 3, "B": 8}]   # off-grid A: not moved


def test_diverse_head_keeps_every_tile_shape():
    """Equal scores (a flat model) must not fill the head with the first tile shape."""
    ranked = [{"params": {"BM": bm, "BN": bn, "X": x}, "score": 0.5} for bm in (64, 128) for bn in (64, 256)
              for x in range(10)]
    head = tune.diverse_head(ranked, 8)
    assert len(head) == 8 and len({(h["params"]["BM"], h["params"]["BN"]) for h in head}) == 4
    best = [{"params": {"BM": 64, "BN": 64, "X": 0}, "score": 0.9}] + ranked
    assert tune.diverse_head(best, 4)[0]["score"] == 0.9


def test_tune_times_the_default_and_climbs_from_the_best(monkeypatch):
    """With a fake GPU whose speed peaks at one configuration far from the model's picks,
    the tuner times the default (baseline), then refines step by step towards the peak."""
    key = "mma_sync_f16"
    spec = catalog.get(key)
    ok, _ = tune.candidates(key, SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    peak = {**spec.defaults, "STAGES": 2, "GROUP_M": 1}
    assert peak in ok and peak != spec.defaults

    ch = spec.slider_choices

    def speed(p):   # fastest at `peak`, 5 % slower per step away from it along any slider
        return 400.0 * 0.95 ** sum(abs(list(ch[k]).index(p[k]) - list(ch[k]).index(peak[k])) for k in ch)

    monkeypatch.setenv("GEMM_BOOK_TUNED_DEFAULTS", "0")   # the baseline is the shipped default, not the recorded file's pick
    monkeypatch.setattr(tune.gpu, "live", lambda: True)
    monkeypatch.setattr(tune.gpu, "device_info", lambda: {"cc": (9, 0), "sms": 132, "name": "fake"})
    monkeypatch.setattr(tune.gpu, "target", lambda: None)
    monkeypatch.setattr(tune.launch, "device_limits", lambda arch=None: DEVICE_LIMITS["sm_90"])
    monkeypatch.setattr(tune.results, "provenance", lambda: {"gpu": "fake"})
    monkeypatch.setattr(tune, "resources", lambda k, configs, arch, progress=False: _fake_res(configs))
    monkeypatch.setattr(tune, "_pool_map", lambda *a, **k: [])
    monkeypatch.setattr(tune.bench, "gemm", lambda items, shape, rounds=3, budget_ms=400.0: [
        {"params": p, "value": speed(p), "ratio": speed(p) / 700.0} for _, p in items])
    doc = tune.tune(key, SHAPE, top=2, sample=1, progress=False, local_steps=5)
    stages = [r["stage"] for r in doc["timed"]]
    assert doc["baseline"]["params"] == spec.defaults and "local" in stages
    assert doc["best"]["params"] == peak, doc["best"]
    assert doc["space"] == len(ok) + doc["refused"] and len(doc["timed"]) < len(ok) // 4


def test_the_final_race_undoes_a_lucky_single_pass(monkeypatch):
    """A configuration that measured 4 % fast in its one pass (luck) but is 2 % slower than the
    true best in every later round must not be the pick: the race re-times the leaders side by
    side, keeps the pass's number as search_ratio, and picks by the race."""
    key = "mma_sync_f16"
    spec = catalog.get(key)
    ok, _ = tune.candidates(key, SHAPE, smem_limit=DEVICE_LIMITS["sm_90"]["smem_per_block_max"])
    true_best, lucky = {**spec.defaults, "STAGES": 3}, {**spec.defaults, "GROUP_M": 1}
    assert true_best in ok and lucky in ok
    true = lambda p: 0.56 if p == true_best else 0.55 if p == lucky else 0.50      # noqa: E731
    seen, lucky_once = [], []

    def fake_gemm(items, shape, rounds=3, budget_ms=400.0):
        out = []
        for _, p in items:
            first = p == lucky and not lucky_once
            lucky_once.extend([True] if first else [])
            seen.append(p)
            r = 0.58 if first else true(p)
            out.append({"params": p, "value": r * 700.0, "ratio": r, "ms": 1.0 / r})
        return out
    monkeypatch.setattr(tune.gpu, "live", lambda: True)
    monkeypatch.setattr(tune, "_pool_map", lambda *a, **k: [])
    monkeypatch.setattr(tune.bench, "gemm", fake_gemm)
    timed = [{"params": p, **fake_gemm([(key, p)], SHAPE)[0]} for p in (spec.defaults, true_best, lucky)]
    assert max(timed, key=tune.speed)["params"] == lucky            # the single pass is fooled
    assert tune.final_race(key, timed, SHAPE, finalists=2, rounds=3, progress=False) >= 1
    best = max(timed, key=tune.speed)
    assert best["params"] == true_best and best["raced"] and best["rounds"] == 3
    luck = next(r for r in timed if r["params"] == lucky)
    assert luck["search_ratio"] == 0.58 and luck["ratio"] == 0.55 and luck["round_ratios"] == [0.55] * 3
    # confirm() races too: every configuration once per round, the order rotated each round
    seen.clear()
    recs = tune.confirm(key, [true_best, lucky, spec.defaults], SHAPE, progress=False, rounds=2)
    assert [r["ratio"] for r in recs] == [0.56, 0.55, 0.50]
    assert seen == [true_best, lucky, spec.defaults, lucky, spec.defaults, true_best]
    with pytest.raises(ValueError, match="rounds"):
        tune.race(key, [true_best], SHAPE, rounds=0, progress=False)


def test_accuracy_gives_a_row_per_confirmation_run():
    """The recorded exhaustive file has a first (3 rounds) and a second (7 rounds)
    confirmation run: the table shows both, each with the pick's rank in that run."""
    full = json.loads((results.RESULTS_DIR / "h200-tuning-exhaustive.json").read_text())
    tuned = json.loads((results.RESULTS_DIR / "h200-tuning.json").read_text())
    rows = tune.accuracy(tuned, full)
    assert [r["compared in"].split(":")[0] for r in rows] == ["run 1", "run 2"]
    for r, src in zip(rows, (full["runs"][0]["confirmed"], full["runs"][0]["reconfirmed"])):
        assert r["best TFLOP/s"] == max(src, key=tune.speed)["value"]
        assert abs(r["pick / best"] - r["tuner's pick (of cuBLAS)"] / r["best (of cuBLAS)"]) < 1e-3
        assert 0 < r["pick / best"] <= 1 and r["rank of the pick"] >= 1
        assert f"run {rows.index(r) + 1}: {len(src)} configurations" in r["compared in"]
    del full["runs"][0]["reconfirmed"]
    assert len(tune.accuracy(tuned, full)) == 1


def test_the_recorded_picks_won_their_races_and_their_confirmations():
    """The recorded mma.sync searches ended in a race: each pick was raced, and its ratio is the
    median of its rounds; it timed at most a quarter of the valid space and was raced in both
    confirmation races (the 2 % bar is the next test)."""
    import statistics
    tuned = json.loads((results.RESULTS_DIR / "h200-tuning.json").read_text())
    raced = [r for r in tuned["runs"] if r.get("final")]
    assert {r["kernel"] for r in raced} >= {"mma_sync_f16", "mma_sync_bf16"}
    for run in raced:
        best = max(run["timed"], key=tune.speed)
        assert best["raced"] and best["params"] == run["best"]["params"]
        assert abs(statistics.median(best["round_ratios"]) - best["ratio"]) < 1e-3
        assert len(best["round_ratios"]) == run["final"]["rounds"]
    rows = tune.accuracy(tuned, json.loads((results.RESULTS_DIR / "h200-tuning-exhaustive.json").read_text()))
    assert len(rows) == 2
    for row in rows:
        assert row["share timed"] <= 0.25 and row["rank of the pick"] is not None, row


@pytest.mark.xfail(strict=True, reason="the tuning record of 953955a7da3f: its pick ran at 0.976 and 0.969 of "
                   "the best in the two confirmation races (3b56e4442793), under the 0.98 bar; the races' own "
                   "leaders swap places between them by as much (the single-round leader placed sixth and seventh)")
def test_the_recorded_pick_is_within_two_percent_of_each_race():
    """The bar the tuner is held to: within 2 % of the best configuration of each confirmation race."""
    tuned = json.loads((results.RESULTS_DIR / "h200-tuning.json").read_text())
    rows = tune.accuracy(tuned, json.loads((results.RESULTS_DIR / "h200-tuning-exhaustive.json").read_text()))
    assert all(row["pick / best"] >= 0.98 for row in rows), rows


def test_the_search_table_names_the_winner_against_the_default_it_was_timed_beside():
    """The winner column says what the winner changes from the default the run timed beside it
    (the default in force then), never "the default itself" for a configuration that beat it:
    mma_sync_bf16's recorded winner (STAGES = 4, the catalog's own default) beat the default in
    force (STAGES = 3, an earlier tuning's pick), so its row names STAGES=4."""
    from helpers.chapters import ch08_profiling as ch8
    from helpers.figures import tuning as tuning_fig
    runs, _ = ch8.tuning_recorded()
    if not runs:
        pytest.skip("no tuning record")
    for run, row in zip(runs, ch8.search_rows(runs)):
        best, base = tuning_fig.measured(run)[0], run.get("baseline")
        if base is None:
            continue
        same = all(base["params"].get(k) == v for k, v in best["params"].items())
        assert (row["winner"] == ch8.SAME_AS_DEFAULT) == same, (run["kernel"], row["winner"])
        if not same:
            assert all(f"{k}={v}" in row["winner"] for k, v in best["params"].items() if base["params"].get(k) != v)
    for run, line in zip(runs, ch8.summary_lines(runs, "here")[1:]):
        base = run.get("baseline")
        if base and tuning_fig.measured(run)[0]["params"] != base["params"]:
            assert "by the default itself" not in line, line
            assert "by the default changed to " in line, line      # not "by the default with": it lost


def test_the_search_table_prints_counts_as_integers():
    """The configuration count is a count, not a ratio: a column whose name merely contains the
    letters "ratio" (configurations) keeps its integers (it printed 3.11e+05 for 311040)."""
    from helpers.chapters import ch08_profiling as ch8
    from helpers.figures import show
    rows = [{"kernel": "k", "space": 311040, "refused": 275200, "ratio": 0.95432}]
    md = show.table_markdown(rows, {**{k: ch8.SEARCH_COLUMNS[k] for k in ("kernel", "space", "refused")},
                                    "ratio": "ratio to cuBLAS"}, "c")
    assert "| 311040 | 275200 | 0.954 |" in md, md
