"""The dispatcher's call path without a GPU: a stand-in for CuPy records every launch, so
the plan cache, the replayed arguments and the checks of ``helpers.gemm`` are tested on CPU."""
from __future__ import annotations

import types

import numpy as np
import pytest

from helpers.runtime import anyshape as rt, gpu


class _Ptr:
    def __init__(self, ptr):
        self.ptr = ptr


class FakeArray:
    """Enough of cupy.ndarray for the runner: shape, ndim, dtype, flags, data.ptr."""
    _next = [1 << 20]

    def __init__(self, shape, dtype, offset=0, c_contiguous=True):
        self.shape, self.ndim, self.dtype = tuple(shape), len(shape), np.dtype(dtype)
        self.flags = types.SimpleNamespace(c_contiguous=c_contiguous)
        FakeArray._next[0] += 1 << 24
        self.data = _Ptr(FakeArray._next[0] + offset * self.dtype.itemsize)


class FakeKernel:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def __call__(self, grid, block, args, shared_mem=0):
        self.log.append((self.name, grid, tuple(args)))


@pytest.fixture
def fake(monkeypatch):
    log = []
    cp = types.SimpleNamespace(ndarray=FakeArray, empty=lambda s, d: FakeArray(s, d),
                               zeros=lambda s, d: FakeArray(s, d),
                               cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0)))
    monkeypatch.setattr(gpu, "cupy", lambda: cp)
    monkeypatch.setattr(gpu, "live", lambda: True)
    monkeypatch.setattr(gpu, "capability", lambda: (8, 0))      # no Hopper path: sm_80
    monkeypatch.setattr(rt, "sm_count", lambda: 132)
    monkeypatch.setattr(rt, "_kernels", lambda dtype, aligned: {e: FakeKernel(e, log) for e in rt.ENTRIES})
    monkeypatch.setattr(rt, "_SCRATCH", {})
    rt.clear_prepared()
    yield log
    rt.clear_prepared()


def _abc(M, N, K, dtype="float16", offsets=(0, 0, 0)):
    return (FakeArray((M, K), dtype, offsets[0]), FakeArray((K, N), dtype, offsets[1]),
            FakeArray((M, N), dtype, offsets[2]))


def test_a_repeated_shape_is_planned_once_and_replayed_with_the_callers_arrays(fake):
    A, B, C = _abc(1000, 1001, 1002)
    rt.gemm(A, B, out=C)
    first = list(fake)
    assert rt.CACHE_STATS == {"hits": 0, "misses": 1}
    A2, B2, C2 = _abc(1000, 1001, 1002)
    fake.clear()
    rt.gemm(A2, B2, out=C2)
    assert rt.CACHE_STATS == {"hits": 1, "misses": 1}
    assert [(n, g) for n, g, _ in fake] == [(n, g) for n, g, _ in first]
    (pads,) = [a for n, _, a in fake if n == "pad_copy2"]    # unaligned K and N: both operands, one launch
    assert pads[0] is A2 and pads[7] is B2
    assert not any(n == "pad_copy" for n, _, _ in fake)
    assert any(n == "gemm_any" for n, _, _ in fake)
    assert not any(any(x is A or x is B or x is C for x in a) for _, _, a in fake)   # nothing of the first call


def test_alignment_and_strategy_are_part_of_the_key(fake):
    rt.gemm(*_abc(256, 256, 4096)[:2], out=_abc(256, 256, 4096)[2])
    rt.gemm(*_abc(256, 256, 4096, offsets=(1, 0, 0))[:2], out=_abc(256, 256, 4096)[2])   # A only 2-byte aligned
    rt.gemm(*_abc(256, 256, 4096)[:2], out=_abc(256, 256, 4096)[2], strategy="streamk")
    assert rt.CACHE_STATS == {"hits": 0, "misses": 3}


def test_direct_plan_puts_a_b_c_in_place_and_streamk_gets_a_fresh_epoch(fake):
    A, B, C = _abc(4096, 4096, 4096)
    rt.gemm(A, B, out=C)
    (name, _, args), = fake
    assert name == "gemm_any" and args[0] is A and args[1] is B and args[2] is C
    fake.clear()
    for _ in range(2):
        rt.gemm(A, B, out=C, strategy="streamk_sk")
    epochs = [int(a[12]) for n, _, a in fake if n == "gemm_streamk"]
    assert len(epochs) == 2 and epochs[0] != epochs[1]


@pytest.mark.parametrize("make,match", [
    (lambda: (FakeArray((8, 8), "float32"), FakeArray((8, 8), "float32"), None), "A.dtype='float32': must be one of"),
    (lambda: (FakeArray((8, 8), "float16"), FakeArray((9, 8), "float16"), None), r"B.shape=\(9, 8\): must be \(K, N\)"),
    (lambda: (FakeArray((8, 8), "float16"), FakeArray((8, 8), "float16", c_contiguous=False), None),
     "B.flags.c_contiguous=False: must be C-contiguous"),
    (lambda: (FakeArray((8, 8), "float16"), FakeArray((8, 8), "float16"), FakeArray((8, 9), "float16")),
     r"C.shape=\(8, 9\): must be \(M, N\)"),
    (lambda: (np.zeros((8, 8), np.float16), FakeArray((8, 8), "float16"), None), "A='ndarray': must be a cupy.ndarray"),
])
def test_checks_still_raise_on_a_warm_cache(fake, make, match):
    A, B, C = _abc(8, 8, 8)
    rt.gemm(A, B, out=C)
    rt.gemm(A, B, out=C)                                      # warm: the next calls would hit
    fake.clear()
    with pytest.raises(ValueError, match=match):
        rt.gemm(*make()[:2], out=make()[2])
    assert fake == []                                         # refused before any launch


def test_a_bad_strategy_is_refused_before_any_launch(fake):
    with pytest.raises(ValueError, match="strategy='fastest': must be one of"):
        rt.gemm(*_abc(8, 8, 8)[:2], strategy="fastest")
    assert fake == []


def test_one_operand_to_repack_takes_pad_copy_alone(fake):
    """K % 8 == 0 but N odd: only B is repacked, by pad_copy; A is read in place."""
    A, B, C = _abc(1000, 1001, 1024)
    rt.gemm(A, B, out=C, strategy="repack")
    names = [n for n, _, _ in fake]
    assert names.count("pad_copy") == 1 and "pad_copy2" not in names
    (pad,) = [a for n, _, a in fake if n == "pad_copy"]
    assert pad[0] is B
    (g,) = [a for n, _, a in fake if n == "gemm_any"]
    assert g[0] is A
