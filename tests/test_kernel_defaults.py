"""A kernel file's ``-D`` defaults are what the book runs: every ``#ifndef X`` / ``#define X v``
of ``kernels/NN_name.cu`` equals the catalog's value of X for the entry that builds that file.

Where several catalog entries build one file with different defaults, the file names its
main teaching entry in its top comment ("the defaults below are those of the catalog entry
cp_async"), and the test compares with that entry; where they all share their defaults the
file needs no such sentence. An experiment file under ``kernels/experiments/`` declares no
default of a catalog parameter: it includes its teaching kernel and inherits its defaults.
CPU only, no nvcc.
"""
from __future__ import annotations

import re

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime import catalog
from helpers.runtime.compile import KERNEL_DIR

DEFAULT = re.compile(r"^[ \t]*#ifndef[ \t]+(\w+)[ \t]*\n"                  # #ifndef X
                     r"[ \t]*#define[ \t]+\1[ \t]+([^/\n]*?)[ \t]*(?://.*)?$",   # #define X value  // comment
                     re.MULTILINE)
MAIN = re.compile(r"defaults (?:below )?are those of the catalog entry `?(\w+)`?")
FILES = sorted({spec.file for spec in catalog.KERNELS.values()})


def file_defaults(text: str) -> dict:
    """``{name: value}`` of every ``#ifndef name`` / ``#define name value`` pair in CUDA source
    ``text`` (value an int where it is one, else the text, e.g. ``(MIN_BLOCKS == 1)``); an
    include guard (a ``#define`` without a value) is not a default."""
    return {name: int(v) if re.fullmatch(r"-?\d+", v) else v for name, v in DEFAULT.findall(text)}


def comment_text(text: str) -> str:
    """The ``//`` comments of ``text`` joined into one line of prose (a sentence may wrap)."""
    return " ".join(m.group(1).strip() for m in re.finditer(r"//(.*)", text))


def expected(file: str, text: str) -> tuple[str, dict]:
    """(whose, {name: value}): the defaults ``kernels/<file>`` must carry. The entry its
    comment names (its defaults and fixed values), else the defaults of all its entries
    together when no two of them give one parameter different values. ValueError when
    neither applies."""
    specs = [s for s in catalog.KERNELS.values() if s.file == file]
    named = MAIN.search(comment_text(text))
    if named:
        spec = catalog.get(named.group(1))
        if spec.file != file:
            raise ValueError(f"{file}: names catalog entry {spec.key}, which builds {spec.file}")
        return f"entry {spec.key}", spec.full()
    want: dict = {}
    for s in specs:
        for n, v in s.defaults.items():
            if want.setdefault(n, v) != v:
                raise ValueError(f"{file}: its entries give {n} different defaults; the file must say whose "
                                 "defaults it carries ('the defaults below are those of the catalog entry <key>')")
    return "entries " + ", ".join(s.key for s in specs), want


def mismatches(file: str, text: str) -> list[str]:
    """Every disagreement of the file's defaults with the catalog, in words."""
    whose, want = expected(file, text)
    have = file_defaults(text)
    out = [f"{file}: #define {n} {have[n]!r}, but the catalog has {n}={v} ({whose})"
           for n, v in want.items() if n in have and have[n] != v]
    named = MAIN.search(comment_text(text))
    params = catalog.get(named.group(1)).defaults if named else want
    out += [f"{file}: parameter {n} of {whose} has no #ifndef default in the file" for n in params if n not in have]
    return out


@pytest.mark.parametrize("file", FILES)
def test_file_defaults_are_the_catalog_defaults(file):
    text = (KERNEL_DIR / file).read_text()
    assert file_defaults(text), f"{file}: no #ifndef defaults found"
    assert not mismatches(file, text), "; ".join(mismatches(file, text))


@pytest.mark.parametrize("key", sorted({k for k, s in catalog.KERNELS.items() if s.experiments}))
def test_experiment_files_inherit_the_defaults(key):
    """An experiment file defines its own switches only: a default of a catalog parameter
    there would be a second, possibly different, copy of the teaching file's."""
    spec = catalog.get(key)
    for file, entry in spec.experiments.values():
        text = (KERNEL_DIR / file).read_text()
        assert re.search(r'#include\s+"\.\./' + re.escape(spec.file) + '"', text), \
            f"{file} does not include its teaching kernel {spec.file}"
        own = set(file_defaults(text)) & set(spec.full())
        assert not own, f"{file} redefines catalog parameters {sorted(own)} of {key}"
        assert re.search(r"\b" + re.escape(entry) + r"\s*\(", text) or entry == spec.entry, f"{entry} not in {file}"


def test_a_planted_mismatch_is_found():
    """The parser sees the values, comments and all: a file whose default differs from its
    main entry's fails, naming the parameter and both values."""
    spec = catalog.get("mma_sync_f16")
    text = (KERNEL_DIR / spec.file).read_text()
    bad = re.sub(r"(#define BK )64", r"\g<1>32", text)
    assert bad != text
    assert mismatches(spec.file, text) == []
    found = mismatches(spec.file, bad)
    assert len(found) == 1 and "#define BK 32" in found[0] and "BK=64" in found[0], found


def test_files_with_entries_of_different_defaults_must_name_one():
    text = (KERNEL_DIR / "05_register_tiling.cu").read_text()
    unnamed = re.sub(r"defaults (?:below )?are those of", "defaults follow", text)
    with pytest.raises(ValueError, match="different defaults"):
        expected("05_register_tiling.cu", unnamed)
