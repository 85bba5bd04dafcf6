"""Display helpers: one output that works live (JupyterLab, JupyterHub, Colab)
and in the built book (Jupyter Book 1, no kernel, no CDN).

- :func:`figure` a Plotly figure; :func:`static_figure` one drawn as inline SVG;
- :func:`source` a kernel's CUDA source (the whole file or one entry point);
- :func:`table` a list of dicts as a Markdown table with a caption;
- :func:`note` a highlighted note.

Each call displays its output (``IPython.display.display``) and returns None.
Everything here is Markdown or HTML that both JupyterLab and myst-nb render,
so a committed notebook shows the same thing in both.
"""
from __future__ import annotations

import hashlib
import html
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import plotly.graph_objects as go
from IPython.display import Markdown, display

from helpers.runtime import compile as _kc, gpu
from helpers.runtime.compile import kernel_path

from . import style

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_fig_counter = itertools.count()


def _display(obj=None, *, raw: dict | None = None) -> None:
    if raw is not None:
        display(raw, raw=True)
    else:
        display(obj)


def _markdown(text: str) -> None:
    _display(Markdown(text))


# ------------------------------------------------------------------ figures
def live_controls() -> bool:
    """Whether to build live ipywidgets controls (the sliders and explorers
    that recompile and re-measure): only with a GPU, and not while
    ``scripts/execute_notebooks.py`` executes the notebooks (it sets
    ``GEMM_BOOK_BATCH=1``). There, their output is widget state that is
    stripped before committing anyway, and nbclient 0.11 intermittently
    stalls a cell that draws into an ``Output`` widget for the cell's whole
    timeout: the kernel's reply arrives on time but is read 60 s later with a
    60 s timeout (chapter 4 on the H200, and reproduced without a GPU,
    2026-11-29)."""
    return gpu.live() and interactive()


def interactive() -> bool:
    """Whether widgets may be drawn at all: False only while ``scripts/execute_notebooks.py``
    executes the notebooks (``GEMM_BOOK_BATCH=1``, see :func:`live_controls`). Controls that
    redraw a model and measure nothing (chapter 4's bank explorer) need this, not a GPU."""
    return os.environ.get("GEMM_BOOK_BATCH") != "1"


def figure_bundle(fig, config: Mapping | None = None) -> dict:
    """The MIME bundle :func:`figure` displays (exposed for tests).

    Keys: ``application/vnd.plotly.v1+json`` (the figure as JSON, rendered
    live by JupyterLab's Plotly renderer), ``text/html`` (a ``<div>`` and an
    inline ``Plotly.newPlot`` call, with no plotly.js inside: the book loads
    plotly.js once per site, see ``_ext/book_offline.py``) and ``text/plain``.
    Both carry the figure in the book's style (:func:`helpers.figures.style.polish`).
    The div id is derived from the figure's content and a per-process counter,
    so re-running a notebook does not change its outputs.
    """
    import plotly.io as pio

    cfg = {"responsive": True, "displaylogo": False, **dict(config or {})}
    fig_json = json.loads(pio.to_json(fig, validate=True, remove_uids=True))
    style.polish(fig_json)                      # the book's template, wrapped titles, ...
    digest = hashlib.sha1(json.dumps(fig_json, sort_keys=True).encode()).hexdigest()[:12]
    div_id = f"fig-{digest}-{next(_fig_counter)}"
    html_div = pio.to_html(fig_json, include_plotlyjs=False, full_html=False, div_id=div_id,
                           config=cfg, validate=False)
    title = ((fig_json.get("layout") or {}).get("title") or {})
    title = title.get("text", "") if isinstance(title, dict) else str(title)
    return {
        PLOTLY_MIME: {**fig_json, "config": cfg},
        "text/html": html_div,
        "text/plain": f"<Plotly figure{': ' + title if title else ''}>",
    }


def figure(fig, config: Mapping | None = None) -> None:
    """Display a Plotly figure, live in Jupyter and drawn in the built book.

    Args:
        fig: a ``plotly.graph_objects.Figure`` (or a figure dict).
        config: Plotly config options (``{"scrollZoom": True}``, ...), merged
            over ``{"responsive": True, "displaylogo": False}``.

    In Google Colab (``google.colab`` imported) this is
    ``fig.show(renderer="colab")``. Elsewhere it displays the bundle of
    :func:`figure_bundle`: JupyterLab picks the Plotly mimetype, the book
    (myst-nb) picks ``text/html``. Keep figures small: the data is stored
    twice in the notebook (JSON and HTML), and committed notebooks must stay
    under 1.5 MB.
    """
    if "google.colab" in sys.modules:
        go.Figure(fig).show(renderer="colab", config=dict(config or {}))
        return
    _display(raw=figure_bundle(fig, config))


def static_figure(html_text: str, text: str) -> None:
    """Display a figure drawn as HTML and inline SVG (no script, no plotly.js: e.g.
    :func:`helpers.figures.staircase.staircase_html`), the same in Jupyter and in the book.
    ``text`` is the plain-text alternative (``text/plain``)."""
    _display(raw={"text/html": html_text, "text/plain": text})


# ------------------------------------------------------------------- source
def _kernel_text(file: str) -> str:
    """The kernel file as it is in kernels/ (its ``#include "instrument.cuh"``
    line stands for the instrumentation, which the compiler gets pasted in)."""
    return kernel_path(file).read_text()


def _matching_brace(text: str, open_at: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``open_at`` (skips comments, strings)."""
    depth, i, n = 0, open_at, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
            continue
        elif text[i] in "\"'":
            q, i = text[i], i + 1
            while i < n and text[i] != q:
                i += 2 if text[i] == "\\" else 1
        elif text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced braces")


def extract_entry(text: str, entry: str) -> str:
    """The ``extern "C"`` function ``entry`` of CUDA source ``text`` (exposed for
    tests): its definition, from ``extern "C"`` to the closing brace, and the
    comment lines (``//`` or a ``/* */`` block) directly above it.

    Raises ValueError when ``entry`` is not an ``extern "C"`` function of ``text``.
    """
    m = None
    for cand in re.finditer(r'^[ \t]*(extern\s+"C")', text, re.M):
        if re.match(r'extern\s+"C"[^;{]*?\b' + re.escape(entry) + r'\s*\(', text[cand.start(1):]):
            m = cand
            break
    if m is None:
        names = re.findall(r'extern\s+"C"[^;{]*?\b(?!__launch_bounds__\b)(\w+)\s*\(', text)
        raise ValueError(f"entry={entry!r}: no extern \"C\" function of that name (have: {names})")
    end = _matching_brace(text, text.index("{", m.start())) + 1
    lines = text[:m.start()].split("\n")[:-1]
    first = len(lines)
    while first > 0:
        s = lines[first - 1].strip()
        if s.startswith("//") or s.startswith("*") or s.startswith("/*") or s.endswith("*/"):
            first -= 1
        else:
            break
    comment = "\n".join(lines[first:])
    return (comment + "\n" if comment else "") + text[m.start():end].rstrip()


def source(file: str, entry: str | None = None, folded: bool = False) -> None:
    """Display CUDA source from ``kernels/<file>`` as a highlighted code block.

    Args:
        file: a file name in ``kernels/``, e.g. ``"01_naive.cu"``.
        entry: if given, only the ``extern "C"`` function of that name and the
            comment block right above it; otherwise the whole file, as it is
            in kernels/ (local ``#include "x.cuh"`` lines are shown, not pasted),
            followed by each local header it includes (directly or through
            another header, each once, in the order the compiler reads them),
            folded: a ``<details>`` block the reader opens.
        folded: show the listing folded whatever its length (a listing that would
            otherwise come before the prose and the first figure of its page).

    Output: Markdown, a caption line naming the file (and entry) and a
    fenced ```` ```cuda ```` block, so JupyterLab and the book both highlight it.
    A listing of more than :data:`OPEN_LINES` lines (60) is folded instead: a
    ``<details>`` block whose summary names the file, the entry and the number of
    lines, so that the page reads as prose with the code one click away.
    Raises FileNotFoundError for an unknown file, ValueError for an unknown entry.
    """
    _markdown(source_markdown(file, entry, folded))


def _code_block(code: str) -> str:
    fence = "```"
    while fence in code:
        fence += "`"
    return f"{fence}cuda\n{code}\n{fence}\n"


def local_includes(file: str) -> list[str]:
    """The local headers ``kernels/<file>`` includes, directly or through one another, each
    once, in the order the compiler reads them, as paths relative to ``kernels/``
    (``["fp16.cuh", "mma_sm80.cuh", "common.cuh", "instrument.cuh"]``). Raises
    FileNotFoundError for an unknown file."""
    out: list[str] = []

    def walk(path):
        for m in re.finditer(r'^[ \t]*#include[ \t]+"([^"]+)"', path.read_text(), re.MULTILINE):
            inc = (path.parent / m.group(1)).resolve()
            rel = Path(os.path.relpath(inc, _kc.KERNEL_DIR)).as_posix()
            if rel not in out and inc.is_file():
                out.append(rel)
                walk(inc)
    walk(kernel_path(file))
    return out


# A listing longer than this many lines is shown folded (:func:`source`).
OPEN_LINES = 60

# A notebook cell that is exactly one :func:`source` call (groups: file, entry, folded);
# scripts/render_record_cells.py re-renders such cells, and a test checks them against the files.
LISTING_CELL = re.compile(r'show\.source\("([^"]+)"(?:, "([^"]+)")?(, folded=True)?\)\s*')


def source_markdown(file: str, entry: str | None = None, folded: bool = False) -> str:
    """The Markdown :func:`source` displays (exposed for tests); ``folded``: a
    ``<details>`` block whatever the listing's length."""
    text = _kernel_text(file)
    code = extract_entry(text, entry) if entry else text.rstrip()
    where = f"`kernels/{file}`" + (f", `{entry}`" if entry else "")
    n = code.count("\n") + 1
    if folded or n > OPEN_LINES:
        # prose first: a long listing is one click away, folded, never open in the page
        what = f"<code>{html.escape(entry)}</code> in " if entry else "the whole of "
        out = (f"<details class=\"book-listing\">\n<summary>{what}<code>kernels/{html.escape(file)}</code>"
               f" ({n} lines): open to read</summary>\n\n{_code_block(code)}\n</details>\n")
    else:
        out = f"{where}\n\n{_code_block(code)}"
    if not entry:
        for inc in local_includes(file):
            out += (f"\n<details>\n<summary><code>kernels/{inc}</code>, included by <code>kernels/{file}</code>"
                    f"</summary>\n\n{_code_block(_kernel_text(inc).rstrip())}\n</details>\n")
    return out


# -------------------------------------------------------------------- table
def _cell(v) -> str:
    if isinstance(v, bool) or v is None:
        s = "" if v is None else str(v)
    elif isinstance(v, float):
        s = f"{v:.4g}"
    elif isinstance(v, (list, tuple)):
        s = " x ".join(str(x) for x in v)
    else:
        s = str(v)
    return _literal_markdown(s.replace("|", "\\|").replace("\n", " "))


_PRODUCT_STAR = re.compile(r"(?<=\w)\*(?=\w)")


def _literal_markdown(s: str) -> str:
    """Escape, outside code spans, each "__" and each "*" between two word characters, so that
    ``__launch_bounds__`` and ``M*N*K`` in a cell or caption are printed as written, not read by
    Markdown as bold or italics."""
    parts = s.split("`")
    return "`".join(_PRODUCT_STAR.sub(r"\\*", p.replace("__", "\\_\\_")) if i % 2 == 0 else p
                    for i, p in enumerate(parts))


# A numeric column whose key or header says "ratio" (or "x cuBLAS", "/ cuBLAS", or is a quotient
# "a ÷ b") is printed with style.ratio_text: three significant figures in every table of the book.
# "ratio" starts a word: "configurations", "iterations" and "duration" hold the letters too.
_RATIO_COLUMN = re.compile(r"(?<![a-z])ratio|[x×/] cuBLAS|of cuBLAS|÷", re.I)


def table_markdown(rows: Sequence[Mapping], columns: Iterable, caption: str) -> str:
    """The Markdown :func:`table` displays (exposed for tests)."""
    if not caption or not str(caption).strip():
        raise ValueError("caption: required; say what the numbers are and where "
                         "they were measured (GPU, recorded or live)")
    cols = list(columns.items()) if isinstance(columns, Mapping) else \
        [c if isinstance(c, tuple) else (c, c) for c in columns]
    if not cols:
        raise ValueError("columns: at least one column is needed")
    numeric = [all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                   for r in rows if r.get(k) is not None) and any(r.get(k) is not None for r in rows)
               for k, _ in cols]
    ratio = [num and bool(_RATIO_COLUMN.search(f"{k} {h}")) for (k, h), num in zip(cols, numeric)]
    out = [f"*{_literal_markdown(caption.strip())}*", "",
           "| " + " | ".join(_cell(h) for _, h in cols) + " |",
           "|" + "|".join("---:" if num else "---" for num in numeric) + "|"]
    for r in rows:
        out.append("| " + " | ".join(style.ratio_text(r.get(k)) if is_ratio and r.get(k) is not None
                                     else _cell(r.get(k)) for (k, _), is_ratio in zip(cols, ratio)) + " |")
    return "\n".join(out) + "\n"


def table(rows: Sequence[Mapping], columns: Iterable, caption: str) -> None:
    """Display ``rows`` as a Markdown table under a caption line.

    Args:
        rows: a list of dicts, one per table row.
        columns: the keys to show, in order: a list of keys, a list of
            ``(key, header)`` pairs, or a dict ``{key: header}``. Missing
            values are blank; floats get 4 significant digits, ratios (a numeric
            column whose key or header says "ratio", "x cuBLAS", "/ cuBLAS", "of cuBLAS" or "÷") 3
            (:func:`helpers.figures.style.ratio_text`); lists and
            tuples (shapes) are written ``4096 x 4096``; numeric columns are
            right-aligned.
        caption: what the numbers are and where they were measured, e.g.
            ``"Recorded on NVIDIA H200 (results/h200.json, 2026-11-29)"``.
            Required: ValueError if empty.
    """
    _markdown(table_markdown(rows, columns, caption))


# --------------------------------------------------------------------- note
def note_markdown(text: str, title: str = "Note") -> str:
    """The Markdown :func:`note` displays (exposed for tests)."""
    return (f'<div class="admonition note">\n<p class="admonition-title">{html.escape(title)}</p>\n\n'
            f"{text.strip()}\n\n</div>\n")


def note(text: str, title: str = "Note") -> None:
    """Display ``text`` (Markdown) in a note box, titled ``title``.

    Rendered as an admonition in the book (the theme's ``admonition note``
    style) and as a plain block with a bold title line in JupyterLab.
    """
    _markdown(note_markdown(text, title))
