"""Chapter 11 (FP8) without a GPU: the format and scaling models, the catalog's rules (refused
before anything compiles), the byte tensor-map checks, the probe's operands, the recorded
mode of the notebook's calls, and the ptxas log of every shipped configuration."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from helpers.chapters import ch12_fp8 as ch
from helpers.models import fp8 as qm
from helpers.runtime import catalog, fp8 as rt, gpu
from helpers.runtime import compile as kc

KEYS = list(ch.RUNGS)


# ------------------------------------------------------------------ models
def test_format_table_matches_the_specification():
    t = {r["format"]: r for r in qm.format_table()}
    assert t["e4m3"]["max"] == 448 and t["e4m3"]["mantissa bits"] == 3 and t["e4m3"]["min subnormal"] == 2 ** -9
    assert t["e5m2"]["max"] == 57344 and t["e5m2"]["mantissa bits"] == 2
    assert t["float16"]["epsilon"] == 2 ** -10 and t["bfloat16"]["epsilon"] == 2 ** -7


def test_spacing_is_the_gap_to_the_next_value():
    for v in (1.0, 3.0, 100.0, 0.3):
        assert qm.spacing("float16", float(np.float16(v))) == float(np.spacing(np.float16(v)))
        for name, dt in (("e4m3", qm.E4M3), ("e5m2", qm.E5M2)):
            x = np.asarray([v]).astype(dt)                       # the next value by bit pattern (positives are ordered)
            nxt = (x.view(np.uint8) + np.uint8(1)).view(dt).astype(np.float64)[0]
            assert qm.spacing(name, float(x[0])) == pytest.approx(nxt - float(x[0]))


def test_per_tensor_scale_puts_amax_on_448_and_bounds_the_error():
    x = np.random.default_rng(1).standard_normal((64, 300)).astype(np.float32) * 7
    q, s = qm.quantize_tensor(x)
    assert float(np.abs(q.astype(np.float32)).max()) == 448.0
    d = qm.dequantize_tensor(q, s)
    normal = np.abs(x) >= s * 2 ** -6
    assert (np.abs(d - x)[normal] <= np.abs(x)[normal] * 2 ** -4 + 1e-12).all()      # half of 2^-3


def test_block_scales_have_one_scale_per_block_and_zero_blocks_get_one():
    x = np.random.default_rng(2).standard_normal((130, 260)).astype(np.float32)
    x[:, 128:256] = 0
    q, S = qm.quantize_blocks(x, 1, 128)
    assert S.shape == (130, 3) and (S[:, 1] == 1).all()
    assert np.allclose(np.abs(q.astype(np.float32))[:, :128].max(axis=1), 448)
    q2, S2 = qm.quantize_blocks(x, 128, 128)
    assert S2.shape == (2, 3)
    assert np.abs(qm.dequantize_blocks(q2, S2, 128, 128) - x).max() < 0.07 * np.abs(x).max()
    with pytest.raises(ValueError, match="rows per block"):
        qm.quantize_blocks(x, 0, 128)
    with pytest.raises(ValueError, match="must be 2"):
        qm.quantize_blocks(x.ravel(), 1, 128)


def test_block_scaling_beats_per_tensor_on_outlier_columns():
    x = ch.example_tensor()
    assert qm.quantization_error(x, "block") < qm.quantization_error(x, "tensor") / 2
    with pytest.raises(ValueError, match="scaling"):
        qm.quantization_error(x, "row")


def test_encode_and_decode_table_round_trip():
    v = np.array([0.0, -1.5, 448.0, 2 ** -9, 3.25], np.float32)
    b = qm.encode(v)
    assert b.dtype == np.uint8 and (qm.decode_table()[b] == v.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)).all()
    assert np.isnan(qm.decode_table()[0x7F]) and qm.decode_table()[0] == 0


# ------------------------------------------------------------------ catalog, rules, checks before the GPU
def test_three_entries_sm90a_only():
    for k in KEYS:
        s = catalog.get(k)
        assert s.compile_options == ("-arch=sm_90a",) and s.arch_specific and s.runs_on((9, 0))
        assert not s.runs_on((8, 9)) and not s.runs_on((10, 0))
        assert s.smem(s.defaults) <= ch.SMEM_LIMIT


@pytest.mark.parametrize("key,p,shape,name", [
    ("fp8_r1_tensor", {}, (4096, 4096, 4104), "K"), ("fp8_r1_tensor", {}, (4096, 4092, 4096), "N"),
    ("fp8_r1_tensor", {"PROMOTE": 2}, (4096,) * 3, "PROMOTE"), ("fp8_r1_tensor", {"STAGES": 5}, (4096,) * 3, "STAGES"),
    ("fp8_r2_block", {"PROMOTE": 2}, (4096,) * 3, "BLOCK_SCALE"), ("fp8_promote", {"STAGES": 7}, (4096,) * 3, "STAGES")])
def test_bad_values_are_refused_before_compiling(key, p, shape, name):
    spec = catalog.get(key)
    with pytest.raises(ValueError, match=rf"^{name}="):
        spec.validate(spec.params(**p), shape, smem_limit=ch.SMEM_LIMIT)


def test_byte_tensor_map_checks_name_the_rule():
    with pytest.raises(ValueError, match=r"A.data.ptr % 16=8"):
        rt.check_tiled_u8("A", 8, 64, 256, 128, 128)
    with pytest.raises(ValueError, match=r"Bt.shape\[1\]=40: must be a multiple of 16"):
        rt.check_tiled_u8("Bt", 0, 64, 40, 128, 128)
    with pytest.raises(ValueError, match="box"):
        rt.check_tiled_u8("A", 0, 64, 256, 128, 256)


@pytest.mark.parametrize("kw,name", [({"scaling": "row"}, "scaling"), ({"dist": "cauchy"}, "dist"),
                                     ({"reference": "fp16"}, "reference")])
def test_inputs_refuse_bad_arguments_before_the_gpu(kw, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        rt.inputs((256, 256, 256), **kw)
    with pytest.raises(ValueError, match=r"^shape="):
        rt.inputs((256, 256))


def test_probe_operands_are_exact_in_e4m3():
    for mode in ("within", "steps", "tiles"):
        A, Bt, e = ch.probe_inputs(mode)
        assert (A.astype(qm.E4M3).astype(np.float32) == A).all() and (Bt.astype(qm.E4M3).astype(np.float32) == Bt).all()
        assert A.shape[1] % 128 == 0 and Bt.shape[0] % 8 == 0 and set(e[e >= 0]) == set(range(8, 35))
        big = (A[0] * Bt[0]).astype(np.float64)
        assert big.sum() == 2.0 ** (16 - e[0])                # exact arithmetic keeps the small term
    with pytest.raises(ValueError, match="mode"):
        ch.probe_inputs("rows")


# ------------------------------------------------------------------ recorded mode
@pytest.mark.skipif(gpu.live(), reason="recorded mode: no GPU")
def test_recorded_mode_reads_every_quoted_number():
    v = ch.prose_values()
    for k in ("r1_4096", "r1_8192", "r2_8192", "p0_8192", "p1_8192", "err_p0", "err_p1", "probe_bits"):
        assert isinstance(v[k], (int, float)) and v[k] > 0, k
    recs = ch.speed_runs()
    assert recs and all(r["source"] == "recorded" and r["label"] for r in recs)


# ------------------------------------------------------------------ ptxas
@pytest.mark.skipif(kc.nvcc_path() is None, reason="nvcc not found: the ptxas log check needs it")
@pytest.mark.parametrize("k", KEYS)
def test_ptxas_log_has_no_spills_and_no_serialized_wgmma(k):
    spec = catalog.get(k)
    for p in spec.configs():
        r = kc.nvcc_check(spec.file, spec.entry, spec.defines(p), arch="sm_90a")
        assert not r["warnings"], f"{k} {p}: {r['warnings']}"
        assert r["spill_stores"] == r["spill_loads"] == 0, f"{k} {p}: spills {r}"


def test_the_recorder_times_rung_2_and_its_pingpong_control():
    """Chapter 11 quotes rung 2 as shipped and with the other PINGPONG (prose_values): the
    recorder's speed list must hold both, or the page cannot be built from a fresh record."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "scripts" / "record_fp8.py"
    spec = importlib.util.spec_from_file_location("record_fp8", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r2 = catalog.get("fp8_r2_block")
    got = {r2.params(**p)["PINGPONG"] for k, p in mod.SPEED if k == "fp8_r2_block"}
    assert got == {0, 1}


@pytest.mark.parametrize("pairs,shipped,words", [
    ([(1.0, 1.01), (1.0, 0.99)], False, "no larger than the 2.0%"),
    ([(1.0, 0.95), (1.0, 0.99)], False, "a loss beyond it at 4096³, within it at 8192³; so rung 1 ships without"),
    ([(1.0, 1.05), (1.0, 1.04)], False, "yet rung 1 ships without it"),
    ([(1.0, 0.95), (1.0, 0.94)], True, "yet rung 1 ships with it")])
def test_the_cluster_verdict_follows_the_record(pairs, shipped, words):
    """Chapter 11's sentence on rung 1's cluster is computed from the record: a gap within rung 1's
    own spread is 'no larger', a larger one is named per size, and a default the data do not back
    reads 'yet'."""
    from helpers.chapters import ch12_fp8 as ch
    assert words in ch.cluster_verdict(pairs, 0.02, shipped)


@pytest.mark.parametrize("pairs,words", [([(0.70, 0.60), (0.75, 0.70)], "a loss beyond it at 4096³, a loss beyond it at 8192³; so"), ([(0.70, 0.71), (0.75, 0.74)], "less than the spread"),
                                         ([(0.70, 0.75), (0.75, 0.80)], "yet rung 2 ships"),
                                         ([(0.70, 0.69), (0.75, 0.70)], "within it at 4096³, a loss beyond it at 8192³; so")])
def test_the_pingpong_verdict_follows_the_record(pairs, words):
    from helpers.chapters import ch12_fp8 as ch
    assert words in ch.pingpong_verdict(pairs, 0)
