"""The landing page's numbers (book/intro.ipynb): the ratios to cuBLAS its prose quotes, read from
the H200's records only. A module of its own because the landing page has no chapter module and
``common.py`` is close to its 500-line limit; it registers no kernel.
"""
from __future__ import annotations

from helpers.runtime import results

from . import common, prose_ch07
from .verdicts import change_kind

ODD = (4093, 4093, 4093)          # chapter 9's odd cube, where cuBLAS is weak


def _odd(strategy: str, dtype: str = "float16", section: str = "odd") -> dict:
    """The record of chapter 9's any-shape runner with ``strategy`` on :data:`ODD` in ``dtype``
    (``results/<gpu>-anyshape.json``, ``section``: "odd", chapter 9's kernels, or
    "hopper_dispatch", chapter 10's kernel in the dispatcher); KeyError when it is not recorded."""
    doc = results.artifact("anyshape") or {}
    for r in doc.get(section, []):
        if r["kernel"] == f"any:{strategy}" and r["dtype"] == dtype and tuple(r["shape"]) == ODD:
            return r
    raise KeyError(f"any:{strategy} {dtype} {ODD}: not recorded in results/{results.DEFAULT_SLUG}-anyshape.json")


def prose_values() -> dict:
    """{name: ratio to cuBLAS} for the landing page's glue, all at 4096^3 unless named: each
    heaven's headline kernel (``heaven<N>_ratio``, the staircase's records), the uncoalesced
    x-first kernel of chapter 1 (``naive_x_ratio``), chapter 10's first rung in fp16
    (``hopper_r1_ratio``), and at 4093^3 in fp16 chapter 9's padding around heaven 7's kernel
    (``odd_padding_ratio``); ``h9_vs_h7``, the sentence on heaven 9 against heaven 7 (:func:`h9_words`); and, as text, the range of chapter 10's kernel plugged into the
    dispatcher at 4093^3 in fp16 and bf16 (``odd_hopper_span``, "3.73 to 3.78"): the range
    chapter 10's prose quotes, from the same record (section "hopper_dispatch", strategy "hopper"). Read from the records, never measured;
    KeyError when one is missing."""
    out = {f"heaven{h}_ratio": common.recorded_run(k)["ratio"] for h, k in common.HEADLINE.items()}
    out["naive_x_ratio"] = common.recorded_run("naive_xfirst")["ratio"]
    out["hopper_r1_ratio"] = common.recorded_run("hopper_r1_tma_wgmma_f16")["ratio"]
    out["odd_padding_ratio"] = _odd("padding")["ratio"]
    lo, hi = common.bounds(_odd("hopper", dt, "hopper_dispatch")["ratio"] for dt in ("float16", "bfloat16"))
    out["odd_hopper_span"] = common.span(lo, hi, ".2f")
    runs = prose_ch07.default_runs()
    out["h9_vs_h7"] = h9_words(out["heaven9_ratio"], out["heaven7_ratio"], max(runs.values()) - min(runs.values()))
    return out


def h9_words(h9: float, h7: float, spread: float) -> common.Sentence:
    """The landing page's sentence on heaven 9 against heaven 7 (ratios to cuBLAS), given the
    spread of heaven 7's own kernel between recorded runs (chapter 7's ``spread_*``)."""
    what = "its kernel is heaven 7's loop made to take any shape, with tile parameters of its own"
    if h9 >= h7:
        return common.Sentence(f"Heaven 9 sits level with or above heaven 7: {what}.")
    if change_kind(h9 - h7, spread) == "within":
        return common.Sentence(f"Heaven 9 sits below heaven 7: {what}, and the gap lies within the spread that "
                               "chapter 7 reports between separate recorded runs of heaven 7's own kernel, so the "
                               "staircase shows no measured cost of the guards.")
    return common.Sentence(f"Heaven 9 sits below heaven 7 by more than the spread that chapter 7 reports between "
                           f"separate recorded runs of heaven 7's own kernel: {what}, and in this record its guards "
                           "and tiles cost that gap.")
