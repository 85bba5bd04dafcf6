"""ruff over the repository's Python (``[tool.ruff]`` in pyproject.toml): unused imports and
locals, undefined names, f-strings without placeholders, unused ``noqa`` comments. Part of
the fast tier. ``ruff`` comes with requirements.txt."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str] | None:
    exe = Path(sys.executable).with_name("ruff")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("ruff")
    return [found] if found else None


def test_ruff_finds_nothing():
    ruff = _ruff()
    if ruff is None:
        pytest.fail("ruff is not installed: pip install -r requirements.txt")
    r = subprocess.run([*ruff, "check", "--no-cache", "--output-format", "concise", "."], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_ruff_catches_a_planted_unused_import(tmp_path):
    """The configuration really checks something: an unused import is reported."""
    ruff = _ruff()
    if ruff is None:
        pytest.fail("ruff is not installed: pip install -r requirements.txt")
    bad = tmp_path / "planted.py"
    bad.write_text("import os\n")
    r = subprocess.run([*ruff, "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr
