"""Only the book on the page (book/*.ipynb, committed outputs, no GPU needed).

1. Thin cells. A code cell calls functions of its chapter module, of helpers.chapters.common
   or of helpers.figures, and does nothing else: it imports only from helpers.chapters and
   helpers.figures, never names helpers.runtime or helpers.models, and has no loop,
   comprehension, assert, if/try/raise, arithmetic, f-string or subscript. The logic and the
   checks live in the chapter function, which raises when a kernel is wrong, so nbval still
   fails on a wrong kernel. Exempt: the setup cell (``helpers.setup()``) and the hidden glue
   cells (tag ``remove-cell``, calling ``common.glue``).
2. No raw reprs. An output whose only data is text/plain (a bare expression's repr) must be
   one line; printed text (stream) must stay short: at most MAX_STREAM_LINES lines per cell;
   tables and figures come as Markdown, HTML or Plotly data. No error outputs.
3. No workshop words. The Markdown and the text the outputs put on the page (printed text,
   text/plain, Markdown tables and captions, Plotly strings) name no seed, issue number,
   session, workplace, notes/ file or change history; a commit hash appears only in an
   output's provenance ("commit ..." before it), never in the prose, nor does a date.
   Kernel listings (``show.source``) are the kernel files themselves and are not scanned.
   At most one collapsed "How this was measured" box (a dropdown) per chapter; other dropdowns
   are named for their content.
4. A chapter's open prose (Markdown outside collapsed dropdowns) is at most about 2,500
   words (:data:`MAX_OPEN_WORDS`); a glue value, an inline code span or a formula counts as one.

Each check is a function of one notebook returning its problems; the tests at the end plant
each kind of problem in a temporary notebook and require the check to report it.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))

# The longest report a committed cell prints is one line per kernel of a comparison
# (chapter 5's six steps, six owner checks); the same cells run in recorded mode print two
# lines per owner check. Twelve lines is room for that and short enough that a dumped list
# or dict (tens to hundreds of lines) cannot pass.
MAX_STREAM_LINES = 12

ALLOWED_IMPORTS = ("helpers.chapters", "helpers.figures")
FORBIDDEN_NODES = {
    ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension", ast.Assert: "an assert", ast.If: "an if", ast.IfExp: "an if",
    ast.Try: "a try", ast.Raise: "a raise", ast.BinOp: "arithmetic", ast.JoinedStr: "an f-string",
    ast.Subscript: "a subscript", ast.Lambda: "a lambda", ast.FunctionDef: "a function definition",
    ast.ClassDef: "a class definition", ast.With: "a with block",
}

WORKSHOP = {
    "seed": r"\bseeds?\b",
    "issue number": r"\bissues?\s*#\s*\d+|\bissue\s+\d+\b(?![-\w])",      # not "issue 16-byte copies"
    "the issue": r"\bthe issue(?:'s)?\b(?!\s+(?:rate|slots?|width|queue|stage))",
    "session": r"\bsessions?\b",
    "workplace": r"\bworkplace\b",
    "notes file": r"\bnotes/",
    "helper id": r"\bhelper-\d+\b",
    "lead engineer": r"\blead engineer\b",
    "change history": r"\b(?:an earlier|the first|a previous|the previous|an older) version\b|\bpredates?\b"
                      r"|\blags? behind\b",
}
# what a kernel listing must not say either: the repository's notes, issues, sessions, helpers
LISTING_WORDS = ("notes file", "issue number", "session", "workplace", "helper id")
# 7 to 40 hex digits with a letter and a digit; not the digits after a decimal point (1.1457e-06)
COMMIT_HASH = re.compile(r"(?<![.\d])\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
PROVENANCE_WINDOW = 200          # characters before a hash in which "commit" must appear
MEASURED_BOX = re.compile(r"\{dropdown\}\s*How this was measured|\{admonition\}\s*How this was measured"
                          r"[^\n]*\n:class:\s*dropdown")
LISTING = re.compile(r'\s*show\.source\(')


def _text(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


def is_exempt(cell) -> bool:
    """The setup cell, or a hidden cell that glues numbers for the prose."""
    src = cell.source
    tags = cell.get("metadata", {}).get("tags", [])
    return "helpers.setup()" in src or ("remove-cell" in tags and "common.glue(" in src)


# ------------------------------------------------------------------ 1. thin cells
def _dotted(node) -> str:
    """``a.b.c`` for an attribute chain on a name, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def cell_problems(src: str) -> list[str]:
    """What makes one code cell more than calls: forbidden imports, names and constructs."""
    tree = ast.parse(src)
    lower = sorted({_dotted(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                    and _dotted(n).startswith(("helpers.runtime", "helpers.models"))})
    out = [f"uses {', '.join(lower)}"] if lower else []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [f"imports {a.name}" for a in node.names if not a.name.startswith(ALLOWED_IMPORTS)]
        elif isinstance(node, ast.ImportFrom):
            if node.level or not (node.module or "").startswith(ALLOWED_IMPORTS):
                out.append(f"imports from {'.' * node.level}{node.module or ''}")
        else:
            what = FORBIDDEN_NODES.get(type(node))
            if what:
                out.append(f"{what} (line {node.lineno})")
    return out


def thin_problems(nb) -> list[str]:
    return [f"cell {i}: {p}\n{c.source}" for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and not is_exempt(c) for p in cell_problems(c.source)]


# ------------------------------------------------------------------ 2. no raw reprs
def output_problems(nb) -> list[str]:
    out = []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        stream = 0
        for o in c.get("outputs", []):
            kind = o.get("output_type")
            if kind == "error":
                out.append(f"cell {i}: an error output ({o.get('ename')})")
            elif kind == "stream":
                stream += _text(o.get("text")).rstrip("\n").count("\n") + 1
            elif kind in ("execute_result", "display_data"):
                data = o.get("data", {})
                plain = _text(data.get("text/plain")).strip()
                if set(data) == {"text/plain"} and "\n" in plain:
                    out.append(f"cell {i}: a raw repr of {plain.count(chr(10)) + 1} lines: {plain[:80]!r}")
        if stream > MAX_STREAM_LINES:
            out.append(f"cell {i}: prints {stream} lines (more than {MAX_STREAM_LINES})")
    return out


# ------------------------------------------------------------------ 3. only the book on the page
def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def page_texts(nb):
    """(where, kind, text) of everything the page shows as text: Markdown cells ("prose"), the
    outputs of code cells ("output") and of kernel listings ("listing")."""
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown":
            yield f"cell {i} (Markdown)", "prose", c.source
        elif c.cell_type == "code" and LISTING.match(c.source):
            for o in c.get("outputs", []):
                for mime, v in o.get("data", {}).items():
                    if mime in ("text/plain", "text/markdown", "text/html"):
                        yield f"cell {i} (listing)", "listing", _text(v)
        elif c.cell_type == "code":
            for o in c.get("outputs", []):
                if o.get("output_type") == "stream":
                    yield f"cell {i} (printed)", "output", _text(o.get("text"))
                for mime, v in o.get("data", {}).items():
                    if mime in ("text/plain", "text/markdown"):
                        yield f"cell {i} ({mime})", "output", _text(v)
                    elif mime == "application/vnd.plotly.v1+json":
                        yield f"cell {i} (figure)", "figure", "\n".join(_strings(v))


def word_problems(nb) -> list[str]:
    out = []
    for where, kind, text in page_texts(nb):
        if kind == "listing":       # a kernel's comments may cite a commit or a measured history
            out += [f"{where}: {name}: ...{text[max(0, m.start() - 60):m.end() + 40]!r}"
                    for name in LISTING_WORDS for m in re.finditer(WORKSHOP[name], text, re.I)]
            continue
        for name, pattern in WORKSHOP.items():
            for m in re.finditer(pattern, text, re.I):
                out.append(f"{where}: {name}: ...{text[max(0, m.start() - 60):m.end() + 40]!r}")
        if kind == "figure":
            continue
        for m in COMMIT_HASH.finditer(text):
            before = text[max(0, m.start() - PROVENANCE_WINDOW):m.start()]
            if kind == "prose" or "commit" not in before.lower():
                out.append(f"{where}: commit hash {m.group(0)} outside a provenance caption")
        if kind == "prose":
            out += [f"{where}: date {m.group(0)} in the prose (dates belong in provenance captions)"
                    for m in DATE.finditer(text)]
    n = sum(len(MEASURED_BOX.findall(c.source)) for c in nb.cells if c.cell_type == "markdown")
    if n > 1:
        out.append(f"{n} 'How this was measured' boxes: at most one per chapter (name other dropdowns for "
                   "their content)")
    return out


# ------------------------------------------------------------------ the book
# "About 2,500 words" of open prose per chapter: the count below (:func:`open_words`) allows 4 %.
MAX_OPEN_WORDS = 2600
COLLAPSED = re.compile(r"^(`{3,}|:{3,})[ \t]*\{(?:dropdown|toggle)\}.*?^\1[ \t]*$"
                       r"|^(`{3,}|:{3,})[ \t]*\{admonition\}[^\n]*\n:class:[ \t]*dropdown.*?^\2[ \t]*$", re.S | re.M)


def open_words(nb) -> int:
    """Words of a notebook's Markdown outside collapsed blocks (a MyST dropdown or toggle, an
    admonition of class dropdown); a role (``{glue:text}`x` ``), an inline code span or a
    formula counts as one word."""
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    md = COLLAPSED.sub("", md)
    md = re.sub(r"\{[a-z:]+\}`[^`]*`|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", " X ", md, flags=re.S)
    md = re.sub(r"\]\([^)]*\)", "]", md)                 # a link counts by its text, not its target
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*", md))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_open_prose_is_at_most_about_2500_words(path):
    n = open_words(nbformat.read(path, 4))
    assert n <= MAX_OPEN_WORDS, f"{path.name}: {n} words of open prose (at most {MAX_OPEN_WORDS}); " \
                                "fold the rest into a named dropdown or cut it"


def test_a_planted_long_chapter_is_caught_and_dropdowns_do_not_count(tmp_path):
    long = " ".join(["word"] * (MAX_OPEN_WORDS + 1))
    assert open_words(_notebook(tmp_path, [nbformat.v4.new_markdown_cell(long)])) > MAX_OPEN_WORDS
    folded = f"Short.\n\n```{{dropdown}} More\n{long}\n```\n"
    assert open_words(_notebook(tmp_path, [nbformat.v4.new_markdown_cell(folded)])) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_cells_only_call_the_chapter(path):
    problems = thin_problems(nbformat.read(path, 4))
    assert not problems, f"{path.name}: move the logic into the chapter module:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_output_is_a_raw_repr(path):
    problems = output_problems(nbformat.read(path, 4))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_page_speaks_only_of_the_book(path):
    problems = word_problems(nbformat.read(path, 4))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


# ------------------------------------------------------------------ each check catches what it should
def _notebook(tmp_path, cells) -> nbformat.NotebookNode:
    """Write ``cells`` as a notebook under tmp_path and read it back, as the tests read the book."""
    nb = nbformat.v4.new_notebook(cells=cells)
    p = tmp_path / "planted.ipynb"
    nbformat.write(nb, p)
    return nbformat.read(p, 4)


def _code(src, outputs=(), tags=None):
    c = nbformat.v4.new_code_cell(src, outputs=[nbformat.from_dict(o) for o in outputs])
    if tags:
        c.metadata["tags"] = tags
    return c


SETUP = _code("import helpers\nhelpers.setup()")
GLUE = _code('common.glue({f"r{k}": v for k, v in {1: 2}.items()})', tags=["remove-cell"])


@pytest.mark.parametrize("src", [
    "from helpers.runtime import bench\nrecs = bench.gemm(['vec4'])",
    "import numpy as np",
    "r = helpers.runtime.gpu.cupy()",
    "for k in ('a', 'b'):\n    ch.show(k)",
    "while False:\n    pass",
    "rows = [ch.row(k) for k in keys]",
    "assert ch.check()",
    "if ch.live():\n    ch.show()",
    "try:\n    ch.run()\nexcept ValueError:\n    pass",
    "print(x['value'] / y['value'])",
    "print(f\"{r} of cuBLAS\")",
])
def test_a_planted_thick_cell_is_caught(tmp_path, src):
    nb = _notebook(tmp_path, [SETUP, GLUE, _code(src)])
    problems = thin_problems(nb)
    assert len(problems) >= 1 and all(p.startswith("cell 2:") for p in problems), problems


def test_thin_cells_setup_and_glue_pass(tmp_path):
    nb = _notebook(tmp_path, [SETUP, GLUE, _code(
        "from helpers.chapters import ch05_register_tiling as ch, common\nfrom helpers.figures import show\n"
        "shape = (4096, 4096, 4096)\nrecs = ch.show_timings(shape)\n"
        'common.show_owner_checks([("smem_tiled", {"TILE": 8})], shape=(70, 100, 20))')])
    assert thin_problems(nb) == []


def _stream(n):
    return {"output_type": "stream", "name": "stdout", "text": "".join(f"line {i}\n" for i in range(n))}


def _result(text, kind="execute_result", **more):
    o = {"output_type": kind, "data": {"text/plain": text, **more}, "metadata": {}}
    if kind == "execute_result":
        o["execution_count"] = 1
    return o


def test_a_planted_raw_repr_is_caught(tmp_path):
    records = "[{'chapter': 3,\n  'kernel': 'smem_tiled',\n  'value': 8.7364}]"
    nb = _notebook(tmp_path, [
        _code("common.show_roofline(recs)", [_result(records)]),                  # a list's repr
        _code("x", [_result(records, kind="display_data")]),                     # displayed, same thing
        _code("ch.show()", [_stream(MAX_STREAM_LINES + 1)]),                     # too much printed text
        _code("ch.show()", [_stream(MAX_STREAM_LINES - 2), _stream(3)]),          # in two writes
        _code("ch.fail()", [{"output_type": "error", "ename": "AssertionError", "evalue": "", "traceback": []}]),
    ])
    found = output_problems(nb)
    assert [p.split(":")[0] for p in found] == ["cell 0", "cell 1", "cell 2", "cell 3", "cell 4"], found


def test_one_line_results_tables_and_figures_pass(tmp_path):
    nb = _notebook(tmp_path, [
        _code("ch.ratio()", [_result("0.956")]),
        _code("show.table(rows)", [_result("<IPython.core.display.Markdown object>", kind="display_data",
                                           **{"text/markdown": "| a |\n|---|\n| 1 |\n| 2 |"})]),
        _code("ch.show()", [_stream(MAX_STREAM_LINES)]),
    ])
    assert output_problems(nb) == []


@pytest.mark.parametrize("prose", [
    "The decision table of the seed (000 §5.2), written as code.",
    "The grid below is the issue's: tiny and odd sizes.",
    "Fixed in issue #14.",
    "The same plan gave 0.35 in one session and 0.83 in another.",
    "The workplace that measured this book saw it.",
    "The runs are listed in `notes/fp32_tuning.md`.",
    "Two recordings lag behind it: the panel predates both switches.",
    "An earlier version of the tuner picked another configuration.",
    "Profiled at commit 0eeda88af011.",
    "Measured on 2026-11-29.",
    ":::{dropdown} How this was measured\nA\n:::\n\n```{admonition} How this was measured\n:class: dropdown\nB\n```",
])
def test_a_planted_workshop_word_in_the_prose_is_caught(tmp_path, prose):
    assert word_problems(_notebook(tmp_path, [nbformat.v4.new_markdown_cell(prose)]))


def test_workshop_words_in_outputs_are_caught_and_provenance_passes(tmp_path):
    caption = ("*Every timed configuration; recorded on NVIDIA H200, 2026-12-01, commits 0eeda88af011 "
               "(cp_async); d449632 (mma_sync_f16).*")
    ok = _notebook(tmp_path, [
        nbformat.v4.new_markdown_cell("A seeded random sample; the issue rate; it commits a group of copies; "
                                      "an error of 1.1457457909016875e-06. A collapsed box:\n\n"
                                      ":::{dropdown} How this was measured\nruns\n:::\n\n"
                                      ":::{dropdown} What the ladder cannot separate\nsteps\n:::"),
        _code("ch.show()", [_result("<IPython.core.display.Markdown object>", kind="display_data",
                                    **{"text/markdown": caption})]),
        _code('show.source("10_hopper.cu")', [_result("x", kind="display_data",
                                                      **{"text/markdown": "// retired at 0eeda88af011; "
                                                                          "issue 16-byte copies"})]),
    ])
    assert word_problems(ok) == []
    bad = _notebook(tmp_path, [
        _code("ch.show()", [_stream(1) | {"text": "the runner of session 3 measured it\n"}]),
        _code("ch.show()", [_result("<IPython.core.display.Markdown object>", kind="display_data",
                                    **{"text/markdown": "*Seed 000 §5.2's decision table.*"})]),
        _code("ch.show()", [_result("<Plotly figure>", kind="display_data",
                                    **{"application/vnd.plotly.v1+json": {"layout": {"title": {"text": "the seed"}}},
                                       "text/html": "<div></div>"})]),
        _code("ch.show()", [_stream(1) | {"text": "built from 0eeda88af011\n"}]),
        _code('show.source("10_hopper.cu")', [_result("x", kind="display_data",
                                                      **{"text/markdown": "// see notes/hopper_tuning.md"})]),
    ])
    assert [p.split(" (")[0] for p in word_problems(bad)] == ["cell 0", "cell 1", "cell 2", "cell 3", "cell 4"], \
        word_problems(bad)


def test_the_check_reads_what_nbformat_writes(tmp_path):
    """The planted notebooks are real files: the JSON the checks read is the JSON the book holds."""
    _notebook(tmp_path, [SETUP])
    assert json.loads((tmp_path / "planted.ipynb").read_text())["cells"][0]["cell_type"] == "code"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_glued_sentences_hold_no_math(path):
    """A {glue:md} Sentence is pasted as Markdown without the page's math extension: "$4096^3$"
    would show its dollars. Sentences write shapes as 4096³."""
    nb = nbformat.read(path, 4)
    for c in nb.cells:
        for o in c.get("outputs", []):
            md = o.get("data", {}).get("application/papermill.record/text/markdown")
            if md is not None:
                assert "$" not in md, f"{path.name}: glued Sentence with math: {md[:120]}"
