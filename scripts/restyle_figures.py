"""Restyle the Plotly figures in committed notebook outputs, in place, without a GPU.

    python scripts/restyle_figures.py book/08_profiling.ipynb book/09_any_shape.ipynb
    python scripts/restyle_figures.py --check book/*.ipynb     # say what would change, write nothing

Every figure output of ``helpers.figures.show.figure`` carries the figure twice: as
``application/vnd.plotly.v1+json`` (JupyterLab) and as ``text/html`` (a div and a
``Plotly.newPlot(id, data, layout, config)`` call, which the book shows). This script
gives both the book's current style, :func:`helpers.figures.style.polish` (the
template, wrapped titles, abbreviated labels, equal-aspect heatmaps unless their cells
carry words, log-axis ticks, the roofline's key above the plot),
which is what a re-execution would give them, and changes nothing else:

- only the layout is rewritten; in the HTML, only the text of the layout argument;
- every trace of every figure is compared before and after (the JSON traces as
  objects, the HTML's data argument as text), and the script stops without writing
  that notebook if any of them differ.

A notebook is written back with nbformat only when one of its figures changed; the
script prints, per notebook, how many figures it restyled and that their traces were
checked. It is idempotent: a second run changes nothing.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402

from helpers.figures import style  # noqa: E402

PLOTLY_MIME = "application/vnd.plotly.v1+json"
CALL = "Plotly.newPlot("


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def split_newplot(html: str):
    """``(prefix, div_id, data_text, layout_start, layout_end, layout)`` of the
    ``Plotly.newPlot`` call in ``html``; raises ValueError when there is none (or
    more than one)."""
    if html.count(CALL) != 1:
        raise ValueError(f"expected one {CALL!r} call, found {html.count(CALL)}")
    dec = json.JSONDecoder()
    i = _skip_ws(html, html.index(CALL) + len(CALL))
    div_id, i = dec.raw_decode(html, i)
    i = _skip_ws(html, i)
    assert html[i] == ","
    i = _skip_ws(html, i + 1)
    data_start = i
    _, i = dec.raw_decode(html, i)
    data_text = html[data_start:i]
    i = _skip_ws(html, i)
    assert html[i] == ","
    layout_start = _skip_ws(html, i + 1)
    layout, layout_end = dec.raw_decode(html, layout_start)
    return div_id, data_text, layout_start, layout_end, layout


def restyle_output(data: dict) -> bool:
    """Restyle one output's MIME bundle in place; True when it changed. Raises
    AssertionError if a trace would change (it never should)."""
    changed = False
    fig = data.get(PLOTLY_MIME)
    if isinstance(fig, dict) and "layout" in fig:
        before = copy.deepcopy(fig.get("data"))
        new = {"data": fig.get("data") or [], "layout": copy.deepcopy(fig["layout"])}
        style.polish(new)
        assert new["data"] == before and fig.get("data") == before, "a trace changed in the JSON figure"
        if new["layout"] != fig["layout"]:
            fig["layout"] = new["layout"]
            changed = True
    html = data.get("text/html")
    if isinstance(html, list):
        html = "".join(html)
    if isinstance(html, str) and CALL in html:
        div_id, data_text, a, b, layout = split_newplot(html)
        traces = json.loads(data_text)
        before = copy.deepcopy(traces)
        new = {"data": traces, "layout": copy.deepcopy(layout)}
        style.polish(new)
        assert new["data"] == before, "a trace changed in the HTML figure"
        if new["layout"] != layout:
            out = html[:a] + json.dumps(new["layout"]) + html[b:]
            assert split_newplot(out)[1] == data_text, "the HTML's data argument changed"
            data["text/html"] = out
            changed = True
    return changed


def restyle_notebook(path: Path, write: bool = True) -> tuple:
    """(figures seen, figures restyled) of one notebook; writes it back when a figure
    changed and ``write``."""
    nb = nbformat.read(path, as_version=4)
    seen = changed = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if PLOTLY_MIME in data or CALL in str(data.get("text/html", "")):
                seen += 1
                changed += restyle_output(data)
    if changed and write:
        nbformat.write(nb, path)
    return seen, changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="report what would change; write nothing")
    args = ap.parse_args(argv)
    todo = 0
    for path in args.notebooks:
        seen, changed = restyle_notebook(path, write=not args.check)
        todo += changed
        verb = "would restyle" if args.check else "restyled"
        print(f"{path}: {seen} figures, {verb} {changed} (layout only; every trace compared, unchanged)")
    return 1 if (args.check and todo) else 0


if __name__ == "__main__":
    sys.exit(main())
