"""Chapter 3, shared-memory tiling (kernels/03_smem_tiling.cu).

The catalog entry; :func:`show_timings` (heavens 1-3 against cuBLAS), :func:`show_counters`
(why heaven 3 is slower than heaven 2: Nsight Compute counters of both, recorded on the H200,
per FFMA), :func:`show_loop_sass` (the instructions of the compiled k-tile loop) and
:func:`show_requested_intensity` (FLOP per byte the tiled loads request).
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter

from helpers.figures import profiling as prof_fig
from helpers.models import counters, tiles
from helpers.models.raster import cdiv
from helpers.runtime import bench, panels, timing
from helpers.runtime import compile as kc
from helpers.runtime.catalog import Kernel, register

from . import common


# chapter 3: one output per thread, TILE x TILE tiles staged in shared memory
register(Kernel(key="smem_tiled", chapter=3, title="shared-memory tiles, 1 output/thread",
                file="03_smem_tiling.cu", entry="sgemm_smem_tiled", op="gemm",
                defaults={"TILE": 32}, choices={"TILE": (8, 16, 32)},
                block=lambda p: (p["TILE"], p["TILE"], 1),
                grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1),
                sweep=({"TILE": 8}, {"TILE": 16}, {"TILE": 32}),
                owner=tiles.owner_smem_tiled))


# ------------------------------------------------------------------ notebook calls
# Why heaven 3 is slower than heaven 2: the counters that show it, per FFMA, from the
# Nsight Compute panels recorded on the H200 (chapter 8's artifact).
COUNTERS = (
    ("duration_us", "duration of the launch under ncu (us)", 0),
    ("lsu_per_op", "LSU-pipe instructions per FFMA (estimate)", 3),
    ("shared_waves_per_op", "shared-memory wavefronts per FFMA (counted)", 3),
    ("l1_waves_per_op", "L1/TEX data-pipe wavefronts per FFMA, global + shared (estimate)", 3),
    ("l1_pct", "L1/TEX data pipe busy, % of its peak wavefronts", 1),
    ("lsu_pct", "LSU pipe busy, % of its peak instructions", 1),
    ("l1_hit", "L1 hit rate of the global loads, %", 1),
    ("stall:long_scoreboard", "stall: long scoreboard (waits on global/L1 data), cycles per instruction", 2),
    ("stall:mio_throttle", "stall: MIO throttle (shared-memory instruction queue full)", 2),
    ("stall:barrier", "stall: barrier (__syncthreads)", 2),
    ("fma_pct", "FMA pipe busy, % of peak", 1),
    ("dram_pct", "DRAM busy, % of peak", 1),
)


def counter_rows(shape=(4096, 4096, 4096)) -> tuple[list, str]:
    """(rows, where): vec4 (heaven 2) against smem_tiled (heaven 3) per FFMA, from the
    recorded panels (:func:`helpers.runtime.panels.recorded`); KeyError when not recorded."""
    return common.recorded_counter_rows("vec4", "smem_tiled", "ffma", COUNTERS, shape)


PIPE_SHARED = "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed"   # not shared memory: FP16 + Tensor


def prose_values(shape=(4096, 4096, 4096)) -> dict:
    """{name: value} the prose glues, read from the recorded Nsight Compute panels of vec4 and
    smem_tiled at ``shape`` (the table of :func:`show_counters`; never profiled here): for each
    field of :data:`COUNTERS` used, ``<field>_vec4``, ``<field>_tiled`` and ``<field>_ratio``
    (tiled / vec4), with ":" in a field name written "_"; and ``pipe_shared_pct`` (% of peak
    of ``sm__pipe_shared_cycles_active`` in smem_tiled). KeyError when a panel is not recorded."""
    out = {}
    for r in counter_rows(shape)[0]:
        f = r["field"].replace(":", "_")
        out.update({k: v for k, v in ((f"{f}_vec4", r["a"]), (f"{f}_tiled", r["b"]), (f"{f}_ratio", r["b / a"]))
                    if v is not None})
    runs, _, _ = panels.recorded()
    tiled = next(r for r in runs if r["key"] == "smem_tiled" and list(r["shape"]) == list(shape))
    out["pipe_shared_pct"] = tiled["metrics"][PIPE_SHARED]
    return out


def show_counters(shape=(4096, 4096, 4096)) -> list:
    """The counter table of heaven 2 against heaven 3, labelled with where it was recorded,
    and one sentence of what it shows, every number read from the rows. Returns the rows."""
    rows, where = counter_rows(shape)
    prof_fig.show_counter_comparison(
        rows, "vec4", "smem_tiled",
        f"Heaven 2 (vec4) against heaven 3 (smem_tiled), {where}: one launch each, "
        f"M = N = K = {shape[0]}, default parameters (vec4 32 x 8 threads, smem_tiled TILE = 32). Counts are per FFMA "
        "warp instruction (M N K / 32 of them); "
        "'estimate' rows turn a % of peak into a count with a peak of one per SM per cycle "
        "(helpers.models.counters). Stalls: cycles per issued instruction. Not profiled live here; chapter 8 "
        "profiles again when it runs on a GPU, so its panel may differ in the last digits.")
    r = counters.by_field(rows)
    print(f"For the same FMAs, smem_tiled issues {r['lsu_per_op']['b / a']:.1f}x the LSU instructions of vec4 "
          f"({r['lsu_per_op']['b']:.2f} vs {r['lsu_per_op']['a']:.2f} per FFMA) and sends "
          f"{r['l1_waves_per_op']['b / a']:.2f}x the wavefronts through the L1/TEX data pipe, "
          f"{r['shared_waves_per_op']['b']:.2f} per FFMA of them shared-memory ones. "
          f"That pipe is busy {r['l1_pct']['a']:.0f} % of the time in vec4 and {r['l1_pct']['b']:.0f} % in "
          f"smem_tiled, whose warps wait most on a full shared-memory queue "
          f"(MIO throttle {r['stall:mio_throttle']['b']:.1f} cycles per instruction) and on barriers "
          f"({r['stall:barrier']['b']:.1f}); DRAM throughput is at most {max(r['dram_pct']['a'], r['dram_pct']['b']):.1f} % of its peak.")
    return rows


def show_timings(shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) heaven 1's coalesced kernel, vec4 and smem_tiled against one cuBLAS
    run: the records as a table, and one line comparing smem_tiled with the other two.
    Returns the records. A wrong result raises in :func:`helpers.runtime.bench.gemm`."""
    recs = bench.gemm(["naive_yfirst", "vec4", "smem_tiled"], shape)
    common.show_records(recs, f"Heavens 1-3, fp32, {common.mnk(shape)}.")
    naive, vec, tiled = recs
    if tiled["value"] and vec["value"]:
        print(f"smem_tiled (TILE = {tiled['params']['TILE']}) is {bench.speedup(tiled, vec):.2f}x vec4 and "
              f"{bench.speedup(tiled, naive):.2f}x the coalesced naive kernel; "
              f"{tiled['ratio']:.1%} of cuBLAS")
    return recs


def show_requested_intensity(shape=(4096, 4096, 4096), tile_sizes=(8, 16, 32)) -> None:
    """One line per TILE: 2MNK over the bytes the tiled loads request from global memory
    (:func:`helpers.models.tiles.reuse`) plus writing C once, in FLOP per byte (fp32)."""
    for t in tile_sizes:
        b = tiles.reuse({"TILE": t}, shape)["tiled"] + 4 * shape[0] * shape[1]
        print(f"TILE = {t:2d}: {timing.gemm_flops(*shape) / b:5.1f} FLOP per byte requested")


LOOP_OPS = ("FFMA", "LDS", "LDS.128", "STS", "LDG", "BAR.SYNC")     # what the loop's count names


def loop_sass_counts(tile: int = 32, arch: str = "sm_90") -> Counter:
    """Instructions of one pass of sgemm_smem_tiled's k-tile loop in its compiled SASS (TILE =
    ``tile``), by mnemonic without modifiers beyond the width ("LDS.128"); global loads counted as
    "LDG", barriers as "BAR.SYNC". The loop is the longest span between a label and a branch back
    to it (:func:`helpers.runtime.compile.sass_listing`; raises what it raises)."""
    lines = kc.sass_listing("03_smem_tiling.cu", "sgemm_smem_tiled", {"TILE": tile}, arch)
    labels = {ln.rstrip(":"): i for i, ln in enumerate(lines) if ln.startswith(".L_x_")}
    loops = [(labels[m.group(1)], i) for i, ln in enumerate(lines)
             if (m := re.search(r"BRA `\((\.L_x_\d+)\)", ln)) and labels.get(m.group(1), i) < i]
    start, end = max(loops, key=lambda se: se[1] - se[0])
    ops = Counter()
    for ln in lines[start + 1:end]:
        op = re.sub(r"^@!?\w+\s+", "", ln).split()[0]
        ops["LDG" if op.startswith("LDG") else "BAR.SYNC" if op.startswith("BAR.SYNC") else op] += 1
    return ops


def show_loop_sass(tile: int = 32, arch: str = "sm_90") -> None:
    """One line: the instructions of :data:`LOOP_OPS` in one pass of the compiled k-tile loop
    (:func:`loop_sass_counts`); a line saying what is missing where nvcc or nvdisasm is not here."""
    try:
        ops = loop_sass_counts(tile, arch)
    except (FileNotFoundError, subprocess.CalledProcessError) as e:
        print(f"The compiled loop cannot be listed here: {e}")
        return
    print(f"sgemm_smem_tiled, TILE = {tile}, compiled for {arch}: one pass of the k-tile loop issues "
          + ", ".join(f"{ops[k]} {k}" for k in LOOP_OPS)
          + " (counted in the SASS listing of nvcc's build, read with nvdisasm)")
