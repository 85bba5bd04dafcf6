"""Preconditions, checked in Python before anything reaches the GPU.

A kernel launched with a bad shape, a misaligned pointer or too much shared
memory either faults (and a CUDA fault poisons the context: every later cell
fails) or silently computes garbage. So every launch in this book goes through
:func:`require` first, and a violated rule raises ``ValueError`` naming the
parameter, its value and the rule::

    ValueError: BK=12: must divide BM*BK/4 loads evenly over 256 threads ...
"""
from __future__ import annotations

from typing import Iterable, Tuple

Rule = Tuple[bool, str, object, str]   # (ok, parameter name, value, rule text)


class PreconditionError(ValueError):
    """A launch precondition is violated. Subclass of ValueError."""


def require(ok: bool, name: str, value, rule: str) -> None:
    """Raise :class:`PreconditionError` ``"{name}={value}: {rule}"`` unless ``ok``."""
    if not ok:
        raise PreconditionError(f"{name}={value!r}: {rule}")


def require_all(rules: Iterable[Rule]) -> None:
    """Check a list of ``(ok, name, value, rule)`` tuples; raise on the first failure."""
    for ok, name, value, rule in rules:
        require(ok, name, value, rule)


def positive_int(name: str, value) -> Rule:
    """Rule: ``value`` is an int >= 1."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return (ok, name, value, "must be a positive integer")


def multiple_of(name: str, value: int, m: int, why: str = "") -> Rule:
    """Rule: ``value % m == 0``."""
    return (value % m == 0, name, value, f"must be a multiple of {m}" + (f" ({why})" if why else ""))


def check_array(name: str, x, dtype: str, shape=None, align: int = 16) -> None:
    """Check a device array before a launch.

    Rules: a CuPy array, of ``dtype``, C-contiguous (row-major, leading
    dimension = number of columns), of ``shape`` if given, and with a data
    pointer aligned to ``align`` bytes (16 for float4 / cp.async 16-byte loads).
    """
    import numpy as np
    require(hasattr(x, "data") and hasattr(x, "dtype") and type(x).__module__.startswith("cupy"),
            name, type(x).__name__, "must be a cupy.ndarray on the device")
    require(x.dtype == np.dtype(dtype), f"{name}.dtype", str(x.dtype), f"must be {dtype}")
    require(x.flags.c_contiguous, f"{name}.flags.c_contiguous", False,
            "must be C-contiguous (row-major); use cupy.ascontiguousarray")
    if shape is not None:
        require(tuple(x.shape) == tuple(shape), f"{name}.shape", tuple(x.shape), f"must be {tuple(shape)}")
    require(x.data.ptr % align == 0, f"{name}.data.ptr % {align}", x.data.ptr % align,
            f"must be 0: the kernel uses {align}-byte vector accesses")
