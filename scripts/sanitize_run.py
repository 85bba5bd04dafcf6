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


def main(keys):
    cp = gpu.cupy()
    rng = np.random.default_rng(0)
    ran = refused = 0
    keys = keys or [k for k, s in catalog.KERNELS.items() if not (s.pitfall and s.chapter == 11)]
    for key in keys:
        spec = catalog.get(key)
        for shape in (GEMM if spec.op == "gemm" else TRANSPOSE):
            try:
                if spec.op == "gemm":
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
    print(f"sanitize_run: {ran} launches, {refused} refused shapes")


if __name__ == "__main__":
    main(sys.argv[1:])
