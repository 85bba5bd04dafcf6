"""Shared-memory banks: which bank each access hits, and what it costs.

The model (CUDA C++ Programming Guide, "Shared Memory" for compute capability
5.x and later, which 8.x and 9.x inherit; Nsight Compute Kernel Profiling
Guide, "Shared Memory" and the metric definitions):

* Shared memory is 32 banks, 4 bytes wide: byte address ``a`` lives in bank
  ``(a // 4) % 32``. Each bank delivers one 4-byte word per cycle.
* A warp's shared-memory instruction is served in **wavefronts** (cycles of
  the shared-memory pipe). For a 32-bit access the whole warp is one phase and
  needs as many wavefronts as the busiest bank has *distinct words* requested.
  Several lanes reading the *same* word cost nothing extra (a broadcast).
* 64-bit and 128-bit accesses deliver 256 and 512 bytes per warp, more than
  the 128 bytes a wavefront can carry, so the warp is split into phases: two
  half-warps (lanes 0-15, 16-31) for 64-bit, four quarter-warps (0-7, 8-15,
  16-23, 24-31) for 128-bit. Each phase is costed like a 32-bit request and
  the phases add up; lanes in different phases never conflict, and a
  broadcast does not carry across phases. A contiguous float4 read is thus 4
  wavefronts and 0 conflicts.
* One exception (NVIDIA, for CC 7.x; the same counts were reported on CC 8.6
  and 9.0): when every pair of lanes n, n^1 (or every pair n, n^2) reads the
  same address, the hardware packs two lanes per return slot and halves the
  phases (128-bit: two half-warp phases; 64-bit: one phase). Example: lanes
  0-15 reading one float4 and lanes 16-31 another = 2 wavefronts, not 4.
  This case is the least documented: scripts/ncu_banks.py measures it with
  the probe kernel (kernels/04_bank_conflicts.cu: bank_probe).

Nsight Compute counters, per kernel (sums over all warps):

* ``smsp__inst_executed_op_shared_ld.sum``: warp-level shared-load instructions;
* ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum``: their wavefronts;
* ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`` (``_op_st`` for
  stores): wavefronts beyond one per phase, i.e. sum over phases of
  (wavefronts - 1). For 32-bit accesses that is wavefronts - instructions:
  a 32 x 32 float tile read by column is 32 wavefronts per instruction, so
  1,024 x 32 = 32,768 instructions gave 1,048,576 wavefronts and 1,015,808
  conflicts on an H200 (transpose_shared, TILE 32, 1024 x 1024).

Functions here: :func:`bank`, :func:`layout_banks` (the bank of every element
of a tile layout), :func:`wavefronts` (one warp request), :func:`warp_access`
(lane -> address of one instruction of a book kernel), :func:`predict`
(kernel-total counters for the chapter-4 GEMMs and the chapter-0 transposes)
and :data:`PROBES` (the probe patterns). Addresses are bytes relative to the
start of the shared array; a common offset does not change any count.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .names import KernelNames
from .raster import cdiv

BANKS = 32
WORD = 4          # bytes per bank word
WARP = 32

METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__inst_executed_op_shared_ld.sum",
)
LD_CONFLICTS, ST_CONFLICTS, LD_WAVEFRONTS, LD_INSTRUCTIONS = METRICS


def bank(byte_addr) -> int | np.ndarray:
    """Bank of a byte address (int or array): ``(addr // 4) % 32``."""
    return (np.asarray(byte_addr) // WORD) % BANKS if not isinstance(byte_addr, int) \
        else (byte_addr // WORD) % BANKS


# ------------------------------------------------------------------ layouts
def xor_swizzle(rows_per_32_words: int, chunks: int):
    """The chapter-4 swizzle as a function (row, col) -> physical column, for
    a row-major tile of ``4 * chunks`` floats per row: float4 chunk ``c`` of
    row ``r`` moves to chunk ``c ^ f(r)``, ``f(r) = (r // rows_per_32_words) % chunks``
    (kernels/04_bank_conflicts.cu, LAYOUT 1: rows_per_32_words = 32 / BK)."""
    def f(r, c):
        return c ^ (((r // rows_per_32_words) % chunks) * 4)
    return f


def layout_banks(rows: int, cols: int, pad: int = 0, swizzle=None, elem_bytes: int = 4) -> np.ndarray:
    """Bank of element (r, c) of a ``rows x cols`` tile, as an int array (rows, cols).

    The tile is row-major with rows of ``cols + pad`` elements of
    ``elem_bytes`` bytes (4 for float; 8 or 16 for a double or float4, whose
    first word's bank is given). ``swizzle``: None, ``"xor"`` (the chapter-4
    XOR swizzle for 4-byte elements, cols in {16, 32}) or a callable
    ``(r, c) -> physical column``. Raises ValueError for a bad argument.
    """
    if rows < 1 or cols < 1 or pad < 0:
        raise ValueError(f"rows={rows}, cols={cols}, pad={pad}: must be >= 1, >= 1, >= 0")
    if elem_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"elem_bytes={elem_bytes}: must be one of (1, 2, 4, 8, 16)")
    if swizzle == "xor":
        if elem_bytes != 4 or cols not in (8, 16, 32) or pad:
            raise ValueError(f"swizzle='xor': written for float rows of 8, 16 or 32 (cols={cols}, pad={pad})")
        swizzle = xor_swizzle(32 // cols, cols // 4)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if swizzle is not None:
        c = np.vectorize(swizzle)(r, c)
    return bank((r * (cols + pad) + c) * elem_bytes)


# ------------------------------------------------------------------ one request
def _pair_rule(addrs) -> bool:
    """True when every lane pair (n, n^1), or every pair (n, n^2), of active
    lanes reads the same address (the packed-return case)."""
    for d in (1, 2):
        if all(addrs[n] is None or addrs[n ^ d] is None or addrs[n] == addrs[n ^ d] for n in range(WARP)):
            return True
    return False


def phases(addrs, width: int, load: bool = True) -> list[list[int]]:
    """Lane groups served as separate phases, for one warp request of
    ``width`` bytes per lane (4, 8 or 16); see the module doc."""
    if width == 4:
        return [list(range(32))]
    if width not in (8, 16):
        raise ValueError(f"width={width}: must be 4, 8 or 16 bytes per lane")
    packed = load and _pair_rule(addrs)
    per = {8: 32 if packed else 16, 16: 16 if packed else 8}[width]
    return [list(range(s, s + per)) for s in range(0, 32, per)]


def phase_cost(byte_addrs, width: int = 4) -> int:
    """Wavefronts one phase of a shared-memory request needs: the largest number
    of distinct 4-byte words it asks of any one bank (several lanes reading the
    same word cost nothing extra: a broadcast). ``byte_addrs``: the phase's
    byte addresses (None for an inactive lane), ``width`` bytes each. 0 when no
    lane is active. The one bank model of the book: :func:`wavefronts` (whole
    warps, chapters 0 and 4) and :func:`helpers.models.fragments.phase_wavefronts`
    (ldmatrix and cp.async, chapters 6-7) cost every phase with it."""
    words_in_bank: dict[int, set] = {}
    for a in byte_addrs:
        if a is None:
            continue
        a = int(a)
        for w in range(a // WORD, (a + width) // WORD):
            words_in_bank.setdefault(w % BANKS, set()).add(w)
    return max((len(s) for s in words_in_bank.values()), default=0)


def wavefronts(addrs, width: int = 4, load: bool = True) -> dict:
    """Cost of one warp shared-memory instruction.

    ``addrs``: 32 byte addresses (None for an inactive lane), each a multiple
    of ``width`` (4, 8 or 16 bytes per lane). ``load``: False for a store (no
    packed-return exception). Returns ``{"wavefronts", "conflicts", "phases":
    [per-phase wavefronts], "ways": the worst phase's wavefronts}``.
    Raises ValueError for a misaligned or out-of-warp request.
    """
    addrs = list(addrs)
    if len(addrs) != WARP:
        raise ValueError(f"len(addrs)={len(addrs)}: must be 32 (one per lane; None = inactive)")
    for a in addrs:
        if a is not None and a % width:
            raise ValueError(f"address={a}: must be a multiple of width={width} (aligned access)")
    per_phase = []
    for lanes in phases(addrs, width, load):
        if any(addrs[n] is not None for n in lanes):
            per_phase.append(phase_cost([addrs[n] for n in lanes], width))
    wf = sum(per_phase)
    return {"wavefronts": wf, "conflicts": wf - len(per_phase), "phases": per_phase,
            "ways": max(per_phase, default=0)}


# ------------------------------------------------------------------ kernels
# One shared-memory instruction of a warp: ("ld" | "st", array, width, addrs).
# Two bank models of whole kernels: "tile1d", the shared-memory code of chapter 4's
# sgemm_tile1d (kernels/04_bank_conflicts.cu, every layout of its A tile), and "transpose",
# that of the shared-tile transposes of chapter 0 (kernels/00_transpose.cu). A chapter says
# which of its kernels follows which (name_model); the functions below then take the
# kernel's name or the model's.
MODELS = ("tile1d", "transpose")
_NAMES = KernelNames("model", MODELS, "no bank model")


def name_model(kernel: str, model: str) -> None:
    """Say that kernel ``kernel`` (a catalog key, given by its chapter) follows bank model
    ``model`` (one of :data:`MODELS`), so :func:`predict`, :func:`warp_access` and
    :func:`static_shared_ops` take its name. ValueError for an unknown model."""
    _NAMES.name(kernel, model)


def kernels_of(model: str) -> tuple:
    """The kernel names that follow bank model ``model``, in the order they were named."""
    return _NAMES.kernels_of(model)


_model = _NAMES.of


def _full(key: str, p: dict) -> dict:
    """``p``: every -D value of the kernel (``catalog.get(key).full(...)``); PAD defaults to 0."""
    _model(key)
    return {"PAD": 0, **p}


def a_tile_offset(q: dict, m: int, k: int) -> int:
    """Float offset of A[m][k] in the chapter-4 A tile (kernels/04: A_AT)."""
    BM, BK, PAD, L = q["BM"], q["BK"], q["PAD"], q["LAYOUT"]
    if L == 2:
        return k * (BM + PAD) + m
    if L == 1:
        return m * BK + (k ^ (((m * BK // 32) % (BK // 4)) * 4))
    return m * (BK + PAD) + k


def a_read_width(q: dict) -> int:
    """Bytes per lane of the A-tile reads (kernels/04: A_VEC * 4)."""
    if q["LAYOUT"] == 1 or (q["LAYOUT"] == 0 and (q["BK"] + q["PAD"]) % 4 == 0):
        return 16
    if q["LAYOUT"] == 0 and (q["BK"] + q["PAD"]) % 2 == 0:
        return 8
    return 4


def _gemm_instructions(q: dict, warp: int):
    """Every shared-memory instruction one warp of sgemm_tile1d executes per k
    tile, in program order, as (op, array, access, width, addrs)."""
    BM, BN, BK, TN = q["BM"], q["BN"], q["BK"], q["TN"]
    T = BM * BN // TN
    tids = [32 * warp + l for l in range(32)]
    out = []
    for j in range(BM * BK // T):                         # A tile store
        addrs = [4 * a_tile_offset(q, t // BK + j * (T // BK), t % BK) for t in tids]
        out.append(("st", "As", "A_store", 4, addrs))
    for j in range(BK * BN // T):                         # B tile store
        addrs = [4 * ((t // BN + j * (T // BN)) * BN + t % BN) for t in tids]
        out.append(("st", "Bs", "B_store", 4, addrs))
    ms = [(warp % (BM // 16)) * 16 + l % 16 for l in range(32)]
    n0s = [((warp // (BM // 16)) * 2 + l // 16) * TN for l in range(32)]
    wa = a_read_width(q)
    for c in range(BK // 4):
        for s in range(0, 16, wa):                        # A reads: 16 // wa per 4 k
            addrs = [4 * a_tile_offset(q, m, 4 * c + s // 4) for m in ms]
            out.append(("ld", "As", "A_read", wa, addrs))
        for j in range(4):
            for qq in range(TN // 4):                     # B reads: float4, per half-warp one address
                addrs = [4 * ((4 * c + j) * BN + n0 + 4 * qq) for n0 in n0s]
                out.append(("ld", "Bs", "B_read", 16, addrs))
    return out


def _transpose_instructions(q: dict, warp: int):
    TILE, BR, PAD = q["TILE"], q["BLOCK_ROWS"], q.get("PAD", 0)
    lanes = [(t % TILE, t // TILE) for t in range(32 * warp, 32 * warp + 32)]
    out = []
    for j in range(0, TILE, BR):
        out.append(("st", "tile", "row", 4, [4 * ((ty + j) * (TILE + PAD) + tx) for tx, ty in lanes]))
    for j in range(0, TILE, BR):
        out.append(("ld", "tile", "column", 4, [4 * (tx * (TILE + PAD) + ty + j) for tx, ty in lanes]))
    return out


def _warps(key: str, q: dict) -> int:
    if _model(key) == "transpose":
        return q["TILE"] * q["BLOCK_ROWS"] // 32
    return q["BM"] * q["BN"] // q["TN"] // 32


def _instructions(key: str, q: dict, warp: int):
    return (_gemm_instructions if _model(key) == "tile1d" else _transpose_instructions)(q, warp)


ACCESS_ALIASES = {"row": "A_store", "column": "A_read"}


def warp_access(key: str, p: dict, access: str = "column", warp: int = 0, index: int = 0) -> dict:
    """Lane -> address map of one warp instruction of a book kernel.

    ``key``: a kernel its chapter named to a bank model (:func:`name_model`: chapter 4's
    tile1d GEMMs, chapter 0's shared-tile transposes), or a model of :data:`MODELS`;
    ``p``: every -D value of the variant
    (``helpers.runtime.catalog.get(key).full(params)``). ``access``: for the GEMMs "A_read" (alias
    "column": the warp reads the A tile down a column), "A_store" (alias
    "row"), "B_read", "B_store"; for the transposes "row" (the tile store,
    phase 1) or "column" (the tile read, phase 2). ``index``: which of the
    warp's instructions of that kind (0 = first). Returns ``{"addrs": bytes
    per lane, "words", "banks": of each lane's first word, "width": bytes,
    "cost": :func:`wavefronts` result}``.
    """
    q = _full(key, p)
    if _model(key) == "tile1d":
        access = ACCESS_ALIASES.get(access, access)
    ins = [i for i in _instructions(key, q, warp) if i[2] == access]
    if not ins:
        raise ValueError(f"access={access!r}: not an access of {key} "
                         f"(have {sorted({i[2] for i in _instructions(key, q, warp)})})")
    if not 0 <= index < len(ins):
        raise ValueError(f"index={index}: {key} has {len(ins)} {access} instructions per warp and tile")
    op, _, _, width, addrs = ins[index]
    return {"addrs": addrs, "words": [a // 4 for a in addrs], "banks": [bank(a) for a in addrs],
            "width": width, "cost": wavefronts(addrs, width, load=(op == "ld"))}


def static_shared_ops(key: str, p: dict) -> Counter:
    """Shared-memory instructions of one warp per k tile (GEMMs) or per tile
    (transposes), by SASS mnemonic: Counter({"LDS.128": 72, "STS": 8, ...}).
    Compared with the compiled code by :func:`sass_shared_ops`."""
    q = _full(key, p)
    name = {("ld", 4): "LDS", ("ld", 8): "LDS.64", ("ld", 16): "LDS.128",
            ("st", 4): "STS", ("st", 8): "STS.64", ("st", 16): "STS.128"}
    return Counter(name[(i[0], i[3])] for i in _instructions(key, q, 0))


def predict(key: str, p: dict, shape=(512, 512, 512)) -> dict:
    """Kernel-total Nsight Compute counters (:data:`METRICS`) predicted for
    one launch of ``key`` with parameters ``p`` on ``shape``.

    GEMMs (``tile1d_*``): any (M, N, K); every block executes every shared
    access of every k tile (out-of-range elements are stored as zeros), so
    totals = per-block-per-tile counts x ceil(M/BM) ceil(N/BN) ceil(K/BK).
    Transposes: (ROWS, COLS) must be multiples of TILE (edge tiles skip
    accesses behind per-lane tests), else ValueError.
    """
    q = _full(key, p)
    if _model(key) == "tile1d":
        M, N, K = shape
        reps = cdiv(M, q["BM"]) * cdiv(N, q["BN"]) * cdiv(K, q["BK"])
    else:
        R, C = shape
        for name, v in (("ROWS", R), ("COLS", C)):
            if v % q["TILE"]:
                raise ValueError(f"{name}={v}: must be a multiple of TILE={q['TILE']} for the counter "
                                 "model (edge tiles are partly skipped by per-lane tests)")
        reps = (R // q["TILE"]) * (C // q["TILE"])
    tot = dict.fromkeys(METRICS, 0)
    for w in range(_warps(key, q)):
        for op, _, _, width, addrs in _instructions(key, q, w):
            c = wavefronts(addrs, width, load=(op == "ld"))
            if op == "ld":
                tot[LD_INSTRUCTIONS] += 1
                tot[LD_WAVEFRONTS] += c["wavefronts"]
                tot[LD_CONFLICTS] += c["conflicts"]
            else:
                tot[ST_CONFLICTS] += c["conflicts"]
    return {k: v * reps for k, v in tot.items()}


# ------------------------------------------------------------------ probes
def _probe(width, offs):
    return {"PROBE_BYTES": width, "offsets": list(offs)}


# Probe patterns for kernels/04_bank_conflicts.cu: bank_probe. Offsets are in
# floats (words); each is one LDS of PROBE_BYTES bytes per lane.
PROBES = {
    "ld32_row":        _probe(4, range(32)),                         # 1 wavefront
    "ld32_column32":   _probe(4, [32 * l for l in range(32)]),       # 32-way
    "ld32_column33":   _probe(4, [33 * l for l in range(32)]),       # padded: 1
    "ld32_broadcast":  _probe(4, [0] * 32),                          # 1
    "ld32_two_words":  _probe(4, [32 * (l % 2) for l in range(32)]), # 2-way
    "ld64_row":        _probe(8, [2 * l for l in range(32)]),        # 2 phases: 2
    "ld64_column":     _probe(8, [32 * l for l in range(32)]),       # 16 + 16
    "ld64_stride34":   _probe(8, [34 * l for l in range(32)]),       # +2 padding: 2
    "ld64_uniform":    _probe(8, [0] * 32),                          # packed: 1
    "ld128_row":       _probe(16, [4 * l for l in range(32)]),       # 4 phases: 4
    "ld128_column":    _probe(16, [32 * l for l in range(32)]),      # 8 per phase: 32
    "ld128_stride36":  _probe(16, [36 * l for l in range(32)]),      # +4 padding: 4
    "ld128_uniform":   _probe(16, [0] * 32),                         # packed: 2
    "ld128_halves":    _probe(16, [8 * (l // 16) for l in range(32)]),  # packed: 2
    "ld128_pairs16":   _probe(16, [8 * (l % 16) for l in range(32)]),   # 2 per phase: 8
}


def predict_probe(name: str, reps: int = 1) -> dict:
    """Predicted counters for one launch of bank_probe with pattern ``name``
    and ``reps`` repetitions (one warp; the 8 KB fill is 64 conflict-free STS)."""
    pr = PROBES[name]
    c = wavefronts([4 * o for o in pr["offsets"]], pr["PROBE_BYTES"])
    return {LD_CONFLICTS: c["conflicts"] * reps, ST_CONFLICTS: 0,
            LD_WAVEFRONTS: c["wavefronts"] * reps, LD_INSTRUCTIONS: reps}
