"""Is the kernel right? Random inputs, poisoned outputs, a float64 reference.

The rules (from the book's measuring chapter and the workplace's METHOD.md):

* fresh random inputs for every check (standard normal, never zeros: zeros hide
  unwritten outputs and wrong indexing, and can even run faster);
* the output is filled with NaN before every run, and any NaN left is an error
  (an element nobody wrote, or a real NaN);
* the reference is computed in float64 from the very same (rounded) inputs;
* the error is the relative Frobenius norm ||C - ref|| / ||ref||, compared with
  a tolerance bound to the precision (:data:`TOLERANCE`).
"""
from __future__ import annotations

import numpy as np

from . import gpu

# Relative Frobenius error allowed per precision. Float32 rounding over K-term
# dot products of random normal data lands near 1e-7..1e-6; tf32 operands (10-bit
# mantissa) near 3e-4; fp16 output rounding alone is 2**-11 / sqrt(3) ~ 3e-4;
# bf16 output rounding 2**-8 / sqrt(3) ~ 2.3e-3. Each bound sits a few times above
# what a correct kernel gives and far below what a wrong one gives (one missing
# k-tile of 4096 already costs ~1e-2).
TOLERANCE = {"float32": 1e-5, "tf32": 2e-3, "float16": 2e-3, "bfloat16": 1e-2}


def np_dtype(name: str):
    """NumPy dtype object for 'float32', 'float16', 'bfloat16' (via ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def random_matrix(shape, dtype: str = "float32", seed: int | None = None):
    """A device array of standard-normal values rounded to ``dtype``.

    ``seed`` None draws fresh values (the default: every check gets new data).
    Returns a C-contiguous cupy.ndarray. Raises RuntimeError without a GPU.
    """
    cp = gpu.cupy()
    rng = cp.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=cp.float32)
    return x.astype(np_dtype(dtype)) if dtype != "float32" else x


def poison(x) -> None:
    """Fill ``x`` with NaN in place (a value no correct kernel ever writes)."""
    x.fill(np.nan)


def reference_gemm(A, B, layout: str = "NN"):
    """float64 C = A @ B (or A @ Bt.T when layout == 'NT'), where the operands are: on the
    device for CuPy arrays, on the host for NumPy arrays."""
    A64 = A.astype(np.float64)
    B64 = B.astype(np.float64)
    return A64 @ (B64.T if layout == "NT" else B64)


def array_module(x):
    """The array module of ``x``: NumPy for a NumPy array, else CuPy (the check runs where the data is)."""
    return np if isinstance(x, np.ndarray) else gpu.cupy()


def rel_err(C, ref) -> float:
    """||C - ref||_F / ||ref||_F in float64; NaN anywhere in C gives inf. ``C`` and ``ref``
    are both CuPy arrays (on the device) or both NumPy arrays (on the host, no GPU needed)."""
    xp = array_module(C)
    C64 = C.astype(xp.float64)
    if bool(xp.isnan(C64).any()):
        return float("inf")
    return float(xp.linalg.norm(C64 - ref) / xp.linalg.norm(ref))


class WrongResult(AssertionError):
    """A kernel's output failed verification."""


def check(C, ref, dtype: str, what: str = "kernel") -> float:
    """Assert ``C`` matches ``ref`` within :data:`TOLERANCE` [dtype].

    ``C`` and ``ref``: both CuPy arrays, or both NumPy arrays (a kernel replayed on the
    CPU is judged by the same rule). Returns the relative error. Raises
    :class:`WrongResult` (an AssertionError, so a wrong kernel fails nbval) naming how many
    elements were never written (NaN) or the error and the tolerance; KeyError for a
    ``dtype`` without a tolerance.
    """
    xp = array_module(C)
    nans = int(xp.isnan(C.astype(xp.float32)).sum())
    if nans:
        raise WrongResult(f"{what}: {nans} of {C.size} outputs are NaN (never written, "
                          f"the output was poisoned with NaN before the run)")
    err = rel_err(C, ref)
    tol = TOLERANCE[dtype]
    if not err <= tol:
        raise WrongResult(f"{what}: relative error {err:.3e} > tolerance {tol:.0e} for {dtype}")
    return err


def check_exact(out, expect, what: str = "kernel") -> float:
    """Assert ``out`` equals ``expect`` element for element (a copy or a transpose: no
    arithmetic, so no tolerance). NaN differs from everything, so an element left
    poisoned counts as wrong. Returns 0.0; raises :class:`WrongResult` naming how many
    elements are wrong or never written. CuPy or NumPy arrays, as :func:`check`."""
    bad = int((out != expect).sum())
    if bad:
        raise WrongResult(f"{what}: {bad} of {out.size} elements wrong or never written")
    return 0.0
