"""The checks of an any-shape GEMM call (:func:`helpers.runtime.anyshape.gemm`): every rule
one comparison on the good path, a message naming the argument, its value and the rule when
one is broken. Nothing here touches the GPU."""
from __future__ import annotations

from . import gpu
from .checks import require

DTYPES = {"float16": ("f16", {}), "bfloat16": ("bf16", {"BF16": 1})}   # dtype -> (suffix, build defines)


def aligned_inputs(A, B) -> bool:
    """True when the cp.async build can read A and B in place: K % 8 == 0, N % 8 == 0
    and both base pointers 16-byte aligned."""
    return A.shape[1] % 8 == 0 and B.shape[1] % 8 == 0 and A.data.ptr % 16 == 0 and B.data.ptr % 16 == 0


_DTYPE_NAMES: dict = {}             # dtype object -> "float16" | "bfloat16" (the names DTYPES takes)


def check_inputs(A, B, C=None):
    """Validate a GEMM call before anything reaches the GPU. A: (M, K), B: (K, N), both
    C-contiguous CuPy arrays of one dtype (float16 or bfloat16); C: (M, N) of that dtype,
    C-contiguous, or None (allocated). Any M, N, K >= 1, any base pointer. Returns
    (M, N, K, dtype, C). Raises ValueError naming the argument, its value and the rule.

    Every rule is one comparison on the good path (about 2 us in all); only a call that
    breaks one goes through :func:`_explain`, which finds the first broken rule and says it."""
    cp = gpu.cupy()
    nd = cp.ndarray
    if type(A) is nd and type(B) is nd and A.ndim == 2 and B.ndim == 2:
        (M, K), (Kb, N) = A.shape, B.shape
        dt = A.dtype
        name = _DTYPE_NAMES.get(dt)
        if name is None and str(dt) in DTYPES:
            name = _DTYPE_NAMES[dt] = str(dt)
        if (name is not None and B.dtype == dt and Kb == K and M >= 1 and N >= 1 and K >= 1
                and M < 2 ** 31 and N < 2 ** 31 and K < 2 ** 31
                and A.flags.c_contiguous and B.flags.c_contiguous
                and (C is None or (type(C) is nd and C.shape == (M, N) and C.dtype == dt and C.flags.c_contiguous))):
            return M, N, K, name, (cp.empty((M, N), dt) if C is None else C)
    return _explain(A, B, C)


def _explain(A, B, C=None):
    """:func:`check_inputs`' rules one by one, raising ValueError at the first broken one."""
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
