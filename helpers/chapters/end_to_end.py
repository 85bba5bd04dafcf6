"""Chapter 9, the dispatcher as a reader calls it: ``gemm(A, B, out=C)`` end to end against
``cupy.matmul`` over a shape zoo that includes the projection and MLP GEMMs of open LLMs,
beside the kernel-only time of the same plan (pre-planned :func:`helpers.runtime.anyshape.run`),
and the CPU cost of one call.

A module of its own because ``helpers/chapters/ch09_any_shape.py`` is near its 500-line
limit; it belongs to chapter 9's page. Chapter 9 measures its own kernels only (the
mma.sync family of ``kernels/09_any_shape.cu``): every measurement here runs inside
:func:`helpers.runtime.anyshape.without_hopper`. Recorded by ``scripts/record_anyshape.py``
(sections ``end_to_end``, ``host`` and ``memory_bound``) into ``results/<gpu>-anyshape.json``.
"""
from __future__ import annotations

import contextlib
import math

from helpers.figures import anyshape as fig, show
from helpers.models import anyshape as model
from helpers.runtime import anyshape as rt, bench, gpu, packed, results, timing

from . import ch09_any_shape as ch9

# Projection and MLP GEMMs of open LLMs, C[tokens, N] = X[tokens, K] @ W[K, N] (N, K from each
# model's published configuration: hidden size, intermediate (MLP) size).
LLM_GEMMS = (("TinyLlama-1.1B MLP up (hidden 2048, MLP 5632)", 5632, 2048),
             ("Llama-3-8B attention output (hidden 4096)", 4096, 4096),
             ("Llama-3-8B MLP down (MLP 14336, hidden 4096)", 4096, 14336),
             ("Llama-3-70B MLP up (hidden 8192, MLP 28672)", 28672, 8192))
TOKENS = (1, 16, 128, 2048, 8192)
ZOO_SHAPES = tuple((M, N, K) for M, N in ch9.ZOO_OUT for K in ch9.ZOO_K)


def shapes() -> list:
    """The end-to-end zoo: (group, label, (M, N, K)); chapter 9's 32 zoo shapes, then every
    LLM GEMM of :data:`LLM_GEMMS` at every token count of :data:`TOKENS` (M = tokens)."""
    out = [("zoo", f"{M} x {N} x {K}", (M, N, K)) for M, N, K in ZOO_SHAPES]
    return out + [("LLM", name, (t, N, K)) for name, N, K in LLM_GEMMS for t in TOKENS]


def _cublas_ms(r: dict) -> float | None:
    M, N, K = r["shape"]
    return timing.gemm_flops(M, N, K) / (r["reference_value"] * 1e9) if r.get("reference_value") else None


def measure_shape(group: str, label: str, shape, dtype: str = "float16", rounds: int = 3,
                  budget_ms: float = 40.0, hopper: bool = False) -> dict:
    """One zoo row, live, on chapter 9's kernels only (``hopper``: with chapter 10's kernel
    too, where the runner has it and this GPU runs it): each candidate strategy
    (:func:`helpers.chapters.ch09_any_shape.candidates`) called as a reader calls it,
    ``gemm(A, B, out=C, strategy=s)`` (checked against float64 after a NaN poison, then CUDA
    events around each call, alternating with ``cupy.matmul`` in ``rounds`` rounds), and
    auto's plan pre-planned (``run(plan, A, B, C)``: the kernel-only time). Returns the row:
    "ratio" (auto end to end over cuBLAS), "kernel ratio", "ms", "kernel ms", "cuBLAS ms",
    "host share" (1 - kernel ms / ms, at least 0), "best" and "best ratio" (the fastest
    strategy end to end, auto included; a strategy that runs auto's own plan is not a rival
    but the same launch again, kept as "same plan again"), "auto within 5% of best", "records"."""
    M, N, K = shape
    data = bench.inputs(shape, dtype)
    A, B, _ = data.args()
    al = rt.aligned_inputs(A, B)
    recs = []
    with (contextlib.nullcontext() if hopper else rt.without_hopper()):
        names = ch9.candidates(M, N, K, al)
        for n in names:
            p = rt.plan_for(n, M, N, K, al)
            recs.append(bench.measure(lambda A, B, C, n=n: rt.gemm(A, B, out=C, strategy=n), shape, dtype,
                                      data=data, rounds=rounds, budget_ms=budget_ms, chapter=9,
                                      kernel=f"gemm:{n}", title=p.name, params={"strategy": n, "path": "gemm()"},
                                      note=p.reason, what=f"gemm(strategy={n!r}) at {M} x {N} x {K}").as_dict())
        p = rt.plan_for("auto", M, N, K, al)
        kern = bench.measure(lambda A, B, C: rt.run(p, A, B, C), shape, dtype, data=data, rounds=rounds,
                             budget_ms=budget_ms, chapter=9, kernel="run:auto", title=p.name,
                             params={"strategy": "auto", "path": "run()"}, note=p.reason,
                             what=f"run(auto's plan) at {M} x {N} x {K}").as_dict()
    auto = recs[0]
    # A candidate whose plan is auto's own is the same launch measured twice: its spread is
    # the noise of the measurement ("same plan again"), not a faster choice auto missed.
    others = [r for r in recs[1:] if r["title"] != auto["title"]]
    twin = next((r for r in recs[1:] if r["title"] == auto["title"]), None)
    best = max([auto] + others, key=lambda r: r["ratio"])
    return {"group": group, "label": label, "M": M, "N": N, "K": K, "dtype": dtype,
            "GFLOP": bench.sig(timing.gemm_flops(M, N, K) / 1e9, 4), "plan": p.name, "reason": p.reason,
            "ratio": auto["ratio"], "ms": auto["ms"], "cuBLAS ms": bench.sig(_cublas_ms(auto), 4),
            "kernel ratio": kern["ratio"], "kernel ms": kern["ms"],
            "host share": bench.sig(max(0.0, 1 - kern["ms"] / auto["ms"]), 3),
            "best": best["params"]["strategy"], "best plan": best["title"], "best ratio": best["ratio"],
            "auto within 5% of best": auto["ratio"] >= 0.95 * best["ratio"],
            "same plan again": twin["ratio"] if twin else None, "records": recs + [kern]}


def end_to_end(dtype: str = "float16", which=None, rounds: int = 3, budget_ms: float = 40.0,
               hopper: bool = False) -> list:
    """Live: :func:`measure_shape` over :func:`shapes` (or ``which``, a list of its items)."""
    return [measure_shape(g, lab, s, dtype, rounds, budget_ms, hopper) for g, lab, s in (which or shapes())]


HOST_SHAPES = ((64, 64, 64), (1000, 1001, 1002), (512, 512, 32768), (1, 4096, 4096), (4093, 4093, 4093),
               (4096, 4096, 4096))


def host_rows(dtype: str = "float16", host_shapes=HOST_SHAPES, calls: int = 200) -> list:
    """Live: CPU microseconds per call (:func:`helpers.runtime.timing.host_cost`, ``calls``
    calls in a row on one shape, the caches warm) of ``gemm(A, B, out=C)`` as the book's
    runtime has it on this GPU, of ``run(plan, A, B, C)`` with the plan made beforehand, of
    ``cupy.matmul(A, B, out=C)``, and of planning alone without the cache
    (``plan_for("auto", ...)``, the model's arithmetic). "launch path" says how gemm() launched
    ("graph": the plan's launches replayed as one CUDA graph, the same arrays again; "packed":
    :mod:`helpers.runtime.packed`, arguments converted once per prepared launch; "cupy": CuPy's
    ``RawKernel`` call); where packed launches run, two controls time the same calls launched step
    by step ("gemm(), step by step us") and with every argument converted by CuPy
    ("gemm(), CuPy launches us")."""
    cp = gpu.cupy()
    sync = cp.cuda.get_current_stream().synchronize
    rows = []
    for M, N, K in host_shapes:
        A, B, C = bench.inputs((M, N, K), dtype).args()
        al = rt.aligned_inputs(A, B)
        p = rt.plan_for("auto", M, N, K, al)
        row = {"M x N x K": f"{M} x {N} x {K}", "dtype": dtype, "plan": p.name}
        for what, call in (("gemm()", lambda: rt.gemm(A, B, out=C)), ("run(plan)", lambda: rt.run(p, A, B, C)),
                           ("cupy.matmul", lambda: cp.matmul(A, B, out=C))):
            h = timing.host_cost(call, sync, calls)
            row[f"{what} us"], row[f"{what} p90 us"] = bench.sig(h["median_us"], 3), bench.sig(h["p90_us"], 3)
            if what == "gemm()":
                row["launch path"] = packed.PATH["launch"]
        if packed.enabled():                      # the controls: the same calls launched step by step,
            with packed.no_graphs():              # and with every argument converted by CuPy
                h = timing.host_cost(lambda: rt.gemm(A, B, out=C), sync, calls)
            row["gemm(), step by step us"] = bench.sig(h["median_us"], 3)
            with packed.disabled():
                h = timing.host_cost(lambda: rt.gemm(A, B, out=C), sync, calls)
            row["gemm(), CuPy launches us"] = bench.sig(h["median_us"], 3)
        h = timing.host_cost(lambda: rt.plan_for("auto", M, N, K, al), sync, calls)
        row["planning alone us"] = bench.sig(h["median_us"], 3)
        rows.append(row)
    return rows


def geomean(rows: list, key: str = "ratio") -> float:
    """Geometric mean of ``row[key]`` over the rows that have it."""
    v = [r[key] for r in rows if r.get(key)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def summary(rows: list) -> str:
    """One line: geomean end to end and kernel-only, how often auto is within 5 % of the best, and
    the spread of the two timings read from ``rows`` themselves: on how many shapes the kernel-only
    run() timed slower than the whole gemm() call, which does more, and by how much at most."""
    ok = sum(1 for r in rows if r["auto within 5% of best"])
    slower = [r["kernel ms"] / r["ms"] - 1 for r in rows if r.get("kernel ms") and r.get("ms")
              and r["kernel ms"] > r["ms"]]
    spread = (f"run() timed slower than the whole gemm() call on {len(slower)} of {len(rows)} shapes, by up to "
              f"{max(slower):.0%}, so differences of that size between the two are within the measurement's "
              "spread" if slower else "each against its own cuBLAS timing, taken in separate rounds")
    return (f"{len(rows)} shapes: geomean {geomean(rows):.2f} x cuBLAS end to end through gemm(), "
            f"{geomean(rows, 'kernel ratio'):.2f} x kernel-only ({spread}); auto within 5 % "
            f"of the fastest strategy on {ok} of {len(rows)}.")


def show_end_to_end(section: str = "end_to_end", host: bool = True) -> None:
    """The end-to-end zoo of ``section`` ("end_to_end": chapter 9's kernels; "end_to_end_hopper":
    with chapter 10's kernel), recorded (live it takes minutes, so the page shows the record):
    two heatmaps of the ratio to cuBLAS through ``gemm()`` (the shape zoo; the LLM GEMMs by
    token count), a table with the kernel-only ratio and the host share beside it, and (``host``)
    the table of CPU time per call."""
    doc = results.artifact("anyshape") or {}
    where = results.artifact_where(doc, "anyshape")
    rows = doc.get(section)
    if not rows:
        show.note(f"The end-to-end zoo is not in the record ({where}) yet: on an sm_80+ GPU, "
                  f"`python scripts/record_anyshape.py --sections {section}` measures it.", title="End to end")
        return
    who = "with chapter 10's kernel" if "hopper" in section else "chapter 9's kernels only"
    show.figure(fig.end_to_end_figure(rows, f"{who}; {where}"))
    print(summary(rows))
    shaped = [{**r, "shape": f"{r['M']} x {r['N']} x {r['K']}",      # the shape first (it stays on screen
               "GEMM": "" if r["label"] == f"{r['M']} x {r['N']} x {r['K']}" else r["label"]}   # on a phone)
              for r in rows]
    show.table(shaped, {"shape": "M x N x K", "plan": "auto's plan",
                        "ratio": "gemm() / cuBLAS", "kernel ratio": "run() / cuBLAS", "ms": "gemm() ms",
                        "kernel ms": "run() ms", "host share": "host share",
                        "best plan": "fastest strategy", "best ratio": "its ratio", "GEMM": "LLM GEMM"},
               f"gemm(A, B, out=C) timed as a reader calls it (CUDA events around each call, alternating with "
               f"cupy.matmul) beside the same plan pre-planned (run()); host share = 1 - run() ms / gemm() ms, "
               f"from the two times (0 where run() timed slower). The two ratios divide by separate cuBLAS "
               f"timings, each taken in its own rounds, so the host share does not follow from the ratio "
               f"columns: the two ratios of a row differ by cuBLAS's own noise as well as by the host's "
               f"share; {who}; {where}.")
    rows_host = doc.get("host") if host else None
    if rows_host:
        show.table(rows_host, list(rows_host[0]), f"CPU microseconds per call, median of 200 calls in a row on "
                   f"one shape (the caches warm), of the runtime as a reader has it on the GPU measured: on an H200 "
                   f"its plans include chapter 10's kernel (the \"hopper\" plans, previewed here), unlike "
                   f"the zoo above; {where}.")


# Split-K's two deterministic reductions against each other: GEMV-like rows (1 and 16 tokens of a
# Llama-3-8B projection) and 128-row-or-more shapes where the model split K.
REDUCTION_SHAPES = ((1, 4096, 4096), (16, 4096, 4096), (128, 5632, 2048), (512, 512, 32768), (1024, 1024, 16384))


def reduction_control(dtype: str = "float16", shapes=REDUCTION_SHAPES, rounds: int = 5) -> list:
    """Live: the control that says where split-K's one-launch sum pays (the dispatcher's choice
    between the two deterministic reductions, :func:`helpers.models.anyshape.fused_is_cheaper`). On each shape and
    loop (heaven 7's, A and B read in place; chapter 10's where this GPU runs it) the same split
    count (the model's, at least 2) runs with the two-pass reduction and with the one-launch one,
    pre-planned (kernel-only), each checked against float64 after a NaN poison and timed against
    cuBLAS in alternating rounds (:func:`helpers.runtime.bench.measure`); then both outputs of one
    more call are compared bit for bit. Returns one row per (shape, loop): "M", "N", "K", "loop"
    ("mma.sync" or "wgmma"), "splits", "two-pass / cuBLAS", "one-launch / cuBLAS", "one-launch speed
    / two-pass" (:func:`helpers.runtime.bench.speedup`), "bit-equal", "records"."""
    cp = gpu.cupy()
    loops = [("mma.sync", model.CFG, "direct")]
    if rt.can_run("hopper") is None:
        loops.append(("wgmma", model.HOPPER_CFG, "hopper"))
    rows = []
    for M, N, K in shapes:
        data = bench.inputs((M, N, K), dtype)
        A, B, _ = data.args()
        for loop, cfg, ops in loops:
            s = max(2, model.choose_splits(M, model.round_up(N, 8), model.round_up(K, 8), rt.sm_count(), cfg)[0])
            recs, outs = {}, {}
            for red in ("twopass", "fused"):
                p = model.Plan(operands=ops, schedule="splitk", splits=s, reduction=red, reason="reduction control")
                recs[red] = bench.measure(lambda A, B, C, p=p: rt.run(p, A, B, C), (M, N, K), dtype, data=data,
                                          rounds=rounds, chapter=9, kernel=f"run:{ops} splitk {red}", title=p.name,
                                          params={"loop": loop, "splits": s, "reduction": red},
                                          what=f"{p.name} at {M} x {N} x {K}").as_dict()
                C = cp.full((M, N), cp.nan, dtype=A.dtype)
                rt.run(p, A, B, C)
                outs[red] = C
            rows.append({"M": M, "N": N, "K": K, "loop": loop, "splits": s,
                         "two-pass / cuBLAS": recs["twopass"]["ratio"], "one-launch / cuBLAS": recs["fused"]["ratio"],
                         "one-launch speed / two-pass": bench.sig(bench.speedup(recs["fused"], recs["twopass"]), 3),
                         "bit-equal": bool(cp.array_equal(outs["twopass"], outs["fused"])),
                         "records": list(recs.values())})
    return rows


def show_reduction_control(loop: str = "mma.sync") -> None:
    """The recorded control of split-K's two reductions (section ``reductions``): a table, one
    row per shape, on ``loop`` ("mma.sync": heaven 7's, chapter 9; "wgmma": chapter 10's). Live
    it needs every split-K build, so the page shows the record."""
    doc = results.artifact("anyshape") or {}
    where = results.artifact_where(doc, "anyshape")
    rows = [r for r in doc.get("reductions") or [] if r["loop"] == loop]
    if not rows:
        show.note(f"The control of the two reductions is not in the record ({where}) yet: on an sm_80+ GPU, "
                  "`python scripts/record_anyshape.py --sections reductions` measures it.", title="Reductions")
        return
    show.table(rows, {"M": "M", "N": "N", "K": "K", "splits": "splits",
                      "two-pass / cuBLAS": "two-pass / cuBLAS", "one-launch / cuBLAS": "one launch / cuBLAS",
                      "one-launch speed / two-pass": "one launch ÷ two-pass", "bit-equal": "same bits"},
               f"The same split count with each deterministic reduction on the {loop} loop, kernel-only (pre-planned run()), each "
               "checked against float64 and timed against cuBLAS in alternating rounds; one launch ÷ two-pass is "
               f"the quotient of the two ratios (above 1: the one-launch sum is faster); {where}.")


# Shapes under the ridge point: C at most 64 columns wide (tall and skinny) and K = 64 (short K).
# Their arithmetic intensity is at most about N (or K) FLOP per byte, so the bound that matters is
# the copy rate, not the Tensor Cores.
MEMORY_BOUND = ((30000, 64, 1002), (30000, 64, 4093), (30000, 64, 16384), (32768, 64, 4096), (8192, 8192, 64))


def memory_bound_rows(dtype: str = "float16", shapes=MEMORY_BOUND, rounds: int = 3, budget_ms: float = 60.0) -> list:
    """Live, chapter 9's kernels only: each shape through ``gemm()`` with auto's plan and with
    the wide tile (strategy "dp", the control of the narrow tile; the same plan where auto keeps
    the wide one), and on unaligned tall-skinny shapes the registers path on the narrow tile
    (strategy "regs narrow", pre-planned ``run()``: no copy of A at all). Each is checked against
    float64 and timed against cuBLAS in alternating rounds (:func:`helpers.runtime.bench.measure`), then against a device-to-device copy that
    moves the same compulsory bytes (:func:`helpers.runtime.timing.gemm_min_bytes`, 16-bit elements: a copy of half of them reads and
    writes them all) in alternating rounds (:func:`helpers.runtime.bench.against_copy`). One row
    per (shape, strategy): "M", "N", "K", "strategy", "plan", "TFLOP/s", "of cuBLAS", "FLOP/B"
    (2MNK over the compulsory bytes), "of the copy bound" (copy ms / gemm ms: 1 would move the
    compulsory bytes at the copy's rate), "copy GB/s" (that copy's rate, bytes read + written)."""
    rows = []
    with rt.without_hopper():
        for M, N, K in shapes:
            data = bench.inputs((M, N, K), dtype)
            A, B, C = data.args()
            al = rt.aligned_inputs(A, B)
            nbytes = timing.gemm_min_bytes(M, N, K, 2, 2)
            seen = set()
            cands = [(st, rt.plan_for(st, M, N, K, al)) for st in ("auto", "dp")]
            if not al and N <= model.NARROW_MAX_N:   # no copy at all: unaligned rows through registers
                cands.append(("regs narrow", model.Plan(operands="regs", tile="narrow", reason="registers path, "
                                                        "128 x 64 tiles (control)")))
            for st, p in cands:
                if p.name in seen:
                    continue
                seen.add(p.name)
                via = "gemm()" if st in rt.STRATEGIES else "run()"
                call = ((lambda A, B, C, st=st: rt.gemm(A, B, out=C, strategy=st)) if via == "gemm()"
                        else (lambda A, B, C, p=p: rt.run(p, A, B, C)))
                rec = bench.measure(call, (M, N, K), dtype, data=data, rounds=rounds, budget_ms=budget_ms, chapter=9,
                                    kernel=f"{via[:-2]}:{st}", title=p.name, params={"strategy": st, "path": via},
                                    note=p.reason, what=f"{p.name} at {M} x {N} x {K}").as_dict()
                t = bench.against_copy(lambda call=call: call(A, B, C), nbytes, rounds=rounds, budget_ms=budget_ms)
                rows.append({"M": M, "N": N, "K": K, "dtype": dtype, "strategy": st, "plan": p.name, "path": via,
                             "TFLOP/s": rec["value"], "of cuBLAS": rec["ratio"],
                             "FLOP/B": bench.sig(timing.gemm_flops(M, N, K) / nbytes, 3),
                             "of the copy bound": t["of_copy_bound"], "copy GB/s": t["copy_GBps"], "records": [rec]})
    return rows


def show_memory_bound() -> list:
    """Table and bars of :func:`memory_bound_rows`: live where this GPU runs chapter 9's kernels,
    else the record (section ``memory_bound``)."""
    if ch9.live_here():
        rows, where = memory_bound_rows(), results.where(True)
    else:
        rows, where = ch9.recorded("memory_bound")
    if not rows:
        show.note(f"The memory-bound shapes are not in the record ({where}) yet: on an sm_80+ GPU, "
                  "`python scripts/record_anyshape.py --sections memory_bound` measures them.", title="Memory-bound")
        return []
    show.table(rows, {"M": "M", "N": "N", "K": "K", "plan": "plan", "FLOP/B": "FLOP/B", "TFLOP/s": "TFLOP/s",
                      "of cuBLAS": "of cuBLAS", "of the copy bound": "of the copy bound", "copy GB/s": "copy GB/s"},
               f"gemm() with auto's plan and with the wide tile, each timed against cuBLAS and, in other "
               f"alternating rounds, against a device-to-device copy of the same compulsory bytes (read A and B, "
               f"write C once); chapter 9's kernels only; {where}.")
    show.figure(fig.memory_bound_figure(rows, where))
    return rows

