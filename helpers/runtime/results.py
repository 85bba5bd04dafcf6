"""Recorded measurements: ``results/<gpu-slug>.json`` and where they came from.

Format (docs/architecture.md, "Results contract")::

    {"provenance": {"gpu", "sm", "driver", "cuda_runtime", "cupy", "date", "commit"},
     "ceilings": {"copy_GBps": ..., "cublas_TFLOPs": {"float32": ..., ...}},
     "runs": [{"chapter", "kernel", "params", "dtype", "shape", "metric", "value",
               "reference", "reference_value", "ratio", "rel_err", ...}]}

``ratio`` is ``value / reference_value``, both measured in the same run.
In recorded mode (no GPU) the notebooks read these records; every table and
figure built from them says so, with the GPU, date and commit.

Beside it, the Nsight Compute artifacts ``results/<gpu-slug>-<name>.json``
(``banks``: chapter 4's bank counters, ``ldmatrix``: chapter 7's ldmatrix
counters), read by :func:`artifact`.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from . import gpu

@dataclass
class Record:
    """One measurement of the results contract (docs/architecture.md).

    ``chapter``, ``kernel`` (catalog key), ``params`` (every compile-time
    parameter), ``dtype`` of the inputs, ``shape`` ([M, N, K] or [ROWS, COLS]),
    ``metric`` ("TFLOP/s" or "GB/s"), ``value`` (None when not measured),
    ``reference`` ("cuBLAS" or "cudaMemcpy D2D") and ``reference_value``
    measured in the same run, ``ratio`` = value / reference_value, ``rel_err``
    against the float64 reference. Optional: ``title``, ``ms`` (median time),
    ``repeats``, ``rounds``, ``source`` ("live" or "recorded"), ``note`` and
    ``wrong`` (why a result is missing). The notebooks and figures read records
    as dicts: :meth:`as_dict` leaves out the optional fields that are None."""
    chapter: int
    kernel: str
    params: dict
    dtype: str
    shape: list
    metric: str
    value: float | None
    reference: str
    reference_value: float | None
    ratio: float | None
    rel_err: float | None
    title: str | None = None
    ms: float | None = None
    repeats: int | None = None
    rounds: int | None = None
    source: str | None = None
    note: str | None = None
    wrong: str | None = None

    _OPTIONAL = ("title", "ms", "repeats", "rounds", "source", "note", "wrong")

    def as_dict(self) -> dict:
        d = asdict(self)
        return {k: v for k, v in d.items() if not (k in self._OPTIONAL and v is None)}


RESULTS_DIR = Path(__file__).resolve().parents[2] / "results"
DEFAULT_SLUG = os.environ.get("GEMM_BOOK_RESULTS", "h200")


def path(slug: str = DEFAULT_SLUG) -> Path:
    return RESULTS_DIR / f"{slug}.json"


def load(slug: str = DEFAULT_SLUG) -> dict:
    """The results file for ``slug``; an empty skeleton if it does not exist."""
    p = path(slug)
    if not p.is_file():
        return {"provenance": {}, "ceilings": {}, "runs": []}
    return json.loads(p.read_text())


def save(data: dict, slug: str) -> Path:
    p = path(slug)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return p


def _commit() -> str:
    """The git commit measured: $GEMM_BOOK_COMMIT if set (a copy of the tree
    without .git, as on a remote GPU machine), else ``git rev-parse HEAD``."""
    if os.environ.get("GEMM_BOOK_COMMIT"):
        c = os.environ["GEMM_BOOK_COMMIT"].strip()
        return c[:12] if re.fullmatch(r"[0-9a-f]{13,40}", c) else c     # 12 hex digits, as git's path
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, cwd=RESULTS_DIR.parent, timeout=5).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def _driver() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        if out:
            return out.splitlines()[0]
    except Exception:
        pass
    cp = gpu.cupy()
    v = cp.cuda.runtime.driverGetVersion()
    return f"CUDA {v // 1000}.{v % 1000 // 10}"


def provenance() -> dict:
    """Where and when a live measurement is taken (needs a GPU)."""
    cp = gpu.cupy()
    info = gpu.device_info()
    return {"gpu": info["name"], "sm": f"{info['cc'][0]}.{info['cc'][1]}", "driver": _driver(),
            "cuda_runtime": int(cp.cuda.runtime.runtimeGetVersion()), "cupy": cp.__version__,
            "date": datetime.date.today().isoformat(), "commit": _commit()}


def describe(prov: dict, data: dict | None = None) -> str:
    """One line naming the GPU, software and date of a provenance block; with
    ``data`` (a results file) holding records of several runs, also which
    chapters each commit measured."""
    if not prov:
        return "no recorded results"
    line = (f"{prov.get('gpu', '?')} (sm {prov.get('sm', '?')}, driver {prov.get('driver', '?')}, "
            f"CuPy {prov.get('cupy', '?')}) on {prov.get('date', '?')}, commit {prov.get('commit', '?')}")
    by = runs_by_commit(data) if data is not None else {}
    if len(by) > 1:
        line += " (chapters by commit: " + "; ".join(
            f"{c}: {', '.join(str(x) for x in ch)}" for c, ch in by.items()) + ")"
    return line


def live_label() -> str:
    """'NVIDIA H200, 2026-12-07, commit 0123456789ab': this GPU, today and the code's commit
    (the commit left out where it is unknown, e.g. a copy of the book without git)."""
    c = _commit()
    return (f"{gpu.device_info()['name']}, {datetime.date.today().isoformat()}"
            + ("" if c == "unknown" else f", commit {c}"))


def where(live: bool, prov: dict | None = None) -> str:
    """The label every figure and table carries."""
    if live:
        return f"measured live in this run on {live_label()}"
    if prov is None:
        data = load()
        return f"recorded on {describe(data['provenance'], data)}; no GPU in this run"
    return f"recorded on {describe(prov)}; no GPU in this run"


def _same(run: dict, kernel: str, params: dict, dtype: str, shape) -> bool:
    return (run.get("kernel") == kernel and run.get("params", {}) == params
            and run.get("dtype") == dtype and list(run.get("shape", [])) == list(shape))


def lookup(kernel: str, params: dict, dtype: str, shape, slug: str = DEFAULT_SLUG) -> dict | None:
    """The recorded run of ``kernel`` with exactly these params, dtype and shape, or None."""
    for run in load(slug)["runs"]:
        if _same(run, kernel, params, dtype, shape):
            return run
    return None


def _stamp(prov: dict) -> dict:
    return {"date": prov.get("date"), "commit": prov.get("commit")}


def merge(runs: list, slug: str, ceilings: dict | None = None, prov: dict | None = None,
          replace_chapters=()) -> Path:
    """Add ``runs`` to ``results/<slug>.json``, replacing records of the same
    kernel/params/dtype/shape; update ceilings and provenance if given.

    ``replace_chapters``: chapters this run measured in full (every shipped
    configuration). Their older records are dropped first, so a configuration
    that has left the catalog (a changed default, a removed sweep point) does
    not linger as if it were still measured.

    The top-level provenance is that of the latest run. So that records kept
    from an earlier run are not passed off as this one's, every record carries
    ``recorded`` = {date, commit} of the run that measured it (records older
    than this field get the previous top-level provenance's)."""
    data = load(slug)
    old = data.get("provenance") or {}
    for x in data["runs"]:
        x.setdefault("recorded", _stamp(old))
    gone = set(replace_chapters)
    data["runs"] = [x for x in data["runs"] if x.get("chapter") not in gone]
    for r in runs:
        data["runs"] = [x for x in data["runs"]
                        if not _same(x, r["kernel"], r.get("params", {}), r["dtype"], r["shape"])]
        rec = {k: v for k, v in r.items() if k not in ("source",)}
        if prov:
            rec["recorded"] = _stamp(prov)
        data["runs"].append(rec)
    if ceilings:
        data["ceilings"].update(ceilings)
    if prov:
        data["provenance"] = prov
    return save(data, slug)


def runs_by_commit(data: dict | None = None) -> dict:
    """{commit: sorted chapters} of the records in a results file, from each
    record's ``recorded`` stamp (the top-level provenance where absent)."""
    data = data if data is not None else load()
    top = (data.get("provenance") or {}).get("commit")
    out: dict = {}
    for r in data.get("runs", []):
        c = (r.get("recorded") or {}).get("commit", top)
        out.setdefault(c, set()).add(r.get("chapter"))
    return {c: sorted(ch for ch in v if ch is not None) for c, v in out.items()}


def artifact(name: str, slug: str = DEFAULT_SLUG) -> dict | None:
    """The Nsight Compute artifact ``results/<slug>-<name>.json`` (``name``:
    "banks", "ldmatrix", ...) as a dict, or None when it has not been recorded
    on that GPU. Its provenance is ``doc["provenance"]`` (gpu, date, ncu, ...),
    the same layout as the results file's."""
    p = RESULTS_DIR / f"{slug}-{name}.json"
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def artifact_where(doc: dict | None, name: str, slug: str = DEFAULT_SLUG, commit: bool = False) -> str:
    """Where an :func:`artifact` came from, for a caption: "recorded on <gpu>
    (<date>, results/<slug>-<name>.json)", with ``commit`` "(<date>, commit <sha>, ...)"
    (for a record that can lag behind the code it measured), or "not recorded yet (...)"."""
    f = f"results/{slug}-{name}.json"
    if doc is None:
        return f"not recorded yet ({f} is written on a GPU)"
    prov = doc.get("provenance", {})
    sha = f"commit {prov.get('commit', '?')}, " if commit else ""
    return f"recorded on {prov.get('gpu', '?')} ({prov.get('date', '?')}, {sha}{f})"
