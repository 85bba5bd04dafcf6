"""Chapter 8 without a GPU: the raw-page CSV parser and the ncu command (a stand-in ncu),
the panel and the decision table (helpers.models.diagnosis) on textbook panels and on
the counters recorded on the H200 (results/h200-ncu-panels.json)."""
import csv
import io
import stat
import sys

import pytest

from helpers.models import diagnosis
from helpers.runtime import ncu as ncu_tool, panels

HEAD = ["ID", "Process ID", "Kernel Name", "Block Size", "Grid Size", "dram__bytes_read.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio"]
UNITS = ["", "", "", "", "", "byte", "%", "", ""]
ROWS = [["0", "12", "sgemm_x", "(256, 1, 1)", "(4, 1, 1)", "1,024", "12.5", "3.2", "1"],
        ["1", "12", "sgemm_x", "(256, 1, 1)", "(4, 1, 1)", "2048", "n/a", "0.5", "1"]]


def _raw_csv() -> str:
    b = io.StringIO()
    w = csv.writer(b, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in [HEAD, UNITS] + ROWS:
        w.writerow(r)
    return "==PROF== Connected to process 12\n" + b.getvalue()


def test_parse_raw_csv_skips_units_row_and_reads_numbers(tmp_path):
    f = tmp_path / "raw.csv"
    f.write_text(_raw_csv())
    L = ncu_tool.parse_raw_csv(str(f))
    assert [x["id"] for x in L] == [0, 1]
    assert L[0]["kernel"] == "sgemm_x" and L[0]["grid"] == "(4, 1, 1)"
    assert L[0]["metrics"]["dram__bytes_read.sum"] == 1024.0          # thousands separator removed
    assert L[1]["metrics"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == "n/a"
    assert "Process ID" not in L[0]["metrics"]                         # identification columns are not metrics


FAKE_NCU = r'''#!{python}
import subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
open(log, "w").write({csv!r})
sys.exit(subprocess.run(args[args.index("--log-file") + 2:]).returncode)
'''


def test_profile_raw_runs_the_child_under_the_panel_sections(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.replace("{python}", sys.executable).replace("{csv!r}", repr(_raw_csv())))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    child = tmp_path / "child.py"
    child.write_text("print('child ran')\n")
    res = ncu_tool.profile_raw(str(fake), [sys.executable, str(child)], "regex:^sgemm_x$", ["a.sum"], launch_count=1)
    assert res["returncode"] == 0 and "child ran" in res["stdout"]
    cmd = res["command"]
    for part in ("--clock-control none", "--launch-count 1", "--metrics a.sum", "--page raw --csv",
                 *(f"--section {s}" for s in ncu_tool.PANEL_SECTIONS)):
        assert part in cmd, part
    assert len(res["launches"]) == 2 and res["csv"].startswith("==PROF==")


def test_stalls_leave_out_issuing_states():
    m = {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 3.0,
         "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 9.0,
         "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio": 8.0,
         "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 1.0}
    assert diagnosis.stalls(m) == {"long_scoreboard": 3.0, "barrier": 1.0}
    assert diagnosis.panel(m)["stalls"] == [("long_scoreboard", 3.0), ("barrier", 1.0)]


def _panel(**kw):
    p = {f: None for f in diagnosis.FIELDS}
    p.update(tensor_pct=0.0, conflict_share=None, stalls=[])
    p.update(kw)
    return p


@pytest.mark.parametrize("kw, step", [
    (dict(conflict_share=0.5, l1_pct=90.0), "bank_conflicts"),
    (dict(sector_use=20.0, dram_pct=90.0, fma_pct=5.0), "coalesce"),
    (dict(sector_use=0.0, dram_pct=90.0, fma_pct=5.0), "smem_reuse"),      # 0: no plain loads, not waste
    (dict(dram_pct=85.0, fma_pct=10.0), "smem_reuse"),
    (dict(l2_pct=85.0, tensor_pct=40.0), "smem_reuse"),
    (dict(l1_pct=90.0, fma_pct=20.0), "register_reuse"),
    (dict(fma_pct=75.0, l1_pct=30.0), "tensor_cores"),
    (dict(tensor_pct=50.0, stalls=[("long_scoreboard", 2.0)]), "overlap"),
    (dict(tensor_pct=70.0, stalls=[("wait", 2.0)]), "tune"),             # fixed latency: no data wait
    (dict(tensor_pct=70.0, stalls=[("long_scoreboard", 2.0), ("math_pipe_throttle", 1.95)]), "tune"),  # a tie
    (dict(tensor_pct=70.0, stalls=[("math_pipe_throttle", 2.0)]), "tune"),
    (dict(tensor_pct=50.0, stalls=[("math_pipe_throttle", 2.0)]), "latency"),
    (dict(tensor_pct=92.0, stalls=[("barrier", 8.0)]), "specialize"),
    (dict(fma_pct=10.0, l1_pct=20.0, mem_pct=20.0), "latency"),
])
def test_each_rule_fires_on_its_textbook_panel(kw, step):
    d = diagnosis.diagnose(_panel(**kw))
    assert d["step"] == step, d
    assert d["action"] == diagnosis.STEPS[step]


def test_measured_intensity():
    assert diagnosis.measured_intensity((4096, 4096, 4096), 100e6, 34217728.0) == pytest.approx(
        2 * 4096 ** 3 / 134217728.0)
    assert diagnosis.measured_intensity((8, 8, 8), None, 0) is None


# ------------------------------------------------------------------ the H200 recording
RUNS, DOC, WHERE = panels.recorded()
L2_BYTES = 62914560        # the H200's L2 (results/h200.json ceilings.spec.l2_bytes)
needs_recording = pytest.mark.skipif(DOC is None, reason=WHERE)


def test_panels_are_recorded_with_provenance():
    assert DOC is not None, "results/h200-ncu-panels.json must be committed (scripts/ncu_panels.py on the H200)"
    prov = DOC["provenance"]
    for k in ("gpu", "date", "commit", "ncu", "driver"):
        assert prov.get(k), k
    assert "--clock-control none" in DOC["command"] and "--page raw" in DOC["command"]
    assert {r["heaven"] for r in RUNS} >= {1, 2, 3, 4, 5, 6, 7, 10}
    assert all(r["shape"] == [4096, 4096, 4096] for r in RUNS)


@needs_recording
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["key"])
def test_every_recorded_panel_is_complete(run):
    p = run["panel"]
    for f in ("sm_pct", "mem_pct", "dram_read", "dram_write", "l2_hit", "occ_achieved", "occ_theoretical",
              "fma_pct", "tensor_pct", "bank_conflicts", "shared_wavefronts"):
        assert isinstance(p[f], float), f
    assert len(p["stalls"]) == 3 and p["stalls"][0][1] >= p["stalls"][2][1]
    assert 0 < p["occ_achieved"] <= p["occ_theoretical"] * 1.05
    # DRAM reads can never be below the minimal traffic (A and B read once). Writes can: the
    # last dirty lines of C still sit in the 60 MB L2 when the kernel ends (written back later),
    # so ncu counts at least C minus the L2's size.
    isz = 4 if run["key"] in ("naive_yfirst", "vec4", "smem_tiled", "tile1d_swizzle", "cp_async") else 2
    M, N, K = run["shape"]
    assert p["dram_read"] >= 0.95 * isz * (M * K + K * N)
    assert isz * M * N - L2_BYTES <= p["dram_write"] <= 1.05 * isz * M * N


@needs_recording
def test_tensor_pipe_on_gh100():
    """No gmma pipe metric on gh100; the HMMA pipe metric counts wgmma too (chapter 10 at ~95 %),
    and the FP32 kernels keep the Tensor pipe idle."""
    assert not any("pipe_tensor_op_gmma_cycles" in k for r in RUNS for k in r["metrics"])
    by = {r["heaven"]: r for r in RUNS}
    h10 = by[10]["metrics"]
    assert h10["sm__inst_executed_pipe_tensor_op_gmma.sum"] > 0
    assert h10["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] > 80
    for h in (1, 2, 3, 5):
        assert by[h]["panel"]["tensor_pct"] < 1 and by[h]["panel"]["fma_pct"] > 5


# ------------------------------------------------------------------ chapter 8 on the recording
from helpers.chapters import ch08_profiling as ch08  # noqa: E402
from helpers.figures import profiling as prof_fig  # noqa: E402


@needs_recording
def test_each_diagnosis_names_the_next_heavens_step_or_the_chapter_says_why():
    """Heaven N's diagnosis must name a step heaven N+1 takes; where it does not, ch08.EXCUSES
    says why, and every excuse must still be needed (no stale explanations)."""
    rows = prof_fig.diagnosis_rows(RUNS, ch08.HEAVEN_STEPS, ch08.EXCUSES)
    judged = {r["heaven"]: r for r in rows if r["agree"] is not None}
    assert set(judged) >= {1, 2, 3, 4, 5, 6, 7}
    disagree = {h for h, r in judged.items() if r["agree"] != "yes"}
    assert disagree == set(ch08.EXCUSES), {h: (judged[h]["names"], judged[h]["takes"]) for h in disagree}
    assert len(judged) - len(disagree) >= 5


@needs_recording
def test_prose_claims_about_measured_intensity_hold():
    """What chapter 8's prose says about the measured-traffic roofline, checked on the recording."""
    by = {r["heaven"]: r["panel"] for r in RUNS}
    x = {h: diagnosis.measured_intensity(RUNS[0]["shape"], p["dram_read"], p["dram_write"]) for h, p in by.items()}
    assert 5 < x[1] < 20                          # the naive kernel: about 10 FLOP/B
    assert x[3] < x[2] and x[3] < x[4] < x[5]      # heaven 3 moves left, 4 and 5 move right
    fp32_min, fp16_min = 2 * 4096 ** 3 / (3 * 4 * 4096 ** 2), 2 * 4096 ** 3 / (3 * 2 * 4096 ** 2)
    assert 0.35 < x[5] / fp32_min < 0.65
    for h in (6, 7, 10):
        assert 0.35 < x[h] / fp16_min < 0.65
    assert x[10] > max(x[6], x[7])
    # "heaven 3's plain shared-memory tile moves *more* DRAM traffic than heaven 2, and its L2 hit
    # rate drops" (chapter 8): both directions, by a margin well outside recording-to-recording noise
    assert by[3]["dram_read"] > 1.5 * by[2]["dram_read"] and by[3]["l2_hit"] < by[2]["l2_hit"]


@needs_recording
def test_figures_draw_every_heaven():
    ceil = {"copy_GBps": 4000.0, "cublas_TFLOPs": {"float32": 50.0, "float16": 700.0}, "where": "test"}
    assert len(prof_fig.sol_figure(RUNS, "test").data) == 4
    assert all(len(t.x) == len(RUNS) for t in prof_fig.stall_figure(RUNS, "test").data)
    recs = [{"chapter": r["heaven"], "kernel": r["key"], "shape": r["shape"], "value": 10.0, "ratio": 0.5,
             "dtype": "float32" if r["heaven"] <= 5 else "float16"} for r in RUNS]
    fig = prof_fig.roofline_measured(recs, ceil, RUNS)
    drawn = [t for t in fig.data if t.name and t.name.split(":")[0].isdigit()]
    assert len(drawn) == len(RUNS) and all(t.x[0] < t.x[1] for t in drawn)   # measured left of minimal


@needs_recording
def test_every_chapters_roofline_places_the_headline_kernels_at_measured_traffic(monkeypatch):
    from helpers.chapters import common
    from helpers.figures import roofline as roofline_fig
    from helpers.runtime import gpu
    m = common.measured_intensities()
    assert "recorded on NVIDIA H200" in m["where"]
    recs = common.running(upto=7)
    assert all((r["kernel"], tuple(r["shape"])) in m for r in recs)
    fig = roofline_fig.figure(recs, {"copy_GBps": 4000.0, "cublas_TFLOPs": {"float32": 50.0}}, measured=m)
    kernels = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(kernels) == len(recs) and all("diamond" in t.marker.symbol for t in kernels)
    assert all(list(t.x) == sorted(t.x) for t in kernels)
    assert any("measured DRAM traffic" in a.text for a in fig.layout.annotations)
    plain = roofline_fig.figure(recs, {"copy_GBps": 4000.0, "cublas_TFLOPs": {"float32": 50.0}})
    assert not any("diamond" in t.marker.symbol for t in plain.data if t.mode == "lines+markers")
    # live on another GPU: the H200's bytes do not go under that GPU's numbers
    monkeypatch.setattr(gpu, "live", lambda: True)
    monkeypatch.setattr(gpu, "device_info", lambda: {"name": "NVIDIA A100"})
    assert common.measured_intensities() == {}


def test_cublas_tile_is_read_from_the_kernel_name():
    from helpers.models import counters
    name = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4"
    assert counters.cublas_tile(name) == {"BM": 256, "BN": 128, "BK": 8, "STAGES": 3, "warps": [4, 2]}
    assert counters.cublas_tile("sgemm_cp_async") == {}


def test_the_cublas_comparison_says_what_its_recording_shows():
    """Chapter 8's "last few per cent" prose, claim by claim, against results/h200-ncu-cublas.json:
    the same warp count and warp tile, as many FFMAs, no fewer instructions per FFMA, more issue
    slots used, fewer dispatch and fetch stalls on cuBLAS's side and more shared-memory and
    barrier waits, and our kernel slower at cuBLAS's tile than at its own (same run)."""
    from helpers.chapters import ch08_profiling as ch
    from helpers.models import counters
    rows = ch.cublas_rows()
    assert rows is not None and "recorded on NVIDIA H200" in rows["where"]
    ours, blas = rows["launch"]
    assert ours["threads"] == blas["threads"] == 256
    from helpers.runtime import results
    doc = results.artifact(ch.CUBLAS_ARTIFACT)
    tile = counters.cublas_tile(doc["runs"][0]["kernel"])
    p = doc["runs"][1]["params"]
    assert (tile["BM"] // tile["warps"][0], tile["BN"] // tile["warps"][1]) == (p["WM"], p["WN"]) == (64, 64)
    assert tile["STAGES"] == p["STAGES"] == 3 and (tile["BK"], p["BK"]) == (8, 16)
    ffma = [r["metrics"]["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] for r in doc["runs"]]
    assert abs(ffma[0] / ffma[1] - 1) < 0.0003                       # "the same FFMAs, to 0.03 %"
    assert ours["blocks per SM"] == blas["blocks per SM"] == 1          # "one block of 8 warps per SM"
    for r in doc["runs"]:                                               # "the register counts allow no second one"
        assert 2 * r["metrics"]["launch__registers_per_thread"] * 256 > 65536
    c = counters.by_field(rows["counters"])
    assert c["inst_per_op"]["b"] >= c["inst_per_op"]["a"]
    assert c["issue_pct"]["b"] > c["issue_pct"]["a"] and c["duration_us"]["b"] < c["duration_us"]["a"]
    assert c["stall:dispatch_stall"]["a"] > c["stall:dispatch_stall"]["b"]
    assert c["stall:no_instruction"]["a"] > c["stall:no_instruction"]["b"]
    assert c["stall:short_scoreboard"]["b"] > c["stall:short_scoreboard"]["a"]
    assert c["stall:barrier"]["b"] > c["stall:barrier"]["a"]
    assert 1.5 < c["shared_waves_per_op"]["b / a"] < 1.9                  # "about 1.7 times the wavefronts"
    assert [r["what"] for r in rows["control"]] == ["our default tile", "cuBLAS's tile", "cuBLAS's block tile with BK 16",
                                                    "our default tile, timed again last"]
    own = [r["ratio to cuBLAS"] for r in rows["control"] if r["block tile"] == "128 x 256 x 16"]
    theirs = [r["ratio to cuBLAS"] for r in rows["control"] if r["block tile"].startswith("256 x 128")]
    assert len(own) == 2 and theirs and min(own) > max(theirs)


def test_the_cublas_control_caption_names_the_controls_own_commit(monkeypatch):
    """scripts/ncu_vs_cublas.py --tile-control is a separate command: when its block carries its
    own provenance, the control table's caption names that commit, not the profile's."""
    import copy
    from helpers.chapters import ch08_profiling as ch
    from helpers.runtime import results
    doc = results.artifact(ch.CUBLAS_ARTIFACT)
    if doc is None:
        pytest.skip("results/h200-ncu-cublas.json not recorded")
    rows = ch.cublas_rows()
    assert rows["control_where"] == rows["where"] or "provenance" in doc.get("tile_control", {})
    later = copy.deepcopy(doc)
    later["tile_control"]["provenance"] = {**doc["provenance"], "commit": "abc1234"}
    monkeypatch.setattr(results, "artifact", lambda name, slug=results.DEFAULT_SLUG: later)
    rows = ch.cublas_rows()
    assert "commit abc1234" in rows["control_where"] and "commit abc1234" not in rows["where"]


def test_steps_are_shown_in_words():
    """The decision table's step identifiers stay in code; a notebook shows them in words."""
    assert set(diagnosis.STEP_NAMES) == set(diagnosis.STEPS)
    assert diagnosis.step_words("register_reuse") == "register tiles"
    assert diagnosis.step_words("overlap, smem_reuse") == "overlap loads with math and shared-memory tiles"
    assert diagnosis.step_words("a, b, c") == "a, b and c" and diagnosis.step_words("") == ""
    assert all("_" not in w for w in diagnosis.STEP_NAMES.values())


def test_an_excused_disagreement_is_titled_in_words(monkeypatch):
    from helpers.chapters import ch08_profiling as ch
    from helpers.figures import show
    titles = []
    monkeypatch.setattr(show, "note", lambda text, title="Note": titles.append(title))
    ch.show_excuses([{"heaven": 2, "next": 3, "names": "register_reuse", "takes": "smem_reuse",
                      "agree": "no: see why below"}])
    assert titles == ["Heaven 2 -> 3: the table names register tiles, the book takes shared-memory tiles"]


def test_the_defaults_line_says_where_they_come_from():
    from helpers.chapters import ch08_profiling as ch
    from helpers.runtime import gpu
    # a model-only cell, re-rendered without a GPU on pages whose other cells ran live: no "recorded mode" in it
    assert ch.defaults_where(None) == "for the recording GPU (NVIDIA H200), read from results/h200-tuning.json"
    h200 = {**gpu.SIMULATED["h200"], "simulated": False}
    assert ch.defaults_where(h200) == "on this NVIDIA H200, read from results/h200-tuning.json"
    l4 = {**gpu.SIMULATED["l4"], "slug": "l4", "simulated": True}
    assert "simulated" in ch.defaults_where(l4) and "recorded mode" not in ch.defaults_where(l4)


def test_the_cublas_comparison_prints_no_ncu_command_line(capsys):
    from helpers.chapters import ch08_profiling as ch
    from helpers.figures import show
    if ch.cublas_rows() is None:
        pytest.skip("results/h200-ncu-cublas.json not recorded")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(show, "_markdown", lambda text: None)
        mp.setattr(show, "figure", lambda fig: None)
        ch.show_cublas_fp32()
    out = capsys.readouterr().out
    assert "--metrics" not in out and "sections (SpeedOfLight" in out and len(out.splitlines()[-1]) < 300


def test_one_panel_gets_its_own_caption_and_no_empty_heaven_column(monkeypatch):
    """A single profiled kernel (chapter 8's first cell) is captioned as that kernel, and a
    heaven column that no run fills is left out; the table of every heaven keeps both."""
    from helpers.figures import profiling as prof_fig
    runs, _, where = panels.recorded()
    if not runs:
        pytest.skip("no recorded panels")
    seen = []
    monkeypatch.setattr(prof_fig.show, "table", lambda rows, cols, caption: seen.append((cols, caption)))
    one = {k: v for k, v in runs[0].items() if k != "heaven"}
    prof_fig.show_panels([one], where)
    cols, caption = seen[-1]
    assert "heaven" not in cols and f"panel of {one['key']}" in caption and "each heaven" not in caption
    prof_fig.show_panels(runs, where)
    cols, caption = seen[-1]
    assert "heaven" in cols and "each heaven's headline kernel" in caption
