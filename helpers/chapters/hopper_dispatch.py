"""Chapter 10's last section: its Hopper kernel plugged into chapter 9's dispatcher.

``helpers.gemm`` (:func:`helpers.runtime.anyshape.gemm`) runs chapter 10's last rung through
its "hopper" strategies (A and B repacked where TMA cannot read them, the kernel on shapes
rounded up to 8, C copied out where needed; split-K on its persistent loop with fp32 slabs
and chapter 9's reduction), and on an sm_90 GPU "auto" hands it the large and the split-K
problems (:func:`helpers.models.anyshape.plan` with ``hopper=True``). A module of its own
because it reads chapter 9 (its strategies, its measurement and its end-to-end zoo): it
belongs to chapter 10's page, which imports it after chapter 10 has taught the kernel.

Records: ``results/<gpu>-anyshape.json``, section ``hopper_dispatch`` (and
``end_to_end_hopper`` for the zoo), written by ``scripts/record_anyshape.py``; until a file
has them, the rows of the "hopper" strategies recorded in its ``odd`` and ``splitk_*``
sections (the same measurements, taken with chapter 9's).
"""
from __future__ import annotations

from helpers.figures import anyshape as fig, show
from helpers.models import anyshape as model
from helpers.runtime import anyshape as rt, bench, gpu, results, verify

from . import ch09_any_shape as ch9, end_to_end as e2e, prose_ch09
from .common import bounds, span

ALIGNED, ODD = (4096, 4096, 4096), (4093, 4093, 4093)


def hopper_dispatch(dtypes=("float16", "bfloat16")) -> list:
    """Live (sm_90): per dtype, chapter 9's aligned kernel ("dp") and the "hopper" strategy at
    4096^3; at 4093^3 chapter 9's best odd-shape path ("padding"), "hopper" and "auto"; on
    chapter 9's three split-K shapes its "splitk", "hopper_splitk" and "auto". Each checked
    against float64 and timed against cuBLAS in alternating rounds
    (:func:`helpers.chapters.ch09_any_shape.measure`). The 4093^3 records gain ``of_aligned``:
    speed over the same family's aligned kernel at 4096^3, same run."""
    out = []
    for dt in dtypes:
        al = ch9.measure(["dp", "hopper"], ALIGNED, dt)
        odd = ch9.measure(["padding", "hopper", "auto"], ODD, dt)
        for r in odd:
            base = al[1 if "hopper" in (r.get("title") or "") else 0].get("value")
            r["of_aligned"] = bench.sig(r["value"] / base, 3) if r.get("value") and base else None
        out += al + odd
        for shape in ch9.SPLITK_SHAPES:
            out += ch9.measure(["splitk", "hopper_splitk", "auto"], shape, dt)
    return out


def end_to_end_hopper(dtype: str = "float16") -> list:
    """Live: chapter 9's end-to-end zoo with chapter 10's kernel among the candidates
    (:func:`helpers.chapters.end_to_end.end_to_end` with ``hopper=True``)."""
    return e2e.end_to_end(dtype, hopper=True)


def records() -> tuple[list, str]:
    """The recorded rows of this section and where they came from: ``hopper_dispatch`` when the
    file has it, else the "hopper" rows (and their chapter 9 counterparts) of ``odd`` and
    ``splitk_*``. ([], where) when neither is recorded."""
    doc = results.artifact("anyshape") or {}
    where = results.artifact_where(doc, "anyshape")
    if doc.get("hopper_dispatch"):
        return doc["hopper_dispatch"], where
    rows = [r for r in doc.get("odd", []) if r["params"]["strategy"] in ("dp", "hopper", "padding", "auto")]
    for dt in ("float16", "bfloat16"):
        rows += [r for r in doc.get(f"splitk_{dt}", []) if r["params"]["strategy"] in ("splitk", "hopper_splitk")]
    return rows, where


def gemv_split_values(rows: list) -> dict:
    """Split-K on heaven 7's loop against split-K on chapter 10's, end to end through ``gemm()``,
    on the rows of an end-to-end section (``end_to_end_hopper``) whose C has at most
    :data:`helpers.models.anyshape.GEMV_MAX_M` rows: per row the best ratio to cuBLAS among the
    records whose plan is a split-K on each loop (titles "direct + split-K ..." / "repack + split-K
    ..." and "hopper + split-K ..."). ``disp_gemv_n`` rows with both, ``disp_gemv_h7_wins`` of them
    where heaven 7's was faster, the two ranges as text (``disp_gemv_h7_span``,
    ``disp_gemv_hop_span``). KeyError when no row has both."""
    h7, hop = [], []
    for r in rows:
        if r["M"] > model.GEMV_MAX_M:
            continue
        mine = [x["ratio"] for x in r["records"] if x.get("ratio") and x["params"].get("path") == "gemm()"
                and x["title"].split(" + ")[0] in ("direct", "repack") and "split-K" in x["title"]]
        theirs = [x["ratio"] for x in r["records"] if x.get("ratio") and x["params"].get("path") == "gemm()"
                  and x["title"].startswith("hopper + split-K")]
        if mine and theirs:
            h7.append(max(mine))
            hop.append(max(theirs))
    if not h7:
        raise KeyError("no end-to-end row with at most GEMV_MAX_M rows timed split-K on both loops")
    return {"disp_gemv_n": len(h7), "disp_gemv_h7_wins": sum(a > b for a, b in zip(h7, hop)),
            "disp_gemv_h7_span": span(min(h7), max(h7), ".2f"), "disp_gemv_hop_span": span(min(hop), max(hop), ".2f"),
            "disp_gemv_max_m": model.GEMV_MAX_M}


def prose_values() -> dict:
    """The measured numbers this section's Markdown quotes (glue names start with ``disp_``):
    the Hopper path at 4093^3 against cuBLAS and chapter 9's padding path, split-K on both
    loops (all in this section's run), heaven 7's split-K in chapter 9's own record (sections
    ``splitk_*``), the ranges also as text (``*_span``), one call's GPU time at 512 x 512 x 32768,
    and the smallest problem auto hands the Hopper kernel (``disp_hopper_min_mnk``, multiply-adds, as text),
    in µs of its recorded 4096^3 rate; ``disp_gemv_*``: split-K on both loops at the end-to-end zoo's
    GEMV-like rows (:func:`gemv_split_values`); ``disp_fused_*``: auto's one-launch split-K rows on
    this loop (:func:`helpers.chapters.prose_ch09.fused_rows`), where the record has any. KeyError
    when a record is missing."""
    rows, _ = records()
    odd = [r for r in rows if r["shape"] == list(ODD)]
    out = {}
    out["disp_hopper_odd_lo"], out["disp_hopper_odd_hi"] = bounds(r["ratio"] for r in odd
                                                                 if r["params"]["strategy"] == "hopper")
    out["disp_padding_odd_lo"], out["disp_padding_odd_hi"] = bounds(r["ratio"] for r in odd
                                                                   if r["params"]["strategy"] == "padding")
    out["disp_hopper_of_aligned"] = bounds(r.get("of_aligned") for r in odd if r["params"]["strategy"] == "hopper")[0]
    split = [r for r in rows if tuple(r["shape"]) in ch9.SPLITK_SHAPES]
    out["disp_hopper_splitk_lo"], out["disp_hopper_splitk_hi"] = bounds(
        r["ratio"] for r in split if r["params"]["strategy"] == "hopper_splitk")
    out["disp_splitk_lo"], out["disp_splitk_hi"] = bounds(r["ratio"] for r in split
                                                         if r["params"]["strategy"] == "splitk")
    big = next(r for r in rows if r["shape"] == list(ALIGNED) and r["params"]["strategy"] == "hopper"
               and r["dtype"] == "float16")
    out["disp_hopper_min_us"] = 2 * model.HOPPER_MIN_MNK / (big["value"] * 1e12) * 1e6
    exp = int(f"{model.HOPPER_MIN_MNK:.0e}".split("e")[1])
    sup = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
    out["disp_hopper_min_mnk"] = f"{model.HOPPER_MIN_MNK / 10 ** exp:g} \u00d7 10{str(exp).translate(sup)}"
    rows_e2e = (results.artifact("anyshape") or {}).get("end_to_end_hopper") or []
    out.update(gemv_split_values(rows_e2e))
    # auto's one-launch split-K rows on this loop, where a record still has them (the page's prose
    # quotes them until it is recorded with GEMV_MAX_M, after which auto runs none there)
    on_loop = [r for r in rows_e2e if r["plan"].startswith("hopper") and "(fused)" in r["plan"]]
    if on_loop:
        out.update({f"disp_fused_{k}": v for k, v in prose_ch09.fused_rows(on_loop).items()})
    call = next(r for r in split if r["shape"] == [512, 512, 32768] and r["params"]["strategy"] == "hopper_splitk"
                and r["dtype"] == "float16")
    out["disp_hopper_call_us"] = call["ms"] * 1e3
    # chapter 9's own split-K record (sections splitk_*, the model's split count, two-pass): the
    # range chapter 9's page quotes for heaven 7's loop, taken in another run than this section's
    out["disp_ch9_splitk_lo"], out["disp_ch9_splitk_hi"] = prose_ch09.splitk_bounds(results.artifact("anyshape") or {})
    # the ranges as text: one value where both ends print the same
    for name, fmt in (("hopper_odd", ".2f"), ("padding_odd", ".2f"), ("hopper_splitk", "#.3g"),
                      ("splitk", "#.3g"), ("ch9_splitk", "#.3g")):
        out[f"disp_{name}_span"] = span(out[f"disp_{name}_lo"], out[f"disp_{name}_hi"], fmt)
    return out


_COLS = {"dtype": "dtype", "title": "plan", "shape": "M, N, K", "value": "TFLOP/s", "reference_value": "cuBLAS",
         "ratio": "ratio to cuBLAS", "of_aligned": "of aligned 4096^3", "rel_err": "rel. error"}


def show_dispatcher() -> None:
    """The Hopper kernel inside chapter 9's dispatcher: live on sm_90 (:func:`hopper_dispatch`),
    else the record; a table, the bars at 4093^3, and the plans auto makes on this GPU family."""
    if gpu.live() and rt.can_run("hopper") is None:
        rows, where = hopper_dispatch(), results.where(True)
    else:
        rows, where = records()
    if not rows:
        show.note(f"The Hopper path of the dispatcher: {where}.", title="Dispatcher")
        return
    show.table(rows, _COLS, f"Chapter 10's kernel as strategies of chapter 9's dispatcher, beside chapter 9's own "
               f"paths; ratios to cuBLAS on the same shape, same run; {where}.")
    show.figure(fig.strategy_figure([r for r in rows if r["shape"] == list(ODD) and r.get("ratio")], where,
                                    "4093^3 through the dispatcher: ratio to cuBLAS, same run"))
    plans = []
    for s in ((4093, 4093, 4093), (512, 512, 32768), (1024, 1024, 16384), (4096, 4096, 4096), (1000, 1001, 1002)):
        a = s[1] % 8 == 0 and s[2] % 8 == 0
        p, h = model.plan(*s, aligned=a, sms=ch9.H200_SMS), model.plan(*s, aligned=a, sms=ch9.H200_SMS, hopper=True)
        plans.append({"M, N, K": " x ".join(map(str, s)), "chapter 9": p.name, "with the Hopper kernel": h.name,
                      "why": h.reason})
    show.table(plans, list(plans[0]), "auto's plans on an H200 (132 SMs) without and with the Hopper kernel "
               "(helpers.models.anyshape.plan). A model: no GPU involved.")


def show_gemm_hopper(shape=ODD) -> None:
    """On sm_90: ``helpers.gemm(A, B, strategy="hopper", verbose=True)`` on random fp16 operands of
    ``shape`` (M, N, K), which prints the plan, then the relative error against float64 in one
    line (AssertionError beyond the fp16 tolerance). Elsewhere one line saying what it needs."""
    if not (gpu.live() and rt.can_run("hopper") is None):
        print("helpers.gemm(A, B, strategy='hopper') needs an sm_90 GPU (H100/H200); the tables above are recorded.")
        return
    M, N, K = shape
    A, B = verify.random_matrix((M, K), "float16"), verify.random_matrix((K, N), "float16")
    C = rt.gemm(A, B, strategy="hopper", verbose=True)
    err = verify.rel_err(C, verify.reference_gemm(A, B))
    if not err <= verify.TOLERANCE["float16"]:
        raise AssertionError(f"helpers.gemm(strategy='hopper') on {M} x {N} x {K}: relative error {err:.1e}")
    print(f"relative error against float64: {err:.1e}")


def show_zoo_hopper() -> None:
    """The end-to-end zoo with the Hopper kernel among the candidates (section
    ``end_to_end_hopper``); until it is recorded, chapter 9's earlier zoo, measured with the
    Hopper strategy among its candidates (hover: its ratio)."""
    doc = results.artifact("anyshape") or {}
    if doc.get("end_to_end_hopper"):
        e2e.show_end_to_end("end_to_end_hopper", host=False)
        return
    rows, where = ch9.recorded("zoo")
    if rows:
        show.figure(fig.zoo_figure(rows, f"kernel-only timings (run()), the Hopper kernel among the candidates; "
                                         f"{where}"))
        print(ch9.zoo_summary(rows, "the recorded grid (the figure above)"))
    else:
        show.note(f"The zoo with the Hopper kernel: {where}.", title="Zoo")
