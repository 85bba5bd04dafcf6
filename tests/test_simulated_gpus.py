"""nbval over every notebook of book/ as each simulated GPU (GEMM_BOOK_SIMULATE, issue #13).

Without a GPU: recorded mode pretending to be a T4, an L4, an A100 and an H200; every
notebook must run to the end (nbval-lax: no cell may raise), showing live what that GPU
could run and labelled recorded rows for the rest. With a GPU: the capability forced
down to a T4's (sm_75): the kernels a T4 could run are measured live, the rest are
recorded and labelled, and no cell raises (the other three are skipped there: the plain
live nbval run covers the GPU's own capability).

Each case runs ``pytest book`` in a subprocess (about 30-100 s on two CPU cores).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.runtime import gpu

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(gpu.SIMULATED))
def test_every_notebook_runs_as_this_gpu(name):
    if gpu.live() and name != "t4":
        pytest.skip("on a GPU only the forced-down T4 run is made (the live nbval run covers this GPU)")
    env = {**os.environ, gpu.SIMULATE_VAR: name}
    r = subprocess.run([sys.executable, "-m", "pytest", "book", "-q", "-p", "no:cacheprovider", "-x"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, f"nbval as a simulated {name}:\n{tail}"
    assert " passed" in tail and "failed" not in tail.splitlines()[-1], tail
