"""How fast is it? CUDA events, warm-up, median, and a same-run reference.

Units: times in milliseconds (ms), GEMM throughput in TFLOP/s counting
2*M*N*K floating-point operations (one multiply and one add per term), memory
kernels in GB/s (1e9 bytes/s) of *effective* bandwidth: the fewest bytes the
operation must move (each input read once, each output written once) over the
time. Every speed in the book is also given as a ratio to a reference timed in
the same run, on the same GPU, with the same method: cuBLAS (through
``cupy.matmul``) for GEMM, a device-to-device ``cudaMemcpy`` for bandwidth.
"""
from __future__ import annotations

import statistics
import time

from . import gpu, results
from .verify import random_matrix


def gemm_flops(M: int, N: int, K: int) -> int:
    """2*M*N*K: a multiply and an add for every term of every dot product."""
    return 2 * M * N * K


def gemm_min_bytes(M: int, N: int, K: int, in_bytes: int = 4, out_bytes: int = 4) -> int:
    """Fewest DRAM bytes of a GEMM: read A and B once, write C once."""
    return (M * K + K * N) * in_bytes + M * N * out_bytes


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12


def gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def time_ms(fn, *, warmup: int = 3, repeat: int | None = None, budget_ms: float = 400.0,
            min_repeat: int = 5, max_repeat: int = 100) -> dict:
    """Time ``fn()`` (which enqueues GPU work on the current stream) with CUDA events.

    Runs ``warmup`` untimed calls first (module load, lazy allocation, clocks
    ramping up), then ``repeat`` timed calls, each between its own pair of
    events; when ``repeat`` is None it is chosen so the timed part lasts about
    ``budget_ms`` (clamped to [min_repeat, max_repeat]).
    Returns {"ms": median, "min": , "max": , "n": repeats, "all": [...]}.
    """
    cp = gpu.cupy()
    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    if repeat is None:
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        one = max(cp.cuda.get_elapsed_time(s, e), 1e-3)
        repeat = int(min(max_repeat, max(min_repeat, budget_ms / one)))
    starts = [cp.cuda.Event() for _ in range(repeat)]
    ends = [cp.cuda.Event() for _ in range(repeat)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    ends[-1].synchronize()
    ts = [cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends)]
    return {"ms": statistics.median(ts), "min": min(ts), "max": max(ts), "n": repeat, "all": ts}


def check_rounds(rounds) -> None:
    """ValueError unless ``rounds`` is an integer >= 1 (checked before any GPU work)."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ValueError(f"rounds={rounds!r}: must be an integer >= 1")


# After an idle gap the board runs its first tens of ms of work fast, then settles under its
# power cap. On the H200 of this book (2026-12-07; 4096^3 fp16, blocks of 100 calls, about 20 ms
# each), after 3 s idle: cuBLAS 754 TFLOP/s in the first block and 738-751 in the third, the
# rung-5 kernel 741-743 in the second, then 683-691 and from about 85 ms on 657-688, as after 8 s
# of load (632-656) (notes/record_2026-12-07h/pair_drift_h200.json). So time_pair first runs the
# reference, untimed, for PREHEAT_MS when no timing ended in the last IDLE_S seconds.
IDLE_S = 0.5
PREHEAT_MS = 100.0
_LAST = {"end": None}          # time.perf_counter() when the last time_pair returned


def time_pair(fn, ref, *, rounds: int = 3, budget_ms: float = 400.0, min_repeat: int = 2,
              max_repeat: int = 100, timer=None) -> dict:
    """Time ``fn`` and its reference ``ref`` in ``rounds`` alternating rounds.

    Each round times ``ref`` and then ``fn`` with :func:`time_ms` (about
    ``budget_ms / rounds`` each; 3 warm-up calls in the first round, 1 after
    each switch). Alternating matters on a GPU that runs at its power limit:
    clocks fall as the board heats, so a reference timed once at the start
    (cold, fast) and a kernel timed later (hot, slow) would bias the ratio.
    Seen on the H200 of this book (2026-11-29): whichever of two variants ran
    first on an idle GPU measured 5-15 % faster (notes/mma_sync_tuning.md).
    For the same reason, when no time_pair ended in the last :data:`IDLE_S`
    seconds, ``ref`` first runs untimed for about :data:`PREHEAT_MS` (a call of
    ``timer`` whose result is dropped), so that round 1's reference does not
    get the clock an idle board starts with and round 1's kernel does not.

    Returns ``{"ms", "ref_ms"}`` (medians over every timed call of every
    round), ``"ratio"`` = ref_ms / ms (the speed ratio of fn to ref; > 1:
    fn is faster), ``"n"``, ``"ref_n"`` (timed calls) and ``"rounds"``:
    ``[(ms, ref_ms), ...]`` per round. ``timer`` replaces :func:`time_ms`
    (same keyword arguments) in tests. Raises ValueError for bad ``rounds``
    (:func:`check_rounds`).
    """
    check_rounds(rounds)
    timer = timer or time_ms
    if _LAST["end"] is None or time.perf_counter() - _LAST["end"] > IDLE_S:
        timer(ref, warmup=1, budget_ms=PREHEAT_MS, min_repeat=1, max_repeat=5000)
    per = budget_ms / rounds
    samples, ref_samples, per_round = [], [], []
    for r in range(rounds):
        warm = 3 if r == 0 else 1
        tr = timer(ref, warmup=warm, budget_ms=per, min_repeat=min_repeat, max_repeat=max_repeat)
        tf = timer(fn, warmup=warm, budget_ms=per, min_repeat=min_repeat, max_repeat=max_repeat)
        ref_samples += tr["all"]
        samples += tf["all"]
        per_round.append((tf["ms"], tr["ms"]))
    ms, ref_ms = statistics.median(samples), statistics.median(ref_samples)
    _LAST["end"] = time.perf_counter()
    return {"ms": ms, "ref_ms": ref_ms, "ratio": ref_ms / ms, "n": len(samples),
            "ref_n": len(ref_samples), "rounds": per_round}


def cublas_gemm(A, B, C):
    """A callable that runs cuBLAS C = A @ B (cupy.matmul, out=C).

    For float32, TF32 must be off (CuPy's default; ``CUPY_TF32=1`` turns it on):
    raises RuntimeError if the environment enables it, since the comparison
    would then be against a lower-precision GEMM.
    """
    import os
    cp = gpu.cupy()
    if A.dtype == cp.float32 and os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: cuBLAS would use TF32, not an FP32 reference")
    return lambda: cp.matmul(A, B, out=C)


def memcpy_d2d(dst, src):
    """A callable that copies ``src`` to ``dst`` with cudaMemcpyAsync device-to-device."""
    cp = gpu.cupy()
    n = src.nbytes
    return lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, n, 3,
                                               cp.cuda.get_current_stream().ptr)


def rule_demos(M: int = 4096, N: int = 4096, K: int = 4096) -> list[dict]:
    """Show what each timing rule protects against, on cuBLAS SGEMM.

    Returns rows {"rule", "ms", "TFLOP/s", "vs honest", "what it shows"}, where "vs honest"
    is the row's TFLOP/s over the first (honest) row's TFLOP/s:
    * no warm-up: the first call alone (library handle creation, module load);
    * no synchronize: a host clock around an asynchronous launch measures the
      launch, not the kernel (absurdly high TFLOP/s);
    * zeros input: the same GEMM on all-zero matrices (on some GPUs and
      datatypes zeros run faster: less switching power, higher clocks);
    and the honest figure (events, warm-up, median of repeats, random inputs).
    """
    cp = gpu.cupy()
    A, B = random_matrix((M, K)), random_matrix((K, N))
    C = cp.empty((M, N), cp.float32)
    fl = gemm_flops(M, N, K)
    rows = []
    # no warm-up: the first GEMM of a new host thread creates that thread's
    # cuBLAS handle and workspace, as the first call of a program does.
    import threading
    first_box = {}

    def first_call():
        t0 = time.perf_counter()
        cp.matmul(A, B, out=C)
        cp.cuda.Device().synchronize()
        first_box["ms"] = (time.perf_counter() - t0) * 1e3

    th = threading.Thread(target=first_call)
    th.start()
    th.join()
    first = first_box["ms"]
    honest = time_ms(cublas_gemm(A, B, C))["ms"]
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    cp.matmul(A, B, out=C)
    t1 = time.perf_counter()
    nosync = (t1 - t0) * 1e3
    cp.cuda.Device().synchronize()
    Z, Zb = cp.zeros_like(A), cp.zeros_like(B)
    zeros = time_ms(cublas_gemm(Z, Zb, C))["ms"]
    honest2 = time_ms(cublas_gemm(A, B, C))["ms"]
    honest = min(honest, honest2)  # the honest row is the faster of its two timings
    h = tflops(fl, honest)
    rows.append({"rule": "events + warm-up + median, random inputs", "ms": honest, "TFLOP/s": h,
                 "vs honest": 1.0, "what it shows": "the figure we report"})
    rows.append({"rule": "no warm-up (first call of a new thread)", "ms": first, "TFLOP/s": tflops(fl, first),
                 "vs honest": tflops(fl, first) / h, "what it shows": "start-up costs counted as kernel time"})
    rows.append({"rule": "no synchronize (host clock)", "ms": nosync, "TFLOP/s": tflops(fl, nosync),
                 "vs honest": tflops(fl, nosync) / h, "what it shows": "the launch time, not the kernel: the GPU is still working"})
    rows.append({"rule": "zeros as input", "ms": zeros, "TFLOP/s": tflops(fl, zeros),
                 "vs honest": tflops(fl, zeros) / h, "what it shows": "zeros can draw less power and so change the clocks (a ratio "
                 "near 1 means not at this size and dtype); zeros also hide unwritten outputs"})
    return rows


def rules() -> tuple[list, str]:
    """:func:`rule_demos` live, or the rows recorded in results/<gpu>.json
    (``extras.timing_rules``) without a GPU; returns (rows, where-label)."""
    if gpu.live():
        return rule_demos(), results.where(True)
    data = results.load()
    rows = [dict(r) for r in data.get("extras", {}).get("timing_rules", [])]
    # "vs honest" is each row's TFLOP/s over the first (honest) row's, recomputed here so the
    # column always follows from the rows printed beside it
    if rows and rows[0].get("TFLOP/s"):
        for r in rows:
            r["vs honest"] = r["TFLOP/s"] / rows[0]["TFLOP/s"]
    return rows, results.where(False, data["provenance"])


def host_cost(call, sync, calls: int = 200, warmup: int = 20) -> dict:
    """CPU time of one call of ``call()`` (a function that enqueues GPU work and returns),
    in microseconds: ``time.perf_counter`` around each of ``calls`` calls in a row, after
    ``warmup`` calls and a ``sync()`` (so the caches are warm and the GPU queue is empty).

    Why this measures the host's share and not the GPU's: launches are asynchronous, so a
    call returns as soon as its kernels are queued. The GPU's work never blocks the loop
    unless the launch queue fills (about a thousand pending launches on current drivers),
    and 200 calls of at most five launches each stay under that; ``sync()`` runs after the
    loop, outside every timed interval. Returns {"median_us", "mean_us", "p90_us", "calls"}."""
    for _ in range(warmup):
        call()
    sync()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        ts.append(time.perf_counter() - t0)
    sync()
    ts.sort()
    return {"median_us": ts[len(ts) // 2] * 1e6, "mean_us": sum(ts) / len(ts) * 1e6,
            "p90_us": ts[int(0.9 * (len(ts) - 1))] * 1e6, "calls": calls}
