"""Layer 2: every kernel configuration the book ships compiles with nvcc for every
architecture its catalog entry claims (``Kernel.runs_on``: sm_75, sm_80, sm_86, sm_89 and
sm_90, or sm_90a alone for the Hopper kernels), with no local-memory spills and within
that architecture's shared-memory limit. Needs nvcc but no GPU; skipped (with the
reason) when nvcc is absent.

A configuration is the catalog entry's defaults plus each point of its
recorded sweep (``Kernel.configs()``). Entries marked as pitfalls (the
``__launch_bounds__`` demonstration) are expected to spill, and the test
checks that they do. A configuration that needs more shared memory per block than an
architecture allows is skipped there (the catalog refuses it on such a GPU:
``helpers.runtime.launch.unable``); so is an architecture below a kernel's ``min_cc`` (a
GPU of that architecture shows the recorded numbers: tests/test_every_gpu.py). With CUDA
13.0's nvcc the tests read about 980 builds made by 799 nvcc runs, about 845 s of CPU time
(1,014 s for 789 runs while a chapter-5 build compiled all six entries; 1,040 s before
builds were shared across entries), about half of that in wall time on two free cores.

Tiers (tests/conftest.py): the fast tier checks each entry's shipped defaults for the oldest
and the newest architecture it claims; ``pytest --full`` checks every configuration for every
architecture and the instrumented builds. Results are cached on disk (keyed by source,
options and nvcc version), so a second run compiles only what changed.

The nvcc runs are independent. Run as plain ``pytest``, the builds of the tests selected
in this module (``-k`` included), each distinct build once (the entries of a file that
does not read ``ENTRY_`` share a build: ``helpers.runtime.compile.nvcc_defines``; a build
of kernels/05_register_tiling.cu compiles only the entry its ``ENTRY_`` names), start in
the background at the lowest CPU priority as soon as collection ends, and this module runs
last (tests/conftest.py, ``nvcc_build``); its module fixture then stops the background
process and builds what is left on every core, and each test reads its own build from
``nvcc_check``'s cache. Under pytest-xdist (``pytest -n auto tests/test_compile.py``) the
workers share the tests out instead and each compiles what its tests need, once.
"""
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import _progress

from helpers.models.occupancy import DEVICE_LIMITS
from helpers.runtime import catalog, compile as kc

NVCC = kc.nvcc_path()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found (PATH, $CUDA_PATH/bin, /usr/local/cuda/bin): "
                                                     "compile checks need the CUDA toolkit's compiler")
# Every architecture a kernel may claim (CUDA 13's nvcc still builds sm_75: `nvcc --list-gpu-arch`).
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
# per-block opt-in maximum (bytes), CUDA Programming Guide table (helpers.models.occupancy)
SMEM_LIMIT = {**{a: DEVICE_LIMITS[a]["smem_per_block_max"] for a in ARCHS}, "sm_90a": DEVICE_LIMITS["sm_90"]["smem_per_block_max"]}


def _cc(arch: str) -> tuple:
    return int(arch[3]), int(arch[4])


def _claims(spec) -> tuple:
    """The architectures ``spec`` claims to run on: sm_90a alone for arch-specific code."""
    return ("sm_90a",) if spec.arch_specific else tuple(a for a in ARCHS if spec.runs_on(_cc(a)))


CASES = [(key, i, p) for key, spec in catalog.KERNELS.items() for i, p in enumerate(spec.configs())]


def _spills_on_purpose(spec) -> bool:
    return "launch_bounds" in spec.key or "spill" in spec.title.lower()


def _target(spec, params, arch) -> tuple:
    """The architecture the build of ``spec`` at ``params`` is checked for on the
    test's ``arch`` (sm_90a for arch-specific code), or None and why the test skips."""
    if spec.arch_specific:             # sm_90a machine code (chapter 10): one target, checked once
        if arch != "sm_90":
            return None, f"{spec.key} is {spec.needs()}: compiled for that target only"
        arch = "sm_90a"
    elif arch not in _claims(spec):
        return None, (f"{spec.key} needs {spec.needs()}: it claims no {arch} (a GPU of that architecture "
                      "shows its recorded numbers)")
    if spec.smem(params) > SMEM_LIMIT[arch]:
        return None, (f"{spec.key} {params} needs {spec.smem(params)} B of shared memory, more than {arch} "
                      f"allows ({SMEM_LIMIT[arch]}); the catalog refuses it at launch there")
    return arch, ""


def _owner_defines(spec) -> dict:
    return {**spec.defines(spec.defaults), "RECORD_OWNER": 1}


def fast_tier(item) -> bool:
    """The fast tier's share of this module (tests/conftest.py): each entry's shipped
    defaults (configuration 0) for the oldest and the newest architecture it claims, and
    the tests that are not per configuration; the instrumented builds are full-tier only."""
    cs = getattr(item, "callspec", None)
    if item.originalname == "test_instrumented_builds_compile_without_spills":
        return False
    if item.originalname != "test_nvcc_compiles_without_spills" or cs is None:
        return True
    spec = catalog.get(cs.params["key"])
    claims = _claims(spec)
    ends = {"sm_90"} if spec.arch_specific else {claims[0], claims[-1]} if claims else set()
    return cs.params["i"] == 0 and cs.params["arch"] in ends


def _owner_arch(spec) -> str:
    return "sm_90a" if spec.arch_specific else "sm_90"


def nvcc_build(item):
    """(file, entry, defines, arch) of the nvcc build a test of this module reads, or None
    (tests/conftest.py starts these builds in the background)."""
    cs = getattr(item, "callspec", None)
    if cs is None or NVCC is None or "key" not in cs.params:
        return None
    spec = catalog.get(cs.params["key"])
    if item.originalname == "test_nvcc_compiles_without_spills":
        arch, _ = _target(spec, cs.params["params"], cs.params["arch"])
        return (spec.file, spec.entry, spec.defines(cs.params["params"]), arch) if arch else None
    if item.originalname == "test_instrumented_builds_compile_without_spills":
        return spec.file, spec.entry, _owner_defines(spec), _owner_arch(spec)
    return None


@pytest.fixture(scope="module", autouse=True)
def _compile_selected_in_parallel(request, nvcc_background_builds):
    """Fill nvcc_check's cache with the builds of this module's selected tests, each
    distinct build once, all cores busy: those the background process made are read
    from the session's cache, the others are made now. Not under pytest-xdist, where
    every worker would compile every build: there each test compiles its own."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    jobs = {}
    for item in request.session.items:
        job = nvcc_build(item) if getattr(item, "module", None) is request.module else None   # nbval cells have no module
        if job:
            file, entry, defines, arch = job
            jobs.setdefault((file, kc.nvcc_defines(file, entry, defines), arch), job)

    def one(job):
        try:
            kc.nvcc_check(job[0], job[1], job[2], arch=job[3])
        except Exception:        # the test of that build reports it
            pass
    if not jobs:
        return
    t0 = time.monotonic()
    _progress.say(f"nvcc: {len(jobs)} builds for the compile checks (those already in the cache are read)")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        _progress.wait([ex.submit(one, j) for j in jobs.values()], "nvcc builds")
    _progress.done(f"nvcc: {len(jobs)} builds", t0)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("key,i,params", CASES, ids=[f"{k}-{i}" for k, i, _ in CASES])
def test_nvcc_compiles_without_spills(key, i, params, arch):
    spec = catalog.get(key)
    if spec.arch_specific and arch != "sm_90":
        assert not spec.runs_on(_cc(arch)), f"{key} is {spec.needs()} but claims {arch}"
    arch, why = _target(spec, params, arch)
    if arch is None:
        pytest.skip(why)
    r = kc.nvcc_check(spec.file, spec.entry, spec.defines(params), arch=arch)
    assert r["smem_static"] + spec.smem(params) <= SMEM_LIMIT[arch], f"{key} {params}: too much shared memory {r}"
    if _spills_on_purpose(spec):
        assert r["spill_stores"] + r["spill_loads"] > 0, f"{key} is the spill demonstration but does not spill: {r}"
    else:
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, f"{key} {params} spills on {arch}: {r}"


OWNED = [key for key, spec in catalog.KERNELS.items() if spec.owner is not None]


@pytest.mark.parametrize("key", OWNED)
def test_instrumented_builds_compile_without_spills(key):
    """The -DRECORD_OWNER=1 build (the owner check of the GPU suite) compiles
    and does not spill where the kernel does not."""
    spec = catalog.get(key)
    r = kc.nvcc_check(spec.file, spec.entry, _owner_defines(spec), arch=_owner_arch(spec))
    if not _spills_on_purpose(spec):
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, f"{key}: the instrumented build spills: {r}"


def test_compile_error_names_the_line(tmp_path, monkeypatch):
    bad = tmp_path / "99_bad.cu"
    bad.write_text('extern "C" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n')
    monkeypatch.setattr(kc, "KERNEL_DIR", tmp_path)
    with pytest.raises(kc.KernelCompileError) as e:
        kc.nvcc_check("99_bad.cu", "k")
    assert "line 2" in str(e.value) and "undefined_name" in str(e.value)


def test_nvcc_cache_is_keyed_on_what_the_build_reads(tmp_path, monkeypatch):
    """The session's on-disk nvcc cache (tests/conftest.py) returns what nvcc said for the
    same build, and a changed source, define or architecture is compiled again."""
    kdir, cache = tmp_path / "k", tmp_path / "cache"
    kdir.mkdir(), cache.mkdir()
    monkeypatch.setattr(kc, "KERNEL_DIR", kdir)
    monkeypatch.setenv(kc.NVCC_CACHE_VAR, str(cache))
    cu = kdir / "98_cached.cu"
    cu.write_text('extern "C" __global__ void k(float* x) { __shared__ float s[N]; s[threadIdx.x] = x[0];'
                  ' __syncthreads(); x[threadIdx.x] = s[N - 1 - threadIdx.x]; }\n')
    fresh = kc.nvcc_check(cu.name, "k", {"N": 32})
    assert fresh["smem_static"] == 128 and len(list(cache.glob("*.json"))) == 1
    kc._nvcc_check.cache_clear()                       # a new process: only the disk cache
    monkeypatch.setattr(kc, "_nvcc_run", lambda *a: pytest.fail("compiled again instead of reading the cache"))
    assert kc.nvcc_check(cu.name, "k", {"N": 32}) == fresh
    monkeypatch.undo()
    monkeypatch.setattr(kc, "KERNEL_DIR", kdir)
    monkeypatch.setenv(kc.NVCC_CACHE_VAR, str(cache))
    assert kc.nvcc_check(cu.name, "k", {"N": 64})["smem_static"] == 256
    cu.write_text(cu.read_text().replace("float s[N]", "double s[N]"))
    kc._nvcc_check.cache_clear()                       # (this process's cache is keyed on the file name)
    assert kc.nvcc_check(cu.name, "k", {"N": 32})["smem_static"] == 256
    kc.nvcc_check(cu.name, "k", {"N": 32}, arch="sm_80")
    assert len(list(cache.glob("*.json"))) == 4


@pytest.mark.parametrize("tile", ["wide", "narrow"])
@pytest.mark.parametrize("aligned,bf16", [(1, 0), (0, 1)])
def test_the_dispatchers_tile_builds_compile_without_spills(tile, aligned, bf16):
    """The builds chapter 9's runner makes of kernels/09_any_shape.cu (helpers.runtime.anyshape._kernels:
    each tile configuration of helpers.models.anyshape.TILES, fp16 and bf16, both operand paths):
    gemm_any compiles for sm_80 without spills, within the shared memory the runner opts into."""
    from helpers.models import anyshape as model
    from helpers.runtime import anyshape as rt
    cfg = model.TILES[tile]
    defines = {**cfg, "ALIGNED": aligned, "BF16": bf16}
    r = kc.nvcc_check("09_any_shape.cu", "gemm_any", defines, arch="sm_80")
    assert r["smem_static"] + rt.smem(cfg) <= SMEM_LIMIT["sm_80"], r
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, f"{tile} aligned={aligned} bf16={bf16}: {r}"
