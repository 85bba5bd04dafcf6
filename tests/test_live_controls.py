"""The live controls give feedback (issue 14, item 7), and the prose's glued numbers exist.

- a control says "compiling…" before it compiles and "measuring…" before it measures, then
  replaces both with the result; a combination the catalog's rules refuse is one line and
  nothing is compiled or launched;
- a kernel with two or more parameters gets a Run button (moving sliders compiles nothing),
  one with a single parameter re-measures when its slider is released;
- a live sweep iterates through a progress bar (``tqdm.auto``), recorded mode has none;
- without a GPU (and in batch execution) each control is replaced by a one-line note, and
  every committed notebook cell that builds a control carries that note, so the static
  book shows it where the control would be;
- every ``{glue:...}`` name in a notebook's Markdown is glued by one of its committed outputs
  (so a glue cannot dangle), in the format MyST-NB reads.
"""
from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import ipywidgets as w
import nbformat
import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch04_bank_conflicts as ch4, ch07_mma_sync as ch07, ch09_any_shape as ch9, common
from helpers.figures import show
from helpers.runtime import bench, catalog, gpu, launch, sweep

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
SHAPE = (4096, 4096, 4096)


class FakeLaunch:
    def __init__(self, key="", params=None):
        self.key, self.params = key, dict(params or {})

    def resources(self):
        return {"registers": 40, "smem_static": 8192, "smem_dynamic": 0, "local_bytes": 0,
                "occupancy": 0.5, "limited_by": "registers"}


def _record(key, p):
    return {"kernel": key, "params": p, "value": 12.3, "metric": "TFLOP/s", "ratio": 0.25,
            "reference": "cuBLAS", "rel_err": 1e-6, "source": "live"}


@pytest.fixture
def log(monkeypatch):
    """Fake compile (launch.prepare) and measure (bench.prepared: the launch compiled once,
    measured as it is; bench.gemm, which would prepare it again) that write into one log,
    beside what the control says."""
    events = []

    def prepare(key, shape, **p):
        events.append(("compile", key))
        return FakeLaunch(key, p)

    def prepared(L, **kw):
        assert isinstance(L, FakeLaunch), "the control must measure the launch it prepared"
        events.append(("measure", L.key))
        return _record(L.key, L.params)

    def gemm(items, shape, **kw):                  # prepares its kernels itself: a second compile
        events.append(("compile+measure", items[0][0]))
        return [_record(*items[0])]
    monkeypatch.setattr(launch, "prepare", prepare)
    monkeypatch.setattr(bench, "prepared", prepared)
    monkeypatch.setattr(bench, "gemm", gemm)
    return events


def test_a_control_says_compiling_then_measuring_before_each_blocking_step(log):
    r = common.run_control("vec4", SHAPE, {"BLOCK_X": 32, "BLOCK_Y": 8}, lambda t: log.append(("say", t)))
    assert r["value"] == 12.3
    kinds = [e[0] if e[0] != "say" else "say:" + ("compiling" if "compiling…" in e[1] else
                                                  "measuring" if "measuring…" in e[1] else "result")
             for e in log]
    assert kinds == ["say:compiling", "compile", "say:measuring", "measure", "say:result"]
    assert "12.30 TFLOP/s = 0.250 x cuBLAS" in log[-1][1] and "40 regs" in log[-1][1]


def _refused_combination(key):
    """A combination of the kernel's own slider choices that its catalog rules refuse."""
    spec = catalog.get(key)
    names = list(spec.slider_choices)
    for vals in itertools.product(*(spec.slider_choices[n] for n in names)):
        p = dict(zip(names, vals))
        try:
            spec.validate(spec.params(**p), SHAPE)
        except ValueError:
            return p
    raise AssertionError(f"every slider combination of {key} is valid")


def test_a_refused_combination_is_one_line_and_nothing_compiles_or_runs(monkeypatch):
    from helpers.runtime import compile as kc

    def never(*a, **k):
        raise AssertionError("compiled or measured a combination the rules refuse")
    monkeypatch.setattr(kc, "build", never)
    monkeypatch.setattr(bench, "gemm", never)
    monkeypatch.setattr(bench, "prepared", never)
    said = []
    p = _refused_combination("cp_async")
    assert common.run_control("cp_async", SHAPE, p, said.append) is None
    assert said[-1].startswith("refused before launch: ")


@pytest.fixture
def live(monkeypatch):
    """Controls built as on a GPU (sm_90), without displaying them; run_control recorded."""
    monkeypatch.setattr(show, "live_controls", lambda: True)
    monkeypatch.setattr(gpu, "capability", lambda: (9, 0))
    monkeypatch.setattr(common, "display", lambda *a, **k: None)
    runs = []
    monkeypatch.setattr(common, "run_control", lambda key, shape, p, say: runs.append(dict(p)))
    return runs


def _buttons(box):
    return [c for c in box.children if isinstance(c, w.Button)]


def test_several_parameters_get_a_run_button_and_moving_sliders_compiles_nothing(live):
    box = common.live_slider("cp_async", SHAPE)
    assert len(catalog.get("cp_async").slider_choices) >= 2
    (button,) = _buttons(box)
    assert len(live) == 1                                  # the defaults, once, at the start
    sliders = [c for c in box.children if isinstance(c, w.SelectionSlider)]
    for s in sliders[:3]:                                  # move three sliders
        s.value = next(v for v in s.options if v != s.value)
    assert len(live) == 1 and button.button_style == "primary"
    button.click()
    assert len(live) == 2 and button.button_style == ""
    assert live[-1] == {s.description: s.value for s in sliders}


def test_a_single_parameter_re_measures_on_release_without_a_button(live):
    assert len(catalog.get("smem_tiled").slider_choices) == 1
    box = common.live_slider("smem_tiled", SHAPE)
    assert not _buttons(box)
    (s,) = [c for c in box.children if isinstance(c, w.SelectionSlider)]
    assert s.continuous_update is False
    s.value = next(v for v in s.options if v != s.value)
    assert live == [{"TILE": catalog.get("smem_tiled").defaults["TILE"]}, {"TILE": s.value}]


def test_without_a_gpu_each_control_is_a_one_line_note(monkeypatch):
    assert not show.live_controls()                        # the CPU test machine: recorded mode
    notes = []
    monkeypatch.setattr(show, "note", lambda text, title="Note": notes.append((title, text)))
    assert common.live_slider("tile1d_padded", SHAPE) is None
    assert ch9.dispatcher_widget() is None
    assert len(notes) == 2
    for title, text in notes:
        assert title == "Live control" and common.NEEDS_GPU in text and "\n" not in text.strip()
    assert "`tile1d_padded` (BM, BN, BK, TN, PAD)" in notes[0][1]


def test_the_bank_explorer_needs_a_notebook_not_a_gpu(monkeypatch):
    """It redraws the bank model and measures nothing: on this CPU machine it builds its widgets,
    and only batch execution replaces it with a note that does not ask for a GPU."""
    assert not show.live_controls()
    monkeypatch.setattr(ch4, "display", lambda *a, **k: None)
    drawn = []
    monkeypatch.setattr(show, "figure", lambda fig, *a, **k: drawn.append(fig))
    box = ch4.bank_explorer()
    assert isinstance(box, w.VBox) and len(drawn) == 1
    box.children[0].value = 16                              # BK
    assert len(drawn) == 2
    notes = []
    monkeypatch.setattr(show, "note", lambda text, title="Note": notes.append((title, text)))
    monkeypatch.setenv("GEMM_BOOK_BATCH", "1")
    assert ch4.bank_explorer() is None
    ((title, text),) = notes
    assert title == "Live control" and common.NEEDS_NOTEBOOK in text and common.NEEDS_GPU not in text


def test_a_live_sweep_has_a_progress_bar_and_a_recorded_one_none(monkeypatch, log):
    seen = []

    def progress(items):
        seen.append(list(items))
        return iter(seen[-1])
    monkeypatch.setattr(launch, "prepare", lambda key, shape, **p: FakeLaunch())
    recs = sweep.run("vec4", SHAPE, points=[{"BLOCK_X": 32, "BLOCK_Y": 4}, {"BLOCK_X": 32, "BLOCK_Y": 8}],
                     progress=progress)
    assert len(seen) == 1 and len(seen[0]) == 2 and len(recs) == 2 and recs[0]["resources"]["registers"] == 40

    given = []
    monkeypatch.setattr(sweep, "run", lambda key, shape, points=None, progress=None: given.append(progress) or [])
    monkeypatch.setattr(common.sweep_fig, "figure", lambda *a, **k: None)
    monkeypatch.setattr(show, "figure", lambda *a, **k: None)
    monkeypatch.setattr(common, "live_slider", lambda *a, **k: None)
    common.show_sweep("vec4", SHAPE, ["BLOCK_X", "BLOCK_Y"])
    assert given == [None]                                 # recorded mode: nothing to wait for
    monkeypatch.setattr(show, "live_controls", lambda: True)
    common.show_sweep("vec4", SHAPE, ["BLOCK_X", "BLOCK_Y"])
    from tqdm.std import tqdm
    bar = given[-1]([1, 2, 3])
    assert isinstance(bar, tqdm) and bar.total == 3 and list(bar) == [1, 2, 3]


# ------------------------------------------------------------------ committed notebooks
CONTROLS = {"live_slider", "bank_explorer", "dispatcher_widget", "show_sweep"}


def controls_in(src: str) -> int:
    """Live controls a cell builds: calls of CONTROLS (show_sweep unless live=False)."""
    n = 0
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            off = name == "show_sweep" and any(k.arg == "live" and isinstance(k.value, ast.Constant)
                                               and k.value.value is False for k in node.keywords)
            n += name in CONTROLS and not off
    return n


def _markdown_outputs(cell):
    for o in cell.get("outputs", []):
        md = o.get("data", {}).get("text/markdown")
        if md:
            yield md if isinstance(md, str) else "".join(md)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_static_book_shows_a_note_where_a_live_control_would_be(path):
    nb = nbformat.read(path, 4)
    for c in nb.cells:
        if c.cell_type == "code" and controls_in(c.source):
            notes = [m for m in _markdown_outputs(c) if common.NEEDS_GPU in m or common.NEEDS_NOTEBOOK in m]
            assert len(notes) == controls_in(c.source), (
                f"{path.name}: this cell builds {controls_in(c.source)} live control(s) but its committed "
                f"outputs carry {len(notes)} 'needs a GPU' or 'needs a running notebook' note(s):\n{c.source}")


GLUE_ROLE = re.compile(r"\{glue(?::\w*)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^(?:```|:::)\{glue(?::\w+)?\}\s+(\S+)", re.M)


def glued_names(nb) -> set:
    return {o["metadata"]["scrapbook"]["name"] for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})}


def used_names(nb) -> set:
    out = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            for ref in GLUE_ROLE.findall(c.source) + GLUE_DIRECTIVE.findall(c.source):
                key = ref.split("::")[-1]                  # path::key glues from another page
                out.add(key.split(":")[0])                 # key:format
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glued_name_in_the_prose_is_in_the_committed_outputs(path):
    nb = nbformat.read(path, 4)
    missing = used_names(nb) - glued_names(nb)
    assert not missing, f"{path.name}: the prose uses glue names no committed output defines: {sorted(missing)}"


def test_the_glue_helper_writes_what_myst_nb_reads(monkeypatch):
    from myst_nb.ext.glue import extract_glue_data_cell, glue as myst_glue
    from myst_nb.core.variables import format_plain_text

    shown = []
    monkeypatch.setattr(common, "display", lambda obj, raw=False, metadata=None: shown.append((obj, metadata)))
    common.glue({"x": 10.455, "blocks": 8})
    ours = [nbformat.v4.new_output("display_data", data=d, metadata=m) for d, m in shown]
    theirs = []
    import myst_nb.ext.glue as mg
    monkeypatch.setattr(mg, "ipy_display", lambda obj, raw=False, metadata=None: theirs.append((obj, metadata)))
    myst_glue("x", 10.455, display=False)
    assert shown[0] == theirs[0]
    data = dict(extract_glue_data_cell(nbformat.v4.new_code_cell(outputs=ours)))
    assert set(data) == {"x", "blocks"}
    assert format_plain_text(data["x"]["data"]["text/plain"], ".0f") == "10"
    assert format_plain_text(data["blocks"]["data"]["text/plain"], "") == "8"


def test_a_glued_sentence_is_markdown_as_myst_nb_glues_it(monkeypatch):
    """common.Sentence glues as myst_nb.glue(name, Markdown(text)) does (text/markdown, which a
    ``{glue:md}`` role needs), with the text's repr as its text/plain; a plain str stays text only."""
    from IPython.display import Markdown
    import myst_nb.ext.glue as mg

    shown, theirs = [], []
    monkeypatch.setattr(common, "display", lambda obj, raw=False, metadata=None: shown.append((obj, metadata)))
    monkeypatch.setattr(mg, "ipy_display", lambda obj, raw=False, metadata=None: theirs.append((obj, metadata)))
    common.glue({"s": common.Sentence("Each figure is `one` launch."), "t": "plain"})
    mg.glue("s", Markdown("Each figure is `one` launch."), display=False)
    md = common.GLUE_PREFIX + "text/markdown"
    assert shown[0][0][md] == theirs[0][0][md] == "Each figure is `one` launch."
    assert shown[0][1] == theirs[0][1]
    assert shown[0][0][common.GLUE_PREFIX + "text/plain"] == repr("Each figure is `one` launch.")
    assert md not in shown[1][0]


GLUE_MD = re.compile(r"\{glue:md\}`([^`:]+)`")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glue_md_role_names_a_markdown_value(path):
    """A ``{glue:md}`` role pastes the value's text/markdown; a value glued as text only would
    fail the build. The value is a common.Sentence in the code that glues it."""
    nb = nbformat.read(path, 4)
    md = {o["metadata"]["scrapbook"]["name"] for c in nb.cells if c.cell_type == "code"
          for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})
          and common.GLUE_PREFIX + "text/markdown" in o.get("data", {})}
    used = {n for c in nb.cells if c.cell_type == "markdown" for n in GLUE_MD.findall(c.source)}
    assert used <= md, f"{path.name}: glue:md roles without a Markdown value: {sorted(used - md)}"


def test_glued_defaults_follow_the_catalog():
    v = common.default_values("wmma_f16", "wmma")
    p = catalog.get("wmma_f16").params()
    assert v["wmma_BM"] == p["BM"] and v["wmma_warps"] == (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    assert v["wmma_threads"] == 32 * v["wmma_warps"] and v["wmma_acc_per_lane"] == p["WM"] * p["WN"] // 32
    s = ch07.swizzle_values()
    assert s["mma_BK"] == catalog.get("mma_sync_f16").params()["BK"] and s["mma_A_row_bytes"] == 2 * s["mma_BK"]
    assert s["fig_A_ways"] == 4 and s["mma_A_ways"] == 8 if s["mma_BK"] == 64 else True
