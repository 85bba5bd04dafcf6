"""The first cell of every notebook: ``helpers.setup()``.

Outside Google Colab it does nothing and prints nothing (a laptop, JupyterLab on a GPU
machine, CI, the built book: the notebook's own banner says where its numbers come from).
It never touches the GPU, so it is safe in recorded mode.

On Colab it:

1. updates the clone of this repository the notebook runs from (``git pull --ff-only``),
   or clones it from ``repository.url`` of ``_config.yml`` (the one setting naming the
   repository; :func:`repository`) when ``helpers`` was found elsewhere;
2. makes ``helpers`` importable from any directory (the clone on ``sys.path`` and
   ``PYTHONPATH``);
3. installs the CuPy wheel of the machine's CUDA major version (``cupy-cuda12x`` or
   ``cupy-cuda13x``, :func:`cuda_major`), and only when ``import cupy`` fails, so two
   CuPy wheels never meet;
4. raises plotly and ipywidgets to the floors of ``requirements.txt`` if older;
5. enables Colab's custom widget manager (ipywidgets 8 sliders);
6. prints one line (:func:`summary`): the GPU, its compute capability, the driver's and
   the runtime's CUDA, NVRTC, CuPy, and which chapters run live there; an NVRTC too old
   for the GPU's architecture is named, with the fix.

``python -m helpers.colab --cupy`` does step 3 anywhere (the GPU workflow uses it).
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .chapters import common
from .runtime import gpu

REPO = Path(__file__).resolve().parent.parent
CLONE_DIR = Path("/content/nine-heavens-gemm")       # where a Colab session clones the book (cwd /content)
FLOORS = ("plotly", "ipywidgets")                    # raised to requirements.txt's floors on Colab
# The oldest NVRTC that compiles for each architecture (CUDA Toolkit release notes: sm_80
# from 11.0, sm_86 from 11.1, sm_89 and sm_90 from 11.8, sm_100 and sm_120 from 12.8).
NVRTC_FOR_ARCH = {(8, 0): (11, 0), (8, 6): (11, 1), (8, 9): (11, 8), (9, 0): (11, 8), (10, 0): (12, 8),
                  (12, 0): (12, 8)}


def on_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules or bool(os.environ.get("COLAB_RELEASE_TAG"))


def repository(config: Path | None = None) -> tuple[str, str]:
    """(url, branch) of ``repository:`` in ``_config.yml`` ("" when unset; branch "main" by default)."""
    text = (config or REPO / "_config.yml").read_text() if (config or REPO / "_config.yml").exists() else ""
    block = re.search(r"^repository:\s*\n((?:[ \t]+.*\n?)*)", text, re.M)
    fields = dict(re.findall(r"^[ \t]+(\w+):\s*\"?([^\"\n#]*?)\"?\s*(?:#.*)?$", block.group(1), re.M)) if block else {}
    return fields.get("url", "").strip(), (fields.get("branch", "") or "main").strip()


def setup_cell(url: str | None = None, branch: str | None = None) -> str:
    """The source of every notebook's first code cell, from ``repository.url`` (:func:`repository`).
    Unset: ``import helpers`` and ``helpers.setup()``. Set: first a clone of the book when
    ``helpers`` cannot be imported (Colab, or a notebook downloaded on its own).
    ``python scripts/setup_cell.py`` writes it into every notebook."""
    if url is None:
        url, branch = repository()
    if not url:
        return "import helpers\nhelpers.setup()"
    return ("try:\n"
            "    import helpers\n"
            "except ModuleNotFoundError:  # Colab, or this notebook on its own: fetch the book's code first\n"
            "    import subprocess, sys\n"
            f"    subprocess.run([\"git\", \"clone\", \"-q\", \"--depth\", \"1\", \"-b\", \"{branch or 'main'}\", \"{url}\",\n"
            f"                    \"{CLONE_DIR.name}\"], check=True)\n"
            f"    sys.path.insert(0, \"{CLONE_DIR.name}\")\n"
            "    import helpers\n"
            "helpers.setup()")


def _run(cmd: list) -> int:
    """Run ``cmd`` quietly; its return code (output shown only on failure)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print(f"setup: {' '.join(cmd)} failed:\n{(r.stdout + r.stderr)[-1500:]}")
    return r.returncode


def _pip(*args: str) -> int:
    return _run([sys.executable, "-m", "pip", "install", "-q", *args])


def cupy_importable() -> bool:
    try:
        importlib.import_module("cupy")
        return True
    except Exception:          # ImportError, or a wheel for the wrong CUDA failing to load
        return False


def cuda_major() -> int | None:
    """CUDA major version of this machine's toolkit (``/usr/local/cuda/version.json``,
    which Colab ships), else the newest the driver supports (``nvidia-smi``); None if neither."""
    vj = Path("/usr/local/cuda/version.json")
    if vj.exists():
        m = re.search(r'"cuda"\s*:\s*\{[^}]*"version"\s*:\s*"(\d+)\.', vj.read_text())
        if m:
            return int(m.group(1))
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
        m = re.search(r"CUDA Version:\s*(\d+)\.", out)
        if m:
            return int(m.group(1))
    return None


def install_cupy() -> str | None:
    """Install ``cupy-cuda<major>x`` when ``import cupy`` fails; returns the wheel installed,
    or None (CuPy already importable, or no CUDA found: nothing installed)."""
    if cupy_importable():
        return None
    major = cuda_major()
    if major not in (12, 13):
        print(f"setup: no CUDA 12 or 13 found (got {major}); CuPy not installed, the notebooks run recorded")
        return None
    wheel = f"cupy-cuda{major}x"
    _pip(wheel)
    return wheel


def requirement_floor(name: str, requirements: Path | None = None) -> str | None:
    """The ``>=`` floor of ``name`` in requirements.txt ("6.1" for plotly), or None."""
    text = (requirements or REPO / "requirements.txt").read_text()
    m = re.search(rf"^{re.escape(name)}\s*>=\s*([\w.]+)", text, re.M)
    return m.group(1) if m else None


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _older(v: str | None, floor: str) -> bool:
    def key(s):
        return tuple(int(x) for x in re.findall(r"\d+", s)[:3])
    return v is None or key(v) < key(floor)


def raise_floors() -> list[str]:
    """pip-install ``name>=floor`` for each of :data:`FLOORS` installed below requirements.txt's floor."""
    todo = [f"{n}>={requirement_floor(n)}" for n in FLOORS
            if requirement_floor(n) and _older(installed_version(n), requirement_floor(n))]
    if todo:
        _pip(*todo)
    return todo


def sync_repository(root: Path = REPO) -> Path:
    """Update the clone at ``root`` (``git pull --ff-only``), or, when ``root`` is not a git
    clone and ``repository.url`` is set, clone the book into :data:`CLONE_DIR`. Returns the
    directory that holds ``helpers``."""
    if (root / ".git").exists():
        _run(["git", "-C", str(root), "pull", "-q", "--ff-only"])
        return root
    url, branch = repository(root / "_config.yml")
    if not url:
        return root
    if not (CLONE_DIR / ".git").exists():
        _run(["git", "clone", "-q", "--depth", "1", "-b", branch, url, str(CLONE_DIR)])
    return CLONE_DIR


def make_importable(root: Path) -> None:
    """``root`` first on ``sys.path`` and ``PYTHONPATH`` (subprocesses, such as the TF32 run, too)."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(root) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *paths])


def enable_widgets() -> None:
    """Colab's custom widget manager, which ipywidgets 8 needs there."""
    try:
        importlib.import_module("google.colab.output").enable_custom_widget_manager()
    except Exception as e:      # an older Colab: the sliders will say so themselves
        print(f"setup: could not enable Colab's widget manager ({e})")


def summary() -> str:
    """One line: GPU, compute capability, driver and runtime CUDA, NVRTC, CuPy, and which
    chapters run live; an NVRTC too old for the GPU is named with the fix. Safe anywhere."""
    if not gpu.live():
        t = gpu.target()
        return ("No CUDA GPU here (recorded mode)" + (f", simulating {gpu.describe_target(t)}" if t else "")
                + f": {common.runs_here_line()}.")
    cp = gpu.cupy()
    d = gpu.device_info()

    def ver(v):
        return f"{v // 1000}.{v % 1000 // 10}"
    try:
        nvrtc = tuple(cp.cuda.nvrtc.getVersion())
    except Exception:
        nvrtc = None
    line = (f"{d['name']}, sm_{d['cc'][0]}{d['cc'][1]}; CUDA driver {ver(cp.cuda.runtime.driverGetVersion())}, "
            f"runtime {ver(cp.cuda.runtime.runtimeGetVersion())}; NVRTC "
            f"{'.'.join(map(str, nvrtc)) if nvrtc else '?'}; CuPy {cp.__version__}; {common.runs_here_line()}.")
    need = max((v for a, v in NVRTC_FOR_ARCH.items() if a <= tuple(d["cc"])), default=None)
    if nvrtc and need and nvrtc < need:
        line += (f" NVRTC {'.'.join(map(str, nvrtc))} cannot compile for sm_{d['cc'][0]}{d['cc'][1]} (needs "
                 f"{'.'.join(map(str, need))} or newer): pip install -U \"cupy-cuda{cuda_major() or 12}x[ctk]\".")
    return line


def setup() -> None:
    """The first cell of every notebook. Outside Colab: nothing. On Colab: the steps of this
    module's docstring, then one printed line (:func:`summary`)."""
    if not on_colab():
        return
    root = sync_repository(REPO)
    make_importable(root)
    install_cupy()
    raise_floors()
    enable_widgets()
    importlib.invalidate_caches()
    gpu.live.cache_clear()             # CuPy may have just been installed
    print(summary())


if __name__ == "__main__":
    if sys.argv[1:] == ["--cupy"]:
        w = install_cupy()
        print(f"installed {w}" if w else "CuPy already importable (or no CUDA found): nothing installed")
        sys.exit(0 if cupy_importable() or w is None else 1)
    sys.exit("usage: python -m helpers.colab --cupy")
