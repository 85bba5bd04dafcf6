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
    r = results.lookup(spec.key, p, dtype, shape)
    if r is None:
        return {"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                "dtype": dtype, "shape": list(shape), "metric": metric, "value": None,
                "reference": reference, "reference_value": None, "ratio": None,
                "rel_err": None, "source": "recorded", "note": "not recorded"}
    return {**r, "title": spec.title, "source": "recorded"}


def gemm(items, shape=(4096, 4096, 4096), dtype: str | None = None, verify_each: bool = True,
         rounds: int = 3) -> list:
    """Measure GEMM kernels; ``items`` are catalog keys or (key, params) pairs.

    ``shape`` is (M, N, K). All kernels must share one input dtype (``dtype``
    defaults to the first kernel's). Returns one record per kernel with
    ``value`` (TFLOP/s), ``reference_value`` (cuBLAS TFLOP/s, same run),
    ``ratio`` (= value / reference_value), ``rel_err``, ``ms``, ``repeats`` and
    ``source`` ("live" or "recorded"). Each kernel is timed against its own
    cuBLAS run in ``rounds`` alternating rounds (:func:`helpers.timing.time_pair`),
    so a GPU that slows down as it heats does not favour whichever ran first.
    Raises ValueError for bad params, shapes or ``rounds``, WrongResult for a
    wrong kernel.
    """
    cfgs = _configs(items)
    dtype = dtype or cfgs[0][0].dtype
    M, N, K = shape
    timing.check_rounds(rounds)
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
        t = timing.time_pair(run, blas, rounds=rounds)
        tf, ref_tf = timing.tflops(fl, t["ms"]), timing.tflops(fl, t["ref_ms"])
        recs.append({"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                     "dtype": dtype, "shape": [M, N, K], "metric": "TFLOP/s", "value": sig(tf),
                     "reference": "cuBLAS", "reference_value": sig(ref_tf),
                     "ratio": sig(tf / ref_tf, 4), "rel_err": err, "ms": sig(t["ms"]),
                     "repeats": t["n"], "rounds": rounds, "source": "live"})
    return recs


def transpose(items, shape=(4096, 4096), rounds: int = 3) -> list:
    """Measure transpose/copy kernels on a (ROWS, COLS) float32 matrix.

    Returns records with ``value`` = effective GB/s (2 * ROWS * COLS * 4 bytes
    over the median time), ``reference_value`` = device-to-device cudaMemcpy
    GB/s of the same bytes, timed in ``rounds`` rounds alternating with each
    kernel (:func:`helpers.timing.time_pair`), ``ratio``, and ``rel_err`` (0
    when the output equals the exact transpose, which it must: no arithmetic).
    """
    cfgs = _configs(items)
    R, Cc = shape
    timing.check_rounds(rounds)
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
        recs.append({"chapter": spec.chapter, "kernel": spec.key, "title": spec.title, "params": p,
                     "dtype": "float32", "shape": [R, Cc], "metric": "GB/s", "value": sig(gb),
                     "reference": "cudaMemcpy D2D", "reference_value": sig(ref_gb),
                     "ratio": sig(gb / ref_gb, 4), "rel_err": 0.0, "ms": sig(t["ms"]),
                     "repeats": t["n"], "rounds": rounds, "source": "live"})
    return recs


def where(recs: list) -> str:
    """'measured live in this run on ...' or 'recorded on ...; no GPU here'."""
    return results.where(any(r.get("source") == "live" for r in recs))


def banner() -> None:
    """Display whether this notebook runs live (and on which GPU) or recorded."""
    from . import show
    if gpu.live():
        info = gpu.device_info()
        show.note(f"**Live mode.** Kernels are compiled and measured on this machine's "
                  f"{info['name']} (sm_{info['cc'][0]}{info['cc'][1]}, {info['sms']} SMs). Every speed "
                  "below is compared with a reference timed in the same run.", title="Where the numbers come from")
    else:
        data = results.load()
        show.note(f"**Recorded mode: no CUDA GPU is visible here.** Figures are computed, but "
                  f"measurements are read from `results/{results.DEFAULT_SLUG}.json`, recorded on "
                  f"{results.describe(data['provenance'], data)}. Run the notebook on a GPU to measure your own.",
                  title="Where the numbers come from")


COLUMNS = {"title": "kernel", "params": "parameters", "shape": "shape", "value": "value",
           "metric": "unit", "reference_value": "reference", "ratio": "ratio", "rel_err": "rel. error"}


def show_table(recs: list, caption: str = "") -> None:
    """Display measurement records as a table captioned with where they were measured."""
    from . import show
    rows = [{**r, "params": " ".join(f"{k}={v}" for k, v in r["params"].items())} for r in recs]
    ref = recs[0].get("reference", "") if recs else ""
    w = where(recs)
    cap = (caption + " " if caption else "") + f"Reference: {ref}, same run. {w[0].upper() + w[1:]}."
    show.table(rows, COLUMNS, cap)


def bar(recs: list, title: str):
    """A bar chart of records' ratio to their same-run reference (plotly Figure)."""
    import plotly.graph_objects as go
    ok = [r for r in recs if r.get("value") is not None]
    ref = ok[0]["reference"] if ok else ""
    fig = go.Figure(go.Bar(x=[r["title"] for r in ok], y=[r["ratio"] for r in ok],
                           text=[f"{r['value']:.0f} {r['metric']}" if r["value"] >= 10 else f"{r['value']:.2f} {r['metric']}"
                                 for r in ok], textposition="outside",
                           hovertext=[f"{r['params']}, {r['ms']} ms" if r.get("ms") else str(r["params"]) for r in ok],
                           hoverinfo="x+y+text"))
    fig.update_layout(title=dict(text=f"{title}<br><sup>{where(recs)}</sup>", x=0.01),
                      yaxis=dict(title=f"fraction of {ref} (same run)", rangemode="tozero"),
                      height=380, margin=dict(l=60, r=20, t=70, b=40))
    return fig


# The kernel that stands for each heaven in the running table (its default parameters).
HEADLINE = {1: "naive_yfirst", 2: "vec4", 3: "smem_tiled", 4: "tile1d_swizzle", 5: "cp_async",
            6: "wmma_f16", 7: "mma_sync_f16"}


def running(upto: int, shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) the headline kernel of every heaven from 1 to ``upto``.

    FP32 heavens run in one call (one cuBLAS SGEMM reference); each Tensor
    Core dtype runs in its own call with its own cuBLAS reference. Heavens
    whose headline kernel is not in the catalog are left out."""
    keys = [HEADLINE[h] for h in sorted(HEADLINE) if h <= upto and HEADLINE[h] in catalog.KERNELS]
    by_dtype: dict = {}
    for k in keys:
        by_dtype.setdefault(catalog.get(k).dtype, []).append(k)
    recs = []
    for dt, ks in by_dtype.items():
        recs += gemm(ks, shape, dtype=dt)
    return sorted(recs, key=lambda r: r["chapter"])


def show_running(recs: list) -> None:
    """The running table: one row per heaven, TFLOP/s and ratio to cuBLAS of its dtype."""
    from . import show
    rows = [{"heaven": r["chapter"], "kernel": r.get("title", r["kernel"]), "dtype": r["dtype"],
             "TFLOP/s": r["value"], "cuBLAS TFLOP/s": r["reference_value"], "ratio": r["ratio"]} for r in recs]
    w = where(recs)
    show.table(rows, list(rows[0]) if rows else ["heaven"],
               f"The heavens so far at 4096^3, each against cuBLAS of its dtype in the same run. {w[0].upper() + w[1:]}.")
