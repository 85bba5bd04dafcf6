"""Chapter 7's PROBE ladder (helpers/chapters/ch07_mma_sync.py; the builds in
kernels/experiments/07_mma_probe.cu) and the power sampler (helpers/runtime/power.py) without a
GPU: argument checks, the recorded path, the figure and the power sentence; the PROBE builds
compile (nvcc, no GPU)."""
import re

import pytest

from helpers.chapters import ch07_mma_sync as probes, prose_ch07
from helpers.figures import probes as probes_fig
from helpers.runtime import catalog, compile as kc, gpu, power, results

FAKE = {"dtype": "float16", "shape": [4096, 4096, 4096], "params": {}, "power": None,
        "rows": [{"probe": n, "label": lab, "stage": st, "ms": 0.3 + 0.01 * n, "TFLOP/s": 400.0 + 10 * n,
                  "cuBLAS TFLOP/s": 750.0, "ratio": 0.53 + 0.02 * n, "saves": None if n == 0 else 0.02}
                 for n, lab, st in probes.PROBE_LADDER]}


def _kept(probe: int) -> dict:
    """{switch: kept?} of kernels/experiments/07_mma_probe.cu at ``-DPROBE=probe``, evaluated from
    the file's own ``#define KEEP_<STAGE> (PROBE < n)`` lines."""
    src = kc.source("experiments/07_mma_probe.cu")
    defs = re.findall(r"#define (KEEP_\w+)\s+\(PROBE < (\d+)\)", src)
    assert defs, "no KEEP_* switch in the probe file"
    return {name: probe < int(n) for name, n in defs}


def test_ladder_is_cumulative_and_starts_with_the_kernel():
    """Rung 0 is the verified kernel (the teaching file, nothing left out); each rung n >= 1 of the
    probe file keeps a subset of what rung n - 1 kept and drops exactly one stage more, and the
    ladder's labels name one stage per rung, in that order."""
    rungs = [n for n, _, _ in probes.PROBE_LADDER]
    assert rungs[0] == 0 and probes.PROBE_LADDER[0][1] == "the kernel"
    assert catalog.get("mma_sync_f16").build_target({}) == ("07_mma_sync.cu", "gemm_mma_sync")
    kept = {0: None}
    for n in rungs[1:]:
        kept[n] = _kept(n)
        before = kept[n - 1] or {k: True for k in kept[n]}           # rung 0 keeps every stage
        dropped = [k for k in before if before[k] and not kept[n][k]]
        assert not [k for k in kept[n] if kept[n][k] and not before[k]], f"rung {n} brings a stage back"
        assert len(dropped) == 1, f"rung {n} drops {dropped}, not exactly one stage"
    assert not any(kept[rungs[-1]].values()), "the last rung keeps a stage: it is not the mma alone"
    assert len({st for _, _, st in probes.PROBE_LADDER[1:]}) == len(rungs) - 1


@pytest.mark.parametrize("kw,name", [({"dtype": "float32"}, "dtype"), ({"rounds": 0}, "rounds"),
                                     ({"LOAD_SPREAD": 0}, "LOAD_SPREAD"), ({"NOPE": 1}, "NOPE")])
def test_bad_arguments_are_refused_before_the_gpu(kw, name):
    with pytest.raises(ValueError, match=name):
        probes.mma_sync_probes(**kw)


def test_recorded_probe_results_have_the_ladder(monkeypatch):
    """The committed results file carries the PROBE ladder of both dtypes, each at its
    kernel's defaults on the recorded GPU (chapter 7 shows it without a GPU)."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    gpu.live.cache_clear()
    try:
        for dt in ("float16", "bfloat16"):
            rec, where = probes.probe_results(dt)
            assert "recorded" in where.lower() or "h200" in where.lower()
            assert rec is not None, f"{dt}: no PROBE ladder in results/{results.DEFAULT_SLUG}.json"
            assert [r["probe"] for r in rec["rows"]] == [n for n, _, _ in probes.PROBE_LADDER]
            assert all(r["ratio"] > 0 for r in rec["rows"])
            # recorded at the defaults the book uses on the recorded GPU (the tuner's winner where it has one)
            assert rec["params"] == catalog.get(probes.PROBE_KEYS[dt]).default_params()
    finally:
        gpu.live.cache_clear()


def test_probe_figure_and_power_note():
    fig = probes_fig.probe_figure(FAKE)
    assert list(fig.data[0].x) == [lab for _, lab, _ in probes.PROBE_LADDER]
    assert "not sampled" in power.power_note(None)
    note = power.power_note({"samples": 20, "clock_MHz_min": 1500.0, "clock_MHz_median": 1700.0,
                              "clock_MHz_max_allowed": 1980.0, "power_W_max": 695.0, "power_W_median": 680.0,
                              "power_limit_W": 700.0, "power_capped_fraction": 0.9})
    assert "1500" in note and "700 W" in note and "90%" in note


@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: compile checks need the CUDA toolkit")
@pytest.mark.parametrize("probe", [n for n, _, _ in probes.PROBE_LADDER[1:]])
def test_probe_builds_compile_without_spills(probe):
    spec = catalog.get("mma_sync_f16")
    file, entry = spec.build_target({"PROBE": probe})          # the experiment file of the ladder
    assert (file, entry) == ("experiments/07_mma_probe.cu", "gemm_mma_probe")
    r = kc.nvcc_check(file, entry, {**spec.defines(spec.defaults), "PROBE": probe})
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r


def test_the_teaching_kernel_has_no_probe_switches():
    """The probe ladder lives in kernels/experiments/07_mma_probe.cu: the chapter's kernel
    compiles without PROBE or KEEP_* anywhere in it."""
    assert "PROBE" not in kc.source("07_mma_sync.cu").replace("07_mma_probe", "")
    assert catalog.get("mma_sync_f16").build_target({}) == ("07_mma_sync.cu", "gemm_mma_sync")


def test_ladder_sizes_follow_the_steps():
    """Chapter 7's sentence on the ladder's step sizes (prose_ch07.ladder_sizes) names the largest
    gain, the losses and the small steps from the rungs given, whatever their order."""
    def lad(*ratios):
        changes = ["WMMA", "mma.sync", "LOAD_SPREAD 1", "STAGES 4", "BN 256", "BK 64"]
        return [{"change": c, "ratio": r} for c, r in zip(changes, ratios)]
    s = prose_ch07.ladder_sizes(lad(0.44, 0.49, 0.523, 0.535, 0.477, 0.532))
    assert s.startswith("The largest gain in that run is `BK = 64` on the wide tile;")
    assert "the wider block tile alone lowers the ratio" in s and "a fourth stage moves it by less" in s
    s = prose_ch07.ladder_sizes(lad(0.40, 0.50, 0.52, 0.53, 0.54, 0.55))
    assert s.startswith("The largest gain in that run is the code change at WMMA's own tile;")
    assert "lower" not in s and "a fourth stage, the wider block tile alone and `BK = 64` on the wide tile move it" in s
