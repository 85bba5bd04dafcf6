"""Shared pytest set-up: tests under tests/gpu/ (or marked ``gpu``) skip
themselves, with the reason, when no CUDA GPU is visible."""
from __future__ import annotations

from pathlib import Path

import pytest

GPU_DIR = Path(__file__).resolve().parent / "gpu"


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
