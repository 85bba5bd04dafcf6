"""Chapter 9's live call of the dispatcher, ``helpers.gemm``, on an odd shape: the notebook
cell after the dispatcher's plans. A module of its own because
``helpers/chapters/ch09_any_shape.py`` is at the 500-line limit; it belongs to chapter 9's
page and imports nothing but that chapter and the runtime.
"""
from __future__ import annotations

from helpers.runtime import anyshape, gpu
from helpers.runtime.anyshape import gemm

from . import ch09_any_shape as ch9

DEMO_SHAPE = (1000, 1001, 1002)   # M, N, K: no dimension a multiple of 8, so the operands are repacked
TOLERANCE = 2e-3                  # relative Frobenius error of an fp16 GEMM with fp32 accumulation


def show_gemm_demo(shape=DEMO_SHAPE) -> None:
    """On a GPU that runs chapter 9 (sm_80 or newer): ``helpers.gemm(A, B, verbose=True)`` on
    random fp16 A (M x K) and B (K x N) of ``shape`` (M, N, K), which prints the plan it chose
    and why, then the relative error against a float64 product in one line. Elsewhere one line
    saying what it needs. Raises AssertionError when the error exceeds :data:`TOLERANCE`."""
    if not ch9.live_here():
        print("helpers.gemm needs an sm_80+ GPU; the plans above are the dispatcher's rules.")
        return
    cp = gpu.cupy()
    M, N, K = shape
    A = cp.random.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = cp.random.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
    with anyshape.without_hopper():           # chapter 9's kernels
        C = gemm(A, B, verbose=True)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    err = float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    if not err < TOLERANCE:
        raise AssertionError(f"helpers.gemm on {M} x {N} x {K}: relative error {err:.1e} > {TOLERANCE}")
    print(f"relative error against float64: {err:.1e}")
