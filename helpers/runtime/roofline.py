"""Ceilings of the GPU in front of you, and the roofline that places each kernel.

The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful
visual performance model for multicore architectures", CACM 52(4), 2009):
a kernel of arithmetic intensity I (FLOP per byte of DRAM traffic) cannot
run faster than ``min(peak_compute, I * bandwidth)``. We draw one memory roof
(the measured device-to-device copy bandwidth) and one compute roof per unit:
FP32 on the CUDA cores (the spec figure, SMs x lanes x 2 x clock, and what
cuBLAS SGEMM reaches) and the Tensor Cores (what cuBLAS reaches in fp16/bf16).
"""
from __future__ import annotations

from . import catalog, gpu, results, timing, verify

CUBLAS_DTYPES = ("float32", "float16", "bfloat16")


def measure_ceilings(n: int = 4096, copy_bytes: int = 1 << 30) -> dict:
    """Measure this GPU's ceilings now (needs a GPU; about 2 s).

    Returns {"copy_GBps": device-to-device copy of ``copy_bytes`` (read + write
    counted), "cublas_TFLOPs": {dtype: cuBLAS n^3 GEMM; no bfloat16 before sm_80},
    "spec": device_info()}.
    """
    cp = gpu.cupy()
    src = cp.random.default_rng().standard_normal(copy_bytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    copy = timing.gbps(2 * src.nbytes, timing.time_ms(timing.memcpy_d2d(dst, src))["ms"])
    del src, dst
    cub = {}
    for dt in CUBLAS_DTYPES:
        if dt == "bfloat16" and gpu.device_info()["cc"] < (8, 0):   # no bf16 GEMM before sm_80: no roof
            continue
        A, B = verify.random_matrix((n, n), dt), verify.random_matrix((n, n), dt)
        C = cp.empty((n, n), dtype=A.dtype)
        cub[dt] = round(timing.tflops(timing.gemm_flops(n, n, n),
                                      timing.time_ms(timing.cublas_gemm(A, B, C))["ms"]), 1)
    info = gpu.device_info()
    return {"copy_GBps": round(copy, 1), "cublas_TFLOPs": cub,
            "spec": {k: (list(v) if isinstance(v, tuple) else v) for k, v in info.items()}}


def ceilings() -> dict:
    """Live: :func:`measure_ceilings`. Recorded: the ceilings of results/<gpu>.json.
    Either way the dict carries ``source`` ("live"/"recorded") and ``where``."""
    if gpu.live():
        c = measure_ceilings()
        return {**c, "source": "live", "where": results.where(True)}
    data = results.load()
    return {**data.get("ceilings", {}), "source": "recorded", "where": results.where(False, data["provenance"])}


def intensity_min(M: int, N: int, K: int, in_bytes: int = 4, out_bytes: int = 4) -> float:
    """FLOP per byte when A and B are read once and C written once (the best any kernel can do)."""
    return timing.gemm_flops(M, N, K) / timing.gemm_min_bytes(M, N, K, in_bytes, out_bytes)


def intensity_kernel(key: str, params: dict, shape) -> float | None:
    """FLOP per byte the kernel's own loads and stores request (catalog ``global_bytes``);
    None when the catalog has no traffic model for it."""
    spec = catalog.get(key)
    if spec.global_bytes is None or spec.op != "gemm":
        return None
    return timing.gemm_flops(*shape) / spec.global_bytes(spec.params(**params), tuple(shape))
