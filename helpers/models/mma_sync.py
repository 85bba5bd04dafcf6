"""The geometry of 07_mma_sync.cu (and 06_wmma.cu's fragment loads) as a model.

:class:`MmaSyncGeometry` (derived sizes of one parameter set), the per-lane
cp.async and ldmatrix byte offsets exactly as the kernel computes them,
:func:`predict_ncu_mma_sync` / :func:`predict_ncu_wmma_ldsm` (kernel-total
Nsight Compute counters predicted from those addresses), and the owner models
of the ``-DRECORD_OWNER=1`` builds (:func:`owner_mma_sync`, :func:`owner_wmma`).
Fragment layouts, ldmatrix and the swizzle: :mod:`helpers.models.fragments`.
Units: bytes unless named ``*_elem``; elements are 16-bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .banks import phase_cost
from .fragments import CHUNK, fragment_grid, phase_wavefronts, swizzle
from .raster import cdiv, tile_of_block

# The configurations chapter 7's prose, its swizzle figure and table, and the recorded
# Nsight Compute run (results/h200-ldmatrix.json) describe: 128 x 256 blocks, BK = 32
# (64-byte rows of A), WMMA with 128 x 256 blocks. The catalog defaults later moved to
# the H200 sweep winners (mma.sync BK = 64, WMMA 128 x 128); these stay as measured.
MMA_TEACHING = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4, "SWIZZLE": 1, "GROUP_M": 8,
                "LOAD_SPREAD": 1}
WMMA_NCU = {"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "PAD": 8, "STAGES": 3, "GROUP_M": 8}


# ------------------------------------------------------------------ kernel geometry
@dataclass(frozen=True)
class MmaSyncGeometry:
    """Derived sizes of 07_mma_sync.cu for one parameter set (its #defines).

    No validity checks here: the kernel's static_asserts are the rules, the
    catalog entry (helpers/chapters/ch07_mma_sync.py) refuses what they reject,
    and tests/test_rules_vs_kernels.py ties the two."""
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
        return cls(**{k: int(p[k]) for k in ("BM", "BN", "BK", "WM", "WN", "STAGES", "SWIZZLE", "GROUP_M")},
                   LOAD_SPREAD=int(p.get("LOAD_SPREAD", 1)))

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


# Per-thread / per-lane offsets exactly as the kernel computes them.
def mma_sync_thread_offsets(g: MmaSyncGeometry, tid: int):
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
    offs = [mma_sync_thread_offsets(g, t) for t in range(g.threads)]
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
            wf += phase_cost([(r0 + r) * pitch + c0 for r in range(8)], CHUNK)
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
