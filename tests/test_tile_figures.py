"""CPU tests of helpers/figures/tiles.py: the chapter 3-5 figures say what the
models (helpers/models/tiles.py, helpers/models/banks.py) say, their controls cover every
state, and their data stay small."""
from __future__ import annotations

import json

import numpy as np
from pathlib import Path

import pytest

from helpers.chapters import ch04_bank_conflicts as ch4, common
from helpers.figures import banks as banks_fig, show, sweep as sweep_fig, tiles as tiles_fig
from helpers.models import banks, tiles
from helpers.runtime import catalog, compile as kc, gpu, launch, results


def _full(key, p):
    """Every -D value of catalog entry ``key`` with ``p`` (what helpers.models.banks takes)."""
    return catalog.get(key).full(p)


def bundle_size(fig) -> int:
    b = show.figure_bundle(fig)
    return len(json.dumps(b[show.PLOTLY_MIME])) + len(b["text/html"])


# ------------------------------------------------------------------ heaven 3
def test_staging_figure_follows_the_staging_model():
    p, shape, block = {"TILE": 8}, (32, 32, 32), (1, 2)
    fig = tiles_fig.staging_figure(p, shape, block)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 4
    for t, st in enumerate(steps):
        s = tiles.staging(p, shape, *block, t)
        a, b = st.args[0]["shapes"]
        assert (a["y0"] + 0.5, a["y1"] + 0.5) == s["A_rows"] and (a["x0"] + 0.5, a["x1"] + 0.5) == s["A_cols"]
        assert (b["y0"] + 0.5, b["y1"] + 0.5) == s["B_rows"] and (b["x0"] + 0.5, b["x1"] + 0.5) == s["B_cols"]
    zA = np.asarray(fig.data[0].z)
    staged = ~np.isnan(zA)
    assert staged[16:24].all() and not staged[:16].any() and not staged[24:].any()   # block row by = 2
    assert (zA[16:24] == np.arange(32)[None, :] // 8).all()                         # k step = k // TILE
    thr = np.asarray(fig.data[0].customdata)
    assert (thr[16:24, :, 0] == np.arange(8)[:, None]).all() and (thr[16:24, :, 1] == np.arange(32) % 8).all()
    assert bundle_size(fig) < 120_000


def test_staging_figure_rejects_a_block_outside_the_grid():
    with pytest.raises(ValueError, match="bx="):
        tiles_fig.staging_figure({"TILE": 8}, (32, 32, 32), block=(4, 0))


def test_reuse_rows_factor_is_the_tile():
    rows = tiles_fig.reuse_rows((4096, 4096, 4096))
    assert [r["reuse factor"] for r in rows] == [8, 16, 32]
    assert all(abs(r["untiled GB"] - r["tiled GB"] - r["saved GB"]) < 0.2 for r in rows)


def test_check_owner_without_gpu_names_the_gpu_test(monkeypatch):
    monkeypatch.setattr(gpu, "live", lambda: False)
    msg = launch.check_owner("cp_async")
    assert "test_owner_model_matches_kernel" in msg
    with pytest.raises(ValueError, match="no owner model"):
        launch.check_owner("copy_tiled")


# ------------------------------------------------------------------ heaven 4
@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("direction", ["row", "column"])
@pytest.mark.parametrize("layout", list(banks_fig.LAYOUTS))
def test_bank_state_agrees_with_warp_access(width, direction, layout):
    st = banks_fig.bank_state(width, direction, layout)
    key, extra = banks_fig.kernel_of(layout)
    acc = banks.warp_access(key, _full(key, {"BK": width, **extra}), direction)
    assert st["cost"] == acc["cost"]
    assert int(st["per_bank"].max()) == max(acc["cost"]["phases"])
    touched = {w for a in acc["addrs"] for w in range(a // 4, (a + acc["width"]) // 4)}
    assert len(st["lanes"]) == len(touched)
    cols = width + st["pad"]
    for (r, c) in st["lanes"]:
        assert st["bank"][r, c] == (r * cols + c) % 32
    assert int((st["elem"][:, :, 0] < 0).sum()) == 16 * st["pad"]      # padding cells


def test_each_layout_is_built_by_the_chapter_4_kernel_it_names():
    """The figure names no kernel: each layout's kernel comes from chapter 4's tile1d entries."""
    assert {lay: banks_fig.kernel_of(lay) for lay in banks_fig.LAYOUTS} == {
        "PAD=0": ("tile1d_conflict", {}), "PAD=1": ("tile1d_padded", {"PAD": 1}),
        "PAD=2": ("tile1d_padded", {"PAD": 2}), "PAD=4": ("tile1d_padded", {"PAD": 4}),
        "XOR swizzle": ("tile1d_swizzle", {})}
    with pytest.raises(ValueError, match="layout="):
        banks_fig.kernel_of("PAD=3")


def test_bank_state_shows_the_chapter_story():
    assert banks_fig.bank_state(32, "column", "PAD=0")["cost"]["ways"] == 8
    assert banks_fig.bank_state(32, "column", "PAD=1")["cost"]["wavefronts"] == 1
    assert banks_fig.bank_state(16, "row", "PAD=1")["cost"]["ways"] == 2
    assert banks_fig.bank_state(16, "row", "XOR swizzle")["cost"]["ways"] == 1
    with pytest.raises(ValueError, match="width="):
        banks_fig.bank_state(64)
    with pytest.raises(ValueError, match="direction="):
        banks_fig.bank_state(32, "diagonal")


def test_bank_figure_controls_cover_every_state():
    fig = banks_fig.bank_figure()
    per = 4                                                             # traces per state
    nstates = 4 * len(banks_fig.LAYOUTS)
    assert len(fig.data) == per * nstates
    assert sum(bool(t.visible) for t in fig.data) == per
    menu = fig.layout.updatemenus[0].buttons
    assert len(menu) == 4
    seen = set()
    for b in menu:
        sl = b.args[1]["sliders"][0]
        assert len(sl["steps"]) == len(banks_fig.LAYOUTS)
        for st in sl["steps"]:
            vis = st["args"][0]["visible"]
            assert sum(vis) == per
            seen.add(vis.index(True) // per)
            assert "wavefronts" in st["args"][1]["title.text"]
    assert seen == set(range(nstates))
    assert bundle_size(fig) < 400_000


def test_bank_figure_single_state():
    fig = banks_fig.bank_figure(16, "row", "PAD=1")
    assert len(fig.data) == 4 and not fig.layout.sliders
    assert "2-way" in fig.layout.title.text


def test_padding_rows_pad_by_one_element():
    rows = {(r["element"], r["pad (words)"]): r for r in banks_fig.padding_rows()}
    for e, pad in (("4 B", 1), ("8 B", 2), ("16 B", 4)):
        assert rows[(e, pad)]["verdict"] == "conflict-free"
    assert rows[("4 B", 2)]["verdict"] == "2-way conflict"
    assert rows[("8 B", 1)]["wavefronts"] is None


def test_store_rows_bk16_padding_breaks_the_store():
    rows = {r["layout"]: r for r in banks_fig.store_rows(16)}
    assert rows["PAD=1"]["store: ways"] == 2 and rows["XOR swizzle"]["store: ways"] == 1
    assert rows["PAD=1"]["read: instructions per 4 k"] == 4


def test_bank_counter_rows_model_only_and_with_a_measurement(tmp_path):
    rows = ch4.bank_counter_rows(None)
    assert rows and all(r["agree"] is None and r["ld conflicts ncu"] is None for r in rows)
    assert all(r["variant"].startswith("tile1d") for r in rows)
    probes = ch4.bank_counter_rows(None, "probe")
    assert all(r["variant"].startswith("probe/") for r in probes)
    # a fake measurement equal to the model agrees; one counter off does not
    doc = {"_meta": {"shape": [512, 512, 512]}}
    for r in rows + probes:
        doc[r["variant"]] = {m: r[f"{s} model"] for m, s in ch4.SHORT.items()}
    assert all(r["agree"] == "yes" for r in ch4.bank_counter_rows(doc) + ch4.bank_counter_rows(doc, "probe"))
    first = rows[0]["variant"]
    doc[first] = {**doc[first], banks.LD_CONFLICTS: doc[first][banks.LD_CONFLICTS] + 1}
    assert ch4.bank_counter_rows(doc)[0]["agree"] == "NO"
    # store conflicts: a small run-to-run excess over the pattern is tolerated, a deficit is not
    second = rows[1]["variant"]
    m = doc[second][banks.ST_CONFLICTS]
    doc[second] = {**doc[second], ch4.ST_INSTRUCTIONS: 1000, banks.ST_CONFLICTS: m + 100}
    assert ch4.bank_counter_rows(doc)[1]["agree"] == "yes" and ch4.bank_counter_rows(doc)[1]["st excess"] == 100
    # Nsight Compute's counters come back as floats: printed as the integers they are, like the model's
    doc[second] = {k: float(v) for k, v in doc[second].items()}
    row = ch4.bank_counter_rows(doc)[1]
    assert all(type(row[f"{s} ncu"]) is int for s in ch4.SHORT.values()) and type(row["st excess"]) is int
    assert "e+0" not in show.table_markdown([row], list(row), "c")
    doc[second][banks.ST_CONFLICTS] = m + 200
    assert ch4.bank_counter_rows(doc)[1]["agree"] == "NO"
    doc[second][banks.ST_CONFLICTS] = m - 1
    assert ch4.bank_counter_rows(doc)[1]["agree"] == "NO"
    results_dir = tmp_path
    (results_dir / "gpu-banks.json").write_text(json.dumps(doc))
    import_dir = results.RESULTS_DIR
    try:
        results.RESULTS_DIR = results_dir
        assert results.artifact("banks", "gpu") == doc
        assert results.artifact("banks", "absent") is None
    finally:
        results.RESULTS_DIR = import_dir


# ------------------------------------------------------------------ heaven 5
def test_rects_cover_the_mask_exactly():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = rng.random((9, 11)) < 0.4
        cover = np.zeros_like(m)
        for r0, r1, c0, c1 in tiles_fig._rects(m):
            assert not cover[r0:r1, c0:c1].any()
            cover[r0:r1, c0:c1] = True
        assert (cover == m).all()


@pytest.mark.parametrize("key", ["reg1d", "reg2d", "warptile", "cp_async"])
def test_ownership_figure_outlines_each_lanes_outputs(key):
    spec = catalog.get(key)
    p = spec.params()
    blocks = (p["TM"] // 4) * (p["TN"] // 4) if "WM" in p else 1     # warp tiles: spread 4 x 4 pieces
    fig = tiles_fig.ownership_figure(key)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 32
    tid = spec.owner(p, (p["BM"], p["BN"], p["BK"])) % 1024
    for lane in (0, 5, 31):
        rects = steps[lane].args[0]["shapes"][1:]
        assert len(rects) == blocks
        area = sum((r["x1"] - r["x0"]) * (r["y1"] - r["y0"]) for r in rects)
        assert area == (tid == lane).sum()
    assert fig.data[0].z.dtype == np.uint8
    assert bundle_size(fig) < 300_000


def test_resource_rows_flag_the_launch_bounds_spill():
    if not kc.nvcc_path():
        pytest.skip("nvcc not found: the recorded resource table needs it")
    twin = {**catalog.get("cp_async_pitfall").params(), "MIN_BLOCKS": 1}
    rows, where = launch.resource_rows([("cp_async", twin), ("cp_async_pitfall", {}), ("cp_async", {"STAGES": 9})])
    ok, trap, bad = rows
    assert ok["spills"] == "no" and trap["spills"] == "SPILLS" and trap["registers"] <= 128
    assert "refused" in bad and "STAGES" in bad["refused"]
    # live: NVRTC + the CUDA driver; without a GPU: nvcc -Xptxas -v
    assert ("CUDA driver" in where) if gpu.live() else ("nvcc" in where)


def test_sweep_figure_short_labels():
    recs = [{"params": {"A": 1, "B": 2, "C": 3}, "value": v, "ratio": v / 10, "metric": "TFLOP/s",
             "reference": "cuBLAS", "source": "recorded"} for v in (1.0, 2.0, 3.0)]
    recs[1]["params"] = {"A": 5, "B": 2, "C": 3}
    recs[2]["params"] = {"A": 1, "B": 7, "C": 3}
    fig, base = sweep_fig.labelled_figure(recs, title="t")
    assert base == {"A": 1, "B": 2, "C": 3}
    assert list(fig.data[0].x) == ["base", "A=5", "B=7"]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["base", "A=5", "B=7"]
    assert fig.layout.title.text.startswith("t: B=7 ->")


def test_sweep_figure_labels_relative_to_the_shipped_default():
    """Given the kernel's defaults, bars are labelled by what they change from those, even where
    the sweep's most common configuration is another one; a base missing a parameter is refused."""
    recs = [{"params": {"A": a, "B": 2}, "value": v, "ratio": v / 10, "metric": "TFLOP/s",
             "reference": "cuBLAS", "source": "recorded"} for a, v in ((1, 1.0), (1, 2.0), (4, 3.0))]
    recs[1]["params"] = {"A": 1, "B": 9}
    fig, base = sweep_fig.labelled_figure(recs, title="t", base={"A": 4, "B": 2, "EXTRA": 0})
    assert base == {"A": 4, "B": 2}
    assert list(fig.data[0].x) == ["A=1", "A=1 B=9", "default"]
    with pytest.raises(ValueError, match="base="):
        sweep_fig.labelled_figure(recs, base={"A": 4})



def test_sweep_highlights_the_best_ratio_not_the_most_tflops():
    """Each bar has its own cuBLAS timing: a bar timed while the board's clock was high can show
    more TFLOP/s and a lower ratio. The highlighted (slider's active) bar is the best ratio."""
    recs = [{"params": {"A": a}, "value": v, "ratio": q, "metric": "TFLOP/s", "reference": "cuBLAS",
             "source": "recorded"} for a, v, q in ((1, 300.0, 0.50), (2, 310.0, 0.49), (3, 290.0, 0.52))]
    fig = sweep_fig.figure(recs, title="t")
    assert fig.layout.sliders[0].active == 2
    assert "A=3" in fig.layout.title.text


def test_no_live_controls_in_batch_execution(monkeypatch):
    """scripts/execute_notebooks.py sets GEMM_BOOK_BATCH=1; then no live control
    builds widgets, even with a GPU (see helpers.figures.show.live_controls)."""
    monkeypatch.setattr(gpu, "live", lambda: True)
    monkeypatch.setenv("GEMM_BOOK_BATCH", "1")
    assert not show.live_controls()
    assert ch4.bank_explorer() is None
    assert common.live_slider("mma_sync_f16", (256, 256, 256)) is None
    monkeypatch.delenv("GEMM_BOOK_BATCH")
    assert show.live_controls()
    src = (Path(__file__).resolve().parent.parent / "scripts" / "execute_notebooks.py").read_text()
    assert 'os.environ["GEMM_BOOK_BATCH"] = "1"' in src
    render = (Path(__file__).resolve().parent.parent / "scripts" / "render_record_cells.py").read_text()
    assert 'os.environ["GEMM_BOOK_BATCH"] = "1"' in render      # it writes static outputs too
