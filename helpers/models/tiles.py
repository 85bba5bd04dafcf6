"""Index models of the tiled kernels (heavens 3-5): owners, staging, reuse.

What each block, warp and thread of kernels/03_smem_tiling.cu,
04_bank_conflicts.cu and 05_register_tiling.cu does, written as Python from
the kernels' own index arithmetic:

* :func:`owner_smem_tiled`, :func:`owner_tile1d`, :func:`owner_reg1d`,
  :func:`owner_reg2d`, :func:`owner_warptile`: for every element of C, ``blockLinear * 1024 +
  threadLinear`` of the thread that writes it, an int32 array (M, N); the GPU
  tests compare it with what the ``-DRECORD_OWNER=1`` build records;
* :func:`staging`: which A and B tiles block (bx, by) stages at k-step t of
  heaven 3, and which thread loads which element;
* :func:`reuse`: global-memory bytes with and without tiling, and the ratio;
* :func:`lane_coords`, :func:`lane_of`, :func:`warptile_layout`: the lane
  layout of the warp-tile kernels (block order: :mod:`helpers.models.raster`).

Owner convention (kernels/README.md): ``blockLinear = blockIdx.y * gridDim.x
+ blockIdx.x``; ``threadLinear = threadIdx.y * blockDim.x + threadIdx.x``.
"""
from __future__ import annotations

import numpy as np

from .raster import block_raster, cdiv


def _grid_ij(shape):
    M, N = shape[0], shape[1]
    return np.meshgrid(np.arange(M, dtype=np.int64), np.arange(N, dtype=np.int64), indexing="ij")


# ------------------------------------------------------------------ heaven 3
def owner_smem_tiled(p: dict, shape) -> np.ndarray:
    """Owner of C[i, j] in sgemm_smem_tiled: block (j // TILE, i // TILE),
    thread (tx, ty) = (j % TILE, i % TILE); grid.x = ceil(N / TILE)."""
    T = p["TILE"]
    i, j = _grid_ij(shape)
    gx = cdiv(shape[1], T)
    return (((i // T) * gx + j // T) * 1024 + (i % T) * T + j % T).astype(np.int32)


def staging(p: dict, shape, bx: int, by: int, t: int) -> dict:
    """What block (bx, by) of sgemm_smem_tiled stages at k-step ``t``.

    Returns ``{"A_rows": (r0, r1), "A_cols": (k0, k1), "B_rows": (k0, k1),
    "B_cols": (c0, c1)}`` (half-open ranges of the logical matrices, clipped to
    the matrix; the rest of each TILE x TILE tile is filled with zeros) and
    ``"A_load"``, ``"B_load"``: int arrays (TILE, TILE) giving, for each
    thread (ty, tx), the flat index ``row * ncols + col`` of the A (M x K)
    or B (K x N) element it loads, or -1 where it stores a zero.
    Raises ValueError for a block or step outside the grid.
    """
    M, N, K = shape
    T = p["TILE"]
    for name, v, hi in (("bx", bx, cdiv(N, T)), ("by", by, cdiv(M, T)), ("t", t, cdiv(K, T))):
        if not 0 <= v < hi:
            raise ValueError(f"{name}={v}: must be in [0, {hi}) for shape {tuple(shape)} and TILE={T}")
    ty, tx = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    ar, ac = by * T + ty, t * T + tx                     # A[row][k0 + tx]
    br, bc = t * T + ty, bx * T + tx                     # B[k0 + ty][col]
    a_load = np.where((ar < M) & (ac < K), ar * K + ac, -1)
    b_load = np.where((br < K) & (bc < N), br * N + bc, -1)
    return {"A_rows": (by * T, min(M, by * T + T)), "A_cols": (t * T, min(K, t * T + T)),
            "B_rows": (t * T, min(K, t * T + T)), "B_cols": (bx * T, min(N, bx * T + T)),
            "A_load": a_load, "B_load": b_load}


def reuse(p: dict, shape, elem_bytes: int = 4) -> dict:
    """Global-memory bytes that the loads of a tiled GEMM ask for.

    Without tiling (heaven 1: one output per thread, nothing shared), every
    output reads a row of A and a column of B: ``2 * M * N * K`` elements.
    With BM x BN block tiles (``TILE`` or ``BM``/``BN`` in ``p``), each block
    reads its BM x K strip of A and K x BN strip of B once:
    ``M * K * ceil(N / BN) + K * N * ceil(M / BM)`` elements, zero-filled
    edge elements not counted. For a square TILE and M, N multiples of it,
    the ratio is exactly TILE: each element fetched is used TILE times
    (CUDA C++ Programming Guide, "Shared Memory": in the tiled matrix product
    "A is only read (B.width / block_size) times from global memory and B is
    read (A.height / block_size) times").
    Returns bytes ``{"naive", "tiled", "ratio"}``. Counts requested bytes;
    caches (L1, L2) may serve part of them.
    """
    M, N, K = shape
    BM = p.get("BM", p.get("TILE"))
    BN = p.get("BN", p.get("TILE"))
    if not BM or not BN:
        raise ValueError(f"p={p}: needs TILE, or BM and BN")
    naive = 2 * M * N * K * elem_bytes
    tiled = (M * K * cdiv(N, BN) + K * N * cdiv(M, BM)) * elem_bytes
    return {"naive": naive, "tiled": tiled, "ratio": naive / tiled}


# ------------------------------------------------------------------ heaven 4
def owner_tile1d(p: dict, shape) -> np.ndarray:
    """Owner of C[i, j] in sgemm_tile1d (kernels/04): block (j // BN, i // BM);
    inside it row m = i % BM, column n = j % BN; warp = (m // 16) +
    (BM // 16) * (n // (2 TN)), lane = m % 16 + 16 * ((n // TN) % 2)."""
    BM, BN, TN = p["BM"], p["BN"], p["TN"]
    i, j = _grid_ij(shape)
    gx = cdiv(shape[1], BN)
    m, n = i % BM, j % BN
    warp = m // 16 + (BM // 16) * (n // (2 * TN))
    lane = m % 16 + 16 * ((n // TN) % 2)
    return (((i // BM) * gx + j // BN) * 1024 + warp * 32 + lane).astype(np.int32)


# ------------------------------------------------------------------ heaven 5
def owner_reg1d(p: dict, shape) -> np.ndarray:
    """Owner of C[i, j] in sgemm_reg1d: thread tid = (m // TM) * BN + n owns
    rows (m // TM) * TM .. +TM-1 of column n of the block tile (m = i % BM,
    n = j % BN); lanes follow n."""
    BM, BN, TM = p["BM"], p["BN"], p["TM"]
    i, j = _grid_ij(shape)
    gx = cdiv(shape[1], BN)
    tid = ((i % BM) // TM) * BN + j % BN
    return (((i // BM) * gx + j // BN) * 1024 + tid).astype(np.int32)


def owner_reg2d(p: dict, shape) -> np.ndarray:
    """Owner of C[i, j] in sgemm_reg2d and sgemm_vec4: thread (tr, tc) =
    (m // TM, n // TN), tid = tr * (BN / TN) + tc, owns a contiguous TM x TN block."""
    BM, BN, TM, TN = p["BM"], p["BN"], p["TM"], p["TN"]
    i, j = _grid_ij(shape)
    gx = cdiv(shape[1], BN)
    tid = ((i % BM) // TM) * (BN // TN) + (j % BN) // TN
    return (((i // BM) * gx + j // BN) * 1024 + tid).astype(np.int32)


def log2_exact(x: int) -> int:
    if x < 1 or x & (x - 1):
        raise ValueError(f"value={x}: must be a power of two")
    return x.bit_length() - 1


def lane_coords(lane, LN: int):
    """(lm, ln) of ``lane`` in the warp-tile kernels (kernels/05, WARPTILE_SETUP):
    bit 0 -> ln, bit 1 -> lm, the next log2(LN) - 1 bits -> ln, the rest -> lm.
    Lanes n and n^1 share lm (the same A float4), n and n^2 share ln."""
    lane = np.asarray(lane)
    lg = log2_exact(LN)
    ln = (lane & 1) | (((lane >> 2) & ((LN >> 1) - 1)) << 1)
    lm = ((lane >> 1) & 1) | ((lane >> (1 + lg)) << 1)
    return lm, ln


def lane_of(lm, ln, LN: int):
    """Inverse of :func:`lane_coords`."""
    lm, ln = np.asarray(lm), np.asarray(ln)
    lg = log2_exact(LN)
    return (ln & 1) | ((lm & 1) << 1) | ((ln >> 1) << 2) | ((lm >> 1) << (1 + lg))


def warptile_layout(p: dict) -> dict:
    """Who owns what inside one BM x BN block tile of the warp-tile kernels.

    Returns int arrays (BM, BN): ``warp`` (0 .. warps-1), ``lane`` (0..31),
    ``thread`` (= 32 * warp + lane, threadIdx.x), ``lm``, ``ln`` (the lane's
    coordinates in the LM x LN lane grid), ``sub`` (which of the thread's
    (TM/4) x (TN/4) 4 x 4 blocks, im * (TN/4) + in).
    """
    BM, BN, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN"))
    LM, LN = WM // TM, WN // TN
    m, n = np.meshgrid(np.arange(BM), np.arange(BN), indexing="ij")
    warp = (m // WM) * (BN // WN) + n // WN
    mw, nw = m % WM, n % WN
    lm, ln = (mw % (4 * LM)) // 4, (nw % (4 * LN)) // 4
    lane = lane_of(lm, ln, LN)
    sub = (mw // (4 * LM)) * (TN // 4) + nw // (4 * LN)
    return {"warp": warp, "lane": lane, "thread": 32 * warp + lane, "lm": lm, "ln": ln, "sub": sub}


def owner_warptile(p: dict, shape) -> np.ndarray:
    """Owner of C[i, j] in sgemm_warptile, sgemm_warptile_db and sgemm_cp_async:
    the block whose raster position (:func:`block_raster`) is tile
    (i // BM, j // BN), thread :func:`warptile_layout` ``["thread"]`` at (i % BM, j % BN)."""
    N = shape[1]
    BM, BN = p["BM"], p["BN"]
    tn_ = cdiv(N, BN)
    tiles = block_raster(p, shape)
    pid_of = np.empty(len(tiles), dtype=np.int64)
    pid_of[tiles[:, 0] * tn_ + tiles[:, 1]] = np.arange(len(tiles))
    thread = warptile_layout(p)["thread"]
    i, j = _grid_ij(shape)
    pid = pid_of[(i // BM) * tn_ + j // BN]
    return (pid * 1024 + thread[i % BM, j % BN]).astype(np.int32)
