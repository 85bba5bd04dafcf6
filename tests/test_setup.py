"""helpers.setup(), the first cell of every notebook (issue #13), with Colab simulated:
each branch (not Colab; CUDA 12; CUDA 13; CuPy already importable) and what it runs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import helpers
from helpers import colab

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake(monkeypatch):
    """Colab simulated: every command setup() would run is recorded instead of run."""
    ran = []
    monkeypatch.setattr(colab, "_run", lambda cmd: ran.append(list(cmd)) or 0)
    monkeypatch.setattr(colab, "enable_widgets", lambda: ran.append(["enable_custom_widget_manager"]))
    monkeypatch.setattr(colab, "summary", lambda: "GPU line")
    monkeypatch.setattr(colab, "on_colab", lambda: True)
    monkeypatch.setattr(colab, "installed_version", lambda name: {"plotly": "9.0", "ipywidgets": "9.0"}[name])
    return ran


def _pips(ran):
    return [c[c.index("install") + 2:] for c in ran if "pip" in c]


def test_outside_colab_nothing_is_done(monkeypatch, capsys):
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(colab, "_run", lambda cmd: pytest.fail(f"ran {cmd} outside Colab"))
    assert helpers.setup() is None
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("major", [12, 13])
def test_colab_installs_the_cupy_of_its_cuda_major(fake, monkeypatch, capsys, major):
    monkeypatch.setattr(colab, "cupy_importable", lambda: False)
    monkeypatch.setattr(colab, "cuda_major", lambda: major)
    colab.setup()
    assert _pips(fake) == [[f"cupy-cuda{major}x"]]          # one wheel, never both
    assert ["enable_custom_widget_manager"] in fake
    assert capsys.readouterr().out.strip().endswith("GPU line")


def test_colab_with_cupy_importable_installs_no_cupy(fake, monkeypatch):
    monkeypatch.setattr(colab, "cupy_importable", lambda: True)
    monkeypatch.setattr(colab, "cuda_major", lambda: pytest.fail("CUDA looked up although CuPy imports"))
    colab.setup()
    assert _pips(fake) == []


def test_colab_raises_plotly_and_ipywidgets_to_the_requirement_floors(fake, monkeypatch):
    monkeypatch.setattr(colab, "cupy_importable", lambda: True)
    monkeypatch.setattr(colab, "installed_version", lambda name: {"plotly": "5.24.1", "ipywidgets": "7.7.1"}[name])
    colab.setup()
    assert _pips(fake) == [[f"plotly>={colab.requirement_floor('plotly')}",
                            f"ipywidgets>={colab.requirement_floor('ipywidgets')}"]]
    assert colab.requirement_floor("plotly") and colab.requirement_floor("ipywidgets")


def test_colab_updates_the_clone_it_runs_from(fake, monkeypatch):
    monkeypatch.setattr(colab, "cupy_importable", lambda: True)
    colab.setup()
    assert ["git", "-C", str(colab.REPO), "pull", "-q", "--ff-only"] in fake
    assert str(colab.REPO) in sys.path


def test_colab_clones_from_the_one_setting_when_not_in_a_clone(fake, monkeypatch, tmp_path):
    (tmp_path / "_config.yml").write_text('title: x\nrepository:\n  url: "https://github.com/o/r"  # the one setting\n'
                                          "  branch: trunk\n")
    assert colab.repository(tmp_path / "_config.yml") == ("https://github.com/o/r", "trunk")
    assert colab.sync_repository(tmp_path) == colab.CLONE_DIR
    assert fake[-1] == ["git", "clone", "-q", "--depth", "1", "-b", "trunk", "https://github.com/o/r",
                        str(colab.CLONE_DIR)]


def test_no_cuda_found_installs_nothing(fake, monkeypatch):
    monkeypatch.setattr(colab, "cupy_importable", lambda: False)
    monkeypatch.setattr(colab, "cuda_major", lambda: None)
    assert colab.install_cupy() is None and _pips(fake) == []


def test_the_repository_setting_is_read_from_config_yml():
    url, branch = colab.repository()
    assert isinstance(url, str) and branch


def test_summary_names_what_runs_here_without_a_gpu(monkeypatch):
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.setenv("GEMM_BOOK_SIMULATE", "t4")
    colab.gpu.live.cache_clear()
    try:
        line = colab.summary()
    finally:
        colab.gpu.live.cache_clear()
    assert "simulating sm_75" in line and "chapters 0, 1, 2, 3, 4" in line and "5 in part" in line


# Chapter 9 is written by others and gets its setup cell from them.
NOTEBOOKS = sorted((REPO / "book").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_is_the_setup_cell_and_kernelspec_is_python3(path):
    nb = json.loads(path.read_text())
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert "".join(first["source"]) == colab.setup_cell()
    assert first.get("outputs") == [], "the setup cell prints nothing off Colab: no committed output"
    assert nb["metadata"]["kernelspec"] == {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                            "language": "python"}
