"""Where the time of chapter 10's kernel on an odd shape goes (H200, sm_90).

At 4093^3 the ``hopper`` strategy of helpers.runtime.anyshape copies A and B into
buffers whose rows are a multiple of 8 elements (TMA needs 16-byte strides), runs
chapter 10's kernel on (M, N8, K8) and copies C out of an M x N8 buffer. This
script times each part on its own and the whole call, each against a reference
timed in the same run, alternating:

- the GEMM parts (the whole call, the kernel alone on (M, N8, K8), the aligned kernel
  at N8^3) are :func:`helpers.runtime.bench.measure`: fresh random inputs, the output
  NaN-poisoned and checked against float64, timed against cuBLAS on the same shape;
- the copies, against a device-to-device cudaMemcpy of the same bytes, two ways each:
  ``pad_copy`` / ``unpad_copy`` (kernels/09_any_shape.cu: 8 elements per thread) and
  ``cudaMemcpy2DAsync`` (the driver's pitched copy; the pad columns and rows of the
  destination are zeroed once and never written again). The two routes are checked
  against each other here first; then each is :func:`helpers.runtime.bench.measure`
  with ``check=False`` (its output is not the copy that ``measure`` knows) and the
  same-run memcpy as the reference.

Usage (GPU): python scripts/hopper_anyshape_breakdown.py [--dtype float16] [--size 4093]
Prints one line per part; ``--json PATH`` saves them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import helpers  # noqa: F401  (fills the catalog; names the Hopper kernel to the runner)
from helpers.models import anyshape as model
from helpers.runtime import anyshape as rt, bench, gpu, launch


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
    kern = launch.prepare(rt.HOPPER[dt], (S, S8, S8))
    kern8 = launch.prepare(rt.HOPPER[dt], (S8, S8, S8))
    rows = []

    def row(name, rec, extra=""):
        out = {"part": name, "ms": rec.ms, "ref": rec.reference, "ref_ms": rec.ms * rec.ratio, "ratio": rec.ratio,
               "rel_err": rec.rel_err}
        if rec.metric == "TFLOP/s":
            out["TFLOP/s"] = rec.value
        rows.append(out)
        print(f"{name:42s} {rec.ms * 1e3:8.1f} us   {extra or rec.reference} {out['ref_ms'] * 1e3:8.1f} us   "
              f"ratio {rec.ratio:.3f}" + (f"   {rec.value:.0f} TFLOP/s" if rec.metric == "TFLOP/s" else ""),
              flush=True)

    def gemm(name, fn, shape):
        row(name, bench.measure(fn, shape, dt, rounds=a.rounds, kernel=name), f"cuBLAS {'x'.join(map(str, shape))}")

    gemm("whole call: gemm(strategy='hopper')", lambda A, B, C: rt.gemm(A, B, out=C, strategy="hopper"), (S, S, S))
    gemm(f"kernel alone on ({S}, {S8}, {S8})", lambda A, B, C: kern(A, B, C, S, S8, S8), (S, S8, S8))
    gemm(f"aligned kernel at {S8}^3", lambda A, B, C: kern8(A, B, C, S8, S8, S8), (S8, S8, S8))

    # The copies: the real operands of one call (random, never zeros), the two routes checked
    # against each other first, then each timed against a plain memcpy of the bytes one
    # operand's copy reads (the X of a float32 copy of S * S * itemsize bytes, to 4 bytes).
    A, B, C = bench.inputs((S, S, S), dt).args()
    esz = np.dtype(A.dtype).itemsize
    Ap, Bp, Cp = cp.zeros((S, S8), dt), cp.zeros((S8, S8), dt), cp.empty((S, S8), dt)

    def copy2d(dst, dpitch, src, spitch, width, height):
        return lambda: cp.cuda.runtime.memcpy2DAsync(dst.data.ptr, dpitch, src.data.ptr, spitch, width,
                                                     height, 3, cp.cuda.get_current_stream().ptr)
    rt.pad_into(A, Ap)
    ref_Ap = Ap.copy()
    Ap[:] = 0
    copy2d(Ap, S8 * esz, A, S * esz, S * esz, S)()
    assert bool((Ap == ref_Ap).all()), "memcpy2D repack differs from pad_copy"
    rt.pad_into(B, Bp)
    kern(Ap, Bp, Cp, S, S8, S8)
    rt.unpad_into(Cp, C)
    C2 = cp.full((S, S), cp.nan, dt)
    copy2d(C2, S * esz, Cp, S8 * esz, S * esz, S)()
    assert bool((C2 == C).all()), "unpad_copy and memcpy2D disagree"
    same = (1, S * S * esz // 4)
    data = bench.inputs(same, "float32", "copy")
    for name, fn in (("pad A: pad_copy", lambda: rt.pad_into(A, Ap)),
                     ("pad A: memcpy2D", copy2d(Ap, S8 * esz, A, S * esz, S * esz, S)),
                     ("pad B: pad_copy", lambda: rt.pad_into(B, Bp)),
                     ("unpad C: unpad_copy", lambda: rt.unpad_into(Cp, C)),
                     ("unpad C: memcpy2D", copy2d(C, S * esz, Cp, S8 * esz, S * esz, S))):
        row(name, bench.measure(lambda out, X, fn=fn: fn(), same, "float32", "copy", data=data, check=False,
                                rounds=a.rounds, kernel=name), "memcpy same bytes")
    doc = {"gpu": gpu.device_info().get("name"), "dtype": dt, "size": S, "rows": rows}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
