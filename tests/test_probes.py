"""helpers/runtime/probes.py without a GPU: argument checks, the recorded path, the
figure and the power sentence; the PROBE builds (kernels/experiments/07_mma_probe.cu)
compile (nvcc, no GPU)."""
import pytest

from helpers.figures import probes as probes_fig
from helpers.runtime import catalog, compile as kc, gpu, probes, results

FAKE = {"dtype": "float16", "shape": [4096, 4096, 4096], "params": {}, "power": None,
        "rows": [{"probe": n, "label": lab, "stage": st, "ms": 0.3 + 0.01 * n, "TFLOP/s": 400.0 + 10 * n,
                  "cuBLAS TFLOP/s": 750.0, "ratio": 0.53 + 0.02 * n, "saves": None if n == 0 else 0.02}
                 for n, lab, st in probes.LADDER]}


def test_ladder_is_cumulative_and_starts_with_the_kernel():
    assert [n for n, _, _ in probes.LADDER] == [0, 1, 2, 3, 4]
    assert probes.LADDER[0][1] == "the kernel"


@pytest.mark.parametrize("kw,name", [({"dtype": "float32"}, "dtype"), ({"rounds": 0}, "rounds"),
                                     ({"LOAD_SPREAD": 0}, "LOAD_SPREAD"), ({"NOPE": 1}, "NOPE")])
def test_bad_arguments_are_refused_before_the_gpu(kw, name):
    with pytest.raises(ValueError, match=name):
        probes.mma_sync_probes(**kw)


def test_recorded_probe_results_have_the_ladder(monkeypatch):
    """The committed results file carries the PROBE ladder of both dtypes, at the
    current defaults (chapter 7 shows it without a GPU)."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    gpu.live.cache_clear()
    try:
        for dt in ("float16", "bfloat16"):
            rec, where = probes.probe_results(dt)
            assert "recorded" in where.lower() or "h200" in where.lower()
            assert rec is not None, f"{dt}: no PROBE ladder in results/{results.DEFAULT_SLUG}.json"
            assert [r["probe"] for r in rec["rows"]] == [n for n, _, _ in probes.LADDER]
            assert all(r["ratio"] > 0 for r in rec["rows"])
            assert rec["params"] == catalog.get("mma_sync_f16").defaults   # recorded at the current defaults
    finally:
        gpu.live.cache_clear()


def test_probe_figure_and_power_note():
    fig = probes_fig.probe_figure(FAKE)
    assert list(fig.data[0].x) == [lab for _, lab, _ in probes.LADDER]
    assert "not sampled" in probes.power_note(None)
    note = probes.power_note({"samples": 20, "clock_MHz_min": 1500.0, "clock_MHz_median": 1700.0,
                              "clock_MHz_max_allowed": 1980.0, "power_W_max": 695.0, "power_W_median": 680.0,
                              "power_limit_W": 700.0, "power_capped_fraction": 0.9})
    assert "1500" in note and "700 W" in note and "90%" in note


@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: compile checks need the CUDA toolkit")
@pytest.mark.parametrize("probe", [n for n, _, _ in probes.LADDER[1:]])
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
