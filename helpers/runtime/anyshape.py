"""Any-shape GEMM on kernels/09_any_shape.cu: the runner that turns a plan into launches,
and the dispatcher :func:`gemm` (``helpers.gemm``).

A plan (:class:`helpers.models.anyshape.Plan`) says how the operands reach the kernel
(``direct``: the cp.async build reads A and B in place; ``regs``: the ALIGNED=0 build loads
any alignment through registers; ``repack``: A and B copied once to rows of a multiple of
8 elements; ``padding``: copied to tile multiples, C copied back; ``hopper``: chapter 10's
sm_90a kernel after a repack) and how the work is scheduled (data-parallel, split-K with an
atomic or a two-pass reduction, stream-K). :func:`run` enqueues every launch and copy a
plan needs, so timing a call times all of it. The catalog entries and the measurements
live with the chapter (helpers/chapters/ch09_any_shape.py).
"""
from __future__ import annotations

import numpy as np

from helpers.models import anyshape as model
from helpers.models.raster import cdiv

from . import catalog, compile as kc, gpu, launch
from .checks import require

FILE = "09_any_shape.cu"
ENTRIES = ("gemm_any", "gemm_streamk", "splitk_reduce", "pad_copy", "unpad_copy")
DTYPES = {"float16": ("f16", {}), "bfloat16": ("bf16", {"BF16": 1})}
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


def _kernels(dtype: str, aligned: bool) -> dict:
    """The five entry points of one build (one NVRTC compile), shared memory opted in."""
    k = (dtype, bool(aligned))
    if k not in _BUILDS:
        p = {**model.CFG, **DTYPES[dtype][1], "ALIGNED": int(aligned)}
        fns = kc.build_all(FILE, ENTRIES, p)
        for e in ("gemm_any", "gemm_streamk"):
            fns[e].max_dynamic_shared_size_bytes = smem(model.CFG)
        _BUILDS[k] = fns
    return _BUILDS[k]


def sm_count() -> int:
    """SMs of this GPU, or of the H200 the records come from when there is none."""
    return gpu.device_info()["sms"] if gpu.live() else H200_SMS


def aligned_inputs(A, B) -> bool:
    """True when the cp.async build can read A and B in place: K % 8 == 0, N % 8 == 0
    and both base pointers 16-byte aligned."""
    return A.shape[1] % 8 == 0 and B.shape[1] % 8 == 0 and A.data.ptr % 16 == 0 and B.data.ptr % 16 == 0


def check_inputs(A, B, C=None):
    """Validate a GEMM call before anything reaches the GPU. A: (M, K), B: (K, N), both
    C-contiguous CuPy arrays of one dtype (float16 or bfloat16); C: (M, N) of that dtype,
    C-contiguous, or None (allocated). Any M, N, K >= 1, any base pointer. Returns
    (M, N, K, dtype, C). Raises ValueError naming the argument and the rule."""
    cp = gpu.cupy()
    for name, x in (("A", A), ("B", B)):
        require(isinstance(x, cp.ndarray), name, type(x).__name__, "must be a cupy.ndarray")
        require(x.ndim == 2, f"{name}.ndim", x.ndim, "must be 2")
    dtype = str(A.dtype)
    require(dtype in DTYPES, "A.dtype", dtype, f"must be one of {tuple(DTYPES)}")
    require(str(B.dtype) == dtype, "B.dtype", str(B.dtype), f"must equal A.dtype ({dtype})")
    M, K = A.shape
    require(B.shape[0] == K, "B.shape", tuple(B.shape), f"must be (K, N) with K = {K} from A.shape")
    N = B.shape[1]
    for name, v in (("M", M), ("N", N), ("K", K)):
        require(v >= 1, name, v, "must be >= 1")
    require(max(M, N, K) < 2 ** 31, "M, N, K", (M, N, K), "must each be < 2^31")
    if C is None:
        C = cp.empty((M, N), A.dtype)
    require(isinstance(C, cp.ndarray) and tuple(C.shape) == (M, N), "C.shape", getattr(C, "shape", None),
            f"must be (M, N) = {(M, N)}")
    require(str(C.dtype) == dtype, "C.dtype", str(C.dtype), f"must equal A.dtype ({dtype})")
    for name, x in (("A", A), ("B", B), ("C", C)):
        require(bool(x.flags.c_contiguous), f"{name}.flags.c_contiguous", False, "must be C-contiguous")
    return M, N, K, dtype, C


def _copy(fn, chunks: int, args) -> None:
    fn((max(1, min(cdiv(chunks, 256), 16 * sm_count())),), (256,), args)


def pad_into(X, out) -> None:
    """Enqueue ``pad_copy``: ``out`` (drows x dcols, C-contiguous, dcols % 8 == 0) = ``X``
    (rows x cols, C-contiguous, any alignment, rows <= drows, cols <= dcols) in its top-left
    corner and zeros everywhere else. float16 or bfloat16."""
    (rows, cols), (drows, dcols) = X.shape, out.shape
    require(rows <= drows and cols <= dcols, "out.shape", tuple(out.shape), f"must hold X.shape = {(rows, cols)}")
    require(dcols % 8 == 0, "out.shape[1]", dcols, "must be a multiple of 8 (16-byte rows)")
    _copy(_kernels(str(X.dtype), True)["pad_copy"], drows * dcols // 8,
          (X, np.int32(rows), np.int32(cols), np.int64(cols), out, np.int32(drows), np.int32(dcols)))


def unpad_into(src, C) -> None:
    """Enqueue ``unpad_copy``: ``C`` (M x N, C-contiguous, any alignment) = the top-left
    M x N corner of ``src`` (C-contiguous, at least M x N, rows a multiple of 8 elements)."""
    M, N = C.shape
    require(src.shape[0] >= M and src.shape[1] >= N, "src.shape", tuple(src.shape), f"must hold C.shape = {(M, N)}")
    require(src.shape[1] % 8 == 0, "src.shape[1]", src.shape[1], "must be a multiple of 8 (16-byte rows)")
    _copy(_kernels(str(C.dtype), True)["unpad_copy"], cdiv(M * N, 8),
          (src, np.int32(src.shape[1]), C, np.int32(M), np.int32(N)))


def _pad(X, drows, dcols, name):
    """X copied into the scratch buffer ``name`` of drows x dcols (:func:`pad_into`)."""
    buf = scratch(name, (drows, dcols), X.dtype)
    pad_into(X, buf)
    return buf


_EPOCH = [0]


def run(plan: model.Plan, A, B, C) -> None:
    """Enqueue ``plan`` on checked arrays (:func:`check_inputs`): C = A @ B. Every copy
    and every extra launch the plan needs is part of the call (and of its time)."""
    i32 = np.int32
    M, K = A.shape
    N = B.shape[1]
    dtype = str(A.dtype)
    if plan.operands == "hopper":
        return _run_hopper(A, B, C, M, N, K, dtype, plan.splits if plan.schedule == "splitk" else 1, plan.cluster_m)
    fns = _kernels(dtype, plan.operands != "regs")
    cfg = model.CFG
    smem_b, n_threads = smem(cfg), threads(cfg)
    w0 = scratch("w_unused", (4,), np.float32)
    if plan.operands == "padding":               # tile multiples: every guard of the kernel passes
        Mp, Np, Kp = (model.round_up(M, cfg["BM"]), model.round_up(N, cfg["BN"]), model.round_up(K, cfg["BK"]))
        Ap, Bp = _pad(A, Mp, Kp, "padA"), _pad(B, Kp, Np, "padB")
        Cp = scratch("padC", (Mp, Np), A.dtype)
        fns["gemm_any"]((Np // cfg["BN"], Mp // cfg["BM"], 1), (n_threads,),
                        (Ap, Bp, Cp, w0, i32(Mp), i32(Np), i32(Kp), i32(Kp), i32(Np), i32(Np),
                         i32(Kp // cfg["BK"]), i32(0)), shared_mem=smem_b)
        unpad_into(Cp, C)
        return
    Ap, lda, Bp, ldb = A, K, B, N
    if plan.operands == "repack":                # row strides rounded up to 8 elements, only where needed
        if K % 8 or A.data.ptr % 16:
            lda = model.round_up(K, 8)
            Ap = _pad(A, M, lda, "repackA")
        if N % 8 or B.data.ptr % 16:
            ldb = model.round_up(N, 8)
            Bp = _pad(B, K, ldb, "repackB")
    KT = cdiv(K, cfg["BK"])
    shape_args = (i32(M), i32(N), i32(K), i32(lda), i32(ldb), i32(N))
    if plan.schedule == "splitk":
        ranges = model.split_ranges(KT, plan.splits)   # blockIdx.z = z: k-tiles [z * ktps, (z+1) * ktps)
        ktps, s = ranges[0][1], len(ranges)      # s: the splits that hold at least one k-tile
        grid = (cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), s)
        if plan.reduction == "atomic":           # kept zero by splitk_reduce (clear = 1)
            W = scratch("splitk_atomic", (M * N,), np.float32, zero=True)
            fns["gemm_any"](grid, (n_threads,), (Ap, Bp, C, W, *shape_args, i32(ktps), i32(1)), shared_mem=smem_b)
            _copy(fns["splitk_reduce"], M * N, (W, C, i32(M), i32(N), i32(N), i32(1), i32(1)))
        else:
            W = scratch("splitk_twopass", (s * M * N,), np.float32)
            fns["gemm_any"](grid, (n_threads,), (Ap, Bp, C, W, *shape_args, i32(ktps), i32(2)), shared_mem=smem_b)
            _copy(fns["splitk_reduce"], M * N, (W, C, i32(M), i32(N), i32(N), i32(s), i32(0)))
        return
    if plan.schedule == "streamk":
        G = sm_count()
        dp = model.dp_tiles(M, N, plan.policy, G, cfg)
        if dp:                                   # whole tiles 0..dp-1, data-parallel, on a 1-D grid
            fns["gemm_any"]((dp, 1, 1), (n_threads,), (Ap, Bp, C, w0, *shape_args, i32(KT), i32(0)), shared_mem=smem_b)
        W = scratch("sk_w", (G * cfg["BM"] * cfg["BN"],), np.float32)
        flags = scratch("sk_flags", (G,), np.int32, zero=True)
        _EPOCH[0] = _EPOCH[0] % (2 ** 31 - 1) + 1       # flags equal to this launch's epoch are this launch's
        fns["gemm_streamk"]((G,), (n_threads,), (Ap, Bp, C, W, flags, *shape_args, i32(dp), i32(_EPOCH[0])),
                            shared_mem=smem_b)
        return
    fns["gemm_any"]((cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), 1), (n_threads,),
                    (Ap, Bp, C, w0, *shape_args, i32(KT), i32(0)), shared_mem=smem_b)


HOPPER: dict = {}                   # dtype -> catalog key of the kernel the "hopper" strategies run (use_hopper)
_HOPPER_LAUNCH: dict = {}
_HOPPER_SPLITK: dict = {}
_HOPPER_SPLITK_ARGS: dict = {}      # prepared launch arguments (the arrays they point to stay alive in them)


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


def clear_prepared() -> None:
    """Forget the prepared arguments of Hopper split-K launches (the next call builds its
    tensor maps again): the control of a measurement of what that preparation saves."""
    _HOPPER_SPLITK_ARGS.clear()


def hopper_splitk_build(dtype: str, cluster_m: int = 1) -> tuple:
    """The Hopper kernel (:data:`HOPPER`) built for split-K: its catalog configuration with
    the direct epilogue (EPI_TMA=0), CLUSTER_M = ``cluster_m`` and SPLIT_K=1, which adds the
    arguments (W, splits) and stores fp32 partial tiles. Not a catalog entry: alone it
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


def _run_hopper(A, B, C, M, N, K, dtype, splits: int = 1, cluster_m: int = 1) -> None:
    """The Hopper kernel (:data:`HOPPER`) on any shape: A and B copied (where needed) into C-contiguous
    buffers with K and N rounded up to 8 (the padding is zero, so it adds nothing), the
    kernel on (M, N8, K8) (TMA zero-fills the M, N and K tails of its tiles), C copied out
    of an M x N8 buffer when N % 8 != 0 or C is not 16-byte aligned. With ``splits`` > 1:
    split-K on its ``cluster_m`` build (:func:`hopper_splitk_build`), a persistent grid over
    tiles x splits units, fp32 slabs W[z][M][N8], then the deterministic ``splitk_reduce``."""
    fns = _kernels(dtype, True)
    k8, n8 = model.round_up(K, 8), model.round_up(N, 8)
    Ap = A if (k8 == K and A.data.ptr % 16 == 0) else _pad(A, M, k8, "hopA")
    Bp = B if (k8 == K and n8 == N and B.data.ptr % 16 == 0) else _pad(B, k8, n8, "hopB")
    direct = n8 == N and C.data.ptr % 16 == 0
    Cp = C if direct else scratch("hopC", (M, n8), C.dtype)
    shape = (M, n8, k8)
    if splits > 1:
        # Everything but the two launches is prepared once per (arrays, shape, splits): at
        # 1024 x 1024 x 16384 the GPU needs ~60 us, about what rebuilding three tensor-map
        # arguments and their checks in Python costs (scripts/splitk_clusters.py measures both).
        key = (dtype, cluster_m, Ap.data.ptr, Bp.data.ptr, Cp.data.ptr, shape, splits)
        if key not in _HOPPER_SPLITK_ARGS:
            spec, p, fn, smem_b = hopper_splitk_build(dtype, cluster_m)
            cl, sms = p["CLUSTER_M"], sm_count()
            units = cdiv(cdiv(M, 128), cl) * cdiv(n8, 256) * splits     # (tile, k range) pairs, per cluster
            W = scratch("hopW", (splits * M * n8,), np.float32)
            red = (W, Cp, np.int32(M), np.int32(n8), np.int32(n8), np.int32(splits), np.int32(0))
            _HOPPER_SPLITK_ARGS[key] = (fn, (max(cl, min(sms - sms % cl, units * cl)),), smem_b,
                                        spec.args(p, Ap, Bp, Cp, M, n8, k8, W, np.int32(splits)), red)
            while len(_HOPPER_SPLITK_ARGS) > 8:     # they hold their arrays: keep the last few only
                _HOPPER_SPLITK_ARGS.pop(next(iter(_HOPPER_SPLITK_ARGS)))
        fn, grid, smem_b, args, red = _HOPPER_SPLITK_ARGS[key]
        fn(grid, (384,), args, shared_mem=smem_b)
        _copy(fns["splitk_reduce"], M * n8, red)
    else:
        if (dtype, shape) not in _HOPPER_LAUNCH:
            _HOPPER_LAUNCH[(dtype, shape)] = launch.prepare(HOPPER[dtype], shape)
        _HOPPER_LAUNCH[(dtype, shape)](Ap, Bp, Cp, M, n8, k8)
    if not direct:
        unpad_into(Cp, C)


# ------------------------------------------------------------------ strategies and the dispatcher
STRATEGIES = ("auto", "dp", "regs", "repack", "padding", "splitk", "splitk_atomic", "streamk", "streamk_sk",
              "hopper", "hopper_splitk")


def plan_for(strategy: str, M: int, N: int, K: int, aligned: bool, sms: int | None = None) -> model.Plan:
    """The :class:`~helpers.models.anyshape.Plan` of a named strategy for this shape.

    "auto": the dispatcher (:func:`helpers.models.anyshape.plan`); "dp": data-parallel, A and
    B read in place if ``aligned`` else repacked; "regs", "repack", "padding": data-parallel
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
    if strategy in ("regs", "repack", "padding"):
        return model.Plan(operands=strategy, reason=f"{strategy}, data-parallel (asked for)")
    if strategy.startswith("splitk"):
        s = max(2, model.choose_splits(M, N, K, sms)[0])
        red = "atomic" if strategy == "splitk_atomic" else "twopass"
        return model.Plan(operands=ops, schedule="splitk", splits=s, reduction=red, reason=f"split-K {s} (asked for)")
    if strategy.startswith("streamk"):
        pol = "sk" if strategy == "streamk_sk" else "hybrid2"
        return model.Plan(operands=ops, schedule="streamk", policy=pol, reason=f"stream-K {pol} (asked for)")
    if strategy == "hopper":
        return model.Plan(operands="hopper", reason="chapter 10's TMA + wgmma kernel after a repack (asked for)")
    if strategy == "hopper_splitk":
        s = max(2, model.choose_splits(M, model.round_up(N, 8), model.round_up(K, 8), sms, model.HOPPER_CFG)[0])
        return model.Plan(operands="hopper", schedule="splitk", splits=s,
                          reason=f"chapter 10's kernel, split-K {s} with fp32 partials (asked for)")
    return model.Plan(operands=ops, reason="data-parallel (asked for)")


def can_run(strategy: str) -> str | None:
    """None if this GPU can run ``strategy``; otherwise why not, in words."""
    if not gpu.live():
        return "no GPU here"
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
    """
    M, N, K, dtype, C = check_inputs(A, B, out)
    why_not = can_run(strategy)
    require(why_not is None, "strategy", strategy, f"cannot run here: {why_not}")
    p = plan_for(strategy, M, N, K, aligned_inputs(A, B))
    if verbose:
        print(f"{M} x {N} x {K} {dtype}: {p.name} -- {p.reason}")
    run(p, A, B, C)
    return C
