"""Chapter 1, naive GEMM: x-first vs y-first thread order (kernels/01_naive.cu).

The catalog entries; the calls of the notebook: :func:`show_sectors` (the sectors one warp
requests, from the index model) and :func:`show_timings` (both kernels against cuBLAS).
"""
from __future__ import annotations

from helpers.figures import show
from helpers.models import mapping
from helpers.models.raster import cdiv
from helpers.runtime import bench, panels
from helpers.runtime.catalog import Kernel, register

from . import common
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


# ------------------------------------------------------------------ notebook calls
NAIVE = ("naive_xfirst", "naive_yfirst")


def sector_rows(p=None, shape=(4096, 4096, 4096)) -> list:
    """Per kernel of :data:`NAIVE` at block ``p`` (default 32 x 8): the 32-byte sectors one
    warp requests at one k step for A and for B, and per FMA (:mod:`helpers.models.mapping`)."""
    p = p or {"BLOCK_X": 32, "BLOCK_Y": 8}
    rows = []
    for key in NAIVE:
        s = mapping.load_summary(key, p, shape)
        rows.append({"kernel": key, "sectors per warp load of A": s["loads"][0]["sectors"],
                     "of B": s["loads"][1]["sectors"], "sectors per FMA": s["sectors_per_fma"]})
    return rows


def show_sectors(p=None, shape=(4096, 4096, 4096)) -> None:
    """The table of :func:`sector_rows`, captioned as a model (no GPU involved)."""
    rows = sector_rows(p, shape)
    show.table(rows, list(rows[0]), "32-byte sectors one warp requests at one k step (model of the "
               "kernels' index arithmetic; not a measurement).")


def show_timings(shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) x-first and y-first against cuBLAS in one run: the records as a table,
    and one line with how many times faster y-first is. Returns the records (x-first, y-first).
    A wrong result raises in :func:`helpers.runtime.bench.gemm` (an AssertionError)."""
    recs = bench.gemm(list(NAIVE), shape)
    common.show_records(recs, f"Heaven 1, fp32, {common.mnk(shape)}.")
    x, y = recs
    if x["value"] and y["value"]:
        print(f"y-first is {bench.speedup(y, x):.1f}x faster than x-first")
    return recs


def prose_values() -> dict:
    """{name: value} the prose glues, from the H200's records of both kernels at their defaults,
    4096^3 fp32 (never measured): ``naive_x_ratio`` and ``naive_y_ratio`` (ratio to cuBLAS),
    ``naive_speedup`` (y-first's ratio to cuBLAS over x-first's: each against its own same-run cuBLAS timing) and ``naive_x_ms`` (one x-first run, ms)."""
    x, y = common.recorded_run("naive_xfirst"), common.recorded_run("naive_yfirst")
    out = {"naive_x_ratio": x["ratio"], "naive_y_ratio": y["ratio"], "naive_speedup": bench.speedup(y, x),
           "naive_x_ms": x["ms"]}
    for name, row in zip(("x", "y"), coalescing_rows()[0]):
        out[f"naive_{name}_spr"] = row["sectors per request"]
        out[f"naive_{name}_dram_gb"] = row["DRAM read (GB)"]
    out.update({f"naive_{n}_model_spr": (r["sectors per warp load of A"] + r["of B"]) / 2
                for n, r in zip(("x", "y"), sector_rows())})
    return out


def coalescing_rows() -> tuple[list, str]:
    """([row per kernel of :data:`NAIVE`], where): what Nsight Compute counted in one launch at
    4096^3 (``results/<gpu>-ncu-controls.json``; the median launch by DRAM bytes read where a kernel
    was profiled several times, "launches" says how many): 32-byte sectors per global load request,
    the L1 and L2 hit rates (%) and the bytes read from DRAM (GB). KeyError when not recorded."""
    rows, where = [], ""
    for key in NAIVE:
        m, where = panels.control(key)
        rows.append({"kernel": key, "launches": len(panels.control_launches(key)[0]),
                     "sectors per request": round(panels.sectors_per_request(m), 2),
                     "L1 hit %": round(m["l1tex__t_sector_hit_rate.pct"], 1),
                     "L2 hit %": round(m["lts__t_sector_hit_rate.pct"], 1),
                     "DRAM read (GB)": round(m["dram__bytes_read.sum"] / 1e9, 3)})
    return rows, where


def show_coalescing_counters() -> None:
    """The table of :func:`coalescing_rows`, captioned with where it was recorded."""
    rows, where = coalescing_rows()
    several = any(r["launches"] > 1 for r in rows)
    show.table(rows, list(rows[0]), "Nsight Compute at 4096^3, global loads, "
               + ("the median launch by DRAM bytes read where a kernel ran several times "
                  if several else "one launch of each kernel ") + f"({where}).")
