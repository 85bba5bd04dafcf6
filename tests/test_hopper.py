"""CPU tests of chapter 10 (Hopper): the models, the catalog rules, the TMA checks,
and the ptxas log of every shipped configuration (with nvcc; skipped without it)."""
from __future__ import annotations


import numpy as np
import pytest

from helpers.chapters import ch10_hopper as ch
from helpers.models import hopper as H
from helpers.runtime import catalog, tma
from helpers.runtime import compile as kc

# ------------------------------------------------------------------ models
def test_swizzle_128b_matches_the_verified_chunk_rule():
    # hopper-notes.md (verified on the H200): chunk c of row r lands at chunk c ^ (r % 8)
    cm = H.chunk_map(64, "128B")
    r, c = np.meshgrid(np.arange(64), np.arange(8), indexing="ij")
    assert (cm == (c ^ (r % 8))).all()


def test_swizzle_is_a_permutation_that_keeps_rows():
    lay = H.tma_box_layout(64, 64, 2, "128B")
    assert (np.sort(lay.ravel()) == np.arange(0, 64 * 128, 2)).all()
    assert ((lay // 128) == np.arange(64)[:, None]).all()


@pytest.mark.parametrize("mode,period", [("64B", 4), ("32B", 2)])
def test_narrower_swizzles_repeat_with_their_period(mode, period):
    a = np.arange(0, 1024, 16)
    s = H.swizzle_address(a, mode)
    assert ((s // 128) == (a // 128)).all()
    assert (H.swizzle_address(a + 128 * period, mode) - s == 128 * period).all()


def test_box_row_must_span_the_swizzle_width():
    with pytest.raises(ValueError, match=r"cols \* elem_bytes = 64"):
        H.tma_box_layout(8, 32, 2, "128B")
    with pytest.raises(ValueError, match="mode='256B'"):
        H.swizzle_address(0, "256B")


def test_descriptor_round_trip_and_fields():
    d = H.MatrixDescriptor(start=0x1400, lbo=8192, sbo=1024, swizzle="128B")
    v = d.encode()
    assert v >> 62 == 1 and v & 0x3FFF == 0x1400 >> 4
    assert (v >> 16) & 0x3FFF == 8192 >> 4 and (v >> 32) & 0x3FFF == 1024 >> 4
    assert H.MatrixDescriptor.decode(v) == d
    rows = {r["field"]: r for r in d.fields()}
    assert rows["stride byte offset (SBO)"]["bytes"] == 1024 and rows["swizzle mode"]["raw"] == 1


@pytest.mark.parametrize("kw,msg", [({"start": 8}, "start=8: must be a multiple of 16"),
                                    ({"sbo": 16 << 14}, "sbo=262144: must be in"),
                                    ({"swizzle": "16B"}, "swizzle='16B'")])
def test_descriptor_refuses_bad_fields(kw, msg):
    with pytest.raises(ValueError, match=msg):
        H.MatrixDescriptor(**{"start": 0, "lbo": 16, "sbo": 1024, **kw}).encode()


def test_descriptors_match_the_kernel_source():
    """desc_a / desc_b of kernels/10_hopper.cu: the LBO/SBO the model uses are the kernel's."""
    src = kc.source(ch.FILE)                                      # the wrappers are in kernels/hopper_sm90.cuh
    assert "smem_desc(addr, 16, 1024)" in src                     # A: LBO 16 (unused), SBO 1024
    assert "smem_desc(addr, BOX_BYTES, 1024)" in src              # B: LBO one 64-column box, SBO 1024
    assert "#define BOX_BYTES (64 * 128)" in src                  # a box: 64 rows of 128 bytes
    d = H.operand_descriptors(128, 256, 64, k16=3, a_base=0, b_base=4096)
    assert (d["A"].lbo, d["A"].sbo, d["B"].lbo, d["B"].sbo) == (16, 1024, 64 * 64 * 2, 1024)
    assert d["A"].start == 3 * 32 and d["B"].start == 4096 + 3 * 16 * 128   # "kk * 32", "kk * 16 * 128"
    with pytest.raises(ValueError, match="BK=80"):
        H.operand_descriptors(128, 256, 80)


def test_accumulator_layout_is_a_bijection():
    for n in (8, 64, 256):
        thread, reg = H.accumulator_owner(n)
        assert len(set(zip(thread.ravel().tolist(), reg.ravel().tolist()))) == 64 * n
        assert (np.bincount(thread.ravel()) == n // 2).all()
    thread, reg = H.accumulator_owner(16)
    assert (thread[0, 0], thread[0, 2], thread[8, 0], reg[8, 0]) == (0, 1, 0, 2)
    assert (thread[16, 0], thread[0, 8], reg[0, 8]) == (32, 0, 4)
    with pytest.raises(ValueError, match="n=12"):
        H.accumulator_owner(12)


def test_pipeline_model_hides_loads_with_enough_stages():
    one = H.pipeline_schedule(1, 32, t_load=3.0, t_mma=1.0)
    four = H.pipeline_schedule(4, 32, t_load=3.0, t_mma=1.0)
    assert H.pipeline_efficiency(one) < 0.3 < 0.85 < H.pipeline_efficiency(four)
    for e in four:   # a stage is refilled only after the consumer released it
        if e["who"] == "producer" and e["tile"] >= 4:
            prev = next(c for c in four if c["who"] == "consumer" and c["tile"] == e["tile"] - 4)
            assert e["start"] >= prev["end"]
    with pytest.raises(ValueError, match="stages=0"):
        H.pipeline_schedule(0, 4, 1.0, 1.0)


def test_owner_model_of_rung1_covers_c_once_per_block():
    own = ch._owner_rung1({"STAGES": 4}, (100, 300, 64))
    assert own.shape == (100, 300) and (own >= 0).all()
    assert own[0, 0] == 0 and own[0, 256] == 1024 and own[64, 0] == 2 * 1024   # 2 column blocks
    assert own[0, 2] == 1 and own[8, 0] == 0 and own[16, 0] == 32


# ------------------------------------------------------------------ catalog and rules
def test_ten_rungs_registered_sm90a_only():
    keys = [k for k, s in catalog.KERNELS.items() if s.chapter == 10]
    assert len(keys) == 10
    for k in keys:
        s = catalog.get(k)
        assert s.compile_options == ("-arch=sm_90a",) and s.min_cc == (9, 0) and s.arch_specific
        assert s.runs_on((9, 0)) and not s.runs_on((8, 9)) and not s.runs_on((10, 0))
        assert "sm_90a" in s.needs()


@pytest.mark.parametrize("p,shape,name", [({"STAGES": 5}, (4096, 4096, 4096), "STAGES"),
                                          ({}, (4096, 4090, 4096), "N"), ({}, (4096, 4096, 4092), "K")])
def test_bad_values_are_refused_before_compiling(p, shape, name):
    spec = catalog.get(ch.key("r5_tma_store"))
    with pytest.raises(ValueError, match=rf"^{name}="):
        spec.validate(spec.params(**p), shape, smem_limit=232448)


def test_shared_memory_and_grids():
    r1, r5 = catalog.get(ch.key("r1_tma_wgmma")), catalog.get(ch.key("r5_tma_store"))
    assert r1.smem(r1.defaults) == 1024 + 4 * (64 * 64 * 2 + 64 * 256 * 2) + 64
    assert r5.smem(r5.defaults) == 230464 <= 232448                      # the kernel's SMEM_WS
    assert r1.grid(r1.defaults, (4096, 4096, 4096)) == (16, 64, 1)
    assert r5.grid(r5.defaults, (4096, 4096, 4096))[0] in range(2, 133, 2)   # whole clusters
    r2 = catalog.get(ch.key("r2_warp_specialized"))
    assert r2.grid(r2.defaults, (4096, 4096, 4096)) == (32 * 16, 1, 1)    # one CTA per 128 x 256 tile


def test_tma_checks_name_the_rule():
    with pytest.raises(ValueError, match=r"A.data.ptr % 16=2"):
        tma.check_tiled("A", 2, 64, 64, 64, 64, "float16")
    with pytest.raises(ValueError, match=r"B.shape\[1\]=60: must be a multiple of 8"):
        tma.check_tiled("B", 0, 64, 60, 64, 64, "bfloat16")
    with pytest.raises(ValueError, match="box rows=300"):
        tma.check_tiled("A", 0, 64, 64, 300, 64, "float16")
    with pytest.raises(ValueError, match="box columns=128"):
        tma.check_tiled("A", 0, 64, 256, 64, 128, "float16")


# ------------------------------------------------------------------ ptxas log
@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: the ptxas log check needs it")
@pytest.mark.parametrize("k", [k for k, s in catalog.KERNELS.items() if s.chapter == 10])
def test_ptxas_log_has_no_serialized_wgmma_or_ignored_setmaxnreg(k):
    """Every shipped configuration, the same builds tests/test_compile.py makes (cached):
    no warning at all, so neither C7508 (setmaxnreg ignored) nor C7510/C7515 (wgmma serialized)."""
    spec = catalog.get(k)
    for p in spec.configs():
        r = kc.nvcc_check(spec.file, spec.entry, spec.defines(p), arch="sm_90a")
        assert not r["warnings"], f"{k} {p}: {r['warnings']}"
        assert r["spill_stores"] == r["spill_loads"] == 0, f"{k} {p}: spills {r}"


def test_ptxas_warnings_are_seen(tmp_path, monkeypatch):
    """The check above can fail: a build that ptxas warns about reports the warning."""
    if kc.nvcc_path() is None:
        pytest.skip("nvcc not found")
    (tmp_path / "w.cu").write_text('extern "C" __global__ void __launch_bounds__(128) k(float* x)\n'
                                   '{ asm volatile("setmaxnreg.inc.sync.aligned.u32 240;"); x[0] = 1.f; }\n')
    monkeypatch.setattr(kc, "KERNEL_DIR", tmp_path)
    r = kc.nvcc_check("w.cu", "k", {}, arch="sm_90a")
    assert any("C7508" in w for w in r["warnings"]), r     # an "info" line, not a "warning", in ptxas's log


@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: the ptxas log check needs it")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_splitk_build_of_chapter_9_compiles_clean(dtype):
    """Chapter 9's split-K build of this kernel (rung 5's parameters, EPI_TMA=0, SPLIT_K=1; not a
    catalog entry: helpers.runtime.anyshape.hopper_splitk_build) has no spill and no warning,
    and SPLIT_K with the TMA-store epilogue is refused by the kernel's static_assert."""
    spec = catalog.get(ch.key("r5_tma_store", dtype))
    p = {**spec.defaults, "EPI_TMA": 0}
    r = kc.nvcc_check(spec.file, spec.entry, {**spec.defines(p), "SPLIT_K": 1}, arch="sm_90a")
    assert not r["warnings"] and r["spill_stores"] == r["spill_loads"] == 0, r
    with pytest.raises(Exception, match="SPLIT_K"):
        kc.nvcc_check(spec.file, spec.entry, {**spec.defines(spec.defaults), "SPLIT_K": 1}, arch="sm_90a")


def test_ladder_figure_names_where_each_series_came_from():
    """The ladder's bars and its tensor-pipe line can come from different runs (bars live, the
    line from the recorded Nsight Compute file): the title names both sources."""
    from helpers.figures import hopper as hopper_fig
    recs = [{"dtype": "bfloat16", "shape": [4096] * 3, "ratio": q, "value": 700 * q, "reference_value": 700.0,
             "title": f"rung {i}", "rung_label": f"r{i}", "source": "recorded", "kernel": "k"}
            for i, q in ((1, 0.5), (2, 0.9))]
    fig = hopper_fig.ladder_figure(recs, pipe={"r1": 50.0, "r2": 80.0}, pipe_where="recorded in PIPEFILE")
    title = fig.layout.title.text.replace("<br>", " ")
    assert "bars: " in title and "tensor-pipe line: recorded in PIPEFILE" in title
    assert "tensor-pipe" not in hopper_fig.ladder_figure(recs).layout.title.text
    # the percent axis ticks at round values of its own, not where the ratio axis's grid falls
    y2 = fig.layout.yaxis2
    assert (y2.tickmode, y2.tick0, y2.dtick) == ("linear", 0, 20)


@pytest.mark.parametrize("a,b,words", [(0.90, 0.92, "within the noise"), (0.90, 0.88, "within the noise"),
                                       (0.83, 0.87, "a gain beyond"), (0.92, 0.88, "a loss beyond")])
def test_a_ladder_step_is_named_by_its_size(a, b, words):
    """Chapter 10's prose names each fp16 step from the record: within the noise below STEP_NOISE,
    else a gain or a loss, so a re-recording cannot leave a sentence that its numbers contradict."""
    assert words in ch.step_words(a, b)


def test_the_ladder_prose_names_its_steps_through_glue():
    """The rung-by-rung bullets quote the step words and the cluster's reading, not typed verdicts."""
    import nbformat
    from pathlib import Path
    nb = nbformat.read(Path(__file__).resolve().parents[1] / "book" / "10_hopper.ipynb", as_version=4)
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for name in ("step_r2c1_r2", "step_r2_r3", "step_r3_r4", "cluster_reading"):
        assert f"{{glue:md}}`{name}`" in text, name
    assert "within the noise (" not in text and "gains less than" not in text
