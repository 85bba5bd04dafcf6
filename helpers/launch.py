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


def occupancy(regs: int, threads: int, smem: int, dev: dict | None = None) -> dict:
    """Theoretical blocks and warps per SM, and the limiting resource.

    Model of the CUDA Occupancy Calculator (CUDA C++ Programming Guide,
    "Occupancy"; limits per compute capability in its "Technical
    Specifications" table): registers are allocated per warp in units of 256,
    shared memory per block with 1 KB reserved by the system, at most 32
    resident blocks and ``max_threads_per_sm`` threads per SM.
    ``dev`` holds ``regs_per_sm``, ``smem_per_sm``, ``max_threads_per_sm``
    (defaults: the current GPU, or an H100/H200 in recorded mode).
    """
    if dev is None:
        dev = gpu.device_info() if gpu.live() else {"regs_per_sm": 65536, "smem_per_sm": 233472,
                                                    "max_threads_per_sm": 2048}
    warps = -(-threads // 32)
    regs_per_warp = -(-max(regs, 1) * 32 // 256) * 256
    lim = {"threads": dev["max_threads_per_sm"] // (warps * 32), "blocks": 32,
           "registers": dev["regs_per_sm"] // (regs_per_warp * warps)}
    if smem:
        lim["shared memory"] = dev["smem_per_sm"] // (smem + 1024)
    blocks = min(lim.values())
    limiter = min(lim, key=lambda k: lim[k])
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps * 32 / dev["max_threads_per_sm"], "limited_by": limiter}


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
