"""CPU tests of helpers/runtime/precision.py and of the chapter 6-7 notebook helpers
added to helpers/models/fragments.py (figures, ncu table, resources, layout pitfall).

The GPU halves (the kernels of the fp16-accumulator demo, the TF32
subprocess) run in the notebooks on a GPU; here the recorded paths are forced
with a monkeypatched ``gpu.live`` so they are exercised on any machine.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.chapters import ch06_wmma as ch6, ch07_mma_sync as ch7
from helpers.figures import fragments as frag_fig, precision as prec_fig, show
from helpers.models import fragments as F, mma_sync as mma, precision as mprec
from helpers.runtime import compile as kc, gpu, launch, precision, results, verify


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr(gpu, "live", lambda: False)


# ------------------------------------------------------------------ tolerances and the host check
def test_tolerance_rows_cover_every_dtype_above_its_roundoff():
    rows = precision.tolerance_rows()
    assert [r["dtype"] for r in rows] == list(verify.TOLERANCE)
    for r in rows:
        assert r["tolerance"] == verify.TOLERANCE[r["dtype"]]
        assert r["tolerance / roundoff"] > 1          # a correct kernel must be able to pass


def test_verify_check_judges_numpy_arrays_by_the_same_rule():
    """A kernel replayed on the CPU is checked by verify.check itself (NumPy arrays, no GPU)."""
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((32, 48))
    good = ref.astype(np.float16)
    assert verify.check(good, ref, "float16") < verify.TOLERANCE["float16"]
    with pytest.raises(verify.WrongResult, match=r"relative error .* > tolerance 2e-03 for float16"):
        verify.check(ref[::-1], ref, "float16", what="flipped")
    bad = good.astype(np.float32)
    bad[3, 4] = np.nan
    with pytest.raises(verify.WrongResult, match="1 of 1536 outputs are NaN"):
        verify.check(bad, ref, "float16")
    assert issubclass(verify.WrongResult, AssertionError)          # nbval fails on it
    assert verify.rel_err(bad, ref) == float("inf")
    assert verify.check_exact(good.T.copy().T, good) == 0.0
    with pytest.raises(verify.WrongResult, match="1 of 1536 elements wrong or never written"):
        verify.check_exact(bad, good.astype(np.float32))


# ------------------------------------------------------------------ fp16 accumulator
def test_fp16_sum_stalls_where_the_spacing_outgrows_the_addend():
    e16 = mprec.fp16_sum_emulation(65536, step=16)
    assert e16["exact"] == 16384.0 and e16["final_fp32"] == 16384.0
    assert e16["final_fp16"] == 8192.0 and e16["stalls_at_k"] == 32768     # ulp(8192) = 8, +4 ties to even
    e1 = mprec.fp16_sum_emulation(65536, step=1)
    assert e1["final_fp16"] == 512.0 and e1["stalls_at_k"] == 2048        # ulp(512) = 0.5, +0.25 ties
    assert e16["k"].dtype == np.int32 and e16["fp16"].dtype == np.float32
    assert e16["k"][-1] == 65536 and len(e16["k"]) == len(e16["fp16"]) == len(e16["fp32"])
    assert mprec.fp16_sum_emulation(1024, step=16)["stalls_at_k"] is None   # never stalls that early
    with pytest.raises(ValueError, match="multiple of step"):
        mprec.fp16_sum_emulation(1000, step=16)


def test_fp16_accumulator_demo_without_gpu(recorded):
    d = ch6.fp16_accumulator_demo()
    assert d["exact"] == 16384.0 and d["emulated_fp16_k16"] == 8192.0 and d["emulated_fp32"] == 16384.0
    assert d["kernel_fp32_acc"] is None and d["kernel_fp16_acc"] is None and d["source"] == "emulated"
    json.dumps(d)                                           # the recorder stores it as JSON


def test_fp16_accumulator_results_reads_the_recording(recorded, monkeypatch):
    data = results.load()
    assert ch6.fp16_accumulator_results()["recorded"] == bool(data.get("extras", {}).get("fp16_accumulator"))
    rec = {**ch6.fp16_accumulator_demo(), "kernel_fp32_acc": 16384.0, "kernel_fp16_acc": 8192.0,
           "source": "live"}
    fake = {**data, "extras": {**data.get("extras", {}), "fp16_accumulator": rec}}
    monkeypatch.setattr(results, "load", lambda slug=results.DEFAULT_SLUG: fake)
    got = ch6.fp16_accumulator_results()
    assert got["recorded"] and got["source"] == "recorded" and got["kernel_fp16_acc"] == 8192.0
    assert "no GPU in this run" in got["where"]


# ------------------------------------------------------------------ TF32 vs FP32
def test_tf32_needs_a_gpu_and_reads_recordings(recorded, monkeypatch):
    with pytest.raises(RuntimeError, match="recorded mode"):
        precision.tf32_vs_fp32(64)
    rows = [{"mode": "FP32", "ms": 2.7, "TFLOP/s": 51.0, "speedup": 1.0, "rel_err": 1e-6},
            {"mode": "TF32", "ms": 0.5, "TFLOP/s": 270.0, "speedup": 5.4, "rel_err": 3e-4}]
    fake = {"provenance": {"gpu": "NVIDIA H200"}, "runs": [], "extras": {"tf32_vs_fp32": rows}}
    monkeypatch.setattr(results, "load", lambda slug=results.DEFAULT_SLUG: fake)
    got, where = precision.tf32_results()
    assert got == rows and "NVIDIA H200" in where and "no GPU in this run" in where
    monkeypatch.setattr(results, "load", lambda slug=results.DEFAULT_SLUG: {"provenance": {}, "runs": []})
    assert precision.tf32_results()[0] == []


def test_tf32_inputs_are_identical_in_every_process():
    a1, b1 = precision._inputs(64, 7)
    a2, b2 = precision._inputs(64, 7)
    assert a1.dtype == np.float32 and (a1 == a2).all() and (b1 == b2).all()
    assert not (precision._inputs(64, 8)[0] == a1).all()


def test_fp16_accumulator_figure_is_small():
    b = show.figure_bundle(prec_fig.fp16_accumulator_figure())
    assert len(b["text/html"]) < 30_000


# ------------------------------------------------------------------ fragments: notebook helpers
def test_ldmatrix_phase_table_plain_conflicts_swizzle_none():
    rows = {(r["layout"], r["operand"][0]): r for r in frag_fig.ldmatrix_phase_table()}
    assert [rows["plain row-major", "A"][f"phase {j}"] for j in range(4)] == [4] * 4      # BK=32: 64-byte rows
    assert [rows["plain row-major", "B"][f"phase {j}"] for j in range(4)] == [8] * 4      # BN=256: 512-byte rows
    assert rows["swizzled", "A"]["conflicts per instruction"] == 0
    assert rows["swizzled", "B"]["conflicts per instruction"] == 0


@pytest.mark.parametrize("make", [frag_fig.figure_fragments, frag_fig.figure_swizzle,
                                  lambda: frag_fig.figure_warp_tiles("wmma_f16"),
                                  lambda: frag_fig.figure_warp_tiles("mma_sync_f16")])
def test_figures_build_and_stay_small(make):
    b = show.figure_bundle(make())
    assert len(b["text/html"]) < 40_000
    assert "no GPU" in b["text/plain"] or "no GPU" in json.dumps(b[show.PLOTLY_MIME]["layout"]["title"])


def test_fragment_figure_slider_outlines_each_lanes_elements():
    fig = frag_fig.figure_fragments()
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 32
    x, y = steps[5].args[0]["x"], steps[5].args[0]["y"]
    assert sorted(zip(y[0], x[0])) == sorted(F.frag_a(5))          # A panel: (row, col) of lane 5
    assert list(zip(y[2], x[2])) == F.frag_c(5)


def test_swizzle_figure_titles_follow_the_model():
    fig = frag_fig.figure_swizzle()
    titles = [a.text for a in fig.layout.annotations[:4]]
    # panels: A plain, B plain (top row), A swizzled, B swizzled (bottom row)
    assert "4-way" in titles[0] and "8-way" in titles[1]
    assert "no conflict" in titles[2] and "no conflict" in titles[3]


def test_ncu_rows_model_only_and_with_a_recording(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    assert results.artifact("ldmatrix") is None
    rows = ch7.ncu_rows()
    assert rows and all(r["measured"] is None and r["agree"] is None for r in rows)
    conf = {r["launch"]: r["model"] for r in rows if r["counter"] == "ldmatrix bank conflicts"}
    assert conf["mma.sync, swizzled smem"] == 0 and conf["mma.sync, plain row-major smem"] > 0
    pred = mma.predict_ncu_mma_sync(ch7.ncu_plan()[0]["params"], (512, 512, 512))
    meas = {k: float(v) for k, v in pred.items() if k.endswith(".sum")}
    meas["sm__sass_inst_executed_op_ldgsts.sum"] += 100
    doc = {"runs": [{"label": "mma.sync, swizzled smem", "predicted": pred, "measured": meas}]}
    (tmp_path / f"{results.DEFAULT_SLUG}-ldmatrix.json").write_text(json.dumps(doc))
    got = {r["counter"]: r["agree"] for r in ch7.ncu_rows(results.artifact("ldmatrix"))}
    assert got["ldmatrix instructions"] == "yes" and got["cp.async instructions"] == "NO"
    # counters read back as floats print as integers beside the model, not 1.573e+06
    rows = ch7.ncu_rows(results.artifact("ldmatrix"))
    assert all(type(r["measured"]) is int and type(r["model"]) is int for r in rows)
    assert "e+0" not in show.table_markdown(rows, ["model", "measured"], "c")


def test_ncu_caption_names_nsight_compute_by_its_release(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    doc = {"provenance": {"gpu": "NVIDIA H200", "date": "2026-12-04",
                          "ncu": "Version 2025.3.1.0 (build 36398880) (public-release)"}, "runs": []}
    (tmp_path / f"{results.DEFAULT_SLUG}-ldmatrix.json").write_text(json.dumps(doc))
    shown = []
    monkeypatch.setattr(show, "_markdown", shown.append)
    ch7.show_ncu_ldmatrix()
    assert "measured with Nsight Compute 2025.3.1 on NVIDIA H200" in shown[0] and "build" not in shown[0]


def test_resource_rows_refuse_invalid_configs_before_compiling(recorded, monkeypatch):
    monkeypatch.setattr(kc, "nvcc_path", lambda: None)
    rows, where = launch.resource_rows([("mma_sync_f16", {})], label="params")
    assert rows == [] and "nvcc or a GPU" in where
    monkeypatch.setattr(kc, "nvcc_path", lambda: "/nonexistent/nvcc")
    monkeypatch.setattr(kc, "nvcc_check", lambda *a, **k: pytest.fail("compiled an invalid config"))
    rows, _ = launch.resource_rows([("mma_sync_f16", {"BM": 64, "BN": 64})], label="params")
    assert "threads per block" in rows[0]["refused"]


def test_owner_check_says_where_without_gpu(recorded):
    assert "tests/gpu/test_kernels.py" in launch.check_owner("mma_sync_f16")


def test_wrong_layout_is_plausible_and_caught(recorded):
    run = ch6.wrong_layout_run()
    assert run["source"] == "emulated"
    assert run["check"](run["C_right"], run["ref"], "float16") < verify.TOLERANCE["float16"]
    with pytest.raises(verify.WrongResult, match="relative error"):
        run["check"](run["C_wrong"], run["ref"], "float16")
    w, r = np.abs(run["C_wrong"]).std(), np.abs(run["ref"]).std()
    assert 0.5 < w / r < 2                                    # same magnitudes: it looks plausible
    rows = ch6.side_by_side(run, n=4)
    assert len(rows) == 4 and set(rows[0]) >= {"float64 reference", "wrong layout (col_major B)"}
