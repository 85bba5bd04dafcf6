"""Any-shape GEMM on kernels/09_any_shape.cu: the runner that turns a plan into launches,
and the dispatcher :func:`gemm` (``helpers.gemm``).

A plan (:class:`helpers.models.anyshape.Plan`) says how the operands reach the kernel (``direct``:
read in place; ``regs``: through registers; ``repack``: copied to rows of a multiple of 8; ``padding``:
copied to tile multiples, C copied back; ``hopper``: chapter 10's kernel, repacked where needed) and how the
work is scheduled (data-parallel; split-K, reduced atomically, in a second pass or in the same launch;
stream-K). :func:`run` enqueues every launch and copy of a plan, so timing a call times all of it.
Catalog entries and measurements: helpers/chapters/ch09_any_shape.py.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from helpers.models import anyshape as model
from helpers.models.raster import cdiv

from . import catalog, compile as kc, gpu, launch, packed
from .anyshape_inputs import DTYPES, aligned_inputs, check_inputs  # noqa: F401  (the runner's API)
from .checks import require

FILE = "09_any_shape.cu"
ENTRIES = ("gemm_any", "gemm_streamk", "splitk_reduce", "pad_copy", "pad_copy2", "unpad_copy")
MIN_CC = (8, 0)                     # cp.async, bf16 and mma.sync.m16n8k16
H200_SMS = 132                      # the recorded GPU's SM count (plans without a GPU here)


def threads(p) -> int:
    """Threads per block: one warp per WM x WN warp tile of the BM x BN block tile."""
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def smem(p) -> int:
    """Dynamic shared memory (bytes): STAGES ring of A (BM x BK) and B (BK x BN) tiles, 2 bytes each."""
    return p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2


_SCRATCH: dict = {}


def scratch(name: str, shape, dtype, zero: bool = False):
    """A device buffer kept between calls (allocating is not part of a GEMM's time)."""
    cp = gpu.cupy()
    key = (name, tuple(shape), np.dtype(dtype).str)
    if key not in _SCRATCH:
        _SCRATCH[key] = cp.zeros(shape, dtype) if zero else cp.empty(shape, dtype)
    return _SCRATCH[key]

# ------------------------------------------------------------------ the runner
_BUILDS: dict = {}


def _kernels(dtype: str, aligned: bool, tile: str = "wide") -> dict:
    """The entry points of one build (:data:`ENTRIES`, one NVRTC compile) on ``tile``'s
    configuration (:data:`helpers.models.anyshape.TILES`), shared memory opted in."""
    k = (dtype, bool(aligned), tile)
    if k not in _BUILDS:
        cfg = model.TILES[tile]
        p = {**cfg, **DTYPES[dtype][1], "ALIGNED": int(aligned)}
        fns = kc.build_all(FILE, ENTRIES, p)
        for e in ("gemm_any", "gemm_streamk"):
            fns[e].max_dynamic_shared_size_bytes = smem(cfg)
        _BUILDS[k] = fns
    return _BUILDS[k]


def sm_count() -> int:
    """SMs of this GPU, or of the H200 the records come from when there is none."""
    return gpu.device_info()["sms"] if gpu.live() else H200_SMS


def pad_into(X, out) -> None:
    """Enqueue ``pad_copy``: ``out`` (drows x dcols, C-contiguous, dcols % 8 == 0) = ``X``
    (rows x cols, C-contiguous, any alignment, rows <= drows, cols <= dcols) in its top-left
    corner and zeros everywhere else. float16 or bfloat16."""
    (rows, cols), (drows, dcols) = X.shape, out.shape
    require(rows <= drows and cols <= dcols, "out.shape", tuple(out.shape), f"must hold X.shape = {(rows, cols)}")
    require(dcols % 8 == 0, "out.shape[1]", dcols, "must be a multiple of 8 (16-byte rows)")
    _replay(_pad_steps(str(X.dtype), [(rows, cols, out, "A")]), X, None, None)


def unpad_into(src, C) -> None:
    """Enqueue ``unpad_copy``: ``C`` (M x N, C-contiguous, any alignment) = the top-left
    M x N corner of ``src`` (C-contiguous, at least M x N, rows a multiple of 8 elements)."""
    M, N = C.shape
    require(src.shape[0] >= M and src.shape[1] >= N, "src.shape", tuple(src.shape), f"must hold C.shape = {(M, N)}")
    require(src.shape[1] % 8 == 0, "src.shape[1]", src.shape[1], "must be a multiple of 8 (16-byte rows)")
    _replay((_unpad_step(str(C.dtype), src, M, N),), None, None, C)


_EPOCH = [0]
MAX_CACHED = 256                    # prepared plans and dispatcher calls kept (oldest dropped first)
_PREPARED: dict = {}                # (plan, M, N, K, dtype, alignment bits) -> launch steps
_CALLS: dict = {}                   # (strategy, M, N, K, dtype, alignment bits, device, simulated) -> (plan, steps)
CACHE_STATS = {"hits": 0, "misses": 0}   # of :func:`gemm`'s call cache


def _bits(A, B, C) -> tuple:
    """Which of A, B, C start on a 16-byte boundary (the only pointer facts a plan depends on)."""
    return (A.data.ptr % 16 == 0, B.data.ptr % 16 == 0, C.data.ptr % 16 == 0)


def _keep(cache: dict, key, value):
    cache[key] = value
    while len(cache) > MAX_CACHED:
        cache.pop(next(iter(cache)))
    return value


def clear_prepared() -> None:
    """Forget every prepared plan, dispatcher call and Hopper argument set (the next call
    plans, allocates scratch and builds its tensor maps again): the control of a measurement
    of what the caches save, and what :func:`use_hopper` does when the Hopper kernel changes."""
    _PREPARED.clear()
    _CALLS.clear()
    CACHE_STATS.update(hits=0, misses=0)


def _launch(fn, grid, block, args, smem_b=0, slots=()):
    """One step of a prepared plan: ``fn(grid, block, args)`` with the arrays the call passes
    put in at ``slots`` ((argument index, "A" | "B" | "C" | "epoch"), ...)."""
    return packed.Step(fn, grid, block, args, smem_b, tuple(slots))


def _copy_step(fn, chunks: int, args, slots=()):
    return _launch(fn, (max(1, min(cdiv(chunks, 256), 16 * sm_count())),), (256,), args, 0, slots)


def _pad_steps(dtype, copies) -> list:
    """The repack of the call's operands, ``copies`` a list of (rows, cols, scratch, "A" | "B"):
    ``pad_copy`` for one operand, ``pad_copy2`` for two (one launch fewer on the host)."""
    i32, args, slots = np.int32, (), []
    for n, (rows, cols, out, src) in enumerate(copies):
        args += (None, i32(rows), i32(cols), np.int64(cols), out, i32(out.shape[0]), i32(out.shape[1]))
        slots.append((7 * n, src))
    if not copies:
        return []
    fn = _kernels(dtype, True)["pad_copy2" if len(copies) == 2 else "pad_copy"]
    return [_copy_step(fn, sum(c[2].shape[0] * c[2].shape[1] for c in copies) // 8, args, slots)]


def _unpad_step(dtype, src, M, N):
    """``unpad_copy`` of scratch ``src`` into the call's C (M x N)."""
    return _copy_step(_kernels(dtype, True)["unpad_copy"], cdiv(M * N, 8),
                      (src, np.int32(src.shape[1]), None, np.int32(M), np.int32(N)), ((2, "C"),))


def prepare(plan: model.Plan, M: int, N: int, K: int, dtype: str, bits: tuple) -> tuple:
    """The launches and copies of ``plan`` on an M x N x K problem of ``dtype`` whose A, B, C
    16-byte alignment is ``bits`` (:func:`_bits`), worked out once: kernels built, grids,
    scalar arguments and scratch buffers allocated, Hopper tensor maps where they do not
    depend on the caller's pointers. Cached per (plan, M, N, K, dtype, bits); :func:`run`
    replays it. Returns a tuple of steps."""
    key = (plan, M, N, K, dtype, bits)
    got = _PREPARED.get(key)
    if got is not None:
        return got
    i32 = np.int32
    if plan.operands == "hopper":
        return _keep(_PREPARED, key, _prepare_hopper(plan, M, N, K, dtype, bits))
    fns = _kernels(dtype, plan.operands != "regs", plan.tile)
    cfg = model.TILES[plan.tile]
    smem_b, nt = smem(cfg), (threads(cfg),)
    w0 = scratch("w_unused", (4,), np.float32)
    f0 = scratch("flags_unused", (1,), np.int32)   # gemm_any's tile counters: read by mode 3 only
    steps = []
    if plan.operands == "padding":               # tile multiples: every guard of the kernel passes
        Mp, Np, Kp = (model.round_up(M, cfg["BM"]), model.round_up(N, cfg["BN"]), model.round_up(K, cfg["BK"]))
        Ap, Bp = scratch("padA", (Mp, Kp), dtype), scratch("padB", (Kp, Np), dtype)
        Cp = scratch("padC", (Mp, Np), dtype)
        steps += _pad_steps(dtype, [(M, K, Ap, "A"), (K, N, Bp, "B")])
        steps += [_launch(fns["gemm_any"], (Np // cfg["BN"], Mp // cfg["BM"], 1), nt,
                          (Ap, Bp, Cp, w0, i32(Mp), i32(Np), i32(Kp), i32(Kp), i32(Np), i32(Np),
                           i32(Kp // cfg["BK"]), i32(0), f0), smem_b),
                  _unpad_step(dtype, Cp, M, N)]
        return _keep(_PREPARED, key, tuple(steps))
    a_slot, b_slot, lda, ldb = [(0, "A")], [(1, "B")], K, N
    Ap = Bp = None
    if plan.operands == "repack":                # row strides rounded up to 8 elements, only where needed
        copies = []
        if K % 8 or not bits[0]:
            lda, a_slot = model.round_up(K, 8), []
            Ap = scratch("repackA", (M, lda), dtype)
            copies.append((M, K, Ap, "A"))
        if N % 8 or not bits[1]:
            ldb, b_slot = model.round_up(N, 8), []
            Bp = scratch("repackB", (K, ldb), dtype)
            copies.append((K, N, Bp, "B"))
        steps += _pad_steps(dtype, copies)
    KT = cdiv(K, cfg["BK"])
    shape_args = (i32(M), i32(N), i32(K), i32(lda), i32(ldb), i32(N))
    slots = a_slot + b_slot + [(2, "C")]
    gemm_any = fns["gemm_any"]
    if plan.schedule == "splitk":
        ranges = model.split_ranges(KT, plan.splits)   # blockIdx.z = z: k-tiles [z * ktps, (z+1) * ktps)
        ktps, s = ranges[0][1], len(ranges)      # s: the splits that hold at least one k-tile
        grid = (cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), s)
        red = plan.reduction == "atomic"
        W = (scratch("splitk_atomic", (M * N,), np.float32, zero=True) if red     # kept zero by splitk_reduce
             else scratch("splitk_twopass", (s * M * N,), np.float32))
        if plan.reduction == "fused":            # one launch: the last block of a tile sums it into C; the
            flags = scratch("splitk_flags", (grid[0] * grid[1],), np.int32, zero=True)   # counters stay zero
            steps.append(_launch(gemm_any, grid, nt, (Ap, Bp, None, W, *shape_args, i32(ktps), i32(3), flags), smem_b, slots))
            return _keep(_PREPARED, key, tuple(steps))
        steps += [_launch(gemm_any, grid, nt, (Ap, Bp, None, W, *shape_args, i32(ktps), i32(1 if red else 2), f0),
                          smem_b, slots),
                  _copy_step(fns["splitk_reduce"], M * N,
                             (W, None, i32(M), i32(N), i32(N), i32(1 if red else s), i32(1 if red else 0)),
                             ((1, "C"),))]
    elif plan.schedule == "streamk":
        G = sm_count()
        dp = model.dp_tiles(M, N, plan.policy, G, cfg)
        if dp:                                   # whole tiles 0..dp-1, data-parallel, on a 1-D grid
            steps.append(_launch(gemm_any, (dp, 1, 1), nt, (Ap, Bp, None, w0, *shape_args, i32(KT), i32(0), f0),
                                 smem_b, slots))
        W = scratch("sk_w", (G * cfg["BM"] * cfg["BN"],), np.float32)
        flags = scratch("sk_flags", (G,), np.int32, zero=True)
        steps.append(_launch(fns["gemm_streamk"], (G,), nt, (Ap, Bp, None, W, flags, *shape_args, i32(dp), None),
                             smem_b, slots + [(12, "epoch")]))
    else:
        steps.append(_launch(gemm_any, (cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), 1), nt,
                             (Ap, Bp, None, w0, *shape_args, i32(KT), i32(0), f0), smem_b, slots))
    return _keep(_PREPARED, key, tuple(steps))


def _next_epoch() -> int:
    _EPOCH[0] = _EPOCH[0] % (2 ** 31 - 1) + 1
    return _EPOCH[0]


def _replay(steps, A, B, C) -> None:
    """Enqueue prepared steps (:func:`prepare`) with the call's arrays put into their slots: as
    packed launches (:mod:`helpers.runtime.packed`, the arguments converted once per step; a plan
    of several launches called again with the same arrays replays one CUDA graph) where
    cuda-bindings loads, else through CuPy's ``RawKernel`` call (every argument converted per launch)."""
    if packed.enabled():
        try:
            packed.launch_steps(steps, A, B, C, _next_epoch)   # a graph where the same arrays come again
            return
        except (AttributeError, TypeError) as e:  # a kernel or argument the packing cannot take
            packed.give_up(e)                     # CuPy's launch from here on (packed.PATH says why)
    for fn, grid, block, args, smem_b, slots in steps:
        if callable(args):                       # Hopper: arguments built from the call's pointers (cached)
            args = args(A, B, C)
        elif slots:
            args = list(args)
            for i, what in slots:
                if what == "epoch":              # flags equal to this launch's epoch are this launch's
                    args[i] = np.int32(_next_epoch())
                else:
                    args[i] = A if what == "A" else B if what == "B" else C
        fn(grid, block, args, shared_mem=smem_b)
    packed.PATH["launch"] = "cupy"


def run(plan: model.Plan, A, B, C) -> None:
    """Enqueue ``plan`` on checked arrays (:func:`check_inputs`): C = A @ B. Every copy
    and every extra launch the plan needs is part of the call (and of its time); the
    launches themselves are worked out once per (plan, shape, dtype, alignment) by
    :func:`prepare`."""
    M, K = A.shape
    _replay(prepare(plan, M, B.shape[1], K, str(A.dtype), _bits(A, B, C)), A, B, C)


HOPPER: dict = {}                   # dtype -> catalog key of the kernel the "hopper" strategies run (use_hopper)
_HOPPER_SPLITK: dict = {}


def use_hopper(keys: dict) -> None:
    """Name the catalog kernel the "hopper" strategies run, per dtype: ``{"float16": key,
    "bfloat16": key}``, given by the chapter that registers it (a TMA + wgmma GEMM whose
    arguments come from ``spec.args``, with the ``-DSPLIT_K=1`` build :func:`hopper_splitk_build`
    uses). Until then :func:`can_run` says no Hopper kernel is named. Raises ValueError for
    a dtype the runner does not take, KeyError for a key the catalog does not hold."""
    for dt, key in keys.items():
        require(dt in DTYPES, "dtype", dt, f"must be one of {tuple(DTYPES)}")
        catalog.get(key)
    HOPPER.update(keys)
    clear_prepared()                    # plans made without (or with another) Hopper kernel


def hopper_splitk_build(dtype: str, cluster_m: int = 1) -> tuple:
    """The Hopper kernel (:data:`HOPPER`) built for split-K: its catalog configuration with
    the direct epilogue (EPI_TMA=0), CLUSTER_M = ``cluster_m`` and SPLIT_K=1, which adds the
    arguments (W, splits, flags, fused) and stores fp32 partial tiles. Not a catalog entry: alone it
    computes no C (the reduction completes it), so the catalog's generic launches and tests
    must not run it. Returns (spec, params, kernel, shared memory bytes); compiled once per
    variant. Raises KeyError when no Hopper kernel is named for ``dtype``."""
    if (dtype, cluster_m) not in _HOPPER_SPLITK:
        spec = catalog.get(HOPPER[dtype])
        p = {**spec.defaults, "EPI_TMA": 0, "CLUSTER_M": cluster_m}
        fn = kc.build(spec.file, spec.entry, {**spec.defines(p), "SPLIT_K": 1}, extra_options=spec.compile_options)
        fn.max_dynamic_shared_size_bytes = spec.smem(p)
        _HOPPER_SPLITK[(dtype, cluster_m)] = (spec, p, fn, spec.smem(p))
    return _HOPPER_SPLITK[(dtype, cluster_m)]


def _prepare_hopper(plan: model.Plan, M: int, N: int, K: int, dtype: str, bits: tuple) -> tuple:
    """The steps of the Hopper kernel (:data:`HOPPER`) on any shape: A and B copied (where
    needed) into C-contiguous scratch with K and N rounded up to 8 (the padding is zero, so it
    adds nothing), the kernel on (M, N8, K8) (TMA zero-fills the M, N and K tails of its
    tiles), C copied out of an M x N8 scratch when N % 8 != 0 or C is not 16-byte aligned.
    With ``plan.splits`` > 1: split-K on its ``plan.cluster_m`` build (:func:`hopper_splitk_build`),
    a persistent grid over tiles x splits units, fp32 slabs W[z][M][N8], summed by ``splitk_reduce``
    (or, reduction "fused", by the kernel's last consumer of each tile). Tensor maps are built once
    per set of pointers (the last two sets of the caller's arrays kept, with the arrays alive)."""
    fns = _kernels(dtype, True)
    k8, n8 = model.round_up(K, 8), model.round_up(N, 8)
    steps = []
    Ap = None if (k8 == K and bits[0]) else scratch("hopA", (M, k8), dtype)
    Bp = None if (k8 == K and n8 == N and bits[1]) else scratch("hopB", (k8, n8), dtype)
    # The staged C is zeroed once, when it is allocated: initcheck reported unpad_copy's reads of
    # it on a first call at 7 x 7 x 7 although the TMA store writes every element that copy reads
    # (scripts/initcheck_control.py: with the buffer NaN-filled first, C comes out finite and right).
    Cp = None if (n8 == N and bits[2]) else scratch("hopC", (M, n8), dtype, zero=True)
    steps += _pad_steps(dtype, [c for c in ((M, K, Ap, "A"), (K, N, Bp, "B")) if c[2] is not None])
    splits = plan.splits if plan.schedule == "splitk" else 1
    if splits > 1:
        spec, p, fn, smem_b = hopper_splitk_build(dtype, plan.cluster_m)
        cl, sms = p["CLUSTER_M"], sm_count()
        units = cdiv(cdiv(M, 128), cl) * cdiv(n8, 256) * splits     # (tile, k range) pairs, per cluster
        W = scratch("hopW", (splits * M * n8,), np.float32)
        fused = plan.reduction == "fused"         # the last consumer of a tile sums it into C: one launch
        flags = scratch("hop_flags" if fused else "flags_unused", (cdiv(M, 128) * cdiv(n8, 256) if fused else 1,),
                        np.int32, zero=fused)    # the tile counters, kept zero by the kernel
        grid, block, extra = (max(cl, min(sms - sms % cl, units * cl)),), (384,), (W, np.int32(splits), flags, np.int32(fused))
    else:
        L = launch.prepare(HOPPER[dtype], (M, n8, k8))
        spec, p, fn, smem_b, grid, block, extra = L.spec, L.params, L.fn, L.smem, L.grid, L.block, ()
    args = _HopperArgs(spec, p, (Ap, Bp, Cp), (M, n8, k8), extra)
    steps.append(_launch(fn, grid, block, args, smem_b))
    if splits > 1 and plan.reduction != "fused":
        steps.append(_copy_step(fns["splitk_reduce"], M * n8,
                                (W, Cp, np.int32(M), np.int32(n8), np.int32(n8), np.int32(splits), np.int32(0)),
                                () if Cp is not None else ((1, "C"),)))
    if Cp is not None:
        steps.append(_unpad_step(dtype, Cp, M, N))
    return tuple(steps)


class _HopperArgs:
    """The Hopper kernel's arguments for a call: tensor maps of A, B and C (or of the scratch
    copies that stand in for them), built once per set of pointers (the last two kept: they
    hold their arrays). ``key(A, B, C)``: the pointers the arguments depend on."""

    def __init__(self, spec, p, staged, shape, extra):
        self.spec, self.p, self.staged, self.shape, self.extra = spec, p, staged, shape, extra
        self.maps: dict = {}

    def _arrays(self, A, B, C):
        Ap, Bp, Cp = self.staged
        return (A if Ap is None else Ap), (B if Bp is None else Bp), (C if Cp is None else Cp)

    def key(self, A, B, C) -> tuple:
        a, b, c = self._arrays(A, B, C)
        return (a.data.ptr, b.data.ptr, c.data.ptr)

    def __call__(self, A, B, C) -> tuple:
        k = self.key(A, B, C)
        got = self.maps.get(k)
        if got is None:
            a, b, c = self._arrays(A, B, C)
            got = self.maps[k] = self.spec.args(self.p, a, b, c, *self.shape, *self.extra)
            while len(self.maps) > 2:
                self.maps.pop(next(iter(self.maps)))
        return got


# ------------------------------------------------------------------ strategies and the dispatcher
STRATEGIES = ("auto", "dp", "narrow", "regs", "repack", "padding", "splitk", "splitk_atomic", "streamk", "streamk_sk",
              "hopper", "hopper_splitk")


def plan_for(strategy: str, M: int, N: int, K: int, aligned: bool, sms: int | None = None) -> model.Plan:
    """The :class:`~helpers.models.anyshape.Plan` of a named strategy for this shape.

    "auto": the dispatcher (:func:`helpers.models.anyshape.plan`); "dp": data-parallel, A and
    B read in place if ``aligned`` else repacked; "narrow": the same on 128 x 64 tiles
    (:data:`helpers.models.anyshape.NARROW_CFG`); "regs", "repack", "padding": data-parallel
    with that operand path; "splitk" / "splitk_atomic": the model's split count (at least 2),
    two-pass or atomic; "streamk": CUTLASS's hybrid (whole waves but one data-parallel),
    "streamk_sk": every tile streamed; "hopper": chapter 10's rung 5 (sm_90 only);
    "hopper_splitk": its split-K (two-pass, at least 2 splits, sm_90 only).
    Raises ValueError for an unknown name."""
    require(strategy in STRATEGIES, "strategy", strategy, f"must be one of {STRATEGIES}")
    sms = sms or sm_count()
    if strategy == "auto":
        return model.plan(M, N, K, aligned=aligned, sms=sms, hopper=can_run("hopper") is None)
    ops = "direct" if aligned else "repack"
    if strategy == "narrow":
        return model.Plan(operands=ops, tile="narrow", reason="heaven 7's loop on 128 x 64 tiles, data-parallel (asked for)")
    if strategy in ("regs", "repack", "padding"):
        return model.Plan(operands=strategy, reason=f"{strategy}, data-parallel (asked for)")
    if strategy.startswith("splitk"):
        s = max(2, model.choose_splits(M, N, K, sms)[0])
        red = "atomic" if strategy == "splitk_atomic" else "fused" if model.fused_is_cheaper(M, N, s) else "twopass"
        return model.Plan(operands=ops, schedule="splitk", splits=s, reduction=red, reason=f"split-K {s} (asked for)")
    if strategy.startswith("streamk"):
        pol = "sk" if strategy == "streamk_sk" else "hybrid2"
        return model.Plan(operands=ops, schedule="streamk", policy=pol, reason=f"stream-K {pol} (asked for)")
    if strategy == "hopper":
        return model.Plan(operands="hopper", reason="chapter 10's TMA + wgmma kernel, A and B copied only where TMA cannot read them (asked for)")
    if strategy == "hopper_splitk":
        s = max(2, model.choose_splits(M, model.round_up(N, 8), model.round_up(K, 8), sms, model.HOPPER_CFG)[0])
        red = "fused" if model.fused_is_cheaper(M, model.round_up(N, 8), s, model.HOPPER_CFG) else "twopass"
        return model.Plan(operands="hopper", schedule="splitk", splits=s, reduction=red,
                          reason=f"chapter 10's kernel, split-K {s} with fp32 partials (asked for)")
    return model.Plan(operands=ops, reason="data-parallel (asked for)")


def can_run(strategy: str) -> str | None:
    """None if this GPU can run ``strategy``; otherwise why not, in words."""
    if not gpu.live():
        return "no GPU in this run"
    cc = gpu.capability()                 # GEMM_BOOK_SIMULATE can force it down on a real GPU
    if strategy.startswith("hopper"):
        if "float16" not in HOPPER:
            return "no Hopper kernel is named for this runner (anyshape.use_hopper)"
        spec = catalog.get(HOPPER["float16"])
        return None if spec.runs_on(cc) else f"needs {spec.needs()}; this GPU is sm_{cc[0]}{cc[1]}"
    return None if tuple(cc) >= MIN_CC else f"needs sm_80 or newer; this GPU is sm_{cc[0]}{cc[1]}"


def gemm(A, B, out=None, strategy: str = "auto", verbose: bool = False):
    """C = A @ B for any shape: the dispatcher of chapter 9.

    A: (M, K), B: (K, N), float16 or bfloat16 CuPy arrays, C-contiguous, any M, N, K >= 1,
    any base pointer; ``out``: (M, N) of the same dtype or None. ``strategy``: one of
    :data:`STRATEGIES` ("auto" picks from the shape and the GPU: see
    :func:`helpers.models.anyshape.plan`). With ``verbose`` prints the plan and why.
    fp32 accumulation, result rounded to the input dtype. Returns C. Raises ValueError
    (bad arrays or strategy, or a GPU older than sm_80) before anything is launched.

    A call costs about what cuBLAS's costs on the host: the arrays are checked every time
    (:func:`check_inputs`), but the plan, its kernels, grids, scalar arguments, scratch
    buffers and tensor maps are worked out once per (strategy, M, N, K, dtype, 16-byte
    alignment of A, B and C, device) and replayed (:func:`prepare`; :data:`CACHE_STATS`
    counts hits and misses, :func:`clear_prepared` empties the caches).
    """
    M, N, K, dtype, C = check_inputs(A, B, out)
    bits = _bits(A, B, C)
    if strategy not in STRATEGIES:               # the rule's text is formatted only when it is broken
        require(False, "strategy", strategy, f"must be one of {STRATEGIES}")
    key = (strategy, M, N, K, dtype, bits, gpu.cupy().cuda.runtime.getDevice(), os.environ.get(gpu.SIMULATE_VAR))
    hit = _CALLS.get(key)
    if hit is None:
        CACHE_STATS["misses"] += 1
        why_not = can_run(strategy)
        require(why_not is None, "strategy", strategy, f"cannot run here: {why_not}")
        p = plan_for(strategy, M, N, K, K % 8 == 0 and N % 8 == 0 and bits[0] and bits[1])
        hit = _keep(_CALLS, key, (p, prepare(p, M, N, K, dtype, bits)))
    else:
        CACHE_STATS["hits"] += 1
    if verbose:
        print(f"{M} x {N} x {K} {dtype}: {hit[0].name} -- {hit[0].reason}")
    _replay(hit[1], A, B, C)
    return C


@contextlib.contextmanager
def without_hopper():
    """Inside this block the dispatcher knows no Hopper kernel (:data:`HOPPER` empty, the
    "hopper" strategies refused by :func:`can_run`, "auto" planning for the mma.sync kernels
    only): chapter 9's measurements, taken before chapter 10 has taught its kernel. The
    caches are emptied on the way in and out, so no plan of the other setting is replayed."""
    saved = dict(HOPPER)
    HOPPER.clear()
    clear_prepared()
    try:
        yield
    finally:
        HOPPER.update(saved)
        clear_prepared()

