"""Shared pytest set-up: the two tiers, progress lines, the GPU skip, the nvcc cache and
the background nvcc builds.

Two tiers. ``pytest`` is the fast tier, what a newcomer runs (about five minutes on two
cores): helper unit tests, every notebook once in recorded mode, one book build with a few
representative pages in Chromium, and the nvcc check of each kernel's shipped defaults for
the oldest and the newest architecture it claims. ``pytest --full`` (or ``GEMM_BOOK_FULL=1``)
is the full tier that CI runs: every shipped configuration for every architecture, the
instrumented builds, the four simulated GPUs, every page in Chromium. A test belongs to the
full tier alone when it is marked ``full`` (a whole module: ``pytestmark = pytest.mark.full``),
or when its module's ``fast_tier(item)`` returns False for it; the fast tier deselects those
(it does not skip them) and the summary says how many it left to ``--full``.

Progress: long steps print a line at least every 15 s (tests/_progress.py, bound here).

GPU: tests under tests/gpu/ (or marked ``gpu``) skip themselves, with the reason, when no
CUDA GPU is visible.

nvcc cache: every nvcc result (ptxas resource reports, SASS listings) is kept on disk in
``$GEMM_BOOK_NVCC_CACHE``, keyed by the source with its includes, the options and the nvcc
version (:func:`helpers.runtime.compile.nvcc_check`). Unless the variable is set, the
session points it at ``$XDG_CACHE_HOME/nine-heavens-gemm/nvcc`` (``~/.cache/...``), which
outlives the session: a second run compiles nothing it compiled before. Child processes
(nbval's notebook kernels, the simulated-GPU runs, the tuner's workers) inherit it.

Background builds: a test module may define ``nvcc_build(item)``, the nvcc build
``(file, entry, defines, arch)`` a test of it reads through ``nvcc_check`` (or None).
As soon as collection ends, the builds of the selected tests start in a separate process
at the lowest CPU priority (tests/_nvcc_prebuild.py: ``nice 19``, one build per core,
into the cache), and the tests of such modules run last. nvcc is CPU-bound and CI has two
cores, while much of the session keeps only one busy (book builds, nbval's notebook
kernels): the builds take that idle core instead of a phase of their own. When the first
such test starts, the fixture ``nvcc_background_builds`` stops the background process; what
it had not built yet is built then, at normal priority, by the module itself.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import _progress
import _tier

GPU_DIR = Path(__file__).resolve().parent / "gpu"
NVCC_CACHE_VAR = "GEMM_BOOK_NVCC_CACHE"      # helpers.runtime.compile.NVCC_CACHE_VAR
def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="the full tier, what .ci/run runs (about 10 minutes on two cores): every shipped "
                          "kernel configuration for every architecture, the four simulated GPUs, every "
                          "page in Chromium. Without it, the fast tier (about 4 minutes on two cores, 7 with an empty nvcc cache).")


def nvcc_cache_dir() -> Path:
    """Where the nvcc results live between sessions: ``$XDG_CACHE_HOME/nine-heavens-gemm/nvcc``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nine-heavens-gemm" / "nvcc"


def pytest_configure(config):
    _progress.bind(config)
    if not os.environ.get(NVCC_CACHE_VAR):   # set by a parent run (or by hand): share it
        d = nvcc_cache_dir()
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:                      # a read-only home: a cache for this session only
            d = Path(tempfile.mkdtemp(prefix="gemm-nvcc-cache-"))
        os.environ[NVCC_CACHE_VAR] = str(d)


def pytest_unconfigure(config):
    _stop_background_builds()


def _gpu_live() -> tuple[bool, str]:
    try:
        from helpers.runtime import gpu
        if gpu.live():
            return True, ""
    except Exception as e:  # helpers broken or absent: tests of it will say so
        return False, f"helpers.runtime.gpu could not tell ({type(e).__name__}: {e})"
    return False, f"{gpu.recorded_reason()}; GPU tests run on the GPU runner"


def pytest_report_header(config):
    live, why = _gpu_live()
    tier = ("tier: full (every configuration x architecture, the simulated GPUs, every page)" if _tier.full(config)
            else "tier: fast (pytest --full adds every configuration x architecture, the simulated GPUs, every page)")
    return [tier, "gemm book mode: " + ("live (CUDA GPU visible)" if live else "recorded: " + why),
            f"nvcc cache: {os.environ.get(NVCC_CACHE_VAR)}"]


def _in_fast_tier(item) -> bool:
    if item.get_closest_marker("full"):
        return False
    fn = getattr(getattr(item, "module", None), "fast_tier", None)
    return fn(item) if callable(fn) else True


_LEFT_TO_FULL = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _LEFT_TO_FULL and _LEFT_TO_FULL[0]:
        terminalreporter.write_line(
            f"fast tier: {_LEFT_TO_FULL[0]} tests of the full tier were not run "
            "(pytest --full runs them: every configuration x architecture, the simulated GPUs, every page)")


def _nvcc_build_of(item):
    fn = getattr(getattr(item, "module", None), "nvcc_build", None)   # nbval cells have no module
    return fn if callable(fn) else None


def pytest_collection_modifyitems(config, items):
    if not _tier.full(config):
        dropped = [i for i in items if not _in_fast_tier(i)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if _in_fast_tier(i)]
        _LEFT_TO_FULL[:] = [len(dropped)]
    # Tests that read background nvcc builds last (stable: each module stays in one piece).
    items[:] = [i for i in items if not _nvcc_build_of(i)] + [i for i in items if _nvcc_build_of(i)]
    live, why = _gpu_live()
    if live:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if GPU_DIR in path.parents or item.get_closest_marker("gpu"):
            item.add_marker(skip)


# ---------------------------------------------------------------- background nvcc builds
_BACKGROUND = []           # the running tests/_nvcc_prebuild.py process, if any


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get(NVCC_CACHE_VAR):
        return                      # under xdist each worker compiles what its tests need
    jobs = {}
    for item in session.items:
        build = _nvcc_build_of(item)
        job = build(item) if build else None
        if job:
            jobs.setdefault(json.dumps(job, sort_keys=True), list(job))
    if not jobs:
        return
    tmp = tempfile.mkdtemp(prefix="gemm-nvcc-prebuild-")   # its temporary files: a stopped nvcc leaves some
    env = {**os.environ, "TMPDIR": tmp}
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_nvcc_prebuild.py"))],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    proc.stdin.write(json.dumps(list(jobs.values())).encode())
    proc.stdin.close()
    _BACKGROUND.append((proc, tmp))
    _progress.say(f"nvcc: {len(jobs)} builds started in the background (lowest priority; "
                  "the compile checks run last and build what is left)")


def _stop_background_builds():
    while _BACKGROUND:
        proc, tmp = _BACKGROUND.pop()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)      # its own session: it and its nvcc runs
            except (AttributeError, ProcessLookupError, PermissionError):
                proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def nvcc_background_builds():
    """Stop the background builds (see the module doc): the builds they finished are in the
    session's nvcc cache, the caller builds the rest."""
    _stop_background_builds()
