"""Run a list of kernel launches under Nsight Compute and read the counters back.

Used by ``scripts/ncu_banks.py`` (chapters 0 and 4) and
``scripts/ncu_ldmatrix.py`` (chapters 6 and 7). Each script is its own
child: :func:`profile` writes the plan (a JSON list of launches) to a
temporary file and runs

    ncu --clock-control none --target-processes all --print-units base --csv
        --log-file <tmp.csv> --kernel-name <regex> --metrics <m1,m2,...>
        python <script> --child <plan.json>

then parses the CSV into one record per profiled launch, in launch order.
``--clock-control none`` leaves the GPU's clocks as they are (ncu would lock
them to base otherwise); counts do not depend on clocks.

:func:`profile_raw` (chapter 8's panels, ``scripts/ncu_panels.py``) adds
Nsight Compute's sections (``--section SpeedOfLight`` ...) and asks for the
*raw* page (``--page raw --csv``): one row per launch, one column per metric
under its own name, every metric the sections collected included, read by
:func:`parse_raw_csv`. Why this CSV and not the ``ncu_report`` Python module:
the module comes as a 17 MB ``ncu-report`` wheel (or from the ``extras/python``
folder of an Nsight Compute install) whose version should match the ncu that
wrote the report; the CSV needs nothing beyond ncu itself, and the raw page
already names every metric by the name the panel looks up.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers.models.words import counted

from . import results


def find(explicit: str | None = None) -> str | None:
    """Path of ``ncu``: ``explicit``, else PATH, $CUDA_PATH/bin, $CUDA_HOME/bin,
    /usr/local/cuda/bin; None when absent."""
    if explicit:
        return explicit
    p = shutil.which("ncu")
    for d in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if not p and d and os.path.isfile(os.path.join(d, "bin", "ncu")):
            p = os.path.join(d, "bin", "ncu")
    return p


def command_line(doc: str, shape_help: str | None = None, argv=None,
                 default_shape=(512, 512, 512)) -> argparse.Namespace:
    """The ncu scripts' shared options: ``--out`` (required unless ``--child``),
    ``--shape M N K`` (default 512 512 512), ``--ncu`` and the hidden
    ``--child <plan.json>`` that :func:`profile` passes to the script it runs.
    Exits with a usage error when neither --out nor --child is given."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write (required unless --child)")
    ap.add_argument("--shape", nargs=3, type=int, default=list(default_shape), metavar=("M", "N", "K"),
                    help=shape_help or "GEMM shape (default 512 512 512)")
    ap.add_argument("--ncu", help="path of ncu (default: PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if not a.child and not a.out:
        ap.error("--out is required")
    return a


def parse_csv(path: str) -> list[dict]:
    """``ncu --csv`` rows (one per launch and metric) -> one dict per launch,
    in launch order: {"id", "kernel", "grid", "block", "metrics": {name: value}}.
    Values are floats (thousands separators removed) or, when not numeric,
    the raw string. Lines before the CSV header (ncu's ``==PROF==`` chatter)
    are skipped."""
    lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.startswith('"')]
    launches: dict[int, dict] = {}
    for row in csv.DictReader(lines):
        if row.get("ID") is None or row.get("Metric Name") is None:
            continue
        lid = int(row["ID"])
        L = launches.setdefault(lid, {"id": lid, "kernel": row.get("Kernel Name", ""),
                                      "grid": row.get("Grid Size", ""), "block": row.get("Block Size", ""),
                                      "metrics": {}})
        raw = (row.get("Metric Value") or "").replace(",", "").strip()
        try:
            L["metrics"][row["Metric Name"]] = float(raw)
        except ValueError:
            L["metrics"][row["Metric Name"]] = raw
    return [launches[k] for k in sorted(launches)]


def parse_raw_csv(path: str) -> list[dict]:
    """``ncu --page raw --csv`` output -> one dict per launch, in launch order:
    {"id", "kernel", "grid", "block", "metrics": {raw metric name: value}}.

    The raw page is a table: a header row (``"ID"``, ``"Kernel Name"``, ...,
    then one column per metric), an optional units row (its ID cell is empty)
    and one row per profiled launch. Values are floats (thousands separators
    removed) or, when not numeric, the raw string; the identification columns
    before the first metric (those without ``__`` in their name) are not metrics.
    Lines before the header (ncu's ``==PROF==`` chatter) are skipped."""
    lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.startswith('"')]
    rows = list(csv.reader(lines))
    head = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if head is None:
        return []
    cols = rows[head]
    out = []
    for r in rows[head + 1:]:
        if not r or not r[0].strip().isdigit():
            continue                       # the units row, or a stray line
        cell = dict(zip(cols, r))
        metrics = {}
        for name, raw in cell.items():
            if "__" not in name:
                continue
            v = raw.replace(",", "").strip()
            try:
                metrics[name] = float(v)
            except ValueError:
                metrics[name] = raw
        out.append({"id": int(r[0]), "kernel": cell.get("Kernel Name", ""), "grid": cell.get("Grid Size", ""),
                    "block": cell.get("Block Size", ""), "metrics": metrics})
    return sorted(out, key=lambda L: L["id"])


def query_metrics(ncu: str, metrics: list) -> tuple[list, list, str]:
    """Split ``metrics`` into (known, unknown) by ``ncu --query-metrics``
    (base names, without ``.sum``). If the query fails or looks empty, keep
    all of them and say so in the third element."""
    r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    text = r.stdout
    if r.returncode != 0 or text.count("\n") < 50:
        return list(metrics), [], f"query failed (rc={r.returncode}); using all metrics"
    names = {line.split()[0] for line in text.splitlines() if line.strip() and "__" in line.split()[0]}
    known = [m for m in metrics if m.split(".", 1)[0] in names]   # base name: before the first suffix
    return known, [m for m in metrics if m not in known], "ok"


def provenance(ncu: str) -> dict:
    """helpers.runtime.results.provenance() (GPU, driver, CUDA runtime, CuPy, date,
    commit) plus the ncu version line. Needs a GPU."""
    prov = results.provenance()
    try:
        prov["ncu"] = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    except Exception:       # an odd --version output: keep the rest
        pass
    return prov


def profile(ncu: str, script: str, items: list, kernel_regex: str, metrics: list) -> dict:
    """Run ``python <script> --child <plan>`` under ncu, ``items`` being the plan.

    Returns {"launches": parse_csv(...) ([] if ncu wrote no CSV), "command": the
    command line, "returncode", "stdout", "stderr"} (the last two trimmed to
    their ends). The caller pairs launches with ``items`` in order."""
    with tempfile.TemporaryDirectory() as tmp:
        plan_file = os.path.join(tmp, "plan.json")
        Path(plan_file).write_text(json.dumps(items))
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--print-units", "base",
               "--csv", "--log-file", log, "--kernel-name", kernel_regex, "--metrics", ",".join(metrics),
               sys.executable, str(Path(script).resolve()), "--child", plan_file]
        print("running:", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        launches = parse_csv(log) if os.path.exists(log) else []
    return {"launches": launches, "command": " ".join(cmd), "returncode": r.returncode,
            "stdout": r.stdout[-6000:], "stderr": r.stderr[-4000:]}


# The sections chapter 8's panel reads (Nsight Compute's own section files).
PANEL_SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "WarpStateStats")


def shown_command(cmd: str) -> str:
    """An ncu command line (``cmd``, as :func:`profile_raw` ran it or a record keeps it) as the
    book prints it: relative to the repository root and free of this run's machine: ``ncu``
    for the ncu executable, ``python scripts/<name>.py`` for the interpreter and the script's
    absolute path, ``<plan.json>`` for a temporary plan file, and no ``--log-file`` (without
    it ncu prints the same CSV to the terminal)."""
    words, out = cmd.split(), []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--log-file":
            i += 1
            continue
        if "/scripts/" in w and w.endswith(".py"):
            if out and os.path.basename(out[-1]).startswith("python"):
                out[-1] = "python"
            w = "scripts/" + w.rsplit("/scripts/", 1)[1]
        elif os.path.basename(w) == "ncu" and not out:
            w = "ncu"
        elif out and out[-1] == "--child" and os.path.isabs(w):
            w = f"<{os.path.basename(w)}>"
        out.append(w)
    return " ".join(out)


def version_text(line: str | None) -> str:
    """ncu's ``--version`` line as the book prints it: "Version 2025.3.1.0 (build 36398880)
    (public-release)" -> "Nsight Compute 2025.3.1"; plain "Nsight Compute" when ``line`` is
    None or names no version."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", line or "")
    return "Nsight Compute" if m is None else "Nsight Compute " + ".".join(g for g in m.groups() if g)


def command_summary(cmd: str) -> str:
    """An ncu command line (``cmd``) in one short phrase for a notebook: what it collected,
    not the ~2,000 characters of metric names, e.g. "ncu, collecting 4 sections (SpeedOfLight,
    MemoryWorkloadAnalysis, Occupancy, WarpStateStats) and 22 extra metrics from one launch"."""
    words = cmd.split()
    after = [words[i + 1] for i in range(len(words) - 1)]
    sections = [a for w, a in zip(words, after) if w == "--section"]
    metrics = sum(len(a.split(",")) for w, a in zip(words, after) if w == "--metrics")
    count = next((a for w, a in zip(words, after) if w == "--launch-count"), None)
    what = []
    if sections:
        what.append(counted(len(sections), "section") + f" ({', '.join(sections)})")
    if metrics:
        what.append(counted(metrics, "extra metric" if sections else "metric"))
    out = "ncu" + (", collecting " + " and ".join(what) if what else "")
    if count:
        out += " from one launch" if count == "1" else f" from the first {count} launches"
    return out


def raw_command(ncu: str, child: list, kernel_regex: str, metrics: list, sections=PANEL_SECTIONS,
                launch_count: int | None = None, log: str | None = None) -> list:
    """The ncu argv that profiles the launches of ``child`` (an argv, e.g.
    ``[python, script, "--launch", key]``) whose kernel name matches
    ``kernel_regex``, collecting ``sections`` plus ``metrics``, and printing
    the raw page as CSV (to ``log`` when given, else to stdout)."""
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", kernel_regex]
    if launch_count:
        cmd += ["--launch-count", str(launch_count)]
    for sec in sections:
        cmd += ["--section", sec]
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    cmd += ["--page", "raw", "--csv", "--print-units", "base"]
    if log:
        cmd += ["--log-file", log]
    return cmd + list(child)


def profile_raw(ncu: str, child: list, kernel_regex: str, metrics: list, sections=PANEL_SECTIONS,
                launch_count: int | None = None, timeout: float = 900, echo: bool = False) -> dict:
    """Run :func:`raw_command` and parse its CSV (:func:`parse_raw_csv`).

    Returns {"launches": [...] ([] if ncu wrote no table), "command": the exact
    command line, "returncode", "stdout", "stderr" (trimmed to their ends),
    "csv": the CSV text ncu wrote}. ``echo`` prints the command first. Raises
    nothing when ncu fails: the caller reads ``returncode`` and ``launches``."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "ncu_raw.csv")
        cmd = raw_command(ncu, child, kernel_regex, metrics, sections, launch_count, log)
        if echo:
            print("running:", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = Path(log).read_text(errors="replace") if os.path.exists(log) else ""
        launches = parse_raw_csv(log) if text else []
    return {"launches": launches, "command": " ".join(cmd), "returncode": r.returncode,
            "stdout": r.stdout[-6000:], "stderr": r.stderr[-4000:], "csv": text}
