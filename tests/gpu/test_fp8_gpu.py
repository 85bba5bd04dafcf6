"""GPU suite, chapter 11 (sm_90 only): the FP8 kernels on shapes that are not tile multiples,
against float64 of the dequantized inputs; shapes and views the rules refuse are refused
before launch with the rule; the promotion builds agree with each other."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt, gpu, verify

pytestmark = pytest.mark.skipif(not gpu.live() or gpu.device_info()["cc"] != (9, 0),
                                reason="needs an sm_90 GPU (H100/H200): the kernels are sm_90a machine code")

CASES = [("fp8_r1_tensor", {}), ("fp8_r1_tensor", {"CLUSTER_M": 1}), ("fp8_r2_block", {}),
         ("fp8_r2_block", {"PINGPONG": 0}), ("fp8_r2_block", {"PINGPONG": 1, "CLUSTER_M": 1}),
         ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1}),
         ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1, "CLUSTER_M": 1, "PINGPONG": 1}),
         ("fp8_r2_block", {"BN": 128, "STAGES": 5, "SCALE_LOAD": 1}),
         ("fp8_promote", {"PROMOTE": 0}), ("fp8_promote", {"PROMOTE": 4}), ("fp8_promote", {"PROMOTE": 2, "PINGPONG": 1}),
         ("fp8_promote", {"BN": 192, "STAGES": 4, "PROMOTE": 2})]
SHAPES = [(1, 8, 16), (200, 264, 176), (333, 136, 4112), (1000, 1000, 1008), (128, 256, 128), (4093, 4088, 4096)]


@pytest.mark.parametrize("key,params", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_fp8_correct_on_odd_shapes(key, params, shape):
    data = rt.inputs(shape, "block" if key == "fp8_r2_block" else "tensor", bf16_reference=False)
    r = rt.measure(ch.prepare(key, shape, **params), data, timed=False)
    assert r["rel_err"] <= verify.TOLERANCE[rt.OUT_TOLERANCE]


@pytest.mark.parametrize("shape,name", [((256, 256, 200), "K"), ((256, 260, 256), "N")])
def test_fp8_bad_shapes_refused_before_launch(shape, name):
    with pytest.raises(ValueError, match=f"^{name}="):
        ch.prepare("fp8_r1_tensor", shape)


def test_fp8_misaligned_view_refused():
    cp = gpu.cupy()
    A = cp.zeros(256 * 256 + 8, cp.uint8)[8:].reshape(256, 256)        # 8 bytes into its buffer
    Bt = cp.zeros((256, 256), cp.uint8)
    one = cp.ones(1, cp.float32)
    with pytest.raises(ValueError, match=r"A.data.ptr % 16"):
        ch.run_once("fp8_r1_tensor", A, Bt, one, one)
    with pytest.raises(ValueError, match=r"c_contiguous"):
        ch.run_once("fp8_r1_tensor", cp.zeros((256, 512), cp.uint8)[:, :256], Bt, one, one)


def test_promotion_builds_agree_on_small_K():
    """With K = 128 (one k-tile) every promotion interval computes the same sums."""
    data = rt.inputs((256, 256, 128), "tensor", out_f32=True, bf16_reference=False)
    a = data.arrays
    outs = [gpu.cupy().asnumpy(ch.run_once("fp8_promote", a["A"], a["Bt"], a["SA"], a["SB"], out_f32=True, PROMOTE=P))
            for P in ch.PROMOTIONS]
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("params", [{"BN": 192, "STAGES": 4}, {"BN": 192, "STAGES": 4, "CLUSTER_M": 1}, {"BN": 128, "STAGES": 5}])
def test_block_scales_from_the_ring_match_scales_from_global_memory(params):
    """SCALE_LOAD 1 (the scale warp copies each k-block's scales into the ring slot) computes
    bit for bit what SCALE_LOAD 0 (each consumer thread loads them from global memory) does:
    the same products in the same order, only the scales' path differs."""
    data = rt.inputs((333, 392, 4112), "block", out_f32=True, bf16_reference=False)
    a = data.arrays
    got = [gpu.cupy().asnumpy(ch.run_once("fp8_r2_block", a["A"], a["Bt"], a["SA"], a["SB"], out_f32=True,
                                          SCALE_LOAD=sl, **params)) for sl in (0, 1)]
    np.testing.assert_array_equal(got[1], got[0])
