"""What import-linter cannot see (CPU, reads the source):

- no module of helpers/runtime/, helpers/models/ or helpers/figures/ holds a catalog key
  (``helpers.runtime.catalog.KERNELS``) as a string literal: chapter knowledge lives in
  the chapters, which pass keys or parameters down (or name their kernels to a model:
  ``mapping.name_scheme``, ``banks.name_model``, ``anyshape.use_hopper``);
- the same-run timing is called in one place, :func:`helpers.runtime.bench.measure`: no
  other module of helpers/ or scripts/ repeats the measurement loop around ``time_pair``;
- a script imports no other script and no private (``_name``) of helpers/.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime.catalog import KERNELS

ROOT = Path(__file__).resolve().parent.parent
LOWER = ("runtime", "models", "figures")
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))


def key_literals(source: str, keys) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``source`` that equals one of ``keys``."""
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in keys]


@pytest.mark.parametrize("layer", LOWER)
def test_lower_layers_name_no_catalog_key(layer):
    found = {str(f.relative_to(ROOT)): hits for f in sorted((ROOT / "helpers" / layer).glob("*.py"))
             if (hits := key_literals(f.read_text(), set(KERNELS)))}
    assert not found, (f"catalog keys named in helpers/{layer}/ (the chapter should pass the key or the "
                       f"parameters): {found}")


def test_the_key_scan_finds_a_planted_key():
    planted = 'SPEC = "wmma_f16"\nKEYS = ("vec4", "vec8")\n"""a docstring naming wmma_f16"""\n'
    assert key_literals(planted, set(KERNELS)) == [(1, "wmma_f16"), (2, "vec4")]
    assert len(KERNELS) > 40                       # the catalog is filled: the scan has keys to look for


def _calls(tree, name):
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "attr", None) == name or getattr(n.func, "id", None) == name)]


def test_only_bench_measure_times_against_the_reference():
    files = sorted((ROOT / "helpers").rglob("*.py")) + SCRIPTS
    callers = {str(f.relative_to(ROOT)): lines for f in files
               if (lines := _calls(ast.parse(f.read_text()), "time_pair"))}
    assert set(callers) == {"helpers/runtime/bench.py"}, callers


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_a_script_imports_no_script_and_no_private_name(path):
    scripts = {p.stem for p in SCRIPTS}
    tree = ast.parse(path.read_text())
    helper_names, bad = set(), []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            if n.module.split(".")[0] in scripts:
                bad.append(f"imports the script {n.module}")
            if n.module.startswith("helpers"):
                helper_names |= {a.asname or a.name for a in n.names}
                bad += [f"imports {n.module}.{a.name}" for a in n.names if a.name.startswith("_")]
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] in scripts:
                    bad.append(f"imports the script {a.name}")
                if a.name.startswith("helpers"):
                    helper_names.add((a.asname or a.name).split(".")[0])
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__"):
            base = n.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in helper_names:
                bad.append(f"line {n.lineno} uses {ast.unparse(n)}")
    assert not bad, bad
