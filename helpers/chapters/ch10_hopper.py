"""Chapter 10, the Hopper summit: TMA, wgmma, warp specialization, persistent tiles,
clusters and a TMA-store epilogue (kernels/10_hopper.cu, sm_90a only).

The catalog entries (five rungs, two dtypes each), the TMA argument builder the
launcher calls, and the thin functions the notebook calls: the swizzle check
against a tile TMA wrote, the descriptor table, the accumulator-layout check,
the pipeline model and the ladder.
"""
from __future__ import annotations

import numpy as np

from helpers.figures import hopper as hopper_fig, records, show, style
from helpers.models import hopper as model
from helpers.models.raster import cdiv
from helpers.runtime import anyshape, bench, catalog, compile as kc, gpu, launch, results, tma, verify
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of

from .common import Sentence
from .verdicts import change_kind

FILE = "10_hopper.cu"
BK, BN = 64, 256                  # fixed by the kernel (static_asserts): one 128-byte swizzle row of K, wgmma n256
SM90A = ("-arch=sm_90a",)         # wgmma and setmaxnreg exist only in sm_90a machine code
H200_SMS = 132                    # the recorded GPU's SM count (persistent grids without a GPU here)


def _ws(p) -> bool:
    """True for rungs 2-5 (entry hopper_ws, whose parameters include PERSISTENT); False for rung 1."""
    return "PERSISTENT" in p


def _consumers(p) -> int:
    """Consumer warpgroups of a hopper_ws build: 2, or 1 in rung 2's control (CONSUMERS=1)."""
    return p.get("CONSUMERS", 2)


def _bm(p) -> int:
    """Rows of C per block: one warpgroup's 64 (rung 1), 64 per consumer warpgroup (rungs 2-5: 128)."""
    return 64 * _consumers(p) if _ws(p) else 64


def _threads(p) -> int:
    """Threads per block: one warpgroup (rung 1), the producer's and the consumers' (rungs 2-5: 384)."""
    return 128 * (1 + _consumers(p)) if _ws(p) else 128


def _smem(p) -> int:
    """Dynamic shared memory, bytes: 1 KB alignment slack, the ring (A and B tiles per
    stage), the epilogue staging buffers (EPI_TMA), two mbarriers per stage."""
    ring = p["STAGES"] * (_bm(p) * BK * 2 + BK * BN * 2)
    return 1024 + ring + p.get("EPI_TMA", 0) * _consumers(p) * 64 * 128 * 2 + 2 * p["STAGES"] * 8


def _grid(p, s):
    M, N, _ = s
    if not _ws(p):                                              # rung 1: one 64 x 256 tile per block
        return (cdiv(N, BN), cdiv(M, 64), 1)
    cl = p["CLUSTER_M"]
    tiles = cdiv(cdiv(M, _bm(p)), cl) * cdiv(N, BN)                # row units of CLUSTER_M tiles x column tiles
    if not p["PERSISTENT"]:
        return (tiles * cl, 1, 1)
    sms = gpu.device_info()["sms"] if gpu.live() else H200_SMS
    return (max(cl, min(sms - sms % cl, tiles * cl)), 1, 1)     # one CTA per SM, whole clusters


def _rules(p, s):
    M, N, K = s
    return [
        multiple_of("K", K, 8, "TMA: the row pitch of A (K x 2 bytes) must be a multiple of 16 bytes"),
        multiple_of("N", N, 8, "TMA: the row pitch of B and C (N x 2 bytes) must be a multiple of 16 bytes"),
        (2 <= p["STAGES"] <= 4, "STAGES", p["STAGES"], "must be 2..4 (static_assert in the kernel)"),
        (max(M, N, K) < 2 ** 31, "M, N, K", (M, N, K), "must each be < 2^31 (32-bit tile coordinates)"),
    ] + ([(p["CLUSTER_M"] in (1, 2), "CLUSTER_M", p["CLUSTER_M"], "must be 1 or 2 (clusters along M)")]
         if "CLUSTER_M" in p else [])


def _args(p, A, B, C, M, N, K, *extra):
    """The kernel arguments: TMA descriptors of A (box 64 k x BM rows), B (box 64 n x 64 k)
    and, for rungs 2-5, C (box 64 x 64, read with EPI_TMA=1), then C, M, N, K and any
    ``extra`` (the owner array of a RECORD_OWNER build)."""
    maps = (tma.tensor_map("A", A, _bm(p), BK), tma.tensor_map("B", B, BK, 64))
    if _ws(p):
        maps += (tma.tensor_map("C", C, 64, 64),)
    return maps + (C, np.int32(M), np.int32(N), np.int32(K)) + tuple(extra)


def _owner_rung1(p, shape):
    """Owner model of rung 1: block (bx, by) covers rows 64 by.., columns 256 bx..; inside
    it the accumulator layout of :func:`helpers.models.hopper.accumulator_owner` (n = 256)."""
    M, N, _ = shape
    thread, _ = model.accumulator_owner(256)
    gx = cdiv(N, BN)
    out = np.full((cdiv(M, 64) * 64, gx * BN), -1, dtype=np.int64)
    for by in range(cdiv(M, 64)):
        for bx in range(gx):
            out[64 * by:64 * by + 64, BN * bx:BN * bx + BN] = (by * gx + bx) * 1024 + thread
    return out[:M, :N].astype(np.int32)


# The ladder. Each rung is one entry per dtype; the switches a rung sets are its defaults,
# so a sweep point or a slider can move one of them and nothing else.
_WS = {"STAGES": 4, "GROUP_M": 8}
RUNGS = (
    ("r1_tma_wgmma", "1: TMA + wgmma, 1 warpgroup, 64x256", "hopper_tma_wgmma", {"STAGES": 4}),
    ("r2_warp_specialized", "2: producer + 2 consumer warpgroups, 128x256", "hopper_ws",
     {**_WS, "PERSISTENT": 0, "CLUSTER_M": 1, "EPI_TMA": 0, "CONSUMERS": 2}),
    ("r3_persistent", "3: persistent, grouped tile order", "hopper_ws",
     {**_WS, "PERSISTENT": 1, "CLUSTER_M": 1, "EPI_TMA": 0}),
    ("r4_cluster", "4: 2x1 cluster, B multicast", "hopper_ws",
     {**_WS, "PERSISTENT": 1, "CLUSTER_M": 2, "EPI_TMA": 0}),
    ("r5_tma_store", "5: epilogue through smem + TMA store", "hopper_ws",
     {**_WS, "PERSISTENT": 1, "CLUSTER_M": 2, "EPI_TMA": 1}),
)
_CHOICES = {"STAGES": (2, 3, 4), "GROUP_M": (1, 4, 8, 16), "PERSISTENT": (0, 1), "CLUSTER_M": (1, 2),
            "EPI_TMA": (0, 1), "CONSUMERS": (1, 2)}
DTYPES = {"float16": ("f16", {}), "bfloat16": ("bf16", {"BF16": 1})}
# The switches of kernels/experiments/10_hopper_variants.cu (the same entries with one
# Hopper piece replaced: notes/hopper_tuning.md's measurements, the GPU suite's control);
# EARLY_RELEASE is retired, and the file stops a build that asks for it with a message
# (instead of the chapter's kernel ignoring the -D).
VARIANTS = "experiments/10_hopper_variants.cu"
VARIANT_SWITCHES = ("WAIT_SPIN", "CLUSTER_ARRIVE", "MULTICAST", "B_DESC_SWAP", "EARLY_RELEASE")


def key(rung: str, dtype: str = "bfloat16") -> str:
    """Catalog key of ``rung`` (e.g. "r5_tma_store") in ``dtype``: "hopper_r5_tma_store_bf16"."""
    return f"hopper_{rung}_{DTYPES[dtype][0]}"


for _dt, (_suffix, _fixed) in DTYPES.items():
    for _name, _title, _entry, _defaults in RUNGS:
        register(Kernel(
            key=f"hopper_{_name}_{_suffix}", chapter=10, title=f"{_title} ({_suffix})", file=FILE, entry=_entry,
            op="gemm", dtype=_dt, out_dtype=_dt, align=16, defaults=dict(_defaults), fixed=dict(_fixed),
            choices={n: v for n, v in _CHOICES.items() if n in _defaults},
            block=lambda p: (_threads(p), 1, 1), grid=_grid, smem=_smem,
            rules=_rules, compile_options=SM90A, min_cc=(9, 0), arch_specific=True, args=_args,
            owner=_owner_rung1 if _entry == "hopper_tma_wgmma" else None,
            experiments={sw: (VARIANTS, _entry) for sw in VARIANT_SWITCHES},
            sweep=(({"STAGES": 3}, {"CLUSTER_M": 1}, {"GROUP_M": 1}, {"GROUP_M": 16})
                   if _name == "r5_tma_store" else ({"CONSUMERS": 1},) if _name == "r2_warp_specialized" else ())))

# Chapter 9's "hopper" strategies (helpers.runtime.anyshape, the dispatcher helpers.gemm) run
# this chapter's last rung on any shape; its split-K build is that rung with EPI_TMA=0.
anyshape.use_hopper({dt: key("r5_tma_store", dt) for dt in DTYPES})

LADDER = [name for name, *_ in RUNGS]
SHORT = {"r1_tma_wgmma": "1 TMA+wgmma", "r2_warp_specialized": "2 specialized", "r3_persistent": "3 persistent",
         "r4_cluster": "4 cluster", "r5_tma_store": "5 TMA store"}


# ------------------------------------------------------------------ notebook calls
def ladder(shape=(4096, 4096, 4096), dtypes=("bfloat16", "float16")) -> list:
    """Measure (or read) every rung at ``shape`` for each dtype, each against cuBLAS of its
    dtype in alternating rounds. Records gain ``rung_label`` (the rung's short name)."""
    recs = []
    for dt in dtypes:
        for r in bench.gemm([key(n, dt) for n in LADDER], shape, dtype=dt):
            recs.append({**r, "rung_label": SHORT[r["kernel"][len("hopper_"):].rsplit("_", 1)[0]]})
    return recs


# Rung 2 makes two changes at once; its control (CONSUMERS=1: the producer and ring of rung 2 with
# one consumer warpgroup and rung 1's 64-row tile) sits between them. (label, rung, params)
CONTROL = "r2_control"            # the control's name in results/<gpu>-hopper.json (scripts/ncu_hopper.py)
SPLIT_STEPS = (("rung 1: no specialization, 64 x 256", "r1_tma_wgmma", {}),
               ("control: specialized, 1 consumer, 64 x 256", "r2_warp_specialized", {"CONSUMERS": 1}),
               ("rung 2: specialized, 2 consumers, 128 x 256", "r2_warp_specialized", {}))


def rung2_split(shape=(4096, 4096, 4096), dtypes=("bfloat16", "float16")) -> list:
    """Measure (or read) rung 1, rung 2's control and rung 2 at ``shape`` (M, N, K) in each
    dtype, in one same-run call per dtype (each against cuBLAS of its dtype in alternating
    rounds). Records gain ``step`` (the row's label in :data:`SPLIT_STEPS`)."""
    recs = []
    for dt in dtypes:
        items = [(key(rung, dt), params) for _, rung, params in SPLIT_STEPS]
        for (label, _, _), r in zip(SPLIT_STEPS, bench.gemm(items, shape, dtype=dt)):
            recs.append({**r, "step": label})
    return recs


def show_rung2_split(recs: list) -> None:
    """The split of rung 2 as one table: each step's ratio to cuBLAS per dtype, and what
    each of the two changes adds (ratio after / ratio before)."""
    dts = list(dict.fromkeys(r["dtype"] for r in recs))
    by = {(r["dtype"], r["step"]): r["ratio"] for r in recs}
    rows, prev = [], {}
    for label, _, _ in SPLIT_STEPS:
        row = {"step": label}
        for dt in dts:
            v = by.get((dt, label))
            row[f"{dt}: ratio to cuBLAS"] = v
            row[f"{dt}: x previous row"] = round(v / prev[dt], 2) if v and prev.get(dt) else None
            prev[dt] = v
        rows.append(row)
    shape = " x ".join(map(str, recs[0]["shape"])) if recs else ""
    show.table(rows, list(rows[0]), f"Rung 2 split into its two changes, {shape}; each row against cuBLAS of "
               f"its dtype in the same run; {bench.where(recs)}.")


PIPE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"


def profile_rows() -> tuple[list, str]:
    """Per rung, the Nsight Compute counters recorded by ``scripts/ncu_hopper.py``
    (``results.artifact("hopper")``): tensor-pipe activity (%), DRAM bytes read
    (MB), L2 traffic (GB). Returns (rows, where); rows is [] when not recorded."""
    doc = results.artifact("hopper")
    rows = [{"rung": r["rung"], "tensor pipe active (%)": round(r["measured"].get(PIPE, float("nan")), 1),
             "DRAM read (MB)": round(r["measured"].get("dram__bytes_read.sum", 0) / 1e6, 1),
             "L2 traffic (GB)": round(r["measured"].get("lts__t_bytes.sum", 0) / 1e9, 2)}
            for r in (doc or {}).get("runs", [])]
    return rows, results.artifact_where(doc, "hopper")


def show_ladder(recs: list, caption: str) -> None:
    """The ladder as a table and as grouped bars; where the ladder's shape is the profiled one
    (results/<gpu>-hopper.json), the recorded tensor-pipe activity on a second axis."""
    records.show_table(recs, caption)
    rows, where = profile_rows()
    profiled = (results.artifact("hopper") or {}).get("shape")
    same = bool(recs) and all(list(r["shape"]) == list(profiled or []) for r in recs)
    pipe = {SHORT[r["rung"]]: r["tensor pipe active (%)"] for r in rows if r["rung"] in SHORT} if same else None
    show.figure(hopper_fig.ladder_figure(recs, pipe=pipe, pipe_where=where))


def show_profile() -> None:
    """The Nsight Compute table of the ladder (bf16, 4096^3), or a note that it is not recorded."""
    rows, where = profile_rows()
    if rows:
        show.table(rows, list(rows[0]), f"Nsight Compute, one launch per rung, bf16, M = N = K = 4096; {where}. "
                   "ncu replays each launch serially: read its activity and bytes, not its durations.")
    else:
        show.note(f"Nsight Compute counters of the ladder: {where} by `python scripts/ncu_hopper.py "
                  "--out results/h200-hopper.json`.", title="Profiler")


def show_descriptors(rung: str = "r5_tma_store") -> None:
    """The wgmma matrix descriptors of A and B for the first k16 step of stage 0, field by
    field, as the kernel builds them (model: :func:`helpers.models.hopper.operand_descriptors`)."""
    p = catalog.get(key(rung)).defaults
    bm = _bm(p)
    d = model.operand_descriptors(bm, BN, BK, a_base=0, b_base=p["STAGES"] * bm * BK * 2)   # stage 0
    rows = []
    for op, desc in d.items():
        for f in desc.fields():
            rows.append({"operand": op, **f})
        rows.append({"operand": op, "field": "64-bit value", "bits": "", "raw": f"0x{desc.encode():016x}",
                     "bytes": None})
    show.table(rows, ["operand", "field", "bits", "raw", "bytes"],
               "wgmma shared-memory matrix descriptors of A (K-major) and B (N-major, transpose bit set) "
               f"for the first k16 step of stage 0 of {key(rung)}, A at byte 0 of the ring, B after the "
               f"{p['STAGES']} A stages (model of kernels/10_hopper.cu's "
               "desc_a / desc_b; helpers.models.hopper, unit-tested; the GPU test B_DESC_SWAP=1 shows that "
               "exchanging LBO and SBO of B gives wrong results).")


def check_tma_swizzle(dtype: str = "float16") -> str:
    """Live: TMA-load one 64 x 64 box with SWIZZLE_128B (kernel ``tma_box_dump``), read back the
    raw shared memory, and compare every element's position with :func:`helpers.models.hopper.tma_box_layout`.
    AssertionError on any difference. Without an sm_90 GPU: a line saying so."""
    here = gpu.capability() if gpu.live() else None
    if here != (9, 0):
        return ("TMA swizzle check: needs sm_90 (H100/H200); "
                + ("no GPU in this run" if here is None else f"this GPU is {gpu.describe_target()}")
                + ". The GPU suite runs it (tests/gpu/test_hopper.py).")
    cp = gpu.cupy()
    src = cp.arange(64 * 64, dtype=cp.uint16).reshape(64, 64).view(verify.np_dtype(dtype))
    out = cp.full(64 * 64, 0xFFFF, dtype=cp.uint16)
    fn = kc.build(FILE, "tma_box_dump", {"BF16": int(dtype == "bfloat16")}, extra_options=SM90A)
    fn((1, 1, 1), (128, 1, 1), (tma.tensor_map("X", src, 64, 64), out), shared_mem=2048 + 64 * 128)
    got = cp.asnumpy(out)                                    # got[slot] = logical index r * 64 + c
    lay = model.tma_box_layout(64, 64, 2, "128B") // 2       # element slot of logical (r, c)
    want = np.empty(64 * 64, dtype=np.int64)
    want[lay.ravel()] = np.arange(64 * 64)
    bad = int((got != want).sum())
    assert bad == 0, f"TMA wrote {bad} of 4096 elements somewhere the swizzle model does not put them"
    return ("TMA swizzle check: a 64 x 64 box loaded with SWIZZLE_128B on this GPU put all 4096 elements "
            "exactly where helpers.models.hopper.tma_box_layout says.")


def check_accumulators(dtype: str = "bfloat16", shape=(200, 520, 72)) -> str:
    """The owner check of rung 1 (:func:`helpers.runtime.launch.check_owner`): which thread
    stored every element of C, recorded by the kernel, against the accumulator-layout model."""
    spec = catalog.get(key("r1_tma_wgmma", dtype))
    if not gpu.live() or launch.unable(spec):
        return (f"{spec.key}: needs {spec.needs()}; the GPU suite checks the accumulator layout on an H100/H200 "
                "(tests/gpu/test_hopper.py).")
    return launch.check_owner(spec.key, shape)


PIPE_T_LOAD = 2.5    # the pipeline model's load time, in k-tiles of wgmma (a parameter of the figure)


def show_pipeline(stages=(1, 2, 4), k_tiles: int = 12, t_load: float = PIPE_T_LOAD) -> None:
    """The mbarrier ring as a model timeline for several STAGES (loads take ``t_load``
    units of one k-tile's wgmma): how many stages hide the copy latency."""
    for s in stages:
        ev = model.pipeline_schedule(s, k_tiles, t_load=t_load, t_mma=1.0)
        show.figure(hopper_fig.pipeline_figure(ev, title=f"STAGES = {s}; a load takes {t_load} k-tiles of wgmma"))


def show_resources(dtype: str = "bfloat16") -> None:
    """Registers, shared memory, spills and occupancy of every rung: read from the driver
    on a GPU, from ``nvcc -arch=sm_90a -Xptxas -v`` without one (a note if neither)."""
    rows, where = launch.resource_rows([(key(r, dtype), {}) for r in LADDER], label="key+diff")
    if rows:
        show.table(rows, ["config", "threads", "registers", "shared memory (KiB)", "spill bytes", "blocks/SM",
                          "occupancy"], f"The rungs at their defaults, {dtype}; {where}. The warp-specialized "
                   "rungs are compiled for 168 registers a thread (65536 / 384, rounded down to the allocation step of 8); setmaxnreg then moves the "
                   "consumers to 232 and the producer to 40 at run time.")
    else:
        show.note(f"Registers and shared memory are read from the compiled kernel: this {where}.", title="Resources")


def show_refusals(shape=(4096, 4096, 4096)) -> None:
    """Bad parameters and shapes, refused in Python before anything is compiled or launched."""
    spec = catalog.get(key("r5_tma_store"))
    for bad_p, bad_s in (({"STAGES": 5}, shape), ({}, (4096, 4090, 4096)), ({}, (4096, 4096, 4092))):
        try:
            spec.validate(spec.params(**bad_p), bad_s)
            raise AssertionError(f"{bad_p} {bad_s} was accepted")
        except ValueError as e:
            print(f"{style.params_text(bad_p)} on M, N, K = {', '.join(map(str, bad_s))}: "
                  f"refused before compiling: {e}")


# ------------------------------------------------------------------ numbers the prose quotes (MyST-NB glue)
def step_words(a: float, b: float) -> Sentence:
    """How the prose names a step of the ratio to cuBLAS from ``a`` to ``b`` (fractions): within
    the noise between runs, a gain or a loss (:func:`helpers.chapters.verdicts.change_kind`)."""
    kind = change_kind(b - a)
    return Sentence("a difference within the noise between runs" if kind == "within" else
                    f"a {kind} beyond the noise between runs")


def prose_values(shape=(4096, 4096, 4096)) -> dict:
    """Every measured number chapter 10's prose quotes, from the records only: each rung's ratio
    to cuBLAS at ``shape`` and at 8192^3 in both dtypes (results/<gpu>.json: ``r{n}_f16``,
    ``r{n}_bf16``, ``r5_8192_f16``, ...), the Nsight Compute counters of the ladder
    rung 2's control (``r2c1_f16``, ``r2c1_bf16``: CONSUMERS=1), the Nsight Compute counters of the ladder
    and of the control (results/<gpu>-hopper.json, bf16: ``r{n}_read_mb``, ``r2c1_read_mb`` DRAM reads in MB, ``r{n}_tensor`` tensor pipe
    active in %), chapter 7's mma-only ceiling (``probe_top``, extras.mma_sync_probes, fp16) and
    the pipeline model's load time (``pipe_t_load``, k-tiles), and the words for three steps of the
    fp16 ladder (``step_r2c1_r2``, ``step_r2_r3``, ``step_r3_r4``: :func:`step_words`;
    ``cluster_reading``: what rung 4's fewer DRAM reads and its step say). KeyError when a record is
    missing."""
    out = {"pipe_t_load": PIPE_T_LOAD}
    for i, rung in enumerate(LADDER, 1):
        for dt, sfx in (("float16", "f16"), ("bfloat16", "bf16")):
            spec = catalog.get(key(rung, dt))
            for s, tag in ((shape, ""), ((8192, 8192, 8192), "_8192")):
                rec = results.lookup(spec.key, spec.defaults, dt, list(s))
                if rec is None or rec.get("ratio") is None:
                    raise KeyError(f"{spec.key} at {list(s)} is not recorded in results/{results.DEFAULT_SLUG}.json")
                out[f"r{i}{tag}_{sfx}"] = rec["ratio"]
    for dt, sfx in (("float16", "f16"), ("bfloat16", "bf16")):    # rung 2's control (CONSUMERS=1)
        spec = catalog.get(key("r2_warp_specialized", dt))
        rec = results.lookup(spec.key, spec.params(CONSUMERS=1), dt, list(shape))
        if rec is None or rec.get("ratio") is None:
            raise KeyError(f"{spec.key} with CONSUMERS=1 is not recorded in results/{results.DEFAULT_SLUG}.json")
        out[f"r2c1_{sfx}"] = rec["ratio"]
    doc = results.artifact("hopper")
    if not doc:
        raise KeyError(f"results/{results.DEFAULT_SLUG}-hopper.json is not recorded")
    for r in doc["runs"]:
        tag = "r2c1" if r["rung"] == CONTROL else f"r{LADDER.index(r['rung']) + 1}"
        out[f"{tag}_read_mb"] = r["measured"]["dram__bytes_read.sum"] / 1e6
        out[f"{tag}_tensor"] = r["measured"][PIPE]
    out["r1_read_x"] = out["r1_read_mb"] / out["r2_read_mb"]
    for a, b in (("r2c1", "r2"), ("r2", "r3"), ("r3", "r4")):
        out[f"step_{a}_{b}"] = step_words(out[f"{a}_f16"], out[f"{b}_f16"])
    kind = change_kind(out["r4_f16"] - out["r3_f16"])
    out["cluster_reading"] = Sentence(
        "fewer bytes read and no gain beyond the noise: DRAM traffic was not what held rung 3 back"
        if kind == "within" else
        "fewer bytes read and a gain beyond the noise: DRAM traffic held rung 3 back in part" if kind == "gain" else
        "fewer bytes read and yet a loss beyond the noise: what the cluster costs (two blocks wait for "
        "each other's tiles) outweighed what it saved, a reading not timed apart here")
    out["probe_top"] = results.load()["extras"]["mma_sync_probes"]["float16"]["rows"][-1]["ratio"]
    return out
