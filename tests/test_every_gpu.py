"""Every reader's GPU: what each chapter runs live and what it shows recorded, on the GPUs
readers have (issue #13). Runs on CPU through GEMM_BOOK_SIMULATE (helpers.runtime.gpu.SIMULATED).

The expected decisions are written out by hand below, from what each kernel needs
(compute capability: cp.async, bf16 and mma.sync need sm_80, sm_90a code needs 9.0
exactly; shared memory per block: a T4 allows 64 KB, an L4 99 KB, an A100 163 KB), so a
change of a catalog entry's min_cc or of a limit in the table shows up here.
"""
from __future__ import annotations

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import common
from helpers.figures import show, sweep as sweep_fig
from helpers.runtime import bench, catalog, defaults, gpu, launch, sweep

# The chapters whose decisions are written out here (chapter 8 has no kernels of its own).
MINE = (0, 1, 2, 3, 4, 5, 6, 7, 9, 10)
KERNELS = {k: s for k, s in catalog.KERNELS.items() if s.chapter in MINE}
CH10 = {k for k, s in KERNELS.items() if s.chapter == 10}
# With the H200's tuning file, a GPU whose shared memory cannot hold mma_sync's shipped 192 KB
# default gets the fastest timed configuration that fits instead (helpers.runtime.defaults).
TUNED = defaults.tuning_doc("h200") is not None
# Kernels each GPU can NOT run at their default parameters (on that GPU), and why (a word of the reason).
CANNOT = {
    "t4": {**{k: "sm_80" for k in ("cp_async", "cp_async_pitfall", "wmma_f16", "wmma_bf16",
                                   "wmma_wrong_layout_pitfall", "wmma_acc_f16_pitfall",
                                   "mma_sync_f16", "mma_sync_bf16", "any_shape_f16", "any_shape_bf16",
                                   "any_regs_f16", "any_regs_bf16")},
           **{k: "sm_90a" for k in CH10}},
    "l4": {**({} if TUNED else {"mma_sync_f16": "192 KB of shared memory", "mma_sync_bf16": "192 KB of shared memory"}),
           **{k: "sm_90a" for k in CH10}},
    "a100": {**({} if TUNED else {"mma_sync_f16": "192 KB of shared memory", "mma_sync_bf16": "192 KB of shared memory"}),
             **{k: "sm_90a" for k in CH10}},
    "h200": {},
}
CHAPTERS = {
    "t4": {0: "all", 1: "all", 2: "all", 3: "all", 4: "all", 5: "some", 6: "none", 7: "none", 9: "none",
           10: "none"},
    "l4": {0: "all", 1: "all", 2: "all", 3: "all", 4: "all", 5: "all", 6: "all", 7: "all" if TUNED else "none",
           9: "all", 10: "none"},
}


@pytest.fixture
def simulate(monkeypatch):
    """Recorded mode (no GPU, even on a GPU machine) pretending to be the named GPU."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    live = gpu.live                      # a test may replace it with a stub
    live.cache_clear()

    def use(name):
        monkeypatch.setenv(gpu.SIMULATE_VAR, name)
    yield use
    live.cache_clear()


def test_simulated_table_is_the_gpus_readers_have():
    t = gpu.SIMULATED
    assert {n: (s["cc"], s["sms"]) for n, s in t.items()} == {
        "t4": ((7, 5), 40), "l4": ((8, 9), 58), "a100": ((8, 0), 108), "h200": ((9, 0), 132)}
    assert t["t4"]["smem_per_block_max"] == 64 * 1024 and t["t4"]["max_threads_per_sm"] == 1024
    assert t["l4"]["smem_per_block_max"] == 99 * 1024 and t["l4"]["max_blocks_per_sm"] == 24
    assert t["h200"]["smem_per_block_max"] == 227 * 1024


def test_unknown_simulated_gpu_is_refused(simulate):
    simulate("v100")
    with pytest.raises(ValueError, match="t4, l4, a100, h200"):
        gpu.target()


def test_nothing_simulated_decides_nothing(monkeypatch):
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.delenv(gpu.SIMULATE_VAR, raising=False)
    gpu.live.cache_clear()
    try:
        assert gpu.target() is None and gpu.capability() is None
        assert all(launch.unable(s) is None for s in catalog.KERNELS.values())
    finally:
        gpu.live.cache_clear()


@pytest.mark.parametrize("name", sorted(CANNOT))
def test_which_kernels_each_gpu_runs(simulate, name):
    simulate(name)
    got = {k: launch.unable(s) for k, s in KERNELS.items()}
    assert {k for k, w in got.items() if w} == set(CANNOT[name])
    for k, word in CANNOT[name].items():
        assert word in got[k] and f"this GPU is sm_{''.join(map(str, gpu.SIMULATED[name]['cc']))}" in got[k], got[k]


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_each_chapter_live_or_recorded_on_t4_and_l4(simulate, name):
    simulate(name)
    assert {n: v for n, v in common.runs_here().items() if n in MINE} == CHAPTERS[name]


@pytest.mark.parametrize("name", ["t4", "l4"])
def test_bench_labels_what_the_gpu_cannot_run(simulate, name):
    simulate(name)
    recs = bench.gemm(["warptile", "cp_async"]) + bench.gemm(["wmma_f16", "mma_sync_f16"])
    for r in recs:
        why = CANNOT[name].get(r["kernel"])
        assert r["source"] == "recorded" and r["value"] is not None, r
        if why:
            assert why in r["title"] and "recorded on NVIDIA H200" in r["title"] and r["unable"], r
        else:
            assert "needs" not in r["title"] and "unable" not in r, r
    if name == "t4":
        assert "rows marked [needs ...] (hatched bars) were recorded on NVIDIA H200" in bench.where(recs)


def test_live_gpu_measures_what_it_can_and_labels_the_rest(simulate, monkeypatch):
    """On a live GPU forced down to a T4, the runnable kernels go to the measuring path
    and the others come back recorded and labelled (no compile, no exception)."""
    simulate("t4")
    monkeypatch.setattr(gpu, "live", lambda: True)
    measured = []
    real = bench.gemm

    def fake(items, shape=(4096, 4096, 4096), *a, **kw):
        measured.extend(items)
        return [{"kernel": k, "source": "live", "title": k} for k, _ in items]
    monkeypatch.setattr(bench, "gemm", fake)
    recs = real(["reg1d", "cp_async", "warptile"])
    assert [k for k, _ in measured] == ["reg1d", "warptile"]
    assert [r["source"] for r in recs] == ["live", "recorded", "live"]
    assert "needs sm_80 or newer; this GPU is sm_75" in recs[1]["title"]


def test_prepare_refuses_before_compiling(simulate, monkeypatch):
    simulate("t4")
    monkeypatch.setattr(gpu, "live", lambda: True)
    with pytest.raises(ValueError, match="cannot run cp_async: it needs sm_80"):
        launch.prepare("cp_async", (4096, 4096, 4096))


def test_resources_refuse_a_kernel_the_gpu_cannot_run(simulate):
    simulate("t4")
    with pytest.raises(ValueError, match="needs sm_80"):
        launch.resources_of("mma_sync_f16", (4096, 4096, 4096))
    simulate("l4")
    with pytest.raises(ValueError, match="192 KB of shared memory"):     # the shipped default, asked for
        launch.resources_of("mma_sync_f16", (4096, 4096, 4096), **catalog.get("mma_sync_f16").defaults)


def test_owner_check_says_why_instead_of_running(simulate, monkeypatch):
    simulate("t4")
    monkeypatch.setattr(gpu, "live", lambda: True)
    line = launch.check_owner("cp_async")
    assert line.startswith("cp_async: needs sm_80 or newer; this GPU is sm_75") and "GPU suite" in line


def test_no_live_slider_for_a_kernel_the_gpu_cannot_run(simulate, monkeypatch):
    simulate("t4")
    monkeypatch.setattr(show, "live_controls", lambda: True)
    notes = []
    monkeypatch.setattr(show, "note", lambda text, title="Note": notes.append(text))
    assert common.live_slider("cp_async", (4096, 4096, 4096)) is None
    assert notes and "needs sm_80 or newer" in notes[0]


def test_device_limits_follow_the_simulated_gpu(simulate):
    simulate("t4")
    d = launch.device_limits()
    assert d["max_threads_per_sm"] == 1024 and d["smem_per_block_max"] == 65536 and d["smem_reserved_per_block"] == 0
    simulate("l4")
    assert launch.device_limits()["max_blocks_per_sm"] == 24


def test_a_sweep_marks_the_bars_the_gpu_could_not_run(simulate):
    """An L4 runs mma_sync's sweep points that fit its 99 KB of shared memory per block;
    the others are recorded H200 numbers: hatched, and their hover text says so."""
    simulate("l4")
    recs = sweep.run("mma_sync_f16", (4096, 4096, 4096))
    spec = catalog.get("mma_sync_f16")
    big = [spec.smem(r["params"]) > 99 * 1024 for r in recs]
    assert any(big) and not all(big)
    assert [bool(r.get("unable")) for r in recs] == big
    bar = sweep_fig.figure(recs).data[0]
    assert [s == "/" for s in bar.marker.pattern.shape] == big
    for text, b in zip(bar.hovertext, big):
        assert ("recorded on NVIDIA H200 (needs" in text) == b, text


def test_live_roofline_leaves_out_numbers_recorded_on_another_gpu(simulate):
    from helpers.figures import roofline as roofline_fig
    simulate("t4")
    recs = bench.gemm(["warptile", "cp_async"])
    ceil = {"copy_GBps": 300.0, "cublas_TFLOPs": {"float32": 8.0}, "source": "live", "where": "measured live"}
    fig = roofline_fig.figure(recs, ceil)
    names = [t.name or "" for t in fig.data]
    assert not any("cp.async" in n for n in names) and any(n.startswith("warp tiling") for n in names)
    assert "left out, recorded on another GPU" in fig.layout.title.text and "cp_async" in fig.layout.title.text
    recorded = roofline_fig.figure(recs, {**ceil, "source": "recorded"})      # H200 roofs: both kernels drawn
    assert any("cp.async" in (t.name or "") for t in recorded.data)
