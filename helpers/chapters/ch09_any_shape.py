"""Chapter 9, any shape: predication and padding, split-K, stream-K, and a dispatcher
(kernels/09_any_shape.cu, sm_80 or newer).

The catalog entries (the predicated kernel, cp.async and register builds), the
runner that turns a :class:`helpers.models.anyshape.Plan` into launches, the
dispatcher :func:`gemm`, and the measurements the notebook shows (strategies side
by side, reproducibility, waves and their control, the shape zoo). Live, each
measurement checks every strategy against a float64 reference after a NaN poison
and times it against cuBLAS on the same inputs in alternating rounds; without a
GPU (or on one older than sm_80) the notebook reads ``results/h200-anyshape.json``
(written by ``scripts/record_anyshape.py``), labelled as recorded.

This module is over 500 lines because it holds one chapter column whose parts share
state: the runner's compiled builds and workspaces are used by the dispatcher, by the
six live measurements and by the notebook's displays; split, they would import each
other.
"""
from __future__ import annotations

import functools

import numpy as np

import ipywidgets as w

from helpers.figures import anyshape as fig, show
from helpers.models import anyshape as model
from helpers.models.raster import cdiv
from helpers.runtime import bench, catalog, checks, compile as kc, gpu, launch, probes, results, timing, verify
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of, require

FILE = "09_any_shape.cu"
ENTRIES = ("gemm_any", "gemm_streamk", "splitk_reduce", "pad_copy", "unpad_copy")
DTYPES = {"float16": ("f16", {}), "bfloat16": ("bf16", {"BF16": 1})}
MIN_CC = (8, 0)                     # cp.async, bf16 and mma.sync.m16n8k16
H200_SMS = 132                      # the recorded GPU's SM count (plans without a GPU here)


def _threads(p) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _smem(p) -> int:
    """Dynamic shared memory (bytes): STAGES ring of A (BM x BK) and B (BK x BN) tiles, 2 bytes each."""
    return p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2


def _rules(p, s, aligned: bool = True):
    M, N, K = s
    out = [(p["BK"] in (32, 64), "BK", p["BK"], "must be 32 or 64 (static_assert in the kernel)"),
           (p["STAGES"] >= 3, "STAGES", p["STAGES"], "must be >= 3 (static_assert in the kernel)"),
           (max(M, N, K) < 2 ** 31, "M, N, K", (M, N, K), "must each be < 2^31 (32-bit tile coordinates)")]
    if aligned:
        out += [multiple_of("K", K, 8, "cp.async moves 16-byte chunks: A's row pitch must be a multiple of 8 "
                            "elements (the any_regs build or ch9.gemm take any K)"),
                multiple_of("N", N, 8, "cp.async moves 16-byte chunks: B's row pitch must be a multiple of 8 "
                            "elements (the any_regs build or ch9.gemm take any N)")]
    return out


_SCRATCH: dict = {}


def _scratch(name: str, shape, dtype, zero: bool = False):
    """A device buffer kept between calls (allocating is not part of a GEMM's time)."""
    cp = gpu.cupy()
    key = (name, tuple(shape), np.dtype(dtype).str)
    if key not in _SCRATCH:
        _SCRATCH[key] = cp.zeros(shape, dtype) if zero else cp.empty(shape, dtype)
    return _SCRATCH[key]


def _args(p, A, B, C, M, N, K, *extra):
    """gemm_any's arguments for one data-parallel launch on C-contiguous arrays:
    (A, B, C, W, M, N, K, lda = K, ldb = N, ldc = N, k-tiles per split = all, mode 0)."""
    i = np.int32
    return (A, B, C, _scratch("w_unused", (4,), np.float32), i(M), i(N), i(K), i(K), i(N), i(N),
            i(cdiv(K, p["BK"])), i(0))


_CHOICES = {"BK": (32, 64), "STAGES": (3, 4), "GROUP_M": (1, 8, 16)}
for _dt, (_sfx, _fixed) in DTYPES.items():
    for _name, _aligned, _title in (("any_shape", 1, "9: predicated mma.sync (cp.async, zero fill)"),
                                     ("any_regs", 0, "9: predicated mma.sync (loads through registers)")):
        register(Kernel(
            key=f"{_name}_{_sfx}", chapter=9, title=f"{_title} ({_sfx})", file=FILE, entry="gemm_any", op="gemm",
            dtype=_dt, out_dtype=_dt, align=16 if _aligned else 2, defaults=dict(model.CFG),
            fixed={**_fixed, "ALIGNED": _aligned}, choices=_CHOICES,
            block=lambda p: (_threads(p), 1, 1), grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
            smem=_smem, rules=functools.partial(_rules, aligned=bool(_aligned)), min_cc=MIN_CC, args=_args))


def key(dtype: str = "float16", aligned: bool = True) -> str:
    """Catalog key of the predicated kernel: "any_shape_f16" (cp.async build) or "any_regs_f16"."""
    return f"{'any_shape' if aligned else 'any_regs'}_{DTYPES[dtype][0]}"


# ------------------------------------------------------------------ the runner
_BUILDS: dict = {}


def _kernels(dtype: str, aligned: bool) -> dict:
    """The five entry points of one build (one NVRTC compile), shared memory opted in."""
    k = (dtype, bool(aligned))
    if k not in _BUILDS:
        p = {**model.CFG, **DTYPES[dtype][1], "ALIGNED": int(aligned)}
        fns = kc.build_all(FILE, ENTRIES, p)
        for e in ("gemm_any", "gemm_streamk"):
            fns[e].max_dynamic_shared_size_bytes = _smem(model.CFG)
        _BUILDS[k] = fns
    return _BUILDS[k]


def _sms() -> int:
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
    fn((max(1, min(cdiv(chunks, 256), 16 * _sms())),), (256,), args)


def _pad(fns, X, rows, cols, drows, dcols, name):
    """X (rows x cols, any alignment) copied into a zeroed drows x dcols buffer (dcols % 8 == 0)."""
    buf = _scratch(name, (drows, dcols), X.dtype)
    _copy(fns["pad_copy"], drows * dcols // 8, (X, np.int32(rows), np.int32(cols), np.int64(cols), buf,
                                                np.int32(drows), np.int32(dcols)))
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
        return _run_hopper(A, B, C, M, N, K, dtype)
    fns = _kernels(dtype, plan.operands != "regs")
    cfg = model.CFG
    smem, threads = _smem(cfg), _threads(cfg)
    w0 = _scratch("w_unused", (4,), np.float32)
    if plan.operands == "padding":               # tile multiples: every guard of the kernel passes
        Mp, Np, Kp = (model.round_up(M, cfg["BM"]), model.round_up(N, cfg["BN"]), model.round_up(K, cfg["BK"]))
        Ap, Bp = _pad(fns, A, M, K, Mp, Kp, "padA"), _pad(fns, B, K, N, Kp, Np, "padB")
        Cp = _scratch("padC", (Mp, Np), A.dtype)
        fns["gemm_any"]((Np // cfg["BN"], Mp // cfg["BM"], 1), (threads,),
                        (Ap, Bp, Cp, w0, i32(Mp), i32(Np), i32(Kp), i32(Kp), i32(Np), i32(Np),
                         i32(Kp // cfg["BK"]), i32(0)), shared_mem=smem)
        _copy(fns["unpad_copy"], M * cdiv(N, 8), (Cp, i32(Np), C, i32(M), i32(N), np.int64(N)))
        return
    Ap, lda, Bp, ldb = A, K, B, N
    if plan.operands == "repack":                # row strides rounded up to 8 elements, only where needed
        if K % 8 or A.data.ptr % 16:
            lda = model.round_up(K, 8)
            Ap = _pad(fns, A, M, K, M, lda, "repackA")
        if N % 8 or B.data.ptr % 16:
            ldb = model.round_up(N, 8)
            Bp = _pad(fns, B, K, N, K, ldb, "repackB")
    KT = cdiv(K, cfg["BK"])
    shape_args = (i32(M), i32(N), i32(K), i32(lda), i32(ldb), i32(N))
    if plan.schedule == "splitk":
        ktps = cdiv(KT, plan.splits)
        s = cdiv(KT, ktps)                       # splits that hold at least one k-tile
        grid = (cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), s)
        if plan.reduction == "atomic":           # kept zero by splitk_reduce (clear = 1)
            W = _scratch("splitk_atomic", (M * N,), np.float32, zero=True)
            fns["gemm_any"](grid, (threads,), (Ap, Bp, C, W, *shape_args, i32(ktps), i32(1)), shared_mem=smem)
            _copy(fns["splitk_reduce"], M * N, (W, C, i32(M), i32(N), i32(N), i32(1), i32(1)))
        else:
            W = _scratch("splitk_twopass", (s * M * N,), np.float32)
            fns["gemm_any"](grid, (threads,), (Ap, Bp, C, W, *shape_args, i32(ktps), i32(2)), shared_mem=smem)
            _copy(fns["splitk_reduce"], M * N, (W, C, i32(M), i32(N), i32(N), i32(s), i32(0)))
        return
    if plan.schedule == "streamk":
        G = _sms()
        dp = model.dp_tiles(M, N, plan.policy, G, cfg)
        if dp:                                   # whole tiles 0..dp-1, data-parallel, on a 1-D grid
            fns["gemm_any"]((dp, 1, 1), (threads,), (Ap, Bp, C, w0, *shape_args, i32(KT), i32(0)), shared_mem=smem)
        W = _scratch("sk_w", (G * cfg["BM"] * cfg["BN"],), np.float32)
        flags = _scratch("sk_flags", (G,), np.int32, zero=True)
        _EPOCH[0] = _EPOCH[0] % (2 ** 31 - 1) + 1       # flags equal to this launch's epoch are this launch's
        fns["gemm_streamk"]((G,), (threads,), (Ap, Bp, C, W, flags, *shape_args, i32(dp), i32(_EPOCH[0])),
                            shared_mem=smem)
        return
    fns["gemm_any"]((cdiv(N, cfg["BN"]), cdiv(M, cfg["BM"]), 1), (threads,),
                    (Ap, Bp, C, w0, *shape_args, i32(KT), i32(0)), shared_mem=smem)


HOPPER = {"float16": "hopper_r5_tma_store_f16", "bfloat16": "hopper_r5_tma_store_bf16"}
_HOPPER_LAUNCH: dict = {}


def _run_hopper(A, B, C, M, N, K, dtype) -> None:
    """Chapter 10's last rung on any shape: A and B copied (where needed) into C-contiguous
    buffers with K and N rounded up to 8 (the padding is zero, so it adds nothing), the
    kernel on (M, N8, K8) (TMA zero-fills the M, N and K tails of its tiles), C copied out
    of an M x N8 buffer when N % 8 != 0 or C is not 16-byte aligned."""
    fns = _kernels(dtype, True)
    k8, n8 = model.round_up(K, 8), model.round_up(N, 8)
    Ap = A if (k8 == K and A.data.ptr % 16 == 0) else _pad(fns, A, M, K, M, k8, "hopA")
    Bp = B if (k8 == K and n8 == N and B.data.ptr % 16 == 0) else _pad(fns, B, K, N, k8, n8, "hopB")
    direct = n8 == N and C.data.ptr % 16 == 0
    Cp = C if direct else _scratch("hopC", (M, n8), C.dtype)
    shape = (M, n8, k8)
    if (dtype, shape) not in _HOPPER_LAUNCH:
        _HOPPER_LAUNCH[(dtype, shape)] = launch.prepare(HOPPER[dtype], shape)
    _HOPPER_LAUNCH[(dtype, shape)](Ap, Bp, Cp, M, n8, k8)
    if not direct:
        _copy(fns["unpad_copy"], M * cdiv(N, 8), (Cp, np.int32(n8), C, np.int32(M), np.int32(N), np.int64(N)))


# ------------------------------------------------------------------ strategies and the dispatcher
STRATEGIES = ("auto", "dp", "regs", "repack", "padding", "splitk", "splitk_atomic", "streamk", "streamk_sk",
              "hopper")


def plan_for(strategy: str, M: int, N: int, K: int, aligned: bool, sms: int | None = None) -> model.Plan:
    """The :class:`~helpers.models.anyshape.Plan` of a named strategy for this shape.

    "auto": the dispatcher (:func:`helpers.models.anyshape.plan`); "dp": data-parallel, A and
    B read in place if ``aligned`` else repacked; "regs", "repack", "padding": data-parallel
    with that operand path; "splitk" / "splitk_atomic": the model's split count (at least 2),
    two-pass or atomic; "streamk": CUTLASS's hybrid (whole waves but one data-parallel),
    "streamk_sk": every tile streamed; "hopper": chapter 10's rung 5 (sm_90 only).
    Raises ValueError for an unknown name."""
    require(strategy in STRATEGIES, "strategy", strategy, f"must be one of {STRATEGIES}")
    sms = sms or _sms()
    if strategy == "auto":
        return model.plan(M, N, K, aligned=aligned, sms=sms)
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
    return model.Plan(operands=ops, reason="data-parallel (asked for)")


def can_run(strategy: str) -> str | None:
    """None if this GPU can run ``strategy``; otherwise why not, in words."""
    if not gpu.live():
        return "no GPU here"
    cc = gpu.capability()                 # GEMM_BOOK_SIMULATE can force it down on a real GPU
    if strategy == "hopper":
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


# ------------------------------------------------------------------ measurements (live) and records (recorded)
def _inputs(M: int, N: int, K: int, dtype: str, offsets=(0, 0, 0)):
    """Random A (M, K), B (K, N) and an output C (M, N), each starting ``offsets[i]``
    elements into its buffer (1 gives a base pointer that is only 2-byte aligned)."""
    cp = gpu.cupy()

    def mat(rows, cols, off, fill):
        buf = verify.random_matrix((rows * cols + off,), dtype) if fill else \
            cp.empty((rows * cols + off,), verify.np_dtype(dtype))
        return buf[off:].reshape(rows, cols)
    return mat(M, K, offsets[0], True), mat(K, N, offsets[1], True), mat(M, N, offsets[2], False)


def _record(name, p, dtype, shape, offsets, **kw) -> dict:
    title = (f"auto: {p.name}" if name == "auto" else p.name) if p else name
    return results.Record(chapter=9, kernel=f"any:{name}", title=title,
                          params={"strategy": name, "offsets": list(offsets)}, dtype=dtype, shape=list(shape),
                          metric="TFLOP/s", reference="cuBLAS", note=p.reason if p else kw.pop("note", None),
                          **{"value": None, "reference_value": None, "ratio": None, "rel_err": None, **kw}).as_dict()


def measure(strategies, shape, dtype: str = "float16", offsets=(0, 0, 0), rounds: int = 3,
            budget_ms: float = 300.0, check_only: bool = False) -> list:
    """Check and time each of ``strategies`` (names of :data:`STRATEGIES`, or
    :class:`~helpers.models.anyshape.Plan` objects) on one shape, live.

    Fresh random inputs (``offsets``: see :func:`_inputs`), a float64 reference; for each
    strategy C is NaN-poisoned, computed, checked (:class:`helpers.runtime.verify.WrongResult`
    if wrong), then timed against cuBLAS on the same inputs in ``rounds`` alternating rounds.
    Returns records (the results contract): ``value`` TFLOP/s, ``reference_value`` cuBLAS
    TFLOP/s, ``ratio``, ``rel_err``, ``ms``, ``note`` (the plan's reason); a strategy this GPU
    cannot run has ``value`` None and a ``note`` saying why. ``check_only``: no timing.
    Raises ValueError (bad strategy or shape) before any launch, RuntimeError without a GPU.
    """
    M, N, K = (int(x) for x in shape)
    for n in strategies:
        require(isinstance(n, model.Plan) or n in STRATEGIES, "strategy", n, f"must be a Plan or one of {STRATEGIES}")
    checks.require_all(checks.positive_int(n, v) for n, v in zip("MNK", (M, N, K)))
    A, B, C = _inputs(M, N, K, dtype, offsets)
    ref = verify.reference_gemm(A, B)
    al = aligned_inputs(A, B)
    blas = timing.cublas_gemm(A, B, gpu.cupy().empty((M, N), verify.np_dtype(dtype)))
    fl = timing.gemm_flops(M, N, K)
    out = []
    for item in strategies:
        name = "plan" if isinstance(item, model.Plan) else item
        why = can_run("hopper" if name == "plan" and item.operands == "hopper" else name)
        if why:
            out.append(_record(name, None, dtype, (M, N, K), offsets, note=why, source="live"))
            continue
        p = item if name == "plan" else plan_for(name, M, N, K, al)
        fn = lambda: run(p, A, B, C)          # noqa: E731
        verify.poison(C)
        fn()
        err = verify.check(C, ref, dtype, what=f"{name} ({p.name}) at {M} x {N} x {K}, offsets {offsets}")
        if check_only:
            out.append(_record(name, p, dtype, (M, N, K), offsets, rel_err=err, source="live"))
            continue
        t = timing.time_pair(fn, blas, rounds=rounds, budget_ms=budget_ms)
        tf, rtf = timing.tflops(fl, t["ms"]), timing.tflops(fl, t["ref_ms"])
        out.append(_record(name, p, dtype, (M, N, K), offsets, value=bench.sig(tf), reference_value=bench.sig(rtf),
                           ratio=bench.sig(tf / rtf, 4), rel_err=err, ms=bench.sig(t["ms"]), repeats=t["n"],
                           rounds=rounds, source="live"))
    return out


def recorded(section: str) -> tuple[list | dict | None, str]:
    """A section of ``results/h200-anyshape.json`` (written by scripts/record_anyshape.py)
    with its rows marked ``source="recorded"``, and where it came from. (None, where) when
    not recorded."""
    doc = results.artifact("anyshape")
    where = results.artifact_where(doc, "anyshape")
    data = (doc or {}).get(section)
    if isinstance(data, list):
        data = [{**r, "source": "recorded"} if isinstance(r, dict) else r for r in data]
    return data, where


def live_here() -> bool:
    """True when this GPU can run the chapter's kernels (sm_80 or newer)."""
    return gpu.live() and can_run("dp") is None


# The shapes of the correctness grid: small, odd, tall and skinny, every permutation
# of 64/128/256, misaligned bases (offsets in elements of A, B, C) and odd leading dimensions.
CHECK_GRID = ([((1, 1, 1), (0, 0, 0)), ((35, 79, 19), (0, 0, 0)), ((100, 100, 100), (0, 0, 0)),
               ((127, 127, 127), (0, 0, 0)), ((128, 128, 128), (0, 0, 0)), ((129, 129, 129), (0, 0, 0)),
               ((1000, 1001, 1002), (0, 0, 0)), ((30000, 64, 64), (0, 0, 0)), ((4093, 4093, 4093), (0, 0, 0))]
              + [((a, b, c), (0, 0, 0)) for a, b, c in
                 ((64, 128, 256), (64, 256, 128), (128, 64, 256), (128, 256, 64), (256, 64, 128), (256, 128, 64))]
              + [((257, 263, 271), (1, 1, 1)), ((300, 264, 136), (1, 0, 1)), ((200, 136, 264), (0, 3, 0)),
                 ((4093, 4093, 4093), (1, 1, 1))])


def check_grid(dtypes=("float16", "bfloat16"), strategies=None, grid=None) -> list:
    """Every strategy on every shape of :data:`CHECK_GRID`, checked against float64 (no
    timing). Live only; returns one row per (dtype, shape, offsets): strategies passed and
    the largest relative error. A wrong result raises WrongResult."""
    strategies = strategies or [s for s in STRATEGIES if can_run(s) is None]
    rows = []
    for dt in dtypes:
        for shape, offs in (grid or CHECK_GRID):
            recs = measure(strategies, shape, dt, offs, check_only=True)
            ran = [r for r in recs if r.get("rel_err") is not None]
            rows.append({"dtype": dt, "M x N x K": " x ".join(map(str, shape)), "offsets (A, B, C)": str(offs),
                         "strategies checked": len(ran),
                         "max rel. error": max(r["rel_err"] for r in ran),
                         "tolerance": verify.TOLERANCE[dt]})
    return rows


SPLITK_SHAPES = ((512, 512, 32768), (256, 256, 65536), (1024, 1024, 16384))


def splitk_rows(dtype: str = "float16", shapes=SPLITK_SHAPES, rounds: int = 3) -> list:
    """Live: on each shape the kernel without split-K, and split-K at the model's split count
    with the two-pass and the atomic reduction, and the two-pass one at half and twice the
    model's count. Records gain ``over_no_split`` (speed over the unsplit kernel, same run)
    and ``splits``."""
    out = []
    for shape in shapes:
        M, N, K = shape
        s = max(2, model.choose_splits(M, N, K, _sms())[0])
        items = ["dp", "splitk", "splitk_atomic"] + [
            model.Plan(schedule="splitk", splits=x, reason=f"split-K {x}: the model's {s} {'halved' if x < s else 'doubled'}")
            for x in (s // 2, 2 * s) if x >= 2]
        recs = measure(items, shape, dtype, rounds=rounds)
        base = recs[0]["value"]
        for r, it in zip(recs, items):
            p = it if isinstance(it, model.Plan) else plan_for(it, M, N, K, True)
            out.append({**r, "splits": p.splits, "over_no_split": bench.sig(r["value"] / base, 3) if r["value"] else None})
    return out


def reproducibility(shapes=SPLITK_SHAPES, dtypes=("float16", "bfloat16"), runs: int = 10) -> list:
    """Live: the two split-K reductions ``runs`` times on the same inputs, per shape and dtype;
    per reduction, how many elements and bits of C differ from run 0 (min and max over runs
    1..). The two-pass sum has a fixed order, so it must differ nowhere; the atomic order
    follows the order in which blocks finish."""
    cp = gpu.cupy()
    rows = []
    for dtype in dtypes:
        for M, N, K in shapes:
            A, B, C = _inputs(M, N, K, dtype)
            s = max(2, model.choose_splits(M, N, K, _sms())[0])
            for red in ("twopass", "atomic"):
                p = model.Plan(schedule="splitk", splits=s, reduction=red)
                outs = []
                for _ in range(runs):
                    verify.poison(C)
                    run(p, A, B, C)
                    outs.append(C.view(cp.uint16).copy())
                elems = [int((o != outs[0]).sum()) for o in outs[1:]]
                bits = [int(cp.unpackbits((o ^ outs[0]).view(cp.uint8)).sum()) for o in outs[1:]]
                rows.append({"dtype": dtype, "M x N x K": f"{M} x {N} x {K}", "reduction": red, "splits": s,
                             "runs": runs, "elements differing from run 0 (min-max)": f"{min(elems)}-{max(elems)} of {M * N}",
                             "bits differing (min-max)": f"{min(bits)}-{max(bits)}", "bitwise identical": max(elems) == 0})
    return rows


STREAMK_SHAPES = ((2176, 4096, 8192), (4096, 4096, 4096), (8192, 8192, 8192))


def streamk_rows(dtype: str = "float16", shapes=STREAMK_SHAPES, rounds: int = 5) -> list:
    """Live: data-parallel, the stream-K hybrid (whole waves but one data-parallel), pure
    stream-K and the dispatcher, each against cuBLAS; ``over_dp``: speed over the
    data-parallel kernel with the same tile, same run."""
    out = []
    for shape in shapes:
        recs = measure(["dp", "streamk", "streamk_sk", "auto"], shape, dtype, rounds=rounds)
        base = recs[0]["value"]
        out += [{**r, "over_dp": bench.sig(r["value"] / base, 3)} for r in recs]
    return out


WAVE_TILE_ROWS = (8, 9, 12, 16, 17, 20, 24, 25, 33, 34)    # tile rows of 128 at N = 4096: 16 tiles each
CONTROL_TILES = (8, 16, 33, 66, 99, 132)


def wave_rows(dtype: str = "float16", n: int = 4096, k: int = 8192, tile_rows=WAVE_TILE_ROWS,
              control=CONTROL_TILES, rounds: int = 3) -> dict:
    """Live: wave quantization and its control.

    ``sweep``: M = 128 r for each r of ``tile_rows`` (16 r tiles at N = 4096), K = ``k``:
    the data-parallel kernel and the stream-K hybrid, with the naive model's efficiency
    (:func:`helpers.models.anyshape.waves`). ``control``: ONE wave of b tiles (M = 128,
    N = 256 b, the same K), checked, then timed alone, back to back for 1.5 s (no cuBLAS
    in between, so the sampled clock is the kernel's): with a fixed clock its time would
    not depend on b; the SM clock and board power are sampled meanwhile (nvidia-smi, read
    only). Returns
    ``{"sweep": [...], "control": [...], "sms": ...}``.
    """
    sms = _sms()
    sweep = []
    for r in tile_rows:
        shape = (128 * r, n, k)
        recs = measure(["dp", "streamk"], shape, dtype, rounds=rounds)
        w = model.waves(model.tiles(128 * r, n), sms)
        sweep.append({"M": 128 * r, "tiles": model.tiles(128 * r, n), **{f"model_{a}": b for a, b in w.items()},
                      "dp_TFLOPs": recs[0]["value"], "streamk_TFLOPs": recs[1]["value"],
                      "cublas_TFLOPs": recs[0]["reference_value"]})
    ctl = []
    for b in (x for x in control if x <= sms):
        M, N, K = 128, 256 * b, k
        A, B, C = _inputs(M, N, K, dtype)
        p = model.Plan(reason="one wave")
        verify.poison(C)
        run(p, A, B, C)
        verify.check(C, verify.reference_gemm(A, B), dtype, what=f"control wave of {b} tiles")
        fn = lambda: run(p, A, B, C)          # noqa: E731
        with probes.PowerSampler() as ps:     # the kernel alone, back to back: the clock it gets
            t = timing.time_ms(fn, budget_ms=1500.0, max_repeat=20000)
        clk = ps.summary() or {}
        ctl.append({"busy SMs": b, "ms": bench.sig(t["ms"]), "TFLOP/s per SM":
                    bench.sig(timing.tflops(timing.gemm_flops(M, N, K), t["ms"]) / b, 4),
                    "SM clock (MHz, median)": clk.get("clock_MHz_median"), "power (W, median)": clk.get("power_W_median")})
    return {"sweep": sweep, "control": ctl, "sms": sms, "dtype": dtype, "K": k, "N": n}


ZOO_OUT = ((64, 64), (256, 256), (1000, 1001), (2176, 4096), (4093, 4093), (30000, 64), (64, 30000), (8192, 8192))
ZOO_K = (64, 1002, 4093, 16384)
ZOO_SMALL = (((256, 256), (1000, 1001), (4093, 4093)), (64, 4093))


def candidates(M: int, N: int, K: int, aligned: bool) -> list:
    """The strategies the zoo compares with the dispatcher's choice on one shape."""
    ops = ["dp"] if aligned else ["regs", "repack", "padding"]
    out = ["auto"] + ops + ["splitk", "streamk"]
    return out + (["hopper"] if can_run("hopper") is None else [])


def zoo(outs=ZOO_OUT, ks=ZOO_K, dtype: str = "float16", rounds: int = 3, budget_ms: float = 150.0) -> list:
    """Live: every (M, N) of ``outs`` times every K of ``ks``, each candidate strategy
    (:func:`candidates`) checked and timed against cuBLAS. One row per shape: the
    dispatcher's plan, its ratio to cuBLAS, the fastest other strategy and whether the
    dispatcher's ratio was within 3 % of that strategy's (the run-to-run noise of this GPU;
    see :func:`zoo_row`)."""
    rows = []
    for M, N in outs:
        for K in ks:
            recs = measure(candidates(M, N, K, (K % 8 == 0 and N % 8 == 0)), (M, N, K), dtype, rounds=rounds,
                           budget_ms=budget_ms)
            rows.append(zoo_row(recs))
    return rows


def zoo_row(recs: list) -> dict:
    """One zoo cell from its records: the dispatcher's ("auto") record against the others."""
    auto = next(r for r in recs if r["params"]["strategy"] == "auto")
    plan = auto["title"].removeprefix("auto: ")
    # Other strategies: the sm_80 family's records whose plan differs from the dispatcher's.
    # The candidate that runs the same plan is the same launch measured twice: its spread
    # is the noise of the measurement (kept as "same plan again"), not a competitor.
    others = [r for r in recs if r["params"]["strategy"] not in ("auto", "hopper") and r.get("ratio")
              and r["title"] != plan]
    twin = next((r for r in recs if r["params"]["strategy"] not in ("auto", "hopper") and r["title"] == plan), None)
    best = max(others, key=lambda r: r["ratio"])     # ratios: each against cuBLAS in its own rounds
    hop = next((r for r in recs if r["params"]["strategy"] == "hopper" and r.get("ms")), None)
    return {"M": auto["shape"][0], "N": auto["shape"][1], "K": auto["shape"][2], "dtype": auto["dtype"],
            "plan": plan, "reason": auto.get("note"), "ratio": auto["ratio"], "TFLOP/s": auto["value"],
            "cuBLAS TFLOP/s": auto["reference_value"], "best other": best["title"], "best other ratio": best["ratio"],
            "within 3% of best": auto["ratio"] >= 0.97 * best["ratio"],
            "same plan again": twin["ratio"] if twin else None,
            "hopper ratio": hop["ratio"] if hop else None, "records": recs}


# ------------------------------------------------------------------ notebook calls
def _get(section: str, live_fn, title: str, live: bool = True):
    """Live measurement when this GPU runs sm_80 kernels (and ``live``), else the recorded
    section. Returns (data, where); when there is neither, shows a note and returns (None, where)."""
    if live and live_here():
        return live_fn(), results.where(True)
    data, where = recorded(section)
    if live and gpu.live():
        where += f" (not live: {can_run('dp')})"
    if not data:
        show.note(f"{title}: {where}.", title=title)
        return None, where
    return data, where


def odd_shapes(dtypes=("float16", "bfloat16")) -> list:
    """Live: per dtype, the aligned kernel at 4096^3 and every operand path at 4093^3 (plus
    chapter 10's kernel after a repack where the GPU runs it). Records gain ``of_aligned``
    (speed over the aligned kernel at 4096^3, same run)."""
    out = []
    for dt in dtypes:
        al = measure(["dp"], (4096, 4096, 4096), dt)[0]
        odd = measure(["regs", "repack", "padding", "auto", "hopper"], (4093, 4093, 4093), dt)
        out += [al] + [{**r, "of_aligned": bench.sig(r["value"] / al["value"], 3) if r.get("value") else None}
                       for r in odd]
    return out


_COLS = {"dtype": "dtype", "title": "strategy", "shape": "M, N, K", "value": "TFLOP/s", "reference_value": "cuBLAS",
         "ratio": "ratio to cuBLAS", "rel_err": "rel. error"}


def show_odd_shapes() -> list:
    """Table and bars: the three ways to take any shape at 4093^3 against the aligned kernel."""
    recs, where = _get("odd", odd_shapes, "Any shape")
    if not recs:
        return []
    show.table(recs, {**_COLS, "of_aligned": "of aligned 4096^3", "note": "why / plan"},
               f"Any shape at 4093^3 beside the aligned kernel at 4096^3; ratios to cuBLAS on the same shape, same "
               f"run; {where}.")
    show.figure(fig.strategy_figure([r for r in recs if r.get("ratio")], where))
    return recs


def show_check_grid() -> None:
    """The correctness grid: live, every strategy on the shapes of :data:`CHECK_GRID` under
    4000 (the 4093^3 cases are in the recorded grid and the GPU suite); recorded, all of it."""
    rows, where = _get("check_grid", lambda: check_grid(grid=[c for c in CHECK_GRID if max(c[0]) < 4000]),
                       "Correctness")
    if not rows:
        return
    show.table(rows, list(rows[0]), f"Every strategy on every shape, checked against float64 after a NaN poison; "
               f"{where}. A wrong result would have stopped the run.")


def show_splitk(dtype: str = "float16", live: bool = True) -> list:
    """Split-K on the three skinny shapes: table, and the split-count model for the first.
    ``live=False`` shows the recorded rows even on a GPU (labelled as recorded)."""
    recs, where = _get(f"splitk_{dtype}", lambda: splitk_rows(dtype), "Split-K", live)
    if not recs:
        return []
    show.table(recs, {**_COLS, "splits": "splits", "over_no_split": "over no split"},
               f"Split-K, {dtype}; cuBLAS on the same shape, same run; {where}.")
    M, N, K = recs[0]["shape"]
    sms = _sms() if (live and live_here()) else H200_SMS
    show.figure(fig.splitk_model_figure(M, N, K, sms, [r for r in recs if list(r["shape"]) == [M, N, K]
                                                        and r["params"]["strategy"] in ("splitk", "plan")], where))
    return recs


def show_reproducibility() -> None:
    """Ten runs of each split-K reduction on the same inputs (live: fp16 on the first shape)."""
    rows, where = _get("reproducibility", lambda: reproducibility(shapes=SPLITK_SHAPES[:1], dtypes=("float16",)),
                       "Reproducibility")
    if not rows:
        return
    show.table(rows, list(rows[0]), f"Ten runs of each reduction on the same inputs; {where}.")


def show_streamk(dtype: str = "float16", live: bool = True) -> list:
    """Stream-K against data-parallel on the three shapes (``live=False``: the recorded rows)."""
    recs, where = _get(f"streamk_{dtype}", lambda: streamk_rows(dtype), "Stream-K", live)
    if not recs:
        return []
    show.table(recs, {**_COLS, "over_dp": "over data-parallel", "note": "plan"},
               f"Stream-K, {dtype}, 5 alternating rounds; {where}.")
    return recs


def show_waves(dtype: str = "float16") -> dict | None:
    data, where = _get("waves", lambda: wave_rows(dtype), "Waves")
    if not data:
        return None
    show.figure(fig.wave_figure(data, where))
    show.table(data["control"], list(data["control"][0]), f"The control: one wave of b tiles, M = 128, N = 256 b, "
               f"K = {data['K']}; SM clock and power sampled with nvidia-smi during the timing; {where}.")
    return data


def zoo_summary(rows: list) -> str:
    """One line: on how many zoo shapes the dispatcher was within 3 % of the best other
    strategy, and on how many it beat cuBLAS."""
    ok = sum(1 for r in rows if r["within 3% of best"])
    beat = sum(1 for r in rows if (r.get("ratio") or 0) > 1)
    return (f"The dispatcher's plan was within 3 % of the fastest other strategy on {ok} of {len(rows)} shapes "
            f"({ok / len(rows):.0%}) and faster than cuBLAS on {beat}.")


def show_zoo(live_small: bool = True) -> None:
    """The recorded zoo (the full grid) and, live, a small grid re-measured now."""
    rows, where = recorded("zoo")
    if rows:
        show.figure(fig.zoo_figure(rows, where))
        print(zoo_summary(rows))
    else:
        show.note(f"The full zoo: {where}.", title="Zoo")
    if live_small and live_here():
        small = zoo(*ZOO_SMALL)
        show.figure(fig.zoo_figure(small, results.where(True) + ", the small grid"))
        print(zoo_summary(small))


def show_plans(shapes=((1, 1, 1), (35, 79, 19), (4093, 4093, 4093), (512, 512, 32768), (2176, 4096, 8192),
                       (4096, 4096, 4096), (30000, 64, 64))) -> None:
    """The dispatcher's plan and its one-line reason for a few shapes (model only: no GPU
    needed; C-contiguous inputs, so "aligned" means K % 8 == 0 and N % 8 == 0)."""
    sms = _sms()
    rows = [{"M, N, K": " x ".join(map(str, s)), "plan": (p := model.plan(*s, aligned=s[1] % 8 == 0 and s[2] % 8 == 0,
                                                                            sms=sms)).name, "why": p.reason}
            for s in shapes]
    show.table(rows, ["M, N, K", "plan", "why"], f"The dispatcher's rules (helpers.models.anyshape.plan) for {sms} "
               f"SMs ({'this GPU' if gpu.live() else 'the H200'}).")


def dispatcher_widget():
    """Live only: M, N, K boxes and a strategy menu; each change checks, runs and times the
    strategy against cuBLAS. Bad values are refused before anything reaches the GPU."""
    if not show.live_controls() or not live_here():
        return None
    box = {n: w.IntText(value=v, description=n, layout=w.Layout(width="160px"))
           for n, v in (("M", 4093), ("N", 4093), ("K", 4093))}
    dt = w.Dropdown(options=list(DTYPES), value="float16", description="dtype")
    st = w.Dropdown(options=list(STRATEGIES), value="auto", description="strategy")
    go_ = w.Button(description="measure")
    out = w.Output()

    def on_click(_=None):
        out.clear_output()
        with out:
            try:
                shape = tuple(box[n].value for n in "MNK")
                checks.require_all(checks.positive_int(n, v) for n, v in zip("MNK", shape))
                checks.require(shape[0] * shape[1] * shape[2] <= 2 ** 40, "M*N*K", shape, "must be <= 2^40 here")
                r = measure([st.value], shape, dt.value, rounds=2, budget_ms=200)[0]
            except ValueError as e:
                print(f"refused before launch: {e}")
                return
            if r.get("value") is None:
                print(f"{st.value}: {r.get('note')}")
            else:
                print(f"{r['title']}: {r['value']:.1f} TFLOP/s = {r['ratio']:.3f} x cuBLAS (same run), "
                      f"rel_err {r['rel_err']:.1e}\n  why: {r.get('note')}")
    go_.on_click(on_click)
    return w.VBox([w.HBox(list(box.values())), w.HBox([dt, st, go_]), out])
