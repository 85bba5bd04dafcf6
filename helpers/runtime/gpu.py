"""Is there a GPU, and what is it?

Everything in the book runs in one of two modes:

* **live**: CuPy sees a CUDA device, kernels are compiled and timed here;
* **recorded**: no device (a laptop, CPU-only CI, the static book). Figures are
  still computed, kernels are compile-checked with ``nvcc`` when it exists, and
  measurements come from ``results/<gpu>.json`` with their provenance.

Nothing in this module touches the GPU unless :func:`live` is True.

**Simulated GPUs.** ``GEMM_BOOK_SIMULATE=t4`` (or ``l4``, ``a100``, ``h200``) makes the
book decide as if it ran on that GPU: :func:`capability` and :func:`target` return its
compute capability, SM count and per-SM limits (:data:`SIMULATED`), so a chapter shows
live only what that GPU could run and labels the rest as recorded. Without a GPU this
is recorded mode pretending to be that GPU (what CPU-only CI tests); on a real GPU it
forces the capability down (an H200 told ``t4`` measures live only what a T4 can run,
and says which GPU measured it). Unset, the device decides (:func:`device_info`).
"""
from __future__ import annotations

import functools
import os
import re

from helpers.models.occupancy import DEVICE_LIMITS

# Per-SM FP32 FMA lanes by compute capability. Source: CUDA C++ Programming
# Guide, "Arithmetic Instructions" throughput table (32-bit floating-point
# add, multiply, multiply-add: results per clock cycle per multiprocessor).
FP32_LANES_PER_SM = {
    (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
    (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128,
}


# The GPUs GEMM_BOOK_SIMULATE can stand for. SM counts: NVIDIA's data sheets and
# whitepapers (Tesla T4: 40 SMs, Turing whitepaper; L4: 58 SMs, Ada whitepaper / L4
# data sheet; A100: 108 SMs, Ampere A100 whitepaper; H200: 132 SMs, as the H100 SXM5 in
# the Hopper whitepaper and the recorded results/h200.json). Per-SM and per-block limits:
# :data:`helpers.models.occupancy.DEVICE_LIMITS` of their architecture (CUDA C++
# Programming Guide, "Technical Specifications per Compute Capability").
SIMULATED = {
    "t4": {"name": "Tesla T4", "cc": (7, 5), "sms": 40, **DEVICE_LIMITS["sm_75"]},
    "l4": {"name": "NVIDIA L4", "cc": (8, 9), "sms": 58, **DEVICE_LIMITS["sm_89"]},
    "a100": {"name": "NVIDIA A100", "cc": (8, 0), "sms": 108, **DEVICE_LIMITS["sm_80"]},
    "h200": {"name": "NVIDIA H200", "cc": (9, 0), "sms": 132, **DEVICE_LIMITS["sm_90"]},
}
SIMULATE_VAR = "GEMM_BOOK_SIMULATE"


def simulated() -> dict | None:
    """The :data:`SIMULATED` GPU named by ``GEMM_BOOK_SIMULATE`` (with ``"slug"`` added),
    or None when it is unset or empty. An unknown name is a ValueError listing the known ones."""
    name = os.environ.get(SIMULATE_VAR, "").strip().lower()
    if not name:
        return None
    if name not in SIMULATED:
        raise ValueError(f"{SIMULATE_VAR}={name!r}: must be one of {', '.join(SIMULATED)} (or unset)")
    return {**SIMULATED[name], "slug": name}


def target() -> dict | None:
    """The GPU the book decides for: the simulated one (:func:`simulated`), else this
    machine's (:func:`device_info`, live), else None (recorded mode, nothing simulated).
    Keys: ``name``, ``cc``, ``sms`` and the per-SM limits of :data:`DEVICE_LIMITS`
    (``regs_per_sm``, ``max_threads_per_sm``, ``max_blocks_per_sm``, ``smem_per_sm``,
    ``smem_per_block_max``, ``smem_reserved_per_block``, ...), ``simulated`` (bool)."""
    sim = simulated()
    if sim is not None:
        return {**sim, "simulated": True}
    return this_device() if live() else None


def this_device() -> dict:
    """This machine's GPU in the shape of :func:`target` (limits read from the device by
    :func:`device_info`; the register allocation unit and the 255-register cap, which no
    device attribute reports, from :data:`DEVICE_LIMITS`). Raises RuntimeError in recorded mode."""
    d = device_info()
    return {**DEVICE_LIMITS["sm_90"], "name": d["name"], "cc": d["cc"], "sms": d["sms"],
            **{k: d[k] for k in ("regs_per_sm", "max_threads_per_sm", "max_blocks_per_sm", "smem_per_sm",
                                 "smem_reserved_per_block")},
            "smem_per_block_max": d["smem_per_block_optin"], "simulated": False}


def capability() -> tuple | None:
    """Compute capability (major, minor) the book decides with: :func:`target`'s, or None."""
    t = target()
    return None if t is None else tuple(t["cc"])


def describe_target(t: dict | None = None) -> str:
    """"sm_75 (Tesla T4, simulated: GEMM_BOOK_SIMULATE=t4)", "sm_90 (NVIDIA H200)", or "no GPU"."""
    t = target() if t is None else t
    if t is None:
        return "no GPU"
    s = f"sm_{t['cc'][0]}{t['cc'][1]} ({t['name']}"
    return s + (f", simulated: {SIMULATE_VAR}={t['slug']})" if t.get("simulated") else ")")


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


def recorded_reason() -> str | None:
    """Why this process runs in recorded mode, in words a reader can act on (None when live):
    GEMM_BOOK_FORCE_RECORDED is set, CuPy is not installed, CuPy did not load, or CuPy sees no
    CUDA device."""
    if os.environ.get("GEMM_BOOK_FORCE_RECORDED") == "1":
        return "GEMM_BOOK_FORCE_RECORDED=1 is set"
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed; on a GPU machine, python -m helpers.colab --cupy installs the matching wheel"
    except Exception as e:  # a broken install, a CUDA library that cannot load
        return f"CuPy did not load ({type(e).__name__}: {e})"
    try:
        return None if cupy.cuda.is_available() else "CuPy sees no CUDA device"
    except Exception as e:
        return f"CuPy cannot reach a CUDA driver ({type(e).__name__}: {e})"


def cupy():
    """Import CuPy, raising a clear RuntimeError in recorded mode (naming why: :func:`recorded_reason`)."""
    if not live():
        raise RuntimeError(
            f"this call needs a GPU, and this process runs in recorded mode: {recorded_reason() or 'no CUDA device'}. "
            "Run the notebook on a GPU machine, or read the recorded results.")
    import cupy as cp
    return cp


# cudaDeviceAttr numbers (CUDA runtime API, driver_types.h), for CuPy builds whose
# getDeviceProperties lacks a field.
_ATTR = {"clockRate": 13, "memoryClockRate": 36, "memoryBusWidth": 37, "maxThreadsPerMultiProcessor": 39,
         "sharedMemPerMultiprocessor": 81, "regsPerMultiprocessor": 82, "sharedMemPerBlockOptin": 97,
         "maxBlocksPerMultiProcessor": 106, "reservedSharedMemPerBlock": 111}


@functools.lru_cache(maxsize=1)
def device_info() -> dict:
    """Spec sheet of the current device, read from the CUDA runtime.

    Returns a dict with ``name``, ``cc`` (tuple), ``sms``, ``clock_MHz`` (SM
    boost clock), ``mem_clock_MHz``, ``bus_bits``, ``smem_per_block_optin``
    (bytes), ``smem_per_sm`` (bytes), ``smem_reserved_per_block`` (bytes),
    ``regs_per_sm``, ``max_threads_per_sm``, ``max_blocks_per_sm``,
    ``l2_bytes``, ``fp32_peak_TFLOPs`` (SMs x FP32 lanes x 2 x clock) and
    ``dram_peak_GBps`` (2 x memory clock x bus width, the DDR formula). Every
    limit comes from the device (cudaGetDeviceProperties, or cudaDeviceGetAttribute
    where CuPy's properties lack the field), never from a table.
    Raises RuntimeError in recorded mode.
    """
    cp = cupy()
    dev = cp.cuda.Device().id
    props = cp.cuda.runtime.getDeviceProperties(dev)

    def field(key: str) -> int:
        v = props.get(key, 0)
        return int(v) if v else int(cp.cuda.runtime.deviceGetAttribute(_ATTR[key], dev))

    cc = (int(props["major"]), int(props["minor"]))
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    clock_mhz = field("clockRate") / 1000.0          # CUDA 13 removed clockRate from cudaDeviceProp
    mem_mhz = field("memoryClockRate") / 1000.0
    bus = field("memoryBusWidth")
    lanes = FP32_LANES_PER_SM.get(cc, 128)
    sms = int(props["multiProcessorCount"])
    return {
        "name": name, "cc": cc, "sms": sms,
        "clock_MHz": clock_mhz, "mem_clock_MHz": mem_mhz, "bus_bits": int(bus),
        "smem_per_block_optin": field("sharedMemPerBlockOptin"),
        "smem_per_sm": field("sharedMemPerMultiprocessor"),
        "smem_reserved_per_block": int(props.get("reservedSharedMemPerBlock",
                                                 cp.cuda.runtime.deviceGetAttribute(_ATTR["reservedSharedMemPerBlock"], dev))),
        "regs_per_sm": field("regsPerMultiprocessor"),
        "max_threads_per_sm": field("maxThreadsPerMultiProcessor"),
        "max_blocks_per_sm": field("maxBlocksPerMultiProcessor"),
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
