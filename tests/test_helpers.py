"""Layer 1: unit tests of helpers/ that need no GPU."""
import json
import time

import numpy as np

import pytest

from helpers.figures import show
from helpers.models import mapping, occupancy as occ
from helpers.runtime import bench, catalog, checks, compile as kc, gpu, launch, results, roofline, timing, verify


# ---------------------------------------------------------------- checks / catalog
def test_require_message_names_parameter_value_rule():
    with pytest.raises(ValueError, match=r"^BM=100: must be a multiple of 32$"):
        checks.require(False, "BM", 100, "must be a multiple of 32")
    checks.require(True, "BM", 128, "never shown")


@pytest.mark.parametrize("key,shape,params,pattern", [
    ("vec4", (64, 63, 64), {}, r"^N=63: must be a multiple of 4"),
    ("vec4", (64, 64, 62), {}, r"^K=62: must be a multiple of 4"),
    ("kmajor", (64, 64, 30), {}, r"^K=30: must be a multiple of 4"),
    ("naive_yfirst", (64, 64, 64), {"BLOCK_X": 64, "BLOCK_Y": 32}, r"^threads per block=2048: must be <= 1024"),
    ("naive_yfirst", (64, 64, 64), {"BLOCK_X": 24}, r"^BLOCK_X=24: must be one of"),
    ("naive_yfirst", (0, 64, 64), {}, r"^M=0: must be a positive integer"),
    ("naive_yfirst", (64, 64, 64), {"BLOCK_Z": 1}, r"^BLOCK_Z=1: is not a parameter of naive_yfirst"),
    ("naive_yfirst", (64, 64, 64), {"BLOCK_X": 32.0}, r"^BLOCK_X=32.0: must be an integer"),
    ("transpose_padded", (64, 64), {"TILE": 16, "BLOCK_ROWS": 32}, r"^BLOCK_ROWS=32: must divide TILE=16"),
    ("naive_yfirst", (64, 64, 64), {"BLOCK_X": 8, "BLOCK_Y": 1}, r"must be a multiple of 32 \(whole warps\)"),
])
def test_every_precondition_error(key, shape, params, pattern):
    spec = catalog.get(key)
    with pytest.raises(ValueError, match=pattern):
        spec.validate(spec.params(**params), shape)


def test_smem_limit_rule():
    spec = catalog.get("transpose_padded")
    big = catalog.Kernel(**{**spec.__dict__, "key": "tmp", "smem": lambda p: 300_000})
    with pytest.raises(ValueError, match=r"dynamic shared memory \(bytes\)=300000: must be <= 232448"):
        big.validate(big.params(), (64, 64), smem_limit=232448)


def test_unknown_kernel_lists_known():
    with pytest.raises(KeyError, match="naive_xfirst"):
        catalog.get("nope")


def test_every_shipped_config_is_valid_on_the_book_shape():
    for key, spec in catalog.KERNELS.items():
        shape = (4096, 4096, 4096) if spec.op == "gemm" else (4096, 4096)
        for p in spec.configs():
            spec.validate(p, shape)


# ---------------------------------------------------------------- launch (no GPU)
def test_prepare_refuses_before_touching_the_gpu():
    # validation comes first, so a bad value raises ValueError even with no GPU
    with pytest.raises(ValueError, match="BLOCK_X"):
        launch.prepare("naive_yfirst", (64, 64, 64), BLOCK_X=7)


def test_occupancy_model():
    # 256 threads, 128 registers: 8 warps x 4096 regs = 32768 per block -> 2 blocks (65536 regs)
    o = occ.occupancy(128, 256, 0, arch="sm_90")
    assert o["blocks_per_sm"] == 2 and o["limited_by"] == "registers" and o["occupancy"] == 0.25
    # 32 registers, 256 threads, no smem: thread-limited at 8 blocks, 100 %
    o = occ.occupancy(32, 256, 0, arch="sm_90")
    assert o["blocks_per_sm"] == 8 and o["occupancy"] == 1.0
    # 100 KB of shared memory per block: 2 blocks fit in 228 KB (1 KB reserved per block)
    o = occ.occupancy(32, 128, 100 * 1024, arch="sm_90")
    assert o["blocks_per_sm"] == 2 and o["limited_by"] == "shared memory"


# ---------------------------------------------------------------- compile helpers
def test_compile_log_points_at_source_line():
    src = "line one\nfloat x = y;\nline three\n"
    log = "/tmp/k.cu(2): error: identifier \"y\" is undefined\n"
    out = kc.format_compile_log(log, src)
    assert "line 2: error: identifier \"y\" is undefined" in out and ">    2 | float x = y;" in out


def test_include_dirs_find_crt_mma_where_the_toolkit_has_it():
    from pathlib import Path
    have = [d for d in kc._candidate_include_dirs() if (Path(d) / "crt" / "mma.h").is_file()]
    if not have:
        pytest.skip("no CUDA headers with crt/mma.h on this machine (the next test covers the message)")
    kc.cuda_include_dirs.cache_clear()
    try:
        dirs = kc.cuda_include_dirs()
    finally:
        kc.cuda_include_dirs.cache_clear()
    assert any((Path(d) / "crt" / "mma.h").is_file() for d in dirs), f"headers at {have}, found {dirs}"


def test_missing_include_dirs_say_what_to_install(monkeypatch):
    kc.cuda_include_dirs.cache_clear()
    monkeypatch.setattr(kc, "_candidate_include_dirs", lambda: [])
    kc.cuda_include_dirs.cache_clear()
    with pytest.raises(kc.CudaHeadersNotFound, match="nvidia-cuda-crt"):
        kc.cuda_include_dirs(13)
    kc.cuda_include_dirs.cache_clear()
    with pytest.raises(kc.CudaHeadersNotFound, match="nvidia-cuda-nvcc-cu12"):
        kc.cuda_include_dirs(12)
    kc.cuda_include_dirs.cache_clear()


def test_local_includes_are_pasted(tmp_path, monkeypatch):
    (tmp_path / "x.cuh").write_text("#define FROM_HEADER 1\n")
    (tmp_path / "99_k.cu").write_text('#include "x.cuh"\nint y = FROM_HEADER;\n')
    monkeypatch.setattr(kc, "KERNEL_DIR", tmp_path)
    s = kc.source("99_k.cu")
    assert "#define FROM_HEADER 1" in s and '#include "x.cuh"' not in s


def test_unknown_kernel_file():
    with pytest.raises(FileNotFoundError, match="no such kernel"):
        kc.source("nope.cu")


# ---------------------------------------------------------------- timing / verify
def test_flop_and_byte_counts():
    assert timing.gemm_flops(4096, 4096, 4096) == 2 * 4096 ** 3
    assert timing.gemm_min_bytes(2, 3, 4) == (2 * 4 + 4 * 3) * 4 + 2 * 3 * 4
    assert timing.tflops(2e12, 1000.0) == pytest.approx(2.0)
    assert timing.gbps(1e9, 1.0) == pytest.approx(1000.0)
    assert roofline.intensity_min(4096, 4096, 4096) == pytest.approx(2 * 4096 ** 3 / (3 * 4096 ** 2 * 4))


def test_time_pair_alternates_and_takes_medians_over_rounds(monkeypatch):
    calls = []
    def fake_timer(fn, *, warmup, budget_ms, min_repeat, max_repeat):
        calls.append((fn, warmup))
        base = fn()                          # fn returns its "time"
        drift = 1 + 0.1 * ((len(calls) - 1) // 2)  # the GPU slows down round after round
        ts = [base * drift] * 3
        return {"ms": ts[0], "all": ts, "n": 3}
    monkeypatch.setitem(timing._LAST, "end", time.perf_counter())     # a timing just ended: no pre-heat
    t = timing.time_pair(lambda: 2.0, lambda: 1.0, rounds=3, budget_ms=90, timer=fake_timer)
    # reference first in every round, then the kernel; warm-up 3 only in the first round
    assert [w for _, w in calls] == [3, 3, 1, 1, 1, 1]
    assert [c[0]() for c in calls] == [1.0, 2.0] * 3
    assert t["n"] == t["ref_n"] == 9 and len(t["rounds"]) == 3
    # both sides drift alike, so the ratio stays the true one (0.5), unlike a
    # reference timed once before every kernel
    assert t["ratio"] == pytest.approx(0.5) and t["ms"] == pytest.approx(2.2)
    assert t["ratio"] == pytest.approx(t["ref_ms"] / t["ms"])
    with pytest.raises(ValueError, match="rounds=0"):
        timing.time_pair(lambda: 1.0, lambda: 1.0, rounds=0, timer=fake_timer)


@pytest.mark.parametrize("idle_s, preheats", [(None, True), (2 * timing.IDLE_S, True), (0.0, False)])
def test_time_pair_preheats_with_the_reference_only_after_an_idle_gap(monkeypatch, idle_s, preheats):
    """After an idle gap the board's first tens of ms run fast (timing.py's note): the reference
    runs untimed for PREHEAT_MS first, so round 1's reference does not get that clock alone."""
    calls = []
    def fake_timer(fn, *, warmup, budget_ms, min_repeat, max_repeat):
        calls.append((fn(), budget_ms))
        return {"ms": fn(), "all": [fn()] * 3, "n": 3}
    end = None if idle_s is None else time.perf_counter() - idle_s
    monkeypatch.setitem(timing._LAST, "end", end)
    timing.time_pair(lambda: 2.0, lambda: 1.0, rounds=2, budget_ms=40, timer=fake_timer)
    first = [(1.0, timing.PREHEAT_MS)] if preheats else []
    assert calls == first + [(1.0, 20.0), (2.0, 20.0)] * 2
    calls.clear()
    timing.time_pair(lambda: 2.0, lambda: 1.0, rounds=2, budget_ms=40, timer=fake_timer)
    assert calls == [(1.0, 20.0), (2.0, 20.0)] * 2          # straight after another: no pre-heat


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_bench_refuses_bad_rounds_before_the_gpu(bad):
    with pytest.raises(ValueError, match="rounds="):
        bench.gemm(["naive_xfirst"], (256, 256, 256), rounds=bad)
    with pytest.raises(ValueError, match="rounds="):
        bench.transpose(["transpose_naive"], (256, 256), rounds=bad)


def test_tolerances_ordered_by_precision():
    t = verify.TOLERANCE
    assert t["float32"] < t["tf32"] <= t["float16"] < t["bfloat16"] <= 1e-2


# ---------------------------------------------------------------- index models
@pytest.mark.parametrize("key", ["naive_xfirst", "naive_yfirst", "vec4", "kmajor"])
@pytest.mark.parametrize("shape", [(70, 100, 20), (32, 128, 16), (1, 4, 4)])
def test_owner_model_is_a_partition(key, shape):
    spec = catalog.get(key)
    p = spec.params()
    own = spec.owner(p, shape)
    assert own.shape == shape[:2] and (own >= 0).all()
    # each thread owns 1 (or 4 for vec4) elements: no element has two owners by construction,
    # and no thread owns more than it computes
    _, counts = np.unique(own, return_counts=True)
    assert counts.max() == (4 if key == "vec4" else 1)


def test_coalescing_model_numbers():
    p = {"BLOCK_X": 32, "BLOCK_Y": 8}
    x = mapping.warp_loads("naive_xfirst", p, (4096, 4096, 4096))
    y = mapping.warp_loads("naive_yfirst", p, (4096, 4096, 4096))
    assert [l["sectors"] for l in x] == [32, 1]     # 32 rows of A, one broadcast B
    assert [l["sectors"] for l in y] == [1, 4]      # one broadcast A, 128 contiguous bytes of B
    v = mapping.warp_loads("vec4", p, (4096, 4096, 4096))
    assert [l["sectors"] for l in v] == [1, 16, 16, 16, 16]


# ---------------------------------------------------------------- results / recorded mode
def test_results_merge_and_lookup(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    run = {"chapter": 1, "kernel": "naive_yfirst", "params": {"BLOCK_X": 32, "BLOCK_Y": 8}, "dtype": "float32",
           "shape": [64, 64, 64], "metric": "TFLOP/s", "value": 1.0, "reference": "cuBLAS",
           "reference_value": 2.0, "ratio": 0.5, "rel_err": 1e-7, "source": "live"}
    results.merge([run], "x", ceilings={"copy_GBps": 1.0}, prov={"gpu": "G", "driver": "d", "cupy": "c", "date": "t"})
    results.merge([{**run, "value": 1.5, "ratio": 0.75}], "x")
    data = json.loads((tmp_path / "x.json").read_text())
    assert len(data["runs"]) == 1 and data["runs"][0]["value"] == 1.5 and "source" not in data["runs"][0]
    assert results.lookup("naive_yfirst", run["params"], "float32", [64, 64, 64], slug="x")["ratio"] == 0.75
    assert results.lookup("naive_yfirst", {"BLOCK_X": 16, "BLOCK_Y": 8}, "float32", [64, 64, 64], slug="x") is None


def test_committed_results_have_provenance_and_honest_ratios():
    data = results.load("h200")
    prov = data["provenance"]
    for k in ("gpu", "sm", "driver", "cuda_runtime", "cupy", "date", "commit"):
        assert prov.get(k), f"results/h200.json provenance lacks {k}"
    for r in data["runs"]:
        if r["value"] is None:
            continue
        assert r["ratio"] == pytest.approx(r["value"] / r["reference_value"], rel=5e-3), r
        if r["metric"] == "TFLOP/s":
            assert r["rel_err"] is not None and r["rel_err"] <= verify.TOLERANCE[r["dtype"]], r


def test_recorded_mode_reads_results(monkeypatch):
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    gpu.live.cache_clear()
    try:
        recs = bench.gemm(["naive_xfirst", "naive_yfirst"])
        assert all(r["source"] == "recorded" for r in recs)
        assert recs[0]["value"] is not None and "recorded on NVIDIA H200" in bench.where(recs)
    finally:
        gpu.live.cache_clear()


def test_slug():
    assert gpu.slug("NVIDIA H200") == "h200"
    assert gpu.slug("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb"
    assert gpu.slug("Tesla T4") == "t4"


def test_merge_stamps_each_record_with_the_run_that_measured_it(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "path", lambda slug=results.DEFAULT_SLUG: tmp_path / f"{slug}.json")
    old = {"gpu": "G", "date": "2026-01-01", "commit": "aaa"}
    results.save({"provenance": old, "ceilings": {}, "runs": [
        {"chapter": 1, "kernel": "k1", "params": {}, "dtype": "float32", "shape": [1, 1, 1], "value": 1.0}]}, "t")
    new = {"gpu": "G", "date": "2026-02-02", "commit": "bbb"}
    results.merge([{"chapter": 7, "kernel": "k7", "params": {}, "dtype": "float16", "shape": [1, 1, 1],
                    "value": 2.0, "source": "live"}], "t", prov=new)
    data = results.load("t")
    assert data["provenance"] == new
    stamps = {r["kernel"]: r["recorded"]["commit"] for r in data["runs"]}
    assert stamps == {"k1": "aaa", "k7": "bbb"}
    assert results.runs_by_commit(data) == {"aaa": [1], "bbb": [7]}
    assert "aaa: 1" in results.describe(new, data) and "bbb: 7" in results.describe(new, data)


def test_merge_replaces_whole_chapters_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "path", lambda slug=results.DEFAULT_SLUG: tmp_path / f"{slug}.json")
    rec = lambda ch, k, v: {"chapter": ch, "kernel": k, "params": {"X": v}, "dtype": "float32",  # noqa: E731
                            "shape": [1, 1, 1], "value": 1.0}
    results.save({"provenance": {"commit": "aaa"}, "ceilings": {}, "runs": [rec(5, "k5", 1), rec(7, "k7", 1),
                                                                             rec(7, "k7", 2)]}, "t")
    results.merge([rec(7, "k7", 3)], "t", prov={"commit": "bbb"})          # default: add, keep the rest
    assert len(results.load("t")["runs"]) == 4
    results.merge([rec(7, "k7", 4)], "t", prov={"commit": "ccc"}, replace_chapters=[7])
    kept = {(r["chapter"], r["params"]["X"]) for r in results.load("t")["runs"]}
    assert kept == {(5, 1), (7, 4)}      # chapter 7's stale X=1..3 are gone, chapter 5 untouched


def test_committed_kernel_listings_match_the_kernel_files():
    """A committed notebook's show.source output is the file as it is now: a
    kernel edited after the notebooks were executed shows up here."""
    import glob
    from pathlib import Path
    stale = []
    for f in sorted(glob.glob(str(Path(__file__).resolve().parent.parent / "book" / "*.ipynb"))):
        for c in json.load(open(f))["cells"]:
            m = show.LISTING_CELL.fullmatch("".join(c["source"]))
            if c["cell_type"] == "code" and m and c.get("outputs"):
                got = "".join(c["outputs"][0]["data"]["text/markdown"])
                if got != show.source_markdown(m.group(1), m.group(2), folded=bool(m.group(3))):
                    stale.append(f"{Path(f).name}: {m.group(0).strip()}")
    assert not stale, "re-execute (or re-render) these listings: " + "; ".join(stale)


def test_whole_file_listing_shows_its_headers_folded():
    """A chapter's page shows the headers its kernel includes (each once, in the order the
    compiler reads them), folded under the listing; an entry listing shows only the entry.
    A listing over show.OPEN_LINES lines is folded itself."""
    assert show.local_includes("07_mma_sync.cu") == ["fp16.cuh", "mma_sm80.cuh", "common.cuh", "instrument.cuh"]
    assert show.local_includes("10_hopper.cu") == ["fp16.cuh", "hopper_sm90.cuh", "instrument.cuh"]
    md = show.source_markdown("07_mma_sync.cu")
    for inc in show.local_includes("07_mma_sync.cu"):
        assert f"<summary><code>kernels/{inc}</code>" in md
    # the whole file is folded too (over show.OPEN_LINES lines), ahead of its headers
    assert md.count("<details") == md.count("</details>") == 5
    assert md.startswith('<details class="book-listing">') and "kernels/07_mma_sync.cu</code> (" in md
    assert "__device__ __forceinline__ void mma16816" in md          # the header's text is there
    assert "<details>" not in show.source_markdown("07_mma_sync.cu", "gemm_mma_sync")
    entry = show.source_markdown("01_naive.cu", "sgemm_naive_xfirst")
    lines = len(show.extract_entry(show.kernel_path("01_naive.cu").read_text(), "sgemm_naive_xfirst").splitlines())
    assert ("<details" in entry) == (lines > show.OPEN_LINES)
    pasted = kc.source("07_mma_sync.cu")                              # what the compilers get
    assert pasted.count("// ---- begin common.cuh ----") == 1 and '#include "' not in pasted
    probe = kc.source("experiments/07_mma_probe.cu")                  # an experiment includes its kernel
    assert probe.count("gemm_mma_sync(") == 1 and "gemm_mma_probe(" in probe and '#include "' not in probe


def test_a_live_caption_names_the_gpu_the_date_and_the_commit(monkeypatch):
    """A live figure's caption says which GPU, when and which code measured it; without git
    (a copy of the book) it leaves the commit out rather than printing 'unknown'."""
    import datetime
    monkeypatch.setattr(results.gpu, "device_info", lambda: {"name": "NVIDIA L4"})
    monkeypatch.setenv("GEMM_BOOK_COMMIT", "0123456789ab")
    today = datetime.date.today().isoformat()
    assert results.where(True) == f"measured live in this run on NVIDIA L4, {today}, commit 0123456789ab"
    # a full 40-digit sha is cut to git's 12 (a caption must fit a phone: no unbreakable 40 digits)
    monkeypatch.setenv("GEMM_BOOK_COMMIT", "0123456789ab" + "c" * 28)
    assert results.where(True).endswith(", commit 0123456789ab")
    monkeypatch.setenv("GEMM_BOOK_COMMIT", "")
    monkeypatch.setattr(results.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no git")))
    assert results.where(True) == f"measured live in this run on NVIDIA L4, {today}"


def test_table_markdown_prints_dunder_names_and_products_as_written():
    # Markdown reads __x__ as bold and a*b*c as italics; a table cell or caption must show the code.
    md = show.table_markdown([{"what": "pitfall: __launch_bounds__ caps registers", "rule": "M*N*K >= 5e8"}],
                             ["what", "rule"], "with __launch_bounds__(256, 2) and `__syncthreads()`")
    assert "\\_\\_launch_bounds\\_\\_(256, 2)" in md.splitlines()[0]
    assert "`__syncthreads()`" in md                      # code spans are left alone
    assert "| pitfall: \\_\\_launch_bounds\\_\\_ caps registers | M\\*N\\*K >= 5e8 |" in md
    assert "| x * y |" in show.table_markdown([{"a": "x * y"}], ["a"], "c")   # a spaced * is left alone


def test_recorded_mode_names_its_cause(monkeypatch):
    """gpu.recorded_reason says why a process runs recorded (the forced switch, CuPy missing,
    CuPy without a device), and gpu.cupy()'s error quotes it."""
    import sys
    import types
    from helpers.runtime import gpu
    monkeypatch.setenv("GEMM_BOOK_FORCE_RECORDED", "1")
    assert gpu.recorded_reason() == "GEMM_BOOK_FORCE_RECORDED=1 is set"
    monkeypatch.delenv("GEMM_BOOK_FORCE_RECORDED")
    monkeypatch.setitem(sys.modules, "cupy", None)               # import cupy -> ImportError
    assert gpu.recorded_reason().startswith("CuPy is not installed; on a GPU machine, python -m helpers.colab --cupy")
    with pytest.raises(RuntimeError, match="recorded mode: CuPy is not installed"):
        gpu.cupy()
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert gpu.recorded_reason() == "CuPy sees no CUDA device"
    fake.cuda.is_available = lambda: True
    assert gpu.recorded_reason() is None
