"""FP8 number formats and scaling, in NumPy (no GPU): what the chapter's figures draw and
what the FP8 GEMM's inputs are made with.

Formats (OCP 8-bit floating point specification, as ``ml_dtypes`` implements it):
e4m3 (``float8_e4m3fn``: 4 exponent bits, 3 mantissa bits, no infinities, max 448) and
e5m2 (``float8_e5m2``: IEEE-like, max 57344), beside fp16 and bf16.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
E4M3_MAX = 448.0
FORMATS = {"e4m3": E4M3, "e5m2": E5M2, "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _check_blocks(x, br: int, bc: int) -> None:
    if np.ndim(x) != 2:
        raise ValueError(f"x.ndim = {np.ndim(x)}: must be 2 (a matrix)")
    for n, v in (("rows per block", br), ("columns per block", bc)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{n} = {v!r}: must be a positive integer")


def format_table() -> list[dict]:
    """One row per format: exponent and mantissa bits, largest finite value, smallest
    normal and subnormal, relative spacing (machine epsilon, 2^-mantissa bits) and the
    dynamic range in binades (log2 of largest finite over smallest subnormal)."""
    rows = []
    for name, dt in FORMATS.items():
        fi = ml_dtypes.finfo(dt)
        tiny_sub = float(fi.smallest_subnormal)
        rows.append({"format": name, "exponent bits": int(fi.nexp), "mantissa bits": int(fi.nmant),
                     "max": float(fi.max), "min normal": float(fi.smallest_normal), "min subnormal": tiny_sub,
                     "epsilon": float(fi.eps), "binades": round(math.log2(float(fi.max) / tiny_sub), 1)})
    return rows


def spacing(name: str, x) -> np.ndarray:
    """Distance from |x| to the next representable value of format ``name`` (the gap a
    rounding error is at most half of), for positive finite ``x`` within the format's range."""
    if name not in FORMATS:
        raise ValueError(f"format = {name!r}: must be one of {sorted(FORMATS)}")
    fi = ml_dtypes.finfo(FORMATS[name])
    x = np.abs(np.asarray(x, dtype=np.float64))
    e = np.floor(np.log2(np.maximum(x, float(fi.smallest_normal))))
    return np.exp2(e - int(fi.nmant))


def quantize_tensor(x, fmt_max: float = E4M3_MAX):
    """Per-tensor e4m3 quantization: scale s = amax(|x|) / 448 (1 when x is all zeros), q = e4m3(x / s).
    Returns (q as ``float8_e4m3fn`` array, s as float). x ~= q * s. ValueError on a non-finite x."""
    x = np.asarray(x, dtype=np.float32)
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if not math.isfinite(amax):
        raise ValueError("x contains inf or NaN: a per-tensor scale needs a finite amax")
    s = amax / fmt_max if amax > 0 else 1.0
    return (x / np.float32(s)).astype(E4M3), float(s)


def dequantize_tensor(q, s: float) -> np.ndarray:
    """float32 q * s."""
    return q.astype(np.float32) * np.float32(s)


def quantize_blocks(x, br: int, bc: int, fmt_max: float = E4M3_MAX):
    """Block-scaled e4m3 quantization of a matrix: one scale per ``br x bc`` block (amax / 448;
    1 for an all-zero block); partial blocks at the edges get their own scale.
    Returns (q ``float8_e4m3fn`` of x's shape, S float32 (ceil(rows/br), ceil(cols/bc))).
    ``br=1, bc=128``: the 1 x 128 strips of an activation; ``128, 128``: a weight's blocks.
    ValueError on a non-2-D x or bad block sizes."""
    _check_blocks(x, br, bc)
    x = np.asarray(x, dtype=np.float32)
    R, C = x.shape
    gr, gc = -(-R // br), -(-C // bc)
    pad = np.zeros((gr * br, gc * bc), np.float32)
    pad[:R, :C] = np.abs(x)
    amax = pad.reshape(gr, br, gc, bc).max(axis=(1, 3))
    S = np.where(amax > 0, amax / np.float32(fmt_max), np.float32(1)).astype(np.float32)
    full = np.repeat(np.repeat(S, br, axis=0), bc, axis=1)[:R, :C]
    return (x / full).astype(E4M3), S


def dequantize_blocks(q, S, br: int, bc: int) -> np.ndarray:
    """float32 q times the scale of each element's block (the inverse of :func:`quantize_blocks`)."""
    _check_blocks(q, br, bc)
    R, C = q.shape
    full = np.repeat(np.repeat(np.asarray(S, np.float32), br, axis=0), bc, axis=1)[:R, :C]
    return q.astype(np.float32) * full


def quantization_error(x, scaling: str, fmt: str = "e4m3") -> float:
    """Relative Frobenius error ||deq(q(x)) - x|| / ||x|| of quantizing matrix ``x`` to ``fmt``:
    ``scaling`` "none" (values cast as they are), "tensor" (one scale) or "block" (1 x 128)."""
    if scaling not in ("none", "tensor", "block"):
        raise ValueError(f"scaling = {scaling!r}: must be 'none', 'tensor' or 'block'")
    if fmt not in ("e4m3", "e5m2"):
        raise ValueError(f"fmt = {fmt!r}: must be 'e4m3' or 'e5m2'")
    x = np.asarray(x, dtype=np.float32)
    if scaling == "none":
        d = x.astype(FORMATS[fmt]).astype(np.float32)
    elif fmt == "e4m3":
        d = dequantize_tensor(*quantize_tensor(x)) if scaling == "tensor" else dequantize_blocks(
            *quantize_blocks(x, 1, 128), 1, 128)
    else:
        fmax = float(ml_dtypes.finfo(E5M2).max)
        if scaling == "tensor":
            s = float(np.max(np.abs(x))) / fmax or 1.0
            d = (x / np.float32(s)).astype(E5M2).astype(np.float32) * np.float32(s)
        else:
            _, S = quantize_blocks(x, 1, 128, fmt_max=fmax)          # the scales only: amax / 57344
            full = np.repeat(S, 128, axis=1)[:, :x.shape[1]]
            d = (x / full).astype(E5M2).astype(np.float32) * full
    return float(np.linalg.norm(d - x) / np.linalg.norm(x))


def encode(x) -> np.ndarray:
    """float32 values -> their e4m3 bytes (uint8), rounded to nearest even by ml_dtypes
    (values must already lie within +-448: scale first)."""
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32).astype(E4M3)).view(np.uint8)


def decode_table() -> np.ndarray:
    """The 256 e4m3 values as float32, indexed by byte (two of them, 0x7F and 0xFF, are NaN)."""
    return np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)
