"""GPU suite: the exercises' checks give the hints they promise (helpers/chapters/exercises.py).

Every solution passes; every starter and every deliberately wrong variant gets the hint it
targets (kernels/exercises/*.cu); a kernel that never ends and one that writes far outside
C are each caught in the child process, with a message naming what happened, and this
process's CUDA context still works afterwards. The files are checked four at a time, each in
its own child process (helpers.runtime.exercise), untimed; scripts/record_exercises.py does
the same with the solutions timed, for the recorded book. Skipped without a GPU; an
exercise whose chapter kernel this GPU cannot run (chapter 10 off Hopper) is skipped with
the reason.
"""
from __future__ import annotations

import pytest

import helpers  # noqa: F401
from helpers.chapters import exercises as ex
from helpers.runtime import catalog, gpu, launch

pytestmark = pytest.mark.skipif(not gpu.live(), reason="needs a CUDA GPU (live mode)")

CASES = [(i, v) for i, e in ex.EXERCISES.items() for v in e.variants()]


def _why_not(ex_id):
    return launch.unable(catalog.get(ex.get(ex_id).key)) if gpu.live() else "no GPU"


@pytest.fixture(scope="module")
def checked():
    """Every file that this GPU can run, through the check, untimed (four children at a time)."""
    ids = [i for i in ex.EXERCISES if not _why_not(i)]
    return ex.check_files(ids, workers=4, timed=False, say=print)


@pytest.mark.parametrize("ex_id,variant", CASES)
def test_each_file_gets_the_hint_it_targets(checked, ex_id, variant):
    why = _why_not(ex_id)
    if why:
        pytest.skip(f"this GPU cannot run exercise {ex_id}'s kernel: it {why}")
    s = checked[ex_id][variant]
    text = f"{ex_id} {variant}: {s['hint']}; {s['verdict']} | " + " | ".join(s["details"] or [])
    assert s["hint"] in s["expected"], text
    assert s["passed"] == (variant == "solution"), text


def test_a_hang_is_stopped_and_the_notebook_process_survives():
    e = ex.get("1.1")
    out = ex.run("1.1", e.text("wrong_hang"), timed=False, timeout_s=45)
    assert out["hint"] == "hang" and out["result"]["timed_out"]
    verdict, details, _ = ex.explain(e, out)
    assert "did not finish within" in " ".join(details) and "running M, N, K" in " ".join(details)
    cp = gpu.cupy()
    assert float(cp.arange(10, dtype=cp.float32).sum()) == 45.0     # this process's context still works


def test_an_illegal_address_is_caught_and_the_notebook_process_survives():
    e = ex.get("1.1")
    out = ex.run("1.1", e.text("wrong_fault"), timed=False)
    assert out["hint"] == "fault", out["result"]
    verdict, details, _ = ex.explain(e, out)
    assert "illegal" in " ".join(details).lower()
    cp = gpu.cupy()
    assert float(cp.arange(10, dtype=cp.float32).sum()) == 45.0


def test_a_right_kernel_is_timed_against_the_chapter_kernel_and_cublas():
    e = ex.get("3.1")
    out = ex.run("3.1", e.text("solution"), timed=True)
    assert out["passed"], out["result"]
    recs = out["result"]["records"]
    assert [r["kernel"] for r in recs] == ["your kernel", e.key]
    assert all(r["value"] > 0 and r["reference"] == "cuBLAS" and r["rel_err"] is not None for r in recs)
    rows, place = ex.speed_rows(e, recs)
    assert "heaven" in place and rows[0]["vs the chapter's kernel"] > 0
