"""Chapter 1, naive GEMM: x-first vs y-first thread order (kernels/01_naive.cu).
"""
from __future__ import annotations

from helpers.models import mapping
from helpers.models.raster import cdiv
from helpers.runtime.catalog import Kernel, register

from .common import BLOCK_SWEEP, naive_bytes


_N = dict(chapter=1, file="01_naive.cu", op="gemm", sweep=BLOCK_SWEEP,
          defaults={"BLOCK_X": 32, "BLOCK_Y": 8},
          choices={"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (1, 2, 4, 8, 16, 32)},
          block=lambda p: (p["BLOCK_X"], p["BLOCK_Y"], 1))
register(Kernel(key="naive_xfirst", title="naive, x-first (uncoalesced)", entry="sgemm_naive_xfirst",
                owner=lambda p, s: mapping.owner("x-first", p, s), global_bytes=naive_bytes,
                grid=lambda p, s: (cdiv(s[0], p["BLOCK_X"]), cdiv(s[1], p["BLOCK_Y"]), 1),
                **{**_N, "sweep": ()}))   # ~0.3 s per run at 4096^3: the sweep is shown on y-first
register(Kernel(key="naive_yfirst", title="naive, y-first (coalesced)", entry="sgemm_naive_yfirst",
                owner=lambda p, s: mapping.owner("y-first", p, s), global_bytes=naive_bytes,
                grid=lambda p, s: (cdiv(s[1], p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1), **_N))
# The index scheme of helpers.models.mapping each kernel follows (its owner and load models).
mapping.name_scheme("naive_xfirst", "x-first")
mapping.name_scheme("naive_yfirst", "y-first")
