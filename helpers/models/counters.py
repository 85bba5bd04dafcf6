"""Two Nsight Compute panels side by side, per unit of work (chapters 3 and 6).

Pure functions over the raw metrics of one profiled launch (``{metric: value}``,
as :func:`helpers.runtime.panels.recorded` returns them in each run's "metrics"):

* :func:`derived` turns the counters that explain a kernel's speed into numbers that
  can be compared between two kernels doing the same GEMM: counts *per math
  instruction* (per FFMA for the FP32 kernels, per Tensor Core HMMA for the
  fp16 ones), percentages of a unit's peak, and warp-stall cycles per issued
  instruction;
* :func:`compare` lays two kernels next to each other, one row per quantity, with
  their ratio.

The unit of work. An FP32 kernel of the book performs each of its M*N*K
multiply-adds with one FFMA, so it executes M*N*K / 32 FFMA warp instructions
(:func:`math_instructions` with ``kind="ffma"``). A Tensor Core kernel's HMMA
count is measured (``sm__inst_executed_pipe_tensor_op_hmma.sum``).

Counts that Nsight Compute reports only as a percentage of peak (the LSU pipe's
instructions, the L1 data pipe's wavefronts) are turned into counts with
:data:`PEAK_PER_SM_CYCLE`: one LSU instruction and one L1 data-pipe wavefront per
SM per cycle. That peak is an assumption of this module, not a counter; the
recorded H200 panels support it (for ``smem_tiled`` the estimate gives 1.376 LSU
instructions per FFMA where its compiled loop has 44 per 32, and the estimated
L1 wavefronts exceed the counted shared-memory wavefronts by about the global
loads' share), and rows computed with it say "estimate". Counts that depend on
no peak (shared-memory wavefronts, bank conflicts, all instructions, HMMA) are
counted, and the ratio of two estimates does not depend on the peak either.
"""
from __future__ import annotations

import re

from . import diagnosis

# Peak of the LSU pipe (instructions) and of the L1 data pipe (wavefronts), per SM per cycle.
PEAK_PER_SM_CYCLE = 1.0

LSU_PCT = "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"
L1_WAVE_PCT = "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"
MIO_PCT = "sm__mio_inst_issued.avg.pct_of_peak_sustained_elapsed"
CYCLES = "gpc__cycles_elapsed.avg"               # SM-clock cycles elapsed, per GPC (= per SM)
SMS = "launch__sm_count"
HMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum"
ALL_INST = "sass__inst_executed_per_opcode"       # every warp instruction executed (sum over opcodes)
SHARED_WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
L2_TAG_PCT = "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed"
L2_SECTOR_PCT = "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"
DURATION = "gpu__time_duration.sum"


def _get(m: dict, name: str) -> float:
    v = m.get(name)
    if not isinstance(v, (int, float)):
        raise KeyError(f"metric {name!r} is missing from the panel")
    return float(v)


def math_instructions(metrics: dict, shape, kind: str) -> float:
    """Warp-level math instructions of one launch: M*N*K / 32 FFMAs (``kind="ffma"``,
    one FFMA per multiply-add, as every FP32 kernel of the book does) or the measured
    HMMA count (``kind="hmma"``). ValueError for another ``kind``."""
    if kind == "ffma":
        M, N, K = shape
        return M * N * K / 32.0
    if kind == "hmma":
        return _get(metrics, HMMA)
    raise ValueError(f"kind={kind!r}: must be 'ffma' or 'hmma'")


def _from_pct(metrics: dict, pct_name: str) -> float:
    """A count from a % of peak: pct/100 x elapsed cycles x SMs x :data:`PEAK_PER_SM_CYCLE`."""
    return _get(metrics, pct_name) / 100.0 * _get(metrics, CYCLES) * _get(metrics, SMS) * PEAK_PER_SM_CYCLE


def derived(metrics: dict, shape, kind: str) -> dict:
    """The comparable quantities of one launch (see the module docstring).

    Returns {"work": math instructions, "duration_us", "lsu_per_op" (LSU-pipe
    instructions per math instruction, estimate), "l1_waves_per_op" (L1 data-pipe
    wavefronts, estimate), "shared_waves_per_op" (counted), "inst_per_op" (every
    instruction, counted), "l1_pct", "lsu_pct", "mio_pct", "fma_pct", "tensor_pct",
    "l2_pct", "l2_tag_pct", "l1_hit", "l2_hit", "dram_pct", "issue_pct", "conflict_share",
    "l2_tag_time", "l2_sector_time" (% of peak x duration in us: proportional to the
    count, for ratios only), "stalls" ({reason: cycles per issued instruction})}.
    Raises KeyError naming a missing metric."""
    p = diagnosis.panel(metrics)
    work = math_instructions(metrics, shape, kind)
    dur = _get(metrics, DURATION) / 1e3
    return {
        "work": work, "duration_us": dur,
        "lsu_per_op": _from_pct(metrics, LSU_PCT) / work,
        "l1_waves_per_op": _from_pct(metrics, L1_WAVE_PCT) / work,
        "shared_waves_per_op": _get(metrics, SHARED_WAVES) / work,
        "inst_per_op": _get(metrics, ALL_INST) / work,
        "l1_pct": _get(metrics, L1_WAVE_PCT), "lsu_pct": _get(metrics, LSU_PCT), "mio_pct": _get(metrics, MIO_PCT),
        "fma_pct": p["fma_pct"], "tensor_pct": p["tensor_pct"], "l2_pct": p["l2_pct"],
        "l2_tag_pct": _get(metrics, L2_TAG_PCT), "l1_hit": _get(metrics, "l1tex__t_sector_hit_rate.pct"),
        "l2_hit": p["l2_hit"], "dram_pct": p["dram_pct"], "issue_pct": p["issue_pct"],
        "conflict_share": p["conflict_share"] or 0.0,
        "l2_tag_time": _get(metrics, L2_TAG_PCT) * dur, "l2_sector_time": _get(metrics, L2_SECTOR_PCT) * dur,
        "stalls": diagnosis.stalls(metrics),
    }


def value(d: dict, field: str) -> float:
    """``d[field]``, or a stall ("stall:<reason>", 0 when the reason is absent)."""
    if field.startswith("stall:"):
        return d["stalls"].get(field[6:], 0.0)
    return d[field]


def compare(a: dict, b: dict, fields) -> list:
    """Rows comparing two :func:`derived` results: ``fields`` is a sequence of
    (field, label, digits) or (field, label, digits, "relative"); a field is a key of
    :func:`derived` or "stall:<reason>". A "relative" row shows a = 1 and b = b / a
    (for the quantities that are only proportional to a count, such as "l2_tag_time").
    Each row: {"field", "quantity", "a", "b", "b / a" (None when a is 0)}."""
    rows = []
    for field, label, digits, *how in fields:
        va, vb = value(a, field), value(b, field)
        ratio = vb / va if round(va, digits) else None
        if how == ["relative"]:
            va, vb = 1.0, ratio
        rows.append({"field": field, "quantity": label, "a": round(va, digits),
                     "b": None if vb is None else round(vb, digits),
                     "b / a": None if ratio is None else round(ratio, 2)})
    return rows


def by_field(rows: list) -> dict:
    """{field: row} of :func:`compare`'s rows."""
    return {r["field"]: r for r in rows}


def cublas_tile(kernel_name: str) -> dict:
    """{"BM", "BN", "BK", "STAGES", "warps"} read from a cuBLAS kernel name such as
    ``sm80_xmma_gemm_..._tilesize256x128x8_stage3_warpsize4x2x1_...`` (``warps``: [along M,
    along N]); only the keys the name spells out, {} when it gives no tile."""
    t = re.search(r"tilesize(\d+)x(\d+)x(\d+)", kernel_name)
    if not t:
        return {}
    out = {"BM": int(t[1]), "BN": int(t[2]), "BK": int(t[3])}
    s = re.search(r"_stage(\d+)", kernel_name)
    w = re.search(r"warpsize(\d+)x(\d+)x\d+", kernel_name)
    if s:
        out["STAGES"] = int(s[1])
    if w:
        out["warps"] = [int(w[1]), int(w[2])]
    return out

