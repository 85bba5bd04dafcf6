"""Appendix, pitfalls (kernels/11_pitfalls.cu): broken kernels beside their fixes, each with its check.

Catalog entries: the three pairs of kernels/11_pitfalls.cu (double buffer, barrier in a
branch, transpose coordinates). The other pitfalls reuse other chapters' kernels by
catalog key (chapter 2's ``vec4``, chapter 5's ``cp_async_pitfall``, chapter 6's WMMA
pair) and the runtime's measurements (``helpers.runtime.precision``).

Every pitfall has a ``*_run()`` that measures it on a GPU (the notebook live, and
``scripts/record_pitfalls.py``, which stores them all in ``results/<gpu>-pitfalls.json``)
and a ``show_*()`` the notebook calls: live when this GPU can run it, else the record,
labelled, else a line saying it is not recorded yet. Launches that may hang or break
the CUDA context (a barrier not every thread reaches, a misaligned float4) run only in a
child process with a time limit (:mod:`helpers.runtime.isolated`); so do the
compute-sanitizer runs.
"""
from __future__ import annotations

import time

from helpers.figures import show
from helpers.models.raster import cdiv
from helpers.runtime import bench, catalog, gpu, isolated, launch, precision, results, timing, verify
from helpers.runtime.catalog import Kernel, register

ARTIFACT = "pitfalls"
RECORDER = "python scripts/record_pitfalls.py"

# Plain CUDA (no cp.async, no Tensor Cores). sm_70: what the text says about a barrier
# that part of a warp skips is the behaviour of independent thread scheduling (Volta on);
# every GPU the book simulates (T4 on) runs them live.
PITFALL_CC = (7, 0)
_G = dict(chapter=11, file="11_pitfalls.cu", op="gemm", min_cc=PITFALL_CC, defaults={"TILE": 16},
          block=lambda p: (p["TILE"], p["TILE"], 1),
          grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1))
_T = dict(chapter=11, file="11_pitfalls.cu", op="transpose", min_cc=PITFALL_CC, defaults={"BLOCK_ROWS": 8},
          block=lambda p: (32, p["BLOCK_ROWS"], 1),
          grid=lambda p, s: (cdiv(s[1], 32), cdiv(s[0], 32), 1))
register(Kernel(key="dbuf_fixed", title="double buffer, one barrier per k-tile", entry="dbuf_gemm_fixed", **_G))
register(Kernel(key="dbuf_no_barrier_pitfall", title="pitfall: double buffer without its barrier",
                entry="dbuf_gemm_broken",
                pitfall="the barrier after storing the next tile is left out: read-after-write and "
                        "write-after-read races on the two shared buffers (racecheck reports them; the "
                        "result is wrong whenever the warps drift apart)", **_G))
register(Kernel(key="guard_fixed", title="bounds check around the loads and the store only",
                entry="guard_gemm_fixed", **_G))
register(Kernel(key="sync_in_branch_pitfall", title="pitfall: __syncthreads() inside the bounds check",
                entry="guard_gemm_broken",
                pitfall="the k loop and its barriers sit inside `if (row < M && col < N)`: in a block that "
                        "overhangs C some threads skip the barriers (undefined: may hang) and never load their "
                        "share of the tiles (wrong results at the edges; on the H200 synccheck reported nothing, "
                        "the reference check caught it). "
                        "Run it only in a subprocess with a time limit.", **_G))
register(Kernel(key="transpose_swapped", title="transpose, block coordinates swapped", entry="transpose_swapped",
                **_T))
register(Kernel(key="transpose_unswapped_pitfall", title="pitfall: transpose with unswapped block coordinates",
                entry="transpose_unswapped",
                pitfall="the output tile is written at the input tile's block coordinates: only diagonal "
                        "tiles land right; on a non-square matrix part of out is never written", **_T))

# Kernels borrowed from other chapters, by catalog key (chapters stay independent).
VEC4 = "vec4"                                             # chapter 2: float4 loads of A and B
SPILL_PAIR = ("cp_async", "cp_async_pitfall")             # chapter 5: __launch_bounds__(256, 2)
ACC_PAIR = ("wmma_f16", "wmma_acc_f16_pitfall")           # chapter 6: fp32 / fp16 accumulator


def can_run(*keys) -> bool:
    """True when this process measures live and the GPU the book decides for runs every kernel."""
    return gpu.live() and all(launch.unable(catalog.get(k)) is None for k in keys)


def recorded(name: str) -> tuple[dict | None, str]:
    """Section ``name`` of ``results/<gpu>-pitfalls.json`` and where it came from, or
    (None, "not recorded yet (...)")."""
    doc = results.artifact(ARTIFACT)
    where = results.artifact_where(doc, ARTIFACT)
    return (doc or {}).get(name), where


def _not_recorded(what: str, where: str) -> None:
    """A labelled line instead of a table: ``where`` says which file lacks the record."""
    how = f"on a GPU, `{RECORDER}` records it" if ARTIFACT in where else "on a GPU, the chapter's recorder writes it"
    show.note(f"{what}: **{where}**; {how}. On a GPU this cell runs it live.", title="Measurement")


def _sanitizer_fallback(rows: list, name: str, tool: str) -> list:
    """Live rows of ``tool`` where compute-sanitizer is missing here replaced by the recorded
    ones, labelled (a GPU without the CUDA toolkit, such as Colab's, still shows the finding)."""
    if all(r.get("caught") is not None for r in rows):
        return rows
    rec, where = recorded(name)
    if not rec:
        return rows
    return [{**r, "reports": [f"[{where}] " + ((r.get("reports") or [""])[0])]} for r in rec[tool]]


def _live_or_recorded(keys, run, name: str, what: str, sanitizer: str | None = None):
    """(d, where): ``run()`` live when this GPU can run every catalog key of ``keys``, else the
    record ``name`` of the appendix's results file. With ``sanitizer`` ("racecheck" or
    "synccheck"), live rows of that tool fall back to the recorded ones where
    compute-sanitizer is missing (:func:`_sanitizer_fallback`). When there is no record, a
    labelled note stands in for the tables (:func:`_not_recorded`) and ``d`` is None."""
    live = can_run(*keys)
    d, where = (run(), results.where(True)) if live else recorded(name)
    if d is not None and live and sanitizer:
        d[sanitizer] = _sanitizer_fallback(d[sanitizer], name, sanitizer)
    if d is None:
        _not_recorded(what, where)
    return d, where


def _san(tool: str, key: str, shape, timeout_s: float) -> dict:
    """One compute-sanitizer run of ``key``, reduced to what the tables show."""
    try:
        r = isolated.sanitize(tool, key, shape, timeout_s=timeout_s)
    except FileNotFoundError as e:
        return {"kernel": key, "tool": tool, "shape": list(shape), "caught": None, "skipped": str(e)}
    return {"kernel": key, "tool": tool, "shape": list(shape), "caught": r["caught"], "rc": r["rc"],
            "timed_out": r["timed_out"], "errors": r["errors"], "hazards": r["hazards"],
            "reports": r["reports"], "wall_s": r["wall_s"], "child": r["result"]}


def _san_rows(rows: list) -> list:
    out = []
    for r in rows:
        if r.get("skipped"):
            verdict = f"not run: {r['skipped']}"
        elif r["timed_out"]:
            verdict = f"timed out after {r['wall_s']} s (a hang): caught"
        else:
            n = r["hazards"] if r["tool"] == "racecheck" and r["hazards"] is not None else r["errors"]
            verdict = f"{'CAUGHT' if r['caught'] else 'clean'}: {n} {'hazards' if r['tool'] == 'racecheck' else 'errors'}"
        out.append({"kernel": r["kernel"], "check": f"`compute-sanitizer --tool {r['tool']}`",
                    "shape": " x ".join(map(str, r["shape"])), "verdict": verdict,
                    "first report": (r.get("reports") or ["-"])[0][:240]})
    return out


# ------------------------------------------------------------------ pitfall 1: a missing barrier
def double_buffer_run(shape=(1024, 1024, 1024), runs: int = 5, san_shape=(96, 80, 64),
                      san_timeout_s: float = 300) -> dict:
    """Both double-buffer kernels on fresh random fp32 inputs of ``shape``, ``runs`` times each
    (NaN-poisoned C, float64 reference, :func:`verify.check`), and each under racecheck on
    ``san_shape`` in a child process. Needs a GPU. Returns {"shape", "reference": rows, "racecheck": rows}."""
    cp = gpu.cupy()
    M, N, K = shape
    rows = []
    for key in ("dbuf_fixed", "dbuf_no_barrier_pitfall"):
        wrong, errs, msg = 0, [], ""
        for _ in range(runs):
            A, B = verify.random_matrix((M, K)), verify.random_matrix((K, N))
            C = cp.empty((M, N), cp.float32)
            verify.poison(C)
            launch.gemm(key, A, B, C)
            ref = verify.reference_gemm(A, B)
            errs.append(verify.rel_err(C, ref))
            try:
                verify.check(C, ref, "float32", what=key)
            except verify.WrongResult as e:
                wrong, msg = wrong + 1, str(e)
        rows.append({"kernel": key, "runs": runs, "wrong": wrong, "max_rel_err": max(errs), "message": msg})
    san = [_san("racecheck", k, san_shape, san_timeout_s) for k in ("dbuf_fixed", "dbuf_no_barrier_pitfall")]
    return {"shape": list(shape), "reference": rows, "racecheck": san}


def show_double_buffer() -> dict | None:
    """Pitfall 1 as two tables (reference check, racecheck), live or recorded.
    AssertionError when the fixed kernel fails a check or racecheck misses the race."""
    d, where = _live_or_recorded(("dbuf_fixed", "dbuf_no_barrier_pitfall"), double_buffer_run, "double_buffer",
                                 "The double-buffer pair", sanitizer="racecheck")
    if d is None:
        return None
    show.table([{**r, "verdict": "CAUGHT" if r["wrong"] else "passes"} for r in d["reference"]],
               ["kernel", "runs", ("wrong", "runs failing the check"), ("max_rel_err", "max. rel. error"),
                "verdict"],
               f"Reference check: fresh random inputs, C poisoned with NaN, float64 reference, fp32 tolerance "
               f"1e-5; M = N = K = {d['shape'][0]}; {where}.")
    show.table(_san_rows(d["racecheck"]), ["kernel", "check", "shape", "verdict", "first report"],
               f"racecheck in a child process; {where}.")
    fixed, broken = d["reference"]
    assert fixed["wrong"] == 0, f"dbuf_fixed failed the reference check: {fixed['message']}"
    rc = {r["kernel"]: r for r in d["racecheck"]}
    if rc["dbuf_fixed"]["caught"] is not None:
        assert rc["dbuf_no_barrier_pitfall"]["caught"], "racecheck did not report the missing barrier"
        assert not rc["dbuf_fixed"]["caught"], "racecheck reported the fixed double buffer"
    print(f"missing barrier: wrong in {broken['wrong']} of {broken['runs']} reference checks; racecheck: "
          + ("caught" if rc["dbuf_no_barrier_pitfall"]["caught"] else "not run"))
    return d


# ------------------------------------------------------------------ pitfall 2: a barrier in a branch
def sync_in_branch_run(shape=(1000, 1000, 1000), san_shape=(70, 100, 40), timeout_s: float = 120,
                       san_timeout_s: float = 300) -> dict:
    """Both guard kernels, each in a child process with a time limit (a hang costs
    ``timeout_s``): the reference check on ``shape`` (M, N not multiples of the tile),
    and synccheck on ``san_shape``. Returns {"shape", "reference": rows, "synccheck": rows}."""
    ref = []
    for key in ("guard_fixed", "sync_in_branch_pitfall"):
        r = isolated.gemm_child(key, shape, timeout_s=timeout_s)
        res = r["result"] or {}
        ref.append({"kernel": key, "timed_out": r["timed_out"], "rc": r["rc"], "wall_s": r["wall_s"],
                    "ok": res.get("ok"), "rel_err": res.get("rel_err"), "nans": res.get("nans"),
                    "message": res.get("message") or res.get("error") or (r["stderr"] or "")[-300:]})
    san = [_san("synccheck", k, san_shape, san_timeout_s) for k in ("guard_fixed", "sync_in_branch_pitfall")]
    return {"shape": list(shape), "reference": ref, "synccheck": san}


def show_sync_in_branch() -> dict | None:
    """Pitfall 2 as two tables, live (children with time limits) or recorded."""
    d, where = _live_or_recorded(("guard_fixed", "sync_in_branch_pitfall"), sync_in_branch_run, "sync_in_branch",
                                 "The barrier-in-a-branch pair", sanitizer="synccheck")
    if d is None:
        return None
    rows = [{"kernel": r["kernel"],
             "outcome": (f"timed out after {r['wall_s']} s (hang)" if r["timed_out"] else
                         "passes" if r["ok"] else "CAUGHT" if r["ok"] is False else f"no result (rc {r['rc']})"),
             "rel. error": r["rel_err"], "message": (r["message"] or "")[:160]} for r in d["reference"]]
    show.table(rows, ["kernel", "outcome", "rel. error", "message"],
               f"Reference check in a child process (time limit), M = N = K = {d['shape'][0]} (not a multiple "
               f"of the 16 x 16 tile); {where}.")
    show.table(_san_rows(d["synccheck"]), ["kernel", "check", "shape", "verdict", "first report"],
               f"synccheck in a child process; {where}.")
    fixed = d["reference"][0]
    assert fixed["ok"], f"guard_fixed failed: {fixed['message']}"
    return d


# ------------------------------------------------------------------ pitfall 3: transpose coordinates
def transpose_run(shapes=((1024, 1024), (1000, 600))) -> dict:
    """Both transposes on random fp32 inputs of each (ROWS, COLS): out poisoned with NaN, compared
    exactly with in.T. Returns {"rows": [{"kernel", "shape", "wrong", "nans", "total"}]}."""
    cp = gpu.cupy()
    rows = []
    for shape in shapes:
        X = verify.random_matrix(shape)
        for key in ("transpose_swapped", "transpose_unswapped_pitfall"):
            out = cp.empty(shape[::-1], cp.float32)
            verify.poison(out)
            launch.transpose(key, X, out)
            rows.append({"kernel": key, "shape": list(shape), "wrong": int((out != X.T).sum()),
                         "nans": int(cp.isnan(out).sum()), "total": int(out.size)})
    return {"rows": rows}


def show_transpose() -> dict | None:
    """Pitfall 3: the exact check of both transposes, live or recorded."""
    d, where = _live_or_recorded(("transpose_swapped", "transpose_unswapped_pitfall"), transpose_run, "transpose",
                                 "The transpose pair")
    if d is None:
        return None
    rows = [{**r, "shape": " x ".join(map(str, r["shape"])), "verdict": "CAUGHT" if r["wrong"] else "exact"}
            for r in d["rows"]]
    show.table(rows, ["kernel", ("shape", "ROWS x COLS"), ("wrong", "elements != in.T"),
                      ("nans", "never written (NaN)"), "total", "verdict"],
               f"out poisoned with NaN, compared element by element with in.T; {where}.")
    assert all(r["wrong"] == 0 for r in d["rows"] if r["kernel"] == "transpose_swapped")
    assert all(r["wrong"] > 0 for r in d["rows"] if r["kernel"] != "transpose_swapped")
    return d


# ------------------------------------------------------------------ pitfall 4: a misaligned float4
def misaligned_run(shape=(256, 256, 256), timeout_s: float = 120) -> dict:
    """Chapter 2's ``vec4`` on an A that starts one float into its allocation: the precondition's
    ValueError in this process (nothing launched), the fix (a copy, which CuPy allocates aligned)
    checked against float64, and the unchecked launch in a child process. Needs a GPU."""
    cp = gpu.cupy()
    M, N, K = shape
    A, B = verify.random_matrix((M, K)), verify.random_matrix((K, N))
    buf = cp.empty(M * K + 1, cp.float32)
    view = buf[1:].reshape(M, K)                      # C-contiguous, 4 bytes past a 256-byte boundary
    view[...] = A
    try:
        launch.gemm(VEC4, view, B)
        refused = None
    except ValueError as e:
        refused = f"{type(e).__name__}: {e}"
    fixed = view.copy()                               # a new allocation: aligned
    C = cp.empty((M, N), cp.float32)
    verify.poison(C)
    launch.gemm(VEC4, fixed, B, C)
    err = verify.check(C, verify.reference_gemm(fixed, B), "float32", what=VEC4)
    child = isolated.gemm_child(VEC4, shape, offset_a=1, unchecked=True, timeout_s=timeout_s)
    res = child["result"] or {}
    return {"shape": list(shape), "view_ptr_mod_16": int(view.data.ptr % 16), "copy_ptr_mod_16": int(fixed.data.ptr % 16),
            "precondition": refused, "fixed_rel_err": err,
            "unchecked": {"rc": child["rc"], "timed_out": child["timed_out"],
                          "error": res.get("error") or res.get("message") or child["stderr"][-300:]}}


def show_misaligned() -> dict | None:
    """Pitfall 4 as a table of three attempts, live or recorded."""
    d, where = _live_or_recorded((VEC4,), misaligned_run, "misaligned", "The misaligned float4")
    if d is None:
        return None
    u = d["unchecked"]
    rows = [{"attempt": "launch.gemm on the view (preconditions checked)", "where": "this process",
             "outcome": d["precondition"] or "launched (no precondition refused it!)"},
            {"attempt": "the same launch, preconditions skipped", "where": "a child process",
             "outcome": f"exit status {u['rc']}: {u['error']}"[:300]},
            {"attempt": "view.copy(), then launch.gemm", "where": "this process",
             "outcome": f"correct: relative error {d['fixed_rel_err']:.1e}"}]
    show.table(rows, ["attempt", "where", "outcome"],
               f"vec4 (chapter 2) with A = buf[1:].reshape(M, K): data pointer % 16 = {d['view_ptr_mod_16']}; "
               f"M, N, K = {tuple(d['shape'])}; {where}.")
    assert d["precondition"] and "16" in d["precondition"], "the precondition did not refuse the misaligned view"
    return d


# ------------------------------------------------------------------ pitfall 5: timing without synchronizing
def timing_run(shape=(2048, 2048, 2048)) -> dict:
    """``dbuf_fixed`` on ``shape`` timed three ways: a host clock around the launch alone, a
    host clock around launch + synchronize (one call), and CUDA events after warm-up (median,
    :func:`helpers.runtime.timing.time_ms`). Returns {"shape", "rows"} (ms, TFLOP/s, x events)."""
    cp = gpu.cupy()
    M, N, K = shape
    A, B = verify.random_matrix((M, K)), verify.random_matrix((K, N))
    C = cp.empty((M, N), cp.float32)
    L = launch.prepare("dbuf_fixed", shape)
    run = lambda: L(A, B, C, M, N, K)                 # noqa: E731
    run()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    run()
    nosync = (time.perf_counter() - t0) * 1e3
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    run()
    cp.cuda.Device().synchronize()
    withsync = (time.perf_counter() - t0) * 1e3
    ev = timing.time_ms(run)
    fl = timing.gemm_flops(M, N, K)
    rows = [{"how": "host clock around the launch, no synchronize", "ms": nosync},
            {"how": "host clock around launch + synchronize, one call", "ms": withsync},
            {"how": f"CUDA events, warm-up, median of {ev['n']}", "ms": ev["ms"]}]
    for r in rows:
        r["TFLOP/s"] = round(timing.tflops(fl, r["ms"]), 2)
        r["x events"] = round(ev["ms"] / r["ms"], 2)
        r["ms"] = round(r["ms"], 4)
    return {"shape": list(shape), "rows": rows}


def show_timing() -> dict | None:
    """Pitfall 5: the three timings, live or recorded."""
    d, where = _live_or_recorded(("dbuf_fixed",), timing_run, "timing", "The timing comparison")
    if d is None:
        return None
    show.table(d["rows"], ["how", "ms", "TFLOP/s", ("x events", "speed vs events")],
               f"dbuf_fixed, M = N = K = {d['shape'][0]}, one kernel timed three ways; {where}.")
    return d


# ------------------------------------------------------------------ pitfall 6: the fp16 accumulator
def fp16_accumulator_run(Ks=(1024, 4096, 16384, 65536), M: int = 128, N: int = 256) -> dict:
    """Chapter 6's WMMA kernel with an fp32 and with an fp16 accumulator on random fp16 inputs,
    uniform in [0, 1) for each K in ``Ks`` and standard normal at the largest: relative error of
    each against the float64 reference of the same inputs. Returns {"M", "N", "rows"}."""
    cp = gpu.cupy()
    rng = cp.random.default_rng()
    rows = []
    cases = [("uniform [0, 1)", K) for K in Ks] + [("standard normal", Ks[-1])]
    for inputs, K in cases:
        draw = (lambda s: rng.random(s, dtype=cp.float32)) if inputs.startswith("uniform") else \
               (lambda s: rng.standard_normal(s, dtype=cp.float32))
        A, B = draw((M, K)).astype(cp.float16), draw((K, N)).astype(cp.float16)
        ref = verify.reference_gemm(A, B)
        row = {"inputs": inputs, "K": K}
        for key, col in zip(ACC_PAIR, ("fp32 accumulator", "fp16 accumulator")):
            C = cp.empty((M, N), cp.float16)
            verify.poison(C)
            launch.gemm(key, A, B, C)
            row[col] = float(f"{verify.rel_err(C, ref):.3g}")
        rows.append(row)
    return {"M": M, "N": N, "tolerance": verify.TOLERANCE["float16"], "rows": rows}


def show_fp16_accumulator() -> dict | None:
    """Pitfall 6: relative error against K, both accumulators, live or recorded."""
    d, where = _live_or_recorded(ACC_PAIR, fp16_accumulator_run, "fp16_accumulator",
                                 "The accumulator comparison on random inputs")
    if d is None:
        return None
    show.table(d["rows"], ["inputs", "K", "fp32 accumulator", "fp16 accumulator"],
               f"Relative error against float64, wmma_f16 and wmma_acc_f16_pitfall (chapter 6), M = {d['M']}, "
               f"N = {d['N']}, C stored in fp16; the fp16 check accepts {d['tolerance']}; {where}.")
    big = [r for r in d["rows"] if r["inputs"].startswith("uniform")][-1]
    assert big["fp32 accumulator"] <= d["tolerance"] < big["fp16 accumulator"], big
    return d


# ------------------------------------------------------------------ pitfall 7: TF32 rounding
def show_tf32() -> list:
    """Pitfall 7: cuBLAS SGEMM with TF32 off and on (:func:`helpers.runtime.precision.tf32_results`,
    chapter 7's measurement: live on sm_80 or newer, else recorded)."""
    rows, where = precision.tf32_results(4096)
    if not rows:
        _not_recorded("The TF32 comparison", f"not recorded yet (extras.tf32_vs_fp32 of "
                                             f"results/{results.DEFAULT_SLUG}.json; {where})")
        return rows
    show.table(rows, ["mode", "ms", "TFLOP/s", "speedup", "rel_err", "tolerance", "passes"],
               f"cuBLAS SGEMM 4096^3 on the same fp32 inputs, TF32 off and on, error against float64; {where}.")
    assert rows[0]["passes"] and not rows[1]["rel_err"] <= verify.TOLERANCE["float32"], rows
    return rows


# ------------------------------------------------------------------ pitfall 8: the __launch_bounds__ spill
def show_spills(shape=(4096, 4096, 4096)) -> list:
    """Pitfall 8: chapter 5's cp_async tile with __launch_bounds__(256, 1) and (256, 2): ptxas's
    registers and spills (:func:`helpers.runtime.launch.resource_rows`: the driver live, nvcc without
    a GPU) and both timed against cuBLAS (:func:`helpers.runtime.bench.gemm`, live or recorded)."""
    cap = catalog.get(SPILL_PAIR[1]).params()
    pair = [(SPILL_PAIR[0], {**cap, "MIN_BLOCKS": 1}), (SPILL_PAIR[1], {})]
    rows, where = launch.resource_rows(pair)
    if rows and not any("refused" in r for r in rows):
        show.table(rows, ["config", "threads", "registers", "spill bytes", "spills", "blocks/SM", "occupancy"],
                   f"The same tile without and with the cap; {where}.")
    else:
        show.note("Registers and spills are read from the compiled kernel: "
                  + (rows[0]["refused"] if rows else where) + ".", title="Resources")
    recs = bench.gemm(pair, shape)
    show.table([{"kernel": r["kernel"], "MIN_BLOCKS": r["params"].get("MIN_BLOCKS"), "TFLOP/s": r["value"],
                 "x cuBLAS": r["ratio"], "rel. error": r["rel_err"]} for r in recs],
               ["kernel", "MIN_BLOCKS", "TFLOP/s", "x cuBLAS", "rel. error"],
               f"fp32, {' x '.join(map(str, shape))}, each against cuBLAS in the same run; {bench.where(recs)}.")
    if all(r["value"] for r in recs):
        print(f"__launch_bounds__(256, 2): {bench.speedup(recs[1], recs[0]):.2f}x the ratio to cuBLAS of (256, 1)")
    return recs


# ------------------------------------------------------------------ the recorder
def record() -> dict:
    """Every pitfall measured here (needs a GPU): the sections of ``results/<gpu>-pitfalls.json``."""
    out = {}
    for name, fn in (("double_buffer", double_buffer_run), ("sync_in_branch", sync_in_branch_run),
                     ("transpose", transpose_run), ("misaligned", misaligned_run), ("timing", timing_run),
                     ("fp16_accumulator", fp16_accumulator_run)):
        t0 = time.perf_counter()
        out[name] = fn()
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out



# ------------------------------------------------------------------ numbers the prose quotes
def prose_values() -> dict:
    """{name: value} the appendix's prose glues, read from ``results/<gpu>-pitfalls.json`` and the
    recorded spec of the GPU (``results/<gpu>.json``), never measured: ``fp32_peak`` (TFLOP/s);
    ``db_runs`` and ``db_wrong`` (reference checks of the missing barrier, and how many failed);
    ``branch_rel_err`` (relative error of the barrier inside a branch); ``acc32_min`` and
    ``acc32_max`` (fp32 accumulator, lowest and highest relative error); ``acc16_fail_k`` (the
    first K at which the fp16 accumulator exceeds the fp16 tolerance on uniform inputs) and
    ``acc16_normal_over_uniform`` (its error on normal over uniform inputs at the largest K).
    Raises KeyError (or TypeError) when a section is not recorded."""
    db = next(r for r in recorded("double_buffer")[0]["reference"] if r["kernel"] == "dbuf_no_barrier_pitfall")
    branch = next(r for r in recorded("sync_in_branch")[0]["reference"] if r["kernel"] == "sync_in_branch_pitfall")
    acc = recorded("fp16_accumulator")[0]
    uniform = [r for r in acc["rows"] if r["inputs"].startswith("uniform")]
    normal = [r for r in acc["rows"] if not r["inputs"].startswith("uniform")][-1]
    big = next(r for r in uniform if r["K"] == normal["K"])
    return {"fp32_peak": results.load()["ceilings"]["spec"]["fp32_peak_TFLOPs"],
            "db_runs": db["runs"], "db_wrong": db["wrong"], "branch_rel_err": branch["rel_err"],
            "acc32_min": min(r["fp32 accumulator"] for r in acc["rows"]),
            "acc32_max": max(r["fp32 accumulator"] for r in acc["rows"]),
            "acc16_fail_k": next(r["K"] for r in uniform if r["fp16 accumulator"] > acc["tolerance"]),
            "acc16_normal_over_uniform": normal["fp16 accumulator"] / big["fp16 accumulator"]}
