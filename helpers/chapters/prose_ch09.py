"""Chapter 9's prose values: every measured number its Markdown quotes, read from the records.

A module of its own because ``helpers/chapters/ch09_any_shape.py`` is near the 500-line limit;
it belongs to chapter 9's page (its glue cell calls :func:`prose_values`) and reads only
``results/h200-anyshape.json``, ``results/h200.json`` and the models: nothing is measured here.
"""
from __future__ import annotations

from helpers.models import anyshape as model
from helpers.runtime import results

from .common import Sentence, bounds, span

SMS = 132                  # the recorded H200's SMs (results/h200.json, ceilings.spec.sms)


def _odd(doc: dict, dtype: str, shape, title: str) -> dict:
    rec = next((r for r in doc["odd"] if r["dtype"] == dtype and r["shape"] == list(shape) and r["title"] == title),
               None)
    if rec is None:
        raise KeyError(f"odd shapes: no {title!r} record of {dtype} at {list(shape)} in results/h200-anyshape.json")
    return rec


def splitk_bounds(doc: dict) -> tuple[float, float]:
    """The range of heaven 7's loop on the split-K shapes in chapter 9's record (sections
    ``splitk_float16`` / ``splitk_bfloat16``: the model's split count, two-pass, strategy
    "splitk"), as ratios to cuBLAS; chapter 10 quotes the same range."""
    return bounds(r["ratio"] for dt in ("float16", "bfloat16") for r in doc[f"splitk_{dt}"]
                  if r["params"]["strategy"] == "splitk")


def _waves(M: int, N: int, sms: int) -> dict:
    return model.waves(model.tiles(M, N, model.CFG), sms)


def fused_rows(rows: list) -> dict:
    """Where auto's plan in an end-to-end section used split-K's one-launch reduction ("fused"):
    ``n`` shapes, ``ok`` of them within 5 % of the fastest strategy, ``worst`` the lowest ratio of
    auto to the fastest, ``best`` auto's highest ratio to cuBLAS among them (fractions), ``verdict``
    a clause that says whether the model's choice held (every shape within 5 %, at least three
    quarters of them, or fewer)."""
    f = [r for r in rows if "(fused)" in r["plan"]]
    if not f:
        raise KeyError("no end-to-end row where auto's plan used the one-launch split-K")
    ok = sum(1 for r in f if r["auto within 5% of best"])
    verdict = Sentence("the model's choice held on every one" if ok == len(f) else
                       "the model's choice held on most of them, not all" if ok >= 0.75 * len(f) else
                       "the model chose it too often")
    return {"n": len(f), "ok": ok, "verdict": verdict,
            "worst": min(r["ratio"] / r["best ratio"] for r in f), "best": max(r["ratio"] for r in f)}


def reduction_bounds(rows: list) -> dict:
    """From :func:`helpers.chapters.end_to_end.reduction_control`'s rows: the range of "one-launch speed / two-pass" with at
    most :data:`helpers.models.anyshape.FUSED_MAX_M` rows (``small_lo``, ``small_hi``) and with
    more (``large_lo``, ``large_hi``), over the rows given; ``all_equal``: every pair bit-equal.
    KeyError when either group is empty."""
    small = [r["one-launch speed / two-pass"] for r in rows if r["M"] <= model.FUSED_MAX_M]
    large = [r["one-launch speed / two-pass"] for r in rows if r["M"] > model.FUSED_MAX_M]
    if not small or not large:
        raise KeyError("the reduction control needs rows with at most and with more than "
                       f"{model.FUSED_MAX_M} rows")
    return {"small_lo": min(small), "small_hi": max(small), "large_lo": min(large), "large_hi": max(large),
            "all_equal": all(r["bit-equal"] for r in rows)}


def with_shape_cublas(recs: list) -> list:
    """``recs`` (records of several strategies per shape, each timed against its own cuBLAS
    timing) with ``of_shape_cublas``: the record's TFLOP/s over the median of every cuBLAS
    TFLOP/s taken for its shape and dtype in the same list. On calls of tens of microseconds
    one cuBLAS timing moves by several per cent from row to row, enough to reorder rows whose
    TFLOP/s are close; one median per shape keeps the column in TFLOP/s order."""
    med: dict = {}
    for r in recs:
        if r.get("reference_value"):
            med.setdefault((tuple(r["shape"]), r["dtype"]), []).append(r["reference_value"])
    out = []
    for r in recs:
        m = sorted(med.get((tuple(r["shape"]), r["dtype"]), []))
        ref = (m[len(m) // 2] if len(m) % 2 else (m[len(m) // 2 - 1] + m[len(m) // 2]) / 2) if m else None
        out.append({**r, "of_shape_cublas": round(r["value"] / ref, 3) if ref and r.get("value") else None})
    return out


def memory_bound_values(rows: list) -> dict:
    """From :func:`helpers.chapters.end_to_end.memory_bound_rows`: the tall-skinny rows (N at most
    :data:`helpers.models.anyshape.NARROW_MAX_N`) on the narrow tile and on the wide control, as
    spans of "of the copy bound" (``mb_narrow_copy_span``, ``mb_wide_copy_span``) and of "of
    cuBLAS" (``mb_narrow_cublas_span``, ``mb_wide_cublas_span``), their FLOP per byte
    (``mb_ai_span``), the short-K row (K = 64: ``mb_short_copy``, ``mb_short_cublas``, ``mb_short``
    its shape as text) and the copy's rate (``mb_copy_span``, GB/s). KeyError when a group is empty."""
    skinny = [r for r in rows if r["N"] <= model.NARROW_MAX_N]
    narrow = [r for r in skinny if r["strategy"] == "auto" and "128 x 64" in r["plan"]]
    wide = [r for r in skinny if r["strategy"] == "dp"]
    short = [r for r in rows if r["K"] <= 64 and r["strategy"] == "auto"]
    if not narrow or not wide or not short:
        raise KeyError("the memory_bound section needs narrow, wide and short-K rows")
    out = {}
    for name, rs, key, fmt in (("narrow_copy", narrow, "of the copy bound", ".2f"), ("wide_copy", wide, "of the copy bound", ".2f"),
                               ("narrow_cublas", narrow, "of cuBLAS", ".2f"), ("wide_cublas", wide, "of cuBLAS", ".2f"),
                               ("ai", skinny, "FLOP/B", ".0f"), ("copy", rows, "copy GB/s", ".0f")):
        out[f"mb_{name}_span"] = span(min(r[key] for r in rs), max(r[key] for r in rs), fmt)
    out["mb_short_copy"], out["mb_short_cublas"] = short[0]["of the copy bound"], short[0]["of cuBLAS"]
    out["mb_short"] = f"{short[0]['M']} \u00d7 {short[0]['N']} \u00d7 {short[0]['K']}"
    return out


def prose_values() -> dict:
    """Every measured number of chapter 9's Markdown (ratios to cuBLAS unless named otherwise;
    ``*_us`` in µs, ``*_ms`` in ms, ``*_mhz`` in MHz, ``*_w`` in W, fractions for shares), from
    the recorded sections of results/<gpu>-anyshape.json (odd shapes, split-K, waves and their
    control, the zoo, the end-to-end zoo: ``llm_gemms`` / ``llm_models``, how many LLM GEMMs and
    models it holds, in words; ``fused_n``, ``fused_ok``, ``fused_worst``, ``fused_best``: auto's one-launch
    split-K rows (:func:`fused_rows`); ``fused_ctl_*``, ``fused_max_m``: the control of the two
    reductions (section ``reductions``, :func:`reduction_bounds`; ``*_span`` as text); ``run_slower_n`` of ``e2e_n`` shapes where the pre-planned run()
    timed slower than the whole gemm() call, by up to ``run_slower_max``), the board's power limit in results/<gpu>.json, and the wave model
    (:func:`helpers.models.anyshape.waves`); ``mb_*``: the memory-bound shapes (:func:`memory_bound_values`).
    KeyError when a record is missing."""
    doc = results.artifact("anyshape")
    if not doc:
        raise KeyError("results/<gpu>-anyshape.json is not recorded")
    big, odd = (4096, 4096, 4096), (4093, 4093, 4093)
    out = memory_bound_values(doc["memory_bound"])
    f16 = [r for r in doc["odd"] if r["dtype"] == "float16"]
    out["cublas_odd_lo"], out["cublas_odd_hi"] = bounds(r["reference_value"] for r in f16 if r["shape"] == list(odd))
    out["cublas_big_lo"], out["cublas_big_hi"] = bounds(r["reference_value"] for r in f16 if r["shape"] == list(big))
    out["direct_ratio"] = _odd(doc, "float16", big, "direct")["ratio"]
    for name in ("regs", "repack", "padding"):
        out[f"{name}_of_aligned"] = _odd(doc, "float16", odd, name)["of_aligned"]
    both = [r for r in doc["odd"] if r["shape"] == list(odd)]
    out["padding_odd_lo"], out["padding_odd_hi"] = bounds(r["ratio"] for r in both if r["title"] == "padding")
    out["direct_splitk_lo"], out["direct_splitk_hi"] = splitk_bounds(doc)
    # ranges as text ("726", or "0.508 to 0.563"): one value where both ends print the same
    out["cublas_odd_span"] = span(out["cublas_odd_lo"], out["cublas_odd_hi"], ".0f")
    out["cublas_big_span"] = span(out["cublas_big_lo"], out["cublas_big_hi"], ".0f")
    out["direct_splitk_span"] = span(out["direct_splitk_lo"], out["direct_splitk_hi"], "#.3g")

    w = doc["waves"]
    ctl = {c["busy SMs"]: c for c in w["control"]}
    lo, hi = min(ctl), max(ctl)
    mid = sorted(ctl)[-2]
    out.update(wave_ms=ctl[lo]["ms"], top_mhz=ctl[lo]["SM clock (MHz, median)"],
               mid_sms=mid, mid_mhz=ctl[mid]["SM clock (MHz, median)"],
               full_mhz=ctl[hi]["SM clock (MHz, median)"],
               per_sm_gain=ctl[lo]["TFLOP/s per SM"] / ctl[hi]["TFLOP/s per SM"] - 1,
               power_limit_w=results.load()["extras"]["mma_sync_probes"]["float16"]["power"]["power_limit_W"])
    ragged = _waves(2176, 4096, SMS)
    out.update(naive_eff=ragged["efficiency"], ragged_waves=ragged["waves"],
               lw_4096=_waves(4096, 4096, SMS)["last_wave_full"], lw_8192=_waves(8192, 8192, SMS)["last_wave_full"])
    small = _waves(2176, 256, 8)
    out.update(small_waves=small["waves"], small_last=small["last_wave_full"])

    e2e = doc.get("end_to_end") or []
    llm = sorted({r["label"] for r in e2e if r["group"] == "LLM"})
    models = {lab.split()[0] for lab in llm}                     # "Llama-3-8B MLP down (...)" -> "Llama-3-8B"
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    slower = [r["kernel ms"] / r["ms"] - 1 for r in e2e if r["kernel ms"] > r["ms"]]
    out.update(llm_gemms=words.get(len(llm), str(len(llm))), llm_models=words.get(len(models), str(len(models))),
               e2e_n=len(e2e), run_slower_n=len(slower), run_slower_max=max(slower, default=0.0))
    out.update({f"fused_{k}": v for k, v in fused_rows(e2e).items()})
    ctl = reduction_bounds([r for r in doc["reductions"] if r["loop"] == "mma.sync"])   # heaven 7's loop: this chapter's
    out.update({f"fused_ctl_{k}": v for k, v in ctl.items()}, fused_max_m=model.FUSED_MAX_M,
               fused_ctl_small_span=span(ctl["small_lo"], ctl["small_hi"], ".2f"),
               fused_ctl_large_span=span(ctl["large_lo"], ctl["large_hi"], ".2f"))
    noise = model.same_plan_spread(doc["zoo"])
    tiny = next(r for r in doc["zoo"] if (r["M"], r["N"], r["K"]) == (64, 64, 64))
    out.update(noise_median=noise["median"], noise_max=noise["max"], noise_max_shape=noise["max_shape"],
               cublas_tiny_us=2 * 64 ** 3 / (tiny["cuBLAS TFLOP/s"] * 1e12) * 1e6)
    return out
