"""Redraw chapter 8's "Every timed configuration" figures in the committed notebook with
the current figure code, without a GPU and without timing anything.

    python scripts/redraw_tuning_figures.py            # book/08_profiling.ipynb, in place
    python scripts/redraw_tuning_figures.py --check    # say what would change, write nothing

``scripts/restyle_figures.py`` restyles a figure's layout only. The distribution figure's
key (what its star, circle and diamond mean, named from the run) is made of legend entries,
which are traces, so those figures are drawn again, from the data they were drawn from:

- the recorded search (``ch.show_search(tuned_runs, ...)``) and the exhaustive pass
  (``ch.show_accuracy()``) read only ``results/<gpu>-tuning.json`` and
  ``results/<gpu>-tuning-exhaustive.json``: these cells run again in recorded mode
  (nbclient, ``GEMM_BOOK_FORCE_RECORDED=1``) after the notebook's import cells. Every
  output other than the distribution figure must come out identical to the committed
  one (the same recorded numbers), or nothing is written;
- the live tune (``ch.live_tune()``) was measured when the notebook ran on the GPU, and
  the committed figure is its only record: its records are read back from the figure
  (the y values are the ratios; the hover text gives each configuration's TFLOP/s,
  parameters, model rank and why it was timed; the star's, the run's best) and drawn
  again by the same function.

For every redrawn figure, every trace of the committed one must be in the new one, in
order, with the same x and y and the same hover text (only the star's, which names what
it marks, may change); what is
new must be a legend entry that draws nothing or the confirmed best's mark, which sits on
a committed point. Cells keep their execution metadata.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["GEMM_BOOK_FORCE_RECORDED"] = "1"     # before helpers is imported; inherited by the kernel

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

import helpers  # noqa: E402,F401  (fills the catalog)
from helpers.figures import show, tuning  # noqa: E402
from helpers.runtime import catalog  # noqa: E402

NOTEBOOK = REPO / "book" / "08_profiling.ipynb"
PLOTLY = show.PLOTLY_MIME
TITLE = "Every timed configuration, fastest first"
RECORDED_CELLS = ("show_search(tuned_runs", "show_accuracy(")
LIVE_CELL = "live_tune("


def _is_dist(out) -> bool:
    fig = (out.get("data") or {}).get(PLOTLY)
    title = ((fig or {}).get("layout") or {}).get("title") or {}
    return TITLE in (title.get("text", "") if isinstance(title, dict) else str(title))


_DIV_ID = re.compile(r"(fig-[0-9a-f]{12})-\d+")     # helpers.figures.show: content digest, process counter


def _plain(outs) -> list:
    """Outputs without the distribution figures, execution counts, metadata, and the
    per-process counter in figure div ids."""
    keep = [{k: v for k, v in dict(o).items() if k not in ("execution_count", "metadata")}
            for o in outs if not _is_dist(o)]
    return json.loads(_DIV_ID.sub(r"\1", json.dumps(keep)))


def _points(tr) -> tuple:
    return (json.dumps(tr.get("x")), json.dumps(tr.get("y")), tr.get("mode"),
            (tr.get("marker") or {}).get("symbol"))


def check_traces(old: dict, new: dict) -> None:
    """Every trace of ``old`` is in ``new``, in order, at the same points with the same hover
    text (but the star's); the rest of
    ``new`` draws nothing (legend entries) or marks a point of ``old`` (the confirmed best)."""
    olds, news = old["data"], new["data"]
    it = iter(range(len(news)))
    matched = set()
    for t in olds:
        key = _points(t)
        j = next((j for j in it if _points(news[j]) == key), None)
        assert j is not None, f"a committed trace is not in the redrawn figure: {key[:2]}"
        assert key[3] == "star" or t.get("hovertext") == news[j].get("hovertext"), \
            f"the hover text of a committed trace changed: {str(t.get('hovertext'))[:200]}"
        matched.add(j)
    pts = {(x, y) for t in olds for x, y in zip(t.get("x") or [], t.get("y") or []) if x is not None}
    for j, t in enumerate(news):
        if j in matched:
            continue
        if t.get("x") == [None]:
            continue                                            # a key entry
        sym = (t.get("marker") or {}).get("symbol")
        assert sym == "circle-open" and all((x, y) in pts for x, y in zip(t["x"], t["y"])), \
            f"a new trace draws something new: {sym} {t.get('x')} {t.get('y')}"


def _num(s: str):
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return s


def _params(text: str) -> dict:
    return {k: _num(v) for k, v in (p.split("=", 1) for p in text.split())}


_POINT = re.compile(r"^(?P<k>.+?) #(?P<j>\d+): [0-9.]+ of cuBLAS \((?P<v>[0-9.e+]+) TFLOP/s\)<br>(?P<p>.*?)<br>"
                    r"model rank (?P<rank>\S+), picked as: (?P<stage>.*)$")


def run_from_figure(fig: dict) -> tuple[list, str]:
    """([run], where) read back from a committed distribution figure of one kernel."""
    stage_of = {v: k for k, v in tuning.STAGES.items()}
    line = next(t for t in fig["data"] if t.get("mode") == "lines+markers")
    star = next(t for t in fig["data"] if (t.get("marker") or {}).get("symbol") == "star")
    timed = []
    for y, h in zip(line["y"], line["hovertext"]):
        m = _POINT.match(h)
        assert m, f"hover text not understood: {h!r}"
        timed.append({"kernel": m["k"], "params": _params(m["p"]), "value": float(m["v"]), "ratio": y,
                      "rank": None if m["rank"] == "-" else int(m["rank"]),
                      "stage": stage_of.get(m["stage"], m["stage"])})
    k = line["name"]
    best = _params(star["hovertext"].split("<br>", 1)[1])
    run = {"kernel": k, "timed": timed, "best": {"params": best}}
    base = next((r for r in timed if r["stage"] == "baseline"), None)
    if base:
        run["baseline"] = {"params": base["params"], "value": base["value"], "ratio": base["ratio"]}
    title = fig["layout"]["title"]["text"]
    where = re.sub(r"<[^>]+>", " ", title.split("<sup>", 1)[1]).strip()
    where = re.sub(r"\s+", " ", where)
    return [run], where


def _import_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"
            and c.source.lstrip().startswith(("import helpers", "from helpers.chapters import"))]


def redraw(path: Path = NOTEBOOK, write: bool = True) -> int:
    nb = nbformat.read(path, as_version=4)
    heads = _import_cells(nb)
    targets = [c for c in nb.cells if c.cell_type == "code" and any(s in c.source for s in RECORDED_CELLS)]
    assert len(targets) == len(RECORDED_CELLS), f"expected {len(RECORDED_CELLS)} recorded cells, found {len(targets)}"
    mini = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    mini.cells = [nbformat.v4.new_code_cell(c.source) for c in heads + targets]
    NotebookClient(mini, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    changed = 0
    for cell, ran in zip(targets, mini.cells[len(heads):]):
        if _plain(ran.outputs) != _plain(cell.outputs):
            sys.exit(f"{path}: cell {cell.source.splitlines()[0]!r}: outputs other than the distribution figure "
                     "differ from the committed ones (the recorded results changed since): not written")
        old = [o for o in cell.outputs if _is_dist(o)]
        new = [o for o in ran.outputs if _is_dist(o)]
        assert len(old) == len(new) == 1, (len(old), len(new))
        check_traces(old[0]["data"][PLOTLY], new[0]["data"][PLOTLY])
        if old[0]["data"] != new[0]["data"]:
            old[0]["data"] = new[0]["data"]
            changed += 1
    for cell in nb.cells:
        if cell.cell_type != "code" or LIVE_CELL not in cell.source:
            continue
        for out in cell.outputs:
            if not _is_dist(out):
                continue
            fig = out["data"][PLOTLY]
            runs, where = run_from_figure(fig)
            dflts = {r["kernel"]: catalog.get(r["kernel"]).defaults for r in runs}
            bundle = show.figure_bundle(tuning.distribution_figure(runs, where, dflts))
            check_traces(fig, bundle[PLOTLY])
            new = {k: bundle[k] for k in out["data"]}
            if new != out["data"]:
                out["data"] = new
                changed += 1
    if changed and write:
        nbformat.write(nb, path)
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report what would change; write nothing")
    a = ap.parse_args(argv)
    n = redraw(write=not a.check)
    verb = "would redraw" if a.check else "redrew"
    print(f"{NOTEBOOK.relative_to(REPO)}: {verb} {n} distribution figures "
          "(committed traces checked at the same points; other outputs checked identical)")
    return 1 if (a.check and n) else 0


if __name__ == "__main__":
    sys.exit(main())
