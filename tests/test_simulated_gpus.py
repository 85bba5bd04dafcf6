"""nbval over every notebook of book/ as each simulated GPU (GEMM_BOOK_SIMULATE, issue #13).

Without a GPU: recorded mode pretending to be a T4, an L4, an A100 and an H200; every
notebook must run to the end (nbval-lax: no cell may raise), showing live what that GPU
could run and labelled recorded rows for the rest. With a GPU: the capability forced
down to a T4's (sm_75): the kernels a T4 could run are measured live, the rest are
recorded and labelled, and no cell raises (the other three are skipped there: the plain
live nbval run covers the GPU's own capability).

Each case runs ``pytest book`` in a subprocess (about 30-70 s on two CPU cores). The
runs are independent and each mostly waits on one notebook kernel at a time, so a module
fixture starts the selected ones together, as many at once as there are cores (without a
GPU; one at a time with one), and each test then reads its own run's result. They share
the session's nvcc cache (tests/conftest.py). Full tier only (``pytest --full``): the fast
tier runs every notebook once, as this machine.
"""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import _progress
from helpers.runtime import gpu

pytestmark = pytest.mark.full

REPO = Path(__file__).resolve().parent.parent
NAMES = sorted(gpu.SIMULATED)


def _skip_reason(name: str) -> str | None:
    if gpu.live() and name != "t4":
        return "on a GPU only the forced-down T4 run is made (the live nbval run covers this GPU)"
    return None


def _nbval_as(name: str) -> subprocess.CompletedProcess:
    env = {**os.environ, gpu.SIMULATE_VAR: name}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pytest", "book", "-q", "-p", "no:cacheprovider", "-x"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    last = (r.stdout.strip().splitlines() or ["no output"])[-1]
    _MESSAGES.put(f"simulated {name}: nbval over book/ finished in {time.monotonic() - t0:.0f} s: {last}")
    return r


_MESSAGES = queue.Queue()       # progress lines of the worker threads, printed by the main thread


@pytest.fixture(scope="module")
def runs(request):
    """{name: Future of its ``pytest book`` run} for the selected tests of this module
    (``-k`` honoured), started at once; as many run together as there are cores (live:
    one, the GPU is shared)."""
    names = [item.callspec.params["name"] for item in request.session.items
             if getattr(item, "module", None) is request.module and hasattr(item, "callspec")]
    names = [n for n in dict.fromkeys(names) if _skip_reason(n) is None]
    workers = 1 if gpu.live() else max(1, min(len(names), os.cpu_count() or 1))
    ex = ThreadPoolExecutor(max_workers=workers)
    futures = {n: ex.submit(_nbval_as, n) for n in names}
    _progress.say(f"simulated GPUs: nbval over book/ as {', '.join(names)} ({workers} at a time)")
    yield futures
    ex.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("name", NAMES)
def test_every_notebook_runs_as_this_gpu(name, runs):
    why = _skip_reason(name)
    if why:
        pytest.skip(why)
    if name in runs:
        _progress.wait([runs[name]], f"simulated {name}", messages=_MESSAGES)
    r = runs[name].result() if name in runs else _nbval_as(name)
    _progress.wait([], "", messages=_MESSAGES)
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, f"nbval as a simulated {name}:\n{tail}"
    assert " passed" in tail and "failed" not in tail.splitlines()[-1], tail
