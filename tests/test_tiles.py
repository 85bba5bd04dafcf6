"""Unit tests of helpers/models/tiles.py (index models of heavens 3-5, occupancy) and
of the chapter-3 and chapter-5 catalog rules. CPU only.

The owner models are checked against a forward simulation written here from
the kernels' store loops (each thread enumerates the C elements it writes, as
the CUDA code does): every element must be written exactly once, by the
thread the model names. On a GPU, tests/gpu/test_kernels.py compares the same
models with the -DRECORD_OWNER=1 builds.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from helpers.chapters import ch05_register_tiling as ch5, common
from helpers.models import banks, occupancy as occ, raster, tiles
from helpers.models.raster import cdiv
from helpers.runtime import catalog

# The 128 x 128 teaching configuration of chapter 5 (the catalog default moved to the
# H200 sweep winner, 128 x 256, which these hand-computed expectations do not describe).
BASE128 = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "STAGES": 3}

SHAPES = [(64, 64, 64), (100, 37, 5), (257, 300, 9), (1, 1, 1), (128, 256, 8)]


# ------------------------------------------------------------------ forward simulations
def _write(out, count, pid, tid, rows, cols, M, N):
    for r in rows:
        for c in cols:
            if r < M and c < N:
                out[r, c] = pid * 1024 + tid
                count[r, c] += 1


def simulate(key: str, p: dict, shape) -> tuple[np.ndarray, np.ndarray]:
    """(owner, write count) by running each thread's store loop of the kernel."""
    M, N, K = shape
    out = np.full((M, N), -1, dtype=np.int64)
    count = np.zeros((M, N), dtype=np.int64)
    spec = catalog.get(key)
    gx, gy, _ = spec.grid(p, shape)
    threads = spec.threads(p)
    for by, bx in itertools.product(range(gy), range(gx)):
        pid = by * gx + bx
        for tid in range(threads):
            if key == "smem_tiled":
                T = p["TILE"]
                tx, ty = tid % T, tid // T
                _write(out, count, pid, tid, [by * T + ty], [bx * T + tx], M, N)
            elif key.startswith("tile1d"):
                BM, BN, TN = p["BM"], p["BN"], p["TN"]
                warp, lane = tid // 32, tid % 32
                m = (warp % (BM // 16)) * 16 + lane % 16
                n0 = ((warp // (BM // 16)) * 2 + lane // 16) * TN
                _write(out, count, pid, tid, [by * BM + m], [bx * BN + n0 + t for t in range(TN)], M, N)
            elif key == "reg1d":
                BM, BN, TM = p["BM"], p["BN"], p["TM"]
                tc, tr = tid % BN, tid // BN
                _write(out, count, pid, tid, [by * BM + tr * TM + i for i in range(TM)], [bx * BN + tc], M, N)
            elif key in ("reg2d", "reg2d_vec4"):
                BM, BN, TM, TN = p["BM"], p["BN"], p["TM"], p["TN"]
                tr, tc = tid // (BN // TN), tid % (BN // TN)
                _write(out, count, pid, tid, [by * BM + tr * TM + i for i in range(TM)],
                       [bx * BN + tc * TN + j for j in range(TN)], M, N)
            else:   # warp-tile kernels: block_tile() and WARPTILE_SETUP of kernels/05
                BM, BN, WM, WN, TM, TN, G = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN", "GROUP_M"))
                LM, LN = WM // TM, WN // TN
                lg = {2: 1, 4: 2, 8: 3, 16: 4}[LN]
                if G > 0:
                    per = G * gx
                    first = (pid // per) * G
                    rows_ = min(gy - first, G)
                    tile_m, tile_n = first + (pid % per) % rows_, (pid % per) // rows_
                else:
                    tile_m, tile_n = pid // gx, pid % gx
                lane, warp = tid % 32, tid // 32
                ln = (lane & 1) | (((lane >> 2) & ((LN >> 1) - 1)) << 1)
                lm = ((lane >> 1) & 1) | ((lane >> (1 + lg)) << 1)
                warp_m, warp_n = warp // (BN // WN), warp % (BN // WN)
                rows = [tile_m * BM + warp_m * WM + im * 4 * LM + 4 * lm + i
                        for im in range(TM // 4) for i in range(4)]
                cols = [tile_n * BN + warp_n * WN + jn * 4 * LN + 4 * ln + j
                        for jn in range(TN // 4) for j in range(4)]
                _write(out, count, pid, tid, rows, cols, M, N)
    return out, count


OWNED = ["smem_tiled", "tile1d_conflict", "tile1d_swizzle", "reg1d", "reg2d", "reg2d_vec4",
         "warptile", "warptile_db", "cp_async", "cp_async_pitfall"]


@pytest.mark.parametrize("key", OWNED)
def test_owner_model_matches_forward_simulation(key):
    spec = catalog.get(key)
    assert spec.owner is not None
    configs = spec.configs()[:3]
    for p, shape in itertools.product(configs, SHAPES[:4]):
        spec.validate(p, (shape[0], 4 * cdiv(shape[1], 4), 4 * cdiv(shape[2], 4)))
        want, count = simulate(key, p, shape)
        assert (count == 1).all(), f"{key} {p} {shape}: elements written {sorted(set(count.ravel()))} times"
        got = spec.owner(p, shape)
        assert got.shape == (shape[0], shape[1]) and got.dtype == np.int32
        assert (got == want).all(), f"{key} {p} {shape}: first mismatch at {np.argwhere(got != want)[0]}"


def test_owner_detects_a_wrong_model():
    """The comparison can fail: a model with lm and ln swapped disagrees."""
    p = catalog.get("cp_async").params(**BASE128)
    want, _ = simulate("cp_async", p, (128, 128, 8))
    lay = tiles.warptile_layout(p)
    wrong = 32 * lay["warp"] + tiles.lane_of(lay["ln"] % (p["WM"] // p["TM"]), lay["lm"] % (p["WN"] // p["TN"]),
                                             p["WN"] // p["TN"])
    assert (wrong != want[:128, :128]).any()


def test_owner_threads_own_the_right_number_of_outputs():
    for key in OWNED:
        spec = catalog.get(key)
        p = spec.params()
        M = spec.grid(p, (1, 1, 1))   # noqa: F841  (geometry is callable on any shape)
        bm = p.get("BM", p.get("TILE"))
        bn = p.get("BN", p.get("TILE"))
        o = spec.owner(p, (bm, bn, 4))
        per_thread = np.bincount(o.ravel() % 1024)
        per_thread = per_thread[per_thread > 0]
        expect = bm * bn // spec.threads(p)
        assert (per_thread == expect).all() and len(per_thread) == spec.threads(p), key


# ------------------------------------------------------------------ lane layout
@pytest.mark.parametrize("LN", [2, 4, 8, 16])
def test_lane_layout_is_a_bijection_with_paired_lanes(LN):
    lane = np.arange(32)
    lm, ln = tiles.lane_coords(lane, LN)
    assert sorted(zip(lm.tolist(), ln.tolist())) == [(a, b) for a in range(32 // LN) for b in range(LN)]
    assert (tiles.lane_of(lm, ln, LN) == lane).all()
    assert (lm == lm[lane ^ 1]).all(), "lanes n, n^1 must share the A fragment"
    assert (ln == ln[lane ^ 2]).all(), "lanes n, n^2 must share the B fragment"


def test_warptile_fragment_reads_are_packed_and_conflict_free():
    """With the lane layout above every fragment LDS.128 costs 2 wavefronts."""
    for p in [catalog.get("cp_async").params(**BASE128), {**catalog.get("cp_async").params(**BASE128), "WM": 32, "WN": 64}]:
        LM, LN = p["WM"] // p["TM"], p["WN"] // p["TN"]
        lm, ln = tiles.lane_coords(np.arange(32), LN)
        for im in range(p["TM"] // 4):
            a = [16 * (im * LM + int(x)) for x in lm]             # bytes from the fragment base
            assert banks.wavefronts(a, 16)["phases"] == [1, 1]
        for jn in range(p["TN"] // 4):
            b = [16 * (jn * LN + int(x)) for x in ln]
            assert banks.wavefronts(b, 16)["phases"] == [1, 1]


def test_block_raster_visits_every_tile_once():
    for G in (0, 4, 8, 16):
        p = {**catalog.get("cp_async").params(**BASE128), "GROUP_M": G}
        t = raster.block_raster(p, (1000, 700))
        assert len({tuple(x) for x in t.tolist()}) == len(t) == cdiv(1000, 128) * cdiv(700, 128)
    g = raster.block_raster({**p, "GROUP_M": 8}, (4096, 4096))
    assert g[:9].tolist() == [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [6, 0], [7, 0], [0, 1]]


# ------------------------------------------------------------------ heaven 3 figures
def test_staging_names_the_tiles_and_loads():
    p = {"TILE": 32}
    st = tiles.staging(p, (100, 70, 50), bx=2, by=3, t=1)
    assert st["A_rows"] == (96, 100) and st["A_cols"] == (32, 50)
    assert st["B_rows"] == (32, 50) and st["B_cols"] == (64, 70)
    # thread (ty=1, tx=2) loads A[97][34] and B[33][66]
    assert st["A_load"][1, 2] == 97 * 50 + 34 and st["B_load"][1, 2] == 33 * 70 + 66
    # zero-filled: A row 100 does not exist, B column 70 does not exist
    assert st["A_load"][4, 0] == -1 and st["B_load"][0, 6] == -1
    assert (st["A_load"] >= 0).sum() == 4 * 18 and (st["B_load"] >= 0).sum() == 18 * 6
    with pytest.raises(ValueError, match="bx=3"):
        tiles.staging(p, (100, 70, 50), bx=3, by=0, t=0)


@pytest.mark.parametrize("T", [8, 16, 32])
def test_reuse_factor_is_the_tile_width(T):
    r = tiles.reuse({"TILE": T}, (1024, 1024, 1024))
    assert r["naive"] == 2 * 1024 ** 3 * 4 and r["ratio"] == T
    r2 = tiles.reuse({"BM": 128, "BN": 64}, (1024, 1024, 512))
    assert r2["tiled"] == 4 * (1024 * 512 * 16 + 512 * 1024 * 8)


# ------------------------------------------------------------------ occupancy
def test_occupancy_known_examples():
    # 256 threads x 128 registers: 32768 registers per block -> 2 blocks, 16 warps, limited by registers
    o = occ.occupancy(128, 256, 0)
    assert (o["blocks_per_sm"], o["warps_per_sm"], o["limited_by"]) == (2, 16, "registers")
    # 129 registers round up to 136 per thread (256 per warp): one block only
    assert occ.occupancy(129, 256, 0)["blocks_per_sm"] == 1
    # the heaven-3 block: 1024 threads x 32 registers, 8 KB: 2 blocks (threads and registers both say 2)
    o = occ.occupancy(32, 1024, 8192)
    assert (o["blocks_per_sm"], o["occupancy"], o["limited_by"]) == (2, 1.0, "threads")
    # shared memory: 100 KB blocks, +1 KB reserved: 2 on sm_90 (228 KB), 1 on sm_80 (164 KB)
    assert occ.occupancy(32, 128, 100 * 1024)["blocks_per_sm"] == 2
    o = occ.occupancy(32, 128, 100 * 1024, arch="sm_80")
    assert (o["blocks_per_sm"], o["limited_by"]) == (1, "shared memory")
    # tiny blocks hit the 32-blocks limit
    o = occ.occupancy(16, 32, 0)
    assert (o["blocks_per_sm"], o["limited_by"]) == (32, "blocks")


def test_occupancy_rejects_impossible_blocks():
    with pytest.raises(ValueError, match="threads=2048"):
        occ.occupancy(32, 2048)
    with pytest.raises(ValueError, match="registers=300"):
        occ.occupancy(300, 256)
    with pytest.raises(ValueError, match="smem_bytes"):
        occ.occupancy(32, 256, 240 * 1024)
    with pytest.raises(ValueError, match="arch"):
        occ.occupancy(32, 256, arch="sm_70")


# ------------------------------------------------------------------ chapter 3 and 5 rules
def expect_refusal(key, shape, name, **p):
    spec = catalog.get(key)
    with pytest.raises(ValueError) as e:
        spec.validate(spec.params(**p), shape)
    assert str(e.value).startswith(name + "="), f"{key} {p}: {e.value}"
    return str(e.value)


def test_smem_tiled_rules():
    expect_refusal("smem_tiled", (64, 64, 64), "TILE", TILE=64)
    catalog.get("smem_tiled").validate({"TILE": 8}, (35, 79, 19))


def test_reg_rules_name_the_parameter():
    expect_refusal("reg1d", (64, 64, 64), "threads per block", TM=2)               # 2048 threads
    expect_refusal("reg1d", (64, 64, 64), "BM*BK", BM=32, BK=4, TM=2)              # 1024 threads, 128 elements
    expect_refusal("reg2d_vec4", (64, 64, 30), "K")
    expect_refusal("reg2d_vec4", (64, 30, 64), "N")
    expect_refusal("reg2d_vec4", (64, 64, 64), "BM*BK/4", BM=64, BN=64, TM=4, TN=4, BK=8)


def test_warptile_rules_name_the_parameter():
    msg = expect_refusal("cp_async", (64, 64, 64), "WM*WN/(TM*TN)", **{**BASE128, "WM": 16, "WN": 32})
    assert "must be 32" in msg
    expect_refusal("cp_async", (64, 64, 64), "WM", BM=64, WM=128)
    expect_refusal("cp_async", (64, 64, 64), "shared memory (bytes)", BM=256, BN=256, WM=128, WN=64,
                   TM=16, TN=16, BK=32, STAGES=6)
    expect_refusal("cp_async", (64, 30, 64), "N")
    expect_refusal("warptile", (64, 64, 30), "K")
    expect_refusal("warptile_db", (64, 64, 64), "static shared memory (bytes)", BN=256, WN=64, TN=16, BK=32)
    # the sub-tile rule, checked directly (20 is not a slider value)
    p = {**catalog.get("cp_async").params(**BASE128), "BN": 80, "WN": 20}
    failed = [r for r in ch5._warptile_base(p) if not r[0]]
    assert failed[0][1] == "WN" and failed[0][3] == "warp sub-tile not divisible by TN=8", failed


def test_cp_async_takes_any_m_and_k():
    spec = catalog.get("cp_async")
    for shape in [(35, 76, 19), (1000, 1000, 1000), (1023, 1028, 999), (30000, 64, 64), (1, 4, 1)]:
        spec.validate(spec.params(), shape)


def test_every_shipped_chapter5_config_is_valid():
    for key, spec in catalog.KERNELS.items():
        if spec.chapter not in (3, 5):
            continue
        for p in spec.configs():
            spec.validate(p, (4096, 4096, 4096), smem_limit=common.SMEM_OPTIN_SM90)
            assert spec.threads(p) % 32 == 0


def test_cp_async_smem_formula():
    spec = catalog.get("cp_async")
    p = spec.params(**BASE128)
    assert spec.smem(p) == p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * 4 == 24960
    assert spec.smem(spec.params(**{**BASE128, "BK": 16, "STAGES": 4})) == 66560          # > 48 KB: dynamic, opt-in


def test_registers_go_to_warps_in_groups_of_four():
    """The driver's occupancy query on the H200 (tests/gpu/test_occupancy_gpu.py): 40 registers,
    64 threads: 65536 / 1280 = 51 warps, 48 in groups of 4, so 24 blocks (not 25)."""
    assert occ.occupancy(40, 64, 0)["blocks_per_sm"] == 24
    assert occ.occupancy(40, 64, 0, arch="sm_75")["blocks_per_sm"] == 16     # the T4's block limit
