"""Theoretical occupancy: resident blocks and warps per SM of one launch configuration.

The CUDA Occupancy Calculator's model, the one occupancy model of the book
(chapters 5-7 tables, the sweep figures, the live slider). Pure Python.
"""
from __future__ import annotations

from .raster import cdiv


# Per-SM limits by architecture. Source: CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability" (7.5: 1024 resident threads, 16 blocks, 64 KB of
# shared memory per SM and per block; 8.0: 2048 threads, 32 blocks, 164 KB per SM, 163 KB
# per block; 8.6: 1536 threads, 16 blocks, 100 KB per SM, 99 KB per block; 8.9: as 8.6 with
# 24 blocks; 9.0: 2048 threads, 32 blocks, 228 KB per SM, 227 KB per block; all: 64K 32-bit
# registers per SM, 255 per thread), the CUDA Occupancy Calculator (register allocation unit:
# 256 registers per warp; warp allocation granularity 4; shared memory allocation unit 128
# bytes, 256 on 7.5) and cudaDevAttrReservedSharedMemoryPerBlock (1 KB the system keeps
# per block from compute capability 8.0 on; none on 7.x). Live, the runtime takes these
# numbers from the device itself (helpers.runtime.gpu.device_info).
_SM = {"regs_per_sm": 65536, "reg_alloc_unit": 256, "warp_alloc_granularity": 4, "max_regs_per_thread": 255,
       "smem_reserved_per_block": 1024, "smem_alloc_unit": 128}
DEVICE_LIMITS = {
    "sm_75": {**_SM, "max_threads_per_sm": 1024, "max_blocks_per_sm": 16,
              "smem_per_sm": 65536, "smem_per_block_max": 65536, "smem_reserved_per_block": 0,
              "smem_alloc_unit": 256},
    "sm_80": {**_SM, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
              "smem_per_sm": 167936, "smem_per_block_max": 166912},
    "sm_86": {**_SM, "max_threads_per_sm": 1536, "max_blocks_per_sm": 16,
              "smem_per_sm": 102400, "smem_per_block_max": 101376},
    "sm_89": {**_SM, "max_threads_per_sm": 1536, "max_blocks_per_sm": 24,
              "smem_per_sm": 102400, "smem_per_block_max": 101376},
    "sm_90": {**_SM, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
              "smem_per_sm": 233472, "smem_per_block_max": 232448},
}


def occupancy(registers: int, threads: int, smem_bytes: int = 0, arch: str | dict | None = None) -> dict:
    """Theoretical occupancy of one launch configuration (CUDA Occupancy Calculator model).

    ``registers`` per thread (nvcc -Xptxas -v or the driver), ``threads`` per
    block, ``smem_bytes`` per block (static + dynamic), ``arch`` one of
    :data:`DEVICE_LIMITS` (None: sm_90), or a dict of limits shaped like
    :data:`DEVICE_LIMITS` (the runtime passes this GPU's own). Registers are allocated per
    warp in units of 256, and to warps in groups of 4; each block's shared memory is
    ``smem_bytes`` plus the 1 KB the system reserves, rounded up to 128 bytes. Returns ``{"blocks_per_sm", "warps_per_sm",
    "occupancy" (resident threads / max), "limited_by" ("threads", "blocks",
    "registers" or "shared memory"), "limits": blocks allowed by each}``.
    Raises ValueError for a block that cannot run at all.
    """
    if isinstance(arch, dict):
        d = arch
    else:
        arch = arch or "sm_90"
        if arch not in DEVICE_LIMITS:
            raise ValueError(f"arch={arch!r}: must be one of {tuple(DEVICE_LIMITS)}")
        d = DEVICE_LIMITS[arch]
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads={threads}: must be in [1, 1024]")
    if not 1 <= registers <= d["max_regs_per_thread"]:
        raise ValueError(f"registers={registers}: must be in [1, {d['max_regs_per_thread']}]")
    if smem_bytes > d["smem_per_block_max"]:
        raise ValueError(f"smem_bytes={smem_bytes}: must be <= {d['smem_per_block_max']}")
    warps = cdiv(threads, 32)
    regs_per_warp = cdiv(registers * 32, d["reg_alloc_unit"]) * d["reg_alloc_unit"]
    # Registers go to warps in groups of warp_alloc_granularity (4: one warp per SM sub-partition,
    # each with a quarter of the register file): 40 registers x 64 threads fit 24 blocks, not 25.
    g = d.get("warp_alloc_granularity", 1)
    warps_by_regs = d["regs_per_sm"] // regs_per_warp // g * g
    lim = {"threads": d["max_threads_per_sm"] // (warps * 32), "blocks": d["max_blocks_per_sm"],
           "registers": warps_by_regs // warps}
    if smem_bytes > 0:
        unit = d.get("smem_alloc_unit", 1)
        lim["shared memory"] = d["smem_per_sm"] // (cdiv(smem_bytes + d["smem_reserved_per_block"], unit) * unit)
    blocks = min(lim.values())
    order = ("threads", "blocks", "registers", "shared memory")     # ties: fixed limits first
    limiter = min((k for k in order if k in lim), key=lambda k: (lim[k], order.index(k)))
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps * 32 / d["max_threads_per_sm"], "limited_by": limiter, "limits": lim}
