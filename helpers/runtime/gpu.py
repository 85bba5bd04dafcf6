"""Is there a GPU, and what is it?

Everything in the book runs in one of two modes:

* **live**: CuPy sees a CUDA device, kernels are compiled and timed here;
* **recorded**: no device (a laptop, CPU-only CI, the static book). Figures are
  still computed, kernels are compile-checked with ``nvcc`` when it exists, and
  measurements come from ``results/<gpu>.json`` with their provenance.

Nothing in this module touches the GPU unless :func:`live` is True.
"""
from __future__ import annotations

import functools
import os
import re

# Per-SM FP32 FMA lanes by compute capability. Source: CUDA C++ Programming
# Guide, "Arithmetic Instructions" throughput table (32-bit floating-point
# add, multiply, multiply-add: results per clock cycle per multiprocessor).
FP32_LANES_PER_SM = {
    (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
    (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128,
}


@functools.lru_cache(maxsize=1)
def live() -> bool:
    """True when CuPy is importable and sees at least one CUDA device.

    Set ``GEMM_BOOK_FORCE_RECORDED=1`` to force recorded mode on a GPU machine
    (used by the tests to exercise the recorded path).
    """
    if os.environ.get("GEMM_BOOK_FORCE_RECORDED") == "1":
        return False
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:  # ImportError, or a CUDA driver that cannot load
        return False


def cupy():
    """Import CuPy, raising a clear RuntimeError in recorded mode."""
    if not live():
        raise RuntimeError(
            "no CUDA device is visible (recorded mode): this call needs a GPU. "
            "Run the notebook on a GPU machine, or read the recorded results.")
    import cupy as cp
    return cp


@functools.lru_cache(maxsize=1)
def device_info() -> dict:
    """Spec sheet of the current device, read from the CUDA runtime.

    Returns a dict with ``name``, ``cc`` (tuple), ``sms``, ``clock_MHz`` (SM
    boost clock), ``mem_clock_MHz``, ``bus_bits``, ``smem_per_block_optin``
    (bytes), ``smem_per_sm`` (bytes), ``regs_per_sm``, ``max_threads_per_sm``,
    ``l2_bytes``, ``fp32_peak_TFLOPs`` (SMs x FP32 lanes x 2 x clock) and
    ``dram_peak_GBps`` (2 x memory clock x bus width, the DDR formula).
    Raises RuntimeError in recorded mode.
    """
    cp = cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    cc = (int(props["major"]), int(props["minor"]))
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    clock_mhz = props.get("clockRate", 0) / 1000.0
    if not clock_mhz:  # CUDA 13 removed clockRate from cudaDeviceProp
        clock_mhz = cp.cuda.runtime.deviceGetAttribute(13, cp.cuda.Device().id) / 1000.0
    mem_mhz = props.get("memoryClockRate", 0) / 1000.0
    if not mem_mhz:
        mem_mhz = cp.cuda.runtime.deviceGetAttribute(36, cp.cuda.Device().id) / 1000.0
    bus = props.get("memoryBusWidth", 0) or cp.cuda.runtime.deviceGetAttribute(37, cp.cuda.Device().id)
    lanes = FP32_LANES_PER_SM.get(cc, 128)
    sms = int(props["multiProcessorCount"])
    return {
        "name": name, "cc": cc, "sms": sms,
        "clock_MHz": clock_mhz, "mem_clock_MHz": mem_mhz, "bus_bits": int(bus),
        "smem_per_block_optin": int(props["sharedMemPerBlockOptin"]),
        "smem_per_sm": int(props["sharedMemPerMultiprocessor"]),
        "regs_per_sm": int(props["regsPerMultiprocessor"]),
        "max_threads_per_sm": int(props["maxThreadsPerMultiProcessor"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "fp32_peak_TFLOPs": sms * lanes * 2 * clock_mhz * 1e6 / 1e12,
        "dram_peak_GBps": 2 * mem_mhz * 1e6 * bus / 8 / 1e9,
    }


def arch() -> str:
    """``sm_XY`` of the current device (``sm_90`` on an H100/H200)."""
    major, minor = device_info()["cc"]
    return f"sm_{major}{minor}"


def slug(name: str) -> str:
    """File-name slug of a GPU name: 'NVIDIA H200' -> 'h200',
    'NVIDIA A100-SXM4-80GB' -> 'a100-sxm4-80gb', 'Tesla T4' -> 't4'."""
    s = name.lower()
    s = re.sub(r"^(nvidia|tesla|geforce|quadro)\s+", "", s)
    s = re.sub(r"^(nvidia|tesla|geforce|quadro)\s+", "", s)
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"
