"""Hopper's data paths as models: the TMA swizzle, the wgmma matrix descriptor,
the m64nNk16 accumulator layout and the mbarrier ring of a warp-specialized GEMM.

Plain Python/NumPy (no GPU). Each function describes what ``kernels/10_hopper.cu``
really does, so figures can draw it and GPU tests can compare it with what the
kernel itself wrote (``tests/gpu/test_hopper_gpu.py``).

Sources:

- **Swizzle.** CUDA Driver API, ``CUtensorMapSwizzle``, and PTX ISA 8.x,
  "Tensor Memory Access: swizzling modes" (section 5.5.x): with
  ``CU_TENSOR_MAP_SWIZZLE_128B`` the 16-byte chunk ``c`` of a 128-byte row ``r``
  of the box lands at chunk ``c ^ (r % 8)``; 64B and 32B XOR with ``r % 4`` and
  ``r % 2`` of 64- and 32-byte rows. Written on byte addresses inside a
  1024-byte-aligned tile: bits 4..6 of the address are XORed with bits 7..9
  (``swizzle_address``). Verified on the H200 for 128B with a 64 x 64 uint16
  box (``../shared/reference/hopper-notes.md``).
- **Matrix descriptor.** PTX ISA 8.x, "Matrix Descriptor Format" of
  ``wgmma.mma_async`` (section 9.7.15.5.1): a 64-bit value with the start
  address (bits 0-13), the leading-dimension byte offset (16-29), the stride
  byte offset (32-45), all three in units of 16 bytes, the base offset (49-51)
  and the swizzle mode (62-63: 0 none, 1 128B, 2 64B, 3 32B).
- **Accumulator layout.** PTX ISA 8.x, "Register fragments of wgmma .m64nNk16"
  (the D matrix figure): warp ``w`` of the warpgroup owns rows 16w..16w+15; lane
  ``l`` (g = l // 4, q = l % 4) holds, for each 8-column block ``j``, registers
  4j..4j+3 at (16w+g, 8j+2q), (16w+g, 8j+2q+1), (16w+g+8, 8j+2q), (16w+g+8, 8j+2q+1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Swizzle modes: bytes per swizzled row, and the descriptor's 2-bit code.
SWIZZLE_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
DESCRIPTOR_SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
_CODE_TO_SWIZZLE = {v: k for k, v in DESCRIPTOR_SWIZZLE_CODE.items()}
CHUNK = 16          # bytes: the unit a swizzle permutes


def _check_mode(mode: str) -> None:
    if mode not in SWIZZLE_BYTES:
        raise ValueError(f"mode={mode!r}: must be one of {sorted(SWIZZLE_BYTES)}")


def swizzle_address(addr, mode: str = "128B"):
    """Byte offset inside a 1024-byte-aligned tile where TMA puts logical byte ``addr``.

    ``addr`` is the offset the box element would have in a plain row-major tile
    whose rows are ``SWIZZLE_BYTES[mode]`` bytes long (an int or an integer
    array). The swizzle XORs the 16-byte chunk index (address bits 4..) with the
    row index inside the 8-row (128B), 4-row (64B) or 2-row (32B) pattern:
    ``addr ^ (((addr >> 7) & m) << 4)`` with ``m = 7, 3, 1``. Raises ValueError
    for an unknown ``mode``.
    """
    _check_mode(mode)
    mask = {"none": 0, "32B": 1, "64B": 3, "128B": 7}[mode]
    a = np.asarray(addr, dtype=np.int64)
    out = a ^ (((a >> 7) & mask) << 4)
    return int(out) if np.ndim(addr) == 0 else out


def tma_box_layout(rows: int, cols: int, elem_bytes: int = 2, mode: str = "128B") -> np.ndarray:
    """Where each element of a TMA box lands in shared memory.

    The box is ``rows x cols`` elements of ``elem_bytes`` bytes, its inner
    dimension (``cols``) contiguous; with a swizzle the inner dimension must span
    exactly the swizzle width (64 two-byte elements for 128B). Returns an int
    array ``(rows, cols)`` of byte offsets from the start of the tile.
    Raises ValueError if the row length does not match the mode.
    """
    _check_mode(mode)
    row_bytes = cols * elem_bytes
    if mode != "none" and row_bytes != SWIZZLE_BYTES[mode]:
        raise ValueError(f"cols * elem_bytes = {row_bytes}: must equal {SWIZZLE_BYTES[mode]} bytes "
                         f"for the {mode} swizzle (the box's inner dimension spans one swizzle row)")
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return swizzle_address(r * row_bytes + c * elem_bytes, mode)


def chunk_map(rows: int, mode: str = "128B") -> np.ndarray:
    """``(rows, 8)`` array: the shared-memory chunk (0..7) that logical chunk c of row r lands in."""
    _check_mode(mode)
    r, c = np.meshgrid(np.arange(rows), np.arange(8), indexing="ij")
    return (swizzle_address(r * 128 + c * CHUNK, mode) % 128) // CHUNK


# --------------------------------------------------------------------------- descriptor
@dataclass(frozen=True)
class MatrixDescriptor:
    """The fields of a wgmma shared-memory matrix descriptor, in bytes.

    ``start`` is the shared-memory address of the first 8 x 16-byte core block,
    ``lbo`` the leading-dimension byte offset, ``sbo`` the stride byte offset,
    ``base_offset`` the 3-bit pattern offset (0 for 1024-byte-aligned tiles),
    ``swizzle`` one of "none", "32B", "64B", "128B".
    """
    start: int
    lbo: int
    sbo: int
    swizzle: str = "128B"
    base_offset: int = 0

    def encode(self) -> int:
        """The 64-bit value the kernel passes to ``wgmma.mma_async``.

        Raises ValueError when an address or offset is not a multiple of 16
        bytes or does not fit its 14-bit field (in units of 16 bytes).
        """
        for name, v in (("start", self.start), ("lbo", self.lbo), ("sbo", self.sbo)):
            if v % 16:
                raise ValueError(f"{name}={v}: must be a multiple of 16 bytes")
            if not 0 <= v >> 4 < 1 << 14:
                raise ValueError(f"{name}={v}: must be in [0, {16 << 14}) bytes (14-bit field of 16-byte units)")
        if not 0 <= self.base_offset < 8:
            raise ValueError(f"base_offset={self.base_offset}: must be in 0..7")
        if self.swizzle not in DESCRIPTOR_SWIZZLE_CODE:
            raise ValueError(f"swizzle={self.swizzle!r}: must be one of {sorted(DESCRIPTOR_SWIZZLE_CODE)}")
        return ((self.start >> 4) | (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32
                | self.base_offset << 49 | DESCRIPTOR_SWIZZLE_CODE[self.swizzle] << 62)

    @classmethod
    def decode(cls, desc: int) -> "MatrixDescriptor":
        """Split a 64-bit descriptor into its fields (the inverse of :meth:`encode`)."""
        desc = int(desc)
        if not 0 <= desc < 1 << 64:
            raise ValueError(f"desc={desc}: must be an unsigned 64-bit value")
        return cls(start=(desc & 0x3FFF) << 4, lbo=((desc >> 16) & 0x3FFF) << 4,
                   sbo=((desc >> 32) & 0x3FFF) << 4, base_offset=(desc >> 49) & 7,
                   swizzle=_CODE_TO_SWIZZLE[(desc >> 62) & 3])

    def fields(self) -> list[dict]:
        """One row per bit field: name, bits, value in the descriptor, meaning in bytes."""
        d = self.encode()
        return [
            {"field": "start address", "bits": "0-13", "raw": d & 0x3FFF, "bytes": self.start},
            {"field": "leading byte offset (LBO)", "bits": "16-29", "raw": (d >> 16) & 0x3FFF, "bytes": self.lbo},
            {"field": "stride byte offset (SBO)", "bits": "32-45", "raw": (d >> 32) & 0x3FFF, "bytes": self.sbo},
            {"field": "base offset", "bits": "49-51", "raw": self.base_offset, "bytes": None},
            {"field": "swizzle mode", "bits": "62-63", "raw": DESCRIPTOR_SWIZZLE_CODE[self.swizzle],
             "bytes": self.swizzle},
        ]


def operand_descriptors(BM: int, BN: int, BK: int, k16: int = 0, a_base: int = 0,
                        b_base: int | None = None, elem_bytes: int = 2) -> dict:
    """The descriptors of k16 step ``k16`` of one stage, as ``kernels/10_hopper.cu`` builds them.

    A (BM x BK, K-major, 128B swizzle): rows of 64 elements (128 bytes), 8-row
    core groups 1024 bytes apart (SBO); K advances 32 bytes per k16 step inside
    the swizzle row (LBO unused for a swizzled K-major operand: 16).
    B (BK x BN, N-major, "transposed" for wgmma, 128B swizzle): stored as BN/64
    TMA boxes of BK rows x 128 bytes; 64-column atoms ``BK * 128`` bytes apart
    (LBO), 8-row groups along K 1024 bytes apart (SBO); K advances 16 rows
    (2048 bytes) per k16 step. Raises ValueError for BK not a multiple of 16 or
    larger than 64 (one swizzle row of A), or BN not a multiple of 64.
    """
    if BK % 16 or not 16 <= BK <= 64:
        raise ValueError(f"BK={BK}: must be 16, 32, 48 or 64 (k16 steps inside one 128-byte swizzle row)")
    if BN % 64:
        raise ValueError(f"BN={BN}: must be a multiple of 64 (whole 128-byte B atoms)")
    if not 0 <= k16 < BK // 16:
        raise ValueError(f"k16={k16}: must be in 0..{BK // 16 - 1}")
    if b_base is None:
        b_base = a_base + BM * BK * elem_bytes
    a = MatrixDescriptor(start=a_base + k16 * 16 * elem_bytes, lbo=16, sbo=8 * 128)
    b = MatrixDescriptor(start=b_base + k16 * 16 * 128, lbo=BK * 128, sbo=8 * 128)
    return {"A": a, "B": b}


# --------------------------------------------------------------------------- accumulators
def accumulator_owner(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Which thread of the warpgroup holds which element of an m64nNk16 fp32 accumulator.

    Returns ``(thread, register)``, two int arrays of shape ``(64, n)``:
    ``thread`` in 0..127 (threadIdx.x % 128), ``register`` in 0..n/2-1 (the
    index into the thread's ``float d[n / 2]``). Raises ValueError unless ``n``
    is a multiple of 8 in 8..256 (the wgmma N sizes).
    """
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"n={n}: must be a multiple of 8 in 8..256")
    thread = np.empty((64, n), dtype=np.int32)
    reg = np.empty((64, n), dtype=np.int32)
    for t in range(128):
        w, lane = divmod(t, 32)
        g, q = divmod(lane, 4)
        for j in range(n // 8):
            for i in range(4):
                row = 16 * w + g + 8 * (i >> 1)
                col = 8 * j + 2 * q + (i & 1)
                thread[row, col], reg[row, col] = t, 4 * j + i
    return thread, reg


# --------------------------------------------------------------------------- pipeline
def pipeline_schedule(stages: int, k_tiles: int, t_load: float, t_mma: float,
                      t_issue: float = 0.05) -> list[dict]:
    """A model of the full/empty mbarrier ring of a warp-specialized GEMM (not a measurement).

    The producer issues the TMA load of k-tile ``i`` into stage ``i % stages``
    once that stage is empty (tile ``i - stages`` was consumed), then the load
    takes ``t_load``; the consumer waits on the stage's full barrier, runs its
    wgmma for ``t_mma`` and arrives on the empty barrier. Times in arbitrary
    units (say microseconds). Returns one dict per event: ``who`` ("producer"
    or "consumer"), ``tile``, ``stage``, ``phase`` (the barrier parity the
    waiter waits on), ``start``, ``end``, ``waited`` (time spent blocked).
    Raises ValueError for stages < 1 or non-positive times.
    """
    if stages < 1:
        raise ValueError(f"stages={stages}: must be >= 1")
    if k_tiles < 1:
        raise ValueError(f"k_tiles={k_tiles}: must be >= 1")
    if t_load <= 0 or t_mma <= 0 or t_issue < 0:
        raise ValueError(f"t_load={t_load}, t_mma={t_mma}, t_issue={t_issue}: times must be positive")
    events, consumed, loaded = [], [], []
    p_free = c_free = 0.0
    for i in range(k_tiles):
        s, phase = i % stages, (i // stages) % 2
        ready = consumed[i - stages] if i >= stages else 0.0
        start = max(p_free, ready)
        events.append({"who": "producer", "tile": i, "stage": s, "phase": phase,
                       "start": start, "end": start + t_load, "waited": start - p_free})
        p_free = start + t_issue
        loaded.append(start + t_load)
        c_start = max(c_free, loaded[i])
        events.append({"who": "consumer", "tile": i, "stage": s, "phase": phase,
                       "start": c_start, "end": c_start + t_mma, "waited": c_start - c_free})
        c_free = c_start + t_mma
        consumed.append(c_free)
    return events


def pipeline_efficiency(events: list[dict]) -> float:
    """Fraction of the consumer's span spent computing (1.0: the loads are fully hidden)."""
    cons = [e for e in events if e["who"] == "consumer"]
    busy = sum(e["end"] - e["start"] for e in cons)
    return busy / (cons[-1]["end"] - min(e["start"] for e in events))
