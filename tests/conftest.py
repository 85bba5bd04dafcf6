"""Shared pytest set-up: tests under tests/gpu/ (or marked ``gpu``) skip
themselves, with the reason, when no CUDA GPU is visible; and one nvcc result cache
for the whole session (``$GEMM_BOOK_NVCC_CACHE``, see
:func:`helpers.runtime.compile.nvcc_check`), a fresh temporary directory, so that a build
the compile tests made is not made again by the notebooks (nbval's kernels, the
simulated-GPU runs of tests/test_simulated_gpus.py) or the tuner's worker processes,
which inherit it."""
from __future__ import annotations

import os
import shutil
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


def pytest_collection_modifyitems(config, items):
    live, why = _gpu_live()
    if live:
        return
    skip = pytest.mark.skip(reason=why)
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if GPU_DIR in path.parents or item.get_closest_marker("gpu"):
            item.add_marker(skip)
