"""Measure kernels the honest way, or read what was recorded when there is no GPU.

:func:`gemm` and :func:`transpose` are what the notebooks call. Live, each one:

1. draws fresh random inputs and computes the float64 reference once;
2. for every kernel: poisons the output with NaN, runs it once, verifies it
   (AssertionError if wrong), then times it (CUDA events, warm-up, median);
3. times the reference implementation (cuBLAS, or a device-to-device copy) on
   the same inputs in the same run, and reports each kernel's ratio to it.

Without a GPU they return the records of ``results/<gpu>.json`` instead,
marked ``source="recorded"``; a kernel never recorded comes back with
``value=None``. Each record follows the results contract (DESIGN.md).
"""
from __future__ import annotations

from . import catalog, gpu, launch, results, timing, verify

Config = "str | tuple[str, dict]"


def _configs(items) -> list:
    out = []
    for it in items:
        key, params = (it, {}) if isinstance(it, str) else (it[0], dict(it[1]))
        spec = catalog.get(key)
        out.append((spec, spec.params(**params)))
    return out


def _recorded(spec, p, dtype, shape, metric, reference):
    r = results.lookup(spec.key, p, dtype, shape)
    if r is None:
        return {"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                "dtype": dtype, "shape": list(shape), "metric": metric, "value": None,
                "reference": reference, "reference_value": None, "ratio": None,
                "rel_err": None, "source": "recorded", "note": "not recorded"}
    return {**r, "title": spec.title, "source": "recorded"}


def gemm(items, shape=(4096, 4096, 4096), dtype: str | None = None, verify_each: bool = True) -> list:
    """Measure GEMM kernels; ``items`` are catalog keys or (key, params) pairs.

    ``shape`` is (M, N, K). All kernels must share one input dtype (``dtype``
    defaults to the first kernel's). Returns one record per kernel with
    ``value`` (TFLOP/s), ``reference_value`` (cuBLAS TFLOP/s, same run),
    ``ratio``, ``rel_err``, ``ms`` and ``source`` ("live" or "recorded").
    Raises ValueError for bad params or shapes, WrongResult for a wrong kernel.
    """
    cfgs = _configs(items)
    dtype = dtype or cfgs[0][0].dtype
    M, N, K = shape
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
    cublas_ms = timing.time_ms(timing.cublas_gemm(A, B, cp.empty((M, N), dtype=verify.np_dtype(dtype))))["ms"]
    ref_tf = timing.tflops(fl, cublas_ms)
    recs = []
    for (spec, p), L in zip(cfgs, launches):
        b = Bt if spec.layout == "NT" else B
        run = lambda: L(A, b, C, M, N, K)
        err = None
        if verify_each:
            verify.poison(C)
            run()
            err = verify.check(C, ref, dtype, what=f"{spec.key} {p}")
        t = timing.time_ms(run)
        tf = timing.tflops(fl, t["ms"])
        recs.append({"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                     "dtype": dtype, "shape": [M, N, K], "metric": "TFLOP/s", "value": round(tf, 3),
                     "reference": "cuBLAS", "reference_value": round(ref_tf, 3),
                     "ratio": round(tf / ref_tf, 4), "rel_err": err, "ms": round(t["ms"], 4),
                     "repeats": t["n"], "source": "live"})
    return recs


def transpose(items, shape=(4096, 4096)) -> list:
    """Measure transpose/copy kernels on a (ROWS, COLS) float32 matrix.

    Returns records with ``value`` = effective GB/s (2 * ROWS * COLS * 4 bytes
    over the median time), ``reference_value`` = device-to-device cudaMemcpy
    GB/s of the same bytes in the same run, ``ratio``, and ``rel_err`` (0 when
    the output equals the exact transpose, which it must: no arithmetic).
    """
    cfgs = _configs(items)
    R, Cc = shape
    if not gpu.live():
        return [_recorded(s, p, "float32", shape, "GB/s", "cudaMemcpy D2D") for s, p in cfgs]
    cp = gpu.cupy()
    launches = [launch.prepare(s.key, shape, **p) for s, p in cfgs]
    X = verify.random_matrix((R, Cc))
    nbytes = 2 * X.nbytes
    dst = cp.empty_like(X)
    ref_gb = timing.gbps(nbytes, timing.time_ms(timing.memcpy_d2d(dst, X))["ms"])
    recs = []
    for (spec, p), L in zip(cfgs, launches):
        out = cp.empty((R, Cc) if spec.op == "copy" else (Cc, R), cp.float32)
        expect = X if spec.op == "copy" else X.T
        verify.poison(out)
        L(out, X, R, Cc)
        bad = int((out != expect).sum())   # NaN != anything, so unwritten elements count
        if bad:
            raise verify.WrongResult(f"{spec.key} {p}: {bad} of {out.size} elements wrong or never written")
        t = timing.time_ms(lambda: L(out, X, R, Cc))
        gb = timing.gbps(nbytes, t["ms"])
        recs.append({"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                     "dtype": "float32", "shape": [R, Cc], "metric": "GB/s", "value": round(gb, 1),
                     "reference": "cudaMemcpy D2D", "reference_value": round(ref_gb, 1),
                     "ratio": round(gb / ref_gb, 4), "rel_err": 0.0, "ms": round(t["ms"], 5),
                     "repeats": t["n"], "source": "live"})
    return recs


def where(recs: list) -> str:
    """'measured live in this run on ...' or 'recorded on ...; no GPU here'."""
    return results.where(any(r.get("source") == "live" for r in recs))
