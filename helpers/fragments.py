"""Tensor Core fragments, ldmatrix addressing and the XOR swizzle, as models.

Everything here is plain Python/NumPy (no GPU) and describes what the kernels
of chapters 6-7 (``kernels/06_wmma.cu``, ``kernels/07_mma_sync.cu``) really
do, so that figures can draw it and tests can check it:

(a) **Fragment layouts of mma.m16n8k16** (16-bit A/B, 32-bit C/D). Source:
    PTX ISA, section "Matrix Fragments for mma.m16n8k16 with floating point
    type" (9.7.14.5.8 in PTX ISA 8.x). With ``groupID = lane >> 2`` and
    ``threadID_in_group = lane % 4``:

    - A (16 x 16, ``.row``), elements a0..a7 in four .f16x2/.bf16x2 registers
      (a0,a1 | a2,a3 | a4,a5 | a6,a7)::

        row = groupID      for a_i with i < 2 or 4 <= i < 6, else groupID + 8
        col = threadID_in_group * 2 + (i & 1)        for i < 4, else ... + 8

    - B (16 x 8, ``.col``), b0..b3 in two registers::

        row (k) = threadID_in_group * 2 + (i & 1)     for i < 2, else ... + 8
        col (n) = groupID

    - C and D (16 x 8, f32), c0..c3::

        row = groupID for i < 2, else groupID + 8;  col = threadID_in_group * 2 + (i & 1)

    :func:`fragment_map` returns these as arrays; :func:`fragment_grid` as a
    16 x 16 / 16 x 8 picture of lane numbers.

(b) **ldmatrix** (PTX ISA, "Warp-level matrix load instruction: ldmatrix").
    ``.x4`` loads four 8 x 8 matrices of 16-bit elements; lanes 8j..8j+7 give
    the row addresses of matrix j (16 bytes each); lane ``l`` receives in
    register j the elements (row l/4, cols 2(l%4), 2(l%4)+1) of matrix j, or
    with ``.trans`` the elements (rows 2(l%4), 2(l%4)+1, col l/4). The kernel
    hands ldmatrix row ``lane % 16`` of a 16-row slice and 16-byte chunk
    ``lane / 16`` (:func:`ldmatrix_lane_rows`), for A (m rows) and for B (k
    rows, ``.trans``); :func:`ldmatrix` emulates the instruction, and the tests
    check that this addressing yields exactly the fragments of (a).

(c) **The swizzle** of ``07_mma_sync.cu``: in a tile stored as rows of R
    16-byte chunks, logical chunk ``q = row * R + chunk`` is stored at
    ``q ^ ((q // max(R, 8)) % 8)`` (:func:`swizzle`). Shared memory has 32
    banks of 4 bytes, so a 16-byte chunk at byte address ``a`` covers banks
    ``4g .. 4g+3`` with ``g = (a // 16) % 8``, its *bank group*. A phase of
    8 lanes x 16 bytes needs as many wavefronts (128-byte passes) as the
    largest number of distinct 4-byte words that it asks of one bank
    (:func:`wavefronts`); the excess over one is its bank conflicts.

(d) **Predicted Nsight Compute counters** (:func:`predict_ncu_mma_sync`,
    :func:`predict_ncu_wmma_ldsm`), derived by enumerating every ldmatrix and
    cp.async the kernel issues (the same formulas as the kernel source). How
    ncu attributes them, and what is certain or not, is in those docstrings;
    ``scripts/ncu_ldmatrix.py`` measures, ``tests/gpu/test_swizzle_ncu.py``
    compares.

Plus :func:`emulate_mma_sync` / :func:`emulate_wmma`: the kernels' data flow
(cp.async chunk mapping, swizzled stage buffers, ldmatrix, mma, epilogue)
replayed on NumPy arrays, with a checker of the cp.async pipeline's ordering
(a stage is read only after its copy group was waited for and a barrier
passed; it is refilled only after a barrier since its last read). And the
owner models of the ``-DRECORD_OWNER=1`` builds: :func:`owner_mma_sync`,
:func:`owner_wmma`.

Units: addresses in bytes unless named ``*_elem``; elements are 16-bit.
Errors: ValueError for unknown operands or parameter sets a kernel refuses.
"""
from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BANKS = 32                 # shared-memory banks
BANK_BYTES = 4             # bytes per bank word
LINE_BYTES = BANKS * BANK_BYTES   # 128: one wavefront
CHUNK = 16                 # bytes per ldmatrix row / cp.async


# ------------------------------------------------------------------ (a) fragments
def group_id(lane: int) -> int:
    return lane >> 2


def thread_in_group(lane: int) -> int:
    return lane % 4


def frag_a(lane: int) -> list[tuple[int, int]]:
    """(row, col) of a0..a7 held by ``lane`` in the m16n8k16 A fragment (16 x 16)."""
    g, t = group_id(lane), thread_in_group(lane)
    out = []
    for i in range(8):
        row = g if (i < 2 or 4 <= i < 6) else g + 8
        col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
        out.append((row, col))
    return out


def frag_b(lane: int) -> list[tuple[int, int]]:
    """(k, n) of b0..b3 held by ``lane`` in the m16n8k16 B fragment (16 x 8)."""
    g, t = group_id(lane), thread_in_group(lane)
    return [(t * 2 + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)]


def frag_c(lane: int) -> list[tuple[int, int]]:
    """(row, col) of c0..c3 (and d0..d3) held by ``lane`` (16 x 8, f32)."""
    g, t = group_id(lane), thread_in_group(lane)
    return [(g if i < 2 else g + 8, t * 2 + (i & 1)) for i in range(4)]


_FRAG = {"A": (frag_a, (16, 16)), "B": (frag_b, (16, 8)), "C": (frag_c, (16, 8))}


def fragment_map(operand: str) -> np.ndarray:
    """int array (32, n_elements, 2): for each lane and element index, (row, col).

    ``operand`` is "A" (8 elements per lane), "B" (4) or "C" (4; D is the same).
    Register r of a lane holds elements 2r and 2r+1 (low half first) for A
    and B; for C each element is its own f32 register.
    """
    if operand not in _FRAG:
        raise ValueError(f"operand={operand!r}: must be 'A', 'B' or 'C'")
    f = _FRAG[operand][0]
    return np.array([f(lane) for lane in range(32)], dtype=np.int64)


@functools.lru_cache(maxsize=None)
def _fragment_map_cached(operand: str) -> np.ndarray:
    m = fragment_map(operand)
    m.setflags(write=False)
    return m


def fragment_grid(operand: str) -> tuple[np.ndarray, np.ndarray]:
    """Two int arrays of the operand's shape (16 x 16 or 16 x 8): which lane
    holds each element, and at which element index (a_i / b_i / c_i)."""
    shape = _FRAG[operand][1] if operand in _FRAG else None
    m = fragment_map(operand)
    lane_of = np.full(shape, -1, dtype=np.int64)
    idx_of = np.full(shape, -1, dtype=np.int64)
    for lane in range(32):
        for i, (r, c) in enumerate(m[lane]):
            lane_of[r, c] = lane
            idx_of[r, c] = i
    return lane_of, idx_of


# ------------------------------------------------------------------ (b) ldmatrix
def ldmatrix_row_provider(lane: int) -> tuple[int, int]:
    """(matrix j, row r) whose address ``lane`` supplies to ldmatrix .x4."""
    return lane // 8, lane % 8


def ldmatrix_lane_rows(lane: int) -> tuple[int, int]:
    """(row within the 16-row slice, 16-byte chunk 0/1) the kernels' ``lane``
    hands to ldmatrix .x4: for A the m rows of a 16 x 16 tile (chunk = k
    half), for B (``.trans``) the k rows of a k16 x n16 slice (chunk = n
    half). Matrix j = lane // 8 is thus (rows 0-7 | 8-15) x (chunk 0 | 1)."""
    return lane % 16, lane // 16


def ldmatrix(mem: np.ndarray, row_addr_elem, trans: bool = False, num: int = 4) -> np.ndarray:
    """Emulate ``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``.

    ``mem``: 1-D array of 16-bit elements (any dtype: values are copied);
    ``row_addr_elem``: 32 element offsets (lanes >= 8*num are ignored), each
    a multiple of 8 (16-byte aligned). Returns (32, num, 2): lane, register,
    half (index 0 = low 16 bits = lower-addressed / lower-numbered element).
    """
    row_addr_elem = np.asarray(row_addr_elem)[:8 * num]
    if np.any(row_addr_elem % 8):
        raise ValueError("ldmatrix row addresses must be 16-byte aligned")
    mats = mem[row_addr_elem.reshape(num, 8)[..., None] + np.arange(8)]     # (num, 8 rows, 8 cols)
    lane = np.arange(32)[:, None]
    e = np.arange(2)[None, :]
    if trans:
        out = mats[:, 2 * (lane % 4) + e, lane // 4]     # (num, 32, 2)
    else:
        out = mats[:, lane // 4, 2 * (lane % 4) + e]
    return np.ascontiguousarray(out.transpose(1, 0, 2))


def tile_from_fragment(operand: str, regs: np.ndarray) -> np.ndarray:
    """Rebuild the 16x16 (A) or 16x8 (B, C) matrix a warp holds: ``regs`` is
    (32, n_elements) or (32, n_registers, 2) as returned by :func:`ldmatrix`."""
    m = _fragment_map_cached(operand)
    out = np.zeros(_FRAG[operand][1], dtype=np.float64)
    out[m[:, :, 0], m[:, :, 1]] = regs.reshape(32, -1)
    return out


# ------------------------------------------------------------------ (c) swizzle, banks
def swizzle(q, chunks_per_row: int, on: bool = True):
    """Physical 16-byte chunk of logical chunk ``q`` (int or array) in a tile
    with ``chunks_per_row`` chunks per row, as ``swz()`` in 07_mma_sync.cu:
    ``q ^ ((q // max(R, 8)) % 8)``: the chunk's position inside its 128-byte
    line is XORed with its row (R >= 8) or line (R < 8) index mod 8."""
    if not on:
        return q
    line = q // max(chunks_per_row, 8)
    return q ^ (line & 7)


def chunk_layout(rows: int, chunks_per_row: int, on: bool = True) -> np.ndarray:
    """int array (rows, chunks_per_row): physical chunk of each logical chunk."""
    q = np.arange(rows * chunks_per_row).reshape(rows, chunks_per_row)
    return swizzle(q, chunks_per_row, on)


def bank_group(byte_addr):
    """Bank group (0..7) of a 16-byte access: it covers banks 4g..4g+3."""
    return (np.asarray(byte_addr) // CHUNK) % (BANKS * BANK_BYTES // CHUNK)


def wavefronts(byte_addrs, width: int = CHUNK) -> int:
    """Wavefronts one phase of accesses needs: the largest number of distinct
    4-byte words requested from any one bank (same word = broadcast, free)."""
    words_per_bank: dict[int, set] = {}
    for a in np.asarray(byte_addrs).ravel():
        for w in range(int(a) // BANK_BYTES, (int(a) + width) // BANK_BYTES):
            words_per_bank.setdefault(w % BANKS, set()).add(w)
    return max((len(s) for s in words_per_bank.values()), default=0)


def phase_wavefronts(byte_addrs32, phase_lanes: int = 8, width: int = CHUNK) -> list[int]:
    """Wavefronts of each phase of a warp-wide 16-byte access: lanes are taken
    ``phase_lanes`` at a time (8 x 16 B = 128 B). For ldmatrix a phase is one
    8x8 matrix (PTX: lanes 8j..8j+7 address matrix j); for 16-byte LDGSTS we
    assume quarter-warps, the rule documented for 128-bit accesses."""
    a = np.asarray(byte_addrs32)
    return [wavefronts(a[i:i + phase_lanes], width) for i in range(0, len(a), phase_lanes)]


# ------------------------------------------------------------------ kernel geometry
@dataclass(frozen=True)
class MmaSyncGeometry:
    """Derived sizes of 07_mma_sync.cu for one parameter set (its #defines)."""
    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    STAGES: int
    SWIZZLE: int
    GROUP_M: int
    LOAD_SPREAD: int = 1

    @classmethod
    def of(cls, p: dict) -> "MmaSyncGeometry":
        g = cls(**{k: int(p[k]) for k in ("BM", "BN", "BK", "WM", "WN", "STAGES", "SWIZZLE", "GROUP_M")},
                LOAD_SPREAD=int(p.get("LOAD_SPREAD", 1)))
        g.check()
        return g

    warps_m = property(lambda s: s.BM // s.WM)
    warps_n = property(lambda s: s.BN // s.WN)
    threads = property(lambda s: s.warps_m * s.warps_n * 32)
    MT = property(lambda s: s.WM // 16)
    NT = property(lambda s: s.WN // 8)
    KK = property(lambda s: s.BK // 16)
    RA = property(lambda s: s.BK // 8)
    RB = property(lambda s: s.BN // 8)
    a_stage = property(lambda s: s.BM * s.BK)      # elements
    b_stage = property(lambda s: s.BK * s.BN)
    smem_bytes = property(lambda s: s.STAGES * (s.a_stage + s.b_stage) * 2)
    chunks = property(lambda s: (s.a_stage + s.b_stage) // 8 // s.threads)   # cp.async per thread per k-tile

    def chunk_range(self, ks: int) -> tuple:
        """LOAD_SPREAD=1: the thread's chunks (A first, then B) issued at k16
        step ``ks`` of an iteration, as the kernel's load_chunks(first, last)."""
        n, kk = self.chunks, self.KK
        return ks * n // kk, (n if ks == kk - 1 else (ks + 1) * n // kk)

    def tiles_copied(self, KT: int) -> int:
        """k-tiles of cp.async one block issues for KT k-tiles: the prologue's
        min(STAGES-1, KT), then one per iteration that has a tile to fetch
        (burst), or one per iteration, zero-filled past the end (spread)."""
        pro = min(self.STAGES - 1, KT)
        return pro + (KT if self.LOAD_SPREAD else max(0, KT - (self.STAGES - 1)))

    def check(self) -> None:
        """The kernel's static_asserts, as ValueErrors naming the parameter."""
        def need(ok, name, value, rule):
            if not ok:
                raise ValueError(f"{name}={value!r}: {rule}")
        need(self.BM % self.WM == 0, "WM", self.WM, f"must divide BM={self.BM}")
        need(self.BN % self.WN == 0, "WN", self.WN, f"must divide BN={self.BN}")
        need(self.WM % 16 == 0, "WM", self.WM, "must be a multiple of 16 (m16 fragments)")
        need(self.WN % 16 == 0, "WN", self.WN, "must be a multiple of 16 (ldmatrix .x4.trans covers n16)")
        need(self.BK in (32, 64), "BK", self.BK, "must be 32 or 64 (an even number of k16 steps)")
        need(self.STAGES >= 2, "STAGES", self.STAGES, "must be >= 2")
        need(self.GROUP_M >= 1, "GROUP_M", self.GROUP_M, "must be >= 1")
        t = self.threads
        need((self.BM * self.RA) % t == 0, "BM", self.BM,
             f"BM*BK/8 = {self.BM * self.RA} chunks of A must spread evenly over {t} threads")
        need((self.BK * self.RB) % t == 0, "BN", self.BN,
             f"BK*BN/8 = {self.BK * self.RB} chunks of B must spread evenly over {t} threads")
        need(self.BN <= 256 and t % self.RB == 0, "BN", self.BN, f"BN/8 must divide the {t} threads")
        if self.SWIZZLE:
            need(t % (8 * max(self.RA, 8)) == 0 and t % (8 * max(self.RB, 8)) == 0, "threads", t,
                 f"with SWIZZLE=1 must be a multiple of 64 and of BN={self.BN} "
                 "(a thread's chunks must lie 8 rows apart)")


def tile_of_block(pid, grid_m: int, grid_n: int, group_m: int):
    """Block rasterization of the kernels: hardware block id -> (pid_m, pid_n)."""
    pid = np.asarray(pid)
    per_group = group_m * grid_n
    first_m = (pid // per_group) * group_m
    group_h = np.minimum(grid_m - first_m, group_m)
    return first_m + (pid % per_group) % group_h, (pid % per_group) // group_h


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# Per-thread / per-lane offsets exactly as the kernel computes them.
def _mma_sync_thread_offsets(g: MmaSyncGeometry, tid: int):
    """cp.async: chunk i of thread ``tid`` -> (row, col elem, smem byte offset), for A and B."""
    on = bool(g.SWIZZLE)
    a_dst = swizzle(tid, g.RA, on) * CHUNK
    b_dst = swizzle(tid, g.RB, on) * CHUNK
    a = [(tid // g.RA + i * (g.threads // g.RA), (tid % g.RA) * 8, a_dst + i * g.threads * CHUNK)
         for i in range(g.BM * g.RA // g.threads)]
    b = [(tid // g.RB + i * (g.threads // g.RB), (tid % g.RB) * 8, b_dst + i * g.threads * CHUNK)
         for i in range(g.BK * g.RB // g.threads)]
    return a, b


def mma_sync_ldsm_offsets(g: MmaSyncGeometry, warp: int, ks: int):
    """Byte offsets inside one stage that each lane hands to ldmatrix, for k16
    step ``ks`` of ``warp``: ``(a, b)`` with ``a[mi]`` (32 offsets, relative to
    the A stage) for m16 fragment mi and ``b[nj]`` (relative to the B stage)
    for the n16 pair nj (x4.trans). The kernel's a_off/b_off plus steps."""
    on = bool(g.SWIZZLE)
    wm, wn = warp // g.warps_n, warp % g.warps_n
    lanes = np.arange(32)
    a_off = swizzle((wm * g.WM + lanes % 16) * g.RA + ks * 2 + lanes // 16, g.RA, on) * CHUNK
    a = [a_off + mi * 16 * g.RA * CHUNK for mi in range(g.MT)]
    b = []
    for nj in range(g.WN // 16):
        b_off = swizzle((lanes % 16) * g.RB + (wn * g.WN + nj * 16) // 8 + lanes // 16, g.RB, on) * CHUNK
        b.append(b_off + ks * 16 * g.RB * CHUNK)
    return a, b


def mma_sync_ldsm_logical(g: MmaSyncGeometry, warp: int, ks: int):
    """What the ldmatrix rows *should* be: (tile row, 16-byte chunk) per lane,
    unswizzled, for A[mi] and B[nj] (used by the tests against the offsets)."""
    wm, wn = warp // g.warps_n, warp % g.warps_n
    lanes = np.arange(32)
    a = [((wm * g.WM + mi * 16 + lanes % 16), ks * 2 + lanes // 16) for mi in range(g.MT)]
    b = [((ks * 16 + lanes % 16), (wn * g.WN + nj * 16) // 8 + lanes // 16) for nj in range(g.WN // 16)]
    return a, b


# ------------------------------------------------------------------ (d) ncu predictions
def mma_sync_bank_profile(p: dict) -> dict:
    """Per block and per k-tile of 07_mma_sync.cu: ldmatrix and cp.async
    instruction counts and their wavefronts, from the kernel's addresses."""
    g = MmaSyncGeometry.of(p)
    out = {"ldsm_A": 0, "ldsm_B": 0, "ldsm_wavefronts_A": 0, "ldsm_wavefronts_B": 0,
           "ldgsts": 0, "ldgsts_wavefronts": 0}
    for warp in range(g.threads // 32):
        for ks in range(g.KK):
            a, b = mma_sync_ldsm_offsets(g, warp, ks)
            for addr in a:
                out["ldsm_A"] += 1
                out["ldsm_wavefronts_A"] += sum(phase_wavefronts(addr))
            for addr in b:
                out["ldsm_B"] += 1
                out["ldsm_wavefronts_B"] += sum(phase_wavefronts(addr))
    offs = [_mma_sync_thread_offsets(g, t) for t in range(g.threads)]
    for warp in range(g.threads // 32):
        lanes = offs[warp * 32:(warp + 1) * 32]
        for which, base in ((0, 0), (1, g.a_stage * 2 * g.STAGES)):
            for i in range(len(lanes[0][which])):
                addr = [base + lanes[l][which][i][2] for l in range(32)]
                out["ldgsts"] += 1
                out["ldgsts_wavefronts"] += sum(phase_wavefronts(addr))
    return out


def predict_ncu_mma_sync(p: dict, shape: tuple) -> dict:
    """Kernel-total Nsight Compute counters predicted for one launch of
    ``gemm_mma_sync`` (07_mma_sync.cu) with parameters ``p`` on (M, N, K).

    Derivation: every block runs the same instruction stream (no early exit;
    edge tiles are zero-filled, not skipped), so totals are
    ``blocks x k-tiles x per-k-tile profile`` (:func:`mma_sync_bank_profile`);
    for the copies, ``blocks x`` :meth:`MmaSyncGeometry.tiles_copied` (with
    LOAD_SPREAD=1 the last STAGES-1 iterations copy zero-filled tiles too).
    The prefetching loop issues exactly KT * BK/16 fragment loads per warp
    (the prefetch past the last tile is skipped). Stage bases are multiples of
    128 bytes, so every stage has the same bank pattern.

    Returned keys are ncu metric names (``.sum``) plus ``*_why`` notes:

    - ``sm__sass_inst_executed_op_ldsm.sum``: ldmatrix instructions (warp level).
    - ``sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum`` and
      ``sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum``:
      wavefronts, and conflicts = wavefronts - 4 per x4 (one per 8x8 matrix).
      Firm: a published sm_89 measurement of an LDSM-only kernel (4096 x 4-way
      ... = exactly this per-phase rule) matched this model to the unit.
    - ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum``: the same
      number. The kernel has no LDS, and ncu counts LDSM under shared loads
      (same sm_89 measurement: op_ld == op_ldsm). Likely, not proven on sm_90.
    - ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum``: 0. The
      kernel has no STS (C is stored from registers to global). cp.async
      (LDGSTS) has its own counter (``..._op_ldgsts``); if some ncu version
      folded it into op_st, the value would still be the LDGSTS prediction,
      which is 0 as well (8 consecutive lanes fill one 128-byte line, and the
      swizzle only permutes inside a line).
    - ``sm__sass_inst_executed_op_ldgsts.sum`` and
      ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum``:
      instruction count (firm) and conflicts (0; assumes LDGSTS.128 is served
      in quarter-warp phases like other 128-bit accesses: unsure).
    """
    g = MmaSyncGeometry.of(p)
    M, N, K = shape
    blocks = cdiv(N, g.BN) * cdiv(M, g.BM)
    kt = cdiv(K, g.BK)
    copied = blocks * g.tiles_copied(kt)
    prof = mma_sync_bank_profile(p)
    ldsm = prof["ldsm_A"] + prof["ldsm_B"]
    ldsm_wf = prof["ldsm_wavefronts_A"] + prof["ldsm_wavefronts_B"]
    conf = ldsm_wf - 4 * ldsm
    n = blocks * kt
    return {
        "sm__sass_inst_executed_op_ldsm.sum": n * ldsm,
        "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": n * ldsm_wf,
        "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum": n * conf,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": n * conf,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0,
        "sm__sass_inst_executed_op_ldgsts.sum": copied * prof["ldgsts"],
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum":
            copied * (prof["ldgsts_wavefronts"] - 4 * prof["ldgsts"]),
        "conflicts_per_ldsm_A": (prof["ldsm_wavefronts_A"] - 4 * prof["ldsm_A"]) / prof["ldsm_A"],
        "conflicts_per_ldsm_B": (prof["ldsm_wavefronts_B"] - 4 * prof["ldsm_B"]) / prof["ldsm_B"],
        "blocks": blocks, "k_tiles": kt,
    }


def predict_ncu_wmma_ldsm(p: dict, shape: tuple) -> dict:
    """LDSM counters predicted for ``gemm_wmma`` (06_wmma.cu): per warp and
    k16 step, one LDSM.x4 per A fragment and one LDSM.x4.trans per B fragment
    (as its SASS shows: LDSM.16.M88.4 / LDSM.16.MT88.4; for bf16 only because
    the kernel issues ``wmma.load ... .shared.bf16`` itself). WMMA does not
    document which lane addresses which row, so this assumes each phase reads
    one 8x8 quarter of the 16x16 fragment (8 consecutive rows, one 16-byte
    column), as ldmatrix .x4 does for mma.sync. Rows are BK+PAD (A) and
    BN+PAD (B) elements apart. Only the ``_op_ldsm`` metrics are predicted:
    the WMMA epilogue also uses LDS/STS (store_matrix_sync), whose lane
    mapping is not documented."""
    BM, BN, BK, WM, WN, PAD = (int(p[k]) for k in ("BM", "BN", "BK", "WM", "WN", "PAD"))
    M, N, K = shape
    lda, ldb = (BK + PAD) * 2, (BN + PAD) * 2       # row pitches, bytes
    warps = (BM // WM) * (BN // WN)
    per_frag = {}
    for name, pitch in (("A", lda), ("B", ldb)):
        wf = 0
        for quarter in range(4):
            r0, c0 = (quarter % 2) * 8, (quarter // 2) * 16
            wf += wavefronts([(r0 + r) * pitch + c0 for r in range(8)])
        per_frag[name] = wf
    n_frag = (BK // 16) * warps * cdiv(K, BK) * cdiv(N, BN) * cdiv(M, BM)
    ldsm = n_frag * (WM // 16 + WN // 16)
    wf = n_frag * ((WM // 16) * per_frag["A"] + (WN // 16) * per_frag["B"])
    return {"sm__sass_inst_executed_op_ldsm.sum": ldsm,
            "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": wf,
            "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum": wf - 4 * ldsm}


# ------------------------------------------------------------------ owner models
def owner_mma_sync(p: dict, shape: tuple) -> np.ndarray:
    """int32 (M, N): ``blockLinear * 1024 + threadIdx.x`` of the lane of
    07_mma_sync.cu that stores each C element (its -DRECORD_OWNER=1 build).
    Built from the C fragment layout (a) and the block rasterization."""
    g = MmaSyncGeometry.of(p)
    M, N, _ = shape
    gm, gn = cdiv(M, g.BM), cdiv(N, g.BN)
    pid = np.arange(gm * gn)
    pm, pn = tile_of_block(pid, gm, gn, g.GROUP_M)
    block_of_tile = np.empty((gm, gn), dtype=np.int64)
    block_of_tile[pm, pn] = pid
    r = np.arange(M)[:, None]
    c = np.arange(N)[None, :]
    lr, lc = r % g.BM, c % g.BN
    warp = (lr // g.WM) * g.warps_n + lc // g.WN
    lane_of, _ = fragment_grid("C")                    # 16 x 8
    lane = lane_of[(lr % g.WM) % 16, (lc % g.WN) % 8]
    return (block_of_tile[r // g.BM, c // g.BN] * 1024 + warp * 32 + lane).astype(np.int32)


def owner_wmma(p: dict, shape: tuple) -> np.ndarray:
    """int32 (M, N): owner record of 06_wmma.cu's epilogue: a warp copies its
    16 x WN strips with lane ``q % 32`` taking chunk ``q`` of 8 elements
    (q = row * WN/8 + col/8)."""
    BM, BN, WM, WN, GROUP_M = (int(p[k]) for k in ("BM", "BN", "WM", "WN", "GROUP_M"))
    M, N, _ = shape
    gm, gn = cdiv(M, BM), cdiv(N, BN)
    pid = np.arange(gm * gn)
    pm, pn = tile_of_block(pid, gm, gn, GROUP_M)
    block_of_tile = np.empty((gm, gn), dtype=np.int64)
    block_of_tile[pm, pn] = pid
    r = np.arange(M)[:, None]
    c = np.arange(N)[None, :]
    lr, lc = r % BM, c % BN
    warp = (lr // WM) * (BN // WN) + lc // WN
    q = ((lr % WM) % 16) * (WN // 8) + (lc % WN) // 8
    return (block_of_tile[r // BM, c // BN] * 1024 + warp * 32 + q % 32).astype(np.int32)


# ------------------------------------------------------------------ emulation
class PipelineHazard(AssertionError):
    """The emulated cp.async pipeline read a stage before its data was
    guaranteed visible, or refilled a stage some warp might still read."""


class _Pipeline:
    """Ordering checker for STAGES shared buffers fed by cp.async groups.

    Model: all warps run in lockstep between barriers; a barrier starts a
    new epoch. A copy group's data counts as landed when a wait_group
    retires it; other threads see it only after the next barrier. A stage
    may be refilled only in a later epoch than its last read."""

    def __init__(self, stages: int):
        self.epoch = 0
        self.pending: deque = deque()
        self.current: list = []
        self.landed_epoch = [None] * stages      # epoch in which the stage's last copy retired
        self.last_read = [-1] * stages
        self.writes_in_flight = [0] * stages

    def issue(self, stage: int, apply):
        if self.last_read[stage] >= self.epoch:
            raise PipelineHazard(f"stage {stage} refilled in epoch {self.epoch}, "
                                 "where some warp may still read it (no barrier since)")
        self.writes_in_flight[stage] += 1
        self.current.append((stage, apply))

    def commit(self):
        self.pending.append(self.current)
        self.current = []

    def wait(self, n: int):
        while len(self.pending) > n:
            for stage, apply in self.pending.popleft():
                apply()
                self.writes_in_flight[stage] -= 1
                self.landed_epoch[stage] = self.epoch

    def barrier(self):
        self.epoch += 1

    def read(self, stage: int):
        if self.writes_in_flight[stage]:
            raise PipelineHazard(f"stage {stage} read in epoch {self.epoch} while a copy into it is in flight")
        if self.landed_epoch[stage] is None or self.landed_epoch[stage] >= self.epoch:
            raise PipelineHazard(f"stage {stage} read in epoch {self.epoch} before a barrier "
                                 "made its copied data visible to all threads")
        self.last_read[stage] = self.epoch


def _round(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round float values to fp16 or bf16 (returned as float32)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":   # round to nearest even on the upper 16 bits
        b = x.view(np.uint32).astype(np.uint64)
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        return b.astype(np.uint32).view(np.float32)
    raise ValueError(f"dtype={dtype!r}: must be 'float16' or 'bfloat16'")


def emulate_mma_sync(A: np.ndarray, B: np.ndarray, p: dict, dtype: str = "float16",
                     record_owner: bool = False):
    """Replay 07_mma_sync.cu on NumPy arrays; returns C (float32, rounded to
    ``dtype``) and, with ``record_owner``, the owner array of its
    -DRECORD_OWNER=1 build (-1 where nothing was written).

    Transcribes the kernel's index arithmetic (cp.async chunk of each thread,
    swizzled offsets, ldmatrix lane addresses, the stage ring and its
    wait/barrier order, the epilogue); takes the instruction semantics from
    the PTX ISA (:func:`ldmatrix`, fragment maps). Raises
    :class:`PipelineHazard` on an ordering error. Slow: for small shapes.
    """
    g = MmaSyncGeometry.of(p)
    M, K = A.shape
    K2, N = B.shape
    if K2 != K:
        raise ValueError(f"B.shape[0]={K2}: must equal A.shape[1]={K}")
    A = _round(A, dtype)
    B = _round(B, dtype)
    Af, Bf = A.ravel(), B.ravel()
    C = np.full((M, N), np.nan, dtype=np.float32)
    owner = np.full((M, N), -1, dtype=np.int64)
    gm, gn = cdiv(M, g.BM), cdiv(N, g.BN)
    KT = cdiv(K, g.BK)
    warps = g.threads // 32
    offs = [_mma_sync_thread_offsets(g, t) for t in range(g.threads)]
    a_base = 0
    b_base = g.STAGES * g.a_stage * 2

    for pid in range(gm * gn):
        pid_m, pid_n = (int(v) for v in tile_of_block(pid, gm, gn, g.GROUP_M))
        m0, n0 = pid_m * g.BM, pid_n * g.BN
        smem = np.full(g.smem_bytes // 2, np.nan, dtype=np.float32)   # poison: unwritten = NaN
        pipe = _Pipeline(g.STAGES)

        def load_tile(stage, k0, first=0, last=None):
            """Thread chunks first..last-1 (A chunks, then B) of the tile at k0."""
            last = g.chunks if last is None else last
            def apply(stage=stage, k0=k0):
                for t in range(g.threads):
                    a_chunks, b_chunks = offs[t]
                    for c in range(first, last):
                        if c < len(a_chunks):
                            row, col, dst = a_chunks[c]
                            gr, gk = m0 + row, k0 + col
                            e = (a_base + stage * g.a_stage * 2 + dst) // 2
                            ok = gr < M and gk < K
                            smem[e:e + 8] = Af[gr * K + gk: gr * K + gk + 8] if ok else 0.0
                        else:
                            row, col, dst = b_chunks[c - len(a_chunks)]
                            gk, gn_ = k0 + row, n0 + col
                            e = (b_base + stage * g.b_stage * 2 + dst) // 2
                            ok = gk < K and gn_ < N
                            smem[e:e + 8] = Bf[gk * N + gn_: gk * N + gn_ + 8] if ok else 0.0
            pipe.issue(stage, apply)

        def load_frags(stage, ks):
            pipe.read(stage)
            fr = []
            for w in range(warps):
                a, b = mma_sync_ldsm_offsets(g, w, ks)
                af = [ldmatrix(smem, (a_base + stage * g.a_stage * 2 + addr) // 2) for addr in a]
                bf = []
                for addr in b:
                    r = ldmatrix(smem, (b_base + stage * g.b_stage * 2 + addr) // 2, trans=True)
                    bf += [r[:, 0:2, :], r[:, 2:4, :]]
                fr.append((af, bf))
            return fr

        acc = np.zeros((warps, g.MT, g.NT, 32, 4), dtype=np.float64)
        for s in range(g.STAGES - 1):
            if s < KT:
                load_tile(s, s * g.BK)
            pipe.commit()
        pipe.wait(g.STAGES - 2)
        pipe.barrier()
        rs, ws = 0, g.STAGES - 1
        frags = [load_frags(0, 0), None]
        for kt in range(KT):
            kn = kt + g.STAGES - 1
            w_stage = ws
            for ks in range(g.KK):
                if ks == g.KK - 1:
                    if g.LOAD_SPREAD:            # last chunks, commit, then wait
                        load_tile(w_stage, kn * g.BK, *g.chunk_range(ks))
                        pipe.commit()
                        ws = 0 if ws + 1 == g.STAGES else ws + 1
                    pipe.wait(g.STAGES - 2)
                    pipe.barrier()
                    rs = 0 if rs + 1 == g.STAGES else rs + 1
                if ks < g.KK - 1 or kt + 1 < KT:
                    frags[(ks + 1) % 2] = load_frags(rs, (ks + 1) % g.KK)
                if g.LOAD_SPREAD and ks < g.KK - 1:
                    load_tile(w_stage, kn * g.BK, *g.chunk_range(ks))
                if not g.LOAD_SPREAD and ks == 0:
                    if kn < KT:
                        load_tile(ws, kn * g.BK)
                    pipe.commit()
                    ws = 0 if ws + 1 == g.STAGES else ws + 1
                for w, (af, bf) in enumerate(frags[ks % 2]):
                    a_tiles = [tile_from_fragment("A", r) for r in af]
                    b_tiles = [tile_from_fragment("B", r) for r in bf]
                    for mi in range(g.MT):
                        for nj in range(g.NT):
                            d = a_tiles[mi] @ b_tiles[nj]              # 16 x 8, float64
                            cmap = _fragment_map_cached("C")
                            acc[w, mi, nj] += d[cmap[:, :, 0], cmap[:, :, 1]]
        pipe.wait(0)

        # Epilogue, as written in the kernel.
        for w in range(warps):
            wm, wn = w // g.warps_n, w % g.warps_n
            for lane in range(32):
                gq, t = lane // 4, lane % 4
                for mi in range(g.MT):
                    for nj in range(g.NT):
                        col = n0 + wn * g.WN + nj * 8 + 2 * t
                        for h in range(2):
                            row = m0 + wm * g.WM + mi * 16 + gq + 8 * h
                            if row < M and col < N:
                                C[row, col:col + 2] = acc[w, mi, nj, lane, 2 * h:2 * h + 2]
                                owner[row, col:col + 2] = pid * 1024 + w * 32 + lane
    C = _round(C, dtype)
    return (C, owner) if record_owner else C


def emulate_wmma(A: np.ndarray, B: np.ndarray, p: dict, dtype: str = "float16",
                 wrong_layout: bool = False, acc_f16: bool = False, record_owner: bool = False):
    """Replay 06_wmma.cu on NumPy arrays (same return as :func:`emulate_mma_sync`).

    WMMA fragments are opaque, so load_matrix_sync is modelled by its
    documented meaning: element (r, c) of the 16x16 operand is
    ``ptr[r * ldm + c]`` for row_major, ``ptr[c * ldm + r]`` for col_major
    (the ``wrong_layout`` pitfall). ``acc_f16`` rounds the accumulator to fp16
    after every 16x16x16 step (a model: the hardware's internal precision of
    one HMMA step is not documented)."""
    BM, BN, BK, WM, WN, PAD, STAGES, GROUP_M = (
        int(p[k]) for k in ("BM", "BN", "BK", "WM", "WN", "PAD", "STAGES", "GROUP_M"))
    M, K = A.shape
    N = B.shape[1]
    A = _round(A, dtype)
    B = _round(B, dtype)
    wn_count = BN // WN
    warps = (BM // WM) * wn_count
    threads = warps * 32
    lda, ldb = BK + PAD, BN + PAD
    a_stage, b_stage = BM * lda, BK * ldb
    C = np.full((M, N), np.nan, dtype=np.float32)
    owner = np.full((M, N), -1, dtype=np.int64)
    gm, gn = cdiv(M, BM), cdiv(N, BN)
    KT = cdiv(K, BK)
    for pid in range(gm * gn):
        pid_m, pid_n = (int(v) for v in tile_of_block(pid, gm, gn, GROUP_M))
        m0, n0 = pid_m * BM, pid_n * BN
        sA = np.full(STAGES * a_stage, np.nan, dtype=np.float32)
        sB = np.full(STAGES * b_stage, np.nan, dtype=np.float32)
        pipe = _Pipeline(STAGES)

        def load_tile(stage, k0):
            def apply(stage=stage, k0=k0):
                for q in range(BM * BK // 8):
                    row, col = q // (BK // 8), (q % (BK // 8)) * 8
                    ok = m0 + row < M and k0 + col < K
                    e = stage * a_stage + row * lda + col
                    sA[e:e + 8] = A[m0 + row, k0 + col:k0 + col + 8] if ok else 0.0
                for q in range(BK * BN // 8):
                    row, col = q // (BN // 8), (q % (BN // 8)) * 8
                    ok = k0 + row < K and n0 + col < N
                    e = stage * b_stage + row * ldb + col
                    sB[e:e + 8] = B[k0 + row, n0 + col:n0 + col + 8] if ok else 0.0
            pipe.issue(stage, apply)

        acc = np.zeros((warps, WM // 16, WN // 16, 16, 16), dtype=np.float64)
        for s in range(STAGES - 1):
            if s < KT:
                load_tile(s, s * BK)
            pipe.commit()
        for kt in range(KT):
            pipe.wait(STAGES - 2)
            pipe.barrier()
            kn = kt + STAGES - 1
            if kn < KT:
                load_tile(kn % STAGES, kn * BK)
            pipe.commit()
            st = kt % STAGES
            pipe.read(st)
            for w in range(warps):
                wm, wn = w // wn_count, w % wn_count
                for ks in range(0, BK, 16):
                    a_fr = []
                    for i in range(WM // 16):
                        base = st * a_stage + (wm * WM + i * 16) * lda + ks
                        idx = base + np.arange(16)[:, None] * lda + np.arange(16)[None, :]
                        a_fr.append(sA[idx].astype(np.float64))
                    b_fr = []
                    for j in range(WN // 16):
                        base = st * b_stage + ks * ldb + wn * WN + j * 16
                        r, c = np.arange(16)[:, None], np.arange(16)[None, :]
                        idx = base + (c * ldb + r if wrong_layout else r * ldb + c)
                        b_fr.append(sB[idx].astype(np.float64))
                    for i in range(WM // 16):
                        for j in range(WN // 16):
                            acc[w, i, j] += a_fr[i] @ b_fr[j]
                            if acc_f16:
                                acc[w, i, j] = acc[w, i, j].astype(np.float16).astype(np.float64)
        pipe.wait(0)
        for w in range(warps):
            wm, wn = w // wn_count, w % wn_count
            for i in range(WM // 16):
                strip = np.concatenate([acc[w, i, j] for j in range(WN // 16)], axis=1)  # 16 x WN
                for lane in range(32):
                    for q in range(lane, 16 * WN // 8, 32):
                        r, c = q // (WN // 8), (q % (WN // 8)) * 8
                        row, col = m0 + wm * WM + i * 16 + r, n0 + wn * WN + c
                        if row < M and col < N:
                            C[row, col:col + 8] = strip[r, c:c + 8]
                            owner[row, col:col + 8] = pid * 1024 + w * 32 + lane
    C = _round(C, dtype)
    return (C, owner) if record_owner else C


# ------------------------------------------------------------------ (e) figures and tables for the notebooks
# Everything below draws the models above for chapters 6-7. Arrays in traces
# are small integer NumPy arrays (Plotly stores them base64-encoded), so the
# figures stay small in the committed notebooks.

_GROUP_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7"]


def _discrete_scale(colors):
    """A Plotly colorscale that gives integer z = 0..len(colors)-1 one flat colour each."""
    n = len(colors)
    scale = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def figure_fragments():
    """Who holds what in one ``mma.sync.m16n8k16`` (PTX ISA fragment layouts).

    Four heatmaps, each cell labelled and coloured by lane: the A fragment
    (16 x 16, m x k), the B fragment (16 x 8, k x n), the C/D fragment
    (16 x 8, m x n), and the row addresses the kernels hand to
    ``ldmatrix .x4`` (row ``lane % 16`` of a 16-row slice, 16-byte chunk
    ``lane / 16``): the same lanes address A's m rows and, with ``.trans``,
    B's k rows. Hover shows the element index, the register, and for ldmatrix
    which 8x8 matrix the row belongs to. A slider picks one lane and outlines
    everything it holds and the row it addresses. Model (PTX ISA), no GPU.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    panels = []
    for op, what in (("A", "a"), ("B", "b"), ("C", "c")):
        lane_of, idx_of = fragment_grid(op)
        reg = idx_of // 2 if op != "C" else idx_of
        cd = np.stack([idx_of, reg], axis=-1).astype(np.int16)
        panels.append((op, lane_of.astype(np.uint8), cd, what))
    ld_lane = np.zeros((16, 2), dtype=np.uint8)
    for lane in range(32):
        r, c = ldmatrix_lane_rows(lane)
        ld_lane[r, c] = lane
    ld_cd = np.stack([ld_lane // 8, ld_lane % 8], axis=-1).astype(np.int16)

    pos = [(1, 1), (1, 2), (2, 1), (2, 2)]          # A, B, C, ldmatrix rows
    fig = make_subplots(rows=2, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.1, vertical_spacing=0.12,
                        subplot_titles=["A fragment (m x k)", "B fragment (k x n)", "C / D fragment (m x n)",
                                        "ldmatrix .x4: row address of each lane"])
    for (op, z, cd, what), (r, c) in zip(panels, pos):
        reg_word = "register" if op != "C" else "f32 register"
        fig.add_trace(go.Heatmap(
            z=z, customdata=cd, zmin=0, zmax=31, colorscale="Turbo", showscale=False, xgap=1, ygap=1,
            texttemplate="%{z}", textfont=dict(size=9),
            hovertemplate=(f"{op}[row %{{y}}, col %{{x}}]<br>held by lane %{{z}}<br>"
                           f"as {what}%{{customdata[0]}}, {reg_word} %{{customdata[1]}}<extra></extra>")),
            row=r, col=c)
    fig.add_trace(go.Heatmap(
        z=ld_lane, customdata=ld_cd, zmin=0, zmax=31, colorscale="Turbo", showscale=False, xgap=1, ygap=1,
        texttemplate="lane %{z}", textfont=dict(size=9),
        hovertemplate=("row %{y} of the 16-row slice, 16-byte chunk %{x}<br>address given by lane %{z}"
                       "<br>= row %{customdata[1]} of 8x8 matrix %{customdata[0]}: it lands in register "
                       "%{customdata[0]} of every lane<extra></extra>")),
        row=2, col=2)

    def marks(lane):
        a = np.array(frag_a(lane))
        b = np.array(frag_b(lane))
        c = np.array(frag_c(lane))
        r, ch = ldmatrix_lane_rows(lane)
        return [(a[:, 1], a[:, 0]), (b[:, 1], b[:, 0]), (c[:, 1], c[:, 0]), (np.array([ch]), np.array([r]))]

    for (x, y), (r, c) in zip(marks(0), pos):
        fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=15, color="black", line=dict(width=3))),
                      row=r, col=c)
    steps = []
    for lane in range(32):
        m = marks(lane)
        steps.append(dict(method="restyle", label=str(lane),
                          args=[{"x": [v[0].tolist() for v in m], "y": [v[1].tolist() for v in m]}, [4, 5, 6, 7]]))
    names = [("m", "k", 16), ("k", "n", 8), ("m", "n", 8), ("row of the slice", "16-byte chunk", 2)]
    for (ylab, xlab, ncols), (r, c) in zip(names, pos):
        fig.update_yaxes(range=[15.5, -0.5], dtick=2, title_text=ylab, row=r, col=c)
        fig.update_xaxes(range=[-0.5, ncols - 0.5], dtick=1 if ncols <= 8 else 2, title_text=xlab, row=r, col=c)
    fig.update_annotations(font=dict(size=12))
    fig.update_layout(
        title=dict(text="mma.sync.m16n8k16: which lane holds which element"
                        "<br><sup>number = lane; PTX ISA fragment layouts, groupID = lane / 4, "
                        "threadID_in_group = lane % 4; a model, no GPU involved</sup>", x=0.01),
        height=860, margin=dict(l=50, r=20, t=90, b=40),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="outlined: lane "), pad=dict(t=50))])
    return fig


def _swizzle_panel(rows: int, R: int, on: bool):
    """(bank group of each logical chunk's stored place, stored (row, chunk)) for a tile."""
    q = np.arange(rows * R).reshape(rows, R)
    phys = swizzle(q, R, on)
    return (phys % 8).astype(np.uint8), np.stack([phys // R, phys % R], axis=-1).astype(np.int16)


# The configurations chapter 7's prose, its swizzle figure and table, and the recorded
# Nsight Compute run (results/h200-ldmatrix.json) describe: 128 x 256 blocks, BK = 32
# (64-byte rows of A), WMMA with 128 x 256 blocks. The catalog defaults later moved to
# the H200 sweep winners (mma.sync BK = 64, WMMA 128 x 128); these stay as measured.
MMA_TEACHING = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4, "SWIZZLE": 1, "GROUP_M": 8,
                "LOAD_SPREAD": 1}
WMMA_NCU = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "PAD": 8, "STAGES": 3, "GROUP_M": 8}


def ldmatrix_phase_table(p: dict | None = None) -> list[dict]:
    """Wavefronts of each of the 4 phases (8x8 matrices) of warp 0's first
    ldmatrix of A (``.x4``) and of B (``.x4.trans``), plain vs swizzled, from
    the kernel's addresses (:func:`mma_sync_ldsm_offsets`). 1 wavefront is
    conflict-free; n is an n-way conflict."""
    from . import catalog
    base = dict(MMA_TEACHING, **(p or {}))
    rows = []
    for sw in (0, 1):
        g = MmaSyncGeometry.of({**base, "SWIZZLE": sw})
        a, b = mma_sync_ldsm_offsets(g, 0, 0)
        for name, addr in (("A (ldmatrix .x4)", a[0]), ("B (ldmatrix .x4.trans)", b[0])):
            wf = phase_wavefronts(addr)
            rows.append({"layout": "swizzled" if sw else "plain row-major", "operand": name,
                         **{f"phase {j}": w for j, w in enumerate(wf)},
                         "conflicts per instruction": sum(wf) - len(wf)})
    return rows


def figure_swizzle(p: dict | None = None, show_rows: int = 16, show_chunks: int = 16):
    """Bank group (banks 4g..4g+3) of every 16-byte chunk of the A and B
    stage tiles of 07_mma_sync.cu, plain (SWIZZLE=0) and swizzled, drawn at
    each chunk's *logical* place (row, chunk of the tile): a column of 8
    identical colours under one ldmatrix phase is an 8-way conflict.

    The outlined cells are the 8 rows one phase of warp 0's first ldmatrix
    reads (a slider picks the phase, lanes 8j..8j+7); the panel titles give
    that phase's wavefronts, computed from the kernel's byte addresses with
    :func:`phase_wavefronts`. Shows the first ``show_rows`` rows and
    ``show_chunks`` chunks of each tile. Model, no GPU.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    from . import catalog

    base = dict(MMA_TEACHING, **(p or {}))
    g0 = MmaSyncGeometry.of({**base, "SWIZZLE": 0})
    offs = {}
    for sw in (0, 1):
        g = MmaSyncGeometry.of({**base, "SWIZZLE": sw})
        a, b = mma_sync_ldsm_offsets(g, 0, 0)
        offs[sw] = {"A": a[0], "B": b[0]}
    la, lb = mma_sync_ldsm_logical(g0, 0, 0)
    logical = {"A": (la[0][0], la[0][1]), "B": (lb[0][0], lb[0][1])}    # (rows, chunks) per lane

    def title(op, sw, phase):
        wf = phase_wavefronts(offs[sw][op])[phase]
        kind = "swizzled" if sw else "plain"
        return f"{op}, {kind}: {wf} wavefront" + (f"s ({wf}-way)" if wf > 1 else " (no conflict)")

    panels = [("A", 0, 1, 1), ("B", 0, 1, 2), ("A", 1, 2, 1), ("B", 1, 2, 2)]    # (op, swizzle, row, col)
    size = {"A": (g0.BM, g0.RA), "B": (g0.BK, g0.RB)}
    nc = {op: min(R, show_chunks) for op, (_, R) in size.items()}
    fig = make_subplots(rows=2, cols=2, subplot_titles=[title(op, sw, 0) for op, sw, _, _ in panels],
                        vertical_spacing=0.16, horizontal_spacing=0.08,
                        column_widths=[nc["A"] / (nc["A"] + nc["B"]) + 0.05, nc["B"] / (nc["A"] + nc["B"]) - 0.05])
    scale = _discrete_scale(_GROUP_COLORS)
    for op, sw, r, c in panels:
        rows_, R = size[op]
        nr = min(rows_, show_rows)
        z, cd = _swizzle_panel(rows_, R, bool(sw))
        fig.add_trace(go.Heatmap(
            z=z[:nr, :nc[op]], customdata=cd[:nr, :nc[op]], zmin=-0.5, zmax=7.5, colorscale=scale,
            showscale=(r == 1 and c == 2), xgap=1, ygap=1, texttemplate="%{z}", textfont=dict(size=9),
            colorbar=dict(title="bank<br>group", tickvals=list(range(8)), len=0.9),
            hovertemplate=(f"{op} tile, row %{{y}}, logical chunk %{{x}}<br>stored at row %{{customdata[0]}}, "
                           "chunk %{customdata[1]}<br>bank group %{z}: banks 4g..4g+3<extra></extra>")),
            row=r, col=c)
        fig.update_yaxes(range=[nr - 0.5, -0.5], title_text=("k row" if op == "B" else "m row") if c == 1 or op == "B" else "",
                         row=r, col=c)
        fig.update_xaxes(range=[-0.5, nc[op] - 0.5], title_text="chunk (16 B)", row=r, col=c)

    def marks(op, phase):
        rows_l, chunks_l = logical[op]
        sel = slice(8 * phase, 8 * phase + 8)
        return chunks_l[sel], rows_l[sel]

    for op, sw, r, c in panels:
        x, y = marks(op, 0)
        fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=16, color="black", line=dict(width=3))),
                      row=r, col=c)
    steps = []
    for ph in range(4):
        xs, ys = [], []
        for op, sw, _, _ in panels:
            x, y = marks(op, ph)
            xs.append(x.tolist())
            ys.append(y.tolist())
        ann = {f"annotations[{i}].text": title(op, sw, ph) for i, (op, sw, _, _) in enumerate(panels)}
        steps.append(dict(method="update", label=f"phase {ph} (lanes {8 * ph}-{8 * ph + 7})",
                          args=[{"x": xs, "y": ys}, ann, [4, 5, 6, 7]]))
    fig.update_annotations(font=dict(size=12))
    fig.update_layout(
        title=dict(text="Bank group of each 16-byte chunk, plain (top) vs swizzled (bottom)"
                        f"<br><sup>tiles of 07_mma_sync.cu at BM={g0.BM} BN={g0.BN} BK={g0.BK} (first {show_rows} "
                        f"rows and chunks)<br>outlined: the 8 rows one ldmatrix phase of warp 0 reads; "
                        "model of the kernel's addresses, no GPU involved</sup>", x=0.01),
        height=840, margin=dict(l=60, r=20, t=120, b=40),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="outlined: "), pad=dict(t=50))])
    return fig


def figure_warp_tiles(key: str, p: dict | None = None):
    """One block tile of C split into warp tiles and Tensor Core fragments,
    for kernel ``key`` (a chapter 6 or 7 catalog entry): one cell per
    fragment (16 x 16 for WMMA, 16 x 8 for mma.sync m16n8k16), coloured by
    the warp that owns it; the label is the fragment's index inside the warp
    tile. From the kernels' index arithmetic (the owner models), no GPU."""
    import plotly.graph_objects as go
    from . import catalog
    spec = catalog.get(key)
    q = spec.params(**(p or {}))
    BM, BN, WM, WN = q["BM"], q["BN"], q["WM"], q["WN"]
    fm, fn = 16, (8 if spec.entry == "gemm_mma_sync" else 16)
    rr, cc = np.arange(BM // fm)[:, None], np.arange(BN // fn)[None, :]
    warp = ((rr * fm) // WM) * (BN // WN) + (cc * fn) // WN
    i, j = (rr * fm % WM) // fm, (cc * fn % WN) // fn
    cd = np.stack(np.broadcast_arrays(i, j, rr * fm, cc * fn), axis=-1).astype(np.int16)
    warps = (BM // WM) * (BN // WN)
    colors = (_GROUP_COLORS * 2)[:warps]
    frag = "acc" if fn == 16 else "mma"
    fig = go.Figure(go.Heatmap(
        z=warp.astype(np.uint8), customdata=cd, zmin=-0.5, zmax=warps - 0.5,
        colorscale=_discrete_scale(colors), xgap=1, ygap=1,
        colorbar=dict(title="warp", tickvals=list(range(warps))),
        text=[[f"{a},{b}" for a, b in zip(ri, rj)] for ri, rj in zip(*np.broadcast_arrays(i, j))]
        if BN // fn <= 16 else None, texttemplate="%{text}" if BN // fn <= 16 else "", textfont=dict(size=9),
        hovertemplate=(f"warp %{{z}}, {frag}[%{{customdata[0]}}][%{{customdata[1]}}]<br>C rows "
                       f"%{{customdata[2]}}..+{fm - 1}, cols %{{customdata[3]}}..+{fn - 1} of the block tile<extra></extra>")))
    fig.update_yaxes(autorange="reversed", title_text=f"fragment row (x {fm} rows of C)")
    fig.update_xaxes(title_text=f"fragment column (x {fn} columns of C)")
    fig.update_layout(
        title=dict(text=f"{key}: block tile {BM} x {BN}, {warps} warps of {WM} x {WN}, {fm} x {fn} fragments"
                        f"<br><sup>colour = warp; {'label' if BN // fn <= 16 else 'hover'}: the fragment's index "
                        "inside its warp tile; from the kernel's index arithmetic, no GPU involved</sup>", x=0.01),
        height=360 if BN // fn <= 16 else 380, margin=dict(l=60, r=20, t=80, b=50))
    return fig


# ------------------------------------------------------------------ (f) checks the notebooks run
NCU_LDMATRIX_JSON = Path(__file__).resolve().parent.parent / "results" / "h200-ldmatrix.json"


def load_ncu_ldmatrix(path=None) -> dict | None:
    """The JSON ``scripts/ncu_ldmatrix.py --out results/h200-ldmatrix.json``
    wrote on a GPU (Nsight Compute's counters next to the model's
    predictions), or None when it has not been recorded yet."""
    import json
    p = Path(path) if path else NCU_LDMATRIX_JSON
    if not p.is_file():
        return None
    return json.loads(p.read_text())


_NCU_SHORT = {
    "sm__sass_inst_executed_op_ldsm.sum": "ldmatrix instructions",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": "ldmatrix wavefronts",
    "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum": "ldmatrix bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts (op_ld)",
    "sm__sass_inst_executed_op_ldgsts.sum": "cp.async instructions",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum": "cp.async bank conflicts",
}


def ncu_plan(shape=(512, 512, 512)) -> list[dict]:
    """The four launches ``scripts/ncu_ldmatrix.py`` profiles, in its order."""
    from . import catalog
    mma, wm = catalog.get("mma_sync_f16"), catalog.get("wmma_f16")
    return [
        {"key": "mma_sync_f16", "params": mma.params(**{**MMA_TEACHING, "SWIZZLE": 1}), "label": "mma.sync, swizzled smem"},
        {"key": "mma_sync_f16", "params": mma.params(**{**MMA_TEACHING, "SWIZZLE": 0}),
         "label": "mma.sync, plain row-major smem"},
        {"key": "wmma_f16", "params": wm.params(**{**WMMA_NCU, "PAD": 8}), "label": "WMMA, rows padded by 8"},
        {"key": "wmma_f16", "params": wm.params(**{**WMMA_NCU, "PAD": 0}), "label": "WMMA, unpadded rows"},
    ]


def ncu_rows(doc: dict | None = None, shape=(512, 512, 512)) -> list[dict]:
    """Model vs Nsight Compute, one row per launch and counter.

    ``doc``: the JSON of :func:`load_ncu_ldmatrix`, or None (then every
    ``measured`` is None and only the model is shown). Rows: {"launch",
    "counter", "model", "measured", "agree"}."""
    rows = []
    if doc:
        items = [(r["label"], r["predicted"], r.get("measured", {})) for r in doc.get("runs", [])]
    else:
        items = []
        for it in ncu_plan(shape):
            pred = (predict_ncu_mma_sync if it["key"].startswith("mma_sync") else predict_ncu_wmma_ldsm)(
                it["params"], tuple(shape))
            items.append((it["label"], pred, {}))
    for label, pred, meas in items:
        for metric, short in _NCU_SHORT.items():
            if metric not in pred:
                continue
            m = meas.get(metric)
            m = m if isinstance(m, (int, float)) else None
            rows.append({"launch": label, "counter": short, "model": pred[metric], "measured": m,
                         "agree": None if m is None else ("yes" if abs(m - pred[metric]) <= 0.01 * max(abs(pred[metric]), 1)
                                                          else "NO")})
    return rows


def resource_rows(key: str, configs: list[dict], shape=(4096, 4096, 4096)) -> tuple[list, str]:
    """Registers, shared memory, spills and theoretical occupancy of kernel
    ``key`` at each parameter set of ``configs`` (partial dicts over the
    defaults). Invalid sets are listed with the rule they break (nothing is
    compiled for them).

    Live: the compiled kernel, from the CUDA driver
    (:meth:`helpers.launch.Launch.resources`). Recorded: ``nvcc -Xptxas -v``
    for sm_90 (:func:`helpers.compile.nvcc_check`) when nvcc exists, with the
    occupancy model of :func:`helpers.launch.occupancy` for an H100/H200.
    Returns (rows, where-label); rows is [] when neither a GPU nor nvcc is here.
    """
    from concurrent.futures import ThreadPoolExecutor
    from . import catalog, compile as kc, gpu, launch
    spec = catalog.get(key)
    live = gpu.live()
    if not live and not kc.nvcc_path():
        return [], "needs nvcc or a GPU (neither is here)"

    def one(pt):
        label = " ".join(f"{k}={v}" for k, v in pt.items()) or "defaults"
        try:
            r = launch.resources_of(key, shape, **pt)
        except ValueError as e:
            return {"config": label, "refused": str(e)}
        return {"config": label, "threads": r["threads"], "registers": r["registers"],
                "shared memory (KiB)": round((r["smem_static"] + r["smem_dynamic"]) / 1024, 1),
                "spill bytes": r["spill_bytes"], "blocks/SM": r["blocks_per_sm"],
                "occupancy": f"{r['occupancy']:.0%} ({r['limited_by']})"}

    with ThreadPoolExecutor(max_workers=1 if live else 4) as ex:
        rows = list(ex.map(one, configs))
    where = ("compiled here, resources from the CUDA driver on " + gpu.device_info()["name"] if live else
             "nvcc -Xptxas -v for sm_90 on this machine (no GPU here); occupancy from the "
             "Occupancy Calculator model for an H100/H200")
    return rows, where


def check_owner_against_kernel(key: str, shape=(200, 264, 72)) -> str:
    """Compare the owner model of catalog entry ``key`` (``spec.owner``) with
    what its ``-DRECORD_OWNER=1`` build records, element by element, on a
    shape that is not a multiple of the block tile. Live: AssertionError on
    any difference, else a one-line report. Recorded: says where the GPU
    suite runs this check instead."""
    from . import catalog, gpu, launch
    if not gpu.live():
        return (f"{key}: no GPU here; the GPU suite checks this model against the kernel "
                "(tests/gpu/test_kernels.py::test_owner_model_matches_kernel).")
    spec = catalog.get(key)
    p = spec.params()
    got = launch.record_owner(key, shape)
    want = spec.owner(p, shape)
    bad = int((got != want).sum())
    assert bad == 0, f"{key}: the owner model and the kernel disagree on {bad} of {got.size} elements of C"
    return (f"{key} at M, N, K = {shape}: the (block, lane) the kernel recorded for all {got.size} "
            "elements of C equals the model.")


def wrong_layout_run(shape=None, seed: int = 0) -> dict:
    """Run the WMMA layout pitfall and the correct kernel on the same inputs.

    Live: ``wmma_wrong_layout_pitfall`` and ``wmma_f16`` through
    :func:`helpers.launch.gemm` on fresh fp16 inputs of ``shape`` (default
    1024^3), outputs NaN-poisoned first, and the float64 reference of
    :func:`helpers.verify.reference_gemm`; ``check`` is
    :func:`helpers.verify.check`. Recorded: the same two kernels replayed by
    :func:`emulate_wmma` on the CPU (default shape 128 x 256 x 64, one block),
    and ``check`` is :func:`helpers.precision.check_host` (same tolerance, same
    WrongResult). Returns {"C_wrong", "C_right", "ref" (device arrays live,
    NumPy recorded), "check", "shape", "source", "where"}.
    """
    from . import catalog, gpu, launch, precision, results, verify
    p = catalog.get("wmma_f16").params()
    if gpu.live():
        cp = gpu.cupy()
        M, N, K = shape or (1024, 1024, 1024)
        A = verify.random_matrix((M, K), "float16")
        B = verify.random_matrix((K, N), "float16")
        out = {}
        for key, name in (("wmma_wrong_layout_pitfall", "C_wrong"), ("wmma_f16", "C_right")):
            C = cp.empty((M, N), dtype=cp.float16)
            verify.poison(C)
            launch.gemm(key, A, B, C)
            out[name] = C
        return {**out, "ref": verify.reference_gemm(A, B), "check": verify.check, "shape": (M, N, K),
                "source": "live", "where": results.where(True)}
    M, N, K = shape or (128, 256, 64)
    rng = np.random.default_rng(seed)
    A = _round(rng.standard_normal((M, K)), "float16")
    B = _round(rng.standard_normal((K, N)), "float16")
    return {"C_wrong": emulate_wmma(A, B, p, wrong_layout=True), "C_right": emulate_wmma(A, B, p),
            "ref": A.astype(np.float64) @ B.astype(np.float64), "check": precision.check_host,
            "shape": (M, N, K), "source": "emulated",
            "where": "replayed on the CPU by fragments.emulate_wmma (no GPU here; the GPU run uses the real kernel)"}


def side_by_side(run: dict, n: int = 6, row: int = 0) -> list[dict]:
    """The first ``n`` elements of row ``row`` of C from :func:`wrong_layout_run`:
    reference, correct kernel, wrong-layout kernel (host floats)."""
    def host(x):
        return np.asarray(x.get() if hasattr(x, "get") else x, dtype=np.float64)
    ref, right, wrong = (host(run[k])[row, :n] for k in ("ref", "C_right", "C_wrong"))
    return [{"element": f"C[{row}, {j}]", "float64 reference": round(float(ref[j]), 3),
             "correct layout (row_major B)": round(float(right[j]), 3),
             "wrong layout (col_major B)": round(float(wrong[j]), 3)} for j in range(n)]


def sweep_points(key: str, names) -> list[dict]:
    """The configurations of catalog entry ``key``'s recorded sweep (defaults
    included) that differ from the defaults only in ``names``: one slice of
    the sweep, to draw with short labels (``sweep.run(key, shape, points=...)``)."""
    from . import catalog
    spec = catalog.get(key)
    return [c for c in spec.configs() if all(c[k] == spec.defaults[k] for k in c if k not in names)]


def sweep_figure(recs: list, names, title: str):
    """:func:`helpers.sweep.figure` with room under the bars for long
    configuration labels (several tile parameters each), so the tick labels
    and the slider do not overlap."""
    from . import sweep
    fig = sweep.figure(recs, list(names), title=title)
    longest = max(len(" ".join(f"{n}={r['params'][n]}" for n in names)) for r in recs)
    room = int(3.4 * longest)                      # tick labels at -30 degrees, ~6.5 px per character
    fig.update_layout(height=420 + room, margin=dict(b=40))
    fig.layout.sliders[0].pad.t = 30 + room
    return fig
