"""The display of an exercise check: a titled box of verdict, details and code blocks.

Markdown only (JupyterLab and the built book both render it); :func:`report_markdown`
is exposed for tests.
"""
from __future__ import annotations

from helpers.runtime.compile import kernel_path

from . import show


def _block(text: str, lang: str = "text") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}\n"


def report_markdown(title: str, verdict: str, details=(), code: str = "", rows=(), columns=(),
                    caption: str = "") -> str:
    """Markdown of one check: ``title`` (bold), ``verdict`` (one paragraph), ``details``
    (bullet lines), ``code`` (a compiler message or a listing, shown verbatim) and an
    optional table (``rows`` of dicts over ``columns`` with ``caption``)."""
    out = [f"**{title}**", "", verdict.strip(), ""]
    out += [f"- {d}" for d in details if d]
    if details:
        out.append("")
    if code:
        out.append(_block(code))
    if rows:
        out.append(show.table_markdown(rows, columns, caption))
    return "\n".join(out).rstrip() + "\n"


def report(title: str, verdict: str, details=(), code: str = "", rows=(), columns=(), caption: str = "") -> None:
    """Display :func:`report_markdown` in a note box titled "Check"."""
    show.note(report_markdown(title, verdict, details, code, rows, columns, caption), title="Check")


def solution_markdown(file: str) -> str:
    """The Markdown of :func:`solution`: a caption naming ``kernels/<file>`` and its text as
    it is (its ``#include`` lines stand for the chapter's headers, listed in the chapter)."""
    return f"`kernels/{file}`\n\n" + _block(kernel_path(file).read_text(), "cuda")


def solution(file: str) -> None:
    """Display the listing of a solution file under ``kernels/`` (FileNotFoundError if absent)."""
    show._markdown(solution_markdown(file))
