"""Chapter 2, vectorized loads and layout: float4, K-major B (kernels/02_vectorized.cu).
"""
from __future__ import annotations

from helpers.models import mapping
from helpers.models.raster import cdiv
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of

from .common import BLOCK_SWEEP, naive_bytes


_V = dict(chapter=2, file="02_vectorized.cu", op="gemm", align=16, sweep=BLOCK_SWEEP,
          defaults={"BLOCK_X": 32, "BLOCK_Y": 8},
          choices={"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (1, 2, 4, 8, 16, 32)},
          block=lambda p: (p["BLOCK_X"], p["BLOCK_Y"], 1))
# vec4: per 4 k-steps a thread loads one A float4 and four B float4 for 16 FMAs:
# A bytes = M*(N/4)*K*4, B bytes = M*(N/4)*K*16, i.e. 5*M*N*K in all.
register(Kernel(key="vec4", title="float4, 1x4 strip per thread", entry="sgemm_vec4",
                owner=lambda p, s: mapping.owner("float4", p, s), global_bytes=lambda p, s: 5 * s[0] * s[1] * s[2] + 4 * s[0] * s[1],
                grid=lambda p, s: (cdiv(s[1], 4 * p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                rules=lambda p, s: [multiple_of("K", s[2], 4, "float4 loads along the rows of A"),
                                    multiple_of("N", s[1], 4, "float4 loads along the rows of B and C")],
                **_V))
register(Kernel(key="kmajor", title="K-major B (Bt), float4 along k", entry="sgemm_kmajor", layout="NT",
                owner=lambda p, s: mapping.owner("k-major", p, s), global_bytes=naive_bytes,
                grid=lambda p, s: (cdiv(s[1], p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                rules=lambda p, s: [multiple_of("K", s[2], 4, "float4 loads along k of A and Bt")],
                # 32 x 32 = 1024 threads caps registers at 64 and spills on sm_80: not shipped
                **{**_V, "sweep": tuple(b for b in BLOCK_SWEEP if b != {"BLOCK_X": 32, "BLOCK_Y": 32})}))
# The index scheme of helpers.models.mapping each kernel follows (its owner and load models).
mapping.name_scheme("vec4", "float4")
mapping.name_scheme("kmajor", "k-major")
