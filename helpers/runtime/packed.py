"""Kernel launches whose arguments are packed once: what a repeated :func:`helpers.gemm` call
costs on the host.

A ``cupy.RawKernel`` call converts every argument on every launch: each NumPy scalar is copied
into a fresh holder and each array asked for its pointer, about 0.5-1 us per argument, so a
launch of 14 arguments (``pad_copy2``) costs more CPU time than a whole ``cupy.matmul`` call's
cuBLAS dispatch. The driver itself needs only an array of N pointers, each to the bytes of one
argument (``cuLaunchKernel``'s ``kernelParams``). :class:`Packed` builds that array once per
prepared launch, from the same arguments CuPy would pass; a call then writes the caller's
pointers (A, B, C) into their cells and launches through NVIDIA's ``cuda-bindings``
(``cuda.bindings.driver.cuLaunchKernel``). In plain C the loop it replaces is::

    void* params[N] = {&A, &B, &C, &M, &N, &K, ...};   // built once
    params_A = caller_A; ...                            // per call: the pointers only
    cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, NULL);

A packed launch keeps its argument cells between calls, so two threads must not call the same
prepared plan at once (a notebook's one thread never does; CuPy's own launch has no such state).
Without ``cuda-bindings`` (or with one that does not load against this driver) every launch
goes through CuPy, as before; :data:`PATH` says which path the last launch took, and
:func:`disabled` forces CuPy's, the control of the host-time measurement
(``helpers.chapters.end_to_end.host_rows``).
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from . import gpu

PATH = {"launch": None, "why": None}     # "graph", "packed" or "cupy", and why not packed (or no graphs)
_STATE = {"on": True, "cu": None, "tried": False, "graphs": True}
GRAPH_MIN_STEPS = 1                      # even one launch replays faster as a graph (no pointers to write)
GRAPHS_KEPT = 2                          # graphs kept per prepared plan (sets of the caller's pointers)
_STREAMS: dict = {}                      # stream pointer -> cu.CUstream


def _driver():
    """``cuda.bindings.driver``, or None when it does not import or cannot reach the driver."""
    if not _STATE["tried"]:
        _STATE["tried"] = True
        try:
            from cuda.bindings import driver as cu
            err, _ = cu.cuDriverGetVersion()
            if int(err) != 0:
                raise RuntimeError(f"cuDriverGetVersion: {err}")
            _STATE["cu"] = cu
        except Exception as e:           # no package, or one that does not match this driver
            PATH["why"] = f"cuda-bindings unavailable ({type(e).__name__})"
    return _STATE["cu"]


def enabled() -> bool:
    """True when launches go through :class:`Packed` (cuda-bindings loaded, not :func:`disabled`)."""
    return _STATE["on"] and _driver() is not None


def give_up(err: Exception) -> None:
    """Turn packed launches off for this process (CuPy's launch from now on), recording why."""
    _STATE["on"] = False
    PATH["why"] = f"packing failed ({type(err).__name__}: {err})"


@contextlib.contextmanager
def _off(switch: str):
    """Inside this block ``_STATE[switch]`` is False; restored after, whatever happens."""
    was = _STATE[switch]
    _STATE[switch] = False
    try:
        yield
    finally:
        _STATE[switch] = was


def disabled():
    """Inside this block every launch goes through CuPy's ``RawKernel`` call (the control)."""
    return _off("on")


def no_graphs():
    """Inside this block a repeated call launches its steps one by one (the graphs' control)."""
    return _off("graphs")


def stream_handle():
    """The current CuPy stream as a driver handle (cached per stream pointer)."""
    ptr = gpu.cupy().cuda.get_current_stream().ptr
    h = _STREAMS.get(ptr)
    if h is None:
        h = _STREAMS[ptr] = _STATE["cu"].CUstream(ptr)
    return h


def _cell(arg):
    """A ctypes object holding the bytes the kernel receives for ``arg``: a pointer for a
    CuPy array or None, the value's own bytes for a NumPy scalar (int32, int64, float32, or a
    structured scalar such as a 128-byte TMA descriptor). Raises TypeError for anything else
    (a Python int has no fixed width: the runner passes NumPy scalars)."""
    if arg is None:
        return ctypes.c_uint64(0)
    ptr = getattr(getattr(arg, "data", None), "ptr", None)
    if isinstance(ptr, int):                                  # a CuPy array: its device pointer
        return ctypes.c_uint64(ptr)
    if isinstance(arg, (np.generic, np.ndarray)) and np.ndim(arg) == 0:
        raw = np.asarray(arg).tobytes()
        return ctypes.create_string_buffer(raw, len(raw))
    raise TypeError(f"kernel argument of type {type(arg).__name__}: pass a CuPy array, None or a NumPy scalar")


class Packed:
    """One launch of ``fn`` (a ``cupy.RawKernel``) on ``grid`` x ``block`` with ``smem`` bytes of
    dynamic shared memory and the arguments ``args``, packed once. ``slots``: (index, what)
    pairs, ``what`` one of "A", "B", "C" (the call's arrays, written per call) or "epoch" (an
    int32 written per call). Raises TypeError for an argument :func:`_cell` cannot hold."""

    __slots__ = ("fn", "f", "grid", "block", "smem", "cells", "params", "addr", "slots", "keep")

    def __init__(self, fn, grid, block, args, smem: int = 0, slots=()):
        cu = _STATE["cu"]
        self.fn = fn
        self.f = cu.CUfunction(fn.kernel.ptr)                 # compiled for the current device
        self.grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        self.block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        self.smem = int(smem)
        self.cells = [_cell(a) for a in args]
        for i, what in slots:
            if what == "epoch":
                self.cells[i] = ctypes.c_int32(0)
        self.params = (ctypes.c_void_p * max(1, len(self.cells)))(*[ctypes.addressof(c) for c in self.cells])
        self.addr = ctypes.addressof(self.params)
        self.slots = tuple((self.cells[i], what) for i, what in slots)
        self.keep = tuple(args)                               # the scratch arrays stay alive with it

    def fill(self, A, B, C, epoch: int = 0) -> None:
        """Write the call's pointers (and the epoch) into their cells."""
        for cell, what in self.slots:
            if what == "epoch":
                cell.value = epoch
            else:
                cell.value = (A if what == "A" else B if what == "B" else C).data.ptr

    def launch(self, A, B, C, stream, epoch: int = 0) -> None:
        """Write the call's pointers into their cells and launch on ``stream`` (a driver handle).
        Raises RuntimeError when the driver refuses the launch."""
        self.fill(A, B, C, epoch)
        g, b = self.grid, self.block
        err, = _STATE["cu"].cuLaunchKernel(self.f, g[0], g[1], g[2], b[0], b[1], b[2], self.smem, stream,
                                           self.addr, 0)
        if int(err) != 0:
            raise RuntimeError(f"cuLaunchKernel of {getattr(self.fn, 'name', self.fn)} failed: {err}")


class Step(tuple):
    """One launch of a prepared plan: ``(fn, grid, block, args, smem_b, slots)``, the arrays the
    call passes put in at ``slots`` ((argument index, "A" | "B" | "C" | "epoch"), ...); ``args``
    may instead be a callable ``args(A, B, C)`` with a ``key(A, B, C)`` (the pointers they
    are built from, e.g. ``helpers.runtime.anyshape._HopperArgs``). Keeps its packed
    forms (:class:`helpers.runtime.packed.Packed`): one, or one per set of the pointers the
    arguments are built from (the last two)."""

    def __new__(cls, *fields):
        step = super().__new__(cls, fields)
        step.packs = {}
        step.graphs = {}                                  # (A, B, C pointers) -> Graph, on a plan's first step
        step.last = None                                  # the pointers of the plan's previous call
        step.epoch = any(what == "epoch" for _, what in fields[5])   # a fresh int32 per launch
        return step

    def packed(self, A, B, C) -> Packed:
        fn, grid, block, args, smem_b, slots = self
        key = args.key(A, B, C) if callable(args) else None
        got = self.packs.get(key)
        if got is None:
            got = self.packs[key] = (Packed(fn, grid, block, args(A, B, C), smem_b) if callable(args)
                                     else Packed(fn, grid, block, args, smem_b, slots))
            while len(self.packs) > 2:
                self.packs.pop(next(iter(self.packs)))
        return got


def _check(err, what: str) -> None:
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")


class Graph:
    """The launches of one prepared plan, for one set of the caller's pointers, as one CUDA
    graph: its kernel nodes in a chain, each node's argument bytes copied into the graph when
    it is built. A repeated call with the same arrays then costs one ``cuGraphLaunch`` on the
    host instead of one ``cuLaunchKernel`` per step. The C it replaces::

        cuGraphCreate(&g, 0);
        for (i = 0; i < n; ++i)                          // step i runs after step i - 1
            cuGraphAddKernelNode(&node[i], g, i ? &node[i - 1] : NULL, i ? 1 : 0, &params[i]);
        cuGraphInstantiate(&exec, g, 0);
        cuGraphLaunch(exec, stream);                     // per call

    ``packs``: the plan's :class:`Packed` launches. Raises RuntimeError when the driver refuses
    to build it."""

    __slots__ = ("cu", "graph", "exec")

    def __init__(self, packs, A, B, C):
        cu = self.cu = _STATE["cu"]
        self.graph = self.exec = None
        err, self.graph = cu.cuGraphCreate(0)
        _check(err, "cuGraphCreate")
        prev = []
        for p in packs:
            p.fill(A, B, C)
            node = cu.CUDA_KERNEL_NODE_PARAMS()
            node.func = p.f
            node.gridDimX, node.gridDimY, node.gridDimZ = p.grid
            node.blockDimX, node.blockDimY, node.blockDimZ = p.block
            node.sharedMemBytes = p.smem
            node.kernelParams = p.addr                    # the bytes are copied into the graph here
            node.extra = 0
            err, added = cu.cuGraphAddKernelNode(self.graph, prev, len(prev), node)
            _check(err, f"cuGraphAddKernelNode of {getattr(p.fn, 'name', p.fn)}")
            prev = [added]
        err, self.exec = cu.cuGraphInstantiate(self.graph, 0)
        _check(err, "cuGraphInstantiate")

    def launch(self, stream) -> None:
        """One launch of the whole plan on ``stream``. Raises RuntimeError when refused."""
        err, = self.cu.cuGraphLaunch(self.exec, stream)
        _check(err, "cuGraphLaunch")

    def __del__(self):
        try:                                              # the context may be gone at exit
            if self.exec is not None:
                self.cu.cuGraphExecDestroy(self.exec)
            if self.graph is not None:
                self.cu.cuGraphDestroy(self.graph)
        except Exception:
            pass


def launch_steps(steps, A, B, C, next_epoch) -> None:
    """Enqueue a prepared plan's ``steps`` (:class:`Step`) with the call's arrays, on the current
    stream. A plan of :data:`GRAPH_MIN_STEPS` launches or more, without a per-launch epoch,
    called twice in a row with the same arrays is kept as a :class:`Graph` (the last
    :data:`GRAPHS_KEPT` sets of pointers per plan) and replayed from then on; anything else is
    launched step by step. ``next_epoch()``: a fresh int32 for a step that needs one. Raises
    AttributeError or TypeError when a step cannot be packed (the caller falls back to CuPy's
    launch), RuntimeError when the driver refuses a launch."""
    stream = stream_handle()
    head = steps[0]
    graphable = _STATE["graphs"] and len(steps) >= GRAPH_MIN_STEPS and not any(s.epoch for s in steps)
    if graphable:
        ptrs = (A.data.ptr, B.data.ptr, C.data.ptr)
        g = head.graphs.get(ptrs)
        if g is not None:
            g.launch(stream)
            PATH["launch"] = "graph"
            return
    ready = [s.packed(A, B, C) for s in steps]
    if graphable:
        again, head.last = head.last == ptrs, ptrs
        if again:                                         # the same arrays twice in a row: keep a graph
            try:
                g = Graph(ready, A, B, C)
            except (RuntimeError, AttributeError) as e:   # no graphs from now on (refused, or an
                _STATE["graphs"] = False                  # older cuda-bindings), saying why
                PATH["why"] = f"graphs off ({e})"
            else:
                head.graphs[ptrs] = g
                while len(head.graphs) > GRAPHS_KEPT:
                    head.graphs.pop(next(iter(head.graphs)))
                g.launch(stream)
                PATH["launch"] = "graph"
                return
    for s, p in zip(steps, ready):
        p.launch(A, B, C, stream, next_epoch() if s.epoch else 0)
    PATH["launch"] = "packed"
