"""Chapter 2, vectorized loads and layout: float4, K-major B (kernels/02_vectorized.cu).

The catalog entries; the calls of the notebook: :func:`show_loads` (load instructions and
sectors of one warp step, from the index model) and :func:`show_timings` (heaven 1's best
kernel, vec4 and kmajor against cuBLAS).
"""
from __future__ import annotations

from helpers.figures import show
from helpers.models import diagnosis, mapping
from helpers.models.raster import cdiv
from helpers.runtime import bench, panels
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of

from . import common
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
# strip4, the control of vec4: the same 1 x 4 outputs per thread with scalar loads (columns
# BLOCK_X apart, so every warp load is one contiguous 128-byte run); same bytes as vec4.
register(Kernel(key="strip4", title="1x4 outputs per thread, scalar loads (control)", entry="sgemm_strip4",
                owner=lambda p, s: mapping.owner("scalar-strip", p, s), global_bytes=lambda p, s: 5 * s[0] * s[1] * s[2] + 4 * s[0] * s[1],
                grid=lambda p, s: (cdiv(s[1], 4 * p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                **{**_V, "align": 4, "sweep": ()}))
register(Kernel(key="kmajor", title="K-major B (Bt), float4 along k", entry="sgemm_kmajor", layout="NT",
                owner=lambda p, s: mapping.owner("k-major", p, s), global_bytes=naive_bytes,
                grid=lambda p, s: (cdiv(s[1], p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                rules=lambda p, s: [multiple_of("K", s[2], 4, "float4 loads along k of A and Bt")],
                # 32 x 32 = 1024 threads caps registers at 64 and spills on sm_80: not shipped
                **{**_V, "sweep": tuple(b for b in BLOCK_SWEEP if b != {"BLOCK_X": 32, "BLOCK_Y": 32})}))
# The index scheme of helpers.models.mapping each kernel follows (its owner and load models).
mapping.name_scheme("vec4", "float4")
mapping.name_scheme("strip4", "scalar-strip")
mapping.name_scheme("kmajor", "k-major")


# ------------------------------------------------------------------ notebook calls
COMPARED = ("naive_yfirst", "vec4", "kmajor")   # heaven 1's coalesced kernel and this chapter's two


def load_rows(p=None, shape=(4096, 4096, 4096)) -> list:
    """Per kernel of :data:`COMPARED` at block ``p`` (default 32 x 8): load instructions and
    32-byte sectors of one warp at one step of its k loop, and sectors per FMA
    (:mod:`helpers.models.mapping`)."""
    p = p or {"BLOCK_X": 32, "BLOCK_Y": 8}
    rows = []
    for key in COMPARED:
        s = mapping.load_summary(key, p, shape)
        rows.append({"kernel": key, "load instructions per step": s["instructions"],
                     "sectors per step": s["sectors"], "sectors per FMA": s["sectors_per_fma"]})
    return rows


def show_loads(p=None, shape=(4096, 4096, 4096)) -> None:
    """The table of :func:`load_rows`, captioned as a model (no GPU involved)."""
    rows = load_rows(p, shape)
    show.table(rows, list(rows[0]), "One warp, one step of its k loop (model of the kernels' index "
               "arithmetic; not a measurement).")


def show_timings(shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) :data:`COMPARED` against cuBLAS in one run: the records as a table,
    and one line with vec4 and kmajor as multiples of the naive kernel. Returns the records.
    A wrong result raises in :func:`helpers.runtime.bench.gemm` (an AssertionError)."""
    recs = bench.gemm(list(COMPARED), shape)
    common.show_records(recs, f"Heavens 1 and 2, fp32, {common.mnk(shape)}.")
    base, vec, km = recs
    if base["value"] and vec["value"]:
        print(f"vec4 is {bench.speedup(vec, base):.2f}x the best heaven-1 kernel; "
              f"kmajor is {bench.speedup(km, base):.2f}x")
    return recs


# ------------------------------------------------------------------ the control of vec4
CONTROL = ("naive_yfirst", "strip4", "vec4")   # one output; four outputs, scalar loads; four, float4


def control_rows(p=None, shape=(4096, 4096, 4096)) -> list:
    """Per kernel of :data:`CONTROL`: outputs per thread, load instructions per FMA and
    32-byte sectors per FMA of one warp at one k step (:mod:`helpers.models.mapping`; a model)."""
    p = p or {"BLOCK_X": 32, "BLOCK_Y": 8}
    rows = []
    for key in CONTROL:
        s = mapping.load_summary(key, p, shape)
        rows.append({"kernel": key, "outputs per thread": 1 if key == "naive_yfirst" else 4,
                     "load instructions per FMA": round(s["instructions_per_fma"], 4),
                     "sectors per FMA": round(s["sectors_per_fma"], 4)})
    return rows


def show_control(shape=(4096, 4096, 4096)) -> list:
    """The control of vec4's two changes, measured (or read) in one run against one cuBLAS
    reference: the naive kernel, four outputs per thread with scalar loads (strip4), and vec4;
    the model rows of :func:`control_rows`; one line with the two factors (strip4 over the naive
    kernel: more outputs per thread; vec4 over strip4: float4 loads). Returns the records. A wrong
    result raises in :func:`helpers.runtime.bench.gemm` (an AssertionError)."""
    rows = control_rows(shape=shape)
    show.table(rows, list(rows[0]), "Loads and sectors per FMA of one warp at one k step (model of the "
               "kernels' index arithmetic; not a measurement).")
    recs = bench.gemm(list(CONTROL), shape)
    common.show_records(recs, f"vec4's two changes timed apart, fp32, {common.mnk(shape)}.")
    base, strip, vec = recs
    if base["value"] and strip["value"] and vec["value"]:
        print(f"four outputs per thread (strip4 / naive): {bench.speedup(strip, base):.2f}x; "
              f"float4 loads on top (vec4 / strip4): {bench.speedup(vec, strip):.2f}x "
              "(quotients of the ratios to cuBLAS, each kernel against its own same-run cuBLAS)")
    return recs


def dram_spread_sentence() -> common.Sentence:
    """How many launches of each control kernel the control profile holds and, with several, the
    range of vec4's and strip4's DRAM bytes read over them (GB; :func:`helpers.runtime.panels.dram_read_spread`).
    A :class:`~helpers.chapters.common.Sentence` for a ``{glue:md}`` role."""
    spread = {k: panels.dram_read_spread(k) for k in CONTROL}
    counts = [spread[k][3] for k in CONTROL]
    if max(counts) == 1:
        return common.Sentence("Each figure is one launch.")
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    if len(set(counts)) == 1:
        head = f"Each figure is the median of {words.get(counts[0], counts[0])} launches in that profile"
    else:
        head = ("The figures are the medians of " + ", ".join(str(n) for n in counts[:-1])
                + f" and {counts[-1]} launches in that profile")
    moved = [f"{k} {'read ' if not i else ''}{spread[k][1]:.1f} to {spread[k][2]:.1f} GB"
             for i, k in enumerate(k for k in ("vec4", "strip4") if spread[k][3] > 1)]
    return common.Sentence(head + ("; between them " + " and ".join(moved) if moved else "") + ".")


def prose_values() -> dict:
    """{name: value} the prose glues, from the H200's records at the defaults, 4096^3 fp32 (never
    measured): the ratios to cuBLAS of :data:`CONTROL` (``ctl_naive``, ``ctl_strip4``, ``ctl_vec4``),
    each record against its own cuBLAS; the DRAM bytes each read in one profiled launch of the
    control profile (``dram_*``, GB, results/<gpu>-ncu-controls.json; the median launch where a
    kernel was profiled several times) with ``dram_spread``, one sentence on how many launches
    those are and how far vec4's and strip4's moved between them, and vec4's L2 hit rate there
    (``l2_vec4_ctl``, %, of that median launch); vec4's DRAM bytes read and L2 hit rate in chapter 8's panels
    (``dram_vec4_panel``, GB, and ``l2_vec4_panel``, %; results/<gpu>-ncu-panels.json), which place
    the roofline's diamonds. KeyError (or StopIteration) when one is not recorded."""
    r = {k: common.recorded_run(k)["ratio"] for k in CONTROL}
    ctl = {k: panels.control(k)[0] for k in CONTROL}
    runs, _, _ = panels.recorded()
    panel = next(x for x in runs if x["key"] == "vec4" and list(x["shape"]) == [4096, 4096, 4096])["panel"]
    return {"ctl_naive": r["naive_yfirst"], "ctl_strip4": r["strip4"], "ctl_vec4": r["vec4"],
            "dram_naive": ctl["naive_yfirst"]["dram__bytes_read.sum"] / 1e9,     # GB, the median launch of each
            "dram_strip4": ctl["strip4"]["dram__bytes_read.sum"] / 1e9,
            "dram_vec4": ctl["vec4"]["dram__bytes_read.sum"] / 1e9,
            "dram_spread": dram_spread_sentence(),
            "l2_vec4_ctl": diagnosis.panel(ctl["vec4"])["l2_hit"],
            "dram_vec4_panel": panel["dram_read"] / 1e9, "l2_vec4_panel": panel["l2_hit"]}
