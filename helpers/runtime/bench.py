"""Measure kernels the honest way, or read what was recorded when there is no GPU.

:func:`gemm` and :func:`transpose` are what the notebooks call. Live, each one:

1. draws fresh random inputs and computes the float64 reference once;
2. for every kernel: poisons the output with NaN, runs it once, verifies it
   (AssertionError if wrong), then times it (CUDA events, warm-up, median);
3. times the reference implementation (cuBLAS, or a device-to-device copy) on
   the same inputs in the same run, and reports each kernel's ratio to it.

Without a GPU they return the records of ``results/<gpu>.json`` instead,
marked ``source="recorded"``; a kernel never recorded comes back with
``value=None``; a configuration the autotuner timed (a tuned default,
:mod:`helpers.runtime.defaults`) is read from ``results/<gpu>-tuning.json`` when the results
file lacks it. A kernel the GPU cannot run (:func:`helpers.runtime.launch.unable`:
its compute capability or its shared memory, on the real or the simulated GPU)
comes back recorded too, its title labelled with why ("needs sm_80 or newer; this
GPU is sm_75: recorded on NVIDIA H200"), while the others are measured live. Each record follows the results contract (docs/architecture.md).
"""
from __future__ import annotations

from . import catalog, defaults, gpu, launch, results, timing, verify

Config = "str | tuple[str, dict]"


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
    M, N, K = shape
    timing.check_rounds(rounds)
    split = _split(cfgs, gemm, dtype, shape, "TFLOP/s", "cuBLAS", dtype, verify_each, rounds)
    if split is not None:                            # e.g. cp.async kernels on a T4, sm_90a ones on an L4
        return split
    if not gpu.live():
        return [_recorded(s, p, dtype, shape, "TFLOP/s", "cuBLAS") for s, p in cfgs]
    cp = gpu.cupy()
    launches = [launch.prepare(s.key, shape, **p) for s, p in cfgs]   # all checks before any run
    A = verify.random_matrix((M, K), dtype)
    B = verify.random_matrix((K, N), dtype)
    Bt = cp.ascontiguousarray(B.T) if any(s.layout == "NT" for s, _ in cfgs) else None
    ref = verify.reference_gemm(A, B)
    out_dt = verify.np_dtype(cfgs[0][0].out_dtype)
    C = cp.empty((M, N), dtype=out_dt)
    fl = timing.gemm_flops(M, N, K)
    blas = timing.cublas_gemm(A, B, cp.empty((M, N), dtype=verify.np_dtype(dtype)))
    recs = []
    for (spec, p), L in zip(cfgs, launches):
        b = Bt if spec.layout == "NT" else B
        run = lambda: L(A, b, C, M, N, K)
        err = None
        if verify_each:
            verify.poison(C)
            run()
            err = verify.check(C, ref, dtype, what=f"{spec.key} {p}")
        t = timing.time_pair(run, blas, rounds=rounds, budget_ms=budget_ms)
        tf, ref_tf = timing.tflops(fl, t["ms"]), timing.tflops(fl, t["ref_ms"])
        recs.append(results.Record(chapter=spec.chapter, kernel=spec.key, title=spec.title, params=p, dtype=dtype,
                                   shape=[M, N, K], metric="TFLOP/s", value=sig(tf), reference="cuBLAS",
                                   reference_value=sig(ref_tf), ratio=sig(tf / ref_tf, 4), rel_err=err,
                                   ms=sig(t["ms"]), repeats=t["n"], rounds=rounds, source="live").as_dict())
    return recs


def transpose(items, shape=(4096, 4096), rounds: int = 3) -> list:
    """Measure transpose/copy kernels on a (ROWS, COLS) float32 matrix.

    Returns records with ``value`` = effective GB/s (2 * ROWS * COLS * 4 bytes
    over the median time), ``reference_value`` = device-to-device cudaMemcpy
    GB/s of the same bytes, timed in ``rounds`` rounds alternating with each
    kernel (:func:`helpers.runtime.timing.time_pair`), ``ratio``, and ``rel_err`` (0
    when the output equals the exact transpose, which it must: no arithmetic).
    """
    cfgs = _configs(items)
    R, Cc = shape
    timing.check_rounds(rounds)
    split = _split(cfgs, transpose, "float32", shape, "GB/s", "cudaMemcpy D2D", rounds)
    if split is not None:
        return split
    if not gpu.live():
        return [_recorded(s, p, "float32", shape, "GB/s", "cudaMemcpy D2D") for s, p in cfgs]
    cp = gpu.cupy()
    launches = [launch.prepare(s.key, shape, **p) for s, p in cfgs]
    X = verify.random_matrix((R, Cc))
    nbytes = 2 * X.nbytes
    dst = cp.empty_like(X)
    copy = timing.memcpy_d2d(dst, X)
    recs = []
    for (spec, p), L in zip(cfgs, launches):
        out = cp.empty((R, Cc) if spec.op == "copy" else (Cc, R), cp.float32)
        expect = X if spec.op == "copy" else X.T
        verify.poison(out)
        L(out, X, R, Cc)
        bad = int((out != expect).sum())   # NaN != anything, so unwritten elements count
        if bad:
            raise verify.WrongResult(f"{spec.key} {p}: {bad} of {out.size} elements wrong or never written")
        t = timing.time_pair(lambda: L(out, X, R, Cc), copy, rounds=rounds)
        gb, ref_gb = timing.gbps(nbytes, t["ms"]), timing.gbps(nbytes, t["ref_ms"])
        recs.append(results.Record(chapter=spec.chapter, kernel=spec.key, title=spec.title, params=p,
                                   dtype="float32", shape=[R, Cc], metric="GB/s", value=sig(gb),
                                   reference="cudaMemcpy D2D", reference_value=sig(ref_gb),
                                   ratio=sig(gb / ref_gb, 4), rel_err=0.0, ms=sig(t["ms"]), repeats=t["n"],
                                   rounds=rounds, source="live").as_dict())
    return recs


def where(recs: list) -> str:
    """'measured live in this run on ...' or 'recorded on ...; no GPU here'; when some
    rows are recorded because this GPU cannot run them, that is said too."""
    live = any(r.get("source") == "live" for r in recs)
    w = results.where(live)
    if any(r.get("unable") for r in recs):
        prov = results.load().get("provenance", {})
        w += (f"; rows marked [needs ...] (hatched bars) were recorded on {prov.get('gpu', 'the recorded GPU')} "
              f"({prov.get('date', '?')}): this GPU cannot run them")
    tuned = [r for r in recs if r.get("source") == "recorded" and r.get("from")]
    if tuned:
        w += "; " + ", ".join(sorted({r["kernel"] for r in tuned})) + " at the tuned default: timed by the autotuner (" \
             + ", ".join(sorted({f"{r['from']}, {(r.get('recorded') or {}).get('date', '?')}" for r in tuned})) + ")"
    return w
