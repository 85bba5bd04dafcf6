"""helpers/runtime/ncu.py without a GPU or ncu: the command it builds and the CSV it
reads, with a stand-in ``ncu`` that writes two launches to --log-file and runs
the child command it was given."""
import stat
import sys

from helpers.runtime import ncu as ncu_tool

FAKE_NCU = r'''#!{python}
import subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
child = args[args.index("--metrics") + 2:]
head = '"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"'
rows = ['"0","k","(256, 1, 1)","(4, 1, 1)","a.sum","","1,024"', '"1","k","(256, 1, 1)","(4, 1, 1)","a.sum","","n/a"']
open(log, "w").write("==PROF== Connected\n" + "\n".join([head] + rows) + "\n")
sys.exit(subprocess.run(child).returncode)
'''


def test_profile_builds_the_command_and_parses_the_log(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.replace("{python}", sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "child.py"
    script.write_text("import json, sys\nplan = json.load(open(sys.argv[sys.argv.index('--child') + 1]))\n"
                      "print('child saw', len(plan), 'items')\n")
    res = ncu_tool.profile(str(fake), str(script), [{"x": 1}, {"x": 2}], "regex:^k$", ["a.sum", "b.sum"])
    assert res["returncode"] == 0 and "child saw 2 items" in res["stdout"]
    assert "--clock-control none" in res["command"] and "--metrics a.sum,b.sum" in res["command"]
    assert [L["id"] for L in res["launches"]] == [0, 1]
    assert res["launches"][0]["metrics"]["a.sum"] == 1024.0 and res["launches"][1]["metrics"]["a.sum"] == "n/a"
    assert res["launches"][0]["grid"] == "(4, 1, 1)"


def test_find_prefers_an_explicit_path(monkeypatch):
    assert ncu_tool.find("/opt/x/ncu") == "/opt/x/ncu"
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("CUDA_PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    assert ncu_tool.find() in (None, "/usr/local/cuda/bin/ncu")


def test_command_line_requires_out_unless_child():
    import pytest
    a = ncu_tool.command_line("doc", argv=["--out", "x.json", "--shape", "64", "32", "16"])
    assert a.out == "x.json" and a.shape == [64, 32, 16] and a.child is None
    assert ncu_tool.command_line("doc", argv=["--child", "plan.json"]).child == "plan.json"
    with pytest.raises(SystemExit):
        ncu_tool.command_line("doc", argv=[])


def test_ncu_banks_keeps_each_counters_minimum_over_two_launches(tmp_path, monkeypatch):
    """Every variant is profiled twice; a one-launch excess (seen on the H200)
    must not reach the JSON, and both launches stay on record."""
    import json
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import ncu_banks

    def fake_profile(ncu, script, items, regex, metrics):
        launches = []
        for i, it in enumerate(items):
            m = dict(ncu_banks.ncu_predict(it))
            if it["launch"] == 0 and it["name"] == "transpose_shared/PAD0":
                m = {k: v + 3 for k, v in m.items()}          # one launch reports 3 extra events
            launches.append({"id": i, "kernel": it["entry"], "metrics": m})
        return {"launches": launches, "returncode": 0, "stdout": "", "stderr": "", "command": "ncu ..."}

    monkeypatch.setattr(ncu_banks.ncu_tool, "find", lambda explicit=None: "/fake/ncu")
    monkeypatch.setattr(ncu_banks.ncu_tool, "profile", fake_profile)
    monkeypatch.setattr(ncu_banks.ncu_tool, "provenance", lambda ncu: {"ncu": "fake"})
    out = tmp_path / "b.json"
    monkeypatch.setattr(sys, "argv", ["ncu_banks.py", "--out", str(out)])
    assert ncu_banks.main() == 0
    doc = json.loads(out.read_text())
    t = doc["_meta"]["variants"]["transpose_shared/PAD0"]
    assert t["match"] and len(t["launches"]) == ncu_banks.LAUNCHES == 2
    assert t["launches"][0]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 1015808 + 3
    assert doc["transpose_shared/PAD0"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 1015808
    assert all(v["match"] for v in doc["_meta"]["variants"].values())


def test_query_metrics_keeps_metrics_with_rollup_and_ratio_suffixes(tmp_path):
    """A metric is known by its base name, before its first suffix: found once with only
    one suffix stripped, sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active was dropped."""
    fake = tmp_path / "ncu"
    names = "\n".join(f"{n}  Counter  some description" for n in
                      ["sm__pipe_tensor_cycles_active", "dram__bytes_read"] + [f"x__m{i}" for i in range(60)])
    fake.write_text(f"#!{sys.executable}\nprint('''Device\\n{names}''')\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    want = ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "dram__bytes_read.sum", "nope__x.sum"]
    known, unknown, state = ncu_tool.query_metrics(str(fake), want)
    assert state == "ok" and known == want[:2] and unknown == ["nope__x.sum"]


def test_shown_command_is_repository_relative():
    from helpers.runtime import ncu
    cmd = ("/usr/local/cuda/bin/ncu --clock-control none --page raw --csv --log-file /tmp/tmpab/ncu_raw.csv "
           "/opt/x/.venv/bin/python3 /some/checkout/scripts/ncu_panels.py --child /tmp/tmpcd/plan.json")
    assert ncu.shown_command(cmd) == ("ncu --clock-control none --page raw --csv "
                                      "python scripts/ncu_panels.py --child <plan.json>")


def test_controls_regex_matches_every_controls_entry():
    """ncu's --kernel-name filter must match every launch the controls plan makes, the
    mma-only probe too (its PROBE build runs kernels/experiments/07_mma_probe.cu's own entry),
    else ncu profiles fewer launches than planned and the recorder stops."""
    import importlib.util
    import re
    import helpers  # noqa: F401  (fills the catalog)
    from helpers.runtime import panels
    spec = importlib.util.spec_from_file_location("ncu_panels_script", "scripts/ncu_panels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pattern = panels.kernel_regex([], mod.CONTROLS).removeprefix("regex:")
    entries = [panels.entry_of(c) for c in mod.CONTROLS]
    assert "gemm_mma_probe" in entries
    assert all(re.search(pattern, e) for e in entries), (pattern, entries)
    assert not re.search(pattern, "gemm_mma_sync_other")


def test_version_text_names_nsight_compute_and_its_release():
    """Captions print "Nsight Compute 2025.3.1", not ncu's raw --version line."""
    assert ncu_tool.version_text("Version 2025.3.1.0 (build 36398880) (public-release)") == "Nsight Compute 2025.3.1"
    assert ncu_tool.version_text(None) == "Nsight Compute" == ncu_tool.version_text("odd output")


def test_command_summary_is_one_short_line():
    """A notebook prints what ncu collected, never its ~2,000-character command line."""
    metrics = [f"unit__m{i}.sum" for i in range(22)]
    cmd = " ".join(ncu_tool.raw_command("/usr/local/cuda/bin/ncu", ["/x/python", "/x/scripts/ncu_panels.py"],
                                        "regex:^k$", metrics, launch_count=1, log="/tmp/a.csv"))
    line = ncu_tool.command_summary(cmd)
    assert line == ("ncu, collecting 4 sections (SpeedOfLight, MemoryWorkloadAnalysis, Occupancy, WarpStateStats) "
                    "and 22 extra metrics from one launch")
    assert ncu_tool.command_summary("ncu --metrics a.sum,b.sum python x.py") == "ncu, collecting 2 metrics"


def _controls_doc(reads, naive=1):
    """A control profile whose vec4 and strip4 launches read ``reads`` GB, with ``naive`` launches of naive_yfirst."""
    def run(key, gb, hit):
        return {"key": key, "metrics": {"dram__bytes_read.sum": gb * 1e9, "lts__t_sector_hit_rate.pct": hit}}
    runs = [run("naive_yfirst", 15.0, 50.0)] * naive
    runs += [run("strip4", gb, 70.0) for gb in reads] + [run("vec4", gb, 80.0 - i) for i, gb in enumerate(reads)]
    return {"provenance": {"gpu": "NVIDIA H200", "date": "2026-12-07"}, "runs": runs}


def test_a_control_profiled_several_times_reads_as_its_median_launch(monkeypatch):
    """Where the control profile holds several launches of a kernel, panels.control returns the
    median launch by DRAM bytes read (its other counters from that same launch), and
    dram_read_spread the median, extremes and count; chapter 2 says how far they moved."""
    from helpers.chapters import ch02_vectorized as ch2
    from helpers.runtime import panels, results
    doc = _controls_doc([5.3, 4.6, 5.9], naive=3)
    monkeypatch.setattr(results, "artifact", lambda name, slug=results.DEFAULT_SLUG: doc)
    m, _ = panels.control("vec4")
    assert m["dram__bytes_read.sum"] == 5.3e9 and m["lts__t_sector_hit_rate.pct"] == 80.0   # the launch of 5.3 GB
    assert panels.dram_read_spread("vec4") == (5.3, 4.6, 5.9, 3)
    assert len(panels.control_launches("strip4")[0]) == 3
    assert ch2.dram_spread_sentence() == ("Each figure is the median of three launches in that profile; between them "
                                          "vec4 read 4.6 to 5.9 GB and strip4 4.6 to 5.9 GB.")
    mixed = _controls_doc([5.3, 4.6, 5.9])
    monkeypatch.setattr(results, "artifact", lambda name, slug=results.DEFAULT_SLUG: mixed)
    assert ch2.dram_spread_sentence().startswith("The figures are the medians of 1, 3 and 3 launches in that profile; ")
    single = _controls_doc([3.1])
    monkeypatch.setattr(results, "artifact", lambda name, slug=results.DEFAULT_SLUG: single)
    assert panels.dram_read_spread("vec4") == (3.1, 3.1, 3.1, 1)
    assert ch2.dram_spread_sentence() == "Each figure is one launch."
    try:
        panels.control("cp_async")
        raise AssertionError("an unrecorded control was returned")
    except KeyError as e:
        assert "cp_async" in str(e)


def test_the_controls_plan_repeats_the_kernels_whose_traffic_the_l2_decides(monkeypatch):
    import importlib.util
    import helpers  # noqa: F401  (fills the catalog)
    from helpers.runtime import gpu
    spec = importlib.util.spec_from_file_location("ncu_panels_script", "scripts/ncu_panels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(gpu, "device_info", lambda: {"cc": (9, 0), "name": "NVIDIA H200"})
    items = mod.controls_plan((4096, 4096, 4096))
    keys = [it["key"] for it in items]
    assert keys.count("vec4") == keys.count("strip4") == keys.count("naive_yfirst") == 3
    assert keys.count("naive_xfirst") == 1 and keys.count("cp_async") == 1
    vec = [it for it in items if it["key"] == "vec4"]
    assert [it["launch"] for it in vec] == [0, 1, 2] and keys.index("vec4") + 2 == len(keys) - keys[::-1].index("vec4") - 1
