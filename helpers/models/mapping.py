"""Index mapping of the one-output-per-thread kernels (heavens 1 and 2).

Which block, warp and thread computes each element of C, and which elements
of A and B one warp loads at a given step of its k loop. The model is the
kernel's index arithmetic written in Python (see kernels/01_naive.cu and
kernels/02_vectorized.cu); on a GPU the tests compare :func:`owner` with what
the instrumented build (``-DRECORD_OWNER=1``) records, element by element.
The figure is helpers/figures/mapping.py.

Owner code convention: ``blockLinear * 1024 + threadLinear`` with
``blockLinear = blockIdx.y * gridDim.x + blockIdx.x`` and
``threadLinear = threadIdx.y * blockDim.x + threadIdx.x``; warp = threadLinear // 32.
"""
from __future__ import annotations

import numpy as np

from .names import KernelNames
from .raster import cdiv

SECTOR = 32  # bytes: the unit in which L1/L2 move global memory (a warp's
             # request costs one transaction per distinct 32-byte sector)


# The index schemes of heavens 1 and 2: "x-first" (threadIdx.x runs down the rows of C:
# kernels/01_naive.cu's uncoalesced order), "y-first" (threadIdx.x runs along a row of C),
# "float4" (each thread a 1 x 4 strip of a row, float4 loads along k of A and along n of B)
# "scalar-strip" (each thread four outputs of a row, BLOCK_X columns apart, scalar loads: the
# control of chapter 2) and "k-major" (y-first threads, B stored transposed, float4 loads
# along k of A and Bt).
# A chapter says which scheme each of its kernels uses (name_scheme); the functions below
# then take the kernel's name or the scheme's.
SCHEMES = ("x-first", "y-first", "float4", "scalar-strip", "k-major")
_NAMES = KernelNames("scheme", SCHEMES, "no index model in helpers/models/mapping.py")


def name_scheme(kernel: str, scheme: str) -> None:
    """Say that kernel ``kernel`` (a catalog key, given by its chapter) uses index scheme
    ``scheme`` (one of :data:`SCHEMES`), so :func:`owner`, :func:`warp_loads` and
    :func:`sectors_per_fma` take its name. ValueError for an unknown scheme."""
    _NAMES.name(kernel, scheme)


_scheme = _NAMES.of


def _threads_of(key: str, p: dict, shape):
    """For every output element (i, j): (bx, by, tx, ty, gridDim.x)."""
    M, N, K = shape
    BX, BY = p["BLOCK_X"], p["BLOCK_Y"]
    i, j = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    scheme = _scheme(key)
    if scheme == "x-first":
        gx = cdiv(M, BX)
        return i // BX, j // BY, i % BX, j % BY, gx
    if scheme in ("y-first", "k-major"):
        gx = cdiv(N, BX)
        return j // BX, i // BY, j % BX, i % BY, gx
    gx = cdiv(N, 4 * BX)
    if scheme == "scalar-strip":                          # columns bx*4*BX + tx + c*BX
        return j // (4 * BX), i // BY, j % BX, i % BY, gx
    q = j // 4                                            # float4
    return q // BX, i // BY, q % BX, i % BY, gx


def owner(key: str, p: dict, shape) -> np.ndarray:
    """int32 (M, N): blockLinear * 1024 + threadLinear of the thread writing C[i, j], for a
    kernel named to a scheme (:func:`name_scheme`) or a scheme of :data:`SCHEMES`; ``p``
    holds BLOCK_X and BLOCK_Y, ``shape`` is (M, N, K). KeyError for an unknown name."""
    bx, by, tx, ty, gx = _threads_of(key, p, shape)
    return ((by * gx + bx) * 1024 + ty * p["BLOCK_X"] + tx).astype(np.int32)


def warp_loads(key: str, p: dict, shape, block=(0, 0), warp: int = 0, step: int = 0) -> list:
    """The global loads one warp issues at k-loop iteration ``step``.

    Returns a list of load instructions, each {"operand": "A"|"B", "elements":
    [(row, col), ...] of the logical matrix A (M x K) or B (K x N), "bytes":
    per lane, "sectors": number of distinct 32-byte sectors the warp touches}.
    For the K-major kernel, B elements are reported in B's logical (k, n)
    coordinates but sectors are computed on Bt's real addresses.
    """
    M, N, K = shape
    BX, BY = p["BLOCK_X"], p["BLOCK_Y"]
    lanes = [(t % BX, t // BX) for t in range(32 * warp, 32 * warp + 32) if t < BX * BY]
    bx, by = block
    loads = []

    def add(operand, elems, addrs, nbytes):
        ok = [(e, a) for e, a in zip(elems, addrs) if e is not None]
        if not ok:
            return
        sectors = {a * 4 // SECTOR for _, a in ok for a in range(a, a + nbytes // 4)}
        loads.append({"operand": operand, "elements": sorted({x for e, _ in ok for x in e}),
                      "bytes": nbytes, "sectors": len({s for s in sectors})})

    scheme = _scheme(key)
    if scheme in ("x-first", "y-first"):
        k = step
        rc = []
        for tx, ty in lanes:
            if scheme == "x-first":
                i, j = bx * BX + tx, by * BY + ty
            else:
                i, j = by * BY + ty, bx * BX + tx
            rc.append((i, j) if i < M and j < N and k < K else None)
        add("A", [[(i, k)] if x else None for x in rc for (i, j) in [x or (0, 0)]],
            [(x[0] * K + k) if x else 0 for x in rc], 4)
        add("B", [[(k, j)] if x else None for x in rc for (i, j) in [x or (0, 0)]],
            [(k * N + x[1]) if x else 0 for x in rc], 4)
    elif scheme == "float4":
        k0 = 4 * step
        rc = []
        for tx, ty in lanes:
            i, j = by * BY + ty, 4 * (bx * BX + tx)
            rc.append((i, j) if i < M and j < N and k0 < K else None)
        add("A", [[(x[0], k0 + d) for d in range(4)] if x else None for x in rc],
            [(x[0] * K + k0) if x else 0 for x in rc], 16)
        for kk in range(4):
            add("B", [[(k0 + kk, x[1] + d) for d in range(4)] if x else None for x in rc],
                [((k0 + kk) * N + x[1]) if x else 0 for x in rc], 16)
    elif scheme == "scalar-strip":
        k = step
        rc = []
        for tx, ty in lanes:
            i, j0 = by * BY + ty, bx * 4 * BX + tx
            rc.append((i, j0) if i < M and k < K else None)
        add("A", [[(x[0], k)] if x else None for x in rc], [(x[0] * K + k) if x else 0 for x in rc], 4)
        for c in range(4):
            cols = [(x[0], x[1] + c * BX) if x and x[1] + c * BX < N else None for x in rc]
            add("B", [[(k, y[1])] if y else None for y in cols], [(k * N + y[1]) if y else 0 for y in cols], 4)
    else:                                                  # k-major
        k0 = 4 * step
        rc = []
        for tx, ty in lanes:
            i, j = by * BY + ty, bx * BX + tx
            rc.append((i, j) if i < M and j < N and k0 < K else None)
        add("A", [[(x[0], k0 + d) for d in range(4)] if x else None for x in rc],
            [(x[0] * K + k0) if x else 0 for x in rc], 16)
        add("B", [[(k0 + d, x[1]) for d in range(4)] if x else None for x in rc],
            [(x[1] * K + k0) if x else 0 for x in rc], 16)
    return loads


# FMAs one lane does per modelled k step (:func:`warp_loads`' step), by scheme; 1 for the others.
FMAS_PER_STEP = {"float4": 16, "scalar-strip": 4, "k-major": 4}


def load_summary(key: str, p: dict, shape=(4096, 4096, 4096)) -> dict:
    """One warp (warp 0, block 0) at one modelled k step: ``loads`` (:func:`warp_loads`),
    ``instructions`` (load instructions per lane), ``sectors`` (32-byte sectors in all),
    ``fmas`` (FMAs per lane), ``instructions_per_fma`` and ``sectors_per_fma`` (per FMA of the warp)."""
    loads = warp_loads(key, p, shape)
    fmas = FMAS_PER_STEP.get(_scheme(key), 1)
    sectors = sum(ld["sectors"] for ld in loads)
    return {"loads": loads, "instructions": len(loads), "sectors": sectors, "fmas": fmas,
            "instructions_per_fma": len(loads) / fmas, "sectors_per_fma": sectors / (32 * fmas)}


def sectors_per_fma(key: str, p: dict, shape=(4096, 4096, 4096)) -> float:
    """32-byte sectors one warp requests per FMA it performs (warp 0, block 0, step 0):
    the number behind the coalescing argument of chapter 1."""
    return load_summary(key, p, shape)["sectors_per_fma"]
