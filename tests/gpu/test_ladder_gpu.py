"""GPU suite, chapter 7's ladder from WMMA to mma.sync: every rung is verified and timed
against cuBLAS in one run (a smaller shape than the book's, to stay quick), and the
live display says it was measured here."""
from __future__ import annotations

import pytest

import helpers  # noqa: F401
from helpers.chapters import ch07_mma_sync as ch
from helpers.runtime import catalog, gpu, launch

SHAPE = (2048, 2048, 2048)


def _runnable():
    return all(launch.unable(catalog.get(r["key"]), r["params"]) is None for r in ch.ladder_rungs())


@pytest.mark.skipif(not gpu.live() or not _runnable(), reason="needs a GPU that runs every rung (sm_80, 192 KB)")
def test_every_rung_is_verified_and_timed_in_one_run():
    recs = ch.ladder_measure("float16", SHAPE)
    assert [r["rung"] for r in recs] == list(range(len(ch.ladder_rungs())))
    for r in recs:
        assert r["source"] == "live" and r["value"] > 0 and r["reference_value"] > 0
        assert r["ratio"] == pytest.approx(r["value"] / r["reference_value"], rel=2e-3)
        assert r["rel_err"] is not None


@pytest.mark.skipif(not gpu.live() or not _runnable(), reason="needs a GPU that runs every rung (sm_80, 192 KB)")
def test_live_ladder_is_labelled_live():
    recs, where, short = ch.ladder_results("float16", SHAPE)
    assert where.startswith("measured live in this run") and "same run" in where
    assert all(r["source"] == "live" for r in recs)
