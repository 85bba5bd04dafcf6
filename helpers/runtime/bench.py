"""Measure kernels the honest way, or read what was recorded when there is no GPU.

:func:`measure` is the one measurement of the book; everything that times a kernel
against a same-run reference goes through it (:func:`gemm`, :func:`transpose` and
:func:`prepared`, chapter 9's strategies, chapter 7's PROBE ladder, the scripts).
One call:

1. takes fresh random inputs (:func:`inputs`: standard normal, never zeros) and the
   expected result: a float64 GEMM of the same rounded inputs, or, for a copy or a
   transpose, the exact result;
2. poisons the output with NaN, runs the kernel once and checks it (a relative error
   within the dtype's tolerance, :data:`helpers.runtime.verify.TOLERANCE`, or exact
   equality; :class:`helpers.runtime.verify.WrongResult` if wrong);
3. times it against the reference (cuBLAS through ``cupy.matmul``, or a device-to-device
   copy of the same bytes) in alternating rounds, CUDA events after warm-up, medians of
   every timed call (:func:`helpers.runtime.timing.time_pair`);
4. returns a :class:`helpers.runtime.results.Record`.

Several measurements may share one :class:`Inputs` (a list of kernels on the same data).
The check and the record need no GPU: :class:`Inputs` may hold NumPy arrays and
``timer`` may replace the CUDA-event timer, which is how the CPU tests drive it.

Without a GPU :func:`gemm` and :func:`transpose` return the records of
``results/<gpu>.json`` instead, marked ``source="recorded"``; a kernel never recorded
comes back with ``value=None``; a configuration the autotuner timed (a tuned default,
:mod:`helpers.runtime.defaults`) is read from ``results/<gpu>-tuning.json`` when the
results file lacks it. A kernel the GPU cannot run (:func:`helpers.runtime.launch.unable`:
its compute capability or its shared memory, on the real or the simulated GPU) comes back
recorded too, its title labelled with why ("needs sm_80 or newer; this GPU is sm_75:
recorded on NVIDIA H200"), while the others are measured live. Each record follows the
results contract (docs/architecture.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import catalog, defaults, gpu, launch, results, timing, verify
from .checks import require

Config = "str | tuple[str, dict]"
OPS = ("gemm", "transpose", "copy")
REFERENCE = {"gemm": "cuBLAS", "transpose": "cudaMemcpy D2D", "copy": "cudaMemcpy D2D"}
METRIC = {"gemm": "TFLOP/s", "transpose": "GB/s", "copy": "GB/s"}


def sig(x: float, digits: int = 5) -> float:
    """``x`` rounded to ``digits`` significant digits (for the results file)."""
    return float(f"{x:.{digits}g}")


def _configs(items) -> list:
    out = []
    for it in items:
        key, params = (it, {}) if isinstance(it, str) else (it[0], dict(it[1]))
        spec = catalog.get(key)
        out.append((spec, spec.params(**params)))
    return out


def _recorded(spec, p, dtype, shape, metric, reference):
    r = results.lookup(spec.key, p, dtype, shape) or defaults.lookup(spec.key, p, dtype, shape)
    if r is None:
        return results.Record(chapter=spec.chapter, kernel=spec.key, title=spec.title, params=p, dtype=dtype,
                              shape=list(shape), metric=metric, value=None, reference=reference,
                              reference_value=None, ratio=None, rel_err=None, source="recorded",
                              note="not recorded").as_dict()
    return {**r, "title": spec.title, "source": "recorded"}


def _unable(spec, p, dtype, shape, why, metric="TFLOP/s", reference="cuBLAS"):
    """The recorded record of a kernel this GPU cannot run, labelled with why."""
    r = _recorded(spec, p, dtype, shape, metric, reference)
    gpu_name = results.load().get("provenance", {}).get("gpu", "the recorded GPU")
    return {**r, "title": f"{spec.title} [{why}: recorded on {gpu_name}]", "note": why, "unable": why,
            "gpu": gpu_name}


def _split(cfgs, measure, dtype, shape, metric, reference, *args):
    """Records of ``cfgs``: the kernels the GPU can run measured by ``measure`` (live) or
    read (recorded); the others recorded and labelled (:func:`_unable`). None when every
    kernel can run (the caller measures them all)."""
    why = [launch.unable(s, p) for s, p in cfgs]
    if not any(why):
        return None
    can = [(s.key, p) for (s, p), w in zip(cfgs, why) if not w]
    done = iter(measure(can, shape, *args) if can else [])
    return [_unable(s, p, dtype, shape, w, metric, reference) if w else next(done) for (s, p), w in zip(cfgs, why)]


# ------------------------------------------------------------------ one measurement
@dataclass
class Inputs:
    """The data of one measurement, or of several on the same data (made by :func:`inputs`).

    ``op``: "gemm", "transpose" or "copy"; ``shape``: (M, N, K) or (ROWS, COLS); ``dtype``
    of the inputs. ``arrays``: for a GEMM "A" (M, K), "B" (K, N), "C" (M, N, the output)
    and, once asked for, "Bt" (N, K); for a copy or a transpose "X" (ROWS, COLS) and "out".
    ``expect``: the float64 reference of a GEMM, the exact result of a copy or a
    transpose. ``reference``: a callable that runs the same-run reference once (cuBLAS
    into its own output, or a device-to-device copy of X). CuPy arrays live; NumPy arrays
    and any callable in the CPU tests."""
    op: str
    shape: tuple
    dtype: str
    arrays: dict
    expect: object
    reference: Callable

    @property
    def output(self):
        """The array the kernel writes: C, or out."""
        return self.arrays["C" if self.op == "gemm" else "out"]

    @property
    def work(self) -> float:
        """FLOPs of a GEMM (2 M N K), or bytes of a copy or a transpose (X read and written once)."""
        if self.op == "gemm":
            return timing.gemm_flops(*self.shape)
        return 2 * self.arrays["X"].nbytes

    def rate(self, ms: float) -> float:
        """TFLOP/s (GEMM) or GB/s (copy, transpose) of :attr:`work` done in ``ms`` milliseconds."""
        return timing.tflops(self.work, ms) if self.op == "gemm" else timing.gbps(self.work, ms)

    def args(self, layout: str = "NN") -> tuple:
        """The arrays a kernel takes, in the catalog's order: (A, B, C), (A, Bt, C) for an
        "NT" kernel (Bt made once, on first use), (out, X) for a copy or a transpose."""
        a = self.arrays
        if self.op != "gemm":
            return a["out"], a["X"]
        require(layout in ("NN", "NT"), "layout", layout, "must be 'NN' or 'NT'")
        if layout == "NT" and "Bt" not in a:
            a["Bt"] = verify.array_module(a["B"]).ascontiguousarray(a["B"].T)
        return a["A"], a["Bt" if layout == "NT" else "B"], a["C"]

    def check(self, what: str) -> float:
        """The output against :attr:`expect`: :func:`helpers.runtime.verify.check` for a GEMM
        (returns the relative error), exact equality otherwise (returns 0.0). Raises
        :class:`helpers.runtime.verify.WrongResult`."""
        if self.op == "gemm":
            return verify.check(self.output, self.expect, self.dtype, what=what)
        return verify.check_exact(self.output, self.expect, what=what)


def _matrix(rows: int, cols: int, dtype: str, offset: int = 0, fill: bool = True):
    """A (rows, cols) device matrix starting ``offset`` elements into its buffer (1 gives a
    base pointer that is only 2-byte aligned for 16-bit types); random if ``fill``."""
    n = rows * cols + offset
    flat = verify.random_matrix((n,), dtype) if fill else gpu.cupy().empty((n,), verify.np_dtype(dtype))
    return flat[offset:].reshape(rows, cols)


def inputs(shape, dtype: str = "float32", op: str = "gemm", *, out_dtype: str | None = None,
           offsets=(0, 0, 0)) -> Inputs:
    """Fresh random inputs for :func:`measure`, made once and shareable by several measurements.

    GEMM: A (M, K) and B (K, N) standard normal rounded to ``dtype``, C (M, N) of
    ``out_dtype`` (default ``dtype``), each starting ``offsets[i]`` elements into its buffer;
    the float64 reference of the same rounded inputs; cuBLAS (``cupy.matmul``) into its own
    C as the reference. Copy and transpose (float32 only): X (ROWS, COLS) standard normal,
    out (ROWS, COLS) or (COLS, ROWS), the exact result, a device-to-device copy of X as the
    reference. Raises ValueError for a bad ``op``, ``shape``, ``dtype`` or ``offsets``
    (before anything reaches the GPU), RuntimeError without a GPU.
    """
    require(op in OPS, "op", op, f"must be one of {OPS}")
    dims = ("M", "N", "K") if op == "gemm" else ("ROWS", "COLS")
    require(len(shape) == len(dims), "shape", tuple(shape), f"must be ({', '.join(dims)})")
    for n, v in zip(dims, shape):
        require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1, n, v,
                "must be a positive integer")
    shape = tuple(int(v) for v in shape)
    require(dtype in verify.TOLERANCE and dtype != "tf32", "dtype", dtype, "must be float32, float16 or bfloat16")
    require(op == "gemm" or dtype == "float32", "dtype", dtype, f"must be float32 for a {op}")
    require(len(offsets) == 3 and all(isinstance(o, int) and o >= 0 for o in offsets), "offsets", offsets,
            "must be three integers >= 0 (elements into the buffers of A, B, C)")
    cp = gpu.cupy()
    if op == "gemm":
        M, N, K = shape
        A, B = _matrix(M, K, dtype, offsets[0]), _matrix(K, N, dtype, offsets[1])
        C = _matrix(M, N, out_dtype or dtype, offsets[2], fill=False)
        blas = timing.cublas_gemm(A, B, cp.empty((M, N), verify.np_dtype(dtype)))
        return Inputs(op, shape, dtype, {"A": A, "B": B, "C": C}, verify.reference_gemm(A, B), blas)
    R, Cc = shape
    X = verify.random_matrix((R, Cc))
    out = cp.empty((R, Cc) if op == "copy" else (Cc, R), cp.float32)
    return Inputs(op, shape, dtype, {"X": X, "out": out}, X if op == "copy" else X.T,
                  timing.memcpy_d2d(cp.empty_like(X), X))


def measure(run, shape, dtype: str = "float32", op: str = "gemm", *, data: Inputs | None = None,
            layout: str = "NN", out_dtype: str | None = None, check: bool = True, timed: bool = True,
            rounds: int = 3, budget_ms: float = 400.0, timer=None, what: str | None = None,
            chapter: int | None = None, kernel: str = "kernel", title: str | None = None,
            params: dict | None = None, note: str | None = None) -> results.Record:
    """Check ``run`` and time it against the same-run reference: the one measurement loop.

    ``run(*args)`` enqueues the kernel (and everything it needs) on the current stream;
    ``args`` are the arrays of :meth:`Inputs.args`: (A, B, C) for a GEMM, (A, Bt, C) when
    ``layout`` is "NT", (out, X) for a copy or a transpose. ``shape`` is (M, N, K) or
    (ROWS, COLS), ``dtype`` the input dtype, ``op`` "gemm" (reference: cuBLAS), "transpose"
    or "copy" (reference: a device-to-device copy). ``data``: shared inputs from
    :func:`inputs` (made for this ``shape``, ``dtype`` and ``op``); None makes fresh ones
    (C of ``out_dtype``).

    ``check``: poison the output with NaN, run once, compare with the expected result
    (False only for a build that computes a wrong result on purpose). ``timed``: False
    checks only. The timing is :func:`helpers.runtime.timing.time_pair` (``rounds``
    alternating rounds, about ``budget_ms`` of timed calls; ``timer`` replaces the
    CUDA-event timer in tests).

    Returns a :class:`helpers.runtime.results.Record` (``source="live"``): ``value`` in
    TFLOP/s or GB/s, ``reference_value`` the same of the reference, ``ratio`` =
    value / reference_value, ``rel_err`` (None when not checked; 0.0 for an exact
    check), ``ms`` (median), ``repeats``, ``rounds``, and the labels ``chapter``,
    ``kernel``, ``title``, ``params``, ``note``; ``value`` and the reference's are None
    when not ``timed``. Raises ValueError for bad arguments (before any run),
    :class:`helpers.runtime.verify.WrongResult` for a wrong result.
    """
    timing.check_rounds(rounds)
    require(op in OPS, "op", op, f"must be one of {OPS}")
    shape = tuple(int(v) for v in shape)
    data = data if data is not None else inputs(shape, dtype, op, out_dtype=out_dtype)
    require((data.op, tuple(data.shape), data.dtype) == (op, shape, dtype), "data",
            f"{data.op} {data.shape} {data.dtype}", f"must be inputs made for {op} {shape} {dtype}")
    args = data.args(layout)
    label = dict(chapter=chapter, kernel=kernel, title=title, params=dict(params or {}), dtype=dtype,
                 shape=list(shape), metric=METRIC[op], reference=REFERENCE[op], note=note, source="live")

    def go():
        run(*args)
    err = None
    if check:
        verify.poison(data.output)
        go()
        err = data.check(what or (f"{kernel} {params}" if params else kernel))
    if not timed:
        return results.Record(**label, value=None, reference_value=None, ratio=None, rel_err=err)
    t = timing.time_pair(go, data.reference, rounds=rounds, budget_ms=budget_ms, timer=timer)
    v, rv = data.rate(t["ms"]), data.rate(t["ref_ms"])
    return results.Record(**label, value=sig(v), reference_value=sig(rv), ratio=sig(v / rv, 4), rel_err=err,
                          ms=sig(t["ms"]), repeats=t["n"], rounds=rounds)


def against_copy(run, nbytes: int, rounds: int = 3, budget_ms: float = 60.0) -> dict:
    """Time ``run()`` (enqueues work that must move at least ``nbytes`` bytes, read + written)
    against a device-to-device copy of ``nbytes // 2`` bytes, which reads and writes ``nbytes``
    in all, in ``rounds`` alternating rounds (:func:`helpers.runtime.timing.time_pair`). Returns
    {"ms", "copy_ms", "of_copy_bound": copy_ms / ms (1: ``run`` moves its bytes at the copy's
    rate), "copy_GBps": nbytes over the copy's time}. Check ``run``'s result first (:func:`measure`):
    this only times. Raises ValueError for bad ``rounds`` or ``nbytes`` < 2."""
    require(isinstance(nbytes, int) and nbytes >= 2, "nbytes", nbytes, "must be an integer >= 2")
    cp = gpu.cupy()
    src = cp.empty(nbytes // 2, cp.uint8)
    dst = cp.empty_like(src)
    t = timing.time_pair(run, timing.memcpy_d2d(dst, src), rounds=rounds, budget_ms=budget_ms)
    return {"ms": t["ms"], "copy_ms": t["ref_ms"], "of_copy_bound": sig(t["ref_ms"] / t["ms"], 3),
            "copy_GBps": sig(nbytes / (t["ref_ms"] * 1e-3) / 1e9, 4)}


def _of_launch(L: launch.Launch, data: Inputs, check: bool = True, rounds: int = 3,
               budget_ms: float = 400.0) -> dict:
    """:func:`measure` of a prepared catalog launch on ``data``, as a record dict."""
    spec = L.spec
    dims = tuple(L.shape)
    return measure(lambda *a: L(*a, *dims), dims, data.dtype, spec.op, data=data, layout=spec.layout,
                   check=check, rounds=rounds, budget_ms=budget_ms, chapter=spec.chapter, kernel=spec.key,
                   title=spec.title, params=L.params).as_dict()


def prepared(L: launch.Launch, rounds: int = 3, budget_ms: float = 400.0) -> dict:
    """Measure one kernel already validated and compiled by :func:`helpers.runtime.launch.prepare`
    (a live control's run: prepared once, measured here) on fresh inputs of its shape:
    the record of :func:`gemm` or :func:`transpose`. Needs a GPU."""
    spec = L.spec
    data = inputs(L.shape, spec.dtype, spec.op, out_dtype=spec.out_dtype)
    return _of_launch(L, data, rounds=rounds, budget_ms=budget_ms)


# ------------------------------------------------------------------ lists of catalog kernels
def gemm(items, shape=(4096, 4096, 4096), dtype: str | None = None, verify_each: bool = True,
         rounds: int = 3, budget_ms: float = 400.0) -> list:
    """Measure GEMM kernels; ``items`` are catalog keys or (key, params) pairs.

    ``shape`` is (M, N, K). All kernels must share one input dtype (``dtype``
    defaults to the first kernel's). Returns one record per kernel with
    ``value`` (TFLOP/s), ``reference_value`` (cuBLAS TFLOP/s, same run),
    ``ratio`` (= value / reference_value), ``rel_err``, ``ms``, ``repeats`` and
    ``source`` ("live" or "recorded"). Each kernel is timed against its own
    cuBLAS run in ``rounds`` alternating rounds (:func:`helpers.runtime.timing.time_pair`),
    so a GPU that slows down as it heats does not favour whichever ran first; each pair
    gets about ``budget_ms`` of timed calls.
    Raises ValueError for bad params, shapes or ``rounds``, WrongResult for a
    wrong kernel.
    """
    cfgs = _configs(items)
    dtype = dtype or cfgs[0][0].dtype
    timing.check_rounds(rounds)
    split = _split(cfgs, gemm, dtype, shape, "TFLOP/s", "cuBLAS", dtype, verify_each, rounds)
    if split is not None:                            # e.g. cp.async kernels on a T4, sm_90a ones on an L4
        return split
    if not gpu.live():
        return [_recorded(s, p, dtype, shape, "TFLOP/s", "cuBLAS") for s, p in cfgs]
    launches = [launch.prepare(s.key, shape, **p) for s, p in cfgs]   # all checks before any run
    data = inputs(shape, dtype, "gemm", out_dtype=cfgs[0][0].out_dtype)
    return [_of_launch(L, data, check=verify_each, rounds=rounds, budget_ms=budget_ms) for L in launches]


def transpose(items, shape=(4096, 4096), rounds: int = 3) -> list:
    """Measure transpose/copy kernels on a (ROWS, COLS) float32 matrix.

    Returns records with ``value`` = effective GB/s (2 * ROWS * COLS * 4 bytes
    over the median time), ``reference_value`` = device-to-device cudaMemcpy
    GB/s of the same bytes, timed in ``rounds`` rounds alternating with each
    kernel (:func:`helpers.runtime.timing.time_pair`), ``ratio``, and ``rel_err`` (0
    when the output equals the exact transpose, which it must: no arithmetic).
    """
    cfgs = _configs(items)
    timing.check_rounds(rounds)
    split = _split(cfgs, transpose, "float32", shape, "GB/s", "cudaMemcpy D2D", rounds)
    if split is not None:
        return split
    if not gpu.live():
        return [_recorded(s, p, "float32", shape, "GB/s", "cudaMemcpy D2D") for s, p in cfgs]
    launches = [launch.prepare(s.key, shape, **p) for s, p in cfgs]
    data = {op: inputs(shape, "float32", op) for op in {s.op for s, _ in cfgs}}
    return [_of_launch(L, data[L.spec.op], rounds=rounds) for L in launches]


def recorded(items, shape=(4096, 4096, 4096), dtype: str | None = None) -> list:
    """The records of ``items`` (catalog keys or (key, params) pairs) read from
    ``results/<slug>.json`` without running anything, live or not; a kernel with no record
    gets a row with ``value`` None and ``note`` "not recorded". ``shape`` is (M, N, K)."""
    cfgs = _configs(items)
    dtype = dtype or cfgs[0][0].dtype
    return [_recorded(s, p, dtype, shape, "TFLOP/s", "cuBLAS") for s, p in cfgs]


def record_is_this_gpu() -> bool:
    """True when no GPU is here, or when the GPU here is the one ``results/<slug>.json``
    was recorded on (its provenance names the same device)."""
    if not gpu.live():
        return True
    return results.load().get("provenance", {}).get("gpu") == gpu.device_info()["name"]


def speedup(a: dict | None, b: dict | None) -> float | None:
    """How many times faster record ``a`` ran than record ``b``: the quotient of their ratios
    to the reference. Each kernel is timed against its own reference in alternating rounds, so
    its ratio, not its TFLOP/s, is what a clock that moved between the two timings leaves
    comparable (METHOD: every speed a ratio to a same-run reference). None when either ratio
    is missing (not recorded, or a GPU that cannot run it)."""
    return a["ratio"] / b["ratio"] if a and b and a.get("ratio") and b.get("ratio") else None


def kernel_label(r: dict) -> str:
    """A record's kernel as the running table and the staircase name it: its catalog title
    without the rung number a chapter's ladder prefixes it with ("9: predicated ...") and without
    the dtype tag at its end (" (f16)"), since both show the dtype beside it."""
    t = re.sub(r"^\d+:\s*", "", r.get("title") or r["kernel"])
    return re.sub(r"\s*\((?:f16|bf16|fp16|f32|fp32|tf32)\)$", "", t)


def where(recs: list) -> str:
    """'measured live in this run on ...' or 'recorded on ...; no GPU in this run'; when some
    rows are recorded because this GPU cannot run them, that is said too."""
    live = any(r.get("source") == "live" for r in recs)
    w = results.where(live)
    if not live and gpu.live():                      # rows read from this GPU's record (common.running)
        w = w.replace("; no GPU in this run", "; read from the record, not measured in this run")
    if any(r.get("unable") for r in recs):
        prov = results.load().get("provenance", {})
        w += (f"; rows marked [needs ...] (hatched bars) were recorded on {prov.get('gpu', 'the recorded GPU')} "
              f"({prov.get('date', '?')}): this GPU cannot run them")
    tuned = [r for r in recs if r.get("source") == "recorded" and r.get("from")]
    if tuned:
        w += "; " + ", ".join(sorted({r["kernel"] for r in tuned})) + " at the tuned default: timed by the autotuner (" \
             + ", ".join(sorted({f"{r['from']}, {(r.get('recorded') or {}).get('date', '?')}" for r in tuned})) + ")"
    return w
