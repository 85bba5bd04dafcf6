"""TMA tensor maps (``CUtensorMap``) for the Hopper kernels of chapter 10, built on the host.

A tensor map is a 128-byte descriptor that the driver fills in
(``cuTensorMapEncodeTiled``, CUDA Driver API, "Tensor Map Object Management"):
the global address, sizes and strides of a 2-D row-major array, the box (tile)
one TMA copy moves, and the shared-memory swizzle. A kernel receives it by value
as a ``const __grid_constant__`` parameter (``kernels/10_hopper.cu``: ``struct
TmaDesc``); from CuPy it is passed as a NumPy structured scalar of 16 ``uint64``
(CuPy copies ``sizeof`` bytes of such a scalar into the parameter buffer).

The driver call goes through NVIDIA's ``cuda-bindings`` package
(``cuda.bindings.driver``) when it imports, and otherwise through ctypes into
``libcuda.so.1``: both produced the same bytes on the H200 (2026-12-01,
``notes/hopper_tuning.md``). The ctypes path needs nothing beyond the driver,
so a reader whose cuda-bindings does not match the driver still runs chapter 10.

:func:`check_tiled` applies the driver's documented rules in Python first, so a
bad array is a ValueError naming the parameter, never a CUDA error. Source: the
``cuTensorMapEncodeTiled`` reference (global address 16-byte aligned, global
strides multiples of 16 bytes and < 2^40, box dimensions 1..256, the box's inner
dimension times the element size at most the swizzle span).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from . import checks

# CUtensorMapDataType and CUtensorMapSwizzle values (cuda.h, CUDA 12.0 and later).
DATA_TYPE = {"float16": 6, "bfloat16": 9}
SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
SWIZZLE_SPAN = {"none": None, "32B": 32, "64B": 64, "128B": 128}
ELEM_BYTES = 2
TENSOR_MAP_DTYPE = np.dtype({"names": ["d"], "formats": [(np.uint64, (16,))]})
# interleave none, L2 promotion 256 B, out-of-bounds elements read as zeros
_INTERLEAVE_NONE, _L2_PROMOTION_256B, _OOB_FILL_ZERO = 0, 3, 0


def check_tiled(name: str, ptr: int, rows: int, cols: int, box_rows: int, box_cols: int,
                dtype: str, swizzle: str = "128B") -> None:
    """Raise ValueError unless a C-contiguous ``rows x cols`` array at address ``ptr``
    can be described by a tensor map with a ``box_rows x box_cols`` box.

    ``name`` is the operand ("A", "B", "C") the message names; ``dtype`` one of
    "float16", "bfloat16"; ``swizzle`` one of "none", "32B", "64B", "128B".
    """
    checks.require(dtype in DATA_TYPE, f"{name}.dtype", dtype, f"must be one of {sorted(DATA_TYPE)} for TMA here")
    checks.require(swizzle in SWIZZLE, "swizzle", swizzle, f"must be one of {sorted(SWIZZLE)}")
    checks.require(ptr % 16 == 0, f"{name}.data.ptr % 16", ptr % 16,
                   "must be 0: TMA reads and writes 16-byte-aligned global addresses")
    checks.require(rows >= 1 and cols >= 1, f"{name}.shape", (rows, cols), "must be >= 1 in both dimensions")
    checks.require((cols * ELEM_BYTES) % 16 == 0, f"{name}.shape[1]", cols,
                   f"must be a multiple of {16 // ELEM_BYTES}: TMA needs the row pitch "
                   f"({cols} x {ELEM_BYTES} bytes) to be a multiple of 16 bytes")
    checks.require(cols * ELEM_BYTES < 2 ** 40, f"{name}.shape[1]", cols, "row pitch must be < 2^40 bytes")
    for n, v in (("box rows", box_rows), ("box columns", box_cols)):
        checks.require(1 <= v <= 256, n, v, "must be in 1..256 (the TMA box limit)")
    span = SWIZZLE_SPAN[swizzle]
    if span is not None:
        checks.require(box_cols * ELEM_BYTES <= span, "box columns", box_cols,
                       f"x {ELEM_BYTES} bytes must be <= {span}, the {swizzle} swizzle span")


def _encode_bindings(dtype, ptr, dims, strides, box, swizzle) -> bytes:
    from cuda.bindings import driver as cu   # optional: the ctypes path below needs only the driver
    u64 = lambda xs: [cu.cuuint64_t(int(x)) for x in xs]  # noqa: E731
    u32 = lambda xs: [cu.cuuint32_t(int(x)) for x in xs]  # noqa: E731
    err, tm = cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType(DATA_TYPE[dtype]), 2, ptr, u64(dims), u64(strides), u32(box), u32([1, 1]),
        cu.CUtensorMapInterleave(_INTERLEAVE_NONE), cu.CUtensorMapSwizzle(SWIZZLE[swizzle]),
        cu.CUtensorMapL2promotion(_L2_PROMOTION_256B), cu.CUtensorMapFloatOOBfill(_OOB_FILL_ZERO))
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled (cuda.bindings) failed: {err}")
    return ctypes.string_at(int(tm.getPtr()), 128)


@functools.lru_cache(maxsize=1)
def _libcuda():
    lib = ctypes.CDLL("libcuda.so.1")
    f = lib.cuTensorMapEncodeTiled
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                  ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                  ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                  ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return f


def _encode_ctypes(dtype, ptr, dims, strides, box, swizzle) -> bytes:
    buf = ctypes.create_string_buffer(256)
    addr = (ctypes.addressof(buf) + 127) & ~127          # CUtensorMap is 64- (CUDA 13: 128-) byte aligned
    rc = _libcuda()(ctypes.c_void_p(addr), DATA_TYPE[dtype], 2, ctypes.c_void_p(ptr),
                    (ctypes.c_uint64 * 2)(*dims), (ctypes.c_uint64 * 1)(*strides),
                    (ctypes.c_uint32 * 2)(*box), (ctypes.c_uint32 * 2)(1, 1),
                    _INTERLEAVE_NONE, SWIZZLE[swizzle], _L2_PROMOTION_256B, _OOB_FILL_ZERO)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled (libcuda) failed: CUresult {rc}")
    return ctypes.string_at(addr, 128)


ENCODER = {"path": None}     # which path encoded the last map ("cuda.bindings" or "ctypes: <why>")


@functools.lru_cache(maxsize=256)
def _encoded(dtype, ptr, rows, cols, box_rows, box_cols, swizzle):
    args = (dtype, ptr, (cols, rows), (cols * ELEM_BYTES,), (box_cols, box_rows), swizzle)
    try:
        raw = _encode_bindings(*args)
        ENCODER["path"] = "cuda.bindings"
    except Exception as e:        # no package, or one that does not match this driver
        raw = _encode_ctypes(*args)
        ENCODER["path"] = f"ctypes ({type(e).__name__})"
    v = np.zeros(1, dtype=TENSOR_MAP_DTYPE)
    v["d"][0] = np.frombuffer(raw, dtype=np.uint64)
    return v[0]


def tensor_map(name: str, x, box_rows: int, box_cols: int, swizzle: str = "128B"):
    """The tensor map of a C-contiguous 2-D CuPy array ``x`` (float16 or bfloat16).

    The box is ``box_rows x box_cols`` elements, its inner dimension along the
    rows of ``x``; elements outside ``x`` read as zeros. Returns a NumPy
    structured scalar (16 x uint64) to pass as a kernel argument. Cached per
    (pointer, shape, box): timing loops do not pay for the driver call.
    Raises ValueError (see :func:`check_tiled`) before calling the driver.
    """
    checks.require(getattr(x, "ndim", 0) == 2, f"{name}.ndim", getattr(x, "ndim", None), "must be 2")
    checks.require(bool(x.flags.c_contiguous), f"{name}.flags.c_contiguous", False,
                   "must be C-contiguous (row-major)")
    dtype = str(x.dtype)
    rows, cols = (int(s) for s in x.shape)
    check_tiled(name, int(x.data.ptr), rows, cols, box_rows, box_cols, dtype, swizzle)
    return _encoded(dtype, int(x.data.ptr), rows, cols, box_rows, box_cols, swizzle)
