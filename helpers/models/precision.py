"""Floating-point formats as a model: unit roundoff, and the fp16 running sum that stops growing.

Pure NumPy (no GPU). The measurements that go with it: the kernels' fp16 accumulator
(helpers/chapters/ch06_wmma.py) and TF32 vs FP32 cuBLAS (helpers/runtime/precision.py).
"""
from __future__ import annotations

import numpy as np


# Unit roundoff of each storage format (half the spacing of numbers in [1, 2)):
# the floor of the relative error of storing one value. Significand bits incl.
# the implicit one: fp32 24, tf32 11, fp16 11, bf16 8.
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "tf32": 2.0 ** -11, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


DEMO = {"M": 128, "N": 256, "K": 65536, "a": 0.5, "b": 0.5}


def fp16_sum_emulation(K: int = DEMO["K"], a: float = DEMO["a"], b: float = DEMO["b"],
                       step: int = 16, every: int = 256) -> dict:
    """The running sum of ``K`` products ``a * b``, added ``step`` products at
    a time (16: one WMMA 16x16x16 step; 1: a scalar loop), held in float16
    after every addition, and in float32 for comparison.

    Returns {"k": int32 array of k after each sampled step, "fp16", "fp32":
    float32 arrays of the running sums there (sampled every ``every`` k, plus
    the last), "final_fp16", "final_fp32", "exact" (a*b*K), "stalls_at_k"
    (first k after which the fp16 sum never changes again, or None)}.
    The model assumes each step's ``step`` products are summed exactly and
    rounded once into the accumulator (PTX does not document the internal
    precision of one HMMA step; for these inputs every partial sum is exact).
    """
    if K % step:
        raise ValueError(f"K={K}: must be a multiple of step={step}")
    add = np.float16(a * b * step)
    add32 = np.float32(a * b * step)
    s16, s32 = np.float16(0), np.float32(0)
    ks, v16, v32 = [0], [0.0], [0.0]
    last_change = 0
    for i in range(1, K // step + 1):
        new = np.float16(s16 + add)
        if new != s16:
            last_change = i * step
        s16 = new
        s32 = np.float32(s32 + add32)
        k = i * step
        if k % every == 0 or k == K:
            ks.append(k)
            v16.append(float(s16))
            v32.append(float(s32))
    return {"k": np.array(ks, dtype=np.int32), "fp16": np.array(v16, dtype=np.float32),
            "fp32": np.array(v32, dtype=np.float32), "final_fp16": float(s16), "final_fp32": float(s32),
            "exact": a * b * K, "stalls_at_k": last_change if last_change < K else None}
