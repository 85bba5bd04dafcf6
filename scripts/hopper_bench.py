#!/usr/bin/env python3
"""Heaven 10 (Hopper) standalone check-and-time harness.

Compiles kernels/10_hopper.cu with NVRTC through cupy.RawModule for sm_90a,
builds the two TMA descriptors (cuda.bindings.driver.cuTensorMapEncodeTiled,
or the same call through ctypes into libcuda), checks every rung against a
float64 reference on NaN-poisoned outputs, and times each rung against
cupy.matmul (cuBLAS) of the same dtype in alternating rounds.

The experiment harness of chapter 10: every rung and switch of the kernel file
can be timed here with -D overrides the catalog does not offer. It imports only
the TMA encoder of helpers/ (helpers.runtime.tma), numpy, cupy and the standard
library (plus ml_dtypes for bf16). The book's own measurements go through
helpers (scripts/record_results.py, book/10_hopper.ipynb).

Rungs (kernel entry and -D switches; see the header of kernels/10_hopper.cu):
  1  hopper_tma_wgmma                         TMA + mbarrier + wgmma, 1 warpgroup, 64x256 tile
  2  hopper_ws  PERSISTENT=0 CLUSTER_M=1      producer + 2 consumer warpgroups, 128x256, setmaxnreg
  3  hopper_ws  PERSISTENT=1 CLUSTER_M=1      persistent, grid = SMs, GROUP_M tile order
  4  hopper_ws  PERSISTENT=1 CLUSTER_M=2      2x1 clusters, B multicast
  5  hopper_ws  ... EPI_TMA=1                 epilogue through shared memory + TMA store
A rung spec may add -D overrides and a grid override, each after a colon:
"4:STAGES=3:GROUP_M=16:GRID=128" (specs in --rungs are separated by commas).

Examples:
  python3 scripts/hopper_bench.py                                  # rungs 1-5, 4096^3 and 8192^3, bf16 and fp16
  python3 scripts/hopper_bench.py --rungs 3,4 --shapes 4096 --dtypes bf16
  python3 scripts/hopper_bench.py --check-only --shapes 1001x1000x1000,4096
  compute-sanitizer --tool memcheck python3 scripts/hopper_bench.py --sanitize-small --rungs 4

Units: times in ms, rates in TFLOP/s (2*M*N*K / time). ratio = median cuBLAS
time / median kernel time, both measured in the same run, alternating rounds.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import cupy as cp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers.runtime import compile as kc, tma  # noqa: E402  (the book's source paster and tensor-map encoder)
SRC = ROOT / "kernels" / "experiments" / "10_hopper_variants.cu"   # kernels/10_hopper.cu with its measured switches

RUNGS = {
    "1": ("hopper_tma_wgmma", {}),
    "2": ("hopper_ws", {"PERSISTENT": 0, "CLUSTER_M": 1}),
    "3": ("hopper_ws", {"PERSISTENT": 1, "CLUSTER_M": 1}),
    "4": ("hopper_ws", {"PERSISTENT": 1, "CLUSTER_M": 2}),
    "5": ("hopper_ws", {"PERSISTENT": 1, "CLUSTER_M": 2, "EPI_TMA": 1}),
}
DEFAULTS = {"STAGES": 4, "GROUP_M": 8}
TOL = {"bf16": 1e-2, "fp16": 2e-3}
BM_WS, BM_R1, BN, BK = 128, 64, 256, 64
SMEM_OPTIN = 232448        # H100/H200 opt-in dynamic shared memory per block (227 KB)

# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

def np_dtype(name: str) -> np.dtype:
    """'bf16' -> bfloat16 (ml_dtypes), 'fp16' -> float16. ValueError otherwise."""
    if name == "fp16":
        return np.dtype(np.float16)
    if name == "bf16":
        try:
            return np.dtype("bfloat16")
        except TypeError:
            import ml_dtypes  # registers bfloat16 with NumPy; CuPy uses the same dtype
            return np.dtype(ml_dtypes.bfloat16)
    raise ValueError(f"dtype={name!r}: must be 'bf16' or 'fp16'")


# ---------------------------------------------------------------------------
# Preconditions, checked before any compile or launch
# ---------------------------------------------------------------------------

def check_problem(M: int, N: int, K: int) -> None:
    """Raise ValueError naming the parameter, its value and the rule it breaks."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or v < 1 or v >= 2 ** 31:
            raise ValueError(f"{name}={v!r}: must be an integer in [1, 2^31)")
    if K % 8:
        raise ValueError(f"K={K}: must be a multiple of 8 (TMA global stride of A, K*2 bytes, "
                         f"must be a multiple of 16 bytes)")
    if N % 8:
        raise ValueError(f"N={N}: must be a multiple of 8 (TMA global stride of B, N*2 bytes, "
                         f"must be a multiple of 16 bytes)")


def check_arrays(A, B, C) -> None:
    """Shapes, dtypes, contiguity and 16-byte alignment of the operands."""
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2:
        raise ValueError("A, B, C must be 2-D")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"B.shape[0]={B.shape[0]}: must equal K={K}")
    N = B.shape[1]
    if C.shape != (M, N):
        raise ValueError(f"C.shape={C.shape}: must be {(M, N)}")
    if not (A.dtype == B.dtype == C.dtype) or A.dtype.itemsize != 2:
        raise ValueError(f"dtypes {A.dtype}, {B.dtype}, {C.dtype}: must be one 16-bit dtype")
    for name, x in (("A", A), ("B", B), ("C", C)):
        if not x.flags.c_contiguous:
            raise ValueError(f"{name}: must be C-contiguous (row-major)")
        if x.data.ptr % 16:
            raise ValueError(f"{name}.data.ptr={x.data.ptr:#x}: must be 16-byte aligned (TMA)")
    check_problem(M, N, K)


# ---------------------------------------------------------------------------
# TMA descriptors
# ---------------------------------------------------------------------------

def tensor_map(x, dt: str, box_inner: int, box_outer: int):
    """TMA descriptor of a row-major 2-D array x, box (box_inner x box_outer) elements,
    128-byte swizzle: the book's helpers.runtime.tma (cuda.bindings, or ctypes into libcuda)."""
    return tma.tensor_map("X", x, box_outer, box_inner)


ENCODER_USED = tma.ENCODER


# ---------------------------------------------------------------------------
# Variants: compile and launch
# ---------------------------------------------------------------------------

def parse_rung(spec: str):
    """'4:STAGES=3:GRID=128' -> (label, entry, defines, grid_override)."""
    name, _, extra = spec.partition(":")
    if name not in RUNGS:
        raise ValueError(f"rung={name!r}: must be one of {sorted(RUNGS)}")
    entry, defs = RUNGS[name]
    defs = {**DEFAULTS, **defs}
    grid = None
    for kv in filter(None, extra.split(":")):
        k, _, v = kv.partition("=")
        if k == "GRID":
            grid = int(v)
        else:
            defs[k] = int(v)
    return spec, entry, defs, grid


_SRC_TEXT = None
_MODULES = {}


def compile_variant(entry: str, defs: dict, dt: str):
    """cupy.RawModule over kernels/10_hopper.cu for sm_90a; returns the RawKernel."""
    global _SRC_TEXT
    if _SRC_TEXT is None:
        _SRC_TEXT = kc.source(str(SRC))      # local #includes (instrument.cuh) pasted, as the book compiles it
    d = {**defs, "BF16": 1 if dt == "bf16" else 0}
    opts = ("-arch=sm_90a", "-std=c++17") + tuple(f"-D{k}={v}" for k, v in sorted(d.items()))
    key = (entry, opts)
    if key not in _MODULES:
        mod = cp.RawModule(code=_SRC_TEXT, options=opts)
        _MODULES[key] = mod.get_function(entry)
    return _MODULES[key], opts


def ptxas_log(defs: dict, dt: str) -> str:
    """NVRTC's ptxas -v log for one configuration (best effort; '' if unavailable)."""
    try:
        from cupy.cuda import nvrtc
        import glob
        import site
        d = {**defs, "BF16": 1 if dt == "bf16" else 0}
        incs = []
        for base in list(site.getsitepackages()) + [os.environ.get("CUDA_PATH", "/usr/local/cuda")]:
            incs += glob.glob(os.path.join(base, "nvidia", "*", "include")) + glob.glob(os.path.join(base, "include"))
        opts = ["-arch=sm_90a", "-std=c++17", "--ptxas-options=-v"] + [f"-D{k}={v}" for k, v in sorted(d.items())]
        opts += [f"-I{p}" for p in incs if os.path.exists(os.path.join(p, "cuda_fp16.h"))]
        prog = nvrtc.createProgram(kc.source(str(SRC)), "10_hopper.cu", [], [])
        try:
            nvrtc.compileProgram(prog, opts)
        finally:
            log = nvrtc.getProgramLog(prog)
        return log
    except Exception as e:
        return f"(ptxas log unavailable: {type(e).__name__}: {e})"


def sm_count() -> int:
    return cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"]


def max_active_clusters(kern, smem: int, cluster: int, grid: int):
    """cuOccupancyMaxActiveClusters for this kernel (None if the query fails)."""
    try:
        from cuda.bindings import driver as cu
        cfg = cu.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = 384, 1, 1
        cfg.sharedMemBytes = smem
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        cfg.attrs = [attr]
        cfg.numAttrs = 1
        err, n = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(kern.kernel.ptr), cfg)
        if int(err) != 0:
            cfg.attrs = []
            cfg.numAttrs = 0
            err, n = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(kern.kernel.ptr), cfg)
        return int(n) if int(err) == 0 else None
    except Exception:
        return None


class Variant:
    def __init__(self, spec: str, dt: str):
        self.spec, self.entry, self.defs, self.grid_override = parse_rung(spec)
        self.dt = dt
        st = self.defs["STAGES"]
        cl = self.defs.get("CLUSTER_M", 1)
        if cl not in (1, 2):
            raise ValueError(f"CLUSTER_M={cl}: must be 1 or 2")
        if self.entry == "hopper_tma_wgmma":
            self.bm, self.threads = BM_R1, 128
            self.smem = 1024 + st * (BM_R1 * BK * 2 + BK * BN * 2) + 2 * st * 8
        else:
            self.bm, self.threads = BM_WS, 384
            self.smem = (1024 + st * (BM_WS * BK * 2 + BK * BN * 2) + 2 * st * 8
                         + self.defs.get("EPI_TMA", 0) * 2 * 64 * 128 * 2)
        if self.smem > SMEM_OPTIN:
            raise ValueError(f"STAGES={st}: needs {self.smem} bytes of shared memory, "
                             f"more than the {SMEM_OPTIN}-byte opt-in limit")
        self.kern, self.opts = compile_variant(self.entry, self.defs, dt)
        self.kern.max_dynamic_shared_size_bytes = self.smem
        self.cluster = cl
        self.clusters_fit = None

    def grid(self, M, N):
        nm, nn = -(-M // self.bm), -(-N // BN)
        if self.entry == "hopper_tma_wgmma":
            return (nn, nm, 1)
        cl = self.cluster
        tiles = -(-nm // cl) * nn
        if not self.defs.get("PERSISTENT", 0):
            return (tiles * cl, 1, 1)
        g = self.grid_override or sm_count()
        if cl > 1 and self.grid_override is None:
            if self.clusters_fit is None:
                self.clusters_fit = max_active_clusters(self.kern, self.smem, cl, g - g % cl)
            if self.clusters_fit:
                g = min(g, self.clusters_fit * cl)
        g = min(g, tiles * cl)
        return (max(cl, g - g % cl), 1, 1)

    def __call__(self, A, B, C):
        check_arrays(A, B, C)
        M, K = A.shape
        N = B.shape[1]
        tmA = tensor_map(A, self.dt, BK, self.bm)   # box: 64 K-elements x BM rows
        tmB = tensor_map(B, self.dt, 64, BK)        # box: 64 N-elements x BK rows
        descs = (tmA, tmB) if self.threads == 128 else (tmA, tmB, tensor_map(C, self.dt, 64, 64))
        self.kern(self.grid(M, N), (self.threads, 1, 1),
                  descs + (C, np.int32(M), np.int32(N), np.int32(K)), shared_mem=self.smem)

    def prepared(self, A, B, C):
        """A zero-argument launcher with descriptors built once (for timing)."""
        check_arrays(A, B, C)
        M, K = A.shape
        N = B.shape[1]
        tmA = tensor_map(A, self.dt, BK, self.bm)
        tmB = tensor_map(B, self.dt, 64, BK)
        grid, block = self.grid(M, N), (self.threads, 1, 1)
        descs = (tmA, tmB) if self.threads == 128 else (tmA, tmB, tensor_map(C, self.dt, 64, 64))
        args = descs + (C, np.int32(M), np.int32(N), np.int32(K))
        return lambda: self.kern(grid, block, args, shared_mem=self.smem)


# ---------------------------------------------------------------------------
# Check and time
# ---------------------------------------------------------------------------

def parse_shape(s: str):
    parts = [int(p) for p in s.lower().split("x")]
    if len(parts) == 1:
        parts = parts * 3
    if len(parts) != 3:
        raise ValueError(f"shape={s!r}: give N or MxNxK")
    return tuple(parts)


def random_inputs(M, N, K, dt):
    rng = cp.random.default_rng()
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(np_dtype(dt))
    B = rng.standard_normal((K, N), dtype=cp.float32).astype(np_dtype(dt))
    C = cp.empty((M, N), dtype=np_dtype(dt))
    return A, B, C


def check(var: Variant, M, N, K):
    """Fresh random inputs, NaN-poisoned C, float64 reference. Returns (rel_err, n_nonfinite)."""
    A, B, C = random_inputs(M, N, K, var.dt)
    C.fill(np.nan)
    var(A, B, C)
    cp.cuda.Device().synchronize()
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    C64 = C.astype(cp.float64)
    bad = int((~cp.isfinite(C64)).sum())
    err = float(cp.linalg.norm(C64 - ref) / cp.linalg.norm(ref)) if bad == 0 else float("inf")
    del A, B, C, ref, C64
    cp.get_default_memory_pool().free_all_blocks()
    return err, bad


def time_alternating(fn, ref, *, rounds=5, reps=10, warmup=3):
    """Median per-launch ms of fn and ref, timed in alternating rounds with CUDA events."""
    for _ in range(warmup):
        fn(); ref()
    cp.cuda.Device().synchronize()
    t_fn, t_ref = [], []
    for _ in range(rounds):
        for f, out in ((fn, t_fn), (ref, t_ref)):
            evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
            for a, b in evs:
                a.record(); f(); b.record()
            evs[-1][1].synchronize()
            out += [cp.cuda.get_elapsed_time(a, b) for a, b in evs]
    return float(np.median(t_fn)), float(np.median(t_ref)), t_fn, t_ref


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rungs", default="1,2,3,4,5", help="comma list of rung specs, e.g. 1,2,4:STAGES=3:GRID=128")
    ap.add_argument("--shapes", default="4096,8192", help="comma list of N or MxNxK (timed)")
    ap.add_argument("--check-shapes", default="1001x1000x1000,333x264x72,4093x4088x4104,128x256x64,1x8x8",
                    help="extra shapes checked (not timed); '' for none")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--check-only", action="store_true", help="check correctness, do not time")
    ap.add_argument("--sanitize-small", action="store_true",
                    help="small shapes only, check only (for compute-sanitizer)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--ptxas", action="store_true", help="print NVRTC's ptxas -v log per variant")
    ap.add_argument("--json", default=None, help="write all records to this file")
    a = ap.parse_args(argv)

    cc = cp.cuda.Device().compute_capability
    if cc != "90":
        raise SystemExit(f"compute capability {cc}: these kernels are sm_90a machine code (needs 9.0)")

    if a.sanitize_small:
        timed, checked = [], [(192, 264, 136), (130, 520, 72)]
        a.check_only = True
    else:
        timed = [parse_shape(s) for s in a.shapes.split(",") if s]
        checked = [parse_shape(s) for s in a.check_shapes.split(",") if s]
    for (M, N, K) in timed + checked:
        check_problem(M, N, K)

    # The rule checks refuse, before any launch, with a clear error:
    for bad in ((64, 64, 60), (64, 60, 64)):
        try:
            check_problem(*bad)
        except ValueError as e:
            print(f"refused {bad}: {e}")

    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"# {props['name'].decode()}  SMs={props['multiProcessorCount']}  cupy {cp.__version__}  "
          f"NVRTC {cp.cuda.nvrtc.getVersion()}  driver {cp.cuda.runtime.driverGetVersion()}", flush=True)

    records = []
    for dt in a.dtypes.split(","):
        for spec in a.rungs.split(","):
            t0 = time.perf_counter()
            try:
                var = Variant(spec, dt)
            except Exception as e:
                print(f"[{spec} {dt}] compile/setup FAILED: {type(e).__name__}: {e}", flush=True)
                records.append({"rung": spec, "dtype": dt, "error": str(e)})
                continue
            print(f"[{spec} {dt}] {var.entry} {' '.join(var.opts)} smem={var.smem} "
                  f"compile {time.perf_counter() - t0:.1f}s  encoder={ENCODER_USED}", flush=True)
            if a.ptxas:
                log = ptxas_log(var.defs, dt)
                print("\n".join(l for l in log.splitlines() if "ptxas" in l.lower() or "warn" in l.lower()
                                or "registers" in l or "spill" in l), flush=True)
            ok_all = True
            for (M, N, K) in checked + timed:
                err, bad = check(var, M, N, K)
                ok = bad == 0 and err <= TOL[dt]
                ok_all &= ok
                print(f"  check {M}x{N}x{K}: rel_err={err:.3e} nonfinite={bad} "
                      f"{'ok' if ok else 'FAIL'} (tol {TOL[dt]})", flush=True)
                records.append({"rung": spec, "dtype": dt, "shape": [M, N, K], "rel_err": err,
                                "nonfinite": bad, "ok": ok})
            if a.check_only or not ok_all:
                continue
            for (M, N, K) in timed:
                A, B, C = random_inputs(M, N, K, dt)
                Cr = cp.empty_like(C)
                fn = var.prepared(A, B, C)
                ref = lambda: cp.matmul(A, B, out=Cr)  # noqa: E731
                tk, tr, sk, sr = time_alternating(fn, ref, rounds=a.rounds, reps=a.reps)
                fl = 2.0 * M * N * K
                rec = {"rung": spec, "dtype": dt, "shape": [M, N, K], "kernel_ms": tk, "cublas_ms": tr,
                       "kernel_TFLOPs": fl / tk / 1e9, "cublas_TFLOPs": fl / tr / 1e9, "ratio": tr / tk,
                       "grid": list(var.grid(M, N)), "clusters_fit": var.clusters_fit,
                       "kernel_spread_ms": [float(np.min(sk)), float(np.max(sk))]}
                records.append(rec)
                print(f"  time {M}x{N}x{K}: kernel {tk:.3f} ms ({rec['kernel_TFLOPs']:.0f} TFLOP/s)  "
                      f"cuBLAS {tr:.3f} ms ({rec['cublas_TFLOPs']:.0f})  ratio {tr / tk:.3f}  "
                      f"grid {rec['grid']}", flush=True)
                del A, B, C, Cr
                cp.get_default_memory_pool().free_all_blocks()

    print("\n| rung | dtype | shape | kernel TFLOP/s | cuBLAS TFLOP/s | ratio | rel_err |")
    print("|---|---|---|---|---|---|---|")
    errs = {}
    for r in records:
        if "shape" in r and "rel_err" in r:
            errs.setdefault((r["rung"], r["dtype"], tuple(r["shape"])), r["rel_err"])
    for r in records:
        if "ratio" in r:
            e = errs.get((r["rung"], r["dtype"], tuple(r["shape"])), float("nan"))
            print(f"| {r['rung']} | {r['dtype']} | {'x'.join(map(str, r['shape']))} | {r['kernel_TFLOPs']:.0f} "
                  f"| {r['cublas_TFLOPs']:.0f} | {r['ratio']:.3f} | {e:.2e} |")
    fails = [r for r in records if r.get("ok") is False or "error" in r]
    print(f"checks: {sum(1 for r in records if r.get('ok'))} ok, {len(fails)} failed")
    out = a.json or (os.path.join(os.environ["OUT"], "hopper_bench.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "records": records}) + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
