"""Nsight Compute panels of every heaven's headline kernel (chapter 8).

Usage (on a GPU with Nsight Compute):

    python scripts/ncu_panels.py --out results/h200-ncu-panels.json [--shape 4096 4096 4096]
    python scripts/ncu_panels.py --launch cp_async [--shape M N K] [--params '{"BK": 8}']
    python scripts/ncu_panels.py --tuned results/h200-tuning.json --out results/h200-ncu-tuned.json
        [--kernels cp_async mma_sync_f16]
    python scripts/ncu_panels.py --controls --out results/h200-ncu-controls.json

The first form profiles the headline kernel (helpers.chapters.common.HEADLINE,
default parameters) of every heaven this GPU can run, one launch each, under

    ncu --clock-control none --target-processes all --kernel-name regex:^(<entries>)$
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy
        --section WarpStateStats --metrics <helpers.runtime.panels.METRICS>
        --page raw --csv --print-units base --log-file <tmp.csv>
        python scripts/ncu_panels.py --child <plan.json>

and writes every raw metric of each launch, the exact command and provenance
(GPU, driver, CUDA runtime, CuPy, date, commit, ncu version) to --out (numeric
values only, without the per-unit .min/.max roll-ups). Metrics
that `ncu --query-metrics` does not know are dropped and listed. The second
form (``--tuned``) profiles, for each kernel of an autotuner file (``--kernels``: some of
them), its shipped default and the tuner's winner (the fastest by ratio to cuBLAS), one launch each, in
one ncu run the same way, and writes them with "role" ("default" or "winner") for chapter
8's winner-beside-default panel (``helpers.runtime.panels.TUNED_ARTIFACT``). The third
form is the child the notebook's one-kernel call (helpers.runtime.panels.profile)
runs under ncu: one launch of one kernel, checked against a float64 reference.
``--controls`` profiles the controls the chapters' claims rest on (:data:`CONTROLS`: the two naive
orders and chapter 2's kernels with the sector and request counters of their global loads and
the L1/L2 hit rates, the y-first order, strip4 and vec4 three launches each; cp_async with its bank conflicts split by instruction kind, the cp.async
copies included; the mma-only rung of chapter 7's PROBE ladder), with the panel's counters
plus :data:`CONTROL_METRICS`, and writes them as ``results/<gpu>-ncu-controls.json``.
``--query-out FILE`` also saves the output of `ncu --query-metrics`.

Exit status: 0 when the JSON was written (or the launch ran), 1 when ncu is
missing or profiled nothing.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers.chapters.common import HEADLINE  # noqa: E402  (after the path set-up; fills the catalog)
from helpers.models import diagnosis  # noqa: E402
from helpers.runtime import catalog, defaults as tuned, gpu, ncu as ncu_tool, panels  # noqa: E402


MINMAX = re.compile(r"\.(min|max)(\.|$)")    # per-unit extremes: not read by the panel, half the file


# The controls (--controls): what each chapter's "because" rests on, one launch each, or
# "launches" of them where the L2 decides the DRAM bytes: those move from launch to launch (in two
# ncu runs on an H100, vec4 by 26 % and 2 % min to max, strip4 by 9 % and 14 %), so chapters 1-2
# quote the median launch and chapter 2 the range.
CONTROLS = [
    {"key": "naive_xfirst", "claim": "chapter 1: x-first threads do not coalesce"},
    {"key": "naive_yfirst", "launches": 3, "claim": "chapter 1: y-first threads coalesce"},
    {"key": "strip4", "launches": 3, "claim": "chapter 2: four outputs per thread, scalar loads"},
    {"key": "vec4", "launches": 3, "claim": "chapter 2: four outputs per thread, float4 loads"},
    {"key": "cp_async", "claim": "chapter 5: which instruction has the bank conflicts"},
    {"key": "mma_sync_f16", "claim": "chapter 7: the kernel beside its mma-only rung"},
    {"key": "mma_sync_f16", "extra_defines": {"PROBE": 4}, "claim": "chapter 7: the mma-only rung (PROBE=4)"},
]
CONTROL_METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__inst_executed_op_ldgsts.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__cycles_elapsed.avg.per_second",
]


def controls_plan(shape) -> list:
    """The profile items of :data:`CONTROLS` this GPU runs, each ``"launches"`` times (default 1),
    numbered by ``"launch"``; the repeats follow each other, so a kernel's launches are consecutive."""
    cc = gpu.device_info()["cc"]
    return [{**c, "params": catalog.get(c["key"]).params(), "shape": list(shape), "launch": i}
            for c in CONTROLS if c["key"] in catalog.KERNELS and catalog.get(c["key"]).runs_on(cc)
            for i in range(c.get("launches", 1))]


def plan(shape) -> list:
    cc = gpu.device_info()["cc"]
    return [{"heaven": h, "key": k, "params": catalog.get(k).params(), "shape": list(shape)}
            for h, k in sorted(HEADLINE.items()) if k in catalog.KERNELS and catalog.get(k).runs_on(cc)]


def tuned_plan(tuning_file: str, kernels=None, shape=None) -> list:
    """Each kernel's shipped default and its tuner's winner (its fastest timed configuration by
    ratio to cuBLAS, as helpers.runtime.defaults ranks them; else the run's "best"), from a tuning
    file, as profile items with "role"; the winner is left out where it is the default.
    ``shape``: only runs of that shape (default: every run's own)."""
    doc = json.loads(Path(tuning_file).read_text())
    items = []
    for run in doc.get("runs", []):
        k = run["kernel"]
        if (kernels and k not in kernels) or (shape and list(run["shape"]) != list(shape)) or not run.get("best"):
            continue
        base = catalog.get(k).defaults
        recs = tuned.run_records(run)
        best = max(recs, key=tuned.speed) if recs else run["best"]     # by ratio to cuBLAS, as the defaults are
        items.append({"key": k, "params": dict(base), "shape": list(run["shape"]), "role": "default"})
        if best["params"] != base:
            items.append({"key": k, "params": dict(best["params"]), "shape": list(run["shape"]),
                          "role": "winner", "ratio": best.get("ratio")})
    return items


def child(plan_file: str) -> None:
    for it in json.loads(Path(plan_file).read_text()):
        err = panels.launch_once(it["key"], it["params"], it["shape"], it.get("extra_defines"))
        print(f"child: {it['key']} {it.get('extra_defines') or ''} "
              f"{'not checked (a probe rung)' if err is None else f'rel_err {err:.2e}'}", flush=True)


def record(a) -> int:
    ncu = ncu_tool.find(a.ncu)
    if not ncu:
        print("ncu_panels: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    if a.query_out:
        q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
        Path(a.query_out).write_text(q.stdout + q.stderr)
    items = (tuned_plan(a.tuned, a.kernels) if a.tuned else controls_plan(a.shape) if a.controls
             else plan(a.shape))
    if not items:
        print("ncu_panels: nothing to profile", file=sys.stderr)
        return 1
    asked = panels.METRICS + (CONTROL_METRICS if a.controls else [])
    known, unknown, qstate = ncu_tool.query_metrics(ncu, asked)
    print("ncu_panels: profiling", ", ".join(it["key"] for it in items), flush=True)
    try:
        runs, res = panels.profile_many(items, ncu, known)
    except RuntimeError as e:
        print(f"ncu_panels: {e}", file=sys.stderr)
        return 1
    print(res["command"], res["stdout"][-3000:], res["stderr"][-2000:], sep="\n", flush=True)
    if a.csv_out:
        Path(a.csv_out).write_text(res["csv"])
    runs = [{k: v for k, v in r.items() if k not in ("panel", "source", "where")} for r in runs]
    for r in runs:
        r["metrics"] = {k: v for k, v in r["metrics"].items() if not MINMAX.search(k)}
    for r in runs:
        p = diagnosis.panel(r["metrics"])
        label = (f"heaven {r['heaven']:2d}" if "heaven" in r else f"{r['role']:>9s}" if "role" in r
                 else f"{json.dumps(r.get('extra_defines') or {}):>14s} #{r.get('launch', 0)}")
        print(f"  {label} {r['key']:26s} SM {p['sm_pct'] or 0:5.1f}%  mem {p['mem_pct'] or 0:5.1f}%  "
              f"DRAM {((p['dram_read'] or 0) + (p['dram_write'] or 0)) / 1e6:8.1f} MB  "
              f"tensor {p['tensor_pct'] or 0:5.1f}%  fma {p['fma_pct'] or 0:5.1f}%  stalls {p['stalls']}")
    doc = {"provenance": ncu_tool.provenance(ncu), "shape": list(items[0]["shape"]), "command": res["command"],
           "sections": list(ncu_tool.PANEL_SECTIONS), "metrics_query": qstate, "unavailable_metrics": unknown,
           "runs": runs, **({"tuning_file": a.tuned} if a.tuned else {})}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"ncu_panels: {len(runs)} kernels profiled; wrote {a.out}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write (the recording)")
    ap.add_argument("--launch", help="catalog key: launch it once (the child of one profile)")
    ap.add_argument("--params", help="JSON object of parameters for --launch (default: the kernel's defaults)")
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--ncu", help="path of ncu (default: PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    ap.add_argument("--query-out", help="also save `ncu --query-metrics` to this file")
    ap.add_argument("--csv-out", help="also save ncu's raw CSV to this file")
    ap.add_argument("--tuned", metavar="TUNING_JSON",
                    help="profile each tuned kernel's shipped default and winner from this autotuner file")
    ap.add_argument("--kernels", nargs="+", help="with --tuned: only these kernels")
    ap.add_argument("--controls", action="store_true",
                    help="profile CONTROLS (the chapters' controls) with CONTROL_METRICS as well")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    if a.launch:
        err = panels.launch_once(a.launch, json.loads(a.params) if a.params else None, a.shape)
        print(f"launched {a.launch} {a.shape}: rel_err {err:.2e}")
        return 0
    if not a.out:
        ap.error("--out or --launch is required")
    return record(a)


if __name__ == "__main__":
    sys.exit(main())
