"""Precision, measured: what the number format of a GEMM costs in accuracy.

Three things the Tensor Core chapters (6 and 7) show, each live on a GPU and
recorded (``results/<gpu>.json``, key ``extras``) without one:

* :func:`tolerance_rows` -- the verification tolerance is bound to the dtype
  (:data:`helpers.runtime.verify.TOLERANCE`), with the rounding unit behind each bound.
* :func:`fp16_accumulator_demo` -- a sum that stops growing. With
  A = B = 0.5 (exact in fp16) and K = 65536, every element of C is exactly
  16384 (also exact in fp16). The fp32-accumulating WMMA kernel (``wmma_f16``)
  returns it; the same kernel with an fp16 accumulator fragment
  (``wmma_acc_f16_pitfall``) stops at 8192: each 16x16x16 step adds
  16 * 0.25 = 4, and once the running sum reaches 8192 its fp16 spacing (ulp)
  is 8, so 8192 + 4 is a tie that rounds back to the even 8192. The NumPy
  float16 emulation of the same sum (:func:`fp16_sum_emulation`) runs
  anywhere and predicts the stall.
* :func:`tf32_vs_fp32` -- cuBLAS SGEMM with TF32 off (CuPy's default) against
  the same GEMM with ``CUPY_TF32=1`` (TF32 Tensor Cores: operands rounded to a
  10-bit mantissa), speed and error side by side on the same seeded inputs.
  CuPy reads ``CUPY_TF32`` when it is imported, so the TF32 run happens in a
  subprocess (``python -m helpers.runtime.precision --tf32-child ...``).

Recorded mode: :func:`tf32_results` and :func:`fp16_accumulator_results` read
``extras.tf32_vs_fp32`` and ``extras.fp16_accumulator`` of the results file;
the GPU recorder writes them with::

    extras["tf32_vs_fp32"] = precision.tf32_vs_fp32(4096)
    extras["fp16_accumulator"] = precision.fp16_accumulator_demo()

:func:`check_host` is :func:`helpers.runtime.verify.check` for NumPy arrays (same
tolerance, same :class:`helpers.runtime.verify.WrongResult`), so a kernel emulated on
the CPU can be judged by the very rule a GPU run is.

Units: times in ms, throughput in TFLOP/s (2*M*N*K), errors are relative
Frobenius norms ||C - ref|| / ||ref|| against a float64 reference.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.models.precision import DEMO, UNIT_ROUNDOFF, fp16_sum_emulation

from . import catalog, gpu, launch, results, timing, verify

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ tolerances
def tolerance_rows() -> list[dict]:
    """One row per dtype: the tolerance of :data:`verify.TOLERANCE`, the unit
    roundoff of the format, and their ratio (how many roundoffs a correct
    kernel may lose before the check calls it wrong)."""
    rows = []
    for dt, tol in verify.TOLERANCE.items():
        u = UNIT_ROUNDOFF[dt]
        rows.append({"dtype": dt, "tolerance": tol, "unit roundoff": u, "tolerance / roundoff": round(tol / u, 1)})
    return rows


def rel_err_host(C, ref) -> float:
    """||C - ref||_F / ||ref||_F in float64 for NumPy arrays; NaN in C gives inf."""
    C64 = np.asarray(C, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if np.isnan(C64).any():
        return float("inf")
    return float(np.linalg.norm(C64 - ref) / np.linalg.norm(ref))


def check_host(C, ref, dtype: str, what: str = "kernel") -> float:
    """:func:`helpers.runtime.verify.check` on NumPy arrays (no GPU): returns the
    relative error, or raises :class:`helpers.runtime.verify.WrongResult` with the same
    message the GPU check gives (NaN count, or error vs tolerance)."""
    C = np.asarray(C)
    nans = int(np.isnan(C.astype(np.float32)).sum())
    if nans:
        raise verify.WrongResult(f"{what}: {nans} of {C.size} outputs are NaN (never written, "
                                 f"the output was poisoned with NaN before the run)")
    err = rel_err_host(C, ref)
    tol = verify.TOLERANCE[dtype]
    if not err <= tol:
        raise verify.WrongResult(f"{what}: relative error {err:.3e} > tolerance {tol:.0e} for {dtype}")
    return err


# ------------------------------------------------------------------ fp16 accumulator


def fp16_accumulator_demo(M: int = DEMO["M"], N: int = DEMO["N"], K: int = DEMO["K"]) -> dict:
    """The fp16-accumulator pitfall on A = B = 0.5 (M x K, K x N, fp16).

    Always returns the NumPy emulation: ``emulated_fp16_k16`` (fp16 sum, 4
    added per k16 step), ``emulated_fp16_scalar`` (fp16 sum, 0.25 per k) and
    ``exact``. Live (GPU), also runs ``wmma_f16`` (fp32 accumulator) and
    ``wmma_acc_f16_pitfall`` (fp16 accumulator) through
    :func:`helpers.runtime.launch.gemm` and adds ``kernel_fp32_acc`` and
    ``kernel_fp16_acc`` (the value of C[0, 0]) and ``*_all_equal`` (True when
    every element of C has that value); without a GPU those are None.
    ``source`` is "live" or "emulated"; ``where`` says on what.
    This is what the GPU recorder stores as ``extras.fp16_accumulator``.
    """
    e16 = fp16_sum_emulation(K, step=16)
    e1 = fp16_sum_emulation(K, step=1)
    out = {"M": M, "N": N, "K": K, "a": DEMO["a"], "b": DEMO["b"], "exact": e16["exact"],
           "emulated_fp16_k16": e16["final_fp16"], "emulated_fp16_k16_stalls_at": e16["stalls_at_k"],
           "emulated_fp16_scalar": e1["final_fp16"], "emulated_fp16_scalar_stalls_at": e1["stalls_at_k"],
           "emulated_fp32": e16["final_fp32"],
           "kernel_fp32_acc": None, "kernel_fp16_acc": None,
           "kernel_fp32_acc_all_equal": None, "kernel_fp16_acc_all_equal": None,
           "source": "emulated", "where": "NumPy float16 on the CPU"}
    if not gpu.live():
        return out
    cp = gpu.cupy()
    A = cp.full((M, K), DEMO["a"], dtype=cp.float16)
    B = cp.full((K, N), DEMO["b"], dtype=cp.float16)
    for key, name in (("wmma_f16", "kernel_fp32_acc"), ("wmma_acc_f16_pitfall", "kernel_fp16_acc")):
        C = cp.empty((M, N), dtype=cp.float16)
        verify.poison(C)
        launch.gemm(key, A, B, C)
        Ch = cp.asnumpy(C).astype(np.float64)
        out[name] = float(Ch[0, 0])
        out[name + "_all_equal"] = bool((Ch == Ch[0, 0]).all())
    out["source"] = "live"
    out["where"] = results.where(True)
    return out


def fp16_accumulator_results() -> dict:
    """Live: :func:`fp16_accumulator_demo`. Recorded, or on a GPU that cannot run the two
    kernels (:func:`helpers.runtime.launch.unable`, said in ``where``): ``extras.fp16_accumulator``
    of the results file if present (``source`` "recorded", ``where`` naming the
    GPU run), else the emulation alone with ``recorded`` False."""
    why = [w for w in (launch.unable(catalog.get(k)) for k in ("wmma_f16", "wmma_acc_f16_pitfall")) if w]
    if gpu.live() and not why:
        return {**fp16_accumulator_demo(), "recorded": True}
    data = results.load()
    rec = data.get("extras", {}).get("fp16_accumulator")
    if rec:
        where = results.where(False, data["provenance"])
        if why:
            where = f"{where.split('; no GPU here')[0]} (this GPU cannot run the kernels: they {why[0]})"
        return {**rec, "source": "recorded", "where": where, "recorded": True}
    return {**fp16_accumulator_demo(), "recorded": False}


# ------------------------------------------------------------------ TF32 vs FP32
def _inputs(n: int, seed: int):
    """Seeded standard-normal float32 n x n matrices A, B, drawn on the host
    (NumPy PCG64) so that every process gets bit-identical inputs."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32))


def _measure_sgemm(n: int, seed: int) -> dict:
    """Time cupy.matmul on float32 n x n inputs (whatever CUPY_TF32 this
    process was started with) and its error against a float64 reference."""
    cp = gpu.cupy()
    Ah, Bh = _inputs(n, seed)
    A, B = cp.asarray(Ah), cp.asarray(Bh)
    C = cp.empty((n, n), dtype=cp.float32)
    run = lambda: cp.matmul(A, B, out=C)   # noqa: E731  (timing.cublas_gemm refuses CUPY_TF32 on purpose)
    verify.poison(C)
    run()
    err = verify.rel_err(C, verify.reference_gemm(A, B))
    t = timing.time_ms(run)
    return {"ms": t["ms"], "TFLOP/s": timing.tflops(timing.gemm_flops(n, n, n), t["ms"]),
            "rel_err": err, "repeats": t["n"], "CUPY_TF32": os.environ.get("CUPY_TF32", "")}


def tf32_vs_fp32(n: int = 4096, seed: int = 0, timeout_s: float = 600) -> list[dict]:
    """cuBLAS SGEMM, FP32 vs TF32, on the same seeded n x n x n float32 inputs.

    FP32: in this process with ``CUPY_TF32`` unset (RuntimeError if it is
    set: the FP32 row would silently be TF32). TF32: a subprocess started with
    ``CUPY_TF32=1``. Both timed with :func:`helpers.runtime.timing.time_ms` (events,
    warm-up, median), both errors against one float64 reference of the same
    inputs. Returns two rows: {"mode", "ms", "TFLOP/s", "speedup", "rel_err",
    "tolerance", "passes", "shape", "gpu"}; ``speedup`` is over the FP32 row,
    ``tolerance`` that of :data:`verify.TOLERANCE` for the mode's precision.
    Needs a GPU (RuntimeError otherwise); RuntimeError if the subprocess fails.
    This is what the GPU recorder stores as ``extras.tf32_vs_fp32``.
    """
    gpu.cupy()
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set in this process: the FP32 row would use TF32; unset it")
    fp32 = _measure_sgemm(n, seed)
    env = {**os.environ, "CUPY_TF32": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    r = subprocess.run([sys.executable, "-m", "helpers.runtime.precision", "--tf32-child", str(n), str(seed)],
                       capture_output=True, text=True, env=env, cwd=str(REPO), timeout=timeout_s)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"the CUPY_TF32=1 subprocess failed (rc={r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    tf32 = json.loads(lines[-1])
    name = gpu.device_info()["name"]
    rows = []
    for mode, m, prec in (("FP32 (CUPY_TF32 unset, CuPy's default)", fp32, "float32"),
                          ("TF32 Tensor Cores (CUPY_TF32=1)", tf32, "tf32")):
        tol = verify.TOLERANCE[prec]
        rows.append({"mode": mode, "ms": round(m["ms"], 4), "TFLOP/s": round(m["TFLOP/s"], 2),
                     "speedup": round(fp32["ms"] / m["ms"], 2), "rel_err": float(f"{m['rel_err']:.3g}"),
                     "tolerance": tol, "passes": bool(m["rel_err"] <= tol),
                     "shape": [n, n, n], "gpu": name})
    return rows


TF32_CC = (8, 0)      # TF32 Tensor Core math exists from the A100 (sm_80) on


def tf32_results(n: int = 4096) -> tuple[list, str]:
    """Live: (:func:`tf32_vs_fp32` rows, where). Recorded, or on a GPU older than sm_80
    (no TF32; said in ``where``): the rows of ``extras.tf32_vs_fp32`` ([] if never
    recorded) and where they came from."""
    cc = gpu.capability()
    if gpu.live() and cc >= TF32_CC:
        return tf32_vs_fp32(n), results.where(True)
    data = results.load()
    where = results.where(False, data["provenance"])
    if cc is not None and cc < TF32_CC:
        where = (f"{where.split('; no GPU here')[0]} (TF32 needs sm_80 or newer; this GPU is "
                 f"{gpu.describe_target()})")
    return data.get("extras", {}).get("tf32_vs_fp32", []), where


def _child(argv) -> int:
    n, seed = int(argv[0]), int(argv[1])
    print(json.dumps(_measure_sgemm(n, seed)), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--tf32-child":
        sys.exit(_child(sys.argv[2:4]))
    sys.exit("usage: python -m helpers.runtime.precision --tf32-child N SEED  (run by tf32_vs_fp32)")
