"""Shared pytest set-up: tests under tests/gpu/ (or marked ``gpu``) skip
themselves, with the reason, when no CUDA GPU is visible; one nvcc result cache
for the whole session (``$GEMM_BOOK_NVCC_CACHE``, see
:func:`helpers.runtime.compile.nvcc_check`), a fresh temporary directory, so that a build
is not made twice by the compile tests, the notebooks (nbval's kernels, the
simulated-GPU runs of tests/test_simulated_gpus.py) or the tuner's worker processes,
which inherit it; and the nvcc builds of the compile tests made in the background.

Background builds: a test module may define ``nvcc_build(item)``, the nvcc build
``(file, entry, defines, arch)`` a test of it reads through ``nvcc_check`` (or None).
As soon as collection ends, the builds of the selected tests start in a separate process
at the lowest CPU priority (tests/_nvcc_prebuild.py: ``nice 19``, one build per core,
into the session's cache), and the tests of such modules run last. nvcc is CPU-bound and
CI has two cores, while much of the session keeps only one busy (book builds, nbval's
notebook kernels, cpp checks): the builds take that idle core instead of a phase of
their own, and mostly yield it to every other test (measured: the Chromium pass over the
book 111 s alone, 137 s beside the background builds). When the first such test starts, the
fixture ``nvcc_background_builds`` stops the background process; what it had not built
yet is built then, at normal priority, by the module itself.
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

GPU_DIR = Path(__file__).resolve().parent / "gpu"
NVCC_CACHE_VAR = "GEMM_BOOK_NVCC_CACHE"      # helpers.runtime.compile.NVCC_CACHE_VAR
_OWN_CACHE = []


def pytest_configure(config):
    if not os.environ.get(NVCC_CACHE_VAR):   # set by a parent run (or by hand): share it
        d = tempfile.mkdtemp(prefix="gemm-nvcc-cache-")
        os.environ[NVCC_CACHE_VAR] = d
        _OWN_CACHE.append(d)


def pytest_unconfigure(config):
    _stop_background_builds()
    while _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE.pop(), ignore_errors=True)
        os.environ.pop(NVCC_CACHE_VAR, None)


def _gpu_live() -> tuple[bool, str]:
    try:
        from helpers.runtime import gpu
        if gpu.live():
            return True, ""
    except Exception as e:  # helpers broken or absent: tests of it will say so
        return False, f"helpers.runtime.gpu could not tell ({type(e).__name__}: {e})"
    return False, ("no CUDA GPU visible (cupy.cuda.is_available() is False, "
                   "or GEMM_BOOK_FORCE_RECORDED=1): GPU tests run on the GPU runner")


def pytest_report_header(config):
    live, why = _gpu_live()
    return "gemm book mode: " + ("live (CUDA GPU visible)" if live else "recorded: " + why)


def _nvcc_build_of(item):
    fn = getattr(getattr(item, "module", None), "nvcc_build", None)   # nbval cells have no module
    return fn if callable(fn) else None


def pytest_collection_modifyitems(config, items):
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
