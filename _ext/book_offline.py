"""Sphinx extension: serve plotly.js and MathJax from the book itself, never a CDN.

Registered in ``_config.yml`` (``sphinx: local_extensions: book_offline: _ext``).

plotly.js
    ``plotly.min.js`` is copied from the installed ``plotly`` Python package
    (``plotly/package_data/plotly.min.js``) into ``_static/`` once per site. It is
    4.8 MB, so no page loads it in ``<head>``, where it would hold back the first paint
    by seconds: the inline ``Plotly.newPlot(...)`` calls that ``helpers.show.figure``
    leaves in the notebook outputs are written as ``window.__bookPlot(...)`` in the
    built page (:func:`_plotly_only_where_drawn`), a one-line script in ``<head>``
    queues them, and ``book_plotly.js`` (deferred) loads plotly.min.js after the first
    frame has painted, draws the queued figures, then loads ``book_figures.js``. The
    notebooks hold no copy of plotly.js.

    RequireJS: a plotly.js bundle that sees an AMD loader (``window.define``
    with ``define.amd``) registers itself as an anonymous AMD module instead
    of setting ``window.Plotly``; book_plotly.js hides ``define`` while
    plotly.min.js runs and puts it back after.

    Only pages with a Plotly figure load any of it (:func:`_plotly_only_where_drawn`).

Navigation
    ``book_nav.js`` (every page) makes the sidebar and "Contents" buttons of the article
    header work below 992 px (both themes bind their handlers to the first toggle of the
    page only, one that this layout hides); ``book.css`` hides the Bootstrap tooltips
    and the Plotly toolbar on a screen that cannot hover (a tooltip left up after a tap
    covered the search button).

Tables
    ``book_tables.js`` (every page): below 600 px a table wider than its column is drawn
    as cards, one block per row with each cell after its column's header (``book.css``,
    ``table.book-cards``), instead of words broken to one letter per line. A table of more
    than 30 rows is not (its cards would run to many screens): it scrolls in a box at most
    70 % of the screen high, down and sideways, its header row and first column held in
    place (``.book-scrollbox``, ``table.book-long``, ``table.book-wide``).

Dark mode
    ``html_context.default_mode`` is ``auto`` (``_config.yml``): the page follows the
    reader's system setting (``prefers-color-scheme``) until they pick a mode with the
    theme switch; :data:`_RESOLVE_AUTO` sets ``data-theme`` before the page draws, so
    an "auto" page does not paint light first.

Figures and the theme
    ``book_figures.js`` (``_ext/static/``, copied to ``_static/``; loaded with
    plotly.js) restyles every figure for the page: transparent backgrounds, and
    text and grid colours that follow the light or dark theme (also when the
    reader switches it); on a narrow screen, titles that do not fit are wrapped.
    The figures' own style is ``helpers/figures/style.py``; committed outputs keep
    the layout they were drawn with, hence this script.

Font Awesome
    The theme's icons are drawn by its stylesheet's web font; the 1.5 MB script that
    would replace them with SVG is dropped from every page (:func:`_drop_fontawesome_js`).

Plotly outputs
    ``helpers.show.figure`` outputs a bundle with both
    ``application/vnd.plotly.v1+json`` (JupyterLab renders it live) and
    ``text/html``. myst-nb has no renderer for the Plotly mimetype and warns
    about it even when it then picks ``text/html``. :func:`read_notebook`,
    set as the ``.ipynb`` reader (``nb_custom_formats`` in ``_config.yml``),
    drops the Plotly mimetype from bundles that also carry ``text/html``, in
    memory only. A bundle with *only* the Plotly mimetype (a bare
    ``fig.show()``) is left alone, so it is still a warning (an error under
    ``-W``): the book cannot draw it.

MathJax
    Sphinx loads MathJax 3 from a CDN by default. When ``mathjax_path`` is
    local (``mathjax/tex-chtml.js`` in ``_config.yml``), the MathJax files of
    the ``sphinx-mathjax-offline`` package are copied to ``_static/mathjax/``. A page
    whose own text has no formula does not load MathJax (:func:`_mathjax_only_where_typeset`):
    Sphinx would load it on the landing page for the formulas of the chapters in its toctree.
    A local ``mathjax_path`` without that package installed is a build warning
    (an error under ``-W``) that says what to install.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.fileutil import copy_asset_file

logger = logging.getLogger(__name__)

PLOTLY_JS = "plotly.min.js"
PLOTLY_LOADER = "book_plotly.js"
NAV_JS = "book_nav.js"
TABLES_JS = "book_tables.js"
# Queues the figure outputs' calls until book_plotly.js has loaded plotly.min.js.
_QUEUE = ("window.__bookPlots = window.__bookPlots || []; window.__bookPlot = function () { "
          "var a = arguments; return new Promise(function (r) { window.__bookPlots.push([a, r]); }); };")
# pydata-sphinx-theme's inline script sets data-theme="auto" for a reader who has not
# chosen; its deferred script resolves it later. Resolved here, before the page draws.
_RESOLVE_AUTO = ("(function () { var d = document.documentElement; if (d.dataset.theme === 'auto' "
                 "&& window.matchMedia) { d.dataset.theme = window.matchMedia("
                 "'(prefers-color-scheme: dark)').matches ? 'dark' : 'light'; } })();")


PLOTLY_MIME = "application/vnd.plotly.v1+json"


def read_notebook(text: str):
    """myst-nb ``.ipynb`` reader: ``nbformat.reads(text, 4)``, then drop the Plotly
    mimetype from every output that also has ``text/html`` (see module docstring),
    and give a notebook without ``language_info`` the Python one."""
    import nbformat

    nb = nbformat.reads(text, as_version=4)
    # A notebook that was never executed (e.g. freshly converted by jupytext) has
    # no language_info, and myst-nb then warns "No source code lexer found" for
    # every code cell. Every notebook of this book is Python.
    if not nb.metadata.get("language_info"):
        nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and PLOTLY_MIME in data and "text/html" in data:
                del data[PLOTLY_MIME]
    return nb


def plotly_js_path() -> Path:
    """Path of ``plotly.min.js`` inside the installed ``plotly`` package."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly Python package is not installed: pip install -r requirements.txt")
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / PLOTLY_JS
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: the plotly package is incomplete, reinstall it")
    return path


def mathjax_dir() -> Path | None:
    """``static/mathjax`` of the ``sphinx-mathjax-offline`` package, or None."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    return path if (path / "tex-chtml.js").is_file() else None


def _mathjax_is_local(app: Sphinx) -> bool:
    mp = app.config.mathjax_path or ""
    return not (mp.startswith(("http://", "https://", "//")))


def _check(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    plotly_js_path()  # fail early with a clear message
    if _mathjax_is_local(app) and mathjax_dir() is None:
        logger.warning("mathjax_path=%r is local but the MathJax files are not installed: "
                       "pip install sphinx-mathjax-offline (see requirements.txt)",
                       app.config.mathjax_path, type="book_offline", subtype="mathjax")


# Long inline code (a PTX instruction name) may break anywhere rather than widen a
# narrow page past the screen; code blocks keep their own horizontal scroll.
BOOK_CSS = "book.css"
FIGURES_JS = "book_figures.js"
STATIC = Path(__file__).resolve().parent / "static"
# In dark mode pydata-sphinx-theme puts HTML outputs on a light card (for outputs drawn
# for a white page); a Plotly figure has a transparent background and takes the page's
# colours (book_figures.js), so its output stays on the page's own background; so does a
# figure drawn as inline SVG (helpers.figures.show.static_figure: the landing page's
# staircase), whose text and axes take the page's text colour.
_BOOK_CSS_TEXT = ("code.literal, code.literal span.pre { white-space: normal; overflow-wrap: anywhere; "
                  "word-break: break-word; }\n"
                  "html[data-theme=dark] .bd-content div.cell_output div.text_html:has(div.plotly-graph-div), "
                  "html[data-theme=dark] .bd-content div.cell_output div.text_html:has(figure.book-svg-figure) "
                  "{ background-color: transparent; color: inherit; padding: 0; }\n"
                  # a tooltip left up after a tap covers the buttons around it; the
                  # Plotly toolbar covers a figure's title and cannot be used by touch
                  "@media (hover: none) { .tooltip { display: none !important; } "
                  ".js-plotly-plot .modebar-container { display: none !important; } }\n"
                  ".tooltip { pointer-events: none; }\n"
                  # on a wide screen the sidebar has its own search field: the header bar
                  # above it held only a second one (its sidebar button is the hidden one that
                  # book_nav.js forwards clicks to, which still works hidden)
                  "@media (min-width: 992px) { .bd-header { display: none; } }\n"
                  # a printed result (a stream output: one line of findings) wraps at the
                  # page's edge instead of running off it; code cells keep their scroll
                  ".bd-content div.cell_output div.output.stream pre { white-space: pre-wrap; "
                  "overflow-wrap: anywhere; }\n"
                  # tables on a phone: smaller type and tighter cells, so that most fit the
                  # screen; one that still does not is drawn as cards (book_tables.js marks it
                  # .book-cards: one block per row, each cell after its column's header)
                  "@media (max-width: 600px) { .bd-content table.table { font-size: 0.78rem; line-height: 1.3; } "
                  ".bd-content table.table th, .bd-content table.table td { padding: 0.15rem 0.25rem; } "
                  ".bd-content table.book-cards, .bd-content table.book-cards tbody, "
                  ".bd-content table.book-cards tr, .bd-content table.book-cards td { display: block; width: 100%; } "
                  ".bd-content table.book-cards thead { display: none; } "
                  ".bd-content table.book-cards tr { border: 1px solid var(--pst-color-border, #ccc); "
                  "border-radius: 4px; margin: 0 0 0.5rem; padding: 0.2rem 0.4rem; } "
                  ".bd-content table.book-cards td { border: none; display: flex; justify-content: space-between; "
                  "gap: 0.6rem; text-align: right !important; padding: 0.05rem 0; } "
                  ".bd-content table.book-cards td::before { content: attr(data-label); font-weight: 600; "
                  "text-align: left; flex: 0 0 auto; max-width: 55%; } }\n"
                  # a long table on a phone (book_tables.js marks it): a box that scrolls down
                  # (and sideways), its header row and first column held in place, on opaque
                  # backgrounds
                  ".bd-content .book-scrollbox { max-height: 70vh; overflow: auto; "
                  "-webkit-overflow-scrolling: touch; "
                  "border: 1px solid var(--pst-color-border, #ccc); border-radius: 4px; }\n"
                  ".bd-content .book-scrollbox table.book-long { margin: 0; border-collapse: separate; "
                  "border-spacing: 0; }\n"
                  # a wide one: each column as wide as its content (no word broken to fit the
                  # screen), a long name wrapped at 10rem in the first column, 16rem elsewhere
                  ".bd-content .book-scrollbox table.book-wide { width: max-content; min-width: 100%; }\n"
                  ".bd-content table.book-wide th > *, .bd-content table.book-wide td > * { max-width: 16rem; }\n"
                  ".bd-content table.book-wide th:first-child > *, .bd-content table.book-wide td:first-child > * "
                  "{ max-width: 10rem; }\n"
                  ".bd-content table.book-long thead th { position: sticky; top: 0; z-index: 2; "
                  "background-color: var(--pst-color-table-heading-bg, var(--pst-color-surface)); "
                  "box-shadow: inset 0 -1px 0 var(--pst-color-border, #ccc); }\n"
                  ".bd-content table.book-long tbody td:first-child { position: sticky; left: 0; z-index: 1; "
                  "background-color: inherit; box-shadow: inset -1px 0 0 var(--pst-color-border, #ccc); }\n"
                  ".bd-content table.book-long tbody tr { background-color: var(--pst-color-background); }\n"
                  ".bd-content table.book-long tbody tr:nth-child(odd) { "
                  "background-color: var(--pst-color-table-row-zebra-low-bg, var(--pst-color-background)); }\n"
                  ".bd-content table.book-long tbody tr:nth-child(2n) { "
                  "background-color: var(--pst-color-table-row-zebra-high-bg, var(--pst-color-background)); }\n"
                  ".bd-content table.book-long thead th:first-child { left: 0; z-index: 3; "
                  "box-shadow: inset -1px -1px 0 var(--pst-color-border, #ccc); }\n"
                  ".bd-content p.book-scroll-note { font-size: 0.8rem; margin: 0.2rem 0; "
                  "color: var(--pst-color-text-muted, inherit); }\n")


def _copy_assets(app: Sphinx, exc: Exception | None) -> None:
    if exc is not None or app.builder.format != "html":
        return
    static = os.path.join(app.outdir, "_static")
    copy_asset_file(str(plotly_js_path()), static)
    with open(os.path.join(static, BOOK_CSS), "w") as f:
        f.write(_BOOK_CSS_TEXT)
    for name in (FIGURES_JS, PLOTLY_LOADER, NAV_JS, TABLES_JS):
        copy_asset_file(str(STATIC / name), static)
    mj = mathjax_dir()
    if _mathjax_is_local(app) and mj is not None:
        # The package ships a dozen combined builds (tex-svg.js, mml-chtml.js, ...);
        # copy only the one mathjax_path names, plus the components it loads on demand.
        entry = os.path.basename(app.config.mathjax_path)
        keep_top = {entry, "core.js", "loader.js", "startup.js", "latest.js"}

        def ignore(folder, names):
            if os.path.samefile(folder, mj):
                return [n for n in names if n.endswith(".js") and n not in keep_top]
            return []
        shutil.copytree(mj, os.path.join(static, "mathjax"), ignore=ignore, dirs_exist_ok=True)


def _dedupe_scripts(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Drop exact duplicates from the page's scripts. Some extensions that
    Jupyter Book loads (sphinx-thebe, sphinx-togglebutton) register their inline
    scripts twice, and a second ``const THEBE_JS_URL = ...`` is a SyntaxError
    in the console of every page."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    scripts[:] = kept


# A page has a figure when its body holds the div that ``helpers.figures.show.figure``
# (through plotly.io.to_html) leaves in a notebook output.
_FIGURE_DIV = re.compile(r"""<div\b[^>]*\bclass=["'][^"']*\bplotly-graph-div\b""")


def _is_plotly_script(js) -> bool:
    name = str(getattr(js, "filename", js) or "")
    body = (getattr(js, "attributes", {}) or {}).get("body", "")
    return name.endswith("/" + PLOTLY_LOADER) or name == PLOTLY_LOADER or body == _QUEUE


_SCRIPT = re.compile(r"(<script\b[^>]*>)(.*?)(</script>)", re.S)


def _plotly_only_where_drawn(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """On a page with a figure, write the outputs' ``Plotly.newPlot(`` calls as
    ``window.__bookPlot(`` (queued until book_plotly.js has loaded plotly.js); from a
    page without one, drop the queue and book_plotly.js."""
    scripts = context.get("script_files")
    body = context.get("body") or ""
    if _FIGURE_DIV.search(body):
        context["body"] = _SCRIPT.sub(
            lambda m: m.group(1) + m.group(2).replace("Plotly.newPlot(", "window.__bookPlot(") + m.group(3),
            body)
        return
    if scripts:
        scripts[:] = [js for js in scripts if not _is_plotly_script(js)]


def _is_mathjax_script(app: Sphinx, js) -> bool:
    name = str(getattr(js, "filename", js) or "")
    body = (getattr(js, "attributes", {}) or {}).get("body", "")
    path = app.config.mathjax_path or ""
    return bool(path) and name.split("?")[0].endswith(path) or body.startswith(("window.MathJax", "MathJax.Hub"))


def _mathjax_only_where_typeset(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Drop MathJax (and its config) from a page whose own text has no formula.

    Sphinx loads MathJax on a page when it or any page in its toctree has one, so the
    landing page, whose toctree holds every chapter, loads it for nothing (1.2 MB)."""
    from docutils import nodes

    scripts = context.get("script_files")
    if not scripts or doctree is None:
        return
    if any(True for _ in doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
        return
    scripts[:] = [js for js in scripts if not _is_mathjax_script(app, js)]


# pydata-sphinx-theme puts Font Awesome's SVG-replacing script (all of Font Awesome, 1.5 MB)
# in every page's <head>, "so that users can add custom icons". The theme's icons need it
# not: its stylesheet carries Font Awesome's CSS and web font, which draw the same icons.
_FONTAWESOME_JS = re.compile(r'[ \t]*<script\b[^>]*\bsrc="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>'
                             r'\s*</script>\n?')


def _note_page(app: Sphinx, pagename, templatename, context, doctree) -> None:
    app._book_pages = getattr(app, "_book_pages", set()) | {pagename}


def _drop_fontawesome_js(app: Sphinx, exc: Exception | None) -> None:
    """Remove the Font Awesome script tag from the pages written in this build."""
    if exc is not None or app.builder.format != "html":
        return
    for pagename in sorted(getattr(app, "_book_pages", ())):
        path = Path(app.builder.get_outfilename(pagename))
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            new = _FONTAWESOME_JS.sub("", text)
            if new != text:
                path.write_text(new, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    # Low priorities: in <head>, before the theme's and myst-nb's scripts.
    app.add_js_file(None, body=_RESOLVE_AUTO, priority=99)
    app.add_js_file(None, body=_QUEUE, priority=100)
    app.add_js_file(PLOTLY_LOADER, priority=600, defer="defer")
    app.add_js_file(NAV_JS, priority=600, defer="defer")
    app.add_js_file(TABLES_JS, priority=600, defer="defer")
    app.add_css_file(BOOK_CSS)
    app.connect("builder-inited", _check)
    app.connect("build-finished", _copy_assets)
    app.connect("html-page-context", _note_page)
    app.connect("build-finished", _drop_fontawesome_js)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _plotly_only_where_drawn, priority=901)
    # after sphinx.ext.mathjax's install_mathjax (priority 500) has added it
    app.connect("html-page-context", _mathjax_only_where_typeset, priority=902)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
