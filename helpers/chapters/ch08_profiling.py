"""Chapter 8, profiler-driven tuning: Nsight Compute on every heaven (no kernel file of its own).

The notebook's calls: :func:`panels_now` (the panels of every heaven's headline
kernel, profiled live when ncu runs here, else recorded on the H200),
:func:`profile_one` (one launch, with the exact ncu command line),
:func:`show_diagnosis` (seed 000 §5.2's decision table,
:mod:`helpers.models.diagnosis`, against the step each next heaven takes) and
:func:`show_roofline_measured` (each heaven at 2MNK over the DRAM bytes ncu
counted, beside its minimal-traffic intensity).

:data:`EXCUSES` says, for each heaven whose diagnosis does *not* name the step
the next heaven takes, why the book takes that step anyway; the tests check
that the list is exactly the set of disagreements in the recorded counters.
"""
from __future__ import annotations

from helpers.figures import profiling as prof_fig, show
from helpers.models import diagnosis, tuning
from helpers.runtime import catalog, launch, panels, roofline

from .common import HEADLINE, running

SHAPE = (4096, 4096, 4096)

# Heaven N -> why heaven N+1 does not take the step heaven N's diagnosis names.
EXCUSES = {
    2: "vec4 is bound by L1 traffic with DRAM nearly idle: the GPU's caches already serve the "
       "re-reads that a shared-memory tile would save, so the table asks for more reuse per L1 "
       "load (register tiles, heavens 4-5). The book takes shared-memory tiling first because "
       "register and warp tiles are built on it; on this GPU the plain 32 x 32 tile of heaven 3 "
       "is slower than heaven 2, and its DRAM traffic is larger (its blocks share less through L2).",
    6: "WMMA's limiter is L2 traffic (L2 throughput above the busy line with the Tensor pipe under "
       "it): too little reuse per fetch. Chapter 7's subject is the instruction path (ldmatrix, the "
       "swizzle, a deeper pipeline), but its default block tile is also twice as wide (128 x 256 "
       "instead of 128 x 128), which halves the L2 traffic per FLOP: the diagnosis names what that "
       "larger tile does, not what the chapter is about.",
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
    """Profile one launch of ``key`` live and print the exact command line; without a
    usable ncu, show the recorded panel of ``key`` and the command that recorded it,
    labelled. Returns the run."""
    ok, why = panels.usable()
    if ok and launch.unable(catalog.get(key)):
        ok, why = False, f"{key} cannot run on this GPU: {launch.unable(catalog.get(key))}"
    if ok:
        run = panels.profile(key, shape=shape)
        print("ncu ran (from the repository root):\n" + run["command"])
    else:
        runs, doc, where = panels.recorded()
        run = next((r for r in runs if r["key"] == key and r["shape"] == list(shape)), None)
        if run is None:
            raise KeyError(f"{key} {list(shape)}: {why}, and no recorded panel ({where})")
        show.note(f"Nsight Compute cannot run here ({why}). The panel below was **recorded**: {where}. "
                  "On a GPU with ncu this cell profiles the launch now.", title="Recorded panel")
        print("The recording ran (all headline kernels in one process):\n" + doc["command"])
        print("\nOne kernel, as this cell runs it on a GPU:\n" + " ".join(
            panels.ncu_tool.raw_command("ncu", panels.child_argv(key, shape), panels.kernel_regex([key]),
                                        panels.METRICS, launch_count=1)))
    prof_fig.show_panels([run], run["where"])
    d = diagnosis.diagnose(run["panel"])
    print(f"\ndiagnosis ({d['rule']}): {d['bottleneck']}\nnext step: {d['action']}")
    return run


def show_diagnosis(runs: list, where: str) -> list:
    """The decision table's verdict for every heaven against the step the next heaven takes."""
    return prof_fig.show_diagnosis(runs, where, HEAVEN_STEPS, EXCUSES)


def show_excuses(rows: list) -> None:
    """A note for each heaven whose diagnosis and next step disagree (:data:`EXCUSES`)."""
    for r in rows:
        if r["agree"] and r["agree"] != "yes":
            show.note(EXCUSES.get(r["heaven"], "**No reason recorded: this disagreement is new.**"),
                      title=f"Heaven {r['heaven']} -> {r['next']}: the table names {r['names']}, "
                            f"the book takes {r['takes']}")


def show_roofline_measured(runs: list, where: str, shape=SHAPE) -> list:
    """Measure (or read) every heaven's TFLOP/s (:func:`helpers.chapters.common.running`) and
    draw them at measured and minimal intensity. Returns the records."""
    recs = running(upto=max(HEADLINE), shape=shape)
    ceil = roofline.ceilings()
    title = f"Every heaven at its measured DRAM traffic (bytes counted by Nsight Compute, {where})"
    show.figure(prof_fig.roofline_measured(recs, ceil, runs, title=title))
    return recs
