"""Does compute-sanitizer's initcheck see what a TMA store writes? A control for the
uninitialized-read reports in ``unpad_copy`` on the Hopper path of the dispatcher.

Usage (sm_90, under initcheck; each phase prints a marker line before it starts):
    compute-sanitizer --tool initcheck --report-api-errors no python scripts/initcheck_control.py

Phases, each on a fresh M x N output read afterwards by a plain CuPy kernel (``C.sum()``):
  tma_store   chapter 10's rung 5 (epilogue through a TMA store) writes C, 256 x 256 x 64
  st_global   rung 4 (the same kernel, epilogue through st.global) writes C, same shape
  clipped     rung 5 on 7 x 8 x 8: one 128 x 256 tile, the TMA store clipped to 7 x 8
              (the dispatcher's Hopper path at 7 x 7 x 7 stages C in exactly such a 7 x 8 buffer)
  nan_filled  the dispatcher's Hopper path at 7 x 7 x 7 with its scratch C filled with NaN
              by a CuPy kernel first: C must come out finite and right (so every element
              unpad_copy reads was written by the TMA store; none is left from before)
Reading the result: reports after ``tma_store`` (and none after ``st_global``) would mean
initcheck does not track TMA stores; reports after ``clipped`` only, that it misses clipped
ones; ``nan_filled`` finite and right means unpad_copy reads only elements the store wrote.
On the H200 (2026-12-02, notes/anyshape_device/): no report after ``tma_store`` or
``st_global``, ``nan_filled`` finite and right (``clipped`` was added after that run).
Without the sanitizer the same phases check their results (plain run: one line each).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.chapters import ch10_hopper as ch10
from helpers.runtime import anyshape as rt, gpu, launch, verify


def phase(name: str) -> None:
    gpu.cupy().cuda.Device().synchronize()
    print(f"==== phase {name}", flush=True)


def main() -> int:
    cp = gpu.cupy()
    M, N, K = 256, 256, 64                           # two 128-row tiles: one 2 x 1 cluster for rung 4
    for name, rung, (M, N, K) in (("tma_store", "r5_tma_store", (M, N, K)), ("st_global", "r4_cluster", (M, N, K)),
                                  ("clipped", "r5_tma_store", (7, 8, 8))):
        phase(name)
        A, B = verify.random_matrix((M, K), "float16"), verify.random_matrix((K, N), "float16")
        ref = verify.reference_gemm(A, B)
        C = cp.empty((M, N), cp.float16)
        launch.gemm(ch10.key(rung, "float16"), A, B, C)
        s = float(C.astype(cp.float32).sum())           # a CuPy kernel reads every element of C
        print(f"{name}: rel_err {verify.rel_err(C, ref):.1e}, sum {s:.3g}", flush=True)
    phase("nan_filled")
    A, B = verify.random_matrix((7, 7), "float16"), verify.random_matrix((7, 7), "float16")
    rt.scratch("hopC", (7, 8), "float16")[...] = cp.nan    # the buffer the Hopper path stages C in
    C = rt.gemm(A, B, strategy="hopper")
    err = verify.rel_err(C, verify.reference_gemm(A, B))
    print(f"nan_filled: finite {bool(cp.isfinite(C).all())}, rel_err {err:.1e}", flush=True)
    phase("done")
    return 0 if bool(cp.isfinite(C).all()) and err < 2e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
