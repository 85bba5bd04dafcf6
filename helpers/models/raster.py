"""Block rasterisation and ceiling division: which output tile each block computes.

:func:`tile_of_block` is the one block raster of the book, the Python form of
``block_tile`` in kernels/05_register_tiling.cu and of the rasterisation in
kernels/06_wmma.cu and 07_mma_sync.cu: with ``group_m > 0`` consecutive block
ids walk ``group_m`` tile rows, then one tile to the right (L2 reuse of the B
panel); with ``group_m == 0`` tiles are taken in row order.
"""
from __future__ import annotations

import numpy as np


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for integers (b > 0)."""
    return -(-a // b)


def tile_of_block(pid, grid_m: int, grid_n: int, group_m: int):
    """Block id(s) ``pid`` (int or int array) -> (tile_m, tile_n) on a grid of
    ``grid_m`` x ``grid_n`` output tiles. ``group_m`` <= 0: row order."""
    pid = np.asarray(pid)
    if group_m <= 0:
        return pid // grid_n, pid % grid_n
    per_group = group_m * grid_n
    first_m = (pid // per_group) * group_m
    group_h = np.minimum(grid_m - first_m, group_m)
    return first_m + (pid % per_group) % group_h, (pid % per_group) // group_h


def block_raster(p: dict, shape) -> np.ndarray:
    """pid -> (tile_m, tile_n) of a kernel with ``BM``, ``BN`` and optional
    ``GROUP_M`` in ``p`` on (M, N, ...): an int64 array (tiles_m * tiles_n, 2)."""
    tm_, tn_ = cdiv(shape[0], p["BM"]), cdiv(shape[1], p["BN"])
    pid = np.arange(tm_ * tn_, dtype=np.int64)
    return np.stack(tile_of_block(pid, tm_, tn_, p.get("GROUP_M", 0)), axis=1)




def wave_panels(p: dict, shape, in_flight: int, wave: int = 0, elem_bytes: int = 4) -> dict:
    """Which output tiles, and so which operand panels, the blocks of one wave share.

    Blocks are launched in block-id order (:func:`block_raster` of ``p``'s BM, BN and
    GROUP_M on ``shape`` = (M, N, K)); ``in_flight`` of them run at once (SMs x blocks
    per SM), so wave ``wave`` is blocks ``wave * in_flight`` .. ``+ in_flight - 1``. Tile
    (tm, tn) reads the A row panel tm (BM x K) and the B column panel tn (K x BN).
    Returns ``{"blocks": block ids, "tiles": int array (n, 2), "a_panels": sorted tile
    rows, "b_panels": sorted tile columns, "a_bytes", "b_bytes": bytes of those panels
    (K elements of ``elem_bytes`` each, edge tiles counted whole), "waves": waves in
    the grid}``. Says which panels the blocks in flight share; it does not say that
    they stay in L2 or how fast the kernel runs. Raises ValueError for in_flight < 1 or
    a wave outside the grid.
    """
    if not isinstance(in_flight, int) or in_flight < 1:
        raise ValueError(f"in_flight={in_flight!r}: must be an integer >= 1 (SMs x blocks per SM)")
    tiles = block_raster(p, shape)
    waves = cdiv(len(tiles), in_flight)
    if not isinstance(wave, int) or not 0 <= wave < waves:
        raise ValueError(f"wave={wave!r}: must be in [0, {waves}) for {len(tiles)} blocks, {in_flight} at a time")
    blocks = np.arange(wave * in_flight, min(len(tiles), (wave + 1) * in_flight))
    t = tiles[blocks]
    a, b = np.unique(t[:, 0]), np.unique(t[:, 1])
    K = shape[2]
    return {"blocks": blocks, "tiles": t, "a_panels": a.tolist(), "b_panels": b.tolist(),
            "a_bytes": len(a) * p["BM"] * K * elem_bytes, "b_bytes": len(b) * p["BN"] * K * elem_bytes,
            "waves": waves}
