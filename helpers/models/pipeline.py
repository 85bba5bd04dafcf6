"""The data flow of the Tensor Core kernels replayed on NumPy arrays (no GPU).

:func:`emulate_mma_sync` / :func:`emulate_wmma`: cp.async chunk mapping,
swizzled stage buffers, ldmatrix, mma and the epilogue of 07_mma_sync.cu and
06_wmma.cu, with a checker of the cp.async pipeline's ordering (a stage is read
only after its copy group was waited for and a barrier passed; it is refilled
only after a barrier since its last read): :class:`PipelineHazard`.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from .fragments import fragment_map_cached, ldmatrix, tile_from_fragment
from .mma_sync import MmaSyncGeometry, mma_sync_ldsm_offsets, mma_sync_thread_offsets
from .raster import cdiv, tile_of_block


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


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
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
    A = round_to(A, dtype)
    B = round_to(B, dtype)
    Af, Bf = A.ravel(), B.ravel()
    C = np.full((M, N), np.nan, dtype=np.float32)
    owner = np.full((M, N), -1, dtype=np.int64)
    gm, gn = cdiv(M, g.BM), cdiv(N, g.BN)
    KT = cdiv(K, g.BK)
    warps = g.threads // 32
    offs = [mma_sync_thread_offsets(g, t) for t in range(g.threads)]
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
                            cmap = fragment_map_cached("C")
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
    C = round_to(C, dtype)
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
    A = round_to(A, dtype)
    B = round_to(B, dtype)
    wn_count = BN // WN
    warps = (BM // WM) * wn_count
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
    C = round_to(C, dtype)
    return (C, owner) if record_owner else C


# ------------------------------------------------------------------ the stage ring as a timeline
def stage_schedule(stages: int, k_tiles: int, prefetch: int | None = None, steps: int = 4,
                   spread: bool = False) -> list[dict]:
    """The cp.async ring of ``sgemm_cp_async`` (kernels/05) and ``gemm_mma_sync`` (kernels/07)
    as events on a timeline: an order, not a measurement (no latencies are modelled).

    Time unit: one iteration of the main loop, i.e. the math of one k-tile. Iteration kt
    spans [kt, kt + 1) in ``steps`` inner steps (05: BK steps of k; 07: BK/16 k16 steps),
    step i starting at kt + i / steps; the prologue spans [-1, 0). What the kernels do:

    * prologue: the copies of k-tiles 0 .. prefetch-1 into stages 0 .. prefetch-1, one
      commit group each (an empty group for a tile past the end); then
      ``cp.async.wait_group prefetch-1`` and ``__syncthreads()`` at -1/steps;
    * iteration kt: the copies of k-tile kt + prefetch into stage (kt + prefetch) % stages,
      one commit group per iteration: at the first step (05, and 07 with LOAD_SPREAD=0;
      no copies past the last k-tile, the group is empty) or spread over every step,
      committed at the last (07, ``spread``: past the last k-tile they are issued anyway,
      zero-filled, into a stage nobody reads); at the last step ``wait_group prefetch-1``
      (k-tile kt + 1 has landed) and ``__syncthreads()`` (visible to every warp);
    * k-tile j lives in stage j % stages; the math reads it from the barrier of iteration
      j - 1 (the fragments of its first step load right after it) to the barrier of
      iteration j (the last fragments load before it); after the loop, ``wait_group 0``
      at time k_tiles.

    Returns a list of dicts, each with ``kind``:
    ``"copy"`` (``tile``, ``stage``, ``group``, ``issue``: first copy, ``commit``,
    ``landed``: the wait that retires its group, ``zero_fill``: past the last k-tile),
    ``"read"`` (``tile``, ``stage``, ``start``, ``end``: the barriers around its reads),
    ``"math"`` (``tile``, ``stage``, ``start`` = tile, ``end`` = tile + 1),
    ``"commit"`` (``group``, ``time``, ``tiles``: the k-tiles in it, [] for an empty group),
    ``"wait"`` (``time``, ``pending``: the N of wait_group N, ``retires``: the groups it
    retires, ``landed``: every k-tile complete after it), ``"barrier"`` (``time``).
    Raises ValueError for stages < 2, k_tiles < 1, prefetch outside 1..stages-1 (one more
    tile in flight would overwrite the stage being read) or steps < 2.
    """
    if not isinstance(stages, int) or stages < 2:
        raise ValueError(f"stages={stages!r}: must be an integer >= 2 (one stage is read while another fills)")
    if not isinstance(k_tiles, int) or k_tiles < 1:
        raise ValueError(f"k_tiles={k_tiles!r}: must be an integer >= 1")
    prefetch = stages - 1 if prefetch is None else prefetch
    if not isinstance(prefetch, int) or not 1 <= prefetch <= stages - 1:
        raise ValueError(f"prefetch={prefetch!r}: must be in 1..stages-1 = 1..{stages - 1} (with more k-tiles in "
                         "flight than free stages a copy would overwrite the stage being read)")
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps={steps!r}: must be an integer >= 2 (the wait sits at the last inner step, "
                         "after the copies of the first)")
    KT, P = k_tiles, prefetch
    ev: list[dict] = []
    copies: dict = {}
    committed: list = []                      # group g -> its tiles

    def barrier_time(kt):                     # kt = -1: the prologue
        return kt + (steps - 1) / steps

    def commit(t, tiles):
        committed.append(tiles)
        ev.append({"kind": "commit", "group": len(committed) - 1, "time": t, "tiles": tiles})
        for j in tiles:
            copies[j]["commit"] = t

    retired = 0

    def wait(t, pending):
        nonlocal retired
        upto = max(retired, len(committed) - pending)
        groups = list(range(retired, upto))
        retired = upto
        for g in groups:
            for j in committed[g]:
                copies[j]["landed"] = t
        ev.append({"kind": "wait", "time": t, "pending": pending, "retires": groups,
                   "landed": sorted(j for g in range(retired) for j in committed[g])})

    def copy(j, t):
        copies[j] = {"kind": "copy", "tile": j, "stage": j % stages, "group": len(committed), "issue": t,
                     "commit": None, "landed": None, "zero_fill": j >= KT}
        ev.append(copies[j])

    for s in range(P):                        # prologue
        if s < KT:
            copy(s, -1 + 0.5 * s / P)
        commit(-1 + 0.5 * s / P, [s] if s < KT else [])
    wait(barrier_time(-1), P - 1)
    ev.append({"kind": "barrier", "time": barrier_time(-1)})
    for kt in range(KT):
        j = kt + P
        if spread or j < KT:
            copy(j, float(kt))
        commit(kt + (steps - 1) / steps if spread else float(kt), [j] if (spread or j < KT) else [])
        wait(barrier_time(kt), P - 1)
        ev.append({"kind": "barrier", "time": barrier_time(kt)})
        ev.append({"kind": "math", "tile": kt, "stage": kt % stages, "start": float(kt), "end": kt + 1.0})
        ev.append({"kind": "read", "tile": kt, "stage": kt % stages,
                   "start": barrier_time(kt - 1), "end": barrier_time(kt)})
    wait(float(KT), 0)
    return ev


def kernel_stage_schedule(entry: str, p: dict, k_tiles: int) -> list[dict]:
    """:func:`stage_schedule` of one kernel's parameters ``p`` (every -D value):
    ``entry`` "sgemm_cp_async" (kernels/05: STAGES, BK inner steps, copies at the first)
    or "gemm_mma_sync" (kernels/07: STAGES, BK/16 k16 steps, LOAD_SPREAD). Raises
    ValueError for another entry."""
    if entry == "sgemm_cp_async":
        return stage_schedule(int(p["STAGES"]), k_tiles, steps=int(p["BK"]))
    if entry == "gemm_mma_sync":
        return stage_schedule(int(p["STAGES"]), k_tiles, steps=int(p["BK"]) // 16,
                              spread=bool(int(p.get("LOAD_SPREAD", 1))))
    raise ValueError(f"entry={entry!r}: must be 'sgemm_cp_async' or 'gemm_mma_sync' (the kernels with a cp.async ring)")
