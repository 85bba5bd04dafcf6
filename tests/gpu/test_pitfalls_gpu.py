"""GPU suite: every pitfall of the appendix is caught by its check, and every fix passes.

Skipped without a GPU; the compute-sanitizer cases skip (with the reason) where it is not
installed. Runs helpers/chapters/ch11_pitfalls.py's ``*_run`` functions, the same ones the
notebook and scripts/record_pitfalls.py call; the hanging or faulting launches happen in
child processes with time limits, so this process's CUDA context must still work at the end.
"""
from __future__ import annotations

import pytest

import helpers  # noqa: F401
from helpers.chapters import ch11_pitfalls as ch
from helpers.runtime import gpu, isolated, launch, verify

pytestmark = pytest.mark.skipif(not gpu.live(), reason="needs a CUDA GPU (live mode)")
needs_sanitizer = pytest.mark.skipif(isolated.sanitizer_path() is None, reason="compute-sanitizer not found")


def test_missing_barrier_fails_the_reference_check_in_some_runs():
    cp = gpu.cupy()
    wrong = {"dbuf_fixed": 0, "dbuf_no_barrier_pitfall": 0}
    for _ in range(10):
        A, B = verify.random_matrix((2048, 2048)), verify.random_matrix((2048, 2048))
        ref = verify.reference_gemm(A, B)
        for key in wrong:
            C = cp.empty((2048, 2048), cp.float32)
            verify.poison(C)
            launch.gemm(key, A, B, C)
            try:
                verify.check(C, ref, "float32", what=key)
            except verify.WrongResult:
                wrong[key] += 1
    assert wrong["dbuf_fixed"] == 0
    assert wrong["dbuf_no_barrier_pitfall"] >= 1, "the race never showed in 10 runs at 2048^3 (racecheck still must)"


@needs_sanitizer
def test_racecheck_catches_the_missing_barrier_only():
    rows = {r["kernel"]: r for r in (ch._san("racecheck", k, (96, 80, 64), 600)
                                     for k in ("dbuf_fixed", "dbuf_no_barrier_pitfall"))}
    assert rows["dbuf_no_barrier_pitfall"]["caught"] and rows["dbuf_no_barrier_pitfall"]["hazards"], rows
    assert not rows["dbuf_fixed"]["caught"] and rows["dbuf_fixed"]["child"]["ok"], rows


def test_barrier_in_a_branch_is_wrong_or_hangs_and_the_fix_passes():
    fixed, broken = (isolated.gemm_child(k, (1000, 1000, 1000), timeout_s=120)
                     for k in ("guard_fixed", "sync_in_branch_pitfall"))
    assert not fixed["timed_out"] and fixed["result"]["ok"], fixed["result"]
    assert broken["timed_out"] or broken["result"]["ok"] is False, broken["result"]


@needs_sanitizer
def test_synccheck_passes_the_fix_and_the_reference_check_is_what_catches_the_branch():
    """synccheck must run and pass the fixed kernel; on the H200 it also reported nothing for
    the broken one (recorded in results/h200-pitfalls.json), so the catch is the reference
    check (test_barrier_in_a_branch_is_wrong_or_hangs_and_the_fix_passes)."""
    rows = {r["kernel"]: r for r in (ch._san("synccheck", k, (70, 100, 40), 600)
                                     for k in ("guard_fixed", "sync_in_branch_pitfall"))}
    assert rows["guard_fixed"]["caught"] is False, rows
    assert rows["sync_in_branch_pitfall"]["caught"] is not None, rows     # it ran, whatever it found


def test_unswapped_transpose_is_caught_and_the_fix_is_exact():
    rows = ch.transpose_run()["rows"]
    for r in rows:
        if r["kernel"] == "transpose_swapped":
            assert r["wrong"] == 0 and r["nans"] == 0, r
        else:
            assert r["wrong"] > 0, r
            if r["shape"][0] != r["shape"][1]:
                assert r["nans"] > 0, r


def test_misaligned_view_is_refused_faults_only_in_a_child_and_the_copy_passes():
    d = ch.misaligned_run()
    assert d["view_ptr_mod_16"] == 4 and d["copy_ptr_mod_16"] == 0
    assert d["precondition"] and "% 16" in d["precondition"], d["precondition"]
    assert d["fixed_rel_err"] <= verify.TOLERANCE["float32"]
    u = d["unchecked"]
    assert u["timed_out"] or u["rc"] != 0, u
    assert "misaligned" in (u["error"] or "").lower() or u["timed_out"], u


def test_host_clock_without_sync_reports_a_time_far_below_the_events():
    rows = ch.timing_run()["rows"]
    assert rows[0]["ms"] < 0.5 * rows[2]["ms"], rows


def test_fp16_accumulator_error_grows_past_the_tolerance():
    d = ch.fp16_accumulator_run(Ks=(1024, 65536))
    small, big = d["rows"][0], d["rows"][1]
    assert big["fp32 accumulator"] <= d["tolerance"] < big["fp16 accumulator"], d
    assert big["fp16 accumulator"] > small["fp16 accumulator"], d


def test_this_process_still_launches_after_all_of_it():
    cp = gpu.cupy()
    A, B = verify.random_matrix((70, 40)), verify.random_matrix((40, 100))
    C = cp.empty((70, 100), cp.float32)
    verify.poison(C)
    launch.gemm("guard_fixed", A, B, C)
    verify.check(C, verify.reference_gemm(A, B), "float32", what="guard_fixed")
