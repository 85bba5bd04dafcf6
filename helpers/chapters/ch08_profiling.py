"""Chapter 8, profiler-driven tuning: Nsight Compute on every heaven (no kernel file of its own).

The notebook's calls: :func:`panels_now` (the panels of every heaven's headline
kernel, profiled live when ncu runs here, else recorded on the H200),
:func:`profile_one` (one launch, with its ncu command line), :func:`show_diagnosis` (the
decision table, :mod:`helpers.models.diagnosis`, against the step each next heaven takes)
and :func:`show_roofline_measured` (each heaven at 2MNK over the DRAM bytes ncu counted, beside
its minimal-traffic intensity).

The autotuner's section: :func:`tuning_recorded` (the full search recorded in
``results/<gpu>-tuning.json``), :func:`show_search` (its table, the distribution of every timed
configuration, the model's rank against the measured one), :func:`show_tuned_panels` (the winner's
Nsight Compute panel beside the default's, one row when they are the same), :func:`show_defaults_here`
(which defaults this GPU gets from the tuning file), :func:`show_cublas_fp32` (the best FP32 kernel
and cuBLAS's under one profiler, recorded) and :func:`live_tune` (a small search run now, on a GPU).

:data:`EXCUSES` says, for each heaven whose diagnosis does *not* name the step
the next heaven takes, why the book takes that step anyway; the tests check
that the list is exactly the set of disagreements in the recorded counters.
"""
from __future__ import annotations

from helpers.figures import profiling as prof_fig, show, tuning as tuning_fig
from helpers.models import diagnosis, tuning
from helpers.runtime import bench, catalog, defaults, gpu, launch, panels, results, roofline, tune

from .common import HEADLINE, running
from .heaven_steps import GLOSSARY
from .cublas_fp32 import CUBLAS_ARTIFACT, CUBLAS_FIELDS, cublas_rows, show_cublas_fp32  # noqa: F401  (ch8.show_cublas_fp32)

SHAPE = (4096, 4096, 4096)

# Heaven N -> why heaven N+1 does not take the step heaven N's diagnosis names.
EXCUSES = {
    2: "The panel reads vec4 as bound by L1 traffic with DRAM nearly idle; the likely reason, which no "
       "profile here takes L1 away to show, is that the GPU's caches already serve the re-reads that a "
       "shared-memory tile would save. So the table asks for more reuse per L1 load (register tiles, heavens 4-5). The book takes shared-memory tiling first because "
       "register and warp tiles are built on it; on this GPU the plain 32 x 32 tile of heaven 3 "
       "is slower than heaven 2 and moves more DRAM traffic; that its blocks share less through the L2 is "
       "a likely reading, not measured apart.",
    6: "The table reads WMMA's panel as L2 traffic (the L2 above the busy line, the Tensor pipe under it): too "
       "little reuse per fetch. That is the rule's reading; no control changes the L2 traffic alone. Chapter 7's "
       "ladder measures something else: at WMMA's own tile, which asks for the same bytes, the mma.sync code "
       "(ldmatrix, the swizzle, double-buffered fragments) is already faster, so the book takes that path. Chapter "
       "7's default also has a wider block tile (128 x 256), which cuts the operand bytes per FLOP to three "
       "quarters; its ladder times that tile as a step of its own.",
    9: "Heaven 9 runs heaven 7's loop and reads the same: no unit saturated, no data wait in the lead, so "
       "the table says tune. The tuner was run on heaven 7's kernel, whose loop heaven 9 runs, not on "
       "heaven 9's own; what it found for heaven 7 is in the tuning section below. Heaven 10 changes what no "
       f"configuration can: <a href='{GLOSSARY}wgmma'>wgmma</a> takes its operands from shared memory for a "
       f"whole <a href='{GLOSSARY}warpgroup'>warpgroup</a>, <a href='{GLOSSARY}TMA'>TMA</a> copies tiles "
       "(chapter 10 introduces all three).",
}
# Bank models the autotuner multiplies in (helpers.runtime.tune.rank's shared_eff), per kernel.
TUNE_SHARED_EFF = {"mma_sync_f16": tuning.ldmatrix_efficiency, "mma_sync_bf16": tuning.ldmatrix_efficiency}
# The step heaven 8 itself takes: tune the configuration with the profiler's help.
HEAVEN_STEPS = {**diagnosis.HEAVEN_STEPS, 8: {"tune"}}


def plan(shape=SHAPE) -> list:
    """The headline kernel of every heaven (default parameters) that this GPU can run
    (:func:`helpers.runtime.launch.unable`; all of them in recorded mode)."""
    return [{"heaven": h, "key": k, "params": catalog.get(k).params(), "shape": list(shape)}
            for h, k in sorted(HEADLINE.items())
            if k in catalog.KERNELS and launch.unable(catalog.get(k)) is None]


def panels_now(shape=SHAPE, live: bool | None = None) -> tuple[list, str]:
    """(runs, where): profiled live in one ncu run when ncu works here (``live`` None:
    :func:`helpers.runtime.panels.usable`), else the panels recorded on the H200.
    Heavens this GPU cannot run come from the recording, labelled as such."""
    rec, _, rec_where = panels.recorded()
    if live is None:
        live = panels.usable()[0]
    if not live:
        return [r for r in rec if r["shape"] == list(shape)], rec_where
    runs, _ = panels.profile_many(plan(shape))
    have = {r["heaven"] for r in runs}
    missing = [{**r, "key": r["key"]} for r in rec if r["heaven"] not in have and r["shape"] == list(shape)]
    where = runs[0]["where"] if runs else rec_where
    if missing:
        where += f"; heavens {', '.join(str(r['heaven']) for r in missing)} {rec_where}"
    return sorted(runs + missing, key=lambda r: r["heaven"]), where


def show_panels(runs: list, where: str) -> None:
    """The panel table, the speed-of-light bars and the stall bars."""
    prof_fig.show_panels(runs, where)
    show.figure(prof_fig.sol_figure(runs, where))
    show.figure(prof_fig.stall_figure(runs, where))


def profile_one(key: str, shape=SHAPE) -> dict:
    """Profile one launch of ``key`` live and say in one line what ncu collected
    (:func:`helpers.runtime.ncu.command_summary`; the exact command is the run's "command");
    without a usable ncu, show the recorded panel of ``key`` and how it was recorded,
    labelled. Returns the run."""
    ok, why = panels.usable()
    if ok and launch.unable(catalog.get(key)):
        ok, why = False, f"{key} cannot run on this GPU: {launch.unable(catalog.get(key))}"
    if ok:
        run = panels.profile(key, shape=shape)
        print(f"Profiled with {panels.ncu_tool.command_summary(run['command'])}; "
              "the full command line is the \"command\" entry of the result, to repeat in a terminal")
    else:
        runs, doc, where = panels.recorded()
        run = next((r for r in runs if r["key"] == key and r["shape"] == list(shape)), None)
        if run is None:
            raise KeyError(f"{key} {list(shape)}: {why}, and no recorded panel ({where})")
        show.note(f"Nsight Compute cannot run here ({why}). The panel below was **recorded**: {where}. "
                  "On a GPU with ncu this cell profiles the launch now.", title="Recorded panel")
        print(f"The recording profiled all headline kernels in one process with "
              f"{panels.ncu_tool.command_summary(doc['command'])}; the full command line is the "
              "\"command\" entry of the record")
    prof_fig.show_panels([run], run["where"])
    d = diagnosis.diagnose(run["panel"])
    print(f"\ndiagnosis ({d['rule']}): {d['bottleneck']}\nnext step: {d['action']}")
    return run


def show_diagnosis(runs: list, where: str) -> list:
    """The decision table's verdict for every heaven against the step the next heaven takes."""
    return prof_fig.show_diagnosis(runs, where, HEAVEN_STEPS, EXCUSES)


def show_excuses(rows: list) -> None:
    """A note for each heaven whose diagnosis and next step disagree (:data:`EXCUSES`). Raises
    AssertionError for a verdict that is neither an agreement nor a disagreement the chapter explains."""
    for r in rows:
        if r["agree"] and r["agree"] != "yes":
            show.note(EXCUSES.get(r["heaven"], "**No reason recorded: this disagreement is new.**"),
                      title=f"Heaven {r['heaven']} -> {r['next']}: the table names "
                            f"{diagnosis.step_words(r['names'])}, the book takes {diagnosis.step_words(r['takes'])}")
    if any(r["agree"] not in ("yes", "no: see why below", None) for r in rows):
        raise AssertionError("a heaven's diagnosis disagrees with the next step and the chapter does not say why")


def show_roofline_measured(runs: list, where: str, shape=SHAPE) -> list:
    """Measure (or read) every heaven's TFLOP/s (:func:`helpers.chapters.common.running`) and
    draw them at measured and minimal intensity. Returns the records."""
    recs = running(upto=max(HEADLINE), shape=shape)
    ceil = roofline.ceilings()
    # Two sources, each named: the bytes (the panels: live where ncu runs) and the heights (the
    # running table: the record on the recording GPU, measured now on any other).
    title = (f"Every heaven at its measured DRAM traffic (bytes counted by Nsight Compute, {where}; "
             f"TFLOP/s {bench.where(recs)})")
    show.figure(prof_fig.roofline_measured(recs, ceil, runs, title=title))
    return recs


# ------------------------------------------------------------------ the autotuner (heaven 8's own step)
TUNED_KERNELS = ("cp_async", "mma_sync_f16", "mma_sync_bf16")
# The small search the notebook runs live: a few configurations of mma_sync on 2048^3 (the model's
# head of 4, 2 sampled, the default; no local refinement), well under a minute with a warm cache.
LIVE_TUNE = {"key": "mma_sync_f16", "shape": (2048, 2048, 2048), "top": 4, "sample": 2, "head": 12,
             "local_steps": 0}


def tuning_recorded(slug: str = results.DEFAULT_SLUG) -> tuple[list, str]:
    """(runs at the book's shape, where) of the recorded autotuner file; where reads
    "recorded on NVIDIA H200, 2026-12-01, commit ..., results/h200-tuning.json", or names
    each commit with its kernels when the runs were tuned at different commits."""
    doc = results.artifact("tuning", slug)
    f = f"results/{slug}-tuning.json"
    if doc is None:
        return [], f"not recorded yet ({f} is written by scripts/tune.py on a GPU)"
    prov = doc.get("provenance", {})
    runs = [r for r in doc.get("runs", []) if list(r.get("shape", [])) == list(SHAPE)]
    # Kernels are re-tuned separately, so the runs of one file can come from different commits:
    # name each run's commit (its own provenance, else the file's).
    by = {}
    for r in runs:
        by.setdefault(r.get("provenance", prov).get("commit", "?"), []).append(r["kernel"])
    commits = (f"commit {next(iter(by))}" if len(by) <= 1 else
               "commits " + "; ".join(f"{c} ({', '.join(ks)})" for c, ks in by.items()))
    return runs, f"recorded on {prov.get('gpu', '?')}, {prov.get('date', '?')}, {commits}, {f}"


def shipped_default_record(key: str, shape=SHAPE) -> dict | None:
    """The shipped default of ``key`` as recorded in results/<gpu>.json (another run than the tuner's)."""
    spec = catalog.get(key)
    return results.lookup(key, spec.defaults, spec.dtype, list(shape))


# The winner column names what the winner changes from the default the search started from
# (timed beside it in the run; an earlier tuning may have moved it off the catalog's defaults).
SAME_AS_DEFAULT = "(the default itself)"


def search_rows(runs: list) -> list:
    """One row per tuned kernel: the size of its space, what the rules and the ranking left,
    how many were timed and came within 90 % of the best, the winner, the default beside it
    (same run when the run timed it, else the results file's record, dated), the model's rho."""
    rows = []
    for run in runs:
        spec = catalog.get(run["kernel"])
        recs = tuning_fig.measured(run)
        best = recs[0] if recs else None
        base = run.get("baseline")
        if base:
            dflt = f"{base['ratio']:.3f} (same run)"
        else:
            o = shipped_default_record(run["kernel"], run["shape"])
            dflt = (f"{o['ratio']:.3f} (another run: results/{results.DEFAULT_SLUG}.json, "
                    f"{(o.get('recorded') or {}).get('date', '?')})" if o else "not timed")
        rho = tuning_fig.spearman(run)
        rows.append({"kernel": run["kernel"], "space": run.get("space"), "refused": run.get("refused"),
                     "ranked": run.get("ranked"), "timed": len(recs),
                     "near": f"{tuning_fig.near_best(run)} of {len(recs)}",
                     "best": None if best is None else f"{best['ratio']:.3f} ({best['value']:.4g} TFLOP/s)",
                     "winner": None if best is None else tuning_fig.fmt_params(
                         best["params"], base["params"] if base else spec.defaults, SAME_AS_DEFAULT),
                     "default": dflt, "rho": None if rho is None else round(rho, 2)})
    return rows


SEARCH_COLUMNS = {"kernel": "kernel", "space": "configurations", "refused": "refused by the rules",
                  "ranked": "ranked by the model", "timed": "timed", "near": "within 90 % of the best",
                  "best": "best: ratio to cuBLAS (TFLOP/s)", "winner": "winner (what differs from the default)",
                  "default": "default the search started from: ratio to cuBLAS", "rho": "model's Spearman rho"}


def show_search(runs: list, where: str) -> list:
    """The recorded (or live) search: its table, the distribution of every timed configuration
    and the model's rank against the measured rank. Returns the table rows."""
    if not runs:
        show.note(f"The autotuner's search is {where}.", title="No tuning run")
        return []
    rows = search_rows(runs)
    show.table(rows, SEARCH_COLUMNS, f"The autotuner's search, M = N = K = {runs[0]['shape'][0]}, every "
               f"configuration timed against cuBLAS in the same run (alternating rounds); {where}.")
    dflts = {r["kernel"]: catalog.get(r["kernel"]).defaults for r in runs}
    other = {k: o for k in dflts if (o := shipped_default_record(k, runs[0]["shape"])) is not None}
    show.figure(tuning_fig.distribution_figure(runs, where, dflts, other))
    show.figure(tuning_fig.rank_figure(runs, where))
    return rows


def rho_verdict(rho: float | None) -> str:
    """Spearman's rho in words."""
    if rho is None:
        return "not measured (fewer than two ranked configurations timed)"
    if rho >= 0.7:
        return "the model orders them well"
    if rho >= 0.3:
        return "the model orders them better than chance, loosely"
    if rho > -0.3:
        return "the model orders them no better than chance"
    return "the model orders them backwards: what it ranks higher tends to measure slower"


def default_verdict(run: dict) -> str:
    """The winner against the default, in words: same run when the run timed the default,
    else against the results file's record of the shipped default, said to be another run."""
    best = tuning_fig.measured(run)[0]
    base = run.get("baseline")
    if base:
        if best["params"] == base["params"]:
            return "the default was the fastest configuration timed: it stays"
        return (f"the winner's ratio to cuBLAS is {tuning_fig.speed(best) / tuning_fig.speed(base) - 1:+.1%} "
                f"against the default's, timed in the same run")
    o = shipped_default_record(run["kernel"], run["shape"])
    if o is None:
        return "the default was not timed"
    return (f"the default was not timed in this run; its ratio to cuBLAS in another run "
            f"({(o.get('recorded') or {}).get('date', '?')}, results/{results.DEFAULT_SLUG}.json) was "
            f"{o['ratio']:.3f}, the winner's here {best['ratio']:.3f} (each against its own cuBLAS timing)")


def summary_lines(runs: list, where: str) -> list:
    """The search in sentences, every number read from ``runs`` (printed under the figures)."""
    out = [f"Source: {where}."]
    for run, r in zip(runs, search_rows(runs)):       # the winner in words, never in brackets
        win = "the default itself" if r["winner"] == SAME_AS_DEFAULT else f"the default changed to {r['winner']}"
        out.append(f"{r['kernel']}: {r['space']} configurations, {r['refused']} refused by the rules, "
                   f"{r['ranked']} ranked, {r['timed']} timed, {r['near']} within 90 % of the best; best {r['best']} of "
                   f"cuBLAS, by {win}; {default_verdict(run)}; Spearman rho {r['rho']}: {rho_verdict(r['rho'])}.")
    return out


def _panel_of(runs: list, key: str, params: dict) -> dict | None:
    return next((r for r in runs if r["key"] == key and r.get("params") == params
                 and list(r["shape"]) == list(SHAPE)), None)


def winner(run: dict) -> dict:
    """The parameters of a run's fastest configuration by ratio to cuBLAS (as the table, the
    figures and :mod:`helpers.runtime.defaults` rank them)."""
    recs = tuning_fig.measured(run)
    return recs[0]["params"] if recs else run["best"]["params"]


def tuned_panel_pairs(run: dict, live: bool | None = None) -> tuple[list, str]:
    """([("shipped default", panel run or None), ("tuner's winner", panel run or None)], where)
    for one tuning run: profiled now when ncu works here (``live`` None: panels.usable()),
    else read from results/<gpu>-ncu-tuned.json, then (the default) from the heaven panels."""
    key, spec = run["kernel"], catalog.get(run["kernel"])
    win = winner(run)
    if live is None:
        live = panels.usable()[0] and launch.unable(spec) is None
    if live:
        items = [{"key": key, "params": spec.defaults, "shape": list(SHAPE), "role": "default"},
                 {"key": key, "params": win, "shape": list(SHAPE), "role": "winner"}]
        got, _ = panels.profile_many(items)
        return [("shipped default", got[0]), ("tuner's winner", got[1])], got[0]["where"]
    tuned, _, t_where = panels.recorded(name=panels.TUNED_ARTIFACT)
    heav, _, h_where = panels.recorded()
    d = _panel_of(tuned, key, spec.defaults)
    where = t_where
    if d is None:
        d = _panel_of(heav, key, spec.defaults)
        where = f"default: {h_where}; winner: {t_where}"
    return [("shipped default", d), ("tuner's winner", _panel_of(tuned, key, win))], where


def show_tuned_panels(runs: list, key: str = "cp_async", live: bool | None = None) -> None:
    """The winner's panel beside the shipped default's for ``key``'s tuning run (a table and
    bars); says plainly when the winner's counters are not recorded yet, and how to record them."""
    run = next((r for r in runs if r["kernel"] == key), None)
    if run is None:
        show.note(f"No tuning run of {key} is recorded.", title="Winner vs default")
        return
    pairs, where = tuned_panel_pairs(run, live)
    if pairs[0][1] is None and pairs[1][1] is None:
        show.note(f"No Nsight Compute panel of {key} is recorded, neither its default's nor its winner's "
                  f"({where}).", title="Winner vs default: not recorded yet")
        return
    if pairs[1][1] is None:
        show.note(f"The Nsight Compute counters of {key}'s tuned winner are **not recorded yet** "
                  f"({tuning_fig.fmt_params(winner(run), catalog.get(key).defaults)}). On a GPU with ncu: "
                  f"`python scripts/ncu_panels.py --tuned results/{results.DEFAULT_SLUG}-tuning.json "
                  f"--out results/{results.DEFAULT_SLUG}-ncu-tuned.json`. Below: the default's panel alone.",
                  title="Winner's panel: not recorded yet")
    if winner(run) == catalog.get(key).defaults:      # the winner is the default: one profile, one row
        pairs = [("shipped default, also the tuner's winner", pairs[0][1])]
    show.table(tuning_fig.panel_rows(pairs), {**prof_fig.PANEL_COLUMNS, "heaven": "configuration"},
               f"Nsight Compute panel of {key}, M = N = K = {SHAPE[0]}, one launch each; {where}.")
    show.figure(tuning_fig.panel_figure(pairs, f"{key}; {where}"))


def _races_where(full: dict) -> str:
    """"; the races (the table's rows) recorded <date> at commit <c>, ..." from the runs'
    confirmation provenance (confirmed_provenance, reconfirmed_provenance), or "" if none."""
    provs = {(p.get("date"), p.get("commit")) for r in full.get("runs", [])
             for p in (r.get("confirmed_provenance"), r.get("reconfirmed_provenance")) if p}
    if not provs:
        return ""
    return "; the races (the table's rows) " + ", ".join(f"recorded {d} at commit {c}" for d, c in sorted(provs))


def show_accuracy(slug: str = results.DEFAULT_SLUG) -> list:
    """The tuner against an exhaustive search (recorded): every valid configuration of one
    kernel timed once, its top re-timed with the tuner's pick by the full method, and where
    the pick stands (:func:`helpers.runtime.tune.accuracy`). Returns the rows."""
    full, tuned = results.artifact("tuning-exhaustive", slug), results.artifact("tuning", slug)
    where = results.artifact_where(full, "tuning-exhaustive", slug)
    if not full or not tuned:
        show.note(f"The exhaustive search is {where}.", title="No exhaustive run")
        return []
    rows = tune.accuracy(tuned, full)
    if rows:
        r0 = rows[0]
        show.table(rows, ["compared in", "best (of cuBLAS)", "tuner's pick (of cuBLAS)", "runner-up (of cuBLAS)",
                          "pick / best", "rank of the pick"],
                   f"The tuner's pick against every valid configuration of {r0['kernel']} ({r0['valid configurations']} "
                   f"valid; the tuner timed {r0['tuner timed']}, a share of {r0['share timed']}). Best, pick and rank go "
                   f"by the ratio to cuBLAS, each configuration against its own cuBLAS timing in the same run; the "
                   f"single-round pass {where}{_races_where(full)}.")
    name = {r["kernel"]: f"{r['kernel']} (all {r['space'] - r['refused']}, one round each)" for r in full["runs"]}
    runs = [{**r, "kernel": name[r["kernel"]], "timed": [{**t, "stage": "the exhaustive pass"} for t in r["timed"]]}
            for r in full["runs"]]
    show.figure(tuning_fig.distribution_figure(runs, where, {name[k]: catalog.get(k).defaults for k in name}))
    return rows


def ceiling_rows(runs: list, slug: str = results.DEFAULT_SLUG) -> list:
    """For each tuned mma.sync kernel: its best tuned ratio to cuBLAS (``runs``, by
    :func:`helpers.runtime.tune.speed`), and from chapter 7's PROBE ladder (another run,
    ``extras.mma_sync_probes`` of results/<slug>.json) the top rung (the mma instructions
    alone), the full kernel at its default (rung 0) and rung 0's share of the top rung, both
    timed in that probe run. No number of one run is divided by one of the other: the same
    kernel's ratio moves between runs (chapter 7's spread). Rows for the kernels that have both."""
    probes = results.load(slug).get("extras", {}).get("mma_sync_probes", {})
    out = []
    for run in runs:
        dt = catalog.get(run["kernel"]).dtype
        ladder, recs = probes.get(dt), tuning_fig.measured(run)
        if run["kernel"].startswith("mma_sync") and ladder and recs:
            top, base, best = ladder["rows"][-1]["ratio"], ladder["rows"][0]["ratio"], tune.speed(recs[0])
            out.append({"kernel": run["kernel"], "tuned (of cuBLAS), tuning run": round(best, 3),
                        "mma-only ceiling (of cuBLAS), probe run": round(top, 3),
                        "default (of cuBLAS), probe run": round(base, 3),
                        "default / ceiling, probe run": round(base / top, 3)})
    return out


def show_ceiling(runs: list, where: str) -> list:
    """:func:`ceiling_rows` as a table: how much of its own loop's ceiling the tuner reached."""
    rows = ceiling_rows(runs)
    if rows:
        show.table(rows, list(rows[0]), f"The tuned mma.sync kernel beside its mma-only ceiling (chapter 7's "
                   f"probe ladder, results/h200.json); the tuning: {where}. Each number is a ratio to cuBLAS "
                   f"timed against its own cuBLAS run; the only share is taken within the probe run, since "
                   f"chapter 7 shows the same kernel's ratio moving between runs.")
    return rows


def defaults_where(t: dict | None) -> str:
    """Where :func:`show_defaults_here`'s defaults are decided, for its first line: ``t`` is
    :func:`helpers.runtime.gpu.target` (None: recorded mode, no GPU in this run: the recording
    GPU's, named from the tuning file's provenance)."""
    f = f"results/{defaults.target_slug(t)}-{defaults.ARTIFACT}.json"
    if t is None:       # worded so that it stays true on a page whose other cells ran live
        doc = defaults.tuning_doc(defaults.target_slug(t)) or {}
        name = (doc.get("provenance") or {}).get("gpu")
        return f"for the recording GPU{f' ({name})' if name else ''}, read from {f}"
    src = (f"read from {f}" if defaults.tuning_doc(defaults.target_slug(t)) is not None
           else f"no {f} recorded for it")
    return f"on {gpu.describe_target(t)}, {src}" if t.get("simulated") else f"on this {t['name']}, {src}"


def show_defaults_here() -> None:
    """Which defaults the GPU the book decides for gets from the tuning files
    (:mod:`helpers.runtime.defaults`), one line per tuned kernel."""
    print(f"Defaults {defaults_where(gpu.target())}:")
    for k in TUNED_KERNELS:
        print("  " + defaults.explain(catalog.get(k)))


def live_tune(cfg: dict | None = None) -> dict | None:
    """Run :data:`LIVE_TUNE` now (needs a GPU and nvcc) and draw it; without a GPU, print one
    line and return None. Returns the tuning document."""
    cfg = {**LIVE_TUNE, **(cfg or {})}
    spec = catalog.get(cfg["key"])
    why = None if gpu.live() else "no CUDA GPU is visible here"
    why = why or launch.unable(spec)
    if why:
        print(f"The live tune needs a CUDA GPU that runs {cfg['key']} ({why}): the recorded search above stands in for it.")
        return None
    doc = tune.tune(cfg["key"], cfg["shape"], top=cfg["top"], sample=cfg["sample"], head=cfg["head"],
                    local_steps=cfg["local_steps"], shared_eff=TUNE_SHARED_EFF.get(cfg["key"]))
    where = f"measured live in this run on {results.live_label()}, M = N = K = {cfg['shape'][0]}"
    show_search([doc], where)
    for line in summary_lines([doc], where)[1:]:
        print(line)
    return doc
