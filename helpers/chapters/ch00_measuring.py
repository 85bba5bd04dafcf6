"""Chapter 0, measuring honestly: the transpose warm-up (kernels/00_transpose.cu).
"""
from __future__ import annotations

from helpers.models import banks
from helpers.models.raster import cdiv
from helpers.runtime.catalog import Kernel, register


def _transpose_rules(p, s):
    return [(p["TILE"] % p["BLOCK_ROWS"] == 0, "BLOCK_ROWS", p["BLOCK_ROWS"],
             f"must divide TILE={p['TILE']} (each thread moves TILE/BLOCK_ROWS elements)")]


_T = dict(chapter=0, file="00_transpose.cu", op="transpose",
          sweep=tuple({"TILE": t, "BLOCK_ROWS": r} for t, r in
                      ((32, 2), (32, 4), (32, 8), (32, 16), (32, 32), (16, 4), (16, 8), (64, 4), (64, 8), (64, 16))),
          defaults={"TILE": 64, "BLOCK_ROWS": 4},   # best of the sweep on the H200 (see chapter 0)
          choices={"TILE": (16, 32, 64), "BLOCK_ROWS": (2, 4, 8, 16, 32)},
          block=lambda p: (p["TILE"], p["BLOCK_ROWS"], 1),
          grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1),
          rules=_transpose_rules)
register(Kernel(key="copy_tiled", title="copy (upper bound)", entry="copy_tiled", **{**_T, "op": "copy"}))
register(Kernel(key="transpose_naive", title="naive transpose", entry="transpose_naive", **_T))
register(Kernel(key="transpose_shared", title="shared-memory tile", entry="transpose_shared", **_T))
register(Kernel(key="transpose_padded", title="padded tile (+1)", entry="transpose_shared",
                fixed={"PAD": 1}, **_T))
for _key in ("transpose_shared", "transpose_padded"):     # their shared tile, in the bank model
    banks.name_model(_key, "transpose")


def nosync_factor(rows: list) -> float:
    """How many times "faster" than the honest figure the unsynchronized host timer made
    cuBLAS look: the "vs honest" of the no-synchronize row of
    :func:`helpers.runtime.timing.rules` (live, or the recorded rows); glued into the prose."""
    return next(r["vs honest"] for r in rows if r["rule"].startswith("no synchronize"))
