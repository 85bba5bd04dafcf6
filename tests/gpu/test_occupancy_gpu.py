"""The occupancy model against the driver, and the device limits against the device (issue #13).

* ``helpers.runtime.gpu.device_info`` reads every per-SM limit from the device; where the
  device's architecture has a row in ``helpers.models.occupancy.DEVICE_LIMITS`` (the
  Programming Guide's table the CPU side and the simulated GPUs use), the two agree.
* For every shipped configuration (``Kernel.configs()``) of every catalog kernel this GPU
  can run, the blocks per SM of ``helpers.models.occupancy.occupancy`` (fed the registers
  and shared memory of the compiled kernel, read from the driver) equal what the driver's
  own occupancy calculator says: ``cuOccupancyMaxActiveBlocksPerMultiprocessor``
  (``cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor``), for the same block
  size and dynamic shared memory.
* With the capability forced down (``GEMM_BOOK_SIMULATE=t4``) a live GPU measures what a T4
  could run and returns the rest recorded and labelled, without compiling it.

Run ``python scripts/precompile.py --combos 0`` first on a fresh machine (NVRTC builds
cached on disk, all cores); otherwise the first run compiles ~200 configurations serially.
"""
from __future__ import annotations

import pytest

import helpers  # noqa: F401
from helpers.models.occupancy import DEVICE_LIMITS
from helpers.runtime import bench, catalog, gpu, launch

pytestmark = pytest.mark.skipif(not gpu.live(), reason="needs a CUDA GPU (live mode)")

CASES = [(k, i, p) for k, s in catalog.KERNELS.items() for i, p in enumerate(s.configs())]


def test_device_limits_come_from_the_device_and_match_the_table():
    import cupy as cp
    d = gpu.device_info()
    dev = cp.cuda.Device().id
    attr = cp.cuda.runtime.deviceGetAttribute
    assert d["max_blocks_per_sm"] == attr(cp.cuda.runtime.cudaDevAttrMaxBlocksPerMultiprocessor, dev)
    assert d["smem_per_block_optin"] == attr(cp.cuda.runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)
    arch = f"sm_{d['cc'][0]}{d['cc'][1]}"
    if arch not in DEVICE_LIMITS:
        pytest.skip(f"{arch} has no row in DEVICE_LIMITS to compare with")
    want = DEVICE_LIMITS[arch]
    got = {k: launch.device_limits()[k] for k in want}
    assert got == want, f"{d['name']}: the device says {got}, the table says {want}"


@pytest.mark.parametrize("key,i,params", CASES, ids=[f"{k}-{i}" for k, i, _ in CASES])
def test_occupancy_model_matches_the_driver(key, i, params):
    import cupy as cp
    spec = catalog.get(key)
    why = launch.unable(spec, params)
    if why:
        pytest.skip(f"{key}: {why}")
    shape = (4096, 4096, 4096) if spec.op == "gemm" else (4096, 4096)
    L = launch.prepare(key, shape, **params)
    model = L.resources()
    threads = spec.threads(L.params)
    driver = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(L.fn.kernel.ptr, threads, L.smem)
    assert model["blocks_per_sm"] == driver, (
        f"{key} {params}: model {model['blocks_per_sm']} blocks/SM ({model['limited_by']}; {model['limits']}; "
        f"{model['registers']} regs, {model['smem_static']} + {L.smem} B smem, {threads} threads), driver {driver}")


def test_forced_down_to_a_t4_measures_what_a_t4_runs(monkeypatch):
    monkeypatch.setenv(gpu.SIMULATE_VAR, "t4")
    recs = bench.gemm(["warptile", "cp_async"], (512, 512, 512), rounds=1)
    assert recs[0]["source"] == "live" and recs[0]["value"] > 0
    assert recs[1]["source"] == "recorded" and "needs sm_80 or newer; this GPU is sm_75" in recs[1]["title"]
    with pytest.raises(ValueError, match="cannot run cp_async"):
        launch.prepare("cp_async", (512, 512, 512))
