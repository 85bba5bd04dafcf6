"""Write the setup cell (helpers.colab.setup_cell) and the python3 kernelspec into the notebooks.

Usage: ``python scripts/setup_cell.py [--url URL] [--branch B] [--all] [notebooks...]``

The first code cell of every notebook is ``helpers.setup()``, preceded by a clone of the
book when ``repository.url`` of ``_config.yml`` is set (``--url`` overrides it: the
GitHub Pages workflow passes the repository it builds, so the published notebooks run on
their own). An existing setup cell is replaced, not duplicated; other cells and their
outputs are left as they are (the setup cell has none off Colab). Chapters 8 and 9 are
left alone unless ``--all`` is given or they are named.
"""
import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers import colab  # noqa: E402

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def is_setup(cell) -> bool:
    return cell["cell_type"] == "code" and "".join(cell["source"]).rstrip().endswith("helpers.setup()")


def write(path: Path, source: str) -> bool:
    raw = path.read_text()
    nb = json.loads(raw)
    nb["metadata"]["kernelspec"] = KERNELSPEC
    cell = {"cell_type": "code", "execution_count": None, "id": "setup", "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    cells = nb["cells"]
    old = next((i for i, c in enumerate(cells) if is_setup(c)), None)
    if old is not None:
        cells[old] = cell
    else:
        first = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
        cells.insert(first, cell)
    out = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if out != raw:
        path.write_text(out)
        return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default=None)
    ap.add_argument("--branch", default=None)
    ap.add_argument("--all", action="store_true", help="chapters 8 and 9 too")
    ap.add_argument("notebooks", nargs="*", type=Path)
    a = ap.parse_args()
    url, branch = colab.repository()
    source = colab.setup_cell(a.url if a.url is not None else url, a.branch or branch)
    paths = a.notebooks or sorted(p for p in (REPO / "book").glob("*.ipynb")
                                  if a.all or not p.name.startswith(("08_", "09_")))
    for p in paths:
        print(("updated " if write(p, source) else "unchanged ") + str(p.relative_to(REPO) if p.is_absolute() else p))


if __name__ == "__main__":
    main()
