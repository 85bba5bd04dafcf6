"""Defaults from the autotuner's file (#10 items 5 and 6): helpers.runtime.defaults, through
Kernel.params(), launch.unable and bench's recorded lookups, on CPU with simulated GPUs.

Synthetic tuning documents make the decisions exact; the last tests read the recorded
results/h200-tuning.json (skipped until it exists)."""
from __future__ import annotations

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.models.occupancy import DEVICE_LIMITS
from helpers.runtime import bench, catalog, defaults, gpu, launch, results

SHAPE = [4096, 4096, 4096]
MMA = catalog.get("mma_sync_f16")
L4_LIMIT = DEVICE_LIMITS["sm_89"]["smem_per_block_max"]
# Three mma_sync configurations: the shipped default (192 KB), a 144 KB and a 72 KB one.
MID = {**MMA.defaults, "STAGES": 3}
SMALL = {**MMA.defaults, "BK": 32, "STAGES": 3}


def _rec(p, value, ratio=None):
    return {"kernel": "mma_sync_f16", "params": p, "dtype": "float16", "shape": SHAPE, "metric": "TFLOP/s",
            "value": value, "ratio": ratio if ratio is not None else value / 750.0, "reference_value": 750.0}


def _doc(timed, baseline=None, gpu_name="NVIDIA H200", date="2026-12-01"):
    run = {"kernel": "mma_sync_f16", "shape": SHAPE, "timed": timed,
           "provenance": {"gpu": gpu_name, "date": date, "commit": "abc"}}
    if baseline is not None:
        run["baseline"] = baseline
    return {"provenance": run["provenance"], "runs": [run]}


@pytest.fixture
def env(monkeypatch):
    """Recorded mode; ``use(gpu_name, {slug: doc})`` simulates a GPU (None: none) with these
    tuning documents in place of results/*-tuning.json."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.delenv(defaults.SWITCH_VAR, raising=False)
    gpu.live.cache_clear()
    defaults._CACHE.clear()

    def use(name, docs):
        if name:
            monkeypatch.setenv(gpu.SIMULATE_VAR, name)
        else:
            monkeypatch.delenv(gpu.SIMULATE_VAR, raising=False)
        monkeypatch.setattr(defaults, "tuning_doc", lambda slug: docs.get(slug))
        monkeypatch.setattr(defaults, "_mtime", lambda slug: id(docs.get(slug)))
        defaults._CACHE.clear()
    yield use
    gpu.live.cache_clear()
    defaults._CACHE.clear()


def test_smaller_gpu_gets_the_fastest_configuration_that_fits(env):
    assert MMA.smem(MMA.defaults) > L4_LIMIT >= MMA.smem(SMALL) and MMA.smem(MID) > L4_LIMIT
    env("l4", {"h200": _doc([_rec(MID, 410.0), _rec(SMALL, 380.0), _rec({**SMALL, "GROUP_M": 1}, 370.0)])})
    assert MMA.params() == SMALL                                    # MID is faster but does not fit
    assert launch.unable(MMA) is None                               # no refusal any more
    assert "192 KB" in launch.unable(MMA, MMA.defaults)             # the shipped default, asked for, still is one
    r = defaults.resolve(MMA)
    assert r["why"] == "fits" and "timed on NVIDIA H200 (2026-12-01, results/h200-tuning.json)" in r["source"]
    assert "BK=32 STAGES=3" in defaults.explain(MMA)
    # overrides still vary the shipped defaults: a recorded sweep point keeps its meaning
    assert MMA.params(SWIZZLE=0) == {**MMA.defaults, "SWIZZLE": 0}


def test_the_gpus_own_file_comes_before_the_recording_gpus(env):
    own = {**SMALL, "GROUP_M": 1}
    env("l4", {"h200": _doc([_rec(SMALL, 380.0)]), "l4": _doc([_rec(own, 120.0)], gpu_name="NVIDIA L4")})
    assert MMA.params() == own and "NVIDIA L4" in defaults.resolve(MMA)["source"]


def test_nothing_fits_keeps_the_refusal(env):
    env("l4", {"h200": _doc([_rec(MID, 410.0)])})
    assert MMA.params() == MMA.defaults and "192 KB" in launch.unable(MMA)
    env("l4", {})
    assert MMA.params() == MMA.defaults and "192 KB" in launch.unable(MMA)


def test_a_capability_refusal_stays_one(env):
    env("t4", {"h200": _doc([_rec(SMALL, 380.0)])})
    assert MMA.params() == MMA.defaults and "needs sm_80" in launch.unable(MMA)


def test_a_tuned_winner_replaces_the_default_only_when_it_beat_it_in_the_same_run(env):
    base = _rec(MMA.defaults, 400.0)
    env("h200", {"h200": _doc([_rec(MID, 420.0), _rec(SMALL, 380.0)], baseline=base)})
    assert MMA.params() == MID and defaults.resolve(MMA)["why"] == "tuned"
    assert "0.56 against the shipped default's 0.5333 of cuBLAS" in defaults.resolve(MMA)["source"]
    env("h200", {"h200": _doc([_rec(MID, 390.0), _rec(SMALL, 380.0)], baseline=base)})
    assert MMA.params() == MMA.defaults                             # the default won
    env("h200", {"h200": _doc([_rec(MID, 400.0 * (1 + defaults.MARGIN / 2))], baseline=base)})
    assert MMA.params() == MMA.defaults                             # faster, but within the margin
    assert "beat the default by more than" in defaults.explain(MMA)
    env("h200", {"h200": _doc([_rec(MID, 400.0), _rec(MMA.defaults, 385.0)])})
    assert MMA.params() == MID                                      # the default timed among the others
    env("h200", {"h200": _doc([_rec(MID, 900.0)])})
    assert MMA.params() == MMA.defaults                             # never timed beside the default: not compared
    # a re-run whose baseline was the previous winner keeps it while nothing beats it ...
    env("h200", {"h200": _doc([_rec(MID, 420.0), _rec(SMALL, 380.0)], baseline=_rec(MID, 420.0))})
    assert MMA.params() == MID and "the default of that run's 0.56" in defaults.resolve(MMA)["source"]
    # ... and moves on to what beat it in that run
    env("h200", {"h200": _doc([_rec(MID, 405.0), _rec(SMALL, 430.0)], baseline=_rec(MID, 405.0))})
    assert MMA.params() == SMALL


def test_recorded_mode_reads_the_recording_gpus_file(env):
    env(None, {"h200": _doc([_rec(MID, 420.0)], baseline=_rec(MMA.defaults, 400.0))})
    assert MMA.params() == MID
    env(None, {"a100": _doc([_rec(MID, 420.0)], baseline=_rec(MMA.defaults, 400.0))})
    assert MMA.params() == MMA.defaults


def test_other_shapes_stale_parameters_and_the_switch(env, monkeypatch):
    other = _doc([_rec(SMALL, 380.0)])
    other["runs"][0]["shape"] = [1024, 1024, 1024]                  # a small live tune: not the book's defaults
    env("l4", {"h200": other})
    assert MMA.params() == MMA.defaults
    stale = _doc([_rec({**SMALL, "OLD": 1}, 380.0), _rec({**SMALL, "BM": 96}, 390.0)])
    env("l4", {"h200": stale})                                      # unknown parameter, value off the choices
    assert MMA.params() == MMA.defaults
    env("l4", {"h200": _doc([_rec(SMALL, 380.0)])})
    monkeypatch.setenv(defaults.SWITCH_VAR, "0")
    assert MMA.params() == MMA.defaults and "192 KB" in launch.unable(MMA)


def test_transpose_kernels_are_left_alone(env):
    env("l4", {"h200": _doc([_rec(SMALL, 380.0)])})
    for spec in catalog.KERNELS.values():
        if spec.op != "gemm":
            assert spec.params() == spec.defaults


def test_bench_reads_a_tuned_default_from_the_tuning_file(env):
    """A tuned default that results/h200.json never recorded is still a recorded number:
    bench finds it among the tuner's timed configurations, stamped with that run."""
    odd = {**SMALL, "GROUP_M": 1, "LOAD_SPREAD": 0}
    assert results.lookup("mma_sync_f16", odd, "float16", SHAPE) is None
    env("l4", {"h200": _doc([_rec(odd, 377.0, ratio=0.5)])})
    r = bench.gemm(["mma_sync_f16"])[0]
    assert r["params"] == odd and r["value"] == 377.0 and r["source"] == "recorded" and not r.get("unable")
    assert r["from"] == "results/h200-tuning.json" and r["recorded"]["date"] == "2026-12-01"
    assert ("mma_sync_f16 at the tuned default: timed by the autotuner (results/h200-tuning.json, 2026-12-01)"
            in bench.where([r]))


RECORDED = defaults.tuning_doc("h200")
needs_file = pytest.mark.skipif(RECORDED is None, reason="results/h200-tuning.json not recorded yet")


@needs_file
@pytest.mark.parametrize("name", [None, "t4", "l4", "a100", "h200"])
def test_every_default_the_book_shows_has_a_recorded_number(monkeypatch, name):
    """With the recorded tuning file, whatever default each GEMM kernel gets on each simulated
    GPU (and in recorded mode) either is refused with a reason or has a recorded measurement:
    changing a default must never turn a chapter's number into 'not recorded'."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.delenv(defaults.SWITCH_VAR, raising=False)
    if name:
        monkeypatch.setenv(gpu.SIMULATE_VAR, name)
    else:
        monkeypatch.delenv(gpu.SIMULATE_VAR, raising=False)
    gpu.live.cache_clear()
    try:
        for spec in catalog.KERNELS.values():
            if spec.op != "gemm" or defaults.resolve(spec) is None:
                continue
            p = spec.params()
            assert launch.unable(spec) is None, (spec.key, name)
            rec = results.lookup(spec.key, p, spec.dtype, SHAPE) or defaults.lookup(spec.key, p, spec.dtype, SHAPE)
            assert rec is not None and rec["value"], (spec.key, name, p)
    finally:
        gpu.live.cache_clear()


@needs_file
def test_recorded_file_on_an_l4(monkeypatch):
    """With the H200's recorded tuning file, an L4 runs mma_sync (both dtypes) at the fastest
    configuration timed on the H200 within its 99 KB, instead of refusing it."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.setenv(gpu.SIMULATE_VAR, "l4")
    gpu.live.cache_clear()
    try:
        for key in ("mma_sync_f16", "mma_sync_bf16"):
            spec = catalog.get(key)
            p = spec.params()
            assert spec.smem(p) <= L4_LIMIT and launch.unable(spec) is None
            timed = [r for run in RECORDED["runs"] if run["kernel"] == key for r in defaults.run_records(run)
                     if spec.smem(r["params"]) <= L4_LIMIT]
            assert p == max(timed, key=defaults.speed)["params"]
    finally:
        gpu.live.cache_clear()


def test_the_live_slider_starts_at_the_default_this_gpu_gets(env, monkeypatch):
    """On an L4 the mma_sync slider starts at the configuration that fits, not at the shipped
    192 KB default the L4 would refuse."""
    from helpers.chapters import common
    from helpers.figures import show
    env("l4", {"h200": _doc([_rec(MID, 410.0), _rec(SMALL, 380.0)])})
    monkeypatch.setattr(show, "live_controls", lambda: True)
    monkeypatch.setattr(common, "display", lambda *a, **k: None)
    asked = []

    def prepare(key, shape, **p):
        asked.append(p)
        raise ValueError("stop here: no GPU in this test")
    monkeypatch.setattr(launch, "prepare", prepare)
    assert common.live_slider("mma_sync_f16", (4096, 4096, 4096)) is not None
    assert asked == [SMALL]
