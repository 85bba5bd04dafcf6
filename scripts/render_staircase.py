"""Draw the landing page's staircase from the recorded results, without a GPU.

    python scripts/render_staircase.py                 # re-execute book/intro.ipynb in recorded mode
    python scripts/render_staircase.py --check         # say whether its outputs would change
    python scripts/render_staircase.py --records-changed   # after re-recording results/<gpu>.json
    python scripts/render_staircase.py --svg out.svg [--narrow]   # the figure alone, as an SVG file

The staircase (``helpers.chapters.common.show_staircase``) is a static SVG written by
:mod:`helpers.figures.staircase` from the running-table records and the ceilings: on a
GPU, measured live; here, read from ``results/<gpu>.json`` (recorded mode, forced with
``GEMM_BOOK_FORCE_RECORDED=1``, so a GPU on this machine changes nothing). No plotly.js,
no kaleido, no browser: the SVG is text this repository writes.

Re-executing the landing page runs no kernel and times nothing. Before it writes the
notebook back, the script checks that every output other than the figure (the table
of heavens and its caption, which carries the provenance) is exactly the committed one:
the new figure is drawn from the same recorded numbers as the page it replaces.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["GEMM_BOOK_FORCE_RECORDED"] = "1"     # before helpers is imported; inherited by the kernel

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

INTRO = REPO / "book" / "intro.ipynb"
MARK = "book-staircase"                          # the class of the figure's <figure> element


def _is_figure(out) -> bool:
    data = out.get("data") or {}
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else html
    return MARK in html or "plotly-graph-div" in html


def _others(nb) -> list:
    """Every output but the staircase figure, without execution counts and metadata."""
    keep = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if _is_figure(out):
                continue
            o = copy.deepcopy(dict(out))
            o.pop("execution_count", None)
            o.pop("metadata", None)
            keep.append(o)
    return keep


def render(path: Path = INTRO, write: bool = True, records_changed: bool = False) -> bool:
    """Re-execute the landing page in recorded mode; True when its outputs changed.
    ``records_changed``: results/<gpu>.json was re-recorded on purpose, so the other outputs
    (the table of heavens and its provenance caption) may change too; they are written, and
    the number of outputs that changed is printed."""
    old = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(old)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    if _others(nb) != _others(old) and records_changed:
        n = sum(a != b for a, b in zip(_others(nb), _others(old))) + abs(len(_others(nb)) - len(_others(old)))
        print(f"{path}: {n} output(s) besides the staircase changed with the re-recorded results")
    elif _others(nb) != _others(old):
        sys.exit(f"{path}: outputs other than the staircase differ from the committed ones "
                 "(the recorded results changed since): not written")
    figs = [o for c in nb.cells for o in c.get("outputs", []) if _is_figure(o)]
    if len(figs) != 1 or MARK not in "".join(figs[0]["data"]["text/html"]):
        sys.exit(f"{path}: expected one staircase figure drawn as SVG, found {len(figs)}")
    before = [c.get("outputs") for c in old.cells if c.cell_type == "code"]
    after = [c.get("outputs") for c in nb.cells if c.cell_type == "code"]
    changed = _strip(before) != _strip(after)
    if changed and write:
        nbformat.write(nb, path)
    return changed


def _strip(outputs):
    return [[{k: v for k, v in dict(o).items() if k not in ("execution_count", "metadata")} for o in outs or []]
            for outs in outputs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report whether the outputs would change; write nothing")
    ap.add_argument("--svg", type=Path, help="write the figure alone to this SVG file instead")
    ap.add_argument("--narrow", action="store_true", help="with --svg: the narrow (phone) drawing")
    ap.add_argument("--records-changed", action="store_true",
                    help="results were re-recorded: let the table of heavens and its caption change too")
    a = ap.parse_args(argv)
    if a.svg:
        from helpers.chapters import common
        from helpers.figures import staircase
        from helpers.runtime import roofline
        svg = staircase.staircase_svg(common.running(upto=10), roofline.ceilings(), narrow=a.narrow)
        a.svg.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + svg.replace(
            'fill="currentColor"', 'fill="#262626"', 1) + "\n")
        print(f"wrote {a.svg} ({len(svg):,} bytes)")
        return 0
    changed = render(write=not a.check, records_changed=a.records_changed)
    verb = ("would change" if a.check else "rewritten") if changed else "unchanged"
    how = "the other outputs follow the re-recorded results" if a.records_changed else \
        "every other output checked identical"
    print(f"{INTRO.relative_to(REPO)}: staircase {verb} (recorded mode; {how})")
    return 1 if (a.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
