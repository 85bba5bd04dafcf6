"""GPU suite, chapter 9 (sm_80 or newer): every strategy on the correctness grid (any
shape, misaligned bases, odd leading dimensions), the dispatcher's refusals, split-K's
reproducibility, and a control that must fail (the PARTIAL_CHUNKS=0 build on row padding
that is not zero)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.chapters import ch09_any_shape as ch
from helpers.models import anyshape as model
from helpers.runtime import anyshape as rt, bench, compile as kc, gpu, verify

pytestmark = pytest.mark.skipif(not gpu.live() or gpu.device_info()["cc"] < (8, 0),
                                reason="needs an sm_80 or newer GPU (cp.async, bf16, mma.sync)")

SMALL = [c for c in ch.CHECK_GRID if max(c[0]) < 4000]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,offsets", SMALL, ids=[f"{'x'.join(map(str, s))}+{o}" for s, o in SMALL])
def test_every_strategy_is_correct(dtype, shape, offsets):
    strategies = [s for s in ch.STRATEGIES if ch.can_run(s) is None]
    recs = ch.measure(strategies, shape, dtype, offsets, check_only=True)
    assert all(r["rel_err"] is not None and r["rel_err"] <= verify.TOLERANCE[dtype] for r in recs
               if r["params"]["strategy"] != "hopper" or ch.can_run("hopper") is None)


def test_4093_cubed_misaligned_repack_and_auto():
    recs = ch.measure(["auto", "repack", "regs"], (4093, 4093, 4093), "bfloat16", (1, 1, 1), check_only=True)
    assert [r["params"]["strategy"] for r in recs] == ["auto", "repack", "regs"]


def test_dispatcher_returns_the_product_and_refuses_bad_input():
    cp = gpu.cupy()
    A = verify.random_matrix((77, 45), "float16")
    B = verify.random_matrix((45, 13), "float16")
    C = ch.gemm(A, B)
    assert verify.check(C, verify.reference_gemm(A, B), "float16") < 2e-3
    with pytest.raises(ValueError, match="B.shape"):
        ch.gemm(A, verify.random_matrix((44, 13), "float16"))
    with pytest.raises(ValueError, match="A.dtype"):
        ch.gemm(A.astype(cp.float32), B.astype(cp.float32))
    with pytest.raises(ValueError, match="strategy"):
        ch.gemm(A, B, strategy="fastest")
    with pytest.raises(ValueError, match="c_contiguous"):
        ch.gemm(cp.asfortranarray(A), B)
    C2 = ch.gemm(A, B)                     # the context is still healthy after the refusals
    assert bool(cp.isfinite(C2).all())


def test_twopass_is_bitwise_reproducible():
    rows = ch.reproducibility(shapes=((256, 256, 8192),), dtypes=("float16",), runs=4)
    by = {r["reduction"]: r for r in rows}
    assert by["twopass"]["bitwise identical"]


@pytest.mark.parametrize("shape", [(256, 256, 8192), (200, 136, 4093), (1, 5632, 2048)])
@pytest.mark.parametrize("operands", ["mma.sync", "hopper"])
def test_fused_split_k_is_bitwise_the_two_pass_sum(shape, operands):
    """Mode 3 (one launch, the last block of a tile adds the partials in the order
    z = 0, 1, ...) must give C bit for bit as the two-pass reduction does, call after
    call: its tile counters go back to zero, so a second call counts from zero again."""
    cp = gpu.cupy()
    if operands == "hopper" and rt.can_run("hopper") is not None:
        pytest.skip(f"hopper: {rt.can_run('hopper')}")
    M, N, K = shape
    A, B, C = bench.inputs(shape, "float16").args()
    al = rt.aligned_inputs(A, B)
    cfg = model.HOPPER_CFG if operands == "hopper" else model.CFG
    s = max(2, model.choose_splits(M, N, K, rt.sm_count(), cfg)[0])
    ops = "hopper" if operands == "hopper" else "direct" if al else "repack"
    out = {}
    for red in ("twopass", "fused", "fused"):
        verify.poison(C)
        rt.run(model.Plan(operands=ops, schedule="splitk", splits=s, reduction=red), A, B, C)
        out.setdefault(red, []).append(C.view(cp.uint16).copy())
    assert all(bool((o == out["twopass"][0]).all()) for o in out["fused"])


def test_partial_chunk_control_fails_on_dirty_padding():
    """PARTIAL_CHUNKS=0 copies a chunk that straddles K whole: correct only because the
    repack zeroes the row padding. With NaN in the padding it must fail; PARTIAL_CHUNKS=1
    (byte-exact copies) must pass on the same buffers."""
    cp = gpu.cupy()
    M, N, K = 200, 136, 75                     # K % 8 = 3: the last chunk of each A row straddles K
    A = verify.random_matrix((M, K), "float16")
    B = verify.random_matrix((K, N), "float16")
    ref = verify.reference_gemm(A, B)
    lda = model.round_up(K, 8)
    Ap = cp.full((M, lda), np.nan, dtype=cp.float16)
    Ap[:, :K] = A
    errs = {}
    for partial in (0, 1):
        fns = kc.build_all(ch.FILE, ("gemm_any",), {**model.CFG, "ALIGNED": 1, "PARTIAL_CHUNKS": partial})
        fns["gemm_any"].max_dynamic_shared_size_bytes = rt.smem(model.CFG)
        C = cp.full((M, N), np.nan, dtype=cp.float16)
        i = np.int32
        fns["gemm_any"]((1, 2, 1), (256,), (Ap, B, C, cp.zeros(4, cp.float32), i(M), i(N), i(K), i(lda), i(N), i(N),
                                           i(model.cdiv(K, 32)), i(0), cp.zeros(1, cp.int32)), shared_mem=rt.smem(model.CFG))
        errs[partial] = verify.rel_err(C, ref)
    assert errs[1] < 2e-3 and not errs[0] < 2e-3, errs


@pytest.mark.parametrize("M,N,offset", [(1, 1, 0), (1, 5, 1), (3, 3, 0), (2, 7, 3), (5, 9, 1), (8, 8, 0),
                                        (17, 13, 5), (64, 100, 2), (129, 131, 7), (33, 4093, 1)])
def test_unpad_copy_any_alignment(M, N, offset):
    """unpad_copy writes C as a flat array in aligned 16-byte chunks plus a head and a
    tail element by element: every (M, N, alignment of C) must copy exactly the M x N
    corner of the source and touch nothing around it (NaN sentinels)."""
    cp = gpu.cupy()
    n8 = model.round_up(N, 8)
    src = cp.arange(M * n8, dtype=cp.uint16).reshape(M, n8).view(cp.float16)
    buf = cp.full(M * N + offset + 8, cp.nan, cp.float16)
    C = buf[offset:offset + M * N].reshape(M, N)
    rt.unpad_into(src, C)
    assert bool((C.view(cp.uint16) == src[:, :N].view(cp.uint16)).all())
    assert bool(cp.isnan(buf[:offset]).all()) and bool(cp.isnan(buf[offset + M * N:]).all())


@pytest.mark.parametrize("M,N,K,offsets", [(1, 1, 1, (0, 0)), (7, 9, 5, (1, 3)), (129, 131, 67, (0, 1)),
                                            (33, 4093, 17, (5, 0))])
def test_pad_copy2_is_two_pad_copies(M, N, K, offsets):
    """pad_copy2 (both operands in one launch) writes bit for bit what pad_copy writes for A
    and for B, zeros in the padding included, at any alignment of the sources."""
    cp = gpu.cupy()
    bufA = verify.random_matrix((M * K + 8,), "float16")
    bufB = verify.random_matrix((K * N + 8,), "float16")
    A = bufA[offsets[0]:offsets[0] + M * K].reshape(M, K)
    B = bufB[offsets[1]:offsets[1] + K * N].reshape(K, N)
    k8, n8 = model.round_up(K, 8), model.round_up(N, 8)
    want_a, want_b = cp.full((M + 3, k8), cp.nan, cp.float16), cp.full((k8, n8), cp.nan, cp.float16)
    rt.pad_into(A, want_a)
    rt.pad_into(B, want_b)
    got_a, got_b = cp.full_like(want_a, cp.nan), cp.full_like(want_b, cp.nan)
    (step,) = rt._pad_steps("float16", [(M, K, got_a, "A"), (K, N, got_b, "B")])
    assert step[0] is rt._kernels("float16", True)["pad_copy2"]
    rt._replay((step,), A, B, None)
    assert bool((got_a.view(cp.uint16) == want_a.view(cp.uint16)).all())
    assert bool((got_b.view(cp.uint16) == want_b.view(cp.uint16)).all())


@pytest.mark.parametrize("strategy", ["auto", "repack", "padding", "splitk", "streamk_sk", "hopper", "hopper_splitk"])
def test_a_cached_call_computes_with_the_new_arrays(strategy):
    """The second call of a shape replays the first call's prepared launches: with other
    arrays it must compute their product (nothing of the first call's arrays is reused)."""
    if rt.can_run(strategy) is not None:
        pytest.skip(rt.can_run(strategy))
    M, N, K = 200, 136, 1000
    for _ in range(2):
        before = dict(rt.CACHE_STATS)
        A = verify.random_matrix((M, K), "float16")
        B = verify.random_matrix((K, N), "float16")
        C = gpu.cupy().empty((M, N), gpu.cupy().float16)
        verify.poison(C)
        rt.gemm(A, B, out=C, strategy=strategy)
        assert verify.rel_err(C, verify.reference_gemm(A, B)) <= verify.TOLERANCE["float16"]
    assert rt.CACHE_STATS["hits"] == before["hits"] + 1


@pytest.mark.parametrize("strategy", ["auto", "repack", "padding", "splitk", "streamk_sk", "hopper", "hopper_splitk"])
def test_packed_launches_compute_what_cupys_launch_computes(strategy):
    """Packed launches (helpers/runtime/packed.py) against CuPy's own launch of the same prepared
    plan: the same C bit for bit (within tolerance for stream-K), on a shape with odd N and K (repacks, staged C) and on the
    caller's fresh arrays the second time (the pointer cells are rewritten per call)."""
    if rt.can_run(strategy) is not None:
        pytest.skip(rt.can_run(strategy))
    assert rt.packed.enabled(), f"packed launches are off here: {rt.packed.PATH['why']}"
    cp = gpu.cupy()
    M, N, K = 300, 203, 1001
    for _ in range(2):
        A, B = verify.random_matrix((M, K), "float16"), verify.random_matrix((K, N), "float16")
        outs = []
        for off in (False, True):
            C = cp.empty((M, N), cp.float16)
            verify.poison(C)
            if off:
                with rt.packed.disabled():
                    rt.gemm(A, B, out=C, strategy=strategy)
                assert rt.packed.PATH["launch"] == "cupy"
            else:
                rt.gemm(A, B, out=C, strategy=strategy)
                assert rt.packed.PATH["launch"] == "packed"
            outs.append(C)
        ref = verify.reference_gemm(A, B)
        assert all(verify.rel_err(C, ref) <= verify.TOLERANCE["float16"] for C in outs)
        if not strategy.startswith("streamk"):   # stream-K's owner adds partials as their flags arrive
            assert bool((outs[0].view(cp.uint16) == outs[1].view(cp.uint16)).all())


@pytest.mark.parametrize("strategy", ["auto", "repack", "padding", "splitk", "hopper", "hopper_splitk"])
def test_a_graph_replay_computes_what_step_by_step_launches_compute(strategy):
    """The same arrays three times: the third call replays a CUDA graph of the plan's launches
    (helpers/runtime/packed.py, Graph); its C equals the step-by-step C bit for bit, on a shape
    with odd N and K (repacks, staged C), and C is rewritten (poisoned before each call)."""
    if rt.can_run(strategy) is not None:
        pytest.skip(rt.can_run(strategy))
    cp = gpu.cupy()
    M, N, K = 300, 203, 1001
    A, B = verify.random_matrix((M, K), "float16"), verify.random_matrix((K, N), "float16")
    C = cp.empty((M, N), cp.float16)
    with rt.packed.no_graphs():
        verify.poison(C)
        rt.gemm(A, B, out=C, strategy=strategy)
        want = C.copy()
    paths = []
    for _ in range(3):
        verify.poison(C)
        rt.gemm(A, B, out=C, strategy=strategy)
        paths.append(rt.packed.PATH["launch"])
    assert paths[-1] == "graph", (paths, rt.packed.PATH["why"])
    assert bool((C.view(cp.uint16) == want.view(cp.uint16)).all())
    assert verify.rel_err(C, verify.reference_gemm(A, B)) <= verify.TOLERANCE["float16"]


@pytest.mark.parametrize("shape,offsets", [((17000, 64, 256), (0, 0, 0)), ((20001, 61, 1003), (1, 1, 1)),
                                           ((30000, 64, 1002), (0, 0, 0))])
def test_tall_skinny_runs_on_the_narrow_tile_and_is_correct(shape, offsets):
    """C at most 64 columns wide with enough 128 x 64 tiles for every SM: auto picks the narrow
    tile (heaven 7's loop, 128 x 64), on aligned and unaligned operands, and the result is right."""
    M, N, K = shape
    p = rt.plan_for("auto", M, N, K, offsets == (0, 0, 0) and K % 8 == 0 and N % 8 == 0)
    assert p.tile == "narrow", p
    (rec,) = ch.measure(["auto"], shape, "float16", offsets, check_only=True)
    assert rec["rel_err"] is not None and rec["rel_err"] <= verify.TOLERANCE["float16"]
