"""The pitfalls appendix without a GPU (kernels/11_pitfalls.cu, helpers/chapters/ch11_pitfalls.py,
helpers/runtime/isolated.py, scripts/record_pitfalls.py).

The nvcc builds of the six kernels for every architecture they claim are in
tests/test_compile.py (it reads the catalog); nbval runs book/11_pitfalls.ipynb. Here: the
catalog entries, the child-process runner (time limit, process group, result line, the
sanitizer's summary), and the recorded rendering with and without a results file.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch11_pitfalls as ch
from helpers.figures import show
from helpers.runtime import catalog, compile as kc, gpu, isolated, results

PAIRS = {"dbuf_no_barrier_pitfall": "dbuf_fixed", "sync_in_branch_pitfall": "guard_fixed",
         "transpose_unswapped_pitfall": "transpose_swapped"}


def test_catalog_pairs_a_broken_entry_with_its_fix_in_one_file():
    mine = {k: s for k, s in catalog.KERNELS.items() if s.chapter == 11}
    assert set(mine) == set(PAIRS) | set(PAIRS.values())
    for broken, fixed in PAIRS.items():
        b, f = catalog.get(broken), catalog.get(fixed)
        assert b.pitfall and "pitfall" in b.title.lower() and not f.pitfall
        assert b.file == f.file == "11_pitfalls.cu" and b.entry != f.entry
        assert b.min_cc == f.min_cc == ch.PITFALL_CC and b.runs_on((7, 5)) and not b.runs_on((6, 1))
        assert (b.op, b.defaults, b.block(b.defaults)) == (f.op, f.defaults, f.block(f.defaults))
        assert f"void {b.entry}(" in kc.source(b.file).replace("\n", " ") or b.entry in kc.source(b.file)
    assert catalog.get("sync_in_branch_pitfall").pitfall.lower().count("subprocess") == 1


def test_borrowed_kernels_exist():
    for key in (ch.VEC4, *ch.SPILL_PAIR, *ch.ACC_PAIR):
        catalog.get(key)
    assert catalog.get(ch.VEC4).align == 16


def test_run_kills_the_whole_process_group_at_the_time_limit(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); print('started', flush=True); time.sleep(60)")
    t0 = time.time()
    r = isolated.run([sys.executable, "-c", code], timeout_s=3)
    assert r["timed_out"] and r["rc"] is None and time.time() - t0 < 30
    assert "started" in r["stdout"]
    pid = int(pidfile.read_text())
    for _ in range(50):                       # the grandchild was killed with its group
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {pid} survived the time limit")


def test_run_returns_status_and_output():
    r = isolated.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)"], 60)
    assert (r["rc"], r["timed_out"], r["stdout"].strip(), r["stderr"].strip()) == (7, False, "out", "err")


def test_sanitizer_summary_and_reports_are_parsed():
    race = ("========= Error: Race reported between Write access at dbuf_gemm_broken+0x2a0\n"
            "=========     and Read access at dbuf_gemm_broken+0x1f0 [256 hazards]\n"
            "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n")
    sync = ("========= Barrier error detected. Divergent thread(s) in warp\n"
            "=========     at guard_gemm_broken+0x120\n========= ERROR SUMMARY: 4 errors\n")
    assert isolated.summary(race) == {"errors": None, "hazards": 2}
    assert isolated.summary(sync) == {"errors": 4, "hazards": None}
    assert isolated.summary("========= ERROR SUMMARY: 0 errors") == {"errors": 0, "hazards": None}
    assert isolated.reports(race)[0].startswith("Error: Race reported between Write access")
    assert isolated.reports(sync) == ["Barrier error detected. Divergent thread(s) in warp"]
    assert isolated.parse_result("noise\n" + isolated.RESULT_TAG + '{"ok": true}\n') == {"ok": True}
    assert isolated.parse_result("nothing") is None


def test_sanitize_says_when_compute_sanitizer_is_missing(monkeypatch):
    monkeypatch.setattr(isolated, "sanitizer_path", lambda: None)
    with pytest.raises(FileNotFoundError, match="compute-sanitizer"):
        isolated.sanitize("racecheck", "dbuf_fixed", (64, 64, 64))
    with pytest.raises(ValueError, match="tool="):
        isolated.sanitize("nope", "dbuf_fixed", (64, 64, 64))
    r = ch._san("racecheck", "dbuf_fixed", (64, 64, 64), 10)
    assert r["caught"] is None and "compute-sanitizer" in r["skipped"]


def test_a_child_reports_its_failure_as_a_result_line(monkeypatch):
    """Without a GPU the child cannot launch: it says so in its result line, and the
    parent (this process) carries on."""
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    r = isolated.gemm_child("guard_fixed", (8, 8, 8), timeout_s=120)
    assert not r["timed_out"] and r["rc"] == 3, r["stderr"][-500:]
    assert "this call needs a GPU" in r["result"]["error"]


# ------------------------------------------------------------------ recorded rendering
def _doc() -> dict:
    san = lambda tool, key, caught: {"kernel": key, "tool": tool, "shape": [96, 80, 64], "caught": caught, "rc": int(caught),  # noqa: E731
                                     "timed_out": False, "errors": 3 if caught else 0, "hazards": 2 if caught else 0,
                                     "reports": ["Error: Race reported"] if caught else [], "wall_s": 9.0}
    return {"provenance": {"gpu": "NVIDIA H200", "date": "2026-12-02", "commit": "abc"},
            "double_buffer": {"shape": [1024] * 3,
                              "reference": [{"kernel": "dbuf_fixed", "runs": 5, "wrong": 0, "max_rel_err": 1e-6, "message": ""},
                                            {"kernel": "dbuf_no_barrier_pitfall", "runs": 5, "wrong": 5,
                                             "max_rel_err": 0.4, "message": "relative error 4e-1"}],
                              "racecheck": [san("racecheck", "dbuf_fixed", False),
                                            san("racecheck", "dbuf_no_barrier_pitfall", True)]},
            "sync_in_branch": {"shape": [1000] * 3,
                               "reference": [{"kernel": "guard_fixed", "timed_out": False, "rc": 0, "wall_s": 3.0, "ok": True,
                                              "rel_err": 1e-6, "nans": 0, "message": "ok"},
                                             {"kernel": "sync_in_branch_pitfall", "timed_out": True, "rc": None,
                                              "wall_s": 120.0, "ok": None, "rel_err": None, "nans": None, "message": ""}],
                               "synccheck": [san("synccheck", "guard_fixed", False),
                                             san("synccheck", "sync_in_branch_pitfall", False)]},
            "transpose": {"rows": [{"kernel": "transpose_swapped", "shape": [1000, 600], "wrong": 0, "nans": 0, "total": 600000},
                                   {"kernel": "transpose_unswapped_pitfall", "shape": [1000, 600], "wrong": 500000,
                                    "nans": 300000, "total": 600000}]},
            "misaligned": {"shape": [256] * 3, "view_ptr_mod_16": 4, "copy_ptr_mod_16": 0,
                           "precondition": "PreconditionError: A.data.ptr % 16=4: must be 0", "fixed_rel_err": 1e-7,
                           "unchecked": {"rc": 3, "timed_out": False, "error": "CUDARuntimeError: cudaErrorMisalignedAddress"}},
            "timing": {"shape": [2048] * 3, "rows": [{"how": "no sync", "ms": 0.01, "TFLOP/s": 1700.0, "x events": 170.0},
                                                     {"how": "sync", "ms": 1.8, "TFLOP/s": 9.5, "x events": 0.94},
                                                     {"how": "events", "ms": 1.7, "TFLOP/s": 10.1, "x events": 1.0}]},
            "fp16_accumulator": {"M": 128, "N": 256, "tolerance": 2e-3,
                                 "rows": [{"inputs": "uniform [0, 1)", "K": 65536, "fp32 accumulator": 1.5e-4,
                                           "fp16 accumulator": 0.02},
                                          {"inputs": "standard normal", "K": 65536, "fp32 accumulator": 3e-4,
                                           "fp16 accumulator": 1e-3}]}}


@pytest.fixture
def recorded_mode(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    monkeypatch.delenv(gpu.SIMULATE_VAR, raising=False)
    gpu.live.cache_clear()
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    shown = []
    monkeypatch.setattr(show, "_display", lambda obj=None, raw=None: shown.append(getattr(obj, "data", str(obj))))
    yield type("Recorded", (), {"dir": tmp_path, "shown": shown})
    gpu.live.cache_clear()


SHOWS = ("show_double_buffer", "show_sync_in_branch", "show_transpose", "show_misaligned", "show_timing",
         "show_fp16_accumulator")


def test_missing_record_is_a_labelled_line(recorded_mode):
    for name in SHOWS:
        assert getattr(ch, name)() is None
    out = "\n".join(recorded_mode.shown)
    assert out.count("not recorded yet (results/h200-pitfalls.json is written on a GPU)") == len(SHOWS)
    assert "python scripts/record_pitfalls.py" in out


def test_recorded_pitfalls_are_shown_with_where_they_came_from(recorded_mode):
    (recorded_mode.dir / "h200-pitfalls.json").write_text(json.dumps(_doc()))
    for name in SHOWS:
        assert getattr(ch, name)() is not None, name
    out = "\n".join(recorded_mode.shown)
    assert out.count("recorded on NVIDIA H200 (2026-12-02, results/h200-pitfalls.json)") >= len(SHOWS)
    assert "timed out after 120.0 s (hang)" in out and "CAUGHT: 2 hazards" in out and "clean: 0 errors" in out


def test_recorded_checks_still_assert(recorded_mode):
    doc = _doc()
    doc["double_buffer"]["racecheck"][1]["caught"] = False        # racecheck missed the race
    (recorded_mode.dir / "h200-pitfalls.json").write_text(json.dumps(doc))
    with pytest.raises(AssertionError, match="racecheck"):
        ch.show_double_buffer()


def test_recorder_verdicts():
    path = os.path.join(os.path.dirname(__file__), "..", "scripts", "record_pitfalls.py")
    spec = importlib.util.spec_from_file_location("record_pitfalls", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lines = mod.verdicts(_doc())
    assert all(ok for ok, _ in lines), [ln for ok, ln in lines if not ok]
    doc = _doc()
    doc["transpose"]["rows"][1]["wrong"] = 0
    assert not all(ok for ok, _ in mod.verdicts(doc))
