"""Chapter 3, shared-memory tiling (kernels/03_smem_tiling.cu).
"""
from __future__ import annotations

from helpers.models import tiles
from helpers.models.raster import cdiv
from helpers.runtime.catalog import Kernel, register


# chapter 3: one output per thread, TILE x TILE tiles staged in shared memory
register(Kernel(key="smem_tiled", chapter=3, title="shared-memory tiles, 1 output/thread",
                file="03_smem_tiling.cu", entry="sgemm_smem_tiled", op="gemm",
                defaults={"TILE": 32}, choices={"TILE": (8, 16, 32)},
                block=lambda p: (p["TILE"], p["TILE"], 1),
                grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1),
                sweep=({"TILE": 8}, {"TILE": 16}, {"TILE": 32}),
                owner=tiles.owner_smem_tiled))
