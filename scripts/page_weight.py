"""What a first visit to a page of the built book downloads, file by file (CPU only).

    python scripts/page_weight.py                        # book/intro.html of _build/html
    python scripts/page_weight.py book/08_profiling.html --top 5
    python scripts/page_weight.py --screenshots DIR book/intro.html book/08_profiling.html

Serves ``_build/html`` (``jupyter-book build .`` first) from 127.0.0.1, opens each page
in headless Chromium (``/usr/bin/chromium`` or ``$BOOK_TEST_CHROMIUM``, driven by
Playwright; never ``playwright install``) with an empty cache, waits until no request
has started or ended for a second, and sums the bodies of every response (the local
server sends them uncompressed, so that is what a first visit transfers). Prints the
total and the largest files.

``--screenshots DIR`` also saves a full-page PNG of each page at 412 px (a phone) and
1280 px wide, in the light and the dark theme: ``DIR/<page>-<width>-<theme>.png``.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _chromium() -> str:
    for cand in (os.environ.get("BOOK_TEST_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if cand and os.path.isfile(cand):
            return cand
    sys.exit("no Chromium: apt-get install chromium, or set $BOOK_TEST_CHROMIUM")


def _settle(page, last, inflight, quiet=1.0, limit=30.0):
    deadline = time.monotonic() + limit
    while (inflight or time.monotonic() - last[0] < quiet) and time.monotonic() < deadline:
        page.wait_for_timeout(100)


def visit(context, url: str) -> dict:
    """``{url: bytes}`` of every response the page received on a first visit."""
    page = context.new_page()
    sizes, inflight, last = {}, set(), [time.monotonic()]

    def started(r):
        inflight.add(r)
        last[0] = time.monotonic()

    def finished(r):
        inflight.discard(r)
        last[0] = time.monotonic()
        try:
            resp = r.response()
            sizes[r.url] = len(resp.body()) if resp else 0
        except Exception:
            sizes[r.url] = 0

    page.on("request", started)
    page.on("requestfinished", finished)
    page.on("requestfailed", lambda r: (inflight.discard(r), last.__setitem__(0, time.monotonic())))
    page.goto(url, wait_until="load")
    _settle(page, last, inflight)
    page.close()
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="*", default=["book/intro.html"], help="paths under _build/html")
    ap.add_argument("--html", default=str(REPO / "_build" / "html"))
    ap.add_argument("--top", type=int, default=8, help="how many of the largest files to list")
    ap.add_argument("--screenshots", metavar="DIR", help="also save screenshots here")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=a.html)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=_chromium(), headless=True, args=ARGS)
            for rel in a.pages:
                ctx = browser.new_context(service_workers="block")   # a fresh context: an empty cache
                sizes = visit(ctx, base + rel)
                ctx.close()
                total = sum(sizes.values())
                print(f"{rel}: {total:,} bytes ({total / 1e6:.2f} MB) in {len(sizes)} responses")
                for url, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:a.top]:
                    print(f"  {n:>10,}  {url[len(base):] if url.startswith(base) else url}")
                if a.screenshots:
                    out = Path(a.screenshots)
                    out.mkdir(parents=True, exist_ok=True)
                    for width in (412, 1280):
                        for theme in ("light", "dark"):
                            ctx = browser.new_context(viewport={"width": width, "height": 915},
                                                      color_scheme=theme, service_workers="block")
                            ctx.add_init_script(f"localStorage.setItem('mode', '{theme}'); "
                                                f"localStorage.setItem('theme', '{theme}');")
                            page = ctx.new_page()
                            page.goto(base + rel, wait_until="load")
                            page.wait_for_timeout(2500)      # figures drawn and restyled
                            name = Path(rel).stem + f"-{width}-{theme}.png"
                            page.screenshot(path=str(out / name), full_page=True)
                            ctx.close()
                            print(f"  screenshot {out / name}")
            browser.close()
    finally:
        httpd.shutdown()


if __name__ == "__main__":
    main()
