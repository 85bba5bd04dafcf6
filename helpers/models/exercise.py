"""Diagnose a reader's kernel from what it did: which elements are wrong, who wrote them.

Pure NumPy. The exercise check (:mod:`helpers.runtime.exercise`) runs the reader's kernel
and its instrumented build (``-DRECORD_OWNER=1``, kernels/instrument.cuh), and hands the
arrays to this module, which turns them into words a reader can act on:

* :func:`decode_owner`: the owner code ``blockLinear * 1024 + threadLinear`` of
  kernels/instrument.cuh as (block x, block y, warp, lane);
* :func:`locate`: where a wrong result is wrong, in the owner map's terms (how many
  elements, the first few with the block, warp and lane that wrote each, or "never
  written"), and whether the wrong elements sit only in the last partial tile;
* :func:`warp_store_sectors`: the 32-byte sectors one warp's stores of C touch, from the
  owner map (the coalescing model of chapter 1 applied to the reader's own thread map);
* :func:`barrier_count`: the ``__syncthreads()`` in a CUDA source, comments left out;
* :func:`diagnose`: the one hint, from an observation dict: the first cause that applies,
  in the order compile, hang, fault, out-of-bounds write, too few barriers, tile edge, a
  run-to-run difference (race), never written,
  wrong values, thread order, bank conflicts, pass (:data:`HINTS`).
"""
from __future__ import annotations

import re

import numpy as np

from .banks import wavefronts

# The hint codes, in the order :func:`diagnose` tries them.
HINTS = ("compile", "hang", "fault", "out_of_bounds", "race", "tile_edge", "never_written",
         "wrong_values", "thread_order", "bank_conflicts", "pass")


def decode_owner(code: int, grid_x: int) -> dict:
    """Owner code (kernels/instrument.cuh) -> {"block": (x, y), "thread", "warp", "lane"};
    ``grid_x`` is gridDim.x of the launch. A code < 0 means never written: returns {}."""
    code = int(code)
    if code < 0:
        return {}
    bl, t = divmod(code, 1024)
    by, bx = divmod(bl, grid_x)
    return {"block": (int(bx), int(by)), "thread": int(t), "warp": int(t // 32), "lane": int(t % 32)}


def _edge_only(bad: np.ndarray, tile_m: int, tile_n: int) -> bool:
    """True when every wrong element lies in the last partial row or column of tiles and
    some whole tile was right; False when there is no whole tile at all (a shape smaller
    than one tile: every element is at an edge, which says nothing)."""
    M, N = bad.shape
    full_m, full_n = M - M % tile_m, N - N % tile_n
    if (full_m == M and full_n == N) or full_m == 0 or full_n == 0:
        return False
    inner = bad[:full_m, :full_n]
    return bool(bad.any() and not inner.any())


def locate(bad: np.ndarray, nan: np.ndarray, owner: np.ndarray | None, grid_x: int,
           tile=(1, 1), limit: int = 4) -> dict:
    """Where a result is wrong.

    ``bad``, ``nan``: bool (M, N) masks of the wrong elements and of those still NaN
    (never written: C is poisoned before the run); ``owner``: the instrumented build's
    int (M, N) owner map (-1: never written), or None; ``grid_x``: gridDim.x; ``tile``:
    (rows, columns) of C one block covers. Returns {"wrong": count, "never_written":
    count, "size", "rows": [first, last] of the wrong rows, "cols": the same for columns,
    "edge_only": wrong only in the last partial tiles, "examples": up to ``limit``
    {"row", "col", "owner": decode_owner(...) or {} }, "blocks": distinct blocks among the
    wrong elements' owners (up to 8), "warps": distinct warps (up to 8)}."""
    bad = np.asarray(bad, bool)
    nan = np.asarray(nan, bool)
    out = {"wrong": int(bad.sum()), "never_written": int(nan.sum()), "size": int(bad.size),
           "edge_only": _edge_only(bad, *tile), "examples": [], "blocks": [], "warps": []}
    if not bad.any():
        return out
    rows, cols = np.nonzero(bad)
    out["rows"] = [int(rows.min()), int(rows.max())]
    out["cols"] = [int(cols.min()), int(cols.max())]
    pick = np.linspace(0, len(rows) - 1, min(limit, len(rows))).astype(int)
    for i in pick:
        r, c = int(rows[i]), int(cols[i])
        own = decode_owner(owner[r, c], grid_x) if owner is not None else {}
        out["examples"].append({"row": r, "col": c, "owner": own})
    if owner is not None:
        codes = owner[bad]
        codes = codes[codes >= 0]
        blocks = sorted({decode_owner(c, grid_x)["block"] for c in np.unique(codes // 1024 * 1024)})
        out["blocks"] = [list(b) for b in blocks[:8]]
        out["n_blocks"] = len(blocks)
        warps = sorted({int(c % 1024 // 32) for c in np.unique(codes)})
        out["warps"] = warps[:8]
        out["n_warps"] = len(warps)
    return out


def warp_store_sectors(owner: np.ndarray, elem_bytes: int = 4, block: int = 0, warp: int = 0,
                       sector: int = 32) -> dict | None:
    """The C stores of one warp, from an owner map (int (M, N), row-major C, ldc = N):
    {"elements", "sectors": distinct ``sector``-byte sectors their addresses touch,
    "rows": distinct rows, "cols": distinct columns}, or None when the warp wrote nothing.
    One store instruction of 32 lanes writing one float each touches 4 sectors when the
    lanes walk along a row, 32 when they walk down a column (chapter 1's model)."""
    lo = block * 1024 + warp * 32
    r, c = np.nonzero((owner >= lo) & (owner < lo + 32))
    if len(r) == 0:
        return None
    lane = owner[r, c] - lo
    first = np.array([np.min(np.nonzero(lane == n)[0]) for n in np.unique(lane)])   # one store per lane
    addr = (r[first].astype(np.int64) * owner.shape[1] + c[first]) * elem_bytes
    return {"elements": int(len(first)), "sectors": int(len(np.unique(addr // sector))),
            "rows": int(len(np.unique(r[first]))), "cols": int(len(np.unique(c[first])))}


def barrier_count(source: str) -> int:
    """``__syncthreads()`` calls in CUDA ``source``, comments excluded."""
    text = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return len(re.findall(r"\b__syncthreads\s*\(\s*\)", text))


def diagnose(obs: dict) -> dict:
    """The hint for one check. ``obs`` (every key optional):

    ``compile_error`` (str), ``timed_out`` (bool), ``error`` (a CUDA error text),
    ``guard_writes`` (elements written outside C), ``nondeterministic`` (elements that
    differ between two runs on the same inputs), ``barriers`` / ``barriers_needed``
    (counts), ``ok`` (the result passed the float64 check), ``aligned_ok`` (the same
    kernel passed on the shape rounded up to whole tiles: True, False or None when not
    tried), ``edge_only``, ``never_written``, ``stores`` / ``stores_model`` (sectors of one
    warp's C store, reader's and the chapter kernel's: :func:`warp_store_sectors`),
    ``wavefronts`` / ``wavefronts_model`` (shared-memory wavefronts of the step's access).

    A missing barrier (fewer than needed) is a race even when the run came out right; a
    result right on whole tiles and wrong on the odd shape is a tile-edge error even when
    two runs differ (the edge read memory past an operand); one wrong on whole tiles too is
    not, wherever its wrong elements lie. Returns {"hint": a code of
    :data:`HINTS`, "passed": bool}."""
    def hint(code, passed=False):
        return {"hint": code, "passed": passed}
    if obs.get("compile_error"):
        return hint("compile")
    if obs.get("timed_out"):
        return hint("hang")
    if obs.get("error"):
        return hint("fault")
    if obs.get("guard_writes"):
        return hint("out_of_bounds")
    if obs.get("barriers_needed") is not None and obs.get("barriers", 0) < obs["barriers_needed"]:
        return hint("race")
    if not obs.get("ok") and (obs.get("aligned_ok") or (obs.get("edge_only") and obs.get("aligned_ok") is None)):
        return hint("tile_edge")          # right on whole tiles: even a run-to-run difference comes from the edge
    if obs.get("nondeterministic"):
        return hint("race")
    if not obs.get("ok"):
        if obs.get("never_written"):
            return hint("never_written")
        return hint("wrong_values")
    s, sm = obs.get("stores"), obs.get("stores_model")
    if s is not None and sm is not None and s > sm:
        return hint("thread_order")
    w, wm = obs.get("wavefronts"), obs.get("wavefronts_model")
    if w is not None and wm is not None and w > wm:
        return hint("bank_conflicts")
    return hint("pass", True)


def tile1d_a_costs(offsets, q: dict, warp: int = 0) -> dict:
    """Shared-memory cost of the A tile of chapter 4's 1-D tile kernel under a layout.

    ``offsets``: the float offset of A[m][k] for every (m, k) of the BM x BK tile, flat
    (``offsets[m * BK + k]``: what the reader's ``a_at(m, k)`` returns); ``q``: the -D
    values (BM, BN, BK, TN). Warp ``warp`` reads the tile down a column, lanes 0-15 and
    16-31 on the same 16 rows, one float4 per lane per 4 k (kernels/04_bank_conflicts.cu),
    and stores it one float per lane. Returns {"read": wavefronts of the BK / 4 column
    reads, "store": wavefronts of the warp's stores, "one_to_one": no two (m, k) share a
    slot}, plus "error" (and no counts) when a float4 read would be misaligned or leave the
    tile. Wavefronts from :func:`helpers.models.banks.wavefronts`."""
    BM, BN, BK, TN = q["BM"], q["BN"], q["BK"], q["TN"]
    off = np.asarray(offsets, dtype=np.int64).reshape(BM, BK)
    out = {"one_to_one": len(np.unique(off)) == off.size}
    threads = BM * BN // TN
    lanes = range(32)
    ms = [(warp % (BM // 16)) * 16 + n % 16 for n in lanes]
    read = 0
    for c in range(BK // 4):
        starts = [int(off[m, 4 * c]) for m in ms]
        if any(s % 4 or s < 0 or s + 4 > BM * BK for s in starts):
            return {**out, "error": f"the float4 read of A[m][{4 * c} .. {4 * c + 3}] starts at a float offset "
                                    "that is not a multiple of 4"}
        read += wavefronts([4 * s for s in starts], 16)["wavefronts"]
    store = 0
    for j in range(BM * BK // threads):
        addrs = []
        for n in lanes:
            tid = warp * 32 + n
            addrs.append(4 * int(off[tid // BK + j * (threads // BK), tid % BK]))
        store += wavefronts(addrs, 4, load=False)["wavefronts"]
    return {**out, "read": read, "store": store}
