"""CPU tests of the four teaching diagrams (helpers/figures/diagrams.py, schedules.py) and
their models: the tile hierarchy agrees with the catalog's owner models element by element,
the cp.async stage schedule keeps the pipeline's invariants (and the order the NumPy replay
of kernels/07 performs), the block order and its operand panels follow the raster, every
(tile, k-tile) of split-K and stream-K is computed exactly once; each figure builds for the
shipped defaults and a few slider values, small, with texts that fit the style."""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.figures import diagrams, schedules, show, style
from helpers.models import anyshape, hierarchy, pipeline, raster
from helpers.runtime import catalog


# ------------------------------------------------------------------ helpers
def _grid(tr) -> np.ndarray:
    """The element array a heatmap of cells dx x dy stands for (C cells start at 0, 0)."""
    z = np.asarray(tr.customdata)
    return np.repeat(np.repeat(z, int(tr.dy), axis=0), int(tr.dx), axis=1)


def _params(key, p=None):
    spec = catalog.get(key)
    return spec.full(spec.params(**(p or {})))


def _texts_fit(fig):
    """Every text of the figure as the book draws it (style.polish) fits the style's widths:
    title lines, slider labels (not renumbered at 412 px), axis titles and annotations."""
    d = show.figure_bundle(fig)[show.PLOTLY_MIME]
    lay = d["layout"]
    titles = [lay["title"]["text"]] + [a["title.text"] for m in lay.get("sliders", []) + lay.get("updatemenus", [])
                                       for st in m.get("steps", m.get("buttons", [])) for a in st["args"]
                                       if isinstance(a, dict) and "title.text" in a]
    for t in titles:
        sup = False
        for line in t.split("<br>"):
            sup = sup or "<sup>" in line
            assert style.visible_len(line) <= (style.SUB_WIDTH if sup else style.TITLE_WIDTH), line
            sup = sup and "</sup>" not in line
    for sl in lay.get("sliders", []):
        labels = [str(st["label"]) for st in sl["steps"]]
        assert all(style.visible_len(lb) <= style.LABEL_WIDTH for lb in labels), labels
        # book_figures.js numbers the steps instead when they would overlap on a phone
        assert len(labels) * max(map(len, labels)) * 6.5 <= 300, labels
    for name, ax in lay.items():
        if name.startswith(("xaxis", "yaxis")) and isinstance(ax, dict) and ax.get("title"):
            assert style.visible_len(ax["title"]["text"]) <= 40, ax["title"]["text"]
    for a in lay.get("annotations", []):
        assert style.visible_len(a["text"]) <= style.LABEL_WIDTH, a["text"]
    return len(json.dumps(d))


# ------------------------------------------------------------------ 1. the tile hierarchy
HIER = [("cp_async", None), ("cp_async", {"WM": 32, "WN": 64, "TN": 8}), ("cp_async", {"BN": 128, "WN": 32, "TN": 8}),
        ("warptile", None), ("warptile_db", {"BM": 64, "WM": 32, "WN": 32, "TM": 4}),
        ("mma_sync_f16", None), ("mma_sync_bf16", {"BM": 256, "BN": 128}), ("mma_sync_f16", {"WM": 32})]


@pytest.mark.parametrize("key,p", HIER)
def test_hierarchy_figure_assigns_what_the_owner_model_says(key, p):
    q = _params(key, p)
    spec = catalog.get(key)
    BM, BN, BK = q["BM"], q["BN"], q["BK"]
    owner = spec.owner(q, (BM, BN, BK)) % 1024                     # block 0's tile: threadIdx.x
    nw = (BM // q["WM"]) * (BN // q["WN"])
    for warp, lane in ((0, 0), (nw - 1, 13)):
        fig = diagrams.hierarchy_figure(key, p, warp=warp, lane=lane)
        assert len(fig.data) == 9 and sum(bool(t.visible is not False) for t in fig.data) == 3
        warps = _grid(fig.data[3])[..., 0]                          # the warp view: one cell per warp tile
        assert warps.shape == (BM, BN) and (warps == owner // 32).all()
        assert ((_grid(fig.data[3])[..., 0] == warp) == np.repeat(np.repeat(np.asarray(fig.data[3].z), q["WM"], 0),
                                                                     q["WN"], 1).astype(bool)).all()
        mine = owner // 32 == warp
        r, c = np.argwhere(mine).min(0)
        sub = owner[r:r + q["WM"], c:c + q["WN"]] % 32
        fine = fig.data[6]
        if spec.entry == "gemm_mma_sync":
            lanes = np.asarray(fine.customdata)[..., 2]             # element level
        else:
            lanes = _grid(fine)[..., 0]                             # 4 x 4 blocks
            sel = np.repeat(np.repeat(np.asarray(fine.z), 4, 0), 4, 1).astype(bool)
            assert (sel == (sub == lane)).all()
            assert sel.sum() == q["TM"] * q["TN"]
        assert (lanes == sub).all()
        rows = np.asarray(fine.customdata)[..., -2 if spec.entry == "gemm_mma_sync" else 3]
        assert rows.min() == r                                      # hover gives block-tile rows


@pytest.mark.parametrize("key", ["cp_async", "mma_sync_f16"])
def test_hierarchy_block_ids_are_the_raster(key):
    q = _params(key)
    fig = diagrams.hierarchy_figure(key, grid=(4, 3), tile=(2, 1))
    pid = np.asarray(fig.data[0].customdata)[..., 0]
    owner = catalog.get(key).owner(q, (4 * q["BM"], 3 * q["BN"], q["BK"])) // 1024
    assert (pid == owner[::q["BM"], ::q["BN"]]).all()
    assert np.asarray(fig.data[0].z)[2, 1] == 1 and np.asarray(fig.data[0].z).sum() == 1
    assert f"block {pid[2, 1]} " in fig.layout.title.text


def test_hierarchy_tree_reads_what_it_owns():
    t = hierarchy.warptile_tree(_params("cp_async"))
    TM, TN = t["thread"]
    for ln in t["lanes"]:
        assert len(ln["a_rows"]) == TM and len(ln["b_cols"]) == TN
        owned = {(r0 + i, c0 + j) for _, _, r0, c0 in ln["blocks"] for i in range(4) for j in range(4)}
        assert owned == {(r, c) for r in ln["a_rows"] for c in ln["b_cols"]}   # outer product: A rows x B cols
    m = hierarchy.mma_sync_tree(_params("mma_sync_f16"))
    assert np.bincount(m["c_lane"].ravel()).tolist() == [4] * 32


def test_hierarchy_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="key='reg2d'"):
        diagrams.hierarchy_figure("reg2d")
    with pytest.raises(ValueError, match="warp=8"):
        diagrams.hierarchy_figure("cp_async", warp=8)
    with pytest.raises(ValueError, match="lane=32"):
        diagrams.hierarchy_figure("cp_async", lane=32)
    with pytest.raises(ValueError, match="tile="):
        diagrams.hierarchy_figure("cp_async", tile=(3, 0))
    with pytest.raises(ValueError, match="32 lanes"):
        hierarchy.warptile_tree({"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 64, "TM": 8, "TN": 8})


# ------------------------------------------------------------------ 2. the stage schedule
def _ops(ev):
    """The schedule as the program order of one thread: (time, rank, op, stage/n)."""
    ops = []
    for e in ev:
        k = e["kind"]
        if k == "copy":
            ops.append((e["issue"], 1, "issue", e["stage"]))
        elif k == "commit":
            ops.append((e["time"], 2, "commit", None))
        elif k == "wait":
            ops.append((e["time"], 3, "wait", e["pending"]))
        elif k == "barrier":
            ops.append((e["time"], 4, "barrier", None))
        elif k == "read":                      # reads right after the barrier that opens the window ...
            ops.append((e["start"], 5, "read", e["stage"]))
            ops.append((e["end"], 0, "read", e["stage"]))   # ... and until just before the one that closes it
    return sorted(ops, key=lambda o: (o[0], o[1]))


def _replay(ev):
    """Run the schedule through the replay's hazard checker (pipeline._Pipeline)."""
    stages = 1 + max(e["stage"] for e in ev if "stage" in e)
    pipe = pipeline._Pipeline(max(stages, 2))
    for _, _, op, arg in _ops(ev):
        if op == "issue":
            pipe.issue(arg, lambda: None)
        elif op == "commit":
            pipe.commit()
        elif op == "wait":
            pipe.wait(arg)
        elif op == "barrier":
            pipe.barrier()
        else:
            pipe.read(arg)


CASES = [(s, kt, pf, steps, spread) for s in (2, 3, 4, 6) for kt in (1, 2, 5, 9) for pf in range(1, s)
         for steps, spread in ((2, True), (4, True), (4, False), (16, False))]


@pytest.mark.parametrize("stages,k_tiles,prefetch,steps,spread", CASES)
def test_stage_schedule_invariants(stages, k_tiles, prefetch, steps, spread):
    ev = pipeline.stage_schedule(stages, k_tiles, prefetch, steps, spread)
    copies = [e for e in ev if e["kind"] == "copy"]
    real = [e for e in copies if not e["zero_fill"]]
    reads = {e["tile"]: e for e in ev if e["kind"] == "read"}
    barriers = [e["time"] for e in ev if e["kind"] == "barrier"]
    # every k-tile is copied exactly once, into stage tile % stages, and read once
    assert sorted(e["tile"] for e in real) == list(range(k_tiles)) == sorted(reads)
    assert all(e["stage"] == e["tile"] % stages for e in copies)
    assert all(e["tile"] >= k_tiles for e in copies if e["zero_fill"]) and (spread or len(copies) == k_tiles)
    for e in real:
        r = reads[e["tile"]]
        # read only after the wait that retired its copies and a barrier after that wait
        assert e["issue"] <= e["commit"] <= e["landed"] <= r["start"]
        assert any(e["landed"] <= b <= r["start"] for b in barriers)
    for e in copies:
        # the stage is not overwritten while read: the reads of its previous k-tile ended at
        # a barrier before these copies were issued
        prev = reads.get(e["tile"] - stages)
        if prev is not None:
            assert prev["end"] <= e["issue"] and prev["end"] in barriers
        assert e["landed"] is not None                # nothing in flight when the block exits
    waits = [e for e in ev if e["kind"] == "wait"]
    assert [w["pending"] for w in waits] == [prefetch - 1] * (k_tiles + 1) + [0]
    assert len([e for e in ev if e["kind"] == "commit"]) == prefetch + k_tiles     # one group per slot
    _replay(ev)


def test_the_replay_checker_catches_a_missing_barrier():
    ev = [e for e in pipeline.stage_schedule(3, 6) if e["kind"] != "barrier"]
    with pytest.raises(pipeline.PipelineHazard):
        _replay(ev)


def test_stage_schedule_refuses_bad_arguments():
    for kw, match in (({"stages": 1}, "stages=1"), ({"k_tiles": 0}, "k_tiles=0"), ({"prefetch": 3}, "prefetch=3"),
                      ({"steps": 1}, "steps=1")):
        args = {"stages": 3, "k_tiles": 4, **kw}
        with pytest.raises(ValueError, match=match):
            pipeline.stage_schedule(**args)
    with pytest.raises(ValueError, match="entry='sgemm_warptile'"):
        pipeline.kernel_stage_schedule("sgemm_warptile", _params("warptile"), 4)


class _Recorder(pipeline._Pipeline):
    log: list = []

    def issue(self, stage, apply):
        _Recorder.log.append((self.epoch, "issue", stage))
        super().issue(stage, apply)

    def commit(self):
        _Recorder.log.append((self.epoch, "commit", None))
        super().commit()

    def wait(self, n):
        _Recorder.log.append((self.epoch, "wait", n))
        super().wait(n)

    def read(self, stage):
        _Recorder.log.append((self.epoch, "read", stage))
        super().read(stage)


def _per_epoch(log):
    out: dict = {}
    for epoch, op, arg in log:
        d = out.setdefault(epoch, {"issue": set(), "read": set(), "commit": 0, "wait": []})
        if op in ("issue", "read"):
            d[op].add(arg)
        elif op == "commit":
            d["commit"] += 1
        else:
            d["wait"].append(arg)
    return out


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("spread", [0, 1])
@pytest.mark.parametrize("k_tiles", [1, 3, 6])
def test_stage_schedule_is_the_order_the_07_replay_performs(monkeypatch, stages, spread, k_tiles):
    """kernel_stage_schedule('gemm_mma_sync') against emulate_mma_sync (the transcription of
    kernels/07 that checks its pipeline): the same stages copied, read, committed and waited
    for between the same barriers."""
    p = {"BM": 64, "BN": 64, "BK": 32, "WM": 32, "WN": 32, "STAGES": stages, "SWIZZLE": 1, "GROUP_M": 1,
         "LOAD_SPREAD": spread}
    _Recorder.log = []
    monkeypatch.setattr(pipeline, "_Pipeline", _Recorder)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((64, 32 * k_tiles)), rng.standard_normal((32 * k_tiles, 64))
    C = pipeline.emulate_mma_sync(A, B, p)
    assert _Recorder.log
    assert np.allclose(C, pipeline.round_to(A, "float16") @ pipeline.round_to(B, "float16"), rtol=2e-2, atol=2e-1)
    mine = []
    epoch = 0
    for _, _, op, arg in _ops(pipeline.kernel_stage_schedule("gemm_mma_sync", p, k_tiles)):
        if op == "barrier":
            epoch += 1
        else:
            mine.append((epoch, op, arg))
    assert _per_epoch(mine) == _per_epoch(_Recorder.log)


def test_kernel_stage_schedule_of_the_chapters():
    ev = pipeline.kernel_stage_schedule("sgemm_cp_async", _params("cp_async"), 6)
    assert not any(e["zero_fill"] for e in ev if e["kind"] == "copy")
    ev = pipeline.kernel_stage_schedule("gemm_mma_sync", _params("mma_sync_f16"), 6)
    assert sum(e["zero_fill"] for e in ev if e["kind"] == "copy") == _params("mma_sync_f16")["STAGES"] - 1


# ------------------------------------------------------------------ 3. the block order
def test_wave_panels_of_the_chapter_7_prose():
    """Chapter 7: in plain order one wave of 132 tiles reads about 9 row panels of A (1 MB
    each) and 16 column panels of B (2 MB each), some 41 MB."""
    p = {"BM": 128, "BN": 256, "GROUP_M": 1}
    w = raster.wave_panels(p, (4096, 4096, 4096), 132, elem_bytes=2)
    assert (len(w["a_panels"]), len(w["b_panels"]), w["waves"]) == (9, 16, 4)
    assert w["a_bytes"] == 9 * 2 ** 20 and w["b_bytes"] == 16 * 2 ** 21
    g = raster.wave_panels({**p, "GROUP_M": 8}, (4096, 4096, 4096), 132, elem_bytes=2)
    assert (len(g["a_panels"]), len(g["b_panels"])) == (12, 16)
    wide = {"BM": 128, "BN": 128}
    assert len(raster.wave_panels({**wide, "GROUP_M": 0}, (8192, 8192, 8192), 132)["b_panels"]) == 64
    assert len(raster.wave_panels({**wide, "GROUP_M": 8}, (8192, 8192, 8192), 132)["b_panels"]) == 17


@pytest.mark.parametrize("group_m", [0, 1, 3, 8])
@pytest.mark.parametrize("wave", [0, 2])
def test_wave_panels_are_the_tiles_of_the_wave(group_m, wave):
    p, shape = {"BM": 64, "BN": 128, "GROUP_M": group_m}, (1000, 1500, 64)
    tiles = raster.block_raster(p, shape)
    w = raster.wave_panels(p, shape, 20, wave)
    mine = tiles[20 * wave:20 * wave + 20]
    assert (w["tiles"] == mine).all()
    assert w["a_panels"] == sorted(set(mine[:, 0].tolist())) and w["b_panels"] == sorted(set(mine[:, 1].tolist()))
    with pytest.raises(ValueError, match="wave="):
        raster.wave_panels(p, shape, 20, w["waves"])
    with pytest.raises(ValueError, match="in_flight=0"):
        raster.wave_panels(p, shape, 0)


@pytest.mark.parametrize("key,shape,sms", [("mma_sync_f16", (4096, 4096, 4096), 132),
                                           ("cp_async", (4096, 4096, 4096), 132),
                                           ("warptile", (2000, 3000, 512), 20)])
def test_raster_figure_follows_the_raster(key, shape, sms):
    fig = diagrams.raster_figure(key, shape=shape, sms=sms)
    q = _params(key)
    steps = fig.layout.sliders[0].steps
    row_order = 0 if key != "mma_sync_f16" else 1
    assert steps[0].label == "row order" and len(fig.data) == 4 * len(steps)
    assert steps[fig.layout.sliders[0].active].label == str(q["GROUP_M"])
    for i, st in enumerate(steps):
        g = row_order if st.label == "row order" else int(st.label)
        hm, a, b, path = fig.data[4 * i:4 * i + 4]
        tiles = raster.block_raster({**q, "GROUP_M": g}, shape)
        pid = np.asarray(hm.customdata)[..., 0]
        assert (pid[tiles[:, 0], tiles[:, 1]] == np.arange(len(tiles))).all()
        assert (np.asarray(hm.z) == pid // sms).all()
        w = raster.wave_panels({**q, "GROUP_M": g}, shape, sms)
        assert np.flatnonzero(np.asarray(a.z).ravel()).tolist() == w["a_panels"]
        assert np.flatnonzero(np.asarray(b.z).ravel()).tolist() == w["b_panels"]
        assert len(path.x) == min(sms, len(tiles))
        assert f"read {len(w['a_panels'])} panels of A and {len(w['b_panels'])} of B" in st.args[1]["title.text"]
        assert sum(st.args[0]["visible"]) == 4
    assert "not a timing" in fig.layout.title.text


def test_raster_figure_starts_at_the_given_group_m():
    fig = diagrams.raster_figure("cp_async", {"GROUP_M": 16}, groups=[0, 4])
    sl = fig.layout.sliders[0]
    assert [st.label for st in sl.steps] == ["row order", "4", "16"] and sl.steps[sl.active].label == "16"
    assert "GROUP_M = 16:" in fig.layout.title.text and fig.data[8].visible and not fig.data[0].visible


def test_raster_figure_refuses():
    with pytest.raises(ValueError, match="GROUP_M"):
        diagrams.raster_figure("reg2d")
    with pytest.raises(ValueError, match="GROUP_M=0"):
        diagrams.raster_figure("mma_sync_f16", groups=[0, 8])
    with pytest.raises(ValueError, match="sms=0"):
        diagrams.raster_figure("cp_async", sms=0)


# ------------------------------------------------------------------ 4. split-K and stream-K
SHAPES = [(512, 512, 32768), (2176, 4096, 8192), (1000, 1002, 1001), (128, 256, 32), (300, 5000, 4000)]


def _covered(w) -> np.ndarray:
    hits = np.zeros((w["tiles"], w["k_tiles"]), dtype=int)
    for s in w["segments"]:
        assert 0 <= s["k0"] < s["k1"] <= w["k_tiles"]
        hits[s["tile"], s["k0"]:s["k1"]] += 1
    return hits


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("sms", [132, 8, 1])
def test_every_piece_of_work_is_done_exactly_once(shape, sms):
    M, N, K = shape
    for sched, kw in (("dp", {}), ("splitk", {}), ("splitk", {"splits": 7}), ("streamk", {"policy": "sk"}),
                      ("streamk", {"policy": "hybrid"}), ("streamk", {"policy": "hybrid2"})):
        w = anyshape.work_partition(M, N, K, sched, sms, **kw)
        assert (_covered(w) == 1).all(), (sched, kw)
        assert len({s["cta"] for s in w["segments"]}) <= w["ctas"]
        owners = [s for s in w["segments"] if s["owner"]]
        if sched == "splitk":
            assert not owners and w["reduce"].startswith("splitk_reduce")
            continue
        assert sorted(s["tile"] for s in owners) == list(range(w["tiles"]))            # one owner per tile
        for o in owners:                                                              # it adds the others
            assert sorted(o["adds"]) == sorted(s["cta"] for s in w["segments"] if s["tile"] == o["tile"]
                                               and s is not o)
        if sched == "streamk":
            assert w["dp_tiles"] == anyshape.dp_tiles(M, N, kw["policy"], sms)
            sk = [s for s in w["segments"] if s["kernel"] == "gemm_streamk"]
            published = [s["cta"] for s in sk if not s["owner"]]
            assert len(published) == len(set(published))      # each block publishes at most one partial
            work = np.bincount([s["cta"] - w["dp_tiles"] for s in sk for _ in range(s["k1"] - s["k0"])],
                               minlength=sms)
            assert work.max() - work.min() <= 1                # equal shares of the iterations


def test_split_ranges_as_gemm_any_takes_them():
    assert anyshape.split_ranges(10, 4) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert anyshape.split_ranges(10, 6) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]      # 5 ranges, not 6
    assert anyshape.split_ranges(1024, 16) == [(64 * z, 64 * z + 64) for z in range(16)]
    assert anyshape.streamk_ranges(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert anyshape.streamk_ranges(2, 4) == [(0, 0), (0, 1), (1, 1), (1, 2)]
    with pytest.raises(ValueError, match="splits=0"):
        anyshape.split_ranges(10, 0)
    with pytest.raises(ValueError, match="schedule='rr'"):
        anyshape.work_partition(64, 64, 64, "rr", 132)
    with pytest.raises(ValueError, match="policy='x'"):
        anyshape.work_partition(64, 64, 64, "streamk", 132, policy="x")


@pytest.mark.parametrize("shape,sms", [((512, 512, 32768), 132), ((2176, 4096, 8192), 132),
                                       ((2176, 256, 8192), 8)])
def test_partition_figure_draws_the_partition(shape, sms):
    fig = schedules.partition_figure(*shape, sms=sms)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["data-parallel", "split-K", "stream-K"] and len(fig.data) == 9
    for i, (sched, _) in enumerate(schedules.SCHEDULES):
        bars, fix, stores = fig.data[3 * i:3 * i + 3]
        kw = {"policy": "sk" if anyshape.streamk_policy(*shape[:2], sms)[0] == "dp"
              else "hybrid2"} if sched == "streamk" else {}
        w = anyshape.work_partition(*shape, sched, sms, **kw)
        assert list(bars.y) == [s["tile"] for s in w["segments"]]
        assert list(bars.base) == [s["k0"] for s in w["segments"]]
        assert list(bars.x) == [s["k1"] - s["k0"] for s in w["segments"]]
        assert len(fix.x) == sum(1 for s in w["segments"] if s["kernel"] == "gemm_streamk" and not s["owner"])
        assert len(stores.y) == w["tiles"]
        assert sum(steps[i].args[0]["visible"]) == 3
    assert "not a timing" in fig.layout.title.text


# ------------------------------------------------------------------ every figure: builds, small, fits
FIGURES = [
    lambda: diagrams.hierarchy_figure("cp_async"),
    lambda: diagrams.hierarchy_figure("warptile_db", {"BK": 16}),
    lambda: diagrams.hierarchy_figure("mma_sync_f16"),
    lambda: diagrams.hierarchy_figure("mma_sync_bf16", {"BK": 32, "WM": 32}),
    lambda: diagrams.raster_figure("cp_async"),
    lambda: diagrams.raster_figure("mma_sync_f16", {"BM": 256, "BN": 128}),
    lambda: diagrams.raster_figure("warptile", shape=(8192, 8192, 8192), sms=132, blocks_per_sm=2),
    lambda: schedules.pipeline_timeline_figure("cp_async"),
    lambda: schedules.pipeline_timeline_figure("cp_async", {"STAGES": 6, "BK": 8}),
    lambda: schedules.pipeline_timeline_figure("mma_sync_f16"),
    lambda: schedules.pipeline_timeline_figure("mma_sync_bf16", {"STAGES": 2, "LOAD_SPREAD": 0}, k_tiles=3),
    lambda: schedules.partition_figure(512, 512, 32768),
    lambda: schedules.partition_figure(2176, 4096, 8192),
    lambda: schedules.partition_figure(2176, 256, 8192, sms=8),
]


@pytest.mark.parametrize("make", FIGURES, ids=range(len(FIGURES)))
def test_figures_build_small_and_their_texts_fit(make):
    fig = make()
    assert "model" in fig.layout.title.text and ("no GPU" in fig.layout.title.text
                                                 or "not a timing" in fig.layout.title.text)
    assert _texts_fit(fig) < 300_000


def test_pipeline_timeline_figure_draws_the_schedule():
    q = _params("cp_async")
    fig = schedules.pipeline_timeline_figure("cp_async", k_tiles=6)
    ev = pipeline.kernel_stage_schedule("sgemm_cp_async", q, 6)
    S = q["STAGES"]
    assert len(fig.data) == S + 2
    for s in range(S):
        bars = fig.data[s]
        cp = [e for e in ev if e["kind"] == "copy" and e["stage"] == s]
        rd = [e for e in ev if e["kind"] == "read" and e["stage"] == s]
        assert list(bars.text) == [str(e["tile"]) for e in cp + rd]
        assert list(bars.base) == [e["issue"] for e in cp] + [e["start"] for e in rd]
        assert list(bars.marker.pattern.shape) == ["/"] * len(cp) + [""] * len(rd)
    assert list(fig.data[S].text) == [str(k) for k in range(6)]
    assert list(fig.data[S + 1].x) == [e["time"] for e in ev if e["kind"] == "wait"]
    with pytest.raises(ValueError, match="entry='sgemm_warptile'"):
        schedules.pipeline_timeline_figure("warptile")


def test_restyle_moves_the_roofline_key_and_unsquares_worded_cells_layout_only():
    """scripts/restyle_figures.py (style.polish) on a committed figure: the roofline key
    drawn under the x axis title goes above the plot; a heatmap whose cells carry words
    loses the equal aspect an earlier style gave it, one of numbers keeps it; no trace
    changes."""
    import copy
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import restyle_figures

    key = dict(xref="paper", yref="paper", x=0, y=-0.2, showarrow=False, font=dict(size=10),
               text="diamond: measured DRAM traffic (ncu); filled circle: what the loads request")
    fig = {"data": [{"type": "heatmap", "z": [[0, 1], [2, 3]], "texttemplate": "lane %{z}"},
                    {"type": "heatmap", "z": [[0, 1]], "texttemplate": "%{z}", "xaxis": "x2", "yaxis": "y2"},
                    # words in the text the template shows (chapter 9's zoo: a plan and its ratio)
                    {"type": "heatmap", "z": [[0, 1]], "texttemplate": "%{text}", "xaxis": "x3", "yaxis": "y3",
                     "text": [["dir+sK2<br>1.69 ★", "hop<br>0.98"]]},
                    {"type": "heatmap", "z": [[0, 1]], "texttemplate": "%{text}", "xaxis": "x4", "yaxis": "y4",
                     "text": [["1.69<br>x2", "0.98"]]}],
           "layout": {"annotations": [key], "margin": {"b": 80},
                      "yaxis": {"scaleanchor": "x", "constrain": "domain"}, "xaxis": {"constrain": "domain"},
                      "yaxis3": {"scaleanchor": "x3", "constrain": "domain"}, "xaxis3": {"constrain": "domain"}}}
    data = {restyle_figures.PLOTLY_MIME: fig}
    traces = copy.deepcopy(fig["data"])
    assert restyle_figures.restyle_output(data)
    lay = data[restyle_figures.PLOTLY_MIME]["layout"]
    a = lay["annotations"][0]
    assert (a["y"], a["yanchor"], a["xanchor"]) == (1, "bottom", "left") and lay["margin"]["b"] == 50
    assert "scaleanchor" not in lay["yaxis"] and lay["yaxis2"]["scaleanchor"] == "x2"
    assert "scaleanchor" not in lay["yaxis3"] and lay["yaxis4"]["scaleanchor"] == "x4"
    assert data[restyle_figures.PLOTLY_MIME]["data"] == traces
    assert not restyle_figures.restyle_output(data)          # idempotent
