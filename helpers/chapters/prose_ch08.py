"""Chapter 8's prose values: every measured number its Markdown quotes, read from the records.

A module of its own because ``helpers/chapters/ch08_profiling.py`` is near the 500-line limit; it
belongs to chapter 8's page (its glue cell calls :func:`prose_values`) and reads only the
records (``results/h200*.json``), the catalog and the models: nothing is measured here.
"""
from __future__ import annotations

from helpers.figures import profiling as prof_fig, tuning as tuning_fig
from helpers.models import anyshape, counters, diagnosis
from helpers.runtime import catalog, defaults, panels, results, roofline, tune

from . import ch08_profiling as ch8, common

SHAPE = ch8.SHAPE


def _panel(runs: list, heaven: int) -> dict:
    run = next((r for r in runs if r.get("heaven") == heaven and list(r["shape"]) == list(SHAPE)), None)
    if run is None:
        raise KeyError(f"heaven {heaven}: no recorded Nsight Compute panel at {list(SHAPE)}")
    return run


def ordinal(n: int | None) -> str:
    """1 -> "first", ..., 10 -> "tenth", 11 -> "11th": a place in a race, in words; None (the
    configuration was not in the race) -> "not raced"."""
    if n is None:
        return "not raced"
    words = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
    return words[n - 1] if 1 <= n <= len(words) else f"{n}th"


def places(a: int | None, b: int | None) -> str:
    """Two places in words: "first in both races", "second and sixth", or "outside both races"."""
    if a is None and b is None:
        return "outside both races"
    return f"{ordinal(a)} in both races" if a == b else f"{ordinal(a)} and {ordinal(b)}"


def _record(key: str) -> dict:
    spec = catalog.get(key)
    rec = results.lookup(key, spec.defaults, spec.dtype, list(SHAPE))
    if rec is None or rec.get("value") is None:
        raise KeyError(f"{key}: its shipped default is not recorded in results/{results.DEFAULT_SLUG}.json")
    return rec


def panel_values(runs: list) -> dict:
    """The numbers of the panel paragraphs, from the recorded heaven panels ``runs``: percentages
    (``*_pct``, ``*_occ``, ``*_l2hit``), DRAM bytes (``*_gb``, ``*_mb``; read + written unless
    named ``_read``), intensities at the measured traffic (``h*_ai``, FLOP per byte) and what the
    memory roof allows at the naive kernel's (``h1_roof``, TFLOP/s at the recorded copy bandwidth)."""
    p = {h: _panel(runs, h)["panel"] for h in (1, 2, 3, 4, 5, 6, 7, 10)}
    dram = {h: (p[h]["dram_read"] or 0) + (p[h]["dram_write"] or 0) for h in p}
    ai = {h: diagnosis.measured_intensity(SHAPE, p[h]["dram_read"], p[h]["dram_write"]) for h in p}
    early = [p[h] for h in (1, 2, 3, 4)]
    data = results.load()
    out = {"h14_mem_min": min(x["mem_pct"] for x in early), "h14_mem_max": max(x["mem_pct"] for x in early),
           "h14_fma_min": min(x["fma_pct"] for x in early), "h14_fma_max": max(x["fma_pct"] for x in early),
           "h1_gb": dram[1] / 1e9, "h2_gb": dram[2] / 1e9, "h3_gb": dram[3] / 1e9,
           "h2_l2hit": p[2]["l2_hit"], "h3_l2hit": p[3]["l2_hit"],
           "h5_fma": p[5]["fma_pct"], "h5_occ": p[5]["occ_achieved"], "h5_mb": dram[5] / 1e6,
           "h6_tensor": p[6]["tensor_pct"], "h7_tensor": p[7]["tensor_pct"], "h10_tensor": p[10]["tensor_pct"],
           "h6_read_mb": p[6]["dram_read"] / 1e6, "h7_read_mb": p[7]["dram_read"] / 1e6,
           "h10_read_mb": p[10]["dram_read"] / 1e6,
           "l2_mib": data["ceilings"]["spec"]["l2_bytes"] / 2 ** 20,
           "h1_roof": ai[1] * data["ceilings"]["copy_GBps"] / 1e3,
           "h1_tflops": _record(ch8.HEADLINE[1])["value"],
           "fp32_min_ai": roofline.intensity_min(*SHAPE), "fp16_min_ai": roofline.intensity_min(*SHAPE, 2, 2)}
    out.update({f"h{h}_ai": ai[h] for h in (1, 2, 3, 4, 5, 7)})
    return out


def tuner_values() -> dict:
    """The numbers of the autotuner's sections: the exhaustive pass and its confirmations
    (``ex_*``; ``ex_lead_gap``: how far its single-round leader measured above the next, by ratio
    to cuBLAS, a fraction; ``ex_lead_places``: where that leader placed in the two confirmation races,
    in words), the tuner's pick in those races (``pick_places``, ``share_timed``), the tuning figures'
    line (``near``, % of the best), the tuned kernels against
    chapter 7's mma-only ceiling (``ceil_*``, ratios to cuBLAS; ``ceil_f16_share``: the default's
    share of that ceiling within the probe run, a fraction), the FP32 build profiles
    (``regs_*``, ``issue_*`` in %), the cuBLAS comparison (``ffma_diff_pct``, ``waves_x``,
    ``ctl_*`` ratios) and the defaults' margin with the measurement noise it covers (fractions)."""
    full, tuned = results.artifact("tuning-exhaustive"), results.artifact("tuning")
    if not full or not tuned:
        raise KeyError("results/<gpu>-tuning.json or -tuning-exhaustive.json is not recorded")
    ex = next(r for r in full["runs"] if r["kernel"] == "mma_sync_f16")
    order = sorted(ex["timed"], key=tune.speed, reverse=True)
    lead = order[0]["params"]

    def rank(src, params):
        me = next(r for r in src if r["params"] == params)
        return 1 + sum(tune.speed(r) > tune.speed(me) for r in src)
    acc = tune.accuracy(tuned, full)
    runs, _ = ch8.tuning_recorded()
    ceil = {r["kernel"]: r for r in ch8.ceiling_rows(runs)}
    cub = ch8.cublas_rows()
    if cub is None:
        raise KeyError("results/<gpu>-ncu-cublas.json is not recorded")
    c = counters.by_field(cub["counters"])
    ctl = {r["what"]: r["ratio to cuBLAS"] for r in cub["control"]}
    tuned_panels, _, _ = panels.recorded(name=panels.TUNED_ARTIFACT)
    shipped = next(r for r in tuned_panels if r["key"] == "cp_async" and r["params"] == catalog.get("cp_async").defaults)
    noise = anyshape.same_plan_spread((results.artifact("anyshape") or {}).get("zoo", []))
    return {"ex_valid": ex["space"] - ex["refused"],
            "ex_lead_gap": tune.speed(order[0]) / tune.speed(order[1]) - 1,
            "ex_lead_gap_tflops": order[0]["value"] / order[1]["value"] - 1,
            "ex_lead_places": places(rank(ex["confirmed"], lead), rank(ex["reconfirmed"], lead)),
            "ex_race_n": len(ex["confirmed"]),
            "pick_places": places(acc[0]["rank of the pick"], acc[-1]["rank of the pick"]),
            "share_timed": acc[0]["share timed"],
            "ceil_f16": ceil["mma_sync_f16"]["mma-only ceiling (of cuBLAS), probe run"],
            "ceil_f16_tuned": ceil["mma_sync_f16"]["tuned (of cuBLAS), tuning run"],
            "ceil_f16_share": ceil["mma_sync_f16"]["default / ceiling, probe run"],
            "regs_shipped": int(shipped["metrics"]["launch__registers_per_thread"]),
            "issue_shipped": shipped["panel"]["issue_pct"],
            "regs_cmp": cub["launch"][0]["registers"], "issue_cmp": c["issue_pct"]["a"],
            "issue_cublas": c["issue_pct"]["b"],
            "ffma_diff_pct": cub["ffma_diff_pct"], "waves_x": c["shared_waves_per_op"]["b / a"],
            "ctl_own": ctl["our default tile"], "ctl_theirs": ctl["cuBLAS's tile"],
            "margin": defaults.MARGIN, "noise_median": noise["median"], "near": 100 * tuning_fig.NEAR}


def prose_values() -> dict:
    """Every measured number chapter 8's Markdown quotes (:func:`panel_values`,
    :func:`tuner_values`), the decision table's thresholds (:mod:`helpers.models.diagnosis`, %)
    how many heavens' next steps disagree with their diagnosis (``n_excused``, with
    ``excused``: those heavens in words), and what the prose says of heaven 7's diagnosis
    (``h7_leaves``, ``h7_diagnosis``: "tune", or the bottleneck the table names instead). KeyError when a record is missing."""
    runs, _, _ = panels.recorded()
    rows = prof_fig.diagnosis_rows(runs, ch8.HEAVEN_STEPS, ch8.EXCUSES)
    off = [r["heaven"] for r in rows if r["agree"] and r["agree"] != "yes"]
    words = {2: "two", 3: "three", 4: "four", 5: "five"}
    h7 = diagnosis.diagnose(_panel(runs, 7)["panel"])
    tune = h7["step"] == "tune"
    return {**panel_values(runs), **tuner_values(),
            "h7_leaves": common.Sentence(
                "heaven 7, with the Tensor pipe busy and no data wait on top, leaves tuning, which is this heaven's job"
                if tune else f"heaven 7's panel reads as {h7['bottleneck']}, though tuning is this heaven's job"),
            "h7_diagnosis": common.Sentence(
                "Heaven 7's diagnosis is \"tune\": no unit is saturated and no data wait is on top." if tune else
                f"In the record, heaven 7's diagnosis is \"{h7['bottleneck']}\", not \"tune\"; this heaven "
                "tunes the configuration all the same."),
            "busy": diagnosis.BUSY, "ceiling": diagnosis.CEILING,
            "conflict_share": 100 * diagnosis.CONFLICT_SHARE, "sector_use": diagnosis.SECTOR_USE,
            "n_excused": words.get(len(off), str(len(off))),
            "excused": ", ".join(map(str, off[:-1])) + f" and {off[-1]}" if len(off) > 1 else "".join(map(str, off))}
