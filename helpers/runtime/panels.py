"""Chapter 8's Nsight Compute panel of one kernel launch: profiled live, or read as recorded.

:func:`profile` runs one launch of a catalog kernel under

    ncu --clock-control none --target-processes all --kernel-name regex:^<entry>$ --launch-count 1
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy
        --section WarpStateStats --metrics <METRICS> --page raw --csv --print-units base
        python scripts/ncu_panels.py --launch <key> --shape M N K [--params JSON]

(:func:`helpers.runtime.ncu.raw_command`; the child launches the kernel once on
random inputs and checks it against a float64 reference) and returns the raw
metrics, the panel (:func:`helpers.models.diagnosis.panel`) and the exact
command line. :func:`recorded` reads the panels recorded on the H200 by
``scripts/ncu_panels.py --out results/h200-ncu-panels.json``
(``results.artifact("ncu-panels")``); :func:`get` picks one or the other and
says which. Nsight Compute replays the launch once per group of counters, so
its durations are not the book's timings; the percentages and bytes are what
the panel reads.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers.models import diagnosis

from . import catalog, gpu, launch, ncu as ncu_tool, results, verify

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ncu_panels.py"
ARTIFACT = "ncu-panels"
TUNED_ARTIFACT = "ncu-tuned"      # scripts/ncu_panels.py --tuned: each tuned kernel's winner and shipped default
CONTROLS_ARTIFACT = "ncu-controls"  # scripts/ncu_panels.py --controls: the launches the chapters' claims rest on

# Counters the panel reads beyond what the four sections collect (kept when the
# sections already have them: ncu collects each metric once). Unknown ones are
# dropped after `ncu --query-metrics` (scripts/ncu_panels.py) so one missing
# name cannot stop the run.
METRICS = [
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "gpu__time_duration.sum",
]


def entry_of(item: dict) -> str:
    """The entry function a plan item ({"key", "extra_defines"?}) launches: the kernel's own,
    or its experiment file's where ``extra_defines`` names one (``PROBE`` -> ``gemm_mma_probe``)."""
    return catalog.get(item["key"]).build_target(item.get("extra_defines"))[1]


def kernel_regex(keys, items=()) -> str:
    """``regex:^(entry1|entry2)$`` matching the entry functions of catalog ``keys`` and of the
    plan ``items`` (whose ``extra_defines`` may select an experiment file's entry)."""
    entries = sorted({catalog.get(k).entry for k in keys} | {entry_of(it) for it in items})
    return "regex:^(" + "|".join(entries) + ")$" if len(entries) > 1 else f"regex:^{entries[0]}$"


def launch_once(key: str, params: dict | None, shape, extra_defines: dict | None = None) -> float | None:
    """The child's work: one launch of ``key`` on random inputs, checked against a
    float64 reference (a wrong result raises). Returns the relative error.
    ``extra_defines`` builds a variant with more ``-D`` values (a probe rung that leaves a
    stage out on purpose): its result is wrong by design, so it is not checked (None)."""
    cp = gpu.cupy()
    spec = catalog.get(key)
    M, N, K = shape
    A = verify.random_matrix((M, K), spec.dtype)
    B = verify.random_matrix((K, N) if spec.layout != "NT" else (N, K), spec.dtype)
    C = cp.empty((M, N), dtype=verify.np_dtype(spec.out_dtype))
    verify.poison(C)
    if extra_defines:
        L = launch.prepare(key, shape, extra_defines=extra_defines, **(params or {}))
        L(A, B, C, M, N, K)
        cp.cuda.Device().synchronize()
        return None
    launch.gemm(key, A, B, C, **(params or {}))
    cp.cuda.Device().synchronize()
    return verify.check(C, verify.reference_gemm(A, B, spec.layout), spec.dtype, what=key)


def child_argv(key: str, shape, params: dict | None = None) -> list:
    """``python scripts/ncu_panels.py --launch key --shape M N K [--params JSON]``."""
    argv = [sys.executable, str(SCRIPT), "--launch", key, "--shape", *(str(s) for s in shape)]
    return argv + (["--params", json.dumps(params, sort_keys=True)] if params else [])


def usable(ncu: str | None = None) -> tuple[bool, str]:
    """(True, path) when a GPU is live and ``ncu`` runs; else (False, why)."""
    if not gpu.live():
        return False, "no CUDA GPU is visible here"
    path = ncu_tool.find(ncu)
    if not path:
        return False, "Nsight Compute (ncu) is not installed here"
    try:
        subprocess.run([path, "--version"], capture_output=True, timeout=60, check=True)
    except Exception as e:
        return False, f"ncu does not run here ({type(e).__name__})"
    return True, path


def _require(asked: list, got: dict, res: dict) -> None:
    """A metric asked for but absent from ncu's table is an error, not a blank in the panel."""
    missing = [m for m in asked if m not in got]
    if missing:
        raise RuntimeError(f"ncu did not report {missing} (rc={res['returncode']}): "
                           f"{(res['stderr'] or res['stdout'])[-1000:]}")


def profile(key: str, params: dict | None = None, shape=(4096, 4096, 4096), ncu: str | None = None,
            metrics: list | None = None) -> dict:
    """Profile one launch of ``key`` live. Returns {"key", "params", "shape", "kernel",
    "metrics" (raw), "panel", "command", "source": "live", "where"}.

    Raises RuntimeError (with the end of ncu's output) when ncu profiled
    nothing (no permission to read the counters, ERR_NVGPUCTRPERM; a failed
    child) or did not report a metric it was asked for (an unknown name)."""
    ok, path = usable(ncu)
    if not ok:
        raise RuntimeError(f"cannot profile: {path}")
    res = ncu_tool.profile_raw(path, child_argv(key, shape, params), kernel_regex([key]),
                               METRICS if metrics is None else metrics, launch_count=1)
    if not res["launches"]:
        raise RuntimeError(f"ncu profiled nothing (rc={res['returncode']}): "
                           f"{(res['stderr'] or res['stdout'])[-1500:]}")
    L = res["launches"][0]
    _require(METRICS if metrics is None else metrics, L["metrics"], res)
    spec = catalog.get(key)
    return {"key": key, "params": spec.params(**(params or {})), "shape": list(shape), "kernel": L["kernel"],
            "metrics": L["metrics"], "panel": diagnosis.panel(L["metrics"]), "command": res["command"],
            "source": "live", "where": f"profiled live with Nsight Compute on {gpu.device_info()['name']}"}


def profile_many(items: list, ncu: str | None = None, metrics: list | None = None) -> tuple[list, dict]:
    """Profile one launch of each item ({"key", "params", "shape", ...}) in one ncu run
    (child: ``scripts/ncu_panels.py --child <plan.json>``), in order.

    Returns (runs, res): runs are the items with "kernel", "grid", "block", "metrics"
    (numeric values), "panel", "source": "live" and "where" added; ``res`` is
    :func:`helpers.runtime.ncu.profile_raw`'s result (command, output, CSV).
    Raises RuntimeError when ncu cannot run here or profiled another number of
    launches than there are items."""
    ok, path = usable(ncu)
    if not ok:
        raise RuntimeError(f"cannot profile: {path}")
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "plan.json")
        Path(plan).write_text(json.dumps(items))
        res = ncu_tool.profile_raw(path, [sys.executable, str(SCRIPT), "--child", plan],
                                   kernel_regex([], items), METRICS if metrics is None else metrics)
    if len(res["launches"]) != len(items):
        raise RuntimeError(f"ncu profiled {len(res['launches'])} launches for {len(items)} kernels "
                           f"(rc={res['returncode']}): {(res['stderr'] or res['stdout'])[-1500:]}")
    where = f"profiled live with Nsight Compute on {gpu.device_info()['name']}"
    runs = []
    for it, L in zip(items, res["launches"]):
        if L["kernel"].split("(")[0] != entry_of(it):
            raise RuntimeError(f"launch order: expected {entry_of(it)}, ncu saw {L['kernel']}")
        _require(METRICS if metrics is None else metrics, L["metrics"], res)
        m = {k: v for k, v in L["metrics"].items() if isinstance(v, float)}
        runs.append({**it, "kernel": L["kernel"], "grid": L["grid"], "block": L["block"], "metrics": m,
                     "panel": diagnosis.panel(m), "source": "live", "where": where})
    return runs, res


def recorded(slug: str = results.DEFAULT_SLUG, name: str = ARTIFACT) -> tuple[list, dict | None, str]:
    """(runs, document, where) of the recorded panels (``results/<slug>-ncu-panels.json``, or
    ``name``: :data:`TUNED_ARTIFACT` for the autotuner's winners beside the defaults);
    each run gets its "panel" (recomputed from its raw metrics) and "source": "recorded".
    ([], None, "not recorded yet ...") when the file is absent."""
    doc = results.artifact(name, slug)
    where = results.artifact_where(doc, name, slug)
    if doc is None:
        return [], None, where
    runs = [{**r, "panel": diagnosis.panel(r["metrics"]), "source": "recorded", "where": where}
            for r in doc.get("runs", [])]
    return runs, doc, where


def control_launches(key: str, extra_defines: dict | None = None,
                     slug: str = results.DEFAULT_SLUG) -> tuple[list, str]:
    """([raw metrics of each launch], where): every recorded control launch of ``key`` (default
    parameters) built with ``extra_defines`` (None: the kernel as shipped), in recording order,
    from ``results/<slug>-ncu-controls.json`` (``scripts/ncu_panels.py --controls`` profiles some
    kernels several times in one run). KeyError when none is recorded."""
    runs, _, where = recorded(slug, CONTROLS_ARTIFACT)
    got = [r["metrics"] for r in runs
           if r["key"] == key and (r.get("extra_defines") or None) == (extra_defines or None)]
    if not got:
        raise KeyError(f"{key} {extra_defines or ''}: no recorded control launch ({where})")
    return got, where


def control(key: str, extra_defines: dict | None = None, slug: str = results.DEFAULT_SLUG) -> tuple[dict, str]:
    """(raw metrics, where) of one recorded control launch (see :func:`control_launches`): with
    several, the median launch by DRAM bytes read (the lower middle one of an even count), whose
    other counters come from that same launch. KeyError when none is recorded."""
    got, where = control_launches(key, extra_defines, slug)
    ranked = sorted(got, key=lambda m: m.get("dram__bytes_read.sum", 0.0))
    return ranked[(len(ranked) - 1) // 2], where


def dram_read_spread(key: str, slug: str = results.DEFAULT_SLUG) -> tuple[float, float, float, int]:
    """(median, min, max, launches): DRAM bytes read, GB, over the recorded control launches of
    ``key`` (:func:`control_launches`; the median is :func:`control`'s launch). KeyError when none."""
    got, _ = control_launches(key, slug=slug)
    gb = [m["dram__bytes_read.sum"] / 1e9 for m in got]
    return control(key, slug=slug)[0]["dram__bytes_read.sum"] / 1e9, min(gb), max(gb), len(gb)


def sectors_per_request(metrics: dict) -> float:
    """32-byte sectors per global load request (one warp-wide load instruction) of a launch."""
    return (metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
            / metrics["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"])


def get(key: str, shape=(4096, 4096, 4096), live: bool | None = None) -> dict:
    """The panel of ``key`` (default parameters): profiled now when ``live`` (default:
    when :func:`usable`), else the recorded run, labelled. Raises KeyError when
    neither is possible."""
    if live is None:
        live = usable()[0]
    if live:
        return profile(key, shape=shape)
    runs, _, where = recorded()
    for r in runs:
        if r["key"] == key and list(r["shape"]) == list(shape):
            return r
    raise KeyError(f"{key} at {list(shape)}: no live ncu here and no recorded panel ({where})")
