"""The tile hierarchy of the warp-tiled kernels: block tile -> warp tiles -> thread tile
or Tensor Core fragments, as rectangles, from the kernels' own index arithmetic.

* :func:`warptile_tree`: ``sgemm_warptile``, ``sgemm_warptile_db`` and ``sgemm_cp_async``
  (kernels/05_register_tiling.cu, ``WARPTILE_SETUP`` and ``WARPTILE_EPILOGUE``): a block
  of BM x BN outputs, (BM/WM) x (BN/WN) warps, each lane a TM x TN thread tile stored as
  (TM/4) x (TN/4) blocks of 4 x 4 spread over its warp tile;
* :func:`mma_sync_tree`: ``gemm_mma_sync`` (kernels/07_mma_sync.cu): the same blocks and
  warps, each warp tile (WM/16) x (WN/8) m16n8k16 accumulator tiles, whose elements the
  lanes hold in the PTX ISA's C-fragment layout (:func:`helpers.models.fragments.fragment_grid`).

Coordinates are (row, column) offsets inside the block tile (warps) or inside the warp
tile (lanes, fragments), rectangles half-open. The owner models
(:func:`helpers.models.tiles.owner_warptile`, :func:`helpers.models.mma_sync.owner_mma_sync`)
say the same element by element; ``tests/test_diagrams.py`` checks that they agree. The
figure is ``helpers/figures/diagrams.py``.
"""
from __future__ import annotations

from .fragments import fragment_grid
from .tiles import lane_coords


def _warps(p: dict) -> list[dict]:
    BM, BN, WM, WN = (int(p[k]) for k in ("BM", "BN", "WM", "WN"))
    if BM % WM or BN % WN:
        raise ValueError(f"WM={WM}, WN={WN}: must divide BM={BM} and BN={BN} (warp tiles tile the block tile)")
    wn_count = BN // WN
    return [{"warp": w, "wm": w // wn_count, "wn": w % wn_count, "r0": (w // wn_count) * WM,
             "c0": (w % wn_count) * WN, "rows": WM, "cols": WN} for w in range((BM // WM) * wn_count)]


def warptile_tree(p: dict) -> dict:
    """Block, warp and thread tiles of the FP32 warp-tile kernels for parameters ``p``
    (BM, BN, BK, WM, WN, TM, TN).

    Returns ``{"block": (BM, BN, BK), "warps": [{"warp", "wm", "wn", "r0", "c0", "rows",
    "cols"}], "lanes": [{"lane", "lm", "ln", "blocks": [(im, in, r0, c0)], "a_rows": [...],
    "b_cols": [...]}], "lane_grid": (LM, LN), "thread": (TM, TN)}``: lane ``lane`` owns the
    4 x 4 blocks at (r0, c0) of every warp tile (r0 = im * 4 * LM + 4 * lm, c0 = in * 4 * LN
    + 4 * ln) and reads, at every k of a k-tile, the rows ``a_rows`` of the warp's A slice
    (its TM fragment values) and the columns ``b_cols`` of its B slice (its TN values).
    Raises ValueError unless the lanes form LM x LN = 32 with LN a power of two and TM, TN
    multiples of 4.
    """
    WM, WN, TM, TN = (int(p[k]) for k in ("WM", "WN", "TM", "TN"))
    if TM % 4 or TN % 4 or WM % TM or WN % TN:
        raise ValueError(f"TM={TM}, TN={TN}: must be multiples of 4 dividing WM={WM} and WN={WN}")
    LM, LN = WM // TM, WN // TN
    if LM * LN != 32:
        raise ValueError(f"(WM/TM) x (WN/TN) = {LM} x {LN}: must be 32 lanes")
    lanes = []
    for lane in range(32):
        lm, ln = (int(v) for v in lane_coords(lane, LN))
        rows = [im * 4 * LM + 4 * lm for im in range(TM // 4)]
        cols = [i_n * 4 * LN + 4 * ln for i_n in range(TN // 4)]
        lanes.append({"lane": lane, "lm": lm, "ln": ln,
                      "blocks": [(im, i_n, r, c) for im, r in enumerate(rows) for i_n, c in enumerate(cols)],
                      "a_rows": [r + i for r in rows for i in range(4)],
                      "b_cols": [c + j for c in cols for j in range(4)]})
    return {"block": (int(p["BM"]), int(p["BN"]), int(p["BK"])), "warps": _warps(p), "lanes": lanes,
            "lane_grid": (LM, LN), "thread": (TM, TN)}


def mma_sync_tree(p: dict) -> dict:
    """Block, warp and m16n8k16 tiles of ``gemm_mma_sync`` for parameters ``p`` (BM, BN,
    BK, WM, WN).

    Returns ``{"block": (BM, BN, BK), "warps": [...] (as :func:`warptile_tree`), "frags":
    [{"mi", "nj", "r0", "c0"}] (16 x 8 accumulator tiles inside a warp tile), "grid": (MT,
    NT), "k16": BK // 16, "c_lane", "c_reg": int arrays (16, 8): the lane holding each element
    of an accumulator tile and its index in the lane's four accumulators}``; the mma of tile
    (mi, nj) reads rows 16 mi .. 16 mi + 15 of the warp's A slice and columns 8 nj .. 8 nj + 7
    of its B slice, 16 k at a time. Raises ValueError unless WM and WN are multiples of 16
    and BK of 16.
    """
    WM, WN, BK = int(p["WM"]), int(p["WN"]), int(p["BK"])
    if WM % 16 or WN % 16 or BK % 16:
        raise ValueError(f"WM={WM}, WN={WN}, BK={BK}: must be multiples of 16 (m16n8k16 tiles)")
    lane, reg = fragment_grid("C")
    return {"block": (int(p["BM"]), int(p["BN"]), BK), "warps": _warps(p),
            "frags": [{"mi": mi, "nj": nj, "r0": 16 * mi, "c0": 8 * nj} for mi in range(WM // 16)
                      for nj in range(WN // 8)],
            "grid": (WM // 16, WN // 8), "k16": BK // 16, "c_lane": lane, "c_reg": reg}
