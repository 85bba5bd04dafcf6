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
    (:func:`helpers.models.banks.phase_cost`, the one bank model); the excess
    over one is its bank conflicts.

(d) in :mod:`helpers.models.mma_sync`: **Predicted Nsight Compute counters** (:func:`predict_ncu_mma_sync`,
    :func:`predict_ncu_wmma_ldsm`), derived by enumerating every ldmatrix and
    cp.async the kernel issues (the same formulas as the kernel source). How
    ncu attributes them, and what is certain or not, is in those docstrings;
    ``scripts/ncu_ldmatrix.py`` measures, ``tests/gpu/test_swizzle_ncu.py``
    compares.

And in :mod:`helpers.models.pipeline`: :func:`emulate_mma_sync` / :func:`emulate_wmma`: the kernels' data flow
(cp.async chunk mapping, swizzled stage buffers, ldmatrix, mma, epilogue)
replayed on NumPy arrays, with a checker of the cp.async pipeline's ordering
(a stage is read only after its copy group was waited for and a barrier
passed; it is refilled only after a barrier since its last read). And the
owner models of the ``-DRECORD_OWNER=1`` builds (:mod:`helpers.models.mma_sync`):
:func:`owner_mma_sync`, :func:`owner_wmma`. Figures: helpers/figures/fragments.py.

Units: addresses in bytes unless named ``*_elem``; elements are 16-bit.
Errors: ValueError for unknown operands or parameter sets a kernel refuses.
"""
from __future__ import annotations


import functools

import numpy as np

from .banks import BANKS, WORD as BANK_BYTES, phase_cost

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
def fragment_map_cached(operand: str) -> np.ndarray:
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
    m = fragment_map_cached(operand)
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


def phase_wavefronts(byte_addrs32, phase_lanes: int = 8, width: int = CHUNK) -> list[int]:
    """Wavefronts of each phase of a warp-wide 16-byte access: lanes are taken
    ``phase_lanes`` at a time (8 x 16 B = 128 B). For ldmatrix a phase is one
    8x8 matrix (PTX: lanes 8j..8j+7 address matrix j); for 16-byte LDGSTS we
    assume quarter-warps, the rule documented for 128-bit accesses."""
    a = np.asarray(byte_addrs32)
    return [phase_cost(a[i:i + phase_lanes], width) for i in range(0, len(a), phase_lanes)]
