"""Chapter 7's prose values: every measured number its Markdown quotes, read from the records.

A module of its own because ``helpers/chapters/ch07_mma_sync.py`` is near the 500-line limit; it
belongs to chapter 7's page (its glue cell calls :func:`prose_values`) and reads only the records
(``results/h200.json``, ``results/h200-ladder.json``, ``results/h200-ldmatrix.json``,
``results/h200-ncu-controls.json``), the catalog and the models: nothing is measured here.
"""
from __future__ import annotations

import json

from helpers.models import raster
from helpers.runtime import catalog, results

from . import ch07_mma_sync as ch7
from .common import Sentence
from .verdicts import change_kind

# The ladder's steps in words, by the rung's "change" (glued as Markdown: code in backticks, no $ math).
LADDER_PHRASES = {"mma.sync": "the code change at WMMA's own tile",
                  "LOAD_SPREAD 1": "spreading the copies over the k16 steps",
                  "STAGES 4": "a fourth stage",
                  "BN 256": "the wider block tile alone",
                  "BK 64": "`BK = 64` on the wide tile"}
SMALL_STEP = 0.015          # a step below this (in ratio to cuBLAS) is called small: "one and a half hundredths"


def _join(words: list) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def ladder_sizes(lad: list, small: float = SMALL_STEP) -> str:
    """One sentence, in words, on the sizes of the ladder's steps (``lad``: the recorded rungs in
    order, each with "change" and "ratio"): which step gains most, which lower the ratio, which
    move it by less than ``small``. Computed from the record, so no comparison the prose makes
    can go stale when the ladder is recorded again."""
    steps = [(LADDER_PHRASES.get(b["change"], b["change"]), b["ratio"] - a["ratio"]) for a, b in zip(lad, lad[1:])]
    tiny = [w for w, d in steps if abs(d) < small]
    losses = [w for w, d in steps if d <= -small]
    best, gain = max(steps, key=lambda s: s[1])
    parts = [f"the largest gain in that run is {best}" if gain >= small else "no step gains much in that run"]
    if losses:
        parts.append(f"{_join(losses)} {'lowers' if len(losses) == 1 else 'lower'} the ratio")
    if tiny:
        parts.append(f"{_join(tiny)} {'moves' if len(tiny) == 1 else 'move'} it by less than one and a half "
                     "hundredths, too little to read much into (see the box further down)")
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def default_runs(shape=(4096, 4096, 4096)) -> dict:
    """The shipped default of ``mma_sync_f16`` at ``shape`` as separate recorded runs timed it,
    each a ratio to cuBLAS timed in its own run: the running table (results/<gpu>.json), the
    last rung of the WMMA-to-mma.sync ladder (results/<gpu>-ladder.json), rung 0 of the probe
    ladder (``extras.mma_sync_probes``) and the tuner's baseline (results/<gpu>-tuning.json).
    {what: ratio}; KeyError when one is missing or is not the default configuration."""
    p, data = catalog.get("mma_sync_f16").defaults, results.load()
    lad = (results.artifact(ch7.LADDER_ARTIFACT) or {}).get("runs", {}).get("float16") or []
    probe = data["extras"]["mma_sync_probes"]["float16"]
    tuned = next((r for r in (results.artifact("tuning") or {}).get("runs", []) if r["kernel"] == "mma_sync_f16"), {})
    base = next((r for r in tuned.get("timed", []) if r.get("stage") == "baseline"), None)
    if not lad or base is None or any(x.get("params") != p for x in (lad[-1], probe, base)):
        raise KeyError("a recorded run of mma_sync_f16's shipped default is missing")
    return {"the running table": _ratio("mma_sync_f16", shape), "the ladder's last rung": lad[-1]["ratio"],
            "the probe ladder's rung 0": probe["rows"][0]["ratio"], "the tuner's baseline": base["ratio"]}


def _ratio(key: str, shape=(4096, 4096, 4096), **changes) -> float:
    """Recorded ratio to cuBLAS of ``key`` at its shipped defaults with ``changes``; KeyError if absent."""
    spec = catalog.get(key)
    rec = results.lookup(key, {**spec.defaults, **changes}, spec.dtype, list(shape))
    if rec is None or rec.get("ratio") is None:
        raise KeyError(f"{key} {changes or 'defaults'} at {list(shape)} is not recorded in results/*.json")
    return rec["ratio"]


def prose_values(shape=(4096, 4096, 4096)) -> dict:
    """Every measured number chapter 7's prose quotes, from the records only: sweep ratios to
    cuBLAS (results/<gpu>.json), the ladder's rungs and steps (results/<gpu>-ladder.json, one run),
    ``ladder_sizes``, a sentence in words saying which step is largest, which lower the ratio and
    which are small (:func:`ladder_sizes`), the cp.async write conflicts the model misses
    (results/<gpu>-ldmatrix.json), the PROBE ladder with its clock (MHz) and power (W) samples (``extras.mma_sync_probes``; ``probe_store_us``: what
    dropping the C stores saved, ``c_copy_us``: C's bytes at the recorded copy bandwidth), the L2 size
    (MiB, the recorded device spec), the operand panels one wave reads in each block order (model:
    :func:`helpers.models.raster.wave_panels`, MiB, as the block-order figure gives them) and the
    spread of the default kernel between recorded runs (``spread_lo`` / ``spread_hi``: the lowest
    and highest ratio of :func:`default_runs`, ``spread_n`` runs, ``spread_x`` the relative gap;
    ``group1_reading``: what plain block order's gap to the default says against it, :func:`group1_reading`).
    KeyError when a record is missing."""
    data, lad = results.load(), (results.artifact(ch7.LADDER_ARTIFACT) or {}).get("runs", {}).get("float16")
    probes, ldsm = data["extras"]["mma_sync_probes"], results.artifact("ldmatrix")
    if not lad or not ldsm:
        raise KeyError("the ladder or the ldmatrix counters are not recorded")
    swz = next(r["measured"] for r in ldsm["runs"] if r["label"] == "mma.sync, swizzled smem")
    f16, bf16 = probes["float16"], probes["bfloat16"]
    out = {"mma_ratio": _ratio("mma_sync_f16", shape),
           "wmma_ratio": _ratio("wmma_f16", shape), "swz0": _ratio("mma_sync_f16", shape, SWIZZLE=0),
           "pad0": _ratio("wmma_f16", shape, PAD=0), "group1": _ratio("mma_sync_f16", shape, GROUP_M=1),
           "ldgsts_extra": int(swz["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"]),
           "ldgsts_n": int(swz["sm__sass_inst_executed_op_ldgsts.sum"]),
           "probe_top": f16["rows"][-1]["ratio"], "probe_top_bf16": bf16["rows"][-1]["ratio"],
           "probe_base": f16["rows"][0]["ratio"],
           "probe_store_us": 1000 * (f16["rows"][0]["ms"] - f16["rows"][1]["ms"]),
           "c_copy_us": shape[0] * shape[1] * 2 / (data["ceilings"]["copy_GBps"] * 1e3),
           "clock_median": f16["power"]["clock_MHz_median"], "clock_top": f16["power"]["clock_MHz_max_allowed"],
           "capped_share": f16["power"]["power_capped_fraction"],
           "l2_mib": data["ceilings"]["spec"]["l2_bytes"] / 2 ** 20}
    out.update(swz_x=out["mma_ratio"] / out["swz0"], pad_x=out["wmma_ratio"] / out["pad0"],
               probe_share=out["probe_base"] / out["probe_top"])
    ctl = {(r["key"], json.dumps(r.get("extra_defines") or {})): r["metrics"]
           for r in (results.artifact("ncu-controls") or {}).get("runs", [])}
    rung = ctl[("mma_sync_f16", json.dumps({"PROBE": 4}))]          # scripts/ncu_panels.py --controls
    tensor = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    out.update(rung_tensor_pct=rung[tensor], kernel_tensor_pct=ctl[("mma_sync_f16", "{}")][tensor],
               rung_clock=rung["sm__cycles_elapsed.avg.per_second"] / 1e6,
               clock_room=out["clock_top"] / (rung["sm__cycles_elapsed.avg.per_second"] / 1e6),
               probe_gap=1 / out["probe_top"])
    out.update({f"ladder_step_{i}": lad[i]["ratio"] - lad[i - 1]["ratio"] for i in range(1, len(lad))})
    out["ladder_equal_share"] = out["ladder_step_1"] / (lad[-1]["ratio"] - lad[0]["ratio"])
    out["ladder_sizes"] = Sentence(ladder_sizes(lad))
    p = catalog.get("mma_sync_f16").defaults
    for g in (1, p["GROUP_M"]):
        w = raster.wave_panels({**p, "GROUP_M": g}, shape, ch7.gpu_sms(), elem_bytes=2)
        out.update({f"wave_g{g}_a": len(w["a_panels"]), f"wave_g{g}_b": len(w["b_panels"]),
                    f"wave_g{g}_mib": (w["a_bytes"] + w["b_bytes"]) / 2 ** 20})
    runs = default_runs(shape)
    out.update(spread_lo=min(runs.values()), spread_hi=max(runs.values()), spread_n=len(runs),
               spread_x=max(runs.values()) / min(runs.values()) - 1)
    out["group1_reading"] = group1_reading(out["group1"], out["mma_ratio"], out["spread_hi"] - out["spread_lo"])
    return out


def group1_reading(group1: float, default: float, spread: float) -> Sentence:
    """What chapter 7 may say of plain block order (``group1``) against the default (ratios to
    cuBLAS), given the default kernel's spread between recorded runs."""
    if change_kind(group1 - default, spread) == "within":
        return Sentence("That gap is smaller than the spread of the default kernel between runs, so these two "
                        "numbers cannot say whether grouping helps at 4096³")
    return Sentence("That gap is larger than the spread of the default kernel between runs: in this record plain "
                    f"order is {'slower' if group1 < default else 'faster'} at 4096³")
