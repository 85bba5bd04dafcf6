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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from helpers.models.occupancy import DEVICE_LIMITS, occupancy

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
        if self.spec.args is not None:            # e.g. TMA descriptors built from the arrays (cached)
            args = self.spec.args(self.params, *args)
        self.fn(self.grid, self.block, args, shared_mem=self.smem)

    def resources(self) -> dict:
        """Registers, static/dynamic shared memory, local (spill) bytes, and
        theoretical occupancy of this launch on this GPU."""
        r = kc.resources(self.fn)
        r["smem_dynamic"] = self.smem
        r["threads"] = self.spec.threads(self.params)
        d = gpu.this_device()                     # the GPU it runs on, even when another is simulated
        r.update(occupancy(r["registers"], r["threads"], r["smem_static"] + self.smem,
                           arch={k: d[k] for k in DEVICE_LIMITS["sm_90"]}))
        return r


def max_active_clusters(fn, threads: int, smem: int, cluster: int, grid: int) -> int | None:
    """How many clusters of ``cluster`` blocks of kernel ``fn`` (a ``cupy.RawKernel``, launched
    with ``threads`` threads and ``smem`` bytes of dynamic shared memory per block on a 1-D
    grid of ``grid`` blocks) can be resident at once: the driver's
    ``cuOccupancyMaxActiveClusters``. A persistent grid larger than that many clusters
    leaves some to a second wave. None when the query fails or ``cuda-bindings`` is absent
    (asked without the cluster attribute first when the driver refuses it with)."""
    try:
        from cuda.bindings import driver as cu
        cfg = cu.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
        cfg.sharedMemBytes = smem
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        cfg.attrs, cfg.numAttrs = [attr], 1
        err, n = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(fn.kernel.ptr), cfg)
        if int(err) != 0:
            cfg.attrs, cfg.numAttrs = [], 0
            err, n = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(fn.kernel.ptr), cfg)
        return int(n) if int(err) == 0 else None
    except Exception:
        return None


def device_limits(arch: str | None = None) -> dict:
    """:data:`DEVICE_LIMITS` of ``arch``; with None, those of the GPU the book decides for
    (:func:`helpers.runtime.gpu.target`: this GPU's own, read from the device, or the
    simulated one's), or sm_90's (recorded mode, where the measurements come from an H200)."""
    if arch is None:
        t = gpu.target()
        if t is not None:
            return {k: t[k] for k in DEVICE_LIMITS["sm_90"]}
    arch = arch or "sm_90"
    if arch not in DEVICE_LIMITS:
        raise ValueError(f"arch={arch!r}: must be one of {tuple(DEVICE_LIMITS)}")
    return DEVICE_LIMITS[arch]


def unable(spec: catalog.Kernel, p: dict | None = None) -> str | None:
    """Why the GPU the book decides for (:func:`helpers.runtime.gpu.target`) cannot run
    kernel ``spec`` with parameters ``p`` (default: its defaults on that GPU, which may be a
    tuned configuration that fits: :mod:`helpers.runtime.defaults`), or None when it can,
    or when there is no such GPU (recorded mode, nothing simulated). Two reasons: its
    compute capability ("needs sm_80 or newer; this GPU is sm_75") and its shared memory
    per block ("needs 192 KB of shared memory per block; this GPU allows 99 KB")."""
    t = gpu.target()
    if t is None:
        return None
    cc = tuple(t["cc"])
    here = f"this GPU is sm_{cc[0]}{cc[1]}" + (f" (simulated {t['name']})" if t.get("simulated") else "")
    if not spec.runs_on(cc):
        return f"needs {spec.needs()}; {here}"
    smem = spec.smem({**spec.defaults, **p} if p else spec.params())
    if smem > t["smem_per_block_max"]:
        return (f"needs {smem / 1024:.0f} KB of shared memory per block; {here}, which allows "
                f"{t['smem_per_block_max'] / 1024:.0f} KB")
    return None


def resources_of(key: str, shape: tuple, **params) -> dict:
    """Registers, shared memory, spills and occupancy of one configuration.

    Live: compiled with NVRTC, read from the CUDA driver (:meth:`Launch.resources`).
    Without a GPU: ``nvcc -Xptxas -v`` for the simulated GPU's architecture, or sm_90
    (:func:`helpers.runtime.compile.nvcc_check`), and :func:`occupancy` with its limits.
    Returns ``{"threads", "registers", "smem_static", "smem_dynamic", "spill_bytes",
    occupancy fields, "source"}``. Raises ValueError (a rule, or a kernel the GPU cannot
    run: :func:`unable`; checked first), FileNotFoundError (neither GPU nor nvcc),
    KernelCompileError.
    """
    spec = catalog.get(key)
    p = spec.params(**params)
    why = unable(spec, p)
    checks.require(why is None, "GPU", gpu.describe_target(), f"cannot run {key}: it {why}")
    spec.validate(p, tuple(shape), smem_limit=device_limits()["smem_per_block_max"])
    if gpu.live():
        r = prepare(key, shape, **p).resources()
        return {**r, "spill_bytes": r["local_bytes"],
                "source": f"compiled with NVRTC, read from the CUDA driver on {gpu.device_info()['name']}"}
    t = gpu.target()
    arch = f"sm_{t['cc'][0]}{t['cc'][1]}" if t else "sm_90"
    n = kc.nvcc_check(spec.file, spec.entry, spec.defines(p), arch=arch + ("a" if spec.arch_specific else ""))
    r = {"threads": spec.threads(p), "registers": n["registers"], "smem_static": n["smem_static"],
         "smem_dynamic": spec.smem(p), "spill_bytes": n["spill_stores"] + n["spill_loads"]}
    r.update(occupancy(r["registers"], r["threads"], r["smem_static"] + r["smem_dynamic"], arch=device_limits()))
    return {**r, "source": f"nvcc -Xptxas -v for {arch} on this machine (no GPU in this run); occupancy from the "
                           f"Occupancy Calculator model with {arch} limits"}


def prepare(key: str, shape: tuple, extra_defines: dict | None = None, **params) -> Launch:
    """Validate ``params`` for kernel ``key`` on ``shape`` and compile it.

    ``shape`` is (M, N, K) for GEMM, (ROWS, COLS) for transpose/copy. ``extra_defines``
    are ``-D`` values beyond the parameters (``RECORD_OWNER``, a switch); a switch the
    entry keeps in an experiment file builds that file (:meth:`Kernel.build_target`).
    Raises ValueError (a violated rule, or a GPU that cannot run the kernel, checked
    before anything compiles), KeyError (unknown kernel), KernelCompileError. Needs a
    GPU for the compile and the device limits.
    """
    spec = catalog.get(key)
    p = spec.params(**params)
    shape = tuple(int(s) for s in shape)
    limit = device_limits()["smem_per_block_max"] if gpu.live() else None
    if gpu.live():
        t = gpu.target()
        checks.require(spec.runs_on(t["cc"]), "GPU", gpu.describe_target(t), f"cannot run {key}: it needs {spec.needs()}")
    spec.validate(p, shape, smem_limit=limit)
    file, entry = spec.build_target(extra_defines)      # an experiment switch builds its own file
    fn = kc.build(file, entry, {**spec.defines(p), **(extra_defines or {})}, extra_options=spec.compile_options)
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


def check_owner(key: str, shape=(200, 264, 72), **params) -> str:
    """Compare the owner model of catalog entry ``key`` (``spec.owner``) with
    what its ``-DRECORD_OWNER=1`` build records (:func:`record_owner`), element
    by element, on ``shape`` (M, N, K; by default not a multiple of any block
    tile). Live: AssertionError on any difference, else a one-line report.
    Without a GPU: a line saying where the GPU suite runs this check instead.
    Raises ValueError for an entry without an owner model.
    The one owner check of the book (chapters 1-7)."""
    spec = catalog.get(key)
    if spec.owner is None:
        raise ValueError(f"kernel={key!r}: has no owner model in the catalog")
    p = spec.params(**params)
    why = unable(spec, p)
    if not gpu.live() or why:
        return (f"{key}: " + (f"{why}; " if why else "") + ("no GPU in this run; " if not gpu.live() else "")
                + "the GPU suite checks this model against the kernel\n"
                "  (tests/gpu/test_kernels.py::test_owner_model_matches_kernel).")
    got = record_owner(key, shape, **p)
    want = spec.owner(p, shape)
    bad = int((got != want).sum())
    assert bad == 0, f"{key} {p}: the owner model and the kernel disagree on {bad} of {got.size} elements of C"
    return (f"{key} at M, N, K = {tuple(shape)}: the (block, thread) the kernel recorded for all {got.size} "
            "elements of C equals the model.")


def resource_rows(items, shape=(4096, 4096, 4096), label: str = "key+diff") -> tuple[list, str]:
    """Registers, shared memory, spills and theoretical occupancy of each
    configuration; ``items`` are (key, partial params) pairs.

    Live: the kernel compiled here, read from the CUDA driver
    (:meth:`Launch.resources`). Without a GPU: ``nvcc -Xptxas -v`` for sm_90
    (:func:`helpers.runtime.compile.nvcc_check`) and the occupancy model
    (:func:`helpers.models.occupancy.occupancy`) for an H100/H200, or for the simulated
    GPU. An invalid set, or one this GPU cannot run (:func:`unable`), is listed with the
    rule it breaks (nothing compiled). ``label``:
    "key+diff" (the key and the parameters that differ from its defaults) or
    "params" (the partial params as given, "defaults" when empty).
    Returns (rows, where); rows is [] when neither a GPU nor nvcc is here.
    Row keys: "config", "refused" (invalid only), "threads", "registers",
    "shared memory (KiB)", "spill bytes", "spills" ("SPILLS" when the compiled
    kernel uses local memory, else "no"), "blocks/SM", "occupancy"."""
    live = gpu.live()
    if not live and not kc.nvcc_path():
        return [], "needs nvcc or a GPU (neither is here)"

    def one(item):
        key, pt = item
        spec = catalog.get(key)
        p = spec.params(**pt)
        if label == "params":
            name = " ".join(f"{k}={v}" for k, v in pt.items()) or "defaults"
        else:
            diff = {k: v for k, v in p.items() if v != spec.defaults.get(k)}
            name = key + (" " + " ".join(f"{k}={v}" for k, v in diff.items()) if diff else "")
        try:
            r = resources_of(key, shape, **p)
        except ValueError as e:
            why = unable(spec, p)      # a GPU that cannot run it: said in the config cell too
            return {"config": name + (f" [not on this GPU: {why}]" if why else ""), "refused": str(e)}
        spill = r["spill_bytes"]
        return {"config": name, "threads": r["threads"], "registers": r["registers"],
                "shared memory (KiB)": round((r["smem_static"] + r["smem_dynamic"]) / 1024, 1),
                "spill bytes": spill, "spills": "SPILLS" if spill else "no",
                "blocks/SM": r["blocks_per_sm"], "occupancy": f"{r['occupancy']:.0%} ({r['limited_by']})"}

    with ThreadPoolExecutor(max_workers=1 if live else 4) as ex:
        rows = list(ex.map(one, list(items)))
    t = gpu.target()
    arch = f"sm_{t['cc'][0]}{t['cc'][1]}" if t else "sm_90"
    where = ("compiled here; registers, shared memory and local memory from the CUDA driver on "
             + gpu.device_info()["name"] if live else
             f"nvcc -Xptxas -v for {arch} (sm_90a for the Hopper kernels) on this machine (no GPU in this run); spills "
             "are ptxas's spill stores + loads; occupancy from the Occupancy Calculator model for "
             + ("an H100/H200" if t is None else gpu.describe_target(t)))
    return rows, where
