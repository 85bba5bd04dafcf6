"""helpers.runtime.bench.measure without a GPU: the one measurement loop driven with NumPy
inputs (:class:`helpers.runtime.bench.Inputs`) and a fake timer in place of CUDA events.

What is checked: the output is poisoned before the checked run, a wrong or partly unwritten
output stops the measurement (WrongResult), the reference and the kernel alternate, and
the record carries the same-run ratio, the work rate and the labels, rounded as the
results file keeps them; bad arguments are refused before anything runs."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.runtime import bench, catalog, gpu, launch, results, timing, verify

SHAPE = (24, 40, 16)


def gemm_inputs(dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    M, N, K = SHAPE
    A = rng.standard_normal((M, K)).astype(verify.np_dtype(dtype))
    B = rng.standard_normal((K, N)).astype(verify.np_dtype(dtype))
    C = np.empty((M, N), verify.np_dtype(dtype))
    return bench.Inputs("gemm", SHAPE, dtype, {"A": A, "B": B, "C": C}, verify.reference_gemm(A, B),
                        reference=lambda: None)


class FakeTimer:
    """Stands for timing.time_ms: runs ``fn`` once, says it took ``ms`` (reference: ``ref_ms``)."""
    def __init__(self, data, ms=2.0, ref_ms=1.0):
        self.data, self.ms, self.ref_ms, self.calls = data, ms, ref_ms, []

    def __call__(self, fn, warmup, budget_ms, min_repeat, max_repeat):
        ref = fn is self.data.reference
        self.calls.append("ref" if ref else "kernel")
        fn()
        t = self.ref_ms if ref else self.ms
        return {"ms": t, "all": [t] * 4}


def matmul(A, B, C):
    np.matmul(A, B, out=C)


def test_a_correct_kernel_gives_a_record_with_the_same_run_ratio(monkeypatch):
    monkeypatch.setitem(timing._LAST, "end", None)              # as after an idle gap
    data = gemm_inputs()
    seen = []

    def run(A, B, C):
        seen.append(bool(np.isnan(C).all()))        # the checked run sees a poisoned output
        matmul(A, B, C)
    timer = FakeTimer(data, ms=2.0, ref_ms=1.5)
    r = bench.measure(run, SHAPE, "float32", data=data, timer=timer, rounds=3, chapter=5, kernel="k",
                      title="a kernel", params={"BM": 64})
    assert isinstance(r, results.Record) and seen[0] is True
    # the untimed pre-heat of the reference (idle gap), then alternating rounds, reference first
    assert timer.calls == ["ref"] + ["ref", "kernel"] * 3
    flops = 2 * 24 * 40 * 16
    assert r.value == bench.sig(flops / 2e-3 / 1e12) and r.reference_value == bench.sig(flops / 1.5e-3 / 1e12)
    assert r.ratio == 0.75 and r.ms == 2.0 and r.repeats == 12 and r.rounds == 3
    assert r.rel_err < verify.TOLERANCE["float32"] and r.source == "live"
    assert (r.metric, r.reference, r.shape, r.dtype) == ("TFLOP/s", "cuBLAS", list(SHAPE), "float32")
    assert (r.chapter, r.kernel, r.title, r.params) == (5, "k", "a kernel", {"BM": 64})
    d = r.as_dict()
    assert "note" not in d and "wrong" not in d and d["ratio"] == pytest.approx(d["value"] / d["reference_value"],
                                                                                rel=1e-3)


def test_an_unwritten_element_or_a_wrong_result_stops_the_measurement():
    data = gemm_inputs()
    timer = FakeTimer(data)

    def skips_one(A, B, C):
        keep = C[3, 5]
        matmul(A, B, C)
        C[3, 5] = keep                                 # never written: still NaN from the poison
    with pytest.raises(verify.WrongResult, match="1 of 960 outputs are NaN"):
        bench.measure(skips_one, SHAPE, data=data, timer=timer, kernel="skips")
    with pytest.raises(verify.WrongResult, match=r"k3 \{'BM': 64\}: relative error .* > tolerance"):
        bench.measure(lambda A, B, C: matmul(A, B[::-1], C), SHAPE, data=data, timer=timer, kernel="k3",
                      params={"BM": 64})
    assert timer.calls == []                           # nothing was timed


def test_check_and_timing_can_each_be_left_out():
    data = gemm_inputs("float16")
    timer = FakeTimer(data)
    r = bench.measure(matmul, SHAPE, "float16", data=data, timer=timer, timed=False, note="checked only")
    assert r.value is None and r.ratio is None and r.rel_err < verify.TOLERANCE["float16"] and timer.calls == []
    assert r.note == "checked only"
    wrong = bench.measure(lambda A, B, C: C.fill(0), SHAPE, "float16", data=data, timer=timer, check=False)
    assert wrong.rel_err is None and wrong.ratio == 0.5         # a probe build: timed, never checked


def test_a_transpose_is_checked_exactly_and_measured_in_bytes():
    X = np.random.default_rng(1).standard_normal((8, 12)).astype(np.float32)
    data = bench.Inputs("transpose", (8, 12), "float32", {"X": X, "out": np.empty((12, 8), np.float32)}, X.T,
                        reference=lambda: None)
    r = bench.measure(lambda out, X: np.copyto(out, X.T), (8, 12), op="transpose", data=data,
                      timer=FakeTimer(data, ms=0.5, ref_ms=0.25))
    assert r.rel_err == 0.0 and r.metric == "GB/s" and r.reference == "cudaMemcpy D2D"
    assert r.value == bench.sig(2 * X.nbytes / 0.5e-3 / 1e9) and r.ratio == 0.5
    with pytest.raises(verify.WrongResult, match="8 of 96 elements wrong or never written"):
        bench.measure(lambda out, X: np.copyto(out[:1], X.T[:1]), (8, 12), op="transpose", data=data,
                      timer=FakeTimer(data))


def test_nt_kernels_get_bt_made_once():
    data = gemm_inputs()
    got = []
    bench.measure(lambda A, Bt, C: (got.append(Bt), matmul(A, Bt.T, C)), SHAPE, data=data, layout="NT",
                  timer=FakeTimer(data), rounds=1)
    assert got[0].shape == (40, 16) and got[0].flags.c_contiguous and data.args("NT")[1] is got[0]


@pytest.mark.parametrize("kw,name", [({"rounds": 0}, "rounds"), ({"op": "fma"}, "op"), ({"layout": "TN"}, "layout"),
                                     ({"dtype": "float16"}, "data")])
def test_bad_arguments_are_refused_before_anything_runs(kw, name):
    data = gemm_inputs()

    def never(*a):
        raise AssertionError("ran before the arguments were checked")
    with pytest.raises(ValueError, match=f"^{name}="):
        bench.measure(never, SHAPE, **{"data": data, **kw})


@pytest.mark.parametrize("args,kw,name", [((SHAPE[:2],), {}, "shape"), (((0, 4, 4),), {}, "M"),
                                          ((SHAPE, "tf32"), {}, "dtype"), ((SHAPE, "float32", "gemv"), {}, "op"),
                                          (((64, 64), "float16", "copy"), {}, "dtype"),
                                          ((SHAPE,), {"offsets": (0, -1, 0)}, "offsets")])
def test_inputs_refuse_bad_arguments_before_the_gpu(args, kw, name):
    with pytest.raises(ValueError, match=f"^{name}="):
        bench.inputs(*args, **kw)


# ------------------------------------------------------------------ bench.gemm / transpose / prepared, wired end to end
class NumpyLaunch:
    """A prepared catalog launch computed by NumPy: what launch.prepare returns, minus the GPU."""
    def __init__(self, key, shape, **params):
        self.spec = catalog.get(key)
        self.params, self.shape = self.spec.params(**params), tuple(shape)

    def __call__(self, *args):
        if self.spec.op == "gemm":
            A, B, C = args[:3]
            np.matmul(A, B.T if self.spec.layout == "NT" else B, out=C)
        else:
            out, X = args[:2]
            np.copyto(out, X if self.spec.op == "copy" else X.T)


@pytest.fixture
def numpy_gpu(monkeypatch):
    """A "GPU" whose arrays are NumPy's: CuPy calls of the runtime land in NumPy, kernels are
    NumpyLaunch, the CUDA-event timer says 1 ms for the kernel and 0.5 ms for the reference."""
    monkeypatch.setattr(gpu, "live", lambda: True)
    monkeypatch.setattr(gpu, "cupy", lambda: np)
    monkeypatch.setattr(gpu, "target", lambda: None)           # shipped defaults, no device limits
    monkeypatch.setattr(launch, "unable", lambda spec, p=None: None)
    monkeypatch.setattr(launch, "prepare", NumpyLaunch)
    refs = set()
    real = timing.cublas_gemm, timing.memcpy_d2d

    def tag(make):
        def made(*a):
            fn = make(*a)
            refs.add(fn)
            return fn
        return made
    monkeypatch.setattr(timing, "cublas_gemm", tag(real[0]))
    monkeypatch.setattr(timing, "memcpy_d2d", tag(lambda dst, src: (lambda: np.copyto(dst, src))))

    def time_ms(fn, warmup=3, budget_ms=400.0, min_repeat=5, max_repeat=100, repeat=None):
        fn()
        t = 0.5 if fn in refs else 1.0
        return {"ms": t, "min": t, "max": t, "n": 2, "all": [t, t]}
    monkeypatch.setattr(timing, "time_ms", time_ms)


RECORD_KEYS = {"chapter", "kernel", "title", "params", "dtype", "shape", "metric", "value", "reference",
               "reference_value", "ratio", "rel_err", "ms", "repeats", "rounds", "source"}


def test_bench_gemm_measures_each_kernel_through_measure(numpy_gpu):
    recs = bench.gemm(["naive_yfirst", ("kmajor", {"BLOCK_X": 16})], (64, 48, 32), rounds=2)
    assert [set(r) for r in recs] == [RECORD_KEYS] * 2
    assert [r["kernel"] for r in recs] == ["naive_yfirst", "kmajor"] and recs[1]["params"]["BLOCK_X"] == 16
    for r in recs:
        assert r["ratio"] == 0.5 and r["ms"] == 1.0 and r["repeats"] == 4 and r["rounds"] == 2
        assert r["rel_err"] < verify.TOLERANCE["float32"] and r["source"] == "live" and r["shape"] == [64, 48, 32]


def test_bench_transpose_and_prepared(numpy_gpu):
    recs = bench.transpose(["transpose_naive", "copy_tiled"], (32, 48))
    assert [(r["metric"], r["reference"], r["rel_err"], r["ratio"]) for r in recs] == \
        [("GB/s", "cudaMemcpy D2D", 0.0, 0.5)] * 2
    r = bench.prepared(launch.prepare("vec4", (16, 64, 32)))
    assert set(r) == RECORD_KEYS and r["kernel"] == "vec4" and r["value"] == bench.sig(2 * 16 * 64 * 32 / 1e-3 / 1e12)


def test_speedup_is_the_quotient_of_the_ratios_not_of_the_tflops():
    """Two kernels timed in one run, each beside its own cuBLAS timing: a clock that moved
    between them shows in their TFLOP/s (and the references' TFLOP/s), not in their ratios."""
    a = {"value": 60.0, "ratio": 0.50, "reference_value": 120.0}
    b = {"value": 40.0, "ratio": 0.40, "reference_value": 100.0}
    assert bench.speedup(a, b) == pytest.approx(1.25)          # not 60 / 40 = 1.5
    assert bench.speedup(a, {"value": None, "ratio": None}) is None and bench.speedup(None, b) is None


def test_against_copy_refuses_a_byte_count_before_timing():
    from helpers.runtime import bench
    with pytest.raises(ValueError, match="nbytes=1: must be an integer >= 2"):
        bench.against_copy(lambda: None, 1)
