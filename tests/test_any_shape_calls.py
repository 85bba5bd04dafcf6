"""The dispatcher's call path without a GPU: a stand-in for CuPy records every launch, so
the plan cache, the replayed arguments and the checks of ``helpers.gemm`` are tested on CPU."""
from __future__ import annotations

import ctypes
import types

import numpy as np
import pytest

from helpers.runtime import anyshape as rt, gpu, packed


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
        self.kernel = types.SimpleNamespace(ptr=id(self))       # the CUfunction a packed launch uses

    def __call__(self, grid, block, args, shared_mem=0):
        self.log.append((self.name, grid, tuple(args)))


@pytest.fixture
def fake(monkeypatch):
    log = []
    cp = types.SimpleNamespace(ndarray=FakeArray, empty=lambda s, d: FakeArray(s, d),
                               zeros=lambda s, d: FakeArray(s, d),
                               cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                                          get_current_stream=lambda: types.SimpleNamespace(ptr=0)))
    monkeypatch.setattr(gpu, "cupy", lambda: cp)
    monkeypatch.setattr(gpu, "live", lambda: True)
    monkeypatch.setattr(gpu, "capability", lambda: (8, 0))      # no Hopper path: sm_80
    monkeypatch.setattr(rt, "sm_count", lambda: 132)
    monkeypatch.setattr(rt, "_kernels", lambda dtype, aligned, tile="wide": {e: FakeKernel(e, log) for e in rt.ENTRIES})
    monkeypatch.setattr(rt, "_SCRATCH", {})
    monkeypatch.setitem(packed._STATE, "cu", None)               # CuPy's launch path (no driver here)
    monkeypatch.setitem(packed._STATE, "tried", True)
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


class FakeDriver:
    """Enough of ``cuda.bindings.driver`` for :class:`helpers.runtime.packed.Packed`: each
    cuLaunchKernel reads the argument bytes back through the kernelParams pointers, sized by
    the arguments CuPy's path passed for the same launch (``sizes``)."""

    def __init__(self, kernels, sizes):
        self.kernels, self.sizes, self.log = kernels, sizes, []
        self.CUfunction = self.CUstream = lambda ptr: ptr

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        name = self.kernels[f]
        ptrs = (ctypes.c_void_p * len(self.sizes[name])).from_address(params)
        self.log.append((name, (gx, gy, gz), tuple(ctypes.string_at(ptrs[i], n)
                                                   for i, n in enumerate(self.sizes[name]))))
        return (0,)


def _as_bytes(a) -> bytes:
    """What CuPy passes for a runner argument: an array's pointer, None as 0, a scalar's bytes."""
    if a is None:
        return bytes(8)
    if isinstance(a, FakeArray):
        return np.uint64(a.data.ptr).tobytes()
    return np.asarray(a).tobytes()


def _named_kernels(monkeypatch) -> dict:
    """The fake kernels' driver handles -> names, filled as the runner builds its kernels."""
    kernels = {}
    orig = rt._kernels

    def kern(dtype, aligned, tile="wide"):
        fns = orig(dtype, aligned, tile)
        kernels.update({f.kernel.ptr: f.name for f in fns.values()})
        return fns
    monkeypatch.setattr(rt, "_kernels", kern)
    return kernels


@pytest.mark.parametrize("shape,strategy", [((1000, 1001, 1002), "auto"), ((4096, 4096, 4096), "auto"),
                                            ((512, 512, 32768), "splitk"), ((300, 200, 1000), "streamk_sk"),
                                            ((77, 99, 1000), "padding")])
def test_packed_launches_pass_the_bytes_cupys_launch_passes(fake, monkeypatch, shape, strategy):
    """The same calls through CuPy's launch and through packed launches: the same kernels, grids
    and argument bytes, the call's own arrays in their slots, a fresh stream-K epoch each launch."""
    kernels = _named_kernels(monkeypatch)
    calls = [_abc(*shape) for _ in range(2)]
    want = []
    for A, B, C in calls:
        rt.gemm(A, B, out=C, strategy=strategy)
    want = [(n, tuple(g) + (1,) * (3 - len(g)), tuple(_as_bytes(x) for x in a)) for n, g, a in fake]
    sizes = {n: [len(b) for b in a] for n, _, a in want}
    drv = FakeDriver(kernels, sizes)
    monkeypatch.setitem(packed._STATE, "cu", drv)
    rt._EPOCH[0] = 0
    for A, B, C in calls:
        rt.gemm(A, B, out=C, strategy=strategy)
    assert packed.PATH["launch"] == "packed"
    got = drv.log
    if strategy == "streamk_sk":                              # the epoch differs per launch on both paths
        assert [int(np.frombuffer(a[12], np.int32)[0]) for n, _, a in got if n == "gemm_streamk"] == [1, 2]
        got = [(n, g, a[:12] + a[13:]) if n == "gemm_streamk" else (n, g, a) for n, g, a in got]
        want = [(n, g, a[:12] + a[13:]) if n == "gemm_streamk" else (n, g, a) for n, g, a in want]
    assert got == want
    with packed.disabled():
        assert not packed.enabled()
    assert packed.enabled()


def test_packed_refuses_an_argument_it_cannot_size():
    with pytest.raises(TypeError, match="kernel argument of type int"):
        packed._cell(7)


def test_a_kernel_the_packing_cannot_take_falls_back_to_cupys_launch(fake, monkeypatch):
    """A kernel without a driver handle (here: no ``.kernel``): the call still runs, through
    CuPy's launch, and packed launches stay off with the reason recorded."""
    monkeypatch.setitem(packed._STATE, "cu", FakeDriver({}, {}))
    monkeypatch.setitem(packed._STATE, "on", True)
    orig = rt._kernels

    def handleless(dtype, aligned, tile="wide"):
        fns = orig(dtype, aligned, tile)
        for f in fns.values():
            del f.kernel
        return fns
    monkeypatch.setattr(rt, "_kernels", handleless)
    A, B, C = _abc(64, 64, 64)
    rt.gemm(A, B, out=C)
    assert [n for n, _, _ in fake] == ["gemm_any"] and packed.PATH["launch"] == "cupy"
    assert not packed.enabled() and "AttributeError" in packed.PATH["why"]


class FakeGraphDriver(FakeDriver):
    """FakeDriver plus the graph calls: a kernel node copies its argument bytes when it is added
    (as the driver does); a graph launch logs its nodes' launches in order."""

    def __init__(self, kernels, sizes):
        super().__init__(kernels, sizes)
        self.built = 0
        self.CUDA_KERNEL_NODE_PARAMS = types.SimpleNamespace

    def cuGraphCreate(self, flags):
        return (0, [])

    def cuGraphAddKernelNode(self, graph, deps, n, p):
        assert n == len(deps) == (1 if graph else 0) and (not graph or deps[0] is graph[-1])   # a chain
        name = self.kernels[p.func]
        ptrs = (ctypes.c_void_p * len(self.sizes[name])).from_address(p.kernelParams)
        graph.append((name, (p.gridDimX, p.gridDimY, p.gridDimZ),
                      tuple(ctypes.string_at(ptrs[i], k) for i, k in enumerate(self.sizes[name]))))
        return (0, graph[-1])

    def cuGraphInstantiate(self, graph, flags):
        self.built += 1
        return (0, list(graph))

    def cuGraphLaunch(self, exe, stream):
        self.log.extend(exe)
        return (0,)

    def cuGraphExecDestroy(self, exe):
        return (0,)

    cuGraphDestroy = cuGraphExecDestroy


@pytest.mark.parametrize("shape,strategy,graphs", [((1000, 1001, 1002), "auto", True),
                                                   ((512, 512, 32768), "splitk", True),
                                                   ((4096, 4096, 4096), "auto", True),       # one launch
                                                   ((300, 200, 1000), "streamk_sk", False)])  # an epoch per launch
def test_a_call_repeated_with_the_same_arrays_replays_one_graph_of_the_same_launches(fake, monkeypatch, shape,
                                                                                      strategy, graphs):
    """Calls 1-2 launch step by step, call 2 keeps a graph and calls 3-4 replay it; every call
    passes the same kernels, grids and argument bytes as CuPy's launch. New arrays launch step
    by step again (with their own pointers); a plan with an epoch never graphs."""
    kernels = _named_kernels(monkeypatch)
    A, B, C = _abc(*shape)
    rt.gemm(A, B, out=C, strategy=strategy)
    one = [(n, tuple(g) + (1,) * (3 - len(g)), tuple(_as_bytes(x) for x in a)) for n, g, a in fake]
    sizes = {n: [len(b) for b in a] for n, _, a in one}
    drv = FakeGraphDriver(kernels, sizes)
    monkeypatch.setitem(packed._STATE, "cu", drv)
    monkeypatch.setitem(packed._STATE, "on", True)
    paths = []
    for _ in range(4):
        rt.gemm(A, B, out=C, strategy=strategy)
        paths.append(packed.PATH["launch"])
    assert paths == (["packed", "graph", "graph", "graph"] if graphs else ["packed"] * 4)
    assert drv.built == (1 if graphs else 0)
    if strategy != "streamk_sk":
        assert drv.log == one * 4
    drv.log.clear()
    A2, B2, C2 = _abc(*shape)
    rt.gemm(A2, B2, out=C2, strategy=strategy)
    assert packed.PATH["launch"] == "packed"
    assert any(np.uint64(A2.data.ptr).tobytes() in a for _, _, a in drv.log)
    rt.gemm(A, B, out=C, strategy=strategy)                    # the first arrays' graph is still kept
    assert packed.PATH["launch"] == ("graph" if graphs else "packed") and drv.built == (1 if graphs else 0)
    with packed.no_graphs():
        rt.gemm(A, B, out=C, strategy=strategy)
        assert packed.PATH["launch"] == "packed"


def test_a_graph_the_driver_refuses_turns_graphs_off_and_the_call_still_runs(fake, monkeypatch):
    kernels = _named_kernels(monkeypatch)
    A, B, C = _abc(1000, 1001, 1002)
    rt.gemm(A, B, out=C)
    one = [(n, tuple(g) + (1,) * (3 - len(g)), tuple(_as_bytes(x) for x in a)) for n, g, a in fake]
    drv = FakeGraphDriver(kernels, {n: [len(b) for b in a] for n, _, a in one})
    drv.cuGraphInstantiate = lambda graph, flags: (999, None)
    monkeypatch.setitem(packed._STATE, "cu", drv)
    monkeypatch.setitem(packed._STATE, "on", True)
    monkeypatch.setitem(packed._STATE, "graphs", True)
    for _ in range(3):
        rt.gemm(A, B, out=C)
    assert packed.PATH["launch"] == "packed" and "graphs off" in packed.PATH["why"]
    assert drv.log == one * 3
