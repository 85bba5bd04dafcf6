"""Launch every catalog kernel once on small shapes, for compute-sanitizer.

Usage (on a GPU machine):
    compute-sanitizer --tool memcheck  --error-exitcode 1 python scripts/sanitize_run.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python scripts/sanitize_run.py

Shapes are small (the sanitizers slow kernels down 10-100x) and include
non-multiples of every tile, so the guarded edges are exercised. Inputs are
uploaded from NumPy so that no library kernel runs besides the book's own.
A shape a kernel refuses (ValueError) is skipped: nothing was launched.
The appendix's broken kernels (chapter 11's pitfall entries) are left out of the
default list: they race or diverge at a barrier on purpose, and
scripts/record_pitfalls.py runs each under the sanitizer that must catch it.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.runtime import catalog, gpu, launch, verify

GEMM = [(130, 100, 70), (256, 256, 64), (35, 79, 19), (200, 264, 136)]
TRANSPOSE = [(130, 100), (256, 256), (35, 79)]
FP8 = [(200, 264, 176), (130, 136, 272), (256, 256, 128)]   # chapter 11: K % 16 == 0, N % 8 == 0


def run_fp8(spec, shape, rng):
    """Chapter 11's e4m3 kernels: bytes from ml_dtypes, scales of the entry's kind
    (one float each, or one per 1 x 128 strip of A and 128 x 128 block of Bt)."""
    from helpers.chapters import ch12_fp8
    from helpers.models import fp8 as qm
    cp = gpu.cupy()
    M, N, K = shape
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    if spec.defaults.get("BLOCK_SCALE"):
        (qa, sa), (qb, sb) = qm.quantize_blocks(a, 1, 128), qm.quantize_blocks(b, 128, 128)
        sa, sb = np.ascontiguousarray(sa.T), np.ascontiguousarray(sb.T)
    else:
        (qa, sa), (qb, sb) = qm.quantize_tensor(a), qm.quantize_tensor(b)
        sa, sb = np.array([sa], np.float32), np.array([sb], np.float32)
    ch12_fp8.run_once(spec.key, cp.asarray(qa.view(np.uint8)), cp.asarray(qb.view(np.uint8)),
                      cp.asarray(sa), cp.asarray(sb))


def run_fused_split_k(rng):
    """Chapter 9's split-K in one launch (reduction "fused": the last block of a tile adds the
    partials and resets the tile's counter), on both operand paths, called twice each so that
    the second call starts from the counters the first one reset."""
    from helpers.models import anyshape as model
    from helpers.runtime import anyshape as rt
    cp = gpu.cupy()
    ran = 0
    for M, N, K in ((130, 136, 2048), (64, 256, 4096)):
        A = cp.asarray(rng.standard_normal((M, K)).astype(np.float16))
        B = cp.asarray(rng.standard_normal((K, N)).astype(np.float16))
        C = cp.empty((M, N), cp.float16)
        for ops in ("hopper", "direct" if rt.aligned_inputs(A, B) else "repack"):
            if ops == "hopper" and rt.can_run("hopper") is not None:
                continue
            for _ in range(2):
                rt.run(model.Plan(operands=ops, schedule="splitk", splits=2, reduction="fused"), A, B, C)
                cp.cuda.Device().synchronize()
                ran += 1
    return ran


def main(keys):
    cp = gpu.cupy()
    rng = np.random.default_rng(0)
    ran = refused = 0
    keys = keys or [k for k, s in catalog.KERNELS.items() if not (s.pitfall and s.chapter == 11)]
    for key in keys:
        spec = catalog.get(key)
        fp8 = spec.dtype.startswith("float8")
        for shape in (FP8 if fp8 else GEMM if spec.op == "gemm" else TRANSPOSE):
            try:
                if fp8:
                    run_fp8(spec, shape, rng)
                elif spec.op == "gemm":
                    M, N, K = shape
                    dt = verify.np_dtype(spec.dtype)
                    A = cp.asarray(rng.standard_normal((M, K)).astype(np.float32).astype(dt))
                    B = cp.asarray(rng.standard_normal((N, K) if spec.layout == "NT" else (K, N))
                                   .astype(np.float32).astype(dt))
                    launch.gemm(key, A, B)
                else:
                    launch.transpose(key, cp.asarray(rng.standard_normal(shape).astype(np.float32)))
                cp.cuda.Device().synchronize()
                ran += 1
            except ValueError as e:
                refused += 1
                print(f"  refused {key} {shape}: {e}")
    if not sys.argv[1:]:
        ran += run_fused_split_k(rng)
    print(f"sanitize_run: {ran} launches, {refused} refused shapes")


if __name__ == "__main__":
    main(sys.argv[1:])
