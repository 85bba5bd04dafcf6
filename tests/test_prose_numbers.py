"""Every measured number in the book's prose comes from a record through glue.

A number typed into a Markdown cell goes stale the day the book is measured again, and a
reader who then meets two numbers for one thing stops trusting both. This test reads the
Markdown of every page (``book/*.ipynb`` and ``book/*.md``) and finds *measured-looking*
numbers: a number with a unit of speed, bandwidth, time, clock, power or share (TFLOP/s,
GB/s, µs, ms, MHz, W, %), a multiple ("2.5x", "3 times"), or a ratio to cuBLAS ("0.95 of
cuBLAS", or a bare two-to-four-decimal ratio such as 0.956). Such a number must be glued
(``{glue:text}`name``` takes it from the committed output of a cell that read the records),
or be a constant of the hardware or of the method listed in :data:`CONSTANTS` with the reason.
Shapes ("64 x 64", "4096^3") and counts without a unit are not measurements.

``measured_numbers(markdown)`` is the finder; the planted examples below show that it
finds what it should and passes what it should.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Phrases that hold a number which is not a measurement of this book, per page (the file
# name), each with why. A phrase is matched exactly, as it stands in the Markdown.
CONSTANTS: dict[str, dict[str, str]] = {
    "*": {
        "100 %": "the top of a percentage scale",
        "0 %": "the bottom of a percentage scale",
    },
    "00_measuring.ipynb": {
        "an intensity of 0.25": "2 FLOPs over 8 bytes (one 4-byte element of A and one of B per multiply-add): "
                                "arithmetic of the method, not a measurement",
    },
    "01_naive.ipynb": {
        "0.25 FLOP per byte": "2 FLOPs over two 4-byte loads per multiply-add: arithmetic of the method",
    },
    "09_any_shape.ipynb": {
        "more than 3 % faster": "the zoo's verdict line, set in code (helpers.models.anyshape.zoo_row: "
                                "'within 3% of best'), not a measurement",
        "within 5 % of the fastest": "the end-to-end verdict, set in code (helpers/chapters/end_to_end.py's "
                                     "'auto within 5% of best'), not a measurement",
    },
    "10_hopper.ipynb": {
        "within 5 % of the fastest": "the end-to-end verdict, set in code (helpers/chapters/end_to_end.py's "
                                     "'auto within 5% of best'), not a measurement",
    },
    "ncu_primer.md": {
        "at 60 % of its peak": "diagnosis.BUSY, a threshold of the method set in code, not a measurement",
        "at 80 % or more": "diagnosis.CEILING, a threshold of the method",
        "at least 20 % of its": "diagnosis.CONFLICT_SHARE, a threshold of the method",
        "under 50 % of each": "diagnosis.SECTOR_USE, a threshold of the method",
        "by 10 % of its own": "diagnosis.STALL_TIE, a threshold of the method",
    },
    "08_profiling.ipynb": {
        "from 1% to 95% compute utilization": "the title of the article whose road map the book follows, "
                                              "quoted in translation: its claim, not a measurement of this book",
    },
}

_UNIT = (r"(?:TFLOP/s|GFLOP/s|TFLOPs|PFLOP/s|TB/s|GB/s|MB/s|GHz|MHz|µs|us\b|ms\b|ns\b|W\b|%|"
         r"x(?!\s*\d)\b|×(?!\s*\d)|times\b|of cuBLAS|of the copy)")
_NUMBER = r"\d+(?:[.,]\d+)?"
# a number (or a range of two) followed by a unit; not inside a word or after a decimal point
_WITH_UNIT = re.compile(rf"(?<![\w.])(?:~|about |some )?{_NUMBER}(?:\s*(?:-|–|to)\s*{_NUMBER})?\s*{_UNIT}")
# a bare ratio with two to four decimals: 0.95, 1.006
_RATIO = re.compile(r"(?<![\w.,/])(?:0|1)\.\d{2,4}(?![\w.%])")
_STRIP = (re.compile(r"\{glue(?::\w+)?\}`[^`]*`"),   # glued values
          re.compile(r"```.*?```", re.S),            # code blocks
          re.compile(r"`[^`\n]*`"),                  # inline code
          re.compile(r"\$\$.*?\$\$", re.S),          # display math
          re.compile(r"\$[^$\n]*\$"),                # inline math
          re.compile(r"\]\([^)]*\)"),                # link targets
          re.compile(r"<[^>\n]+>"))                  # HTML tags


def measured_numbers(markdown: str, constants=()) -> list[str]:
    """The measured-looking numbers of ``markdown`` that are neither glued nor in
    ``constants`` (phrases), each with a few words of context."""
    text = markdown
    for pat in _STRIP:
        text = pat.sub(" ", text)
    for phrase in constants:   # whole phrases only: "0 %" must not swallow the end of "60 %"
        text = re.sub(rf"(?<![\w.,]){re.escape(phrase)}", " ", text)
    found = []
    for pat in (_WITH_UNIT, _RATIO):
        for m in pat.finditer(text):
            found.append(" ".join(text[max(0, m.start() - 40):m.end() + 10].split()))
    return found


def _pages():
    return sorted((REPO / "book").glob("*.ipynb")) + sorted((REPO / "book").glob("*.md"))


def _markdown(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    nb = json.loads(path.read_text())
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", _pages(), ids=lambda p: p.name)
def test_measured_numbers_in_the_prose_are_glued(path):
    constants = {**CONSTANTS["*"], **CONSTANTS.get(path.name, {})}
    found = measured_numbers(_markdown(path), constants)
    assert not found, (f"{path.name}: {len(found)} measured-looking numbers typed into the prose; glue "
                       "each from the records (common.glue in a remove-cell) or, for a constant of the "
                       "hardware or the method, list it in CONSTANTS with the reason:\n  "
                       + "\n  ".join(found))


@pytest.mark.parametrize("text", [
    "cp_async reaches 0.956 of cuBLAS here.",
    "It runs at 48.9 TFLOP/s.",
    "The copy moves 4240 GB/s.",
    "Split-K is 2.8x faster.",
    "The clock fell to 1395 MHz.",
    "One call costs 25 µs of CPU.",
    "Its FMA pipe is 76 % busy.",
    "from about 1% of cuBLAS",
])
def test_a_planted_measurement_is_found(text):
    assert measured_numbers(text), text


def test_a_constant_phrase_does_not_hide_a_longer_number():
    """The page-wide constant "0 %" strips a whole phrase only, not the end of "60 %"."""
    assert measured_numbers("The tensor pipe sat at 60 % of peak.", constants=CONSTANTS["*"])
    assert not measured_numbers("from 0 % to 100 % of peak", constants=CONSTANTS["*"])


@pytest.mark.parametrize("text", [
    "The ratio is {glue:text}`cp_async_ratio:.3f` of cuBLAS.",
    "A 64 x 64 warp tile, a 128 × 256 block tile, a 2 x 1 cluster.",
    "At 4096^3, with BK = 32 and 4 stages.",
    "`0.956` in code is not prose; $0.5$ in math neither.",
    "Chapter 5, step 3, heaven 10.",
])
def test_glued_values_shapes_and_counts_pass(text):
    assert not measured_numbers(text), measured_numbers(text)
