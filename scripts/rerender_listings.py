"""Re-render the kernel listings of committed notebooks from kernels/ as they are now.

A code cell that is exactly ``show.source("<file>"[, "<entry>"][, folded=True])`` displays the kernel
file (or one entry of it); after a kernel edit its committed output is stale
(tests/test_helpers.py::test_committed_kernel_listings_match_the_kernel_files says
which). This rewrites those outputs only, with ``show.source_markdown`` (what the cell
would display), executes nothing and leaves every other cell alone::

    python scripts/rerender_listings.py book/05_register_tiling.ipynb
"""
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.figures import show

CELL = re.compile(r'show\.source\("([^"]+)"(?:, "([^"]+)")?(, folded=True)?\)\s*')


def rerender(path: str) -> int:
    nb = nbformat.read(path, as_version=4)
    n = 0
    for c in nb.cells:
        m = CELL.fullmatch(c.source)
        if c.cell_type == "code" and m and c.get("outputs"):
            new = show.source_markdown(m.group(1), m.group(2), folded=bool(m.group(3)))
            if c.outputs[0]["data"].get("text/markdown") != new:
                c.outputs[0]["data"]["text/markdown"] = new
                n += 1
    if n:
        nbformat.write(nb, path)
    return n


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(f"{p}: {rerender(p)} listings re-rendered")
