"""Nsight Compute counters -> a panel -> a bottleneck and the next step (chapter 8).

Three pure functions, no GPU:

* :func:`panel` picks the book's panel out of the raw metrics of one profiled
  launch (``ncu --page raw``: ``{metric name: value}``): compute and memory
  throughput as % of peak, DRAM bytes, L2 hit rate, occupancy, the top warp
  stalls, the FMA and Tensor pipes, shared-memory bank conflicts.
* :func:`diagnose` reads a panel with a profiler's decision table (which unit is
  busy, which stall leads), written out as ordered rules in :data:`RULES`: the
  first rule whose condition holds names the bottleneck and the step that removes
  it (a key of :data:`STEPS`). A stall leads only by a margin (:data:`STALL_TIE`).
* :func:`measured_intensity`: FLOP per byte of the DRAM traffic ncu counted.

The thresholds are fixed here, before any measurement is read: a unit is *busy*
at :data:`BUSY` % of its peak or more (Nsight Compute's own Speed-of-Light
guidance calls a unit above 60 % the likely limiter and both under 60 % a
latency problem); a kernel has *bank conflicts* when at least
:data:`CONFLICT_SHARE` of its shared-memory wavefronts are extra passes.
:data:`HEAVEN_STEPS` says which steps each heaven of the book takes, so a test
can check whether heaven N's diagnosis names what heaven N+1 does.
"""
from __future__ import annotations

import re

BUSY = 60.0            # % of peak: a unit at or above this is busy
CEILING = 80.0         # % of peak: a math pipe at or above this is near its ceiling
CONFLICT_SHARE = 0.2   # extra wavefronts / all shared-memory wavefronts
SECTOR_USE = 50.0      # % of each fetched global sector a load uses, below which loads waste sectors
                       # (0 means no plain global loads: cp.async and TMA copies are not counted)

# Panel field -> raw Nsight Compute metric names (gh100), first present wins.
FIELDS = {
    "sm_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "mem_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_pct": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "l1_pct": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "l2_pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_read": ("dram__bytes_read.sum",),
    "dram_write": ("dram__bytes_write.sum",),
    "l2_hit": ("lts__t_sector_hit_rate.pct",),
    "occ_achieved": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "occ_theoretical": ("sm__maximum_warps_per_active_cycle_pct",),
    "fma_pct": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",),
    "issue_pct": ("sm__inst_issued.avg.pct_of_peak_sustained_active",
                  "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    "sector_use": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",),
    "bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",),
    "shared_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",),
    "duration_ns": ("gpu__time_duration.sum",),
}
# Tensor pipe: the HMMA metric and the pipe-wide one (sm__pipe_tensor_op_gmma_cycles_active does
# not exist on gh100). On the H200 both read the same for chapter 10's wgmma kernel
# (results/h200-ncu-panels.json); the panel takes the larger, whichever a GPU fills.
TENSOR = ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")
# Warp stalls, as Nsight Compute's WarpStateStats section reports them: cycles a warp
# spends in each state per issued instruction.
STALL_PATTERNS = (re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
                  re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$"))
NOT_A_STALL = {"selected", "not_selected"}   # issuing, or eligible and passed over
# Stalls that mean "the operands are not here yet": memory, shared memory, barriers of a pipeline.
# Not ``wait``: Nsight Compute defines it as a fixed-latency execution dependency (the next
# instruction needs the result of an arithmetic one a few cycles earlier), which no load,
# copy or pipeline stage can hide; it belongs with ``math_pipe_throttle``, not with these.
DATA_WAIT = {"long_scoreboard", "short_scoreboard", "barrier", "mio_throttle", "lg_throttle",
             "membar", "sleeping", "drain", "imc_miss", "tex_throttle"}
# A stall leads only when it beats the runner-up by this share of its own cycles; closer than
# that the two are a tie and neither names the bottleneck (counters of one replayed launch
# move by a few per cent from run to run).
STALL_TIE = 0.10

# The steps the rules can name, and which heaven of the book takes each.
STEPS = {
    "coalesce": "coalesce and widen the global loads, so each fetched sector is used (heaven 2)",
    "smem_reuse": "stage tiles in shared memory, so a block reads each global element once (heaven 3)",
    "register_reuse": "more outputs per thread: register tiles and wider loads reuse each "
                      "shared/L1 load many times (heavens 2, 4, 5)",
    "bank_conflicts": "pad or swizzle the shared-memory layout (heavens 4 and 7)",
    "tensor_cores": "move the multiply-adds from the FMA pipe to the Tensor Cores (heaven 6)",
    "overlap": "overlap loads with math: double buffering, cp.async, more stages, TMA and "
               "warp specialisation (heavens 5, 7, 10)",
    "latency": "more independent work in flight: occupancy or instruction-level parallelism",
    "specialize": "the unit is near its ceiling: specialise for the shape (heaven 9)",
    "tune": "no unit is saturated and no data wait dominates: tune the configuration (heaven 8)",
}
# Each step in a few words, for what a notebook shows (the identifiers stay in code and records).
STEP_NAMES = {
    "coalesce": "coalesced loads",
    "smem_reuse": "shared-memory tiles",
    "register_reuse": "register tiles",
    "bank_conflicts": "padded or swizzled tiles",
    "tensor_cores": "Tensor Cores",
    "overlap": "overlap loads with math",
    "latency": "more work in flight",
    "specialize": "specialise for the shape",
    "tune": "tune the configuration",
}


def step_words(steps: str) -> str:
    """Step identifiers (one, or several joined by ", ") as a notebook shows them:
    "register_reuse, overlap" -> "register tiles and overlap loads with math"; an
    unknown identifier stays as it is."""
    words = [STEP_NAMES.get(s.strip(), s.strip()) for s in steps.split(",") if s.strip()]
    return " and ".join(filter(None, [", ".join(words[:-1]), words[-1]])) if words else ""


HEAVEN_STEPS = {
    2: {"coalesce", "register_reuse"},       # float4 loads, a 1x4 strip of C per thread
    3: {"smem_reuse"},
    4: {"register_reuse", "bank_conflicts"},  # a 1-D thread tile (TN outputs), then padding/swizzle
    5: {"register_reuse", "overlap"},         # register and warp tiles, double buffering, cp.async
    6: {"tensor_cores"},
    7: {"overlap", "bank_conflicts"},         # ldmatrix + swizzle, a deeper cp.async pipeline
    10: {"overlap"},                          # TMA, wgmma from shared memory, warp specialisation
}


def _first(metrics: dict, names) -> float | None:
    for n in names:
        v = metrics.get(n)
        if isinstance(v, (int, float)):
            return float(v)
    return None


def stalls(metrics: dict) -> dict:
    """{stall reason: cycles per issued instruction} from the WarpStateStats metrics
    (the first family of :data:`STALL_PATTERNS` present), issuing states left out."""
    for pat in STALL_PATTERNS:
        found = {}
        for name, v in metrics.items():
            m = pat.match(name)
            if m and isinstance(v, (int, float)) and m.group(1) not in NOT_A_STALL \
                    and not m.group(1).endswith("_not_issued"):
                found[m.group(1)] = float(v)
        if found:
            return found
    return {}


def panel(metrics: dict) -> dict:
    """The chapter-8 panel of one launch from its raw metrics.

    Returns {field of :data:`FIELDS`: value or None, "tensor_pct", "conflict_share"
    (extra wavefronts / wavefronts, None without shared-memory traffic),
    "stalls": the top three (reason, cycles per issued instruction), largest first}.
    Percentages are % of peak; bytes are bytes; duration is ns (under ncu's replay)."""
    p = {f: _first(metrics, names) for f, names in FIELDS.items()}
    t = [v for v in (_first(metrics, (n,)) for n in TENSOR) if v is not None]
    p["tensor_pct"] = max(t) if t else None
    w, c = p["shared_wavefronts"], p["bank_conflicts"]
    p["conflict_share"] = (c / w) if (w and c is not None) else None
    p["stalls"] = sorted(stalls(metrics).items(), key=lambda kv: -kv[1])[:3]
    return p


def _v(p, k):
    return p.get(k) or 0.0


def _math(p):
    return max(_v(p, "fma_pct"), _v(p, "tensor_pct"))


def _top_stall(p):
    """The leading stall reason of a panel, or None when there is none or the first two are
    within :data:`STALL_TIE` of each other (a tie)."""
    st = p.get("stalls") or []
    if not st:
        return None
    if len(st) > 1 and st[1][1] >= (1.0 - STALL_TIE) * st[0][1]:
        return None
    return st[0][0]


# Ordered rules: (name, condition(panel) -> bool, bottleneck, step). The first that holds decides.
RULES = (
    ("bank conflicts", lambda p: _v(p, "conflict_share") >= CONFLICT_SHARE,
     "shared-memory bank conflicts: extra wavefronts serialise the shared loads", "bank_conflicts"),
    ("wasted sectors", lambda p: 0 < _v(p, "sector_use") < SECTOR_USE and _math(p) < BUSY,
     "global loads use under half of each 32-byte sector they fetch", "coalesce"),
    ("global memory busy, math idle", lambda p: max(_v(p, "dram_pct"), _v(p, "l2_pct")) >= BUSY and _math(p) < BUSY,
     "global-memory traffic (DRAM or L2) with the math pipes mostly idle: too little reuse per fetch",
     "smem_reuse"),
    ("L1/shared busy, math idle", lambda p: _v(p, "l1_pct") >= BUSY and _math(p) < BUSY,
     "L1/shared-memory traffic with the math pipes mostly idle: each loaded value feeds too few FMAs",
     "register_reuse"),
    ("FMA pipe busy", lambda p: _v(p, "fma_pct") >= BUSY and _v(p, "tensor_pct") < 1,
     "the FP32 FMA pipe is busy: scalar multiply-adds are the work", "tensor_cores"),
    ("Tensor pipe waiting on data", lambda p: 1 <= _v(p, "tensor_pct") < CEILING and _top_stall(p) in DATA_WAIT,
     "the Tensor Cores wait for operands: loads and math are not overlapped enough", "overlap"),
    ("near the ceiling", lambda p: _math(p) >= CEILING,
     "the math pipe is near its ceiling", "specialize"),
    ("nothing busy", lambda p: _math(p) < BUSY and max(_v(p, "mem_pct"), _v(p, "l1_pct"), _v(p, "l2_pct"),
                                                      _v(p, "dram_pct")) < BUSY,
     "no unit is busy: too little work in flight to hide latency", "latency"),
)


def diagnose(p: dict) -> dict:
    """The bottleneck of a :func:`panel` and the next step, by the first rule of
    :data:`RULES` that holds (the fallback is "tune").

    Returns {"rule", "bottleneck", "step" (a key of :data:`STEPS`), "action"
    (its text), "evidence" (the panel values the rules read, rounded)}."""
    ev = {k: (round(p[k], 3) if isinstance(p.get(k), float) else p.get(k))
          for k in ("sm_pct", "mem_pct", "dram_pct", "l2_pct", "l1_pct", "fma_pct", "tensor_pct",
                    "conflict_share", "sector_use")}
    ev["top_stall"] = _top_stall(p)
    for name, cond, bottleneck, step in RULES:
        if cond(p):
            return {"rule": name, "bottleneck": bottleneck, "step": step, "action": STEPS[step], "evidence": ev}
    return {"rule": "fallback", "bottleneck": "no single limiter", "step": "tune", "action": STEPS["tune"],
            "evidence": ev}


def measured_intensity(shape, dram_read: float | None, dram_write: float | None) -> float | None:
    """2MNK over the DRAM bytes Nsight Compute counted (read + written); None without them."""
    if not dram_read and not dram_write:
        return None
    M, N, K = shape
    return 2.0 * M * N * K / ((dram_read or 0.0) + (dram_write or 0.0))
