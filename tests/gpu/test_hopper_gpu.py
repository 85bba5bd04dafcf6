"""GPU suite, chapter 10 (sm_90 only): every rung on shapes that are not tile multiples and
at 8192^3, the swizzle model against a tile TMA wrote, the accumulator layout against the
instrumented build, and a control that must fail (B's descriptor offsets exchanged)."""
from __future__ import annotations

import pytest

from helpers.chapters import ch10_hopper as ch
from helpers.runtime import catalog, gpu, launch, verify

pytestmark = pytest.mark.skipif(not gpu.live() or gpu.device_info()["cc"] != (9, 0),
                                reason="needs an sm_90 GPU (H100/H200): the kernels are sm_90a machine code")

KEYS = [k for k, s in catalog.KERNELS.items() if s.chapter == 10]


def _check(key, shape, extra=None, **params):
    cp = gpu.cupy()
    spec = catalog.get(key)
    M, N, K = shape
    A = verify.random_matrix((M, K), spec.dtype)
    B = verify.random_matrix((K, N), spec.dtype)
    C = cp.empty((M, N), dtype=verify.np_dtype(spec.out_dtype))
    verify.poison(C)
    L = launch.prepare(key, shape, extra_defines=extra, **params)
    L(A, B, C, M, N, K)
    cp.cuda.Device().synchronize()
    return verify.check(C, verify.reference_gemm(A, B), spec.dtype, what=f"{key} {params} {shape}")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("shape", [(333, 264, 72), (1001, 1000, 1000), (1, 8, 8), (4093, 4088, 4104),
                                   (128, 256, 64), (8192, 8192, 8192)])
def test_rung_is_correct(key, shape):
    _check(key, shape)


@pytest.mark.parametrize("params", [{"STAGES": 2}, {"STAGES": 3}, {"CLUSTER_M": 1}, {"GROUP_M": 1}, {"PERSISTENT": 0}])
def test_summit_slider_values(params):
    _check(ch.key("r5_tma_store"), (1000, 1000, 1000), **params)


def test_swapped_b_descriptor_fails():
    """Control: with LBO and SBO of B exchanged the result must be wrong (the roles are not a guess)."""
    with pytest.raises(verify.WrongResult):
        _check(ch.key("r2_warp_specialized"), (256, 256, 256), extra={"B_DESC_SWAP": 1})


def test_tma_swizzle_model_matches_the_hardware():
    assert "exactly where" in ch.check_tma_swizzle("float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_accumulator_layout_matches_the_kernel(dtype):
    assert "equals the model" in ch.check_accumulators(dtype, shape=(200, 520, 72))


def test_refused_shape_leaves_the_context_healthy():
    with pytest.raises(ValueError, match="^N="):
        launch.prepare(ch.key("r5_tma_store"), (4096, 4090, 4096))
    _check(ch.key("r5_tma_store"), (256, 256, 256))
