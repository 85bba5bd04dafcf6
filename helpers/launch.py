"""Launch a catalog kernel, after checking everything that can be checked first.

Order of events for ``gemm("vec4", A, B, BLOCK_X=32)``:

1. parameters: known names, integer values, slider choices;
2. arrays: CuPy, dtype, C-contiguous, shapes agree, pointer alignment;
3. the kernel's own rules (divisibility, threads per block, shared memory
   against this GPU's per-block opt-in limit);
4. compile (cached), then registers: a block whose threads need more registers
   than the SM has cannot launch at all ("too many resources requested");
5. raise the kernel's dynamic shared-memory limit if it asks for more than the
   48 KB default, and launch.

Steps 1-4 raise ``ValueError`` naming the parameter, its value and the rule;
nothing has reached the GPU, so the CUDA context stays healthy for the next cell.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import catalog, checks, compile as kc, gpu, verify


@dataclass
class Launch:
    """A validated, compiled kernel ready to run on one shape."""
    spec: catalog.Kernel
    params: dict
    shape: tuple
    fn: object          # cupy.RawKernel
    grid: tuple
    block: tuple
    smem: int

    def __call__(self, *args) -> None:
        self.fn(self.grid, self.block, args, shared_mem=self.smem)

    def resources(self) -> dict:
        """Registers, static/dynamic shared memory, local (spill) bytes, and
        theoretical occupancy of this launch on this GPU."""
        r = kc.resources(self.fn)
        r["smem_dynamic"] = self.smem
        r["threads"] = self.spec.threads(self.params)
        r.update(occupancy(r["registers"], r["threads"], r["smem_static"] + self.smem))
        return r


# Per-SM limits by architecture. Source: CUDA C++ Programming Guide,
# "Technical Specifications per Compute Capability" (8.0 and 9.0: 64K 32-bit
# registers, 2048 resident threads = 64 warps, 32 resident blocks, 164 KB /
# 228 KB shared memory per SM with up to 163 KB / 227 KB per block, 255
# registers per thread), and the CUDA Occupancy Calculator (register
# allocation unit: 256 registers per warp; 1 KB of shared memory reserved per block).
DEVICE_LIMITS = {
    "sm_80": {"regs_per_sm": 65536, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
              "smem_per_sm": 167936, "smem_per_block_max": 166912,
              "smem_reserved_per_block": 1024, "reg_alloc_unit": 256, "max_regs_per_thread": 255},
    "sm_90": {"regs_per_sm": 65536, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
              "smem_per_sm": 233472, "smem_per_block_max": 232448,
              "smem_reserved_per_block": 1024, "reg_alloc_unit": 256, "max_regs_per_thread": 255},
}


def device_limits(arch: str | None = None) -> dict:
    """:data:`DEVICE_LIMITS` of ``arch``; with None, this GPU's own (live) or sm_90 (recorded)."""
    if arch is None and gpu.live():
        d = gpu.device_info()
        return {**DEVICE_LIMITS["sm_90"], "regs_per_sm": d["regs_per_sm"], "smem_per_sm": d["smem_per_sm"],
                "max_threads_per_sm": d["max_threads_per_sm"], "smem_per_block_max": d["smem_per_block_optin"]}
    arch = arch or "sm_90"
    if arch not in DEVICE_LIMITS:
        raise ValueError(f"arch={arch!r}: must be one of {tuple(DEVICE_LIMITS)}")
    return DEVICE_LIMITS[arch]


def occupancy(registers: int, threads: int, smem_bytes: int = 0, arch: str | None = None) -> dict:
    """Theoretical occupancy of one launch configuration (CUDA Occupancy Calculator model).

    ``registers`` per thread (nvcc -Xptxas -v or the driver), ``threads`` per
    block, ``smem_bytes`` per block (static + dynamic), ``arch`` "sm_80" or
    "sm_90" (None: this GPU, or sm_90 without one). Registers are allocated per
    warp in units of 256; each block's shared memory is ``smem_bytes`` plus the
    1 KB the system reserves. Returns ``{"blocks_per_sm", "warps_per_sm",
    "occupancy" (resident threads / max), "limited_by" ("threads", "blocks",
    "registers" or "shared memory"), "limits": blocks allowed by each}``.
    Raises ValueError for a block that cannot run at all.
    """
    d = device_limits(arch)
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads={threads}: must be in [1, 1024]")
    if not 1 <= registers <= d["max_regs_per_thread"]:
        raise ValueError(f"registers={registers}: must be in [1, {d['max_regs_per_thread']}]")
    if smem_bytes > d["smem_per_block_max"]:
        raise ValueError(f"smem_bytes={smem_bytes}: must be <= {d['smem_per_block_max']}")
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // d["reg_alloc_unit"]) * d["reg_alloc_unit"]
    lim = {"threads": d["max_threads_per_sm"] // (warps * 32), "blocks": d["max_blocks_per_sm"],
           "registers": d["regs_per_sm"] // (regs_per_warp * warps)}
    if smem_bytes > 0:
        lim["shared memory"] = d["smem_per_sm"] // (smem_bytes + d["smem_reserved_per_block"])
    blocks = min(lim.values())
    order = ("threads", "blocks", "registers", "shared memory")     # ties: fixed limits first
    limiter = min((k for k in order if k in lim), key=lambda k: (lim[k], order.index(k)))
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps * 32 / d["max_threads_per_sm"], "limited_by": limiter, "limits": lim}


def resources_of(key: str, shape: tuple, **params) -> dict:
    """Registers, shared memory, spills and occupancy of one configuration.

    Live: compiled with NVRTC, read from the CUDA driver (:meth:`Launch.resources`).
    Without a GPU: ``nvcc -Xptxas -v`` for sm_90 (:func:`helpers.compile.nvcc_check`)
    and :func:`occupancy` with the sm_90 limits. Returns ``{"threads",
    "registers", "smem_static", "smem_dynamic", "spill_bytes", occupancy
    fields, "source"}``. Raises ValueError (a rule, checked first),
    FileNotFoundError (neither GPU nor nvcc), KernelCompileError.
    """
    spec = catalog.get(key)
    p = spec.params(**params)
    spec.validate(p, tuple(shape), smem_limit=device_limits()["smem_per_block_max"])
    if gpu.live():
        r = prepare(key, shape, **p).resources()
        return {**r, "spill_bytes": r["local_bytes"],
                "source": f"compiled with NVRTC, read from the CUDA driver on {gpu.device_info()['name']}"}
    n = kc.nvcc_check(spec.file, spec.entry, spec.defines(p), arch="sm_90")
    r = {"threads": spec.threads(p), "registers": n["registers"], "smem_static": n["smem_static"],
         "smem_dynamic": spec.smem(p), "spill_bytes": n["spill_stores"] + n["spill_loads"]}
    r.update(occupancy(r["registers"], r["threads"], r["smem_static"] + r["smem_dynamic"], arch="sm_90"))
    return {**r, "source": "nvcc -Xptxas -v for sm_90 on this machine (no GPU here); occupancy from the "
                           "Occupancy Calculator model with sm_90 limits"}


def prepare(key: str, shape: tuple, extra_defines: dict | None = None, **params) -> Launch:
    """Validate ``params`` for kernel ``key`` on ``shape`` and compile it.

    ``shape`` is (M, N, K) for GEMM, (ROWS, COLS) for transpose/copy.
    Raises ValueError (a violated rule), KeyError (unknown kernel),
    KernelCompileError. Needs a GPU for the compile and the device limits.
    """
    spec = catalog.get(key)
    p = spec.params(**params)
    shape = tuple(int(s) for s in shape)
    limit = gpu.device_info()["smem_per_block_optin"] if gpu.live() else None
    spec.validate(p, shape, smem_limit=limit)
    fn = kc.build(spec.file, spec.entry, {**spec.defines(p), **(extra_defines or {})})
    threads = spec.threads(p)
    checks.require(fn.max_threads_per_block >= threads, "registers per thread", fn.num_regs,
                   f"too many for a block of {threads} threads: this kernel can launch at most "
                   f"{fn.max_threads_per_block} threads per block")
    smem = spec.smem(p)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    return Launch(spec, p, shape, fn, spec.grid(p, shape), spec.block(p), smem)


def _gemm_arrays(spec, A, B, C):
    cp = gpu.cupy()
    M, K = A.shape
    if spec.layout == "NT":
        N, Kb = B.shape
        bname, brule = "Bt", "(N, K): this kernel takes B transposed (K-major)"
    else:
        Kb, N = B.shape
        bname, brule = "B", "(K, N)"
    checks.require(A.ndim == 2 and B.ndim == 2, "A.ndim, B.ndim", (A.ndim, B.ndim), "must both be 2")
    checks.require(Kb == K, f"{bname}.shape", tuple(B.shape), f"must be {brule} with K={K} from A.shape={tuple(A.shape)}")
    checks.check_array("A", A, str(verify.np_dtype(spec.dtype)), align=spec.align)
    checks.check_array(bname, B, str(verify.np_dtype(spec.dtype)), align=spec.align)
    if C is None:
        C = cp.empty((M, N), dtype=verify.np_dtype(spec.out_dtype))
    checks.check_array("C", C, str(verify.np_dtype(spec.out_dtype)), shape=(M, N), align=spec.align)
    return (M, N, K), C


def gemm(key: str, A, B, C=None, **params):
    """Run GEMM kernel ``key`` on device arrays: returns C (M x N).

    ``A`` is (M, K); ``B`` is (K, N), or (N, K) for a kernel whose layout is
    "NT". dtypes as the catalog entry says. All checks happen before launch.
    """
    spec = catalog.get(key)
    shape, C = _gemm_arrays(spec, A, B, C)
    L = prepare(key, shape, **params)
    L(A, B, C, *(int(s) for s in shape))
    return C


def transpose(key: str, X, out=None, **params):
    """Run transpose/copy kernel ``key`` on a (ROWS, COLS) float32 array.
    Returns ``out``: (COLS, ROWS) for a transpose, (ROWS, COLS) for the copy."""
    cp = gpu.cupy()
    spec = catalog.get(key)
    checks.require(X.ndim == 2, "X.ndim", X.ndim, "must be 2")
    checks.check_array("X", X, "float32", align=4)
    R, Cc = X.shape
    oshape = (R, Cc) if spec.op == "copy" else (Cc, R)
    if out is None:
        out = cp.empty(oshape, cp.float32)
    checks.check_array("out", out, "float32", shape=oshape, align=4)
    L = prepare(key, (R, Cc), **params)
    L(out, X, R, Cc)
    return out


def record_owner(key: str, shape: tuple, **params):
    """Run the instrumented build (-DRECORD_OWNER=1) of GEMM kernel ``key`` and
    return, for every C element, ``blockLinear * 1024 + threadLinear`` of the
    thread that wrote it (int32 numpy array (M, N)); -1 where nobody wrote."""
    cp = gpu.cupy()
    spec = catalog.get(key)
    M, N, K = shape
    A = verify.random_matrix((M, K), spec.dtype)
    B = verify.random_matrix((N, K) if spec.layout == "NT" else (K, N), spec.dtype)
    C = cp.empty((M, N), dtype=verify.np_dtype(spec.out_dtype))
    owner = cp.full((M, N), -1, dtype=cp.int32)
    L = prepare(key, shape, extra_defines={"RECORD_OWNER": 1}, **params)
    L(A, B, C, M, N, K, owner)
    return cp.asnumpy(owner)
