"""The exercises (helpers/chapters/exercises.py, kernels/exercises/), without a GPU.

1. Files: every exercise has its starter, solution and at least one wrong variant; each is
   the chapter's entry point (same name), and the notebook cell of each exercise holds
   the starter as it is in kernels/exercises/.
2. nvcc: every starter, solution and wrong variant compiles, plainly and instrumented
   (-DRECORD_OWNER=1), for the oldest and newest architecture its catalog entry claims
   (skipped, with the reason, without nvcc).
3. The diagnosis (helpers.models.exercise): the order of the hints, the owner map read
   back as block, warp and lane, the sectors of a warp's store for chapter 1's two thread
   orders, the bank cost of chapter 4's layouts.
4. The child's logic (helpers.runtime.exercise._child) driven by a fake CuPy whose
   "kernels" are NumPy functions chosen by a marker in the source: a right kernel, one
   that leaves elements unwritten, one that races, one wrong at the tile edge, one that
   writes past C, one that faults, one in the wrong thread order, a compile error at the
   reader's line; and the parent's time limit (a child killed mid-run says so).
5. Recorded mode: the cell says there is no GPU and shows the recorded results, or "not
   recorded yet" without the file.
"""
from __future__ import annotations

import json
import re
import types
from pathlib import Path

import nbformat
import numpy as np
import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import exercises as ex
from helpers.models import banks, exercise as model
from helpers.runtime import catalog, compile as kc, exercise as rt

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "book"
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")


# ------------------------------------------------------------------ 1. files and cells
@pytest.mark.parametrize("ex_id", list(ex.EXERCISES))
def test_every_exercise_has_its_files(ex_id):
    e = ex.get(ex_id)
    assert e.wrong, f"{ex_id}: at least one wrong variant"
    spec = catalog.get(e.key)
    for v in e.variants():
        text = e.text(v)
        assert re.search(rf"\b{spec.entry}\s*\(", text), f"{e.file(v)}: must define {spec.entry}"
        assert set(e.expected(v)) <= set(model.HINTS)
    assert "TODO" in e.text("starter") and "TODO" not in e.text("solution")


def _exercise_cells():
    out = {}
    for nb_path in sorted(BOOK.glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        for c in nb.cells:
            m = re.search(r'exercises\.check\("([\d.]+)",\s*r"""\n?(.*)"""\)\s*$', c.source, re.S)
            if c.cell_type == "code" and m:
                out[m.group(1)] = (nb_path.name, m.group(2))
    return out


def test_each_notebook_cell_holds_its_starter():
    cells = _exercise_cells()
    for ex_id, e in ex.EXERCISES.items():
        assert ex_id in cells, f"exercise {ex_id}: no cell `exercises.check(\"{ex_id}\", r\"\"\"...\"\"\")` in book/"
        name, src = cells[ex_id]
        assert name.startswith(f"{e.chapter:02d}_"), f"exercise {ex_id} is in {name}"
        assert src.strip() == e.text("starter").strip(), f"{name}: the cell of {ex_id} differs from {e.file()}"


# ------------------------------------------------------------------ 2. nvcc
NVCC = kc.nvcc_path()


def _claims(spec) -> list:
    if spec.arch_specific:
        return ["sm_90a"]
    ok = [a for a in ARCHS if spec.runs_on((int(a[3]), int(a[4])))]
    return sorted({ok[0], ok[-1]})


COMPILE_CASES = [(ex_id, v, arch, owner) for ex_id, e in ex.EXERCISES.items() for v in e.variants()
                 for arch in _claims(catalog.get(e.key)) for owner in (0, 1)]


def fast_tier(item) -> bool:
    """The fast tier's share (tests/conftest.py): each file's plain build for the newest
    architecture its exercise claims; the instrumented builds and the oldest architecture
    are full-tier only."""
    cs = getattr(item, "callspec", None)
    if item.originalname != "test_every_exercise_file_compiles" or cs is None:
        return True
    e = ex.get(cs.params["ex_id"])
    return cs.params["owner"] == 0 and cs.params["arch"] == _claims(catalog.get(e.key))[-1]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: the exercise compile checks need the CUDA compiler")
@pytest.mark.parametrize("ex_id,variant,arch,owner", COMPILE_CASES)
def test_every_exercise_file_compiles(ex_id, variant, arch, owner):
    e = ex.get(ex_id)
    spec = catalog.get(e.key)
    defines = {**spec.defines(spec.defaults), "RECORD_OWNER": owner}
    r = kc.nvcc_check(e.file(variant), spec.entry, defines, arch=arch, extra_options=spec.compile_options)
    assert r["registers"] > 0


# ------------------------------------------------------------------ 3. the diagnosis
def test_hints_come_in_order():
    d = model.diagnose
    assert d({"compile_error": "x", "timed_out": True})["hint"] == "compile"
    assert d({"timed_out": True, "error": "e"})["hint"] == "hang"
    assert d({"error": "cudaErrorIllegalAddress"})["hint"] == "fault"
    assert d({"guard_writes": 3, "nondeterministic": 5})["hint"] == "out_of_bounds"
    assert d({"nondeterministic": 5, "aligned_ok": True})["hint"] == "tile_edge"
    assert d({"nondeterministic": 5, "aligned_ok": False})["hint"] == "race"
    assert d({"aligned_ok": True, "barriers": 1, "barriers_needed": 2})["hint"] == "race"
    assert d({"ok": True, "barriers": 1, "barriers_needed": 2})["hint"] == "race"
    assert d({"aligned_ok": True, "never_written": 4})["hint"] == "tile_edge"
    # wrong on whole tiles too: not the edge's fault, wherever the wrong elements lie
    assert d({"edge_only": True, "aligned_ok": False})["hint"] == "wrong_values"
    assert d({"edge_only": True})["hint"] == "tile_edge"
    assert d({"never_written": 4})["hint"] == "never_written"
    assert d({})["hint"] == "wrong_values"
    assert d({"ok": True, "stores": 32, "stores_model": 4})["hint"] == "thread_order"
    assert d({"ok": True, "wavefronts": 256, "wavefronts_model": 32})["hint"] == "bank_conflicts"
    assert d({"ok": True, "stores": 4, "stores_model": 4, "barriers": 2, "barriers_needed": 2}) == \
        {"hint": "pass", "passed": True}


def test_owner_codes_read_back_and_locate():
    assert model.decode_owner(-1, 4) == {}
    assert model.decode_owner((2 * 4 + 3) * 1024 + 70, 4) == {"block": (3, 2), "thread": 70, "warp": 2, "lane": 6}
    bad = np.zeros((40, 40), bool)
    bad[33:, :] = True                        # only the last partial row of 32-row tiles
    owner = np.arange(1600).reshape(40, 40)
    w = model.locate(bad, np.zeros_like(bad), owner, 2, tile=(32, 32))
    assert w["edge_only"] and w["wrong"] == 7 * 40 and w["rows"] == [33, 39] and len(w["examples"]) == 4
    assert not model.locate(np.ones((40, 40), bool), bad, None, 2, tile=(32, 32))["edge_only"]
    # a shape smaller than one tile has no whole tile: "only at the edge" says nothing there
    assert not model.locate(np.ones((37, 52), bool), np.zeros((37, 52), bool), None, 1, tile=(64, 64))["edge_only"]


def test_store_sectors_tell_chapter_1s_thread_orders_apart():
    p = catalog.get("naive_yfirst").defaults
    shape = (64, 64, 8)
    y = model.warp_store_sectors(catalog.get("naive_yfirst").owner(p, shape))
    x = model.warp_store_sectors(catalog.get("naive_xfirst").owner(p, shape))
    assert (y["sectors"], y["rows"]) == (4, 1) and (x["sectors"], x["cols"]) == (32, 1)


def test_barriers_are_counted_outside_comments():
    assert model.barrier_count("__syncthreads(); // __syncthreads();\n/* __syncthreads() */ __syncthreads ( );") == 2
    assert model.barrier_count(ex.get("3.1").text("solution")) == 2
    assert model.barrier_count(ex.get("3.1").text("wrong_one_barrier")) == 1


def test_bank_cost_of_chapter_4s_layouts():
    q = catalog.get("tile1d_swizzle").full()
    sw = [banks.a_tile_offset(q, m, k) for m in range(q["BM"]) for k in range(q["BK"])]
    rm = [m * q["BK"] + k for m in range(q["BM"]) for k in range(q["BK"])]
    a, b = model.tile1d_a_costs(sw, q), model.tile1d_a_costs(rm, q)
    assert a["one_to_one"] and a["read"] == 4 * q["BK"] // 4 and b["read"] > a["read"]
    mis = [m * q["BK"] + (k ^ (m % 8)) for m in range(q["BM"]) for k in range(q["BK"])]
    assert "error" in model.tile1d_a_costs(mis, q)


# ------------------------------------------------------------------ 4. the child, with a fake CuPy
class _CompileException(Exception):
    pass


class _FakeKernel:
    def __init__(self, name, code, options):
        self.name, self.code, self.options = name, code, options
        m = re.search(r"FAKE: (\w+)", code)
        self.kind = m.group(1) if m else "right"
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid, block, args, shared_mem=0):
        if self.name == "exercise_probe":
            out = args[0]
            BM, BK = 64, 32
            rowmajor = self.kind == "rowmajor"
            q = {"BM": BM, "BK": BK, "PAD": 0, "LAYOUT": 0 if rowmajor else 1}
            out[:] = [banks.a_tile_offset(q, m, k) for m in range(BM) for k in range(BK)]
            return
        A, B, C, M, N, K = args[:6]
        owner = args[6] if len(args) > 6 else None
        if self.kind == "fault":
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
        C[:] = (A.astype(np.float64) @ B.astype(np.float64)).astype(C.dtype)
        if self.kind == "never":
            C[1:, :] = np.nan
        elif self.kind == "race":
            C[0, 0] += np.random.default_rng().standard_normal()
        elif self.kind == "edge" and M % 32:
            C[-1, :] = 0
        elif self.kind == "oob":
            owner_buf = C
            while owner_buf.base is not None:
                owner_buf = owner_buf.base
            owner_buf.reshape(-1)[-1] = 1.0
        if owner is not None:
            key = "naive_xfirst" if self.kind == "column" else FakeCupy.key
            spec = catalog.get(key)
            owner[:] = spec.owner(spec.defaults, (M, N, K))


class _FakeModule:
    def __init__(self, code, options):
        self.code, self.options = code, options

    def compile(self):
        name, n = "", 0
        for text in self.code.splitlines():           # what a compiler does with #line
            m = re.match(r'#line (\d+) "(.*)"', text)
            if m:
                n, name = int(m.group(1)), m.group(2)
                continue
            if "FAKE_COMPILE_ERROR" in text:
                raise _CompileException(f'{name}({n}): error: identifier "oops" is undefined\n')
            n += 1

    def get_function(self, name):
        return _FakeKernel(name, self.code, self.options)


class FakeCupy:
    """Just enough of CuPy for the child: arrays are NumPy arrays, kernels NumPy functions."""
    key = "smem_tiled"
    int32, float32 = np.int32, np.float32
    asarray = staticmethod(lambda x: np.array(x))
    asnumpy = staticmethod(lambda x: np.array(x))
    full = staticmethod(np.full)
    RawModule = _FakeModule
    cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None),
                                 compiler=types.SimpleNamespace(CompileException=_CompileException),
                                 nvrtc=types.SimpleNamespace(getVersion=lambda: (12, 0)))


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(rt.gpu, "cupy", lambda: FakeCupy)

    def go(kind, ex_id="3.1", extra=""):
        e = ex.get(ex_id)
        FakeCupy.key = e.key
        src = e.text("solution") + f"\n// FAKE: {kind}\n{extra}"
        probe = ex._probe(e, catalog.get(e.key).full()) if e.probe else None
        j = rt.job(src, e.key, e.shapes, None, tile=e.tile, probe=probe)
        res = rt._child(json.loads(json.dumps(j)))
        res.update(timed_out=False)
        obs = ex.observe(e, src, res)
        out = {**model.diagnose(obs), "result": res, "obs": obs}
        verdict, details, code = ex.explain(e, out)       # every hint has words
        assert verdict
        return out
    return go


@pytest.mark.parametrize("kind,ex_id,hint", [
    ("right", "3.1", "pass"), ("never", "3.1", "never_written"), ("race", "3.1", "race"),
    ("edge", "3.1", "tile_edge"), ("oob", "3.1", "out_of_bounds"), ("column", "1.1", "thread_order"),
    ("right", "1.1", "pass"), ("rowmajor", "4.1", "bank_conflicts"), ("swizzle", "4.1", "pass")])
def test_the_child_finds_each_kind_of_mistake(fake, kind, ex_id, hint):
    out = fake(kind, ex_id)
    assert out["hint"] == hint, out


def test_a_wrong_result_is_located_in_owner_terms(fake):
    out = fake("never")
    w = out["result"]["where"]
    assert w["never_written"] == w["wrong"] > 0 and w["examples"][0]["owner"]["block"] is not None
    v, details, _ = ex.explain(ex.get("3.1"), out)
    assert any("written by block" in d for d in details)


def test_a_fault_is_a_result_not_a_crash(fake, monkeypatch, capsys, tmp_path):
    e = ex.get("3.1")
    j = rt.job(e.text("solution") + "\n// FAKE: fault\n", e.key, e.shapes, None, tile=e.tile)
    p = tmp_path / "job.json"
    p.write_text(json.dumps(j))
    assert rt.main([str(p)]) == 3
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(rt.RESULT_TAG)][-1]
    res = json.loads(line[len(rt.RESULT_TAG):])
    assert "illegal memory access" in res["error"]
    assert model.diagnose(ex.observe(e, "", {**res, "timed_out": False}))["hint"] == "fault"


def test_compile_errors_come_at_the_readers_line(fake):
    e = ex.get("3.1")
    src = e.text("solution")
    n = src.count("\n") + 3
    out = fake("right", extra="FAKE_COMPILE_ERROR")
    assert out["hint"] == "compile"
    assert f"line {n}: error" in out["result"]["compile_error"]


def test_expand_keeps_the_readers_line_numbers():
    text = ex.get("3.1").text("solution")
    x = rt.expand(text)
    assert x.count("#line") == 3 and "GEMM_BOOK_INSTRUMENT_CUH" in x
    log = 'exercise.cu(39): error: expected a ";"\n'
    msg = rt.compile_messages(log, text)
    assert msg.startswith("line 39: error") and f"{39:4d} | {text.splitlines()[38]}" in msg
    with pytest.raises(FileNotFoundError, match="line 1"):
        rt.expand('#include "../nope.cuh"\n')


def test_the_parent_survives_a_child_past_its_time_limit():
    e = ex.get("1.1")
    j = rt.job(e.text("wrong_hang"), e.key, e.shapes, None, tile=e.tile)
    res = rt.check(j, timeout_s=0.05)
    assert res["timed_out"] and "did not finish within" in res["error"]


def test_a_bad_job_is_refused_before_any_child():
    with pytest.raises(ValueError, match="source"):
        rt.job("  ", "smem_tiled", [(8, 8, 8)])
    with pytest.raises(ValueError, match="K=30"):
        rt.job("x", "vec4", [(8, 8, 30)])
    with pytest.raises(ValueError, match="unknown"):
        ex.get("9.9")


# ------------------------------------------------------------------ 5. recorded mode
def _shown(monkeypatch):
    shown = []
    monkeypatch.setattr(ex.ex_fig.show, "_markdown", shown.append)
    monkeypatch.setattr(ex.gpu, "live", lambda: False)
    monkeypatch.setattr(ex.ex_fig.show, "live_controls", lambda: False)
    return shown


def test_recorded_mode_without_the_file_says_not_recorded_yet(monkeypatch):
    shown = _shown(monkeypatch)
    monkeypatch.setattr(ex.results, "artifact", lambda name, slug=None: None)
    ex.check("3.1", ex.get("3.1").text("starter"))
    assert len(shown) == 1 and "the recorded check" in shown[0] and "not recorded yet" in shown[0]
    assert "Colab" in shown[0]


def test_recorded_mode_shows_the_recorded_check(monkeypatch):
    shown = _shown(monkeypatch)
    rec = {"title": "your kernel", "value": 10.0, "reference_value": 50.0, "ratio": 0.2}
    chap = {"title": "shared-memory tiles", "value": 11.0, "reference_value": 50.0, "ratio": 0.22}
    doc = {"provenance": {"gpu": "NVIDIA H200", "date": "2026-12-02", "commit": "abc1234"},
           "exercises": {"3.1": {"starter": {"hint": "race"},
                                 "solution": {"hint": "pass", "verdict": "Right on every shape.",
                                              "details": ["Shapes checked: 37, 53, 29."], "records": [rec, chap]},
                                 "wrong_one_barrier": {"hint": "race"}}}}
    monkeypatch.setattr(ex.results, "artifact", lambda name, slug=None: doc)
    monkeypatch.setattr(ex.common, "artifact_note", lambda *a: (doc, "recorded on NVIDIA H200"))
    ex.check("3.1", ex.get("3.1").text("starter"))
    text = shown[0]
    assert "the recorded check" in text and "0.2 of cuBLAS" in text
    assert "0.909 of the chapter's kernel" in text
    # the checker's own test over the exercise's files: one sentence, no table of file names
    assert "| submitted |" not in text and "wrong_one_barrier" not in text
    assert ("The checker was also tried on the unfinished starter file and 1 deliberately wrong version "
            "of this kernel: each got the verdict it was written to provoke; recorded on NVIDIA H200") in text


def test_self_test_line_names_a_file_that_got_another_verdict():
    e = ex.get("3.1")
    got = {"starter": {"hint": "race"}, "solution": {"hint": "pass"},
           "wrong_one_barrier": {"hint": "pass"}, "wrong_no_zero_fill": {"hint": "tile_edge"}}
    line = ex.self_test_line(e, got, "recorded on X")
    assert "2 deliberately wrong versions" in line and "provoke" not in line
    assert f'{e.stem}.wrong_one_barrier.cu got "pass", not "race"; recorded on X.' in line
    assert ex.self_test_line(e, {"solution": {"hint": "pass"}}, "recorded on X") == ""


def test_the_cell_magic_checks_the_cell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    shown = _shown(monkeypatch)
    monkeypatch.setattr(ex.results, "artifact", lambda name, slug=None: None)
    ip = InteractiveShell.instance()
    monkeypatch.setattr("IPython.get_ipython", lambda: ip)
    ex._register_magic()
    ip.run_cell_magic("exercise", "2.1", ex.get("2.1").text("starter"))
    assert len(shown) == 1 and "Exercise 2.1" in shown[0]
