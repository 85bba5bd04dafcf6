"""Heaven 9's models: waves, split-K, stream-K, and the dispatcher's rules (pure Python).

Everything here is arithmetic on (M, N, K), the tile and the GPU's SM count, or on
records already measured (:func:`zoo_row`, :func:`splitk_cap_rows`); nothing launches.
``helpers.runtime.anyshape`` runs what :func:`plan` decides on the kernels of
``kernels/09_any_shape.cu``.

Names: a *tile* is one BM x BN block of C; a *wave* is one round of tiles with
one block per SM (the kernel runs one 256-thread block of 98 KB shared memory
per SM); a *k-tile* is one BK slice of the K loop. ``sms`` is the number of
streaming multiprocessors.

The split-K time model's constants were measured on the H200 with the heaven-7 main
loop (notes/any_shape_tuning.md, runs 2-4, 2026-12-01): one SM does ``RATE_PER_SM`` =
2.9 TFLOP/s of fp16/bf16 mma with all 132 busy (378 TFLOP/s / 132); a copy kernel moves
``COPY_BPS`` = 4.2e12 bytes/s counted as read + write (the device-to-device copy of
``h200-anchors.json``); a launch costs ``LAUNCH_S`` = 4 microseconds. They set the *order*
of split counts, not absolute times. The operand path and the limits on splitting and
streaming are thresholds read off the recorded shape zoo (below), where a time model of
small problems failed: there a call is mostly the launch overhead of Python and CuPy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .raster import cdiv, tile_of_block
from .words import counted

CFG = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4, "GROUP_M": 8}   # heaven 7's tile
HOPPER_CFG = {**CFG, "BK": 64}   # chapter 10's tile (128 x 256, one 64-wide swizzle atom of K per k-tile)
# Heaven 7's loop on a 128 x 64 tile, four warps of 64 x 32: for C at most 64 columns wide, where
# the 128 x 256 tile computes four times the columns C has (30000 x 64 x K: a quarter of each tile
# used). Such a problem is memory-bound: each 2-byte element of A feeds N multiply-adds, so its
# arithmetic intensity is at most about N FLOP per byte (64 here), under the ridge point; a tile
# that wastes no columns and leaves room for several blocks per SM is what it needs.
NARROW_CFG = {**CFG, "BN": 64, "WN": 32}
NARROW_MAX_N = 64           # the narrow tile where C has at most this many columns ...
TILES = {"wide": CFG, "narrow": NARROW_CFG}
RATE_PER_SM = 2.9e12        # FLOP/s per SM, all SMs busy (H200, heaven-7 main loop)
COPY_BPS = 4.2e12           # copy kernels, bytes read + written per second
LAUNCH_S = 4e-6             # one extra kernel launch, seconds
PROLOGUE_KTILES = 4         # pipeline fill + epilogue of one block, in k-tiles of work
# The fused split-K reduction (one launch) has the last block of each tile read all of the
# tile's partials alone, through L2: cheap for a thin tile (a GEMV row), slow for a full
# 128 x 256 tile of many splits, where the two-pass kernel spreads the reads over every SM.
FUSED_SM_BPS = 1.0e11       # one SM reading partials from L2, bytes/s: an estimate, not yet measured
# The row limit read off the control that times both reductions at the same split count,
# kernel-only (results/h200-anyshape.json, section "reductions"): in the record of d59a3f5 the
# one-launch sum ran at 0.83-1.02 of the two-pass speed with 1 and 16 rows, and at 0.33-0.90 with
# 128 rows and more, on both loops; what it saves, a launch, is host time the end-to-end zoo times
# (an earlier record had it 1.14-1.47x faster at 1 and 16 rows). The bandwidth test above alone
# chose it on 128-row tiles too.
# One limit for both loops: a per-loop limit (1 row on wgmma, from one run's 0.94 at 16 rows)
# was recorded once and lost at 16 rows end to end (notes/session_2026-12-06c.md).
FUSED_MAX_M = 16            # the one-launch sum only where C has at most this many rows
# Three thresholds read off the shape zoo recorded on the H200 (results/h200-anyshape.json,
# first recording, 2026-12-01), where the time model above ranked plans wrongly because
# each extra launch from Python costs ~15-25 us and dominates small problems:
MIN_SPLIT_KTILES = 64       # split K only when there are at least 64 k-tiles (K >= 2048 at BK 32)
MIN_STREAM_KTILES = 16      # stream-K only with at least 16 k-tiles per tile
REGS_MAX_KTILES = 2         # loads through registers beat a repack only for K <= 64 in one wave
# On sm_90 (``plan(..., hopper=True)``): chapter 10's TMA + wgmma kernel (after a repack where needed).
# It pays on problems whose 128 x 256 tiles fill a wave and are at least 3/4 used, down to
# M*N*K >= 5e8: end to end through gemm() on the H200 it beat every chapter 9 plan on all
# four zoo shapes of that kind below the earlier 1.5e10 floor (2176 x 4096 x 64: 1.25 against
# 1.04 of cuBLAS; x 1002: 2.26 against 1.49; 4093^2 x 64: 0.99 against 0.59; 8192^2 x 64:
# 1.02 against 0.31; results/h200-anyshape.json, end_to_end_hopper, 379a276dce31). Its split-K pays where it keeps at least as
# many SMs busy as chapter 9's split (its k-tile is 64 deep, so K/4 caps its splits sooner)
# or K has 128 of its k-tiles. All read off the shape zoo on the H200 (2026-12-01, sessions
# 3-4: the hopper column, then the zoo measured again with these rules).
HOPPER_MIN_MNK = 5e8
HOPPER_SPLIT_KTILES = 128
# GEMV-like problems (C of at most 16 rows) keep heaven 7's loop for their split-K on sm_90 too:
# in the end-to-end zoo of cb44f6119626 (results/h200-anyshape.json, end_to_end_hopper) its split-K
# ran faster than the Hopper kernel's on 5 of the 6 LLM GEMMs at 1 and 16 tokens that split on both
# (for example 1 x 5632 x 2048: 1.18 against 0.87 of cuBLAS; 16 x 4096 x 4096: 1.11 against 1.04;
# the one loss: 16 x 4096 x 14336, 0.80 against 0.84). A likely reason, not measured: a 128-row
# wgmma tile computes 8 to 128 times the rows C has there, heaven 7's 16-row mma.sync steps less.
GEMV_MAX_M = 16
MIN_TILE_USE = 0.75         # padding and chapter 10's 128 x 256 tiles: used fraction of the tiles


def tile_use(M: int, N: int, cfg: dict = CFG) -> float:
    """Fraction of the tiles' area inside the M x N result: M*N / (tiles * BM * BN)."""
    return M * N / (tiles(M, N, cfg) * cfg["BM"] * cfg["BN"])


def tiles(M: int, N: int, cfg: dict = CFG) -> int:
    """Output tiles of an M x N result: ceil(M/BM) * ceil(N/BN)."""
    return cdiv(M, cfg["BM"]) * cdiv(N, cfg["BN"])


def waves(n_tiles: int, sms: int) -> dict:
    """Wave quantization of ``n_tiles`` equal tiles on ``sms`` SMs, one tile per SM at a time.

    Returns ``{"waves": n_tiles / sms, "rounds": ceil(n_tiles / sms), "last_wave_full":
    fraction of SMs busy in the last round, "efficiency": n_tiles / (rounds * sms)}``:
    the fraction of SM-time doing work if every tile takes the same time at a fixed
    clock (the naive prediction; chapter 9 measures how a power-capped GPU departs from it).
    """
    if n_tiles < 1 or sms < 1:
        raise ValueError(f"n_tiles={n_tiles}, sms={sms}: both must be >= 1")
    rounds = cdiv(n_tiles, sms)
    last = n_tiles - (rounds - 1) * sms
    return {"waves": n_tiles / sms, "rounds": rounds, "last_wave_full": last / sms,
            "efficiency": n_tiles / (rounds * sms)}


def corrected_efficiency(n_tiles: int, sms: int, busy: list, wave_ms: list) -> float:
    """The wave model with a measured clock: a round with b busy SMs takes the time one
    wave of b tiles was measured to take (``wave_ms`` at ``busy`` SM counts, linear in
    between), not the time of a full round. Efficiency = n_tiles * t(sms) / sms divided by
    (full rounds * t(sms) + t(last round's tiles)). With a constant ``wave_ms`` this is
    :func:`waves`' efficiency."""
    full, last = divmod(n_tiles, sms)
    t_full = float(np.interp(sms, busy, wave_ms))
    total = full * t_full + (float(np.interp(last, busy, wave_ms)) if last else 0.0)
    return n_tiles * t_full / sms / total


def splitk_gain_cap(n_tiles: int, splits: int, sms: int, busy: list, per_sm: list) -> dict:
    """The most split-K can gain over the same kernel unsplit, from SM counts and measured
    per-SM rates. Unsplit, ``n_tiles`` SMs work; split, min(n_tiles * splits, sms). With a
    fixed clock the gain could reach their ratio ("sm_ratio"); under a power cap each SM is
    slower when more are busy, so the cap is busy_split * r(busy_split) / (n_tiles * r(n_tiles)),
    r being ``per_sm`` (TFLOP/s per SM) measured at ``busy`` SM counts (one wave of b tiles,
    chapter 9's control), linear in between and flat beyond the ends. The reduction, the
    prologue of shorter blocks and a partial last wave only lower it further.
    Returns {"busy_unsplit", "busy_split", "sm_ratio", "cap"}. Raises ValueError for counts < 1."""
    if min(n_tiles, splits, sms) < 1:
        raise ValueError(f"n_tiles={n_tiles}, splits={splits}, sms={sms}: each must be >= 1")
    b0, b1 = min(n_tiles, sms), min(n_tiles * splits, sms)
    r0, r1 = (float(np.interp(b, busy, per_sm)) for b in (b0, b1))
    return {"busy_unsplit": b0, "busy_split": b1, "sm_ratio": b1 / b0, "cap": b1 * r1 / (b0 * r0)}


def splitk_time(M: int, N: int, K: int, s: int, sms: int, cfg: dict = CFG) -> float:
    """Model time (s) of split-K with ``s`` splits:
    ceil(tiles * s / sms) * (ceil(KT / s) + PROLOGUE_KTILES) * t_ktile + reduction,
    t_ktile = 2 * BM * BN * BK / RATE_PER_SM, reduction = s partial M x N fp32 tiles
    written and read once (2 * s * M * N * 4 bytes at COPY_BPS) plus a launch when s > 1."""
    kt = cdiv(K, cfg["BK"])
    t_kt = 2 * cfg["BM"] * cfg["BN"] * cfg["BK"] / RATE_PER_SM
    t = math.ceil(tiles(M, N, cfg) * s / sms) * (cdiv(kt, s) + PROLOGUE_KTILES) * t_kt
    return t + ((2 * s * M * N * 4 / COPY_BPS + LAUNCH_S) if s > 1 else 0.0)


def fused_is_cheaper(M: int, N: int, s: int, cfg: dict = CFG) -> bool:
    """Whether split-K's one-launch reduction ("fused": the last block of a tile reads the
    s partials of its min(M, BM) x min(N, BN) valid elements alone) beats the two-pass one
    (a second kernel over every SM: s * M * N fp32 read, M * N written, plus a launch):
    M <= FUSED_MAX_M (the measured limit, :data:`FUSED_MAX_M`) and
    s * tile * 4 / FUSED_SM_BPS  <  (s + 1) * M * N * 4 / COPY_BPS + LAUNCH_S."""
    tile = min(M, cfg["BM"]) * min(N, cfg["BN"])
    return M <= FUSED_MAX_M and s * tile * 4 / FUSED_SM_BPS < (s + 1) * M * N * 4 / COPY_BPS + LAUNCH_S


def choose_splits(M: int, N: int, K: int, sms: int, cfg: dict = CFG, max_splits: int = 128) -> tuple[int, str]:
    """Number of K splits from :func:`splitk_time` (the smallest modelled time over
    s = 1 .. min(KT // 4, max_splits)); 1 when the tiles alone fill the SMs or K is
    under 8 k-tiles. Returns (s, reason in one line)."""
    n, kt = tiles(M, N, cfg), cdiv(K, cfg["BK"])
    if n >= sms or kt < 8:
        return 1, f"{counted(n, 'tile')} for {sms} SMs, {counted(kt, 'k-tile')}: no split"
    best = min(range(1, min(kt // 4, max_splits) + 1), key=lambda s: (splitk_time(M, N, K, s, sms, cfg), s))
    return best, f"{counted(n, 'tile')} for {sms} SMs and {counted(kt, 'k-tile')}: {best} splits give {n * best} blocks"


def dp_tiles(M: int, N: int, policy: str, sms: int, cfg: dict = CFG) -> int:
    """Tiles computed whole, data-parallel, before the stream-K kernel takes the rest.

    ``"sk"``: none (everything streamed); ``"hybrid"``: all whole waves; ``"hybrid2"``:
    all whole waves but one (the last whole wave and the partial one are streamed,
    so each SM gets more than one tile's work to even out). ValueError otherwise."""
    full = tiles(M, N, cfg) // sms
    if policy == "sk":
        return 0
    if policy == "hybrid":
        return full * sms
    if policy == "hybrid2":
        return max(0, full - 1) * sms
    raise ValueError(f"policy={policy!r}: must be 'sk', 'hybrid' or 'hybrid2'")


def streamk_policy(M: int, N: int, sms: int, cfg: dict = CFG) -> tuple[str, str]:
    """CUTLASS's rule for stream-K: stay data-parallel unless the last wave is at most
    half full; then stream the tail (``"hybrid2"``). Returns (policy, reason); policy
    ``"dp"`` means a plain data-parallel launch. Source: CUTLASS's stream-K scheduler
    heuristic (data-parallel for whole waves, stream-K for a light last wave)."""
    n = tiles(M, N, cfg)
    w = waves(n, sms)
    if n <= sms or w["last_wave_full"] == 1.0 or w["last_wave_full"] > 0.5:
        return "dp", f"{counted(n, 'tile')} = {w['waves']:.2f} waves, last wave {w['last_wave_full']:.0%} full: data-parallel"
    return "hybrid2", (f"{counted(n, 'tile')} = {w['waves']:.2f} waves, last wave only {w['last_wave_full']:.0%} full: "
                       "whole waves but one data-parallel, the rest stream-K")


def round_up(x: int, m: int) -> int:
    return cdiv(x, m) * m


@dataclass(frozen=True)
class Plan:
    """What the dispatcher runs: ``operands`` ("direct", "regs", "repack" or "padding"),
    ``schedule`` ("dp", "splitk" or "streamk"), ``splits`` (split-K), ``reduction``
    ("fused": one launch, the last block of a tile adds its partials in a fixed order;
    "twopass": the same sum in a second kernel; both deterministic, bitwise equal; or
    "atomic"), ``policy`` (stream-K: "sk", "hybrid",
    "hybrid2"), ``cluster_m`` (split-K on the Hopper kernel: its CLUSTER_M; 1, the default,
    because split-K units fill one wave: no multicast, and no cluster to place), and
    ``tile`` (heaven 7's loop: "wide", :data:`CFG`'s 128 x 256, or "narrow", :data:`NARROW_CFG`'s
    128 x 64) and ``reason``: one line saying why."""
    operands: str = "direct"
    schedule: str = "dp"
    splits: int = 1
    reduction: str = "twopass"
    policy: str = "hybrid2"
    reason: str = ""
    cluster_m: int = 1
    tile: str = "wide"

    @property
    def name(self) -> str:
        """Short label: "repack + split-K 16 (two-pass)", "direct + stream-K (hybrid2)", "regs",
        "direct, 128 x 64 tiles" (the narrow tile)."""
        s = {"dp": "", "splitk": f" + split-K {self.splits} ({self.reduction})",
             "streamk": f" + stream-K ({self.policy})"}[self.schedule]
        t = "" if self.tile == "wide" else f", {TILES[self.tile]['BM']} x {TILES[self.tile]['BN']} tiles"
        return self.operands + s + t


def plan(M: int, N: int, K: int, *, aligned: bool, sms: int, cfg: dict = CFG,
         deterministic: bool = True, hopper: bool = False) -> Plan:
    """The dispatcher's rules for C[M, N] = A[M, K] @ B[K, N] on ``sms`` SMs.

    ``aligned``: A and B are 16-byte aligned with K % 8 == 0 and N % 8 == 0 (the cp.async
    build reads them directly; M, N, K tails are predicated). Otherwise ``regs`` when K is
    at most ``REGS_MAX_KTILES`` k-tiles and the tiles fit one wave; ``padding`` when the
    tiles fill more than a wave, are at least :data:`MIN_TILE_USE` used, M or N is not a
    multiple of the tile and the schedule is data-parallel (it copies C too, but its kernel
    runs unguarded); else ``repack``. Schedule: split-K when
    :func:`choose_splits` says s > 1 and there are at least ``MIN_SPLIT_KTILES`` k-tiles
    (reduction "fused" or "twopass" by :func:`fused_is_cheaper` if ``deterministic``, else
    "atomic"), else stream-K when
    :func:`streamk_policy` says so and there are at least ``MIN_STREAM_KTILES`` k-tiles,
    else data-parallel. ``hopper`` (the GPU runs chapter 10's sm_90a kernel): split-K runs
    on its main loop (:data:`HOPPER_CFG`'s split count) when C has more than :data:`GEMV_MAX_M`
    rows and that keeps as many SMs
    busy or K has :data:`HOPPER_SPLIT_KTILES` of its k-tiles, and a data-parallel problem
    with M*N*K >= :data:`HOPPER_MIN_MNK` whose tiles fill a wave and are
    :data:`MIN_TILE_USE` used runs on it whole.
    Raises ValueError for M, N, K < 1.
    """
    for name, v in (("M", M), ("N", N), ("K", K), ("sms", sms)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}={v!r}: must be an integer >= 1")
    s, why_s = choose_splits(M, N, K, sms, cfg)
    kt = cdiv(K, cfg["BK"])
    if s > 1 and kt < MIN_SPLIT_KTILES:
        s, why_s = 1, f"{counted(kt, 'k-tile')} (< {MIN_SPLIT_KTILES}): too short to split"
    if s > 1:
        red = ("fused" if fused_is_cheaper(M, N, s, cfg) else "twopass") if deterministic else "atomic"
        sched = {"schedule": "splitk", "splits": s, "reduction": red}
        why = why_s
    else:
        pol, why = streamk_policy(M, N, sms, cfg)
        if pol != "dp" and kt < MIN_STREAM_KTILES:
            pol, why = "dp", why.split(":")[0] + f", but only {counted(kt, 'k-tile')} per tile: data-parallel"
        sched = {"schedule": "dp"} if pol == "dp" else {"schedule": "streamk", "policy": pol}
    if hopper and s > 1 and M <= GEMV_MAX_M:
        why += f"; sm_90, but C has {counted(M, 'row')} (<= {GEMV_MAX_M}): heaven 7's loop, not chapter 10's"
    elif hopper and s > 1:
        sh, why_h = choose_splits(M, round_up(N, 8), round_up(K, 8), sms, HOPPER_CFG)
        kth = cdiv(K, HOPPER_CFG["BK"])
        if sh > 1 and (sh * tiles(M, N, HOPPER_CFG) >= s * tiles(M, N, cfg) or kth >= HOPPER_SPLIT_KTILES):
            red_h = "fused" if fused_is_cheaper(M, round_up(N, 8), sh, HOPPER_CFG) else "twopass"
            return Plan(operands="hopper", schedule="splitk", splits=sh, reduction=red_h,
                        reason=f"sm_90: chapter 10's kernel, split-K with fp32 partials; {why_h}")
    nh = tiles(M, N, HOPPER_CFG)
    if hopper and s == 1 and M * N * K >= HOPPER_MIN_MNK and nh >= sms and tile_use(M, N, HOPPER_CFG) >= MIN_TILE_USE:
        return Plan(operands="hopper", reason=f"sm_90, M*N*K >= {HOPPER_MIN_MNK:.0e}".replace("e+0", "e") + f", {nh} tiles of 128 x 256 for {sms} SMs: "
                                              "chapter 10's TMA + wgmma kernel (A and B copied only where TMA cannot read them)")
    tile = "wide"
    if N <= NARROW_MAX_N and tiles(M, N, NARROW_CFG) >= sms and cfg is CFG:
        tile, cfg, sched = "narrow", NARROW_CFG, {"schedule": "dp"}
        why = (f"N = {N} (<= {NARROW_MAX_N}): {counted(tiles(M, N, NARROW_CFG), 'tile')} of 128 x 64 for {sms} SMs, "
               "data-parallel (a 128 x 256 tile would use a quarter of its columns or less)")
    if aligned:
        ops, why_o = "direct", "aligned rows: cp.async reads A and B in place"
    else:
        one_wave = tiles(M, N, cfg) <= sms
        # the narrow tile repacks: padding (its C copied back too) ran slower on every unaligned
        # tall-skinny shape tried (H100, 2026-12-06: 30000 x 64 x 1002 0.44 against 0.49 of cuBLAS)
        # padding's gain is a kernel with no M or N edge to guard; with both tile multiples
        # there is none to remove, and it would still copy C back (H200 record of cb44f6119626:
        # 8192 x 8192 x 1002 and x 4093 ran 17 % and 8 % slower padded than repacked)
        edge = M % cfg["BM"] != 0 or N % cfg["BN"] != 0
        full = (not one_wave and sched["schedule"] == "dp" and tile_use(M, N, cfg) >= MIN_TILE_USE
                and tile == "wide" and edge)
        ops = "regs" if (kt <= REGS_MAX_KTILES and one_wave) else "padding" if full else "repack"
        why_o = {"regs": f"unaligned rows, {counted(kt, 'k-tile')} in one wave: loads through registers, no copy",
                 "padding": "unaligned rows, more than a wave of well-used tiles: A and B padded to tile "
                            "multiples (no guard fires), C copied back",
                 "repack": "unaligned rows: A and B repacked to 16-byte rows" if edge or one_wave else
                           f"unaligned rows, M and N multiples of the {cfg['BM']} x {cfg['BN']} tile (no edge "
                           "for padding to remove): A and B repacked to 16-byte rows"}[ops]
    return Plan(operands=ops, reason=f"{why_o}; {why}", tile=tile, **sched)


def zoo_row(recs: list) -> dict:
    """One zoo cell from its records (chapter 9's bench records of one shape, each with
    "params"["strategy"], "title", "ratio", ...): the dispatcher's ("auto") record against the
    others. Raises StopIteration when no "auto" record is there."""
    auto = next(r for r in recs if r["params"]["strategy"] == "auto")
    plan = auto["title"].removeprefix("auto: ")
    # Other strategies: the sm_80 family's records whose plan differs from the dispatcher's.
    # The candidate that runs the same plan is the same launch measured twice: its spread
    # is the noise of the measurement (kept as "same plan again"), not a competitor.
    others = [r for r in recs if r["params"]["strategy"] not in ("auto", "hopper") and r.get("ratio")
              and r["title"] != plan]
    twin = next((r for r in recs if r["params"]["strategy"] not in ("auto", "hopper") and r["title"] == plan), None)
    best = max(others, key=lambda r: r["ratio"])     # ratios: each against cuBLAS in its own rounds
    hop = next((r for r in recs if r["params"]["strategy"] == "hopper" and r.get("ms")), None)
    return {"M": auto["shape"][0], "N": auto["shape"][1], "K": auto["shape"][2], "dtype": auto["dtype"],
            "plan": plan, "reason": auto.get("note"), "ratio": auto["ratio"], "TFLOP/s": auto["value"],
            "cuBLAS TFLOP/s": auto["reference_value"], "best other": best["title"], "best other ratio": best["ratio"],
            "within 3% of best": auto["ratio"] >= 0.97 * best["ratio"],
            "same plan again": twin["ratio"] if twin else None,
            "hopper ratio": hop["ratio"] if hop else None, "records": recs}


def same_plan_spread(rows: list) -> dict:
    """The noise of the zoo's measurement: for each zoo row (:func:`zoo_row`) with a "same plan
    again" record, |that ratio / the dispatcher's ratio - 1|, the same launch measured twice in
    one run. Returns {"n", "median", "max" (fractions), "max_shape" ("M x N x K" of the largest)};
    ValueError when no row has a second measurement."""
    pairs = [(abs(r["same plan again"] / r["ratio"] - 1), r) for r in rows
             if r.get("same plan again") and r.get("ratio")]
    if not pairs:
        raise ValueError("rows: no zoo row has a 'same plan again' measurement")
    spread = sorted(x for x, _ in pairs)
    n = len(spread)
    median = spread[n // 2] if n % 2 else (spread[n // 2 - 1] + spread[n // 2]) / 2
    top = max(pairs, key=lambda x: x[0])[1]
    return {"n": n, "median": median, "max": spread[-1], "max_shape": f"{top['M']} x {top['N']} x {top['K']}"}


def splitk_cap_rows(splitk: list, waves: dict) -> list:
    """For each shape of ``splitk`` (chapter 9's split-K records: "params"["strategy"], "shape",
    "splits", "over_no_split") the model's split against the SM count and the clock: SMs busy
    without and with it, their ratio, the cap the control's per-SM rates allow
    (:func:`splitk_gain_cap`) and the measured gain over the same kernel unsplit. ``waves``:
    chapter 9's wave data ("control": rows with "busy SMs" and "TFLOP/s per SM"; "sms")."""
    ctl = sorted(waves["control"], key=lambda r: r["busy SMs"])
    busy, rate = [r["busy SMs"] for r in ctl], [r["TFLOP/s per SM"] for r in ctl]
    rows = []
    for r in splitk:
        if r["params"].get("strategy") != "splitk":
            continue
        M, N, K = r["shape"]
        c = splitk_gain_cap(tiles(M, N), r["splits"], waves["sms"], busy, rate)
        rows.append({"M x N x K": f"{M} x {N} x {K}", "tiles": tiles(M, N), "splits": r["splits"],
                     "SMs busy, unsplit": c["busy_unsplit"], "SMs busy, split": c["busy_split"],
                     "more SMs": round(c["sm_ratio"], 2), "cap from the measured per-SM rate": round(c["cap"], 2),
                     "measured gain (the model's reduction, over no split)": r["over_no_split"]})
    return rows


# ------------------------------------------------------------------ who computes which (tile, k-tile)
def split_ranges(k_tiles: int, splits: int) -> list[tuple[int, int]]:
    """The k-tile ranges of split-K as ``gemm_any`` takes them (blockIdx.z = z covers
    [z * ktps, min(KT, (z + 1) * ktps)) with ktps = ceil(KT / splits)); the launch has
    ceil(KT / ktps) ranges, so a split count that would leave a range empty launches fewer.
    Raises ValueError for k_tiles or splits < 1."""
    if k_tiles < 1 or splits < 1:
        raise ValueError(f"k_tiles={k_tiles}, splits={splits}: both must be >= 1")
    ktps = cdiv(k_tiles, splits)
    return [(z * ktps, min(k_tiles, (z + 1) * ktps)) for z in range(cdiv(k_tiles, ktps))]


def streamk_ranges(iters: int, blocks: int) -> list[tuple[int, int]]:
    """``gemm_streamk``'s share of each block: [b * iters // G, (b + 1) * iters // G) for
    b < G = ``blocks`` (``sk_begin`` in kernels/09_any_shape.cu); empty when iters < G."""
    if iters < 0 or blocks < 1:
        raise ValueError(f"iters={iters}, blocks={blocks}: need iters >= 0 and blocks >= 1")
    return [(b * iters // blocks, (b + 1) * iters // blocks) for b in range(blocks)]


def work_partition(M: int, N: int, K: int, schedule: str, sms: int, splits: int | None = None,
                   policy: str = "hybrid2", cfg: dict = CFG) -> dict:
    """Which block computes each (output tile, k-tile) of C[M, N] = A[M, K] @ B[K, N], as the
    launches of ``helpers.runtime.anyshape.run`` give it on ``kernels/09_any_shape.cu``.

    ``schedule``: ``"dp"`` (``gemm_any``, one block per tile), ``"splitk"`` (``gemm_any``
    with gridDim.z = the ranges of :func:`split_ranges`; ``splits`` default: :func:`choose_splits`;
    then ``splitk_reduce`` adds the partial tiles in the order z = 0, 1, ...) or
    ``"streamk"`` (``policy`` as :func:`dp_tiles`: ``gemm_any`` on a 1-D grid takes tiles
    0 .. dp-1 whole, then ``gemm_streamk`` on ``sms`` blocks cuts the remaining
    tiles x k-tiles into :func:`streamk_ranges`; a block that holds k-tile 0 of a tile owns
    it: it adds the partials the other blocks of that tile publish, then stores C).
    Tiles are numbered in launch order (tile t is at (tm, tn) = ``tile_rc[t]``, GROUP_M order).

    Returns ``{"schedule", "tiles", "k_tiles", "tile_rc": int array (tiles, 2), "segments":
    [{"tile", "k0", "k1", "cta", "kernel", "block", "owner", "adds": [ctas whose partials the
    owner adds]}], "ctas", "dp_tiles", "splits", "reduce": None or a one-line description}``.
    ``cta`` numbers the blocks of all launches in launch order; ``block`` is the linear
    block index inside its own launch. Raises ValueError for a bad schedule or size.
    """
    for name, v in (("M", M), ("N", N), ("K", K), ("sms", sms)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}={v!r}: must be an integer >= 1")
    gm, gn = cdiv(M, cfg["BM"]), cdiv(N, cfg["BN"])
    n, KT = gm * gn, cdiv(K, cfg["BK"])
    rc = np.stack(tile_of_block(np.arange(n), gm, gn, cfg.get("GROUP_M", 0)), axis=1)
    segs: list[dict] = []
    out = {"schedule": schedule, "tiles": n, "k_tiles": KT, "tile_rc": rc, "dp_tiles": 0, "splits": 1, "reduce": None}

    def seg(t, k0, k1, cta, kernel, block, owner=True):
        segs.append({"tile": t, "k0": k0, "k1": k1, "cta": cta, "kernel": kernel, "block": block,
                     "owner": owner, "adds": []})

    if schedule == "dp":
        for t in range(n):
            seg(t, 0, KT, t, "gemm_any", t)
        ctas = n
    elif schedule == "splitk":
        s = choose_splits(M, N, K, sms, cfg)[0] if splits is None else splits
        ranges = split_ranges(KT, s)
        for z, (k0, k1) in enumerate(ranges):
            for t in range(n):
                seg(t, k0, k1, z * n + t, "gemm_any", z * n + t, owner=False)
        ctas = n * len(ranges)
        out.update(splits=len(ranges), reduce=f"splitk_reduce adds the {len(ranges)} fp32 partial tiles of every "
                                              "element in the order z = 0, 1, ... and stores C")
    elif schedule == "streamk":
        dp = dp_tiles(M, N, policy, sms, cfg)
        for t in range(dp):
            seg(t, 0, KT, t, "gemm_any", t)
        owner_of: dict = {}
        for b, (i0, i1) in enumerate(streamk_ranges((n - dp) * KT, sms)):
            it = i0
            while it < i1:
                t, k0 = dp + it // KT, it % KT
                k1 = min(KT, k0 + i1 - it)
                seg(t, k0, k1, dp + b, "gemm_streamk", b, owner=k0 == 0)
                if k0 == 0:
                    owner_of[t] = segs[-1]
                it += k1 - k0
        for sg in segs:
            if sg["kernel"] == "gemm_streamk" and not sg["owner"]:
                owner_of[sg["tile"]]["adds"].append(sg["cta"])   # ranges are contiguous: the owner came first
        ctas = dp + sms
        out.update(dp_tiles=dp, reduce="the owner of a shared tile waits for the flags of the blocks that "
                                       "published its other k-tiles, adds their partials and stores C")
    else:
        raise ValueError(f"schedule={schedule!r}: must be 'dp', 'splitk' or 'streamk'")
    out.update(segments=segs, ctas=ctas)
    return out
