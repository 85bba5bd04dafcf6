"""CPU tests of helpers/models/fragments.py and the chapter 6-7 catalog entries.

The fragment maps are checked against the PTX ISA formulas written out by
hand, the ldmatrix emulation against the fragments it must produce, the
swizzle against its two promises (a permutation inside every 128-byte line;
conflict-free ldmatrix phases), and the kernel emulator against A @ B, so a
wrong index in the model (or in the kernel it transcribes) fails here.
"""
from __future__ import annotations


import numpy as np
import pytest

from helpers.models import banks, fragments as F, mma_sync as mma, pipeline as pipe, raster
from helpers.runtime import catalog, ncu as ncu_tool

P07 = dict(mma.MMA_TEACHING)   # the configuration these hand-derived numbers describe
P06 = dict(catalog.get("wmma_f16").defaults)


# ------------------------------------------------------------------ fragment maps
@pytest.mark.parametrize("op,shape,n", [("A", (16, 16), 8), ("B", (16, 8), 4), ("C", (16, 8), 4)])
def test_fragment_map_is_a_bijection(op, shape, n):
    m = F.fragment_map(op)
    assert m.shape == (32, n, 2)
    cells = [tuple(x) for x in m.reshape(-1, 2)]
    assert len(set(cells)) == len(cells) == shape[0] * shape[1]
    assert all(0 <= r < shape[0] and 0 <= c < shape[1] for r, c in cells)
    lane_of, idx_of = F.fragment_grid(op)
    assert (lane_of >= 0).all() and (idx_of >= 0).all()


def test_fragments_match_ptx_formulas():
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        a = F.frag_a(lane)
        # PTX: a0,a1 (g, 2t+i); a2,a3 (g+8, ..); a4,a5 (g, 2t+8+i); a6,a7 (g+8, 2t+8+i)
        assert a == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
                     (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]
        assert F.frag_b(lane) == [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]
        assert F.frag_c(lane) == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
    # one spelled-out lane: lane 5 is groupID 1, threadID_in_group 1
    assert F.frag_a(5)[7] == (9, 11) and F.frag_b(5)[3] == (11, 1) and F.frag_c(5)[2] == (9, 2)
    with pytest.raises(ValueError, match="operand"):
        F.fragment_map("D")


# ------------------------------------------------------------------ ldmatrix
def _smem_with(tile: np.ndarray, pitch: int) -> np.ndarray:
    mem = np.full(tile.shape[0] * pitch, -1.0)
    for r in range(tile.shape[0]):
        mem[r * pitch:r * pitch + tile.shape[1]] = tile[r]
    return mem


@pytest.mark.parametrize("pitch", [16, 24, 64])
def test_ldmatrix_addressing_yields_the_a_fragment(pitch):
    tile = np.arange(256, dtype=np.float64).reshape(16, 16)
    mem = _smem_with(tile, pitch)
    rows = [F.ldmatrix_lane_rows(lane) for lane in range(32)]
    addr = [r * pitch + c * 8 for r, c in rows]
    regs = F.ldmatrix(mem, addr)
    assert (F.tile_from_fragment("A", regs) == tile).all()
    # lane 0 supplies row 0 of matrix 0, lane 9 row 1 of matrix 1
    assert F.ldmatrix_row_provider(9) == (1, 1)


def test_ldmatrix_trans_yields_two_b_fragments():
    kn = np.arange(256, dtype=np.float64).reshape(16, 16)    # B slice: k16 x n16, row-major
    mem = _smem_with(kn, 16)
    addr = [r * 16 + c * 8 for r, c in (F.ldmatrix_lane_rows(lane) for lane in range(32))]
    regs = F.ldmatrix(mem, addr, trans=True)
    assert (F.tile_from_fragment("B", regs[:, 0:2]) == kn[:, 0:8]).all()
    assert (F.tile_from_fragment("B", regs[:, 2:4]) == kn[:, 8:16]).all()
    # without .trans the same addresses give the wrong (transposed) pieces
    plain = F.ldmatrix(mem, addr, trans=False)
    assert not (F.tile_from_fragment("B", plain[:, 0:2]) == kn[:, 0:8]).all()


def test_ldmatrix_refuses_misaligned_rows():
    with pytest.raises(ValueError, match="16-byte"):
        F.ldmatrix(np.zeros(512), [3] * 32)


# ------------------------------------------------------------------ swizzle and banks
@pytest.mark.parametrize("R", [4, 8, 16, 32])
def test_swizzle_is_a_permutation_inside_each_line_and_row_group(R):
    rows = 64
    phys = F.chunk_layout(rows, R)
    q = np.arange(rows * R).reshape(rows, R)
    assert sorted(phys.ravel()) == list(range(rows * R))
    assert (phys // 8 == q // 8).all(), "a chunk left its 128-byte line"
    for r0 in range(0, rows, 8):                      # every 8-row group maps onto itself
        grp = phys[r0:r0 + 8].ravel()
        assert sorted(grp) == sorted(q[r0:r0 + 8].ravel())
    assert (F.chunk_layout(rows, R, on=False) == q).all()


def test_bank_groups_and_wavefronts():
    assert F.bank_group(0) == 0 and F.bank_group(16) == 1 and F.bank_group(128) == 0
    assert banks.phase_cost([16 * i for i in range(8)], 16) == 1             # one 128-byte line
    assert banks.phase_cost([128 * i for i in range(8)], 16) == 8            # same banks, 8 rows
    assert banks.phase_cost([0] * 8, 16) == 1                                # broadcast
    assert banks.phase_cost([64 * i for i in range(8)], 16) == 4             # 64-byte rows: 2 groups


def _sweep_configs(key):
    return catalog.get(key).configs()


@pytest.mark.parametrize("p", _sweep_configs("mma_sync_f16"), ids=str)
def test_ldmatrix_phases_conflict_free_when_swizzled(p):
    g = mma.MmaSyncGeometry.of(p)
    for warp in range(g.threads // 32):
        for ks in range(g.KK):
            a, b = mma.mma_sync_ldsm_offsets(g, warp, ks)
            la, lb = mma.mma_sync_ldsm_logical(g, warp, ks)
            for addr, (row, ch) in zip(a, la):         # the offsets are the swizzled logical rows
                assert (addr == F.swizzle(row * g.RA + ch, g.RA, bool(g.SWIZZLE)) * 16).all()
            for addr, (row, ch) in zip(b, lb):
                assert (addr == F.swizzle(row * g.RB + ch, g.RB, bool(g.SWIZZLE)) * 16).all()
            phases = [w for addr in a + b for w in F.phase_wavefronts(addr)]
            if g.SWIZZLE:
                assert max(phases) == 1, f"{p}: swizzled ldmatrix phase needs {max(phases)} wavefronts"
            else:
                # plain rows: 8 rows of one 16-byte column; A with BK=32 has 64-byte
                # rows (2 bank groups -> 4-way), everything else 8-way
                wa = [max(F.phase_wavefronts(x)) for x in a]
                wb = [max(F.phase_wavefronts(x)) for x in b]
                assert set(wa) == {4 if g.BK == 32 else 8} and set(wb) == {8}


@pytest.mark.parametrize("p", _sweep_configs("mma_sync_f16"), ids=str)
def test_cp_async_chunks_match_swizzle_and_never_conflict(p):
    g = mma.MmaSyncGeometry.of(p)
    on = bool(g.SWIZZLE)
    seen_a, seen_b = set(), set()
    for tid in range(g.threads):
        a, b = mma.mma_sync_thread_offsets(g, tid)
        for i, (row, col, dst) in enumerate(a):        # kernel: swz(tid) + i*THREADS == swz(q)
            q = tid + i * g.threads
            assert (row, col) == (q // g.RA, (q % g.RA) * 8)
            assert dst == F.swizzle(q, g.RA, on) * 16
            seen_a.add(dst)
        for i, (row, col, dst) in enumerate(b):
            q = tid + i * g.threads
            assert (row, col) == (q // g.RB, (q % g.RB) * 8)
            assert dst == F.swizzle(q, g.RB, on) * 16
            seen_b.add(dst)
    assert len(seen_a) == g.BM * g.RA and len(seen_b) == g.BK * g.RB    # every chunk written once
    prof = mma.mma_sync_bank_profile(p)
    assert prof["ldgsts_wavefronts"] == 4 * prof["ldgsts"]


# ------------------------------------------------------------------ ncu predictions
def test_predicted_counters_default_config():
    shape = (512, 512, 512)
    on = mma.predict_ncu_mma_sync(P07, shape)
    off = mma.predict_ncu_mma_sync({**P07, "SWIZZLE": 0}, shape)
    # by hand: 8 blocks x 16 k-tiles x 8 warps x 2 k16 steps x (4 A + 4 B) ldmatrix.x4
    n_ldsm = 8 * 16 * 8 * 2 * 8
    assert on["sm__sass_inst_executed_op_ldsm.sum"] == off["sm__sass_inst_executed_op_ldsm.sum"] == n_ldsm
    assert on["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0
    # A: 4 phases x (4-way - 1) = 12 per ldmatrix; B: 4 x (8 - 1) = 28
    assert off["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 8 * 16 * 8 * 2 * (4 * 12 + 4 * 28)
    assert off["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 0
    # cp.async: (128*32 + 32*256) / 8 chunks per tile = 1536 -> 48 warp instructions;
    # LOAD_SPREAD=1 copies 16 tiles + 3 zero-filled ones past the end (STAGES - 1)
    assert on["sm__sass_inst_executed_op_ldgsts.sum"] == 8 * (16 + 3) * 48
    burst = mma.predict_ncu_mma_sync({**P07, "LOAD_SPREAD": 0}, shape)
    assert burst["sm__sass_inst_executed_op_ldgsts.sum"] == 8 * 16 * 48


def test_tiles_copied_and_chunk_ranges():
    g = mma.MmaSyncGeometry.of({**P07, "BK": 64})
    assert g.chunks == 12 and g.KK == 4
    assert [g.chunk_range(ks) for ks in range(4)] == [(0, 3), (3, 6), (6, 9), (9, 12)]
    assert g.tiles_copied(1) == 1 + 1 and g.tiles_copied(64) == 3 + 64
    g0 = mma.MmaSyncGeometry.of({**P07, "LOAD_SPREAD": 0})
    assert g0.tiles_copied(1) == 1 and g0.tiles_copied(2) == 2 and g0.tiles_copied(64) == 64


def test_predicted_wmma_ldsm_padding():
    shape = (512, 512, 512)
    assert mma.predict_ncu_wmma_ldsm(P06, shape)["sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"] == 0
    assert mma.predict_ncu_wmma_ldsm({**P06, "PAD": 0}, shape)[
        "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"] > 0


# ------------------------------------------------------------------ emulation
def _ref(A, B, dtype):
    return pipe.round_to(A, dtype).astype(np.float64) @ pipe.round_to(B, dtype).astype(np.float64)


def _rel(C, ref):
    return float(np.linalg.norm(C - ref) / np.linalg.norm(ref))


EMU = [(P07, "float16"), (P07, "bfloat16"), ({**P07, "SWIZZLE": 0}, "float16"),
       ({**P07, "STAGES": 2}, "float16"), ({**P07, "STAGES": 5, "BK": 64}, "float16"),
       ({**P07, "BM": 128, "BN": 128, "WM": 32}, "bfloat16")]


@pytest.mark.parametrize("p,dtype", EMU, ids=str)
def test_mma_sync_emulation_computes_a_times_b(p, dtype):
    rng = np.random.default_rng(7)
    shape = (200, 264, 136)             # no dimension a multiple of its tile: every edge is exercised
    M, N, K = shape
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    C, owner = pipe.emulate_mma_sync(A, B, p, dtype=dtype, record_owner=True)
    assert not np.isnan(C).any()
    assert _rel(C, _ref(A, B, dtype)) < (2e-3 if dtype == "float16" else 1e-2)
    assert (owner == mma.owner_mma_sync(p, shape)).all()


def test_owner_model_follows_c_fragment_and_rasterization():
    p = {**P07, "GROUP_M": 2}
    shape = (512, 512, 32)
    own = mma.owner_mma_sync(p, shape)
    gm, gn = 4, 2
    pm, pn = raster.tile_of_block(np.arange(gm * gn), gm, gn, 2)
    assert list(zip(pm.tolist(), pn.tolist()))[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    # element (g, 2t) of every m16n8 tile belongs to lane 4g + t of its warp
    for g_, t_ in [(0, 0), (3, 2), (7, 3)]:
        assert own[g_, 2 * t_] % 1024 == 4 * g_ + t_
        assert own[8 + g_, 2 * t_ + 1] % 1024 == 4 * g_ + t_
    assert own[0, 64] % 1024 == 32           # next warp along N
    assert own[128, 0] // 1024 == 1          # second block goes down (GROUP_M=2)


def test_wmma_emulation_and_pitfalls():
    rng = np.random.default_rng(3)
    shape = (136, 264, 72)
    M, N, K = shape
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    ref = _ref(A, B, "float16")
    C, owner = pipe.emulate_wmma(A, B, P06, record_owner=True)
    assert _rel(C, ref) < 2e-3
    assert (owner == mma.owner_wmma(P06, shape)).all()
    wrong = pipe.emulate_wmma(A, B, P06, wrong_layout=True)
    assert not np.isnan(wrong).any() and _rel(wrong, ref) > 0.5
    assert 0.5 < np.abs(wrong).std() / np.abs(ref).std() < 2     # plausible-looking magnitudes


def test_fp16_accumulator_model_loses_precision():
    rng = np.random.default_rng(5)
    p = {**P06, "BM": 64, "BN": 64, "WM": 32, "WN": 32}
    A, B = rng.uniform(0, 1, (64, 1024)), rng.uniform(0, 1, (1024, 64))
    ref = _ref(A, B, "float16")
    e32 = _rel(pipe.emulate_wmma(A, B, p), ref)
    e16 = _rel(pipe.emulate_wmma(A, B, p, acc_f16=True), ref)
    assert e16 > 3 * e32


def test_pipeline_checker_catches_ordering_bugs():
    ring = pipe._Pipeline(2)
    ring.issue(0, lambda: None)
    ring.commit()
    with pytest.raises(pipe.PipelineHazard, match="in flight"):
        ring.read(0)                       # no wait
    ring.wait(0)
    with pytest.raises(pipe.PipelineHazard, match="barrier"):
        ring.read(0)                       # waited, but no barrier yet
    ring.barrier()
    ring.read(0)
    with pytest.raises(pipe.PipelineHazard, match="refilled"):
        ring.issue(0, lambda: None)        # refill in the epoch it was read


# ------------------------------------------------------------------ catalog rules
@pytest.mark.parametrize("key", ["mma_sync_f16", "wmma_f16"])
@pytest.mark.parametrize("shape,name", [((1023, 1025, 1000), "N"), ((1024, 1024, 999), "K"),
                                        ((35, 79, 19), "K"), ((70000 * 128, 64, 64), "M")])
def test_rules_refuse_shapes_naming_the_parameter(key, shape, name):
    spec = catalog.get(key)
    with pytest.raises(ValueError, match=rf"^{name}=\d+: "):
        spec.validate(spec.params(), shape)


@pytest.mark.parametrize("over,name", [({"BM": 64, "BN": 64, "WM": 64, "WN": 64}, "threads per block"),
                                       ({"BM": 64, "WM": 64, "BN": 256, "WN": 64, "SWIZZLE": 1}, "SWIZZLE"),
                                       ({"WM": 48}, "WM"), ({"STAGES": 9}, "STAGES")])
def test_rules_refuse_parameters_naming_them(over, name):
    spec = catalog.get("mma_sync_f16")
    with pytest.raises(ValueError, match=name):
        spec.validate(spec.params(**over), (4096, 4096, 4096))


def test_shared_memory_limit_is_checked():
    spec = catalog.get("mma_sync_f16")
    p = spec.params(BM=256, BN=128, BK=64, STAGES=5)
    assert spec.smem(p) == 5 * (256 * 64 + 64 * 128) * 2
    with pytest.raises(ValueError, match="dynamic shared memory"):
        spec.validate(p, (4096, 4096, 4096), smem_limit=232448)


def test_chapter_6_7_entries():
    keys = {k.key for k in catalog.chapter(6) + catalog.chapter(7)}
    assert {"wmma_f16", "wmma_bf16", "wmma_wrong_layout_pitfall", "wmma_acc_f16_pitfall",
            "mma_sync_f16", "mma_sync_bf16"} <= keys
    pitfalls = {k for k, s in catalog.KERNELS.items() if s.pitfall and s.chapter != 11}   # 11: the appendix's
    assert pitfalls == {"cp_async_pitfall", "wmma_wrong_layout_pitfall", "wmma_acc_f16_pitfall"}
    for k in pitfalls:
        assert "pitfall" in catalog.get(k).title.lower() and k.endswith("_pitfall")
    assert catalog.get("mma_sync_bf16").fixed == {"BF16": 1}
    assert 8 <= len(catalog.get("mma_sync_f16").sweep) <= 24
    for key in ("wmma_f16", "mma_sync_f16"):
        for p in catalog.get(key).configs():
            catalog.get(key).validate(p, (4096, 4096, 4096), smem_limit=232448)


def test_cp_async_chunks_per_thread_rule():
    spec = catalog.get("mma_sync_f16")
    with pytest.raises(ValueError, match="cp.async chunks per thread=20"):
        spec.validate(spec.params(BM=64, BN=256, BK=64, WM=64, WN=64, SWIZZLE=0), (4096, 4096, 4096))


# ------------------------------------------------------------------ helpers/runtime/ncu.py + scripts/ncu_ldmatrix.py (CPU part)
def test_ncu_csv_parsing_and_comparison(tmp_path):
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "ncu_ldmatrix", Path(__file__).resolve().parent.parent / "scripts" / "ncu_ldmatrix.py")
    n = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(n)
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    row = ('"{id}","1","python","h","gemm_mma_sync","1","7","(256, 1, 1)","(2, 4, 1)","0","9.0",'
           '"Command line profiler metrics","{m}","","{v}"')
    lines = ["==PROF== Connected", head,
             row.format(id=0, m="sm__sass_inst_executed_op_ldsm.sum", v="16,384"),
             row.format(id=0, m="l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", v="0"),
             row.format(id=1, m="l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", v="327680")]
    f = tmp_path / "ncu.csv"
    f.write_text("\n".join(lines) + "\n")
    launches = ncu_tool.parse_csv(str(f))
    assert [L["id"] for L in launches] == [0, 1]
    assert launches[0]["grid"] == "(2, 4, 1)" and launches[0]["kernel"] == "gemm_mma_sync"
    assert launches[0]["metrics"]["sm__sass_inst_executed_op_ldsm.sum"] == 16384.0
    items = n.plan((512, 512, 512))
    assert [it["params"]["SWIZZLE"] for it in items[:2]] == [1, 0]
    c_off = n.compare(n.predict(items[1]), launches[1]["metrics"])
    assert c_off["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["match"]
    c_on = n.compare(n.predict(items[0]), launches[1]["metrics"])   # swizzled model vs unswizzled counts
    assert not c_on["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]["match"]
