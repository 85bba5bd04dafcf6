"""The architecture of helpers/ holds (docs/architecture.md): import-linter's
contracts (pyproject.toml), no helpers import inside a function, no module over
500 lines without a stated reason, and the catalog filled by ``import helpers``."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HELPERS = REPO / "helpers"
MAX_LINES = 500


def _lint_imports() -> str | None:
    exe = Path(sys.executable).parent / "lint-imports"
    return str(exe) if exe.exists() else shutil.which("lint-imports")


def test_import_linter_contracts_are_kept():
    exe = _lint_imports()
    if exe is None:
        pytest.skip("lint-imports not installed (pip install import-linter, see requirements.txt)")
    r = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout and " kept" in r.stdout


def _modules():
    return sorted(p for p in HELPERS.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_helpers_import_inside_a_function(path):
    tree = ast.parse(path.read_text())
    inner = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("helpers")):
                    inner.append(node.lineno)
                elif isinstance(node, ast.Import) and any(a.name.startswith("helpers") for a in node.names):
                    inner.append(node.lineno)
    assert not inner, f"{path.name}: helpers imported inside a function at lines {inner}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_module_size(path):
    n = len(path.read_text().splitlines())
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert n <= MAX_LINES or "lines because" in doc, (
        f"{path.relative_to(REPO)} has {n} lines (> {MAX_LINES}); split it or say why in its docstring")


def test_every_module_is_in_the_package_index():
    index = ast.get_docstring(ast.parse((HELPERS / "__init__.py").read_text()))
    missing = [p.stem for p in _modules() if p.stem != "__init__" and p.stem not in index]
    assert not missing, f"helpers/__init__.py's docstring does not index {missing}"


# Chapters that register no kernel of their own (chapter 8 profiles the other chapters' kernels).
NO_KERNELS = {8}


def test_import_helpers_fills_the_catalog():
    code = ("import helpers; from helpers.runtime import catalog; "
            "print(sorted({k.chapter for k in catalog.KERNELS.values()}))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    chapters = sorted(int(p.stem[2:4]) for p in (HELPERS / "chapters").glob("ch[0-9][0-9]_*.py"))
    chapters = [c for c in chapters if c not in NO_KERNELS]
    assert r.stdout.strip() == str(chapters)
