"""The autotuner's search space and cost model (heaven 8). Pure Python, no GPU.

:func:`space` enumerates a kernel's configurations (the product of its slider
choices); the runtime prunes them with the catalog's rules (each mirrors a
``static_assert`` of the kernel) before anything compiles. :func:`features`
describes one surviving configuration on one GPU, :func:`score` turns the
features into a predicted fraction of the kernel's best, and :func:`rank`
orders the survivors. The tuner then times the top of the ranking plus a random
sample; the sample measures how well the model ranks (:func:`spearman`).

The model, written down before it was compared with any measurement: a
configuration's throughput is the product of three fractions,

* **waves**: ``tiles / (waves x slots)``, the share of the GPU's block slots
  (SMs x resident blocks per SM) the last wave leaves busy;
* **reuse**: ``min(1, I_block / I_need)``, where ``I_block = 2 BM BN / ((BM + BN)
  x bytes per element)`` is the FLOP per byte a block streams from L2 into shared
  memory and ``I_need`` the FLOP per byte the math pipe needs from that path
  (peak math rate over L2 bandwidth: a machine constant, a lead from data sheets);
* **hiding**: ``min(1, in_flight / W_NEED)``, with ``in_flight`` = resident warps
  per SM x (stages - 1) / 4, the copy batches each SM sub-partition has in
  flight while it computes; :data:`W_NEED` of them cover the load latency;
* and, where the kernel has a bank model, **shared**: ideal over predicted
  shared-memory wavefronts (chapter 7's ldmatrix model for ``mma_sync``).

Configurations whose compiled kernel spills registers, or whose occupancy is
zero, are not ranked at all.
"""
from __future__ import annotations

import itertools
import math

from .mma_sync import predict_ncu_mma_sync
from .occupancy import occupancy
from .raster import cdiv

W_NEED = 4.0   # copy batches in flight per SM sub-partition that hide the L2 latency


def space(choices: dict, defaults: dict) -> list[dict]:
    """Every combination of ``choices`` ({name: values}) over ``defaults``, in product order."""
    names = list(choices)
    return [{**defaults, **dict(zip(names, vals))} for vals in itertools.product(*(choices[n] for n in names))]


def features(p: dict, shape, *, threads: int, smem: int, registers: int, in_bytes: int, sms: int,
             limits: dict | str | None = None) -> dict:
    """What the model reads of configuration ``p`` (BM, BN, optional STAGES) on ``shape``:
    {"blocks_per_sm", "warps_per_sm", "tiles", "waves", "wave_eff", "i_block", "in_flight",
    "limited_by"}. ``limits``: :data:`helpers.models.occupancy.DEVICE_LIMITS` of the GPU
    (an arch name or a dict). Raises ValueError when the block cannot be resident at all."""
    occ = occupancy(registers, threads, smem, limits)
    if occ["blocks_per_sm"] < 1:
        raise ValueError(f"{p}: no block fits an SM ({occ['limited_by']})")
    M, N, _ = shape
    tiles = cdiv(M, p["BM"]) * cdiv(N, p["BN"])
    slots = sms * occ["blocks_per_sm"]
    waves = cdiv(tiles, slots)
    return {"blocks_per_sm": occ["blocks_per_sm"], "warps_per_sm": occ["warps_per_sm"], "tiles": tiles,
            "waves": waves, "wave_eff": tiles / (waves * slots),
            "i_block": 2.0 * p["BM"] * p["BN"] / ((p["BM"] + p["BN"]) * in_bytes),
            "in_flight": occ["warps_per_sm"] * (p.get("STAGES", 2) - 1) / 4.0, "limited_by": occ["limited_by"]}


def estimate_registers(p: dict, threads: int) -> int:
    """Registers per thread before compiling: the fp32 accumulators of the block tile spread over
    its threads (BM x BN / threads) plus 64 for operands, addresses and loop state, capped at 255.
    Only orders the space before ``nvcc`` reports the real count (:func:`features` then uses that)."""
    return min(255, p["BM"] * p["BN"] // max(threads, 1) + 64)


def ldmatrix_efficiency(p: dict, shape) -> float:
    """Ideal over predicted ldmatrix wavefronts of ``gemm_mma_sync`` (chapter 7's bank model,
    :func:`helpers.models.mma_sync.predict_ncu_mma_sync`; ``p``: every -D value): 1 with the
    swizzle, 1/8 for the plain layout's 8-way conflicts."""
    d = predict_ncu_mma_sync(p, tuple(shape))
    w = d["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]
    return (w - d["sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"]) / w if w else 1.0


def score(f: dict, i_need: float) -> float:
    """The predicted fraction (0-1] of the kernel's best throughput: waves x reuse x hiding,
    times ``f["shared_eff"]`` when the features carry one (ideal / predicted shared-memory
    wavefronts from a bank model: 1 without conflicts)."""
    return (f["wave_eff"] * min(1.0, f["i_block"] / i_need) * min(1.0, f["in_flight"] / W_NEED)
            * f.get("shared_eff", 1.0))


def rank(items: list, i_need: float) -> list:
    """``items`` ({"params", "features", ...}) with "score" added, best first (ties keep order)."""
    out = [{**it, "score": score(it["features"], i_need)} for it in items]
    return sorted(out, key=lambda it: -it["score"])


def spearman(xs, ys) -> float:
    """Spearman's rank correlation of two equal-length sequences (average ranks for ties)."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("spearman: two sequences of the same length >= 2 are needed")
    rx, ry = ranks(list(xs)), ranks(list(ys))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else 0.0
