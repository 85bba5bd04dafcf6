"""Execute the book's notebooks in place, so committed notebooks carry real GPU outputs.

Usage (on a GPU machine): ``python scripts/execute_notebooks.py [book/01_naive.ipynb ...]``

Runs each notebook top to bottom with nbclient (kernel ``python3``, working
directory book/), then writes it back with its outputs. Widget state is not
stored and live-widget outputs are dropped: the static book shows the recorded
sweep as a Plotly slider instead, and widget state would make the book load
the widget JavaScript from a CDN. Refuses to run without a GPU, since the
outputs would then be recorded-mode outputs posing as a live run.
"""
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from helpers.runtime import gpu  # noqa: E402

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def strip_widgets(nb):
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = [o for o in cell.outputs if WIDGET_MIME not in o.get("data", {})]


def main(paths):
    if not gpu.live():
        sys.exit("execute_notebooks.py needs a GPU: committed outputs must come from a live run")
    paths = [Path(p) for p in paths] or sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    # Inherited by the kernels: no live ipywidgets controls (helpers.figures.show.live_controls).
    os.environ["GEMM_BOOK_BATCH"] = "1"
    total, failed = 0.0, []
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        t0 = time.time()
        try:
            # store_widget_state must stay True: with False, nbclient 0.11 fails with a
            # KeyError on the first comm message of a live ipywidgets slider. The state is
            # stripped below anyway.
            NotebookClient(nb, timeout=900, kernel_name="python3",
                           resources={"metadata": {"path": str(p.parent)}}).execute()
        except Exception as e:      # keep going: one broken chapter must not hide the others
            failed.append(p.name)
            lines = str(e).strip().splitlines()
            print(f"FAILED {p.name}: {type(e).__name__}: {' | '.join(lines[-4:])[:600]}", flush=True)
            continue                # the committed notebook keeps its previous outputs
        dt = time.time() - t0
        total += dt
        strip_widgets(nb)
        nbformat.write(nb, p)
        print(f"executed {p.name} in {dt:.1f} s ({p.stat().st_size / 1024:.0f} KiB)", flush=True)
        if os.environ.get("NOTEBOOK_COPY_DIR"):      # e.g. $OUT on a remote GPU machine
            shutil.copy(p, os.environ["NOTEBOOK_COPY_DIR"])
    print(f"{len(paths) - len(failed)} notebooks executed in {total:.1f} s, {len(failed)} failed {failed}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
