"""The built book: `jupyter-book build -W`, then every page in headless Chromium.

Two books are built, once each per test session (module-scoped fixtures):

* the real book (``_config.yml``, ``_toc.yml``, ``book/``), exactly as a reader
  builds it. Chapters listed in ``_toc.yml`` whose notebook is not written yet
  are left out of that build (through ``--toc`` with a filtered copy) and
  reported by ``test_toc_files_exist`` as a skip that names them;
* a probe book: the real ``_config.yml`` and ``_ext/`` with one notebook,
  executed here, that uses every display helper of ``helpers/figures/show.py``
  (two Plotly figures, one with a slider, kernel source, a table, a note,
  math). It checks the figure pipeline even while no chapter has a figure.

Each page is served from 127.0.0.1 and opened in the system Chromium driven
by Playwright. A page passes when it loads, ``window.Plotly`` exists where it
has figures, every ``.plotly-graph-div`` in its HTML is drawn (has a
``.main-svg``), and there are no console errors, no uncaught exceptions, no
failed or 4xx/5xx requests and no request to any host but the local server
(the book must work offline). Every page is opened a second time as on a
phone, 412 px wide and in the dark theme: no page is wider than the screen,
and every figure is drawn on a transparent or dark background with light text.

Tiers (tests/conftest.py): the fast tier opens :data:`FAST_PAGES` (the landing page, one
SIMT chapter, one Tensor Core chapter and the appendix) in both passes; ``pytest --full``
opens every page and builds the probe book. Each page opened prints a progress line.

Chromium: ``$BOOK_TEST_CHROMIUM``, else ``chromium`` on PATH, else
``/usr/bin/chromium`` (Debian: ``apt-get install chromium``). Never
``playwright install``: it downloads a browser. Without Chromium or Playwright
the browser tests skip with the reason, except under ``CI=true``, where they fail.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import queue
import re
import shutil
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import _progress
import _tier

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_MAX_BYTES = 1_500_000
BUILD_TIMEOUT_S = 900
QUIET_S = 1.0            # a page has settled when no request started or ended for this long
SETTLE_TIMEOUT_S = 30    # ... and it must settle within this
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The fast tier's pages: the landing page (and the root redirect), a SIMT chapter, a Tensor
# Core chapter and the appendix.
FAST_PAGES = ("index.html", "book/intro.html", "book/03_smem_tiling.html", "book/07_mma_sync.html",
              "book/11_pitfalls.html")
CDN_HINTS = re.compile(r"cdn\.plot\.ly|cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis|require\.min\.js")


# ------------------------------------------------------------------ helpers
def _jupyter_book() -> list[str]:
    exe = Path(sys.executable).with_name("jupyter-book")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("jupyter-book")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


def toc_entries(toc: dict) -> list[str]:
    """Every ``file:`` of a Jupyter Book toc (root first), as written there."""
    out = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                out.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)
    walk(toc)
    return out


def _exists(root: Path, docname: str) -> bool:
    p = root / docname
    return p.is_file() or any(p.with_name(p.name + s).is_file() for s in (".md", ".ipynb", ".rst"))


def _prune_toc(node, root: Path):
    """A copy of a toc node without the ``file:`` entries that do not exist."""
    if isinstance(node, list):
        kept = [_prune_toc(c, root) for c in node]
        return [c for c in kept if c is not None]
    if isinstance(node, dict):
        if "file" in node and not _exists(root, node["file"]):
            return None
        out = {}
        for k, v in node.items():
            out[k] = _prune_toc(v, root) if k in ("parts", "chapters", "sections") else v
            if k in ("parts", "chapters", "sections") and not out[k]:
                del out[k]
        return out
    return node


@dataclass
class Build:
    returncode: int
    log: str
    html: Path
    missing: list

    def pages(self) -> list[Path]:
        """Every HTML page of the site (not the files under _static/ etc.)."""
        skip = {"_static", "_sources", "_images", "_downloads", ".doctrees"}
        return sorted(p for p in self.html.rglob("*.html")
                      if not skip.intersection(p.relative_to(self.html).parts))


def build_book(src: Path, out: Path, toc: Path | None = None, config: Path | None = None) -> Build:
    """``jupyter-book build -W -n --keep-going --path-output out src`` (``--toc``, ``--config`` if given)."""
    cmd = _jupyter_book() + ["build", "-W", "-n", "--keep-going", "--path-output", str(out)]
    if toc is not None:
        cmd += ["--toc", str(toc)]
    if config is not None:
        cmd += ["--config", str(config)]
    cmd.append(str(src))
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    t0 = time.monotonic()
    _progress.say(f"jupyter-book build of {src.name}/")
    r = _progress.run(cmd, "jupyter-book build", cwd=src, timeout=BUILD_TIMEOUT_S, env=env)
    _progress.done("jupyter-book build", t0)
    return Build(r.returncode, r.stdout + r.stderr, out / "_build" / "html", [])


def _is_redirect(html: str) -> bool:
    """A page that only redirects (Jupyter Book's root index.html)."""
    return re.search(r"""http-equiv=["']refresh""", html, re.I) is not None


def _warnings(log: str) -> list[str]:
    return [ln for ln in log.splitlines() if re.search(r"\bWARNING\b|\bERROR\b|CRITICAL", ln)]


def chromium_path() -> str | None:
    for cand in (os.environ.get("BOOK_TEST_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _need_browser():
    """Skip (or, under CI=true, fail) when Chromium or Playwright is missing."""
    why = None
    if chromium_path() is None:
        why = ("no Chromium: set $BOOK_TEST_CHROMIUM or `apt-get install chromium` "
               "(do not `playwright install`: it downloads a browser)")
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            why = "Playwright is not installed: pip install -r requirements.txt"
    if why:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why + " (CI=true: the browser check must run)")
        pytest.skip(why)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class serve:
    """``with serve(directory) as base_url:`` a static HTTP server on 127.0.0.1."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


FIGURE_DIV = re.compile(r"""<div\b[^>]*\bclass=["'][^"']*\bplotly-graph-div\b""")
DRAWN_JS = """() => {
  const divs = Array.from(document.querySelectorAll('.plotly-graph-div'));
  return {divs: divs.length,
          drawn: divs.filter(d => d.classList.contains('js-plotly-plot') && d.querySelector('.main-svg')).length,
          plotly: typeof window.Plotly === 'object' && typeof window.Plotly.newPlot === 'function',
          math: document.querySelectorAll('mjx-container').length};
}"""
# The layout of a page as drawn: its width against the viewport's, the theme, and for
# each figure the colours it was drawn with and the background of the output around it.
LAYOUT_JS = r"""() => {
  const card = d => { let e = d.parentElement;
    while (e && !(e.classList && e.classList.contains('cell_output'))) {
      const bg = getComputedStyle(e).backgroundColor;
      if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') return bg;
      e = e.parentElement; }
    return 'rgba(0, 0, 0, 0)'; };
  const tables = Array.from(document.querySelectorAll('.bd-content table')).map(t => {
    let w = t.parentElement;
    while (w && w !== document.body && getComputedStyle(w).overflowX === 'visible') w = w.parentElement;
    const out = t.closest('.cell_output, .table-wrapper, section') || t.parentElement;
    return {width: Math.round(t.getBoundingClientRect().width), box: w ? w.clientWidth : 0,
            marked: /scrolls sideways/i.test(out.innerText || ''), long: !!t.closest('.book-scrollbox'),
            caption: (out.innerText || '').trim().slice(0, 60).replace(/\s+/g, ' ')}; });
  return {tables: tables, scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
          theme: document.documentElement.getAttribute('data-theme'),
          page: getComputedStyle(document.body).backgroundColor,
          figures: Array.from(document.querySelectorAll('.plotly-graph-div')).map(d => d._fullLayout ? {
            id: d.id, paper: d._fullLayout.paper_bgcolor, plot: d._fullLayout.plot_bgcolor,
            font: d._fullLayout.font.color, svg: getComputedStyle(d.querySelector('.main-svg')).backgroundColor,
            card: card(d), width: Math.round(d.getBoundingClientRect().right)} : {id: d.id})};
}"""
NARROW = {"width": 412, "height": 915}     # a phone (the measurements)
WIDE = {"width": 1280, "height": 900}     # a laptop
WIDE_TABLES_MAX = 5     # tables of the whole book that may scroll sideways at 412 px
FIRST_PAINT_MAX_MS = 1000
PAINT_WAIT_MS = 10_000      # how long to wait for a page's first paint before calling it missing
OPEN_CODE_LINES_MAX = 60


def check_in_chromium(build: Build, viewport: dict | None = None, dark: bool = False,
                      pages: tuple | None = None, log=None) -> dict:
    """Open every page of ``build`` in Chromium (at ``viewport``, in the dark theme when
    ``dark``), or only those of ``pages`` (paths relative to the site); ``log(line)`` is
    called once per page opened. Returns ``{page: info}`` where info has ``problems`` (a list of strings,
    empty when the page is fine), ``figures`` (divs in the HTML), ``drawn``, ``math``
    (typeset formulas), ``layout`` (:data:`LAYOUT_JS`), ``bytes`` (the size of every
    file the page loaded, summed) and ``files`` (their paths)."""
    from playwright.sync_api import sync_playwright

    report = {}
    with serve(build.html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(service_workers="block", viewport=viewport)
            if dark:    # what pydata-sphinx-theme's switch stores, read before the page draws
                context.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
            # Nothing may leave this machine: abort (and record) any non-local request.
            context.route(re.compile(r"^(?!" + re.escape(base) + r"|data:|blob:|about:).*"),
                          lambda route: route.abort("blockedbyclient"))
            for path in build.pages():
                rel = path.relative_to(build.html).as_posix()
                if pages is not None and rel not in pages:
                    continue
                t_page = time.monotonic()
                problems: list[str] = []
                page = context.new_page()
                inflight: dict = {}
                last = [0.0]
                loaded: dict = {}

                def done(r, files=loaded):
                    local = build.html / r.url[len(base):].split("#")[0].split("?")[0]
                    if r.url.startswith(base) and local.is_file():
                        files[local.relative_to(build.html).as_posix()] = local.stat().st_size

                page.on("requestfinished", done)

                def started(r, p=problems, f=inflight, t=last):
                    f[r] = r.url
                    t[0] = time.monotonic()
                    if not r.url.startswith((base, "data:", "blob:", "about:")):
                        p.append(f"request to another host: {r.url}")

                def ended(r, failed=False, p=problems, f=inflight, t=last):
                    f.pop(r, None)
                    t[0] = time.monotonic()
                    if failed:
                        p.append(f"request failed: {r.url} ({r.failure})")

                page.on("request", started)
                page.on("requestfinished", ended)
                page.on("requestfailed", functools.partial(ended, failed=True))
                page.on("response", lambda r, p=problems: p.append(f"HTTP {r.status}: {r.url}")
                        if r.status >= 400 else None)
                page.on("console", lambda m, p=problems: p.append(f"console {m.type}: {m.text}")
                        if m.type in ("error", "warning") or (m.type == "trace" and "WARN" in m.text)
                        else None)
                page.on("pageerror", lambda e, p=problems: p.append(f"uncaught exception: {e}"))
                text = path.read_text(errors="replace")
                redirect = _is_redirect(text)  # checked as the page it points to
                expected = len(FIGURE_DIV.findall(text))
                info = {"figures": expected, "drawn": 0, "math": 0}
                try:
                    resp = page.goto(base + rel, wait_until="load", timeout=60_000)
                    if resp is None or not resp.ok:
                        problems.append(f"page did not load: {resp.status if resp else 'no response'}")
                    # Settled: nothing in flight for QUIET_S (fonts, MathJax parts load late).
                    deadline = time.monotonic() + SETTLE_TIMEOUT_S
                    while inflight or time.monotonic() - last[0] < QUIET_S:
                        if time.monotonic() > deadline:
                            problems.append(f"requests still in flight after {SETTLE_TIMEOUT_S} s: "
                                            f"{sorted(inflight.values())}")
                            break
                        page.wait_for_timeout(100)
                    if expected and not redirect:
                        try:
                            page.wait_for_function(
                                "n => Array.from(document.querySelectorAll('.plotly-graph-div'))"
                                ".filter(d => d.querySelector('.main-svg')).length >= n",
                                arg=expected, timeout=15_000)
                        except Exception:
                            pass  # the count below says how many were drawn
                    state = page.evaluate(DRAWN_JS)
                    info.update(drawn=state["drawn"], math=state["math"])
                    if not redirect:
                        page.wait_for_timeout(300)        # book_figures.js restyles after drawing
                        info["layout"] = page.evaluate(LAYOUT_JS)
                        if expected and not state["plotly"]:
                            problems.append("window.Plotly is not defined")
                        if state["divs"] != expected:
                            problems.append(f"{expected} figure divs in the HTML, {state['divs']} in the page")
                        if state["drawn"] != expected:
                            problems.append(f"{state['drawn']} of {expected} Plotly figures drawn")
                except Exception as e:  # a timeout, a crash
                    problems.append(f"{type(e).__name__}: {e}")
                finally:
                    page.close()
                info["bytes"], info["files"] = sum(loaded.values()), sorted(loaded)
                info["problems"] = problems
                report[rel] = info
                if log is not None:
                    log(f"chromium{' 412 px dark' if dark else ''}: {rel} "
                        f"({info['drawn']}/{info['figures']} figures, {len(problems)} problems, "
                        f"{time.monotonic() - t_page:.1f} s)")
        finally:
            browser.close()
    return report


def _fail_report(report: dict) -> str:
    lines = []
    for rel, info in report.items():
        for p in info["problems"]:
            lines.append(f"{rel}: {p}")
    return "\n".join(lines)


# ----------------------------------------------------------------- the book
@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Build:
    """The real book, built once for this module."""
    out = tmp_path_factory.mktemp("book")
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    missing = [f for f in toc_entries(toc) if not _exists(REPO, f)]
    toc_arg = None
    if missing:
        toc_arg = out / "_toc_present.yml"
        toc_arg.write_text(yaml.safe_dump(_prune_toc(toc, REPO), sort_keys=False))
    b = build_book(REPO, out, toc_arg)
    b.missing = missing
    return b


def test_book_builds_without_warnings(book):
    """`jupyter-book build -W -n --keep-going .` succeeds with no warning."""
    assert book.returncode == 0 and not _warnings(book.log), (
        "jupyter-book build -W failed:\n" + "\n".join(_warnings(book.log)) + "\n--- log tail ---\n"
        + book.log[-4000:])


def test_toc_files_exist(book):
    """Every chapter in _toc.yml has its page (a missing one is reported, not built)."""
    if book.missing:
        pytest.skip("listed in _toc.yml but not written yet (left out of the build): "
                    + ", ".join(book.missing))


def test_every_toc_page_is_built(book):
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    for f in toc_entries(toc):
        if f not in book.missing:
            stem = re.sub(r"\.(md|ipynb|rst)$", "", f)
            assert (book.html / (stem + ".html")).is_file(), f"{f}: no {stem}.html in the build"


def test_plotly_js_once_per_site(book):
    """One plotly.min.js in _static/, loaded (by book_plotly.js) by every page that has a
    figure and by no other page, embedded in none."""
    copies = [p for p in book.html.rglob("plotly*.js")]
    assert [p.relative_to(book.html).as_posix() for p in copies] == ["_static/plotly.min.js"]
    assert (book.html / "_static" / "book_figures.js").is_file()
    with_figures = 0
    for page in book.pages():
        text = page.read_text(errors="replace")
        if _is_redirect(text):
            continue
        rel = page.relative_to(book.html).as_posix()
        n = 1 if FIGURE_DIV.search(text) else 0
        with_figures += n
        # plotly.min.js and book_figures.js are loaded by book_plotly.js after the first
        # paint; the outputs' calls are queued (window.__bookPlot) until then
        assert not re.search(r'<script[^>]+src="[^"]*_static/plotly\.min\.js', text), \
            f"{rel}: plotly.min.js in a <script> tag holds back the first paint"
        assert len(re.findall(r'<script[^>]+defer[^>]+src="[^"]*_static/book_plotly\.js', text)) == n, rel
        assert ("window.__bookPlots" in text) == bool(n), rel
        assert "Plotly.newPlot(" not in text, f"{rel}: a figure is drawn before plotly.js is loaded"
        assert "plotly.js v" not in text, f"{rel}: plotly.js is embedded in the page"
    assert with_figures, "no page has a figure"


def test_no_cdn_urls_in_pages(book):
    for page in book.pages():
        text = page.read_text(errors="replace")
        srcs = re.findall(r'<(?:script|link)\b[^>]*(?:src|href)="((?:https?:)?//[^"]+)"', text)
        assets = [s for s in srcs if not re.search(r"\.(html?)(#|$)", s)]
        assert not assets, f"{page.name}: loads assets from another host: {assets}"


@pytest.fixture(scope="module")
def in_chromium(book, request) -> dict:
    """Every page of the book in Chromium, once per module and per way of looking:
    ``{"desktop": the default viewport, "narrow_dark": 412 px wide in the dark theme}``
    (:func:`check_in_chromium`). The two passes are independent and each keeps about one
    core busy (Chromium drawing MathJax and Plotly), so with two cores or more they run at
    the same time, each with its own browser."""
    _need_browser()
    if book.returncode != 0:
        pytest.fail("the book did not build (see test_book_builds_without_warnings)")
    pages = None if _tier.full(request.config) else FAST_PAGES
    messages = queue.Queue()
    passes = {"desktop": {}, "narrow_dark": {"viewport": NARROW, "dark": True}}
    _progress.say(f"chromium: {'every page' if pages is None else f'{len(pages)} pages'} of the book, "
                  "desktop and 412 px dark")
    with ThreadPoolExecutor(max_workers=min(len(passes), os.cpu_count() or 1)) as ex:
        futures = {name: ex.submit(check_in_chromium, book, pages=pages, log=messages.put, **kw)
                   for name, kw in passes.items()}
        _progress.wait(futures.values(), "chromium", messages=messages)
        return {name: f.result() for name, f in futures.items()}


def test_book_pages_in_chromium(book, request):
    """Every page loads offline, has window.Plotly, draws all of its figures,
    and logs no errors."""
    _need_browser()
    if book.returncode != 0:
        pytest.fail("the book did not build (see test_book_builds_without_warnings)")
    report = request.getfixturevalue("in_chromium")["desktop"]
    assert report, "no HTML pages were built"
    assert not _fail_report(report), "\n" + _fail_report(report)


def _luminance(css: str) -> tuple:
    """(relative luminance 0..1, alpha) of a CSS colour: rgb()/rgba() or #rrggbb."""
    m = re.match(r"rgba?\(([^)]*)\)", css.replace(" ", ""))
    if m:
        parts = [float(v) for v in m.group(1).split(",")]
        r, g, b = parts[:3]
        a = parts[3] if len(parts) > 3 else 1.0
    elif re.fullmatch(r"#[0-9a-fA-F]{6}", css):
        r, g, b, a = int(css[1:3], 16), int(css[3:5], 16), int(css[5:7], 16), 1.0
    else:
        raise ValueError(f"colour {css!r}")
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255, a


def _dark_or_clear(css: str) -> bool:
    lum, alpha = _luminance(css)
    return alpha == 0 or lum < 0.25


@pytest.fixture(scope="module")
def narrow_dark(in_chromium) -> dict:
    """Every page in Chromium at 412 px wide, in the dark theme (once per module)."""
    return in_chromium["narrow_dark"]


def test_book_pages_at_412_px_dark(narrow_dark):
    """At 412 px and in the dark theme every page still loads cleanly and draws
    all its figures."""
    assert narrow_dark and not _fail_report(narrow_dark), "\n" + _fail_report(narrow_dark)


def test_no_page_wider_than_a_phone(narrow_dark):
    """At 412 px no page scrolls sideways (long inline code wraps, code blocks and
    wide tables scroll inside their own box, figures fit)."""
    wide = [f"{rel}: {i['layout']['scrollWidth']} px wide in a {i['layout']['viewport']} px viewport"
            for rel, i in narrow_dark.items() if "layout" in i
            and i["layout"]["scrollWidth"] > i["layout"]["viewport"]]
    figs = [f"{rel}: figure {f['id']} reaches x = {f['width']} px"
            for rel, i in narrow_dark.items() for f in (i.get("layout") or {}).get("figures", [])
            if f.get("width", 0) > i["layout"]["viewport"]]
    assert not wide and not figs, "\n".join(wide + figs)


def test_figures_follow_the_dark_theme(narrow_dark):
    """In the dark theme every figure has a transparent or dark background (paper,
    plot, its SVG and the output box around it) and light text."""
    bad, seen = [], 0
    for rel, info in narrow_dark.items():
        lay = info.get("layout")
        if not lay:
            continue
        if lay["theme"] != "dark":
            bad.append(f"{rel}: data-theme is {lay['theme']!r}, not dark")
        for f in lay["figures"]:
            seen += 1
            if "paper" not in f:
                bad.append(f"{rel}: figure {f['id']} was not drawn")
                continue
            for what in ("paper", "plot", "svg", "card"):
                if not _dark_or_clear(f[what]):
                    bad.append(f"{rel}: figure {f['id']}: {what} background {f[what]} in the dark theme")
            if _luminance(f["font"])[0] < 0.6:
                bad.append(f"{rel}: figure {f['id']}: text colour {f['font']} on a dark page")
    assert seen, "no figure was checked"
    assert not bad, "\n".join(bad)


def test_plotly_js_only_where_drawn(narrow_dark):
    """Pages without a figure do not load plotly.js; the weights are reported."""
    lines, bad = [], []
    for rel, info in sorted(narrow_dark.items()):
        if "layout" not in info:
            continue
        plotly = "_static/plotly.min.js" in info["files"]
        lines.append(f"{rel}: {info['bytes']:,} bytes in {len(info['files'])} files, "
                     f"{info['figures']} figures{', plotly.js' if plotly else ''}")
        if plotly != bool(info["figures"]):
            bad.append(f"{rel}: {info['figures']} figures, plotly.min.js loaded: {plotly}")
    print("\n".join(lines))
    assert not bad, "\n".join(bad)


def test_committed_notebooks_are_small_and_self_contained():
    """book/*.ipynb: < 1.5 MB, no ipywidgets state (myst-nb would load
    RequireJS and the widget manager from a CDN), no plotly.js inside, no CDN."""
    problems = []
    for nb in sorted((REPO / "book").glob("*.ipynb")):
        size = nb.stat().st_size
        if size >= NOTEBOOK_MAX_BYTES:
            problems.append(f"{nb.name}: {size} bytes (limit {NOTEBOOK_MAX_BYTES})")
        text = nb.read_text(errors="replace")
        data = json.loads(text)
        state = ((data.get("metadata", {}).get("widgets") or {})
                 .get("application/vnd.jupyter.widget-state+json") or {}).get("state")
        if state:
            problems.append(f"{nb.name}: carries ipywidgets state in its metadata "
                            "(JupyterLab: Settings > Save Widget State Automatically off, then clear it)")
        if "plotly.js v" in text:
            problems.append(f"{nb.name}: has plotly.js embedded in an output (use helpers.figures.show.figure)")
        if CDN_HINTS.search(text):
            problems.append(f"{nb.name}: refers to a CDN ({CDN_HINTS.search(text).group()})")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- the probe
PROBE_CELLS = [
    ("markdown", "# Probe\n\nA formula, typeset by the local MathJax: $2MNK$ FLOPs, and\n\n"
                 "$$\\text{AI} = \\frac{2MNK}{4(MK + KN + MN)}$$"),
    ("code", "import sys; sys.path.insert(0, {repo!r})\n"
             "import plotly.graph_objects as go\nfrom helpers.figures import show"),
    ("code", "fig = go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[1, 4, 9, 16], name='y = x^2'))\n"
             "fig.update_layout(title='probe: a line', height=300)\nshow.figure(fig)"),
    ("code", textwrap.dedent("""\
        # a figure with a Plotly slider: works in static HTML, no kernel
        steps = []
        fig = go.Figure()
        for i, bk in enumerate([8, 16, 32]):
            fig.add_bar(x=['a', 'b', 'c'], y=[bk, 2 * bk, 3 * bk], visible=(i == 0), name=f'BK={bk}')
            steps.append(dict(method='update', label=str(bk),
                              args=[{'visible': [j == i for j in range(3)]}]))
        fig.update_layout(sliders=[dict(steps=steps, currentvalue={'prefix': 'BK = '})], height=300)
        show.figure(fig)""")),
    ("code", "show.source({kernel_args})"),
    ("code", "show.table([{'kernel': 'naive', 'shape': (4096, 4096, 4096), 'TFLOP/s': 1.234},\n"
             "            {'kernel': 'vectorized', 'shape': (4096, 4096, 4096), 'TFLOP/s': 2.5}],\n"
             "           ['kernel', 'shape', 'TFLOP/s'], caption='Made-up numbers (probe page, not measured)')"),
    ("code", "show.note('Recorded mode: **no GPU** here, so `launch` is skipped.')"),
]


def _probe_source_args() -> str | None:
    """Arguments for the probe's show.source cell: one extern "C" entry of the
    first kernel file that has one (or the whole file), None without kernels."""
    for path in sorted((REPO / "kernels").glob("*.cu")):
        names = re.findall(r'extern\s+"C"[^;{]*?\b(?!__launch_bounds__\b)(\w+)\s*\(', path.read_text())
        if names:
            return f"{path.name!r}, entry={names[0]!r}"
    files = sorted((REPO / "kernels").glob("*.cu"))
    return repr(files[0].name) if files else None


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Build:
    """The probe book: the real _config.yml and _ext/, one executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    src = tmp_path_factory.mktemp("probe_src")
    shutil.copy(REPO / "_config.yml", src / "_config.yml")
    shutil.copytree(REPO / "_ext", src / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "book").mkdir()
    (src / "_toc.yml").write_text("format: jb-book\nroot: book/probe\n")
    cells = []
    kernel_args = _probe_source_args()
    for kind, text in PROBE_CELLS:
        text = text.replace("{repo!r}", repr(str(REPO)))
        if "{kernel_args}" in text:
            if kernel_args is None:
                continue
            text = text.replace("{kernel_args}", kernel_args)
        cells.append(nbformat.v4.new_markdown_cell(text) if kind == "markdown"
                     else nbformat.v4.new_code_cell(text))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(src / "book")}}).execute()
    nbformat.write(nb, src / "book" / "probe.ipynb")
    b = build_book(src, tmp_path_factory.mktemp("probe_out"))
    b.missing = []
    return b


@pytest.mark.full
def test_probe_builds_without_warnings(probe):
    assert probe.returncode == 0 and not _warnings(probe.log), (
        "\n".join(_warnings(probe.log)) + "\n--- log tail ---\n" + probe.log[-4000:])


@pytest.mark.full
def test_probe_figures_and_math_render_in_chromium(probe):
    """helpers.figures.show.figure output is drawn in the built book, offline."""
    _need_browser()
    assert probe.returncode == 0, probe.log[-4000:]
    report = check_in_chromium(probe)
    assert not _fail_report(report), "\n" + _fail_report(report)
    page = report["book/probe.html"]
    assert page["figures"] == 2 and page["drawn"] == 2, page
    assert page["math"] >= 2, f"MathJax typeset {page['math']} formulas, expected 2: {page}"
    html = (probe.html / "book" / "probe.html").read_text()
    if _probe_source_args() is not None:
        assert 'class="highlight-cuda' in html, "kernel source is not highlighted as CUDA"
    assert "<table" in html and "Made-up numbers" in html, "show.table did not render a table"
    assert 'class="admonition note"' in html, "show.note did not render"


# ------------------------------------------------------- a reader on a phone
def _figure_pages(book: Build, request) -> list[str]:
    rels = []
    for path in book.pages():
        rel = path.relative_to(book.html).as_posix()
        text = path.read_text(errors="replace")
        if FIGURE_DIV.search(text) and not _is_redirect(text):
            rels.append(rel)
    return rels if _tier.full(request.config) else [r for r in rels if r in FAST_PAGES]


@contextlib.contextmanager
def page_at(book, rel: str, viewport: dict, touch: bool = False, init_script: str | None = None,
            dark: bool = False):
    """A Chromium page of the built ``book`` at ``rel`` (served over HTTP), ``viewport``
    wide, a phone's touch screen with ``touch``, ``init_script`` run before the page's own,
    the reader's system set to dark with ``dark``; yields (page, context), closed after."""
    _need_browser()
    from playwright.sync_api import sync_playwright

    with serve(book.html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport=viewport, service_workers="block",
                                      color_scheme="dark" if dark else "light",
                                      **({"has_touch": True, "is_mobile": True} if touch else {}))
            if init_script:
                ctx.add_init_script(init_script)
            page = ctx.new_page()
            page.goto(base + rel, wait_until="load")
            yield page, ctx
        finally:
            browser.close()


FIGURES_DRAWN = ("() => document.querySelectorAll('.js-plotly-plot').length > 0 && "
                 "Array.from(document.querySelectorAll('.js-plotly-plot')).every(g => g._fullLayout && g.__bookFits)")


def test_phone_navigation_by_touch(book):
    """At 412 px on a touch screen the article header's sidebar button opens the site
    navigation, a link in it leads to its chapter, and no tooltip is left over the
    search button (pydata-sphinx-theme 0.17 / sphinx-book-theme 1.3 bind the toggles to
    a hidden button; _ext/static/book_nav.js)."""
    with page_at(book, "book/03_smem_tiling.html", NARROW, touch=True) as (page, _):
        toggle = page.locator(".bd-header-article .primary-toggle")
        assert toggle.is_visible(), "no visible sidebar button in the article header at 412 px"
        page.wait_for_function("() => document.readyState === 'complete'", timeout=15_000)
        toggle.tap()
        page.wait_for_function("() => document.querySelector('#pst-primary-sidebar-modal').open", timeout=15_000)
        link = page.locator("#pst-primary-sidebar-modal a.reference.internal[href*='07_mma_sync']").first
        assert link.is_visible(), "the opened navigation shows no link to chapter 7"
        link.tap()
        # the link was followed once the new page's document is parsed; its figures may load later
        page.wait_for_url(re.compile(r".*/07_mma_sync\.html.*"), timeout=30_000, wait_until="domcontentloaded")
        # the search button takes a tap: nothing (a tooltip) lies over its centre
        page.locator(".bd-header-article .primary-toggle").tap()
        page.keyboard.press("Escape")
        on_top = page.evaluate("""() => { const b = Array.from(document.querySelectorAll('.search-button'))
            .find(e => e.offsetParent); if (!b) return 'no visible search button';
          const r = b.getBoundingClientRect();
          const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          return b.contains(e) ? '' : 'covered by ' + (e ? e.className : 'nothing'); }""")
        assert not on_top, f"search button: {on_top}"


def test_a_swipe_over_a_figure_scrolls_the_page_on_a_phone(book):
    """At 412 px on a touch screen a vertical swipe that starts on a Plotly figure scrolls
    the page (dragmode false, _ext/static/book_plotly.js): with Plotly's default
    dragmode "zoom" the same swipe zooms the figure's axes and the page stays put."""
    with page_at(book, "book/09_any_shape.html", NARROW, touch=True) as (page, ctx):
        page.wait_for_function(FIGURES_DRAWN, timeout=60_000)
        modes = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                              ".map(g => g._fullLayout.dragmode)")
        assert modes and all(m is False for m in modes), f"dragmode on a touch screen: {modes}"
        cdp = ctx.new_cdp_session(page)

        def swipe() -> float:
            """A finger drags 200 px up from the middle of the first figure's plot area;
            returns how far the page scrolled."""
            box = page.evaluate("""() => { const g = document.querySelector('.js-plotly-plot .nsewdrag');
                g.scrollIntoView({block: 'center'}); const r = g.getBoundingClientRect();
                return {x: r.left + r.width / 2, y: r.top + r.height / 2, scroll: window.scrollY}; }""")
            x, y = box["x"], box["y"]
            cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
            for i in range(1, 11):
                cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - 20 * i}]})
                page.wait_for_timeout(16)
            cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            page.wait_for_timeout(500)
            return page.evaluate("() => window.scrollY") - box["scroll"]

        moved = swipe()
        assert moved > 50, f"a swipe over the figure scrolled the page by {moved} px"
        # the control: the same swipe with Plotly's default dragmode zooms and does not scroll
        page.evaluate("() => Plotly.relayout(document.querySelector('.js-plotly-plot'), {dragmode: 'zoom'})")
        control = swipe()
        assert control < 10, f"control (dragmode zoom) scrolled by {control} px: the swipe does not test the fix"


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280px", "412px"])
def test_no_plot_squashed_by_its_legend(book, viewport):
    """A legend of many entries under a plot wraps into rows and Plotly takes their room
    from the plot: chapter 10's roofline (14 entries) kept an 88 px plot at 1280 px. The
    figure grows instead (_ext/static/book_figures.js, plotHeightLost): every plot area of
    chapter 10 is at least 100 px tall."""
    with page_at(book, "book/10_hopper.html", viewport) as (page, _):
        page.wait_for_function(FIGURES_DRAWN, timeout=60_000)
        page.wait_for_timeout(3000)          # the fitting rounds after the first
        plots = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                              ".map(g => [(g._fullLayout.title.text || '').split('<br>')[0], "
                              "Math.round(g._fullLayout._size.h)])")
        low = [p for p in plots if p[1] < 100]
        assert plots and not low, f"plot areas under 100 px: {low}"


def test_printed_results_wrap_on_a_phone(book):
    """At 412 px a printed result (a stream output) wraps at the page's edge: none of the
    chapter 5 outputs scrolls sideways or is cut (book.css, _ext/book_offline.py)."""
    with page_at(book, "book/05_register_tiling.html", NARROW) as (page, _):
        pres = "document.querySelectorAll('div.cell_output div.output.stream pre')"
        cut = page.evaluate(f"() => Array.from({pres}).filter(p => p.scrollWidth > p.clientWidth + 1)"
                            ".map(p => p.textContent.trim().slice(0, 60))")
        n = page.evaluate(f"() => {pres}.length")
        assert n > 0 and not cut, f"{len(cut)} of {n} printed outputs run past the edge: {cut[:5]}"


def test_first_paint_of_figure_pages_from_disk(book, request):
    """Every page with a figure paints its text within FIRST_PAINT_MAX_MS when opened
    from disk (file://): plotly.min.js is loaded after the first paint
    (_ext/static/book_plotly.js). Prints the first contentful paint of each page."""
    _need_browser()
    from playwright.sync_api import sync_playwright

    rels, lines, slow = _figure_pages(book, request), [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport=NARROW)
            for rel in rels:
                page = ctx.new_page()
                page.goto((book.html / rel).as_uri(), wait_until="load")
                # 'load' may fire before the first paint on a busy machine: wait for the
                # paint entry (a buffered observer sees one that came before it), -1 if none
                ms = page.evaluate("""(limit) => new Promise(done => {
                    const find = () => performance.getEntriesByType('paint')
                        .find(e => e.name === 'first-contentful-paint');
                    if (find()) return done(find().startTime);
                    new PerformanceObserver(() => { if (find()) done(find().startTime); })
                        .observe({type: 'paint', buffered: true});
                    setTimeout(() => done(find() ? find().startTime : -1), limit); })""",
                    PAINT_WAIT_MS)
                page.close()
                lines.append(f"{rel}: first contentful paint {ms:.0f} ms")
                if ms < 0 or ms > FIRST_PAINT_MAX_MS:
                    slow.append(lines[-1])
        finally:
            browser.close()
    print("\n".join(lines))
    assert rels, "no page with a figure"
    assert not slow, "\n".join(slow)


def test_tables_fit_a_phone(narrow_dark, request):
    """At 412 px a table fits the screen, or its caption says that it scrolls sideways;
    at most WIDE_TABLES_MAX of those in the whole book, long tables (more than 30 rows: they
    scroll in a box of their own, which says so; book_tables.js) counted among them."""
    unmarked, marked, long = [], [], []
    for rel, info in sorted(narrow_dark.items()):
        for t in (info.get("layout") or {}).get("tables", []):
            if t["width"] > t["box"] + 1:
                (unmarked if not t["marked"] else long if t.get("long") else marked).append(
                    f"{rel}: {t['width']} px in {t['box']} px: {t['caption']}")
    print(f"{len(unmarked) + len(marked) + len(long)} tables scroll sideways at 412 px "
          f"({len(long)} of them long tables in their scroll box)")
    problems = [f"scrolls sideways without saying so: {u}" for u in unmarked]
    if len(marked) + len(long) > WIDE_TABLES_MAX:
        problems.append(f"{len(marked) + len(long)} tables are marked to scroll (at most {WIDE_TABLES_MAX}):\n"
                        + "\n".join(marked + long))
    assert not problems, "\n".join(problems)


_DETAILS = re.compile(r"<details\b.*?</details>", re.S)
_PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.S)


def open_code_lines(html_text: str) -> tuple:
    """(lines of code shown open before the page's first figure, the longest open
    listing) of a built page: <pre> blocks outside <details>."""
    text = _DETAILS.sub("", html_text)
    m = FIGURE_DIV.search(text)
    before = text[:m.start()] if m else text
    count = lambda block: block.strip("\n").count("\n") + 1  # noqa: E731
    return (sum(count(b) for b in _PRE.findall(before)),
            max((count(b) for b in _PRE.findall(text)), default=0))


# Pages allowed more code before their first figure, each with why (issue #24 left open).
CODE_FIRST: dict = {}          # page -> why it may show more code than that before its first figure


def test_prose_before_code(book):
    """No page shows a listing of more than OPEN_CODE_LINES_MAX lines open, nor more than
    that many lines of code before its first figure (show.source folds a long listing)."""
    bad = []
    for path in book.pages():
        text = path.read_text(errors="replace")
        if _is_redirect(text):
            continue
        before, longest = open_code_lines(text)
        rel = path.relative_to(book.html).as_posix()
        if before > OPEN_CODE_LINES_MAX and rel not in CODE_FIRST:
            bad.append(f"{rel}: {before} lines of code open before the first figure")
        if longest > OPEN_CODE_LINES_MAX:
            bad.append(f"{rel}: a listing of {longest} lines is open")
    assert not bad, "\n".join(bad)


def test_open_code_lines_counts_what_is_open():
    html_text = ("<pre>a\nb</pre><details><summary>x</summary><pre>" + "l\n" * 100 + "</pre></details>"
                 "<div class=\"plotly-graph-div\"></div><pre>" + "c\n" * 70 + "</pre>")
    assert open_code_lines(html_text) == (2, 70)


# --------------------------------------------------- text inside each figure
# Every visible SVG text element of every figure (hover labels aside): one that leaves
# the figure's box, and two whose boxes overlap (by more than 2 px each way; two tick
# labels that Plotly rotated are compared by their rotated extent, not their boxes).
FIGURE_TEXT_JS = """() => {
  const out = [];
  const shown = (t, gd) => { for (let e = t; e && e !== gd; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false; }
    return true; };
  document.querySelectorAll('.plotly-graph-div').forEach(gd => {
    const svg = gd.querySelector('.main-svg');
    const box = (svg || gd).getBoundingClientRect();
    if (!box.width) return;
    const texts = [];
    gd.querySelectorAll('svg text').forEach(t => {
      if (t.closest('.hoverlayer') || !t.textContent.trim() || !shown(t, gd)) return;
      const r = t.getBoundingClientRect();
      if (!r.width || !r.height) return;
      texts.push({t: t.textContent.trim().slice(0, 50), r: r, el: t,
                  rotated: /rotate\\(\\s*-?[1-9]/.test(t.getAttribute('transform') || '')});
    });
    texts.forEach(a => {
      const over = [box.left - a.r.left, a.r.right - box.right, box.top - a.r.top, a.r.bottom - box.bottom];
      if (Math.max.apply(null, over) > 1.5)
        out.push({fig: gd.id, what: 'leaves the figure by ' + Math.round(Math.max.apply(null, over)) + ' px',
                  text: a.t});
    });
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const A = texts[i], B = texts[j];
      if (A.rotated && B.rotated) {
        // rotated tick labels: their baselines must be a line height apart along x
        const ca = (A.r.left + A.r.right) / 2, cb = (B.r.left + B.r.right) / 2;
        const fs = parseFloat(getComputedStyle(A.el).fontSize) || 12;
        if (Math.abs(ca - cb) < 0.9 * fs && Math.min(A.r.bottom, B.r.bottom) - Math.max(A.r.top, B.r.top) > 2)
          out.push({fig: gd.id, what: 'overlap', text: A.t + ' / ' + B.t});
        continue;
      }
      const w = Math.min(A.r.right, B.r.right) - Math.max(A.r.left, B.r.left);
      const h = Math.min(A.r.bottom, B.r.bottom) - Math.max(A.r.top, B.r.top);
      if (w > 2 && h > 2 && !A.el.contains(B.el) && !B.el.contains(A.el))
        out.push({fig: gd.id, what: 'overlap', text: A.t + ' / ' + B.t});
    }
  });
  return out;
}"""


def figure_text_defects(url: str, viewport: dict, settle_ms: int = 1500) -> list:
    """:data:`FIGURE_TEXT_JS` on the page at ``url`` in Chromium at ``viewport``, after
    its figures are drawn and restyled: a list of ``{fig, what, text}``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport=viewport).new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function("() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
                                   ".every(d => d.querySelector('.main-svg'))", timeout=20_000)
            page.wait_for_timeout(settle_ms)
            return page.evaluate(FIGURE_TEXT_JS)
        finally:
            browser.close()


@pytest.mark.full
@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280px", "412px"])
def test_figure_text_fits_and_does_not_overlap(book, request, viewport):
    """Every figure of the book, at 1280 px and at 412 px: no SVG text element leaves the
    figure's box or overlaps another (:data:`FIGURE_TEXT_JS`)."""
    _need_browser()
    bad = []
    with serve(book.html) as base:
        for rel in _figure_pages(book, request):
            for d in figure_text_defects(base + rel, viewport):
                bad.append(f"{rel} {d['fig']}: {d['what']}: {d['text']}")
    assert not bad, f"{len(bad)} text defects:\n" + "\n".join(bad[:200])


def test_figure_text_check_catches_a_planted_overlap(tmp_path):
    """The check of the test above fails on a figure made wrong on purpose (two notes at
    one place, a note past the right edge) and passes on the same figure made right."""
    _need_browser()
    import plotly.io as pio

    shutil.copy(Path(pio.__file__).resolve().parents[1] / "package_data" / "plotly.min.js", tmp_path)

    def page(name, notes):
        fig = {"data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2]}],
               "layout": {"width": 400, "height": 300, "annotations": notes}}
        (tmp_path / name).write_text(
            "<html><body><script src='plotly.min.js'></script><div id='g' class='plotly-graph-div'></div>"
            f"<script>Plotly.newPlot('g', {json.dumps(fig)});</script></body></html>")
        return (tmp_path / name).as_uri()

    note = dict(xref="paper", yref="paper", showarrow=False, text="a note of some length")
    bad = figure_text_defects(page("bad.html", [dict(note, x=0.5, y=0.5), dict(note, x=0.52, y=0.5),
                                                dict(note, x=1.6, y=0.9, text="past the edge")]),
                              {"width": 600, "height": 400}, settle_ms=200)
    assert any(d["what"] == "overlap" for d in bad), bad
    assert any(d["what"].startswith("leaves the figure") for d in bad), bad
    good = figure_text_defects(page("good.html", [dict(note, x=0.5, y=0.5), dict(note, x=0.5, y=0.2)]),
                               {"width": 600, "height": 400}, settle_ms=200)
    assert good == [], good


# ------------------------------------------------------------ names on axes
# Each figure's layout as its page first drew it, kept before book_figures.js changes it:
# Plotly.relayout is wrapped as soon as plotly.min.js sets window.Plotly.
KEEP_FIRST_LAYOUT_JS = """(() => { let P;
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => P, set: v => {
    P = v;
    if (v && v.relayout && !v.relayout.__kept) {
      const relayout = v.relayout;
      v.relayout = function (gd) {
        const g = typeof gd === 'string' ? document.getElementById(gd) : gd;
        if (g && g.layout && !g.__firstLayout) g.__firstLayout = JSON.parse(JSON.stringify(g.layout));
        return relayout.apply(this, arguments);
      };
      v.relayout.__kept = true;
    }
  }});
})();"""
# Names on an axis (a category axis, or listed ticks whose labels are not all numbers),
# from the figure's data and its first layout: each must be drawn, none may overlap
# another text of its figure or another panel, none may be under 9 px.
AXIS_NAMES_JS = r"""() => {
  const NUMBER = /^[\s\u2212+-]*(\d[\d,]*\.?\d*|\.\d+)(e[\u2212+-]?\d+)?\s*[kMGTP%\u00d7x]?\s*$/i;
  const plain = s => String(s).replace(/<br\s*\/?>/gi, ' ').replace(/<[^>]*>/g, '').replace(/&[#\w]+;/g, 'x')
    .replace(/\s+/g, '');
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                        Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((gd, gi) => {
    const fl = gd._fullLayout, first = gd.__firstLayout || gd.layout;
    const fig = gi + ': ' + ((fl.title && fl.title.text) || '').split('<br>')[0].slice(0, 50);
    const box = gd.getBoundingClientRect();
    const names = Object.keys(fl).filter(k => /^[xy]axis\d*$/.test(k));
    const panels = names.filter(n => n[0] === 'x' && fl[n].anchor && fl['yaxis' + fl[n].anchor.slice(1)])
      .map(n => { const xa = fl[n], ya = fl['yaxis' + xa.anchor.slice(1)];
        return {x: xa._id, y: ya._id, left: box.left + xa._offset, right: box.left + xa._offset + xa._length,
                top: box.top + ya._offset, bottom: box.top + ya._offset + ya._length}; });
    const texts = Array.from(gd.querySelectorAll('svg text')).filter(t => !t.closest('.hoverlayer') &&
      t.textContent.trim() && getComputedStyle(t).display !== 'none');
    names.forEach(n => {
      const ax = fl[n], lay = first[n] || {};
      if (!ax || ax.visible === false || ax.showticklabels === false || !ax.range) return;
      const lo = Math.min(ax.range[0], ax.range[1]), hi = Math.max(ax.range[0], ax.range[1]);
      let want;
      if (lay.tickmode === 'array' && Array.isArray(lay.tickvals)) {
        const tt = Array.isArray(lay.ticktext) ? lay.ticktext : lay.tickvals.map(String);
        if (!tt.some(t => t !== '' && t != null && !NUMBER.test(plain(t)))) return;     // a scale
        want = lay.tickvals.map((v, i) => [ax.d2l(v), tt[i]])
          .filter(p => p[0] >= lo - 1e-9 && p[0] <= hi + 1e-9 && p[1] !== '' && p[1] != null).map(p => plain(p[1]));
      } else if (ax.type === 'category' || ax.type === 'multicategory') {
        want = (ax._categories || []).filter((c, i) => i >= lo && i <= hi).map(plain);
      } else return;
      const labels = Array.from(gd.querySelectorAll('.' + ax._id + 'tick text')).filter(t => texts.includes(t));
      const drawn = labels.map(t => plain(t.textContent));
      const missing = want.filter(w => !drawn.includes(w));
      if (missing.length) out.push(`${fig}: ${n}: ${missing.length} of ${want.length} names not drawn (${missing.slice(0, 3).join(', ')})`);
      labels.forEach((t, i) => {
        const px = parseFloat(getComputedStyle(t).fontSize);
        if (px < 8.95) out.push(`${fig}: ${n}: ${drawn[i]} set in ${px} px`);
        const r = t.getBoundingClientRect();
        texts.forEach(o => { if (o !== t && !o.contains(t) && !t.contains(o) && (labels.indexOf(o) > i || labels.indexOf(o) < 0) &&
                                 hit(r, o.getBoundingClientRect())) out.push(`${fig}: ${n}: ${drawn[i]} overlaps ${o.textContent.trim().slice(0, 30)}`); });
        panels.forEach(p => { if (p.x !== ax._id && p.y !== ax._id && hit(r, p))
          out.push(`${fig}: ${n}: ${drawn[i]} lies over the panel ${p.x}${p.y}`); });
      });
    });
  });
  return out;
}"""
# (page, why): the figures whose names were lost or piled up
AXIS_NAME_PAGES = (("book/07_mma_sync.html", "the rung chart"), ("book/10_hopper.html", "the Hopper ladder"),
                   ("book/09_any_shape.html", "the shape zoo's heatmap columns"))


def settle_figures(page, timeout_s: float = 15.0):
    """Wait until every figure is drawn and book_figures.js has stopped changing them
    (the figures' heights, margins and tick fonts the same over 0.6 s)."""
    page.wait_for_function(FIGURES_DRAWN, timeout=60_000)
    sig = ("() => JSON.stringify(Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => "
           "[g._fullLayout.height, g._fullLayout.margin, Array.from(g.querySelectorAll('.xtick text, .ytick text'))"
           ".map(t => t.style.fontSize + t.getAttribute('transform')).join()]))")
    last, t0 = None, time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        page.wait_for_timeout(600)
        now = page.evaluate(sig)
        if now == last:
            return
        last = now


@pytest.mark.full
@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280px", "412px"])
def test_names_on_axes_are_all_drawn(book, viewport):
    """Names along an axis (a bar's rung, a heatmap's column or row) are never thinned
    away: on chapter 7's rung chart, chapter 10's Hopper ladder and chapter 9's shape-zoo
    heatmaps (and every other figure of those pages), each name in the figure's data is
    drawn, overlaps no other text and no other panel, and is at least 9 px
    (:data:`AXIS_NAMES_JS`; _ext/static/book_figures.js turns, shrinks, joins lines or
    gives room, and thins numbers only)."""
    bad = []
    for rel, what in AXIS_NAME_PAGES:
        with page_at(book, rel, viewport, init_script=KEEP_FIRST_LAYOUT_JS) as (page, _):
            settle_figures(page)
            bad += [f"{rel} ({what}, or another figure of it): {d}" for d in page.evaluate(AXIS_NAMES_JS)]
    assert not bad, f"{len(bad)} problems with names on axes:\n" + "\n".join(bad[:60])


# --------------------------------------------------------- the phone's drawer
# Visible elements of the open drawer whose own text is the book's title (the deepest
# element that holds it: a link's <p>, not the link and the <p> both).
TITLE_IN_DRAWER_JS = """(title) => {
  const norm = s => s.replace(/\\s+/g, ' ').trim().toLowerCase();
  const m = document.querySelector('#pst-primary-sidebar-modal');
  const shown = e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden';
  return Array.from(m.querySelectorAll('*')).filter(e => shown(e) && norm(e.textContent) === norm(title) &&
      !Array.from(e.children).some(c => norm(c.textContent) === norm(title)))
    .map(e => e.tagName.toLowerCase() + '.' + (e.className || '') + ' in .' + (e.parentElement.className || '')); }"""


def test_phone_drawer_lists_the_title_once(book):
    """At 412 px on a touch screen the drawer that the sidebar button opens shows the
    book's title once (the title heading the drawer; no toc entry of the same name under
    it: ``home_page_in_navbar: false`` in _config.yml), on a chapter and on the landing page."""
    title = yaml.safe_load((REPO / "_config.yml").read_text())["title"]
    bad = []
    for rel in ("book/03_smem_tiling.html", "book/intro.html"):
        with page_at(book, rel, NARROW, touch=True) as (page, _):
            page.wait_for_function("() => document.readyState === 'complete'", timeout=15_000)
            page.locator(".bd-header-article .primary-toggle").tap()
            page.wait_for_function("() => document.querySelector('#pst-primary-sidebar-modal').open", timeout=15_000)
            found = page.evaluate(TITLE_IN_DRAWER_JS, title)
            if len(found) != 1:
                bad.append(f"{rel}: the title {title!r} {len(found)} times in the drawer: {found}")
    assert not bad, "\n".join(bad)


VISIBLE_SEARCH_FIELDS_JS = """() => Array.from(document.querySelectorAll('.search-button-field, .bd-search'))
    .filter(e => { const r = e.getBoundingClientRect();
                   return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden'; }).length"""
SIDEBAR_HIDDEN_JS = "() => getComputedStyle(document.querySelector('#pst-primary-sidebar')).visibility === 'hidden'"


def test_one_search_field_on_a_wide_screen(book):
    """At 1280 px a page shows one search field (the sidebar's), not a second one in a header
    bar of its own above it; the article's sidebar button still folds the sidebar away and
    Ctrl+K still opens the search."""
    with page_at(book, "book/03_smem_tiling.html", WIDE) as (page, _):
        page.wait_for_function("() => document.readyState === 'complete'", timeout=15_000)
        n = page.evaluate(VISIBLE_SEARCH_FIELDS_JS)
        assert n == 1, f"{n} search fields shown at 1280 px"
        page.locator(".bd-header-article .primary-toggle").click()
        page.wait_for_function(SIDEBAR_HIDDEN_JS, timeout=10_000)
        search_open = "() => !!document.querySelector('.search-button__wrapper.show, dialog[open]')"
        assert not page.evaluate(search_open), "a search dialog was open before Ctrl+K"
        page.keyboard.press("Control+k")
        page.wait_for_function(search_open, timeout=10_000)


# ------------------------------------------------------ a long table on a phone
# The 52-row end-to-end table of chapter 9 at 412 px: what it takes of the page, whether
# it is cards, and what stays in view once its box is scrolled to the far right and down.
LONG_TABLE_JS = """() => {
  const t = Array.from(document.querySelectorAll('.bd-content table')).find(t =>
    t.querySelectorAll('tbody tr').length >= 50 && /gemm\\(\\) \\/ cuBLAS/.test(t.tHead ? t.tHead.textContent : ''));
  if (!t) return null;
  let box = t;
  for (let e = t.parentElement; e && e !== document.body; e = e.parentElement)
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowY)) { box = e; break; }
  box.scrollIntoView({block: 'start'});
  const height = box.getBoundingClientRect().height;
  const row = t.tBodies[0].rows[20], cell = row.cells[0], head = t.tHead.rows[0].cells[0];
  const seen = c => { const r = c.getBoundingClientRect(), b = box.getBoundingClientRect();
    const e = document.elementFromPoint(r.left + Math.min(8, r.width / 2), r.top + r.height / 2);
    return {text: c.textContent.trim(), inBox: r.left >= b.left - 1 && r.right <= b.right + 1,
            onTop: !!e && c.contains(e)}; };
  const alpha = c => { const m = getComputedStyle(c).backgroundColor.match(/[\\d.]+/g) || [];
    return m.length > 3 ? +m[3] : (m.length ? 1 : 0); };
  const before = seen(cell);
  box.scrollLeft = box.scrollWidth;
  box.scrollTop = row.offsetTop - 60;
  return {height: height, viewport: window.innerHeight, cards: t.classList.contains('book-cards') ||
            getComputedStyle(t.tHead).display === 'none',
          sideways: box.scrollLeft, down: box.scrollTop, before: before,
          first: seen(cell), head: seen(head), opaque: [alpha(cell), alpha(head)],
          short: Array.from(document.querySelectorAll('.bd-content table')).filter(s =>
            s.querySelectorAll('tbody tr').length <= 12).map(s => ({cards: s.classList.contains('book-cards'),
            boxed: !!s.closest('.book-scrollbox')}))};
}"""


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_long_table_scrolls_in_its_box_on_a_phone(book, dark):
    """At 412 px chapter 9's 52-row end-to-end table is not drawn as cards (12,000 px of
    them): it scrolls in a box less than a screen high, and once the box is scrolled to
    its far right and down, the row's first cell (what the row is about) and the header
    are still in view, on opaque backgrounds, in the light and the dark theme. Short
    tables keep what they did (cards where they do not fit; book_tables.js, book.css)."""
    with page_at(book, "book/09_any_shape.html", NARROW, touch=True, dark=dark) as (page, _):
        page.wait_for_function("() => document.readyState === 'complete'", timeout=15_000)
        page.wait_for_timeout(300)
        assert page.evaluate("() => document.documentElement.dataset.theme") == ("dark" if dark else "light")
        r = page.evaluate(LONG_TABLE_JS)
        assert r is not None, "no table of 50 rows or more with a 'gemm() / cuBLAS' column in chapter 9"
    problems = []
    if r["cards"]:
        problems.append("drawn as cards")
    if not r["height"] < 1.0 * r["viewport"]:
        problems.append(f"{r['height']:.0f} px high on a {r['viewport']} px screen")
    if r["sideways"] < 100 or r["down"] < 100:
        problems.append(f"its box scrolled only {r['sideways']} px sideways and {r['down']} px down")
    if not (r["first"]["onTop"] and r["head"]["onTop"]):
        problems.append(f"scrolled to the right and down: first cell {r['first']}, header {r['head']}")
    if min(r["opaque"]) < 1:
        problems.append(f"the cells held in place are see-through (alpha {r['opaque']})")
    if any(s["boxed"] for s in r["short"]) or not any(s["cards"] for s in r["short"]):
        problems.append(f"short tables changed: {r['short']}")
    assert not problems, "chapter 9's 52-row table at 412 px: " + "; ".join(problems)
