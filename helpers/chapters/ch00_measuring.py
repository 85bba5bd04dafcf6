"""Chapter 0, measuring honestly: the transpose warm-up (kernels/00_transpose.cu).

The catalog entries; the calls of the notebook: :func:`show_problem` (FLOPs and bytes),
:func:`show_ceilings`, :func:`show_timing_rules`, :func:`show_transpose` (the four kernels
against a copy) and :func:`show_transpose_banks` (why one float of padding helps).
"""
from __future__ import annotations

import numpy as np

from helpers.figures import roofline as roofline_fig, show
from helpers.models import banks
from helpers.models.raster import cdiv
from helpers.runtime import bench, results, roofline, timing
from helpers.runtime.catalog import Kernel, register

from . import common


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


def prose_values() -> dict:
    """{name: value} the prose glues, read from the recorded ceilings of the H200
    (``results/<gpu>.json``), never measured: ``balance_fp32``, the machine balance in FLOP per
    byte (cuBLAS SGEMM TFLOP/s at 4096^3 over the device-to-device copy's GB/s)."""
    ceil = results.load()["ceilings"]
    return {"balance_fp32": ceil["cublas_TFLOPs"]["float32"] * 1e3 / ceil["copy_GBps"]}


# ------------------------------------------------------------------ notebook calls
TRANSPOSES = ("copy_tiled", "transpose_naive", "transpose_shared", "transpose_padded")


def show_problem(shape=(4096, 4096, 4096)) -> None:
    """Print the FLOPs of an fp32 GEMM of ``shape`` (M, N, K), the fewest bytes it must move
    (A and B read once, C written once, 4 bytes each) and their ratio, in one line."""
    flops, nbytes = timing.gemm_flops(*shape), timing.gemm_min_bytes(*shape)
    print(f"{flops / 1e9:.1f} GFLOP, {nbytes / 1e6:.0f} MB at least, so at most {flops / nbytes:.0f} FLOP per byte")


def show_ceilings() -> dict:
    """Measure (live) or read (recorded) this GPU's ceilings, show them as a table, and return
    them (:func:`helpers.runtime.roofline.ceilings`: copy GB/s, cuBLAS TFLOP/s per dtype, spec)."""
    ceil = roofline.ceilings()
    roofline_fig.show_ceilings(ceil)
    return ceil


def show_timing_rules() -> list:
    """cuBLAS SGEMM 4096^3 timed honestly and with timing rules broken, as a table (live, or
    the recorded rows of :func:`helpers.runtime.timing.rules`). Returns the rows (for the glue)."""
    rows, where = timing.rules()
    show.table(rows, {"rule": "how it was timed", "ms": "ms", "TFLOP/s": "TFLOP/s",
                      "vs honest": "vs honest", "what it shows": "what went wrong"},
               f"cuBLAS SGEMM 4096^3 timed four ways (vs honest: the row's TFLOP/s over the first row's); {where}.")
    return rows


def show_transpose(shape=(4096, 4096)) -> None:
    """Measure (or read) the four transpose kernels on ``shape`` (ROWS, COLS) against a
    device-to-device copy: a table and bars of effective bandwidth over the copy's."""
    recs = bench.transpose(list(TRANSPOSES), shape)
    common.show_records(recs, f"Transpose of a {shape[0]} x {shape[1]} float32 matrix, effective bandwidth.",
                        bar_title=f"Transpose {shape[0]} x {shape[1]}: effective bandwidth as a fraction of a copy")


def show_transpose_banks(tile: int = 64, pads=(0, 1)) -> None:
    """One line per padding: the banks lanes 0..7 hit when a warp reads a column of a
    ``tile``-wide float tile (lane x at word x * (tile + pad)), how many distinct banks the
    32 lanes hit, and the wavefronts that costs (32 banks of 4-byte words)."""
    for pad in pads:
        banks = (np.arange(32) * (tile + pad)) % 32
        distinct = len(set(banks.tolist()))
        waves = 32 // distinct
        print(f"PAD={pad}: banks hit by lanes 0..7: {' '.join(map(str, banks[:8].tolist()))} ..., "
              f"{distinct} distinct {'bank' if distinct == 1 else 'banks'} -> "
              f"{waves} {'wavefront' if waves == 1 else 'wavefronts'}")
