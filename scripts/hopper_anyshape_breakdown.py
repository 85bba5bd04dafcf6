"""Where the time of chapter 10's kernel on an odd shape goes (H200, sm_90).

At 4093^3 the ``hopper`` strategy of helpers.runtime.anyshape copies A and B into
buffers whose rows are a multiple of 8 elements (TMA needs 16-byte strides), runs
chapter 10's kernel on (M, N8, K8) and copies C out of an M x N8 buffer. This
script times each part on its own and the whole call, in alternating rounds
against a reference timed in the same run (cuBLAS for GEMM parts, a device-to-device
cudaMemcpy of the same bytes for the copies), and two ways to do each copy:

- ``pad_copy`` / ``unpad_copy`` (kernels/09_any_shape.cu: 8 elements per thread);
- ``cudaMemcpy2DAsync`` (the driver's pitched copy; the pad columns and rows of the
  destination are zeroed once and never written again).

Usage (GPU): python scripts/hopper_anyshape_breakdown.py [--dtype float16] [--size 4093]
Prints one line per part; ``--json PATH`` saves them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from helpers.models import anyshape as model  # noqa: E402
from helpers.runtime import anyshape as rt, gpu, launch, timing  # noqa: E402
from helpers.runtime.verify import random_matrix  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--size", type=int, default=4093)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    cp = gpu.cupy()
    S, dt = a.size, a.dtype
    S8 = model.round_up(S, 8)
    A, B = random_matrix((S, S), dt, seed=1), random_matrix((S, S), dt, seed=2)
    C = cp.empty((S, S), dt)
    esz = np.dtype(A.dtype).itemsize
    fns = rt._kernels(dt, True)
    Ap, Bp, Cp = cp.zeros((S, S8), dt), cp.zeros((S8, S8), dt), cp.empty((S, S8), dt)
    A8, B8, C8 = (random_matrix((S8, S8), dt, seed=3), random_matrix((S8, S8), dt, seed=4),
                  cp.empty((S8, S8), dt))
    kern = launch.prepare(rt.HOPPER[dt], (S, S8, S8))
    kern8 = launch.prepare(rt.HOPPER[dt], (S8, S8, S8))
    cub = timing.cublas_gemm(A, B, C)
    flops = timing.gemm_flops(S, S, S)

    def pad_kernel(X, rows, cols, dst, dcols):
        return lambda: rt._copy(fns["pad_copy"], dst.shape[0] * dcols // 8,
                                (X, np.int32(rows), np.int32(cols), np.int64(cols), dst,
                                 np.int32(dst.shape[0]), np.int32(dcols)))

    def copy2d(dst, dpitch, src, spitch, width, height):
        return lambda: cp.cuda.runtime.memcpy2DAsync(dst.data.ptr, dpitch, src.data.ptr, spitch, width,
                                                     height, 3, cp.cuda.get_current_stream().ptr)

    unpad_k = lambda: rt._copy(fns["unpad_copy"], model.cdiv(S * S, 8),  # noqa: E731
                               (Cp, np.int32(S8), C, np.int32(S), np.int32(S)))
    # The copy reference: a plain memcpy of the bytes one operand's copy reads.
    src_flat, dst_flat = cp.empty(S * S * esz, cp.uint8), cp.empty(S * S * esz, cp.uint8)
    memcpy = timing.memcpy_d2d(dst_flat, src_flat)

    rows = []

    def row(name, fn, ref, ref_name, work=None):
        r = timing.time_pair(fn, ref, rounds=a.rounds)
        out = {"part": name, "ms": r["ms"], "ref": ref_name, "ref_ms": r["ref_ms"], "ratio": r["ratio"]}
        if work:
            out["TFLOP/s"] = timing.tflops(work, r["ms"])
        rows.append(out)
        print(f"{name:42s} {r['ms'] * 1e3:8.1f} us   {ref_name} {r['ref_ms'] * 1e3:8.1f} us   "
              f"ratio {r['ratio']:.3f}" + (f"   {out['TFLOP/s']:.0f} TFLOP/s" if work else ""), flush=True)

    # Correctness of the two copy routes first (the pad columns must be zero).
    pad_kernel(A, S, S, Ap, S8)()
    ref_Ap = Ap.copy()
    Ap[:] = 0
    copy2d(Ap, S8 * esz, A, S * esz, S * esz, S)()
    assert bool((Ap == ref_Ap).all()), "memcpy2D repack differs from pad_copy"
    pad_kernel(B, S, S, Bp, S8)()            # the kernel-alone row runs on the real operands (never zeros)
    kern(Ap, Bp, Cp, S, S8, S8)
    unpad_k()
    Cref = A.astype(cp.float64) @ B.astype(cp.float64)
    err = float(cp.abs(C.astype(cp.float64) - Cref).max() / cp.abs(Cref).max())
    assert err < 1e-2, f"kernel + unpad_copy: max relative error {err}"
    C2 = cp.full((S, S), cp.nan, dt)
    copy2d(C2, S * esz, Cp, S8 * esz, S * esz, S)()
    assert bool((C2 == C).all()), "unpad_copy and memcpy2D disagree"

    row("whole call: gemm(strategy='hopper')", lambda: rt.gemm(A, B, out=C, strategy="hopper"), cub, "cuBLAS", flops)
    row(f"aligned kernel at {S8}^3", lambda: kern8(A8, B8, C8, S8, S8, S8), timing.cublas_gemm(A8, B8, C8),
        f"cuBLAS {S8}^3", timing.gemm_flops(S8, S8, S8))
    row(f"kernel alone on ({S}, {S8}, {S8})", lambda: kern(Ap, Bp, Cp, S, S8, S8), cub, "cuBLAS", flops)
    row("pad A: pad_copy", pad_kernel(A, S, S, Ap, S8), memcpy, "memcpy same bytes")
    row("pad A: memcpy2D", copy2d(Ap, S8 * esz, A, S * esz, S * esz, S), memcpy, "memcpy same bytes")
    row("pad B: pad_copy", pad_kernel(B, S, S, Bp, S8), memcpy, "memcpy same bytes")
    row("unpad C: unpad_copy", unpad_k, memcpy, "memcpy same bytes")
    row("unpad C: memcpy2D", copy2d(C, S * esz, Cp, S8 * esz, S * esz, S), memcpy, "memcpy same bytes")
    dev = gpu.device_info()
    doc = {"gpu": dev.get("name"), "dtype": dt, "size": S, "rows": rows}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
