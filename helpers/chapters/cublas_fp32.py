"""Chapter 8's comparison of the book's best FP32 kernel with cuBLAS's under one profiler
(recorded on the H200, ``results/<gpu>-ncu-cublas.json``): the launch, the counters per
FFMA, the tile control. A module of its own because ``ch08_profiling.py`` is at the 500-line
limit; the notebook calls it as ``ch8.show_cublas_fp32()`` (re-exported there). Reads only
records: nothing is measured here.
"""
from __future__ import annotations

from helpers.figures import show
from helpers.models import counters
from helpers.runtime import panels, results

CUBLAS_ARTIFACT = "ncu-cublas"          # scripts/ncu_vs_cublas.py
CUBLAS_FIELDS = (("duration_us", "time of the launch under ncu (us)", 0),
                 ("inst_per_op", "warp instructions per FFMA", 3),
                 ("issue_pct", "issue slots used (% of active cycles)", 1),
                 ("fma_pct", "FMA pipe busy (% of peak)", 1),
                 ("stall:dispatch_stall", "stalled at dispatch (dispatch_stall), cycles per issue", 3),
                 ("stall:no_instruction", "no instruction fetched (no_instruction), cycles per issue", 3),
                 ("stall:short_scoreboard", "waiting for shared memory (short_scoreboard), cycles per issue", 3),
                 ("stall:barrier", "waiting at a barrier (barrier), cycles per issue", 3),
                 ("shared_waves_per_op", "shared-memory wavefronts per FFMA", 3))


def _control_rows(rows: list, ours: dict, theirs: dict) -> list:
    """The tile control's rows, each named: our default (timed first and again last, to show
    the drift within the run), cuBLAS's tile, cuBLAS's block tile with our BK."""
    out = []
    for n, r in enumerate(rows):
        tile = (r["BM"], r["BN"], r["BK"])
        if tile == (ours["BM"], ours["BN"], ours["BK"]):
            what = "our default tile" + (", timed again last" if n == len(rows) - 1 and n else "")
        elif tile == (theirs.get("BM"), theirs.get("BN"), theirs.get("BK")):
            what = "cuBLAS's tile"
        else:
            what = f"cuBLAS's block tile with BK {r['BK']}"
        out.append({"what": what, "block tile": f"{r['BM']} x {r['BN']} x {r['BK']}", "stages": r["STAGES"],
                    "TFLOP/s": round(r["TFLOP/s"], 1), "ratio to cuBLAS": round(r["ratio"], 4)})
    return out


def cublas_rows(slug: str = results.DEFAULT_SLUG) -> dict | None:
    """The recorded comparison of chapter 5's best FP32 kernel with cuBLAS's FP32 GEMM
    (``results/<slug>-ncu-cublas.json``, written by ``scripts/ncu_vs_cublas.py``), or None when
    it is not recorded. Returns {"launch": one row per kernel (its name, block tile, stages,
    threads, registers per thread, dynamic shared memory in KiB, blocks), "counters":
    :func:`helpers.models.counters.compare` rows of :data:`CUBLAS_FIELDS` per FFMA (a = ours,
    b = cuBLAS), "control": the kernel timed at its own tile and at cuBLAS's (ratio to cuBLAS,
    same run), "where", "control_where" (the control's own provenance where it has one),
    "commands", "ffma_diff_pct"}. Raises KeyError when a recorded run lacks a counter."""
    doc = results.artifact(CUBLAS_ARTIFACT, slug)
    if doc is None:
        return None
    blas, ours = doc["runs"]
    shape = doc["shape"]

    def launch_row(r: dict, tile: dict) -> dict:
        m = r["metrics"]
        name = r["kernel"].split("(")[0]
        return {"kernel": name if r.get("key") else "_".join(name.split("_")[:3]) + " (cuBLAS)", "block tile": f"{tile['BM']} x {tile['BN']} x {tile['BK']}",
                "stages": tile.get("STAGES"), "threads": int(m["launch__block_size"]),
                "registers": int(m["launch__registers_per_thread"]),
                "shared memory (KiB)": round(m["launch__shared_mem_per_block_dynamic"] / 1024, 1),
                "blocks in the grid": int(m["launch__grid_size"]),
                "blocks per SM": int(m["launch__occupancy_limit_registers"])}
    p = ours["params"]
    rows = {"launch": [launch_row(ours, p), launch_row(blas, counters.cublas_tile(blas["kernel"]))],
            "counters": counters.compare(counters.derived(ours["metrics"], shape, "ffma"),
                                         counters.derived(blas["metrics"], shape, "ffma"), CUBLAS_FIELDS),
            "control": _control_rows(doc.get("tile_control", {}).get("rows", []), p,
                                     counters.cublas_tile(blas["kernel"])),
            "where": results.artifact_where(doc, CUBLAS_ARTIFACT, slug, commit=True),
            # the tile control is timed by a separate command and names its own commit when it has one
            "control_where": results.artifact_where({"provenance": doc.get("tile_control", {}).get(
                "provenance", doc.get("provenance", {}))}, CUBLAS_ARTIFACT, slug, commit=True),
            "commands": [r["command"] for r in doc["runs"]], "cublas_kernel": blas["kernel"].split("(")[0]}
    for r in rows["counters"]:            # ncu prints stalls to two decimals: no ratio of two tiny ones
        if r["field"].startswith("stall:") and min(r["a"], r["b"] or 0) < 0.05:
            r["b / a"] = None
    rows["control_command"] = doc.get("tile_control", {}).get("command")
    ffma = [r["metrics"]["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] for r in (ours, blas)]
    rows["ffma_diff_pct"] = 100 * abs(ffma[0] / ffma[1] - 1)     # how far our FFMA count is from cuBLAS's, %
    return rows


def show_cublas_fp32(slug: str = results.DEFAULT_SLUG) -> dict | None:
    """Display :func:`cublas_rows` (three tables and one line on what ncu collected); a one-line note
    when nothing is recorded. Returns the rows (None when not recorded)."""
    rows = cublas_rows(slug)
    if rows is None:
        print(f"The cuBLAS comparison is not recorded for this GPU yet (scripts/ncu_vs_cublas.py writes "
              f"results/<gpu>-{CUBLAS_ARTIFACT}.json).")
        return None
    ours = rows["launch"][0]["kernel"]
    show.table(rows["launch"], ["kernel", "block tile", "stages", "threads", "registers", "shared memory (KiB)",
                                "blocks in the grid", "blocks per SM"],
               f"How each kernel is launched (Nsight Compute LaunchStats; cuBLAS's tile and stages read from its "
               f"kernel name; blocks per SM: the register limit); {rows['where']}.")
    show.table(rows["counters"], {"quantity": "counter", "a": ours, "b": "cuBLAS", "b / a": f"cuBLAS / {ours}"},
               f"One launch each at 4096^3 under the same ncu sections and counters, per FFMA where it "
               f"says so (both execute the same FFMAs, to {rows['ffma_diff_pct']:.2f} %); {rows['where']}.")
    if rows["control"]:
        show.table(rows["control"], ["what", "block tile", "stages", "TFLOP/s", "ratio to cuBLAS"],
                   f"Control: {ours} at its own tile and at cuBLAS's (8 warps of 64 x 64 in every row), "
                   f"each against cuBLAS in 5 alternating rounds, in this order, in one run; {rows['control_where']}.")
    print(f"cuBLAS's kernel: {rows['cublas_kernel']}")
    print(f"Each kernel profiled with {panels.ncu_tool.command_summary(rows['commands'][0])}; the full command "
          "lines are the \"command\" entries of the record")
    return rows
