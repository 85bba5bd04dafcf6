"""helpers.runtime.bench.measure without a GPU: the one measurement loop driven with NumPy
inputs (:class:`helpers.runtime.bench.Inputs`) and a fake timer in place of CUDA events.

What is checked: the output is poisoned before the checked run, a wrong or partly unwritten
output stops the measurement (WrongResult), the reference and the kernel alternate, and
the record carries the same-run ratio, the work rate and the labels, rounded as the
results file keeps them; bad arguments are refused before anything runs."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.runtime import bench, results, verify

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


def test_a_correct_kernel_gives_a_record_with_the_same_run_ratio():
    data = gemm_inputs()
    seen = []

    def run(A, B, C):
        seen.append(bool(np.isnan(C).all()))        # the checked run sees a poisoned output
        matmul(A, B, C)
    timer = FakeTimer(data, ms=2.0, ref_ms=1.5)
    r = bench.measure(run, SHAPE, "float32", data=data, timer=timer, rounds=3, chapter=5, kernel="k",
                      title="a kernel", params={"BM": 64})
    assert isinstance(r, results.Record) and seen[0] is True
    assert timer.calls == ["ref", "kernel"] * 3                 # alternating rounds, reference first
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
