"""Render the outputs of the cells that read only records or models, without a GPU.

Two kinds of cell show the same thing live and recorded, because no kernel runs in them:

* glue cells: tagged ``remove-cell``, calling ``common.glue(...)`` with values read from the
  records (``results/*.json``), the catalog or a model; the prose quotes them with
  ``{glue:text}`name```;
* model cells: tagged ``model-only`` (a figure or table drawn from a model or from the records,
  such as the tile hierarchy or the split-K partition);
* exercise check cells (``exercises.check(...)``): without live controls (no GPU, or the batch
  run that writes the book's outputs) they run nothing and show the recorded check of the
  exercise's solution and one line on the checker's own test (``results/<gpu>-exercises.json``);
* listing cells (a cell that is only ``show.source(...)``): the kernel file as it is now, so a
  comment edited after the last execution reaches the page without one.

After a re-recording, a new glue value or a new model figure, their committed outputs are
stale or missing. This script executes the notebook in recorded mode (``GEMM_BOOK_FORCE_RECORDED=1``,
in a temporary copy, so a GPU on this machine changes nothing) and copies back the outputs of
those cells only; every other cell, and its real GPU output, is left as committed::

    python scripts/render_record_cells.py book/05_register_tiling.ipynb [more notebooks]
    python scripts/render_record_cells.py --check book/*.ipynb     # exit 1 if an output would change

A glue or model cell must not measure anything (no ``bench.gemm``, no ``show_timings``): the
script refuses a cell whose source names a measuring call (:data:`MEASURING`).
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["GEMM_BOOK_FORCE_RECORDED"] = "1"     # before helpers is imported; inherited by the kernel
os.environ["GEMM_BOOK_BATCH"] = "1"              # it writes the static book's outputs: no widgets, as in
                                                 # scripts/execute_notebooks.py (helpers.figures.show.interactive)

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from helpers.figures import show  # noqa: E402  (its LISTING_CELL: what a listing cell is)

TAGS = ("remove-cell", "model-only")
MEASURING = re.compile(r"\b(bench\.|show_timings|measure\(|running\(|show_sweep|live_slider|profile)")




def _rendered(cell) -> bool:
    if cell.cell_type == "code" and cell.source.lstrip().startswith("exercises.check("):
        return True
    if cell.cell_type == "code" and show.LISTING_CELL.fullmatch(cell.source):
        return True
    tags = cell.get("metadata", {}).get("tags", [])
    if cell.cell_type != "code" or not any(t in tags for t in TAGS):
        return False
    if "remove-cell" in tags and "glue(" not in cell.source and "model-only" not in tags:
        return False
    return True


def render(path: Path, check: bool = False) -> int:
    """Execute ``path`` in recorded mode and copy the outputs of its glue and model cells
    back. Returns how many cells' outputs changed. Raises ValueError for a glue or model
    cell that measures, nbclient's CellExecutionError when a cell fails."""
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if _rendered(c) and MEASURING.search(c.source):
            raise ValueError(f"{path.name}: a glue or model cell may not measure: {c.source[:120]!r}")
    run = copy.deepcopy(nb)
    NotebookClient(run, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    changed = 0
    for old, new in zip(nb.cells, run.cells):
        if _rendered(old):
            outs = new.get("outputs", [])
            if old.get("outputs") != outs:
                changed += 1
                old["outputs"] = outs
                old["execution_count"] = old.get("execution_count") or new.get("execution_count") or 1
    if changed and not check:
        nbformat.write(nb, path)
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if an output would change")
    args = ap.parse_args()
    stale = 0
    for p in args.notebooks:
        n = render(p, check=args.check)
        stale += n
        print(f"{p}: {n} glue/model/listing cells {'would change' if args.check else 'rendered'}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
