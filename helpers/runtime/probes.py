"""Where does a kernel's time go? Leave one stage out, time it again.

Without hardware counters, the cost of a stage of a kernel can still be
measured: build variants that skip it and time them in the same run
(METHOD: "time variants that leave one stage out ... and take differences").
``kernels/experiments/07_mma_probe.cu`` builds chapter 7's kernel as such a ladder (``-DPROBE=n``); each rung
leaves out one more stage, so the difference between two rungs is the cost
of the stage the second one drops:

====  ==================================================================
n     left out (cumulative)
====  ==================================================================
0     nothing: the kernel
1     the C stores (the accumulators are still tested, so no mma is lost)
2     and the main loop's cp.async copies of A and B (the prologue stays)
3     and the cp.async wait + __syncthreads() of every k-tile
4     and the ldmatrix loads of the loop: the mma instructions alone
====  ==================================================================

Rungs 1-4 compute wrong results on purpose and are never verified; rung 0
is verified like every kernel. Each rung is timed next to cuBLAS on the
same inputs, and the GPU's clock and power are sampled during the timings
(``nvidia-smi``), because a Tensor Core kernel on an H200 can run into the
board's power limit, and then the clock, not the kernel, sets the pace.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import threading

from . import catalog, gpu, launch, results, timing, verify

LADDER = (
    (0, "the kernel", "-"),
    (1, "no C stores", "epilogue (C stores)"),
    (2, "... and no main-loop cp.async", "global -> shared copies"),
    (3, "... and no barrier", "cp.async.wait + __syncthreads"),
    (4, "... and no ldmatrix: mma only", "shared -> register loads (ldmatrix)"),
)


class PowerSampler:
    """Sample SM clock and board power with ``nvidia-smi`` in a background
    thread while a block of GPU work runs::

        with PowerSampler() as ps:
            ...timings...
        ps.summary()   # {"samples", "clock_MHz_min", "clock_MHz_median", "power_W_max", ...}

    Reads only (no setting is changed). ``summary()`` is None when
    ``nvidia-smi`` is absent or returned nothing.
    """
    QUERY = "clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_event_reasons.sw_power_cap"

    def __init__(self, period_s: float = 0.05):
        self.period_s = period_s
        self.rows: list = []
        self._stop = threading.Event()
        self._thread = None

    def _poll(self):
        exe = shutil.which("nvidia-smi")
        while exe and not self._stop.is_set():
            try:
                out = subprocess.run([exe, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits", "-i", "0"],
                                     capture_output=True, text=True, timeout=5).stdout.strip()
                f = [x.strip() for x in out.splitlines()[0].split(",")]
                self.rows.append((float(f[0]), float(f[1]), float(f[2]), float(f[3]), f[4]))
            except Exception:      # a missing field or a slow call: skip the sample
                pass
            self._stop.wait(self.period_s)

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def summary(self) -> dict | None:
        if not self.rows:
            return None
        clk = [r[0] for r in self.rows]
        pw = [r[2] for r in self.rows]
        capped = sum(1 for r in self.rows if r[4].lower() == "active")
        return {"samples": len(self.rows), "clock_MHz_min": min(clk), "clock_MHz_median": statistics.median(clk),
                "clock_MHz_max_allowed": self.rows[0][1], "power_W_max": max(pw),
                "power_W_median": statistics.median(pw), "power_limit_W": self.rows[0][3],
                "power_capped_fraction": capped / len(self.rows)}


def mma_sync_probes(dtype: str = "float16", shape=(4096, 4096, 4096), rounds: int = 3, **params) -> dict:
    """Time the PROBE ladder of 07_mma_sync.cu live, each rung against cuBLAS.

    Args:
        dtype: "float16" or "bfloat16" (picks ``mma_sync_f16`` / ``mma_sync_bf16``).
        shape: (M, N, K).
        rounds: each rung is timed against cuBLAS in this many alternating
            rounds (:func:`helpers.runtime.timing.time_pair`); rows report medians.
        params: overrides of the kernel's default tile parameters
            (``LOAD_SPREAD`` must stay 1: the probes live in that loop).

    Returns ``{"rows": [...], "power": PowerSampler.summary(), "params", "dtype", "shape"}``;
    each row has ``probe``, ``label``, ``stage`` (what the rung drops),
    ``ms``, ``TFLOP/s``, ``cuBLAS TFLOP/s``, ``ratio`` (median cuBLAS time over median rung time)
    and ``saves`` (ratio gained over the previous rung).
    Raises ValueError for bad parameters, RuntimeError without a GPU,
    WrongResult if rung 0 is wrong.
    """
    key = {"float16": "mma_sync_f16", "bfloat16": "mma_sync_bf16"}.get(dtype)
    if key is None:
        raise ValueError(f"dtype={dtype!r}: must be 'float16' or 'bfloat16'")
    timing.check_rounds(rounds)
    spec = catalog.get(key)
    p = spec.params(**params)
    if p.get("LOAD_SPREAD") != 1:
        raise ValueError(f"LOAD_SPREAD={p.get('LOAD_SPREAD')}: must be 1 (the probes are in that loop)")
    cp = gpu.cupy()
    M, N, K = shape
    builds = [launch.prepare(key, shape, extra_defines={"PROBE": n} if n else None, **p) for n, _, _ in LADDER]
    A, B = verify.random_matrix((M, K), dtype), verify.random_matrix((K, N), dtype)
    C = cp.empty((M, N), A.dtype)
    verify.poison(C)
    builds[0](A, B, C, M, N, K)
    verify.check(C, verify.reference_gemm(A, B), dtype, f"{key} {p}")
    fl = timing.gemm_flops(M, N, K)
    blas = timing.cublas_gemm(A, B, C)
    with PowerSampler() as ps:        # each rung against its own cuBLAS runs, alternated
        times = [timing.time_pair(lambda L=L: L(A, B, C, M, N, K), blas, rounds=rounds) for L in builds]
    rows, prev = [], None
    for (n, label, stage), t in zip(LADDER, times):
        rows.append({"probe": n, "label": label, "stage": stage, "ms": t["ms"],
                     "TFLOP/s": timing.tflops(fl, t["ms"]), "cuBLAS TFLOP/s": timing.tflops(fl, t["ref_ms"]),
                     "ratio": t["ratio"], "saves": None if prev is None else t["ratio"] - prev})
        prev = t["ratio"]
    return {"rows": rows, "power": ps.summary(), "params": p, "dtype": dtype, "shape": list(shape)}


def probe_results(dtype: str = "float16", shape=(4096, 4096, 4096)) -> tuple[dict | None, str]:
    """:func:`mma_sync_probes` live, or the run recorded in results/<gpu>.json
    (``extras.mma_sync_probes[dtype]``) without a GPU or on one that cannot run the
    kernel (:func:`helpers.runtime.launch.unable`, said in the label); returns (result, where-label).
    The result is None when nothing was recorded."""
    key = {"float16": "mma_sync_f16", "bfloat16": "mma_sync_bf16"}.get(dtype, "mma_sync_f16")
    why = launch.unable(catalog.get(key))
    if gpu.live() and not why:
        return mma_sync_probes(dtype, shape), results.where(True)
    data = results.load()
    rec = data.get("extras", {}).get("mma_sync_probes", {}).get(dtype)
    where = results.where(False, data["provenance"])
    if why:
        where = f"{where.split('; no GPU here')[0]} ({key} {why})"
    return rec, where


def power_note(power: dict | None) -> str:
    """One sentence on the clock and power seen during the timings."""
    if not power:
        return "Clock and power were not sampled (nvidia-smi absent)."
    capped = power["power_capped_fraction"]
    return (f"During these timings the SM clock ran between {power['clock_MHz_min']:.0f} and "
            f"{power['clock_MHz_max_allowed']:.0f} MHz (median {power['clock_MHz_median']:.0f}); board power "
            f"peaked at {power['power_W_max']:.0f} W of a {power['power_limit_W']:.0f} W limit, and the "
            f"driver reported the software power cap as active in {capped:.0%} of "
            f"{power['samples']} nvidia-smi samples taken during the timings.")
