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


