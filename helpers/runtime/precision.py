"""Precision, measured: what the number format of a GEMM costs in accuracy.

Two things the Tensor Core chapters (6 and 7) show, live on a GPU and recorded
(``results/<gpu>.json``, key ``extras``) without one:

* :func:`tolerance_rows` -- the verification tolerance is bound to the dtype
  (:data:`helpers.runtime.verify.TOLERANCE`), with the rounding unit behind each bound.
* :func:`tf32_vs_fp32` -- cuBLAS SGEMM with TF32 off (CuPy's default) against
  the same GEMM with ``CUPY_TF32=1`` (TF32 Tensor Cores: operands rounded to a
  10-bit mantissa), speed and error side by side on the same seeded inputs.
  CuPy reads ``CUPY_TF32`` when it is imported, so the TF32 run happens in a
  subprocess (``python -m helpers.runtime.precision --tf32-child ...``).

Recorded mode: :func:`tf32_results` reads ``extras.tf32_vs_fp32`` of the results
file; the GPU recorder writes it with ``extras["tf32_vs_fp32"] = precision.tf32_vs_fp32(4096)``.

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

from helpers.models.precision import UNIT_ROUNDOFF

from . import gpu, results, timing, verify

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
        where = (f"{where.split('; no GPU in this run')[0]} (TF32 needs sm_80 or newer; this GPU is "
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
