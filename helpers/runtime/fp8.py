"""FP8 (e4m3) GEMM data on the device: quantized inputs, tensor maps of bytes, references.

The encoding is done on the host with ``ml_dtypes.float8_e4m3fn`` (round to nearest
even, saturating nothing: the scales keep every value within +-448), then the bytes
are uploaded as ``uint8`` CuPy arrays (CuPy has no fp8 dtype). The reference a
measurement checks against is float64 of the *dequantized* inputs, the exact value the
kernel approximates; the same-run speed reference is cuBLASLt's FP8 GEMM
(``torch._scaled_mm``, per-tensor scales, bf16 out) where torch imports, else cuBLAS
bf16 (``cupy.matmul``) on the dequantized inputs, labelled as such.

Quantization models live in :mod:`helpers.models.fp8` (NumPy, no GPU).
"""
from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass

import numpy as np

from helpers.models import fp8 as qm

from . import bench, checks, gpu, tma, verify

DTYPE = "float8_e4m3"
OUT_TOLERANCE = "bfloat16"            # C is rounded to bf16: its tolerance (verify.TOLERANCE)
_U8 = 0                               # CU_TENSOR_MAP_DATA_TYPE_UINT8 (cuda.h)


def check_tiled_u8(name: str, ptr: int, rows: int, cols: int, box_rows: int, box_cols: int) -> None:
    """ValueError unless a C-contiguous ``rows x cols`` byte matrix at ``ptr`` fits a TMA tensor
    map with a ``box_rows x box_cols`` box and the 128-byte swizzle (the rules of
    :func:`helpers.runtime.tma.check_tiled`, for one-byte elements)."""
    checks.require(ptr % 16 == 0, f"{name}.data.ptr % 16", ptr % 16,
                   "must be 0: TMA reads 16-byte-aligned global addresses")
    checks.require(rows >= 1 and cols >= 1, f"{name}.shape", (rows, cols), "must be >= 1 in both dimensions")
    checks.require(cols % 16 == 0, f"{name}.shape[1]", cols,
                   "must be a multiple of 16: TMA needs the row pitch (K bytes of e4m3) to be a multiple of 16 bytes")
    checks.require(1 <= box_rows <= 256 and 1 <= box_cols <= 128, "box", (box_rows, box_cols),
                   "rows must be 1..256 and columns (bytes) 1..128, the 128-byte swizzle span")


def tensor_map_u8(name: str, x, box_rows: int, box_cols: int = 128):
    """The TMA tensor map (SWIZZLE_128B, out-of-bounds bytes read as 0 = +0.0 in e4m3) of a
    C-contiguous 2-D ``uint8`` CuPy array ``x`` of e4m3 bytes, box ``box_rows x box_cols``.
    Returns the 16 x uint64 structured scalar a kernel takes by value. Raises ValueError
    before the driver is called (:func:`check_tiled_u8`), RuntimeError if the driver refuses."""
    checks.require(getattr(x, "ndim", 0) == 2, f"{name}.ndim", getattr(x, "ndim", None), "must be 2")
    checks.require(str(x.dtype) == "uint8", f"{name}.dtype", str(x.dtype), "must be uint8 (e4m3 bytes)")
    checks.require(bool(x.flags.c_contiguous), f"{name}.flags.c_contiguous", False, "must be C-contiguous")
    rows, cols = (int(s) for s in x.shape)
    ptr = int(x.data.ptr)
    check_tiled_u8(name, ptr, rows, cols, box_rows, box_cols)
    buf = ctypes.create_string_buffer(256)
    addr = (ctypes.addressof(buf) + 127) & ~127
    rc = tma._libcuda()(ctypes.c_void_p(addr), _U8, 2, ctypes.c_void_p(ptr),
                        (ctypes.c_uint64 * 2)(cols, rows), (ctypes.c_uint64 * 1)(cols),
                        (ctypes.c_uint32 * 2)(box_cols, box_rows), (ctypes.c_uint32 * 2)(1, 1),
                        0, tma.SWIZZLE["128B"], 3, 0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled (uint8) failed: CUresult {rc}")
    v = np.zeros(1, dtype=tma.TENSOR_MAP_DTYPE)
    v["d"][0] = np.frombuffer(ctypes.string_at(addr, 128), dtype=np.uint64)
    return v[0]


def torch_fp8():
    """``torch`` when it imports with CUDA and ``_scaled_mm``; else None (torch is optional)."""
    try:
        import torch
        if torch.cuda.is_available() and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
            return torch
    except Exception:
        pass
    return None


def scaled_mm(A8, Bt8, sa, sb, out=None):
    """A callable running cuBLASLt's FP8 GEMM on the same bytes: ``torch._scaled_mm(A, Bt.T,
    scale_a, scale_b, out_dtype=bf16)`` (A row-major, B column-major: cuBLASLt's FP8 layout),
    writing into ``out`` (a CuPy bf16 M x N array, shared through DLPack) when given.
    None when torch is absent."""
    torch = torch_fp8()
    if torch is None:
        return None
    a = torch.from_dlpack(A8).view(torch.float8_e4m3fn)
    b = torch.from_dlpack(Bt8).view(torch.float8_e4m3fn).t()
    s_a, s_b = torch.from_dlpack(sa).reshape(()), torch.from_dlpack(sb).reshape(())
    if out is None:
        return lambda: torch._scaled_mm(a, b, scale_a=s_a, scale_b=s_b, out_dtype=torch.bfloat16)
    o = torch.from_dlpack(out.view(gpu.cupy().uint16)).view(torch.bfloat16)
    return lambda: torch._scaled_mm(a, b, scale_a=s_a, scale_b=s_b, out_dtype=torch.bfloat16, out=o)


@dataclass
class Fp8Inputs(bench.Inputs):
    """:class:`helpers.runtime.bench.Inputs` of an FP8 GEMM: ``arrays`` hold "A" (M, K) and
    "Bt" (N, K) e4m3 bytes (uint8), "SA", "SB" (float32 scales on the device), "C" (M, N,
    bf16, or float32 with ``out_f32``); ``expect`` is float64 of the dequantized inputs;
    ``reference`` cuBLASLt FP8 (or cuBLAS bf16: ``reference_name`` says which);
    ``scaling`` "tensor" or "block"; ``bf16_err`` the relative error of cuBLAS bf16 on the
    dequantized inputs against the same float64 (the accuracy a bf16 GEMM gives)."""
    reference_name: str = ""
    scaling: str = "tensor"
    bf16_err: float | None = None
    out_f32: bool = False
    bf16_run: object = None

    def against_bf16(self) -> "Fp8Inputs":
        """The same data with cuBLAS bf16 on the dequantized inputs as the timed reference."""
        return dataclasses.replace(self, reference=self.bf16_run, reference_name="cuBLAS bf16 (cupy.matmul)")

    def args(self, layout: str = "NT") -> tuple:
        a = self.arrays
        return a["A"], a["Bt"], a["C"]

    def check(self, what: str) -> float:
        """The output against float64 of the dequantized inputs, with bf16's tolerance (C is
        rounded to bf16; an fp32 C is judged by the same bound). Raises WrongResult."""
        return verify.check(self.output, self.expect, OUT_TOLERANCE, what=what)


def inputs(shape, scaling: str = "tensor", *, dist: str = "normal", out_f32: bool = False, seed=None,
           bf16_reference: bool = True, reference: str = "auto") -> Fp8Inputs:
    """Fresh random FP8 GEMM inputs of ``shape`` (M, N, K) on the device.

    ``dist``: "normal" (standard normal) or "positive" (uniform in [0, 1): sums grow with K).
    ``scaling``: "tensor" (one scale per operand, amax / 448) or "block" (1 x 128 strips of A,
    128 x 128 blocks of B: :func:`helpers.models.fp8.quantize_blocks`). ``out_f32``: C in
    float32 (the accuracy runs). ``bf16_reference``: also compute cuBLAS bf16's error on the
    dequantized inputs. ``reference``: "auto" (cuBLASLt FP8 where torch imports, else cuBLAS
    bf16) or "bf16" (cuBLAS bf16 on the dequantized inputs). Raises ValueError for a bad argument before anything reaches the GPU.
    """
    checks.require(len(shape) == 3 and all(isinstance(v, (int, np.integer)) and v >= 1 for v in shape),
                   "shape", tuple(shape), "must be (M, N, K), positive integers")
    checks.require(scaling in ("tensor", "block"), "scaling", scaling, "must be 'tensor' or 'block'")
    checks.require(dist in ("normal", "positive"), "dist", dist, "must be 'normal' or 'positive'")
    checks.require(reference in ("auto", "bf16"), "reference", reference, "must be 'auto' or 'bf16'")
    M, N, K = (int(v) for v in shape)
    cp = gpu.cupy()
    g = cp.random.default_rng(seed)
    draw = (lambda r, c: g.standard_normal((r, c), dtype=cp.float32)) if dist == "normal" else \
        (lambda r, c: g.random((r, c), dtype=cp.float32))
    table = cp.asarray(qm.decode_table())
    if scaling == "tensor":
        (A8, dA, SA), (Bt8, dB, SB) = _per_tensor(cp, draw(M, K), table), _per_tensor(cp, draw(N, K), table)
    else:
        A8, dA, SA = _per_block(cp, draw(M, K), 1, 128, table)      # SA: (kblocks, M)
        Bt8, dB, SB = _per_block(cp, draw(N, K), 128, 128, table)   # SB: (kblocks, nblocks)
    expect = dA.astype(cp.float64) @ dB.astype(cp.float64).T
    C = cp.empty((M, N), cp.float32 if out_f32 else verify.np_dtype("bfloat16"))
    sa_d, sb_d = SA, SB
    bf16_err = None
    bA, bB = dA.astype(verify.np_dtype("bfloat16")), cp.ascontiguousarray(dB.T).astype(verify.np_dtype("bfloat16"))
    if bf16_reference:
        bf16_err = verify.rel_err(cp.matmul(bA, bB), expect)
    ref, name = None, ""
    if reference == "bf16":
        pass
    elif scaling == "tensor":
        ref = scaled_mm(A8, Bt8, sa_d, sb_d, out=cp.empty((M, N), verify.np_dtype("bfloat16")))
        name = "cuBLASLt FP8 (torch._scaled_mm)" if ref else ""
    else:                                                    # block scales: per-tensor cuBLASLt on the same bytes
        one = cp.ones(1, cp.float32)
        ref = scaled_mm(A8, Bt8, one, one, out=cp.empty((M, N), verify.np_dtype("bfloat16")))
        name = "cuBLASLt FP8 per-tensor (torch._scaled_mm)" if ref else ""
    out = cp.empty((M, N), verify.np_dtype("bfloat16"))
    bf16_run = lambda: cp.matmul(bA, bB, out=out)  # noqa: E731
    if ref is None:
        ref = bf16_run
        name = "cuBLAS bf16 (cupy.matmul)" + ("" if reference == "bf16" else "; torch absent")
    return Fp8Inputs("gemm", (M, N, K), DTYPE, {"A": A8, "Bt": Bt8, "C": C, "SA": sa_d, "SB": sb_d},
                     expect, ref, reference_name=name, scaling=scaling, bf16_err=bf16_err, out_f32=out_f32,
                     bf16_run=bf16_run)


def _per_tensor(cp, x, table):
    """(bytes, dequantized float32, scale as a 1-float device array) of one matrix: the scale
    amax / 448 on the device, the encoding on the host (ml_dtypes), the decoding by table."""
    amax = float(cp.abs(x).max())
    s = amax / qm.E4M3_MAX if amax > 0 else 1.0
    q = cp.asarray(qm.encode(cp.asnumpy(x / cp.float32(s))))
    return q, table[q] * cp.float32(s), cp.asarray([s], dtype=cp.float32)


def _per_block(cp, x, br, bc, table):
    """(bytes, dequantized float32, scales transposed to (column blocks, row blocks)) of one
    matrix with one scale per ``br x bc`` block (as :func:`helpers.models.fp8.quantize_blocks`)."""
    R, C = x.shape
    gr, gc = -(-R // br), -(-C // bc)
    pad = cp.zeros((gr * br, gc * bc), cp.float32)
    pad[:R, :C] = cp.abs(x)
    amax = pad.reshape(gr, br, gc, bc).max(axis=(1, 3))
    S = cp.where(amax > 0, amax / cp.float32(qm.E4M3_MAX), cp.float32(1)).astype(cp.float32)
    full = cp.repeat(cp.repeat(S, br, axis=0), bc, axis=1)[:R, :C]
    q = cp.asarray(qm.encode(cp.asnumpy(x / full)))
    return q, table[q] * full, cp.ascontiguousarray(S.T)


def measure(L, data: Fp8Inputs, *, check: bool = True, timed: bool = True, rounds: int = 5,
            budget_ms: float = 400.0) -> dict:
    """:func:`helpers.runtime.bench.measure` of a prepared FP8 launch ``L``
    (:func:`helpers.runtime.launch.prepare`) on ``data``: checked against float64 of the
    dequantized inputs, timed against ``data.reference`` in alternating rounds. Returns the
    record dict, its ``reference`` naming the reference actually timed, plus ``scaling`` and
    ``bf16_rel_err`` (cuBLAS bf16's error on the same dequantized inputs)."""
    M, N, K = data.shape
    a = data.arrays

    def run(A, Bt, C):
        L(A, Bt, C, M, N, K, a["SA"], a["SB"])
    spec = L.spec
    rec = bench.measure(run, data.shape, DTYPE, "gemm", data=data, check=check, timed=timed, rounds=rounds,
                        budget_ms=budget_ms, chapter=spec.chapter, kernel=spec.key, title=spec.title,
                        params=L.params).as_dict()
    return {**rec, "reference": data.reference_name, "scaling": data.scaling, "bf16_rel_err": data.bf16_err}
