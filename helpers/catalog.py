"""The catalog: every kernel the book ships, with its parameters and rules.

One :class:`Kernel` entry per kernel variant says which file and entry point
it is, which compile-time parameters it takes (with the values its slider
offers), how to launch it (block, grid, dynamic shared memory) and which rules
a shape and a parameter set must satisfy. The rules are plain Python, checked
before compiling or launching, so a bad slider value is a ValueError, never a
CUDA fault.

Conventions (see kernels/README.md): row-major matrices; GEMM computes
``C[M, N] = A[M, K] @ B[K, N]`` with lda = K, ldb = N, ldc = N, except where
``layout == "NT"`` (B is passed as Bt[N, K]). Transpose kernels map
``in[ROWS, COLS]`` to ``out[COLS, ROWS]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import Callable

from .checks import Rule, multiple_of, one_of, positive_int, require, require_all


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _index_model(key):
    """owner() of helpers/mapping.py for ``key`` (imported lazily: mapping imports this module)."""
    def owner(p, shape):
        from . import mapping
        return mapping.owner(key, p, shape)
    return owner


@dataclass(frozen=True)
class Kernel:
    """One kernel variant of the book.

    Attributes: ``key`` (unique id), ``chapter``, ``title`` (for tables),
    ``file`` and ``entry`` (in kernels/), ``op`` ("gemm" or "transpose"/"copy"),
    ``dtype`` of the inputs and ``out_dtype``, ``layout`` ("NN" or "NT"),
    ``defaults`` (compile-time parameters, passed as -D), ``choices`` (values
    a slider offers per parameter), ``fixed`` (-D values the variant always
    sets, e.g. PAD=1), ``block(p)``, ``grid(p, shape)``, ``smem(p)`` (dynamic
    shared memory, bytes), ``rules(p, shape)`` (list of Rule tuples) and
    ``align`` (bytes the data pointers must be aligned to) and ``sweep``
    (the parameter sets of the chapter's recorded slider sweep), and
    ``owner(p, shape)``: the index model, an int array (M, N) holding, for each
    C element, ``blockLinear * 1024 + threadLinear`` of the thread that writes
    it (what the kernel's ``-DRECORD_OWNER=1`` build records), or None; and
    ``global_bytes(p, shape)``: bytes the kernel's loads and stores request
    from global memory (before any cache), which gives its actual arithmetic
    intensity on the roofline, or None.
    """
    key: str
    chapter: int
    title: str
    file: str
    entry: str
    op: str
    block: Callable[[dict], tuple]
    grid: Callable[[dict, tuple], tuple]
    dtype: str = "float32"
    out_dtype: str = "float32"
    layout: str = "NN"
    defaults: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    smem: Callable[[dict], int] = lambda p: 0
    rules: Callable[[dict, tuple], list] = lambda p, s: []
    align: int = 4
    sweep: tuple = ()
    owner: Callable | None = None
    global_bytes: Callable | None = None

    def configs(self) -> list[dict]:
        """Every parameter set the book ships for this kernel: the defaults
        plus each point of its recorded sweep (``sweep``, partial dicts over
        the defaults). The nvcc compile test and the GPU suite cover these."""
        out = [dict(self.defaults)]
        for pt in self.sweep:
            q = {**self.defaults, **pt}
            if q not in out:
                out.append(q)
        return out

    @property
    def slider_choices(self) -> dict:
        """``choices`` restricted to this kernel's own parameters (entries of one
        family may share a choices table that names parameters some lack)."""
        return {n: v for n, v in self.choices.items() if n in self.defaults}

    def slider_configs(self, limit: int = 48, seed: int = 0, smem_limit: int | None = None) -> list[dict]:
        """Parameter sets a reader can reach with the sliders (the product of
        ``choices``) that pass validation on the book's shape; a seeded random
        sample of ``limit`` of them when there are more, plus every shipped config."""
        import itertools
        import random
        names = list(self.slider_choices)
        shape = (4096, 4096, 4096) if self.op == "gemm" else (4096, 4096)
        ok = []
        for vals in itertools.product(*(self.slider_choices[n] for n in names)):
            p = {**self.defaults, **dict(zip(names, vals))}
            try:
                self.validate(p, shape, smem_limit=smem_limit)
                ok.append(p)
            except ValueError:
                pass
        if len(ok) > limit:
            ok = random.Random(seed).sample(ok, limit)
        return ok + [c for c in self.configs() if c not in ok]

    def params(self, **overrides) -> dict:
        """Defaults updated with ``overrides``; an unknown name is a ValueError."""
        for k, v in overrides.items():
            require(k in self.defaults, k, v,
                    f"is not a parameter of {self.key} (it takes {sorted(self.defaults) or 'none'})")
            require(isinstance(v, int) and not isinstance(v, bool), k, v, "must be an integer")
        return {**self.defaults, **overrides}

    def defines(self, p: dict) -> dict:
        return {**p, **self.fixed}

    def threads(self, p: dict) -> int:
        b = self.block(p)
        return b[0] * b[1] * b[2]

    def validate(self, p: dict, shape: tuple, smem_limit: int | None = None) -> None:
        """Check every rule for parameters ``p`` and ``shape`` ((M, N, K) or
        (ROWS, COLS)); raise ValueError naming the first violated one."""
        require_all(positive_int(n, v) for n, v in zip(self.dims, shape))
        for name, allowed in self.choices.items():
            if name in p:
                require(p[name] in allowed, name, p[name], f"must be one of {tuple(allowed)} for {self.key}")
        t = self.threads(p)
        require(t <= 1024, "threads per block", t, "must be <= 1024 (block = " + str(self.block(p)) + ")")
        require(t % 32 == 0, "threads per block", t, "must be a multiple of 32 (whole warps)")
        require_all(self.rules(p, shape))
        if smem_limit is not None:
            s = self.smem(p)
            require(s <= smem_limit, "dynamic shared memory (bytes)", s,
                    f"must be <= {smem_limit}, the per-block opt-in limit of this GPU")

    @property
    def dims(self) -> tuple:
        return ("M", "N", "K") if self.op == "gemm" else ("ROWS", "COLS")


KERNELS: dict[str, Kernel] = {}


def register(k: Kernel) -> Kernel:
    if k.key in KERNELS:
        raise ValueError(f"duplicate kernel key {k.key!r}")
    KERNELS[k.key] = k
    return k


def get(key: str) -> Kernel:
    """The catalog entry ``key``; KeyError lists the known keys."""
    try:
        return KERNELS[key]
    except KeyError:
        raise KeyError(f"kernel={key!r}: unknown; known kernels: {', '.join(KERNELS)}") from None


def frozen_sweep(defaults: dict, points) -> tuple:
    """Sweep points as full parameter sets over ``defaults``, plus ``defaults``
    itself. Used once a sweep has been recorded: the defaults can then move to
    the winner without changing what each recorded point means."""
    full = [{**defaults, **pt} for pt in points] + [dict(defaults)]
    return tuple(p for i, p in enumerate(full) if p not in full[:i])


def chapter(n: int) -> list[Kernel]:
    return [k for k in KERNELS.values() if k.chapter == n]


# ------------------------------------------------------------------ chapter 0
def _transpose_rules(p, s):
    return [(p["TILE"] % p["BLOCK_ROWS"] == 0, "BLOCK_ROWS", p["BLOCK_ROWS"],
             f"must divide TILE={p['TILE']} (each thread moves TILE/BLOCK_ROWS elements)")]


_T = dict(chapter=0, file="00_transpose.cu", op="transpose",
          sweep=tuple({"TILE": t, "BLOCK_ROWS": r} for t, r in
                      ((32, 2), (32, 4), (32, 8), (32, 16), (32, 32), (16, 4), (16, 8), (64, 4), (64, 8), (64, 16))),
          defaults={"TILE": 64, "BLOCK_ROWS": 4},   # best of the sweep on the H200 (see chapter 0)
          choices={"TILE": (16, 32, 64), "BLOCK_ROWS": (2, 4, 8, 16, 32)},
          block=lambda p: (p["TILE"], p["BLOCK_ROWS"], 1),
          grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1),
          rules=_transpose_rules)
register(Kernel(key="copy_tiled", title="copy (upper bound)", entry="copy_tiled", **{**_T, "op": "copy"}))
register(Kernel(key="transpose_naive", title="naive transpose", entry="transpose_naive", **_T))
register(Kernel(key="transpose_shared", title="shared-memory tile", entry="transpose_shared", **_T))
register(Kernel(key="transpose_padded", title="padded tile (+1)", entry="transpose_shared",
                fixed={"PAD": 1}, **_T))

# ------------------------------------------------------------------ chapter 1
_BLOCKS = tuple({"BLOCK_X": x, "BLOCK_Y": y} for x, y in
                ((32, 1), (32, 2), (32, 4), (32, 8), (32, 16), (32, 32), (16, 16), (8, 32), (64, 4), (64, 8)))
_N = dict(chapter=1, file="01_naive.cu", op="gemm", sweep=_BLOCKS,
          defaults={"BLOCK_X": 32, "BLOCK_Y": 8},
          choices={"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (1, 2, 4, 8, 16, 32)},
          block=lambda p: (p["BLOCK_X"], p["BLOCK_Y"], 1))
# Every FMA loads one float of A and one of B: 8 bytes per 2 FLOP, plus C once.
_naive_bytes = lambda p, s: 8 * s[0] * s[1] * s[2] + 4 * s[0] * s[1]
register(Kernel(key="naive_xfirst", title="naive, x-first (uncoalesced)", entry="sgemm_naive_xfirst",
                owner=_index_model("naive_xfirst"), global_bytes=_naive_bytes,
                grid=lambda p, s: (cdiv(s[0], p["BLOCK_X"]), cdiv(s[1], p["BLOCK_Y"]), 1),
                **{**_N, "sweep": ()}))   # ~0.3 s per run at 4096^3: the sweep is shown on y-first
register(Kernel(key="naive_yfirst", title="naive, y-first (coalesced)", entry="sgemm_naive_yfirst",
                owner=_index_model("naive_yfirst"), global_bytes=_naive_bytes,
                grid=lambda p, s: (cdiv(s[1], p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1), **_N))

# ------------------------------------------------------------------ chapter 2
_V = dict(chapter=2, file="02_vectorized.cu", op="gemm", align=16, sweep=_BLOCKS,
          defaults={"BLOCK_X": 32, "BLOCK_Y": 8},
          choices={"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (1, 2, 4, 8, 16, 32)},
          block=lambda p: (p["BLOCK_X"], p["BLOCK_Y"], 1))
# vec4: per 4 k-steps a thread loads one A float4 and four B float4 for 16 FMAs:
# A bytes = M*(N/4)*K*4, B bytes = M*(N/4)*K*16, i.e. 5*M*N*K in all.
register(Kernel(key="vec4", title="float4, 1x4 strip per thread", entry="sgemm_vec4",
                owner=_index_model("vec4"), global_bytes=lambda p, s: 5 * s[0] * s[1] * s[2] + 4 * s[0] * s[1],
                grid=lambda p, s: (cdiv(s[1], 4 * p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                rules=lambda p, s: [multiple_of("K", s[2], 4, "float4 loads along the rows of A"),
                                    multiple_of("N", s[1], 4, "float4 loads along the rows of B and C")],
                **_V))
register(Kernel(key="kmajor", title="K-major B (Bt), float4 along k", entry="sgemm_kmajor", layout="NT",
                owner=_index_model("kmajor"), global_bytes=_naive_bytes,
                grid=lambda p, s: (cdiv(s[1], p["BLOCK_X"]), cdiv(s[0], p["BLOCK_Y"]), 1),
                rules=lambda p, s: [multiple_of("K", s[2], 4, "float4 loads along k of A and Bt")],
                # 32 x 32 = 1024 threads caps registers at 64 and spills on sm_80: not shipped
                **{**_V, "sweep": tuple(b for b in _BLOCKS if b != {"BLOCK_X": 32, "BLOCK_Y": 32})}))

# ------------------------------------------------------------------ chapters 3-5
# (CUDA-core FP32: shared-memory tiling, bank conflicts, register/warp tiling)
def _tiles_model(name, *bound):
    """A function of helpers/tiles.py, imported lazily (tiles imports this module)."""
    def model(p, shape):
        from . import tiles
        return getattr(tiles, name)(*bound, p, shape)
    return model


# chapter 3: one output per thread, TILE x TILE tiles staged in shared memory
register(Kernel(key="smem_tiled", chapter=3, title="shared-memory tiles, 1 output/thread",
                file="03_smem_tiling.cu", entry="sgemm_smem_tiled", op="gemm",
                defaults={"TILE": 32}, choices={"TILE": (8, 16, 32)},
                block=lambda p: (p["TILE"], p["TILE"], 1),
                grid=lambda p, s: (cdiv(s[1], p["TILE"]), cdiv(s[0], p["TILE"]), 1),
                sweep=({"TILE": 8}, {"TILE": 16}, {"TILE": 32}),
                owner=_tiles_model("owner_smem_tiled")))


# chapter 4: 1-D thread tile (TN outputs along a row of C), the A tile read
# down a column by the warp; four layouts of the A tile (kernels/04).
def _tile1d_threads(p):
    return p["BM"] * p["BN"] // p["TN"]


def _tile1d_rules(p, s):
    BM, BN, BK, TN = p["BM"], p["BN"], p["BK"], p["TN"]
    t = _tile1d_threads(p)
    return _staged(lambda: [
        (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B is read as float4)"),
        (BM % 16 == 0, "BM", BM, "must be a multiple of 16 (a warp covers 16 rows of the tile)"),
        (BN % (2 * TN) == 0, "BN", BN, f"must be a multiple of 2*TN={2 * TN} (a warp covers 2*TN columns)"),
    ] + _threads_rules(t), lambda: [
        (t % BK == 0, "BK", BK, f"must divide the {t} threads (BM*BN/TN): each thread loads one column of the A tile"),
        (t % BN == 0, "BN", BN, f"must divide the {t} threads (BM*BN/TN): each thread loads one column of the B tile"),
        ((BM * BK) % t == 0, "BM*BK", BM * BK, f"must be a multiple of the {t} threads (A tile split evenly)"),
        ((BK * BN) % t == 0, "BK*BN", BK * BN, f"must be a multiple of the {t} threads (B tile split evenly)"),
    ])


_T1 = dict(chapter=4, file="04_bank_conflicts.cu", entry="sgemm_tile1d", op="gemm",
           choices={"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (16, 32), "TN": (4, 8, 16),
                    "PAD": (0, 1, 2, 4)},
           block=lambda p: (_tile1d_threads(p), 1, 1),
           grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
           rules=_tile1d_rules, owner=_tiles_model("owner_tile1d"))
_T1_BASE = {"BM": 64, "BN": 64, "BK": 32, "TN": 8}
register(Kernel(key="tile1d_conflict", title="1-D tile, A row-major (column reads conflict)",
                defaults=dict(_T1_BASE), fixed={"LAYOUT": 0, "PAD": 0},
                sweep=({"BK": 16}, {"BK": 32}, {"BK": 32, "TN": 16}), **_T1))
register(Kernel(key="tile1d_padded", title="1-D tile, A rows padded (+PAD)",
                defaults={**_T1_BASE, "PAD": 1}, fixed={"LAYOUT": 0},
                sweep=tuple({"BK": bk, "PAD": pad} for bk in (16, 32) for pad in (0, 1, 2, 4)), **_T1))
register(Kernel(key="tile1d_swizzle", title="1-D tile, A XOR-swizzled",
                defaults=dict(_T1_BASE), fixed={"LAYOUT": 1, "PAD": 0},
                sweep=({"BK": 16}, {"BK": 32}, {"BK": 16, "TN": 16}, {"BK": 32, "TN": 16}), **_T1))
register(Kernel(key="tile1d_transposed", title="1-D tile, A stored transposed (+PAD)",
                defaults={**_T1_BASE, "PAD": 1}, fixed={"LAYOUT": 2},
                sweep=tuple({"BK": bk, "PAD": pad} for bk in (16, 32) for pad in (0, 1, 2, 4)), **_T1))

# ---- chapter 5 (register tiling) follows
# Every rule below mirrors a validity test in kernels/05_register_tiling.cu
# (R1_OK, R2_OK, V4_OK, WT_OK, WT_DB_OK, CA_OK): an entry compiled with
# parameters that fail it has a trapping body, so the catalog must refuse them.
SMEM_OPTIN_SM90 = 232448      # bytes: the per-block opt-in limit of an H100/H200 (227 KB)


def _even_split(name, total, threads, what):
    return (threads > 0 and total % threads == 0, name, total, f"must be a multiple of the {threads} threads ({what})")


def _divides_threads(name, v, threads, what):
    return (v > 0 and threads % v == 0, name, v, f"must divide the {threads} threads per block ({what})")


def _staged(*groups):
    """Rules in stages: each group (a function returning rules) is built only
    if every rule of the groups before it holds, so later formulas never see
    a broken geometry (e.g. zero threads)."""
    out = []
    for g in groups:
        rules = g()
        out += rules
        if not all(r[0] for r in rules):
            break
    return out


def _threads_rules(t):
    return [(t >= 32, "threads per block", t, "must be >= 32 (one warp)")]


def _static_smem_rule(floats, formula):
    b = 4 * floats
    return (b <= 48 * 1024, "static shared memory (bytes)", b,
            f"{formula} must be <= 49152 (48 KB, the static limit; only cp_async uses dynamic shared memory)")


def _reg1d_threads(p):
    return p["BM"] * p["BN"] // p["TM"]


def _reg1d_rules(p, s):
    BM, BN, BK, TM = p["BM"], p["BN"], p["BK"], p["TM"]
    t = _reg1d_threads(p)
    return _staged(lambda: [(BM % TM == 0, "TM", TM, f"must divide BM={BM} (TM rows per thread)"),
                            _static_smem_rule(BK * (BM + BN), "4*BK*(BM+BN)")] + _threads_rules(t),
                   lambda: [_divides_threads("BK", BK, t, "each thread loads one column of the A tile"),
                            _divides_threads("BN", BN, t, "each thread loads one column of the B tile"),
                            _even_split("BM*BK", BM * BK, t, "A tile loads"),
                            _even_split("BK*BN", BK * BN, t, "B tile loads")])


def _reg2d_threads(p):
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


def _reg2d_base(p):
    BM, BN, TM, TN = p["BM"], p["BN"], p["TM"], p["TN"]
    return [(TM % 4 == 0, "TM", TM, "must be a multiple of 4 (A fragment read as float4)"),
            (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B fragment read as float4)"),
            (BM % TM == 0, "TM", TM, f"must divide BM={BM}"),
            (BN % TN == 0, "TN", TN, f"must divide BN={BN}"),
            _static_smem_rule(p["BK"] * (BM + 4 + BN), "4*BK*(BM+4+BN)")] + _threads_rules(_reg2d_threads(p))


def _reg2d_rules(p, s):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    t = _reg2d_threads(p)
    return _staged(lambda: _reg2d_base(p),
                   lambda: [_divides_threads("BK", BK, t, "each thread loads one column of the A tile"),
                            _divides_threads("BN", BN, t, "each thread loads one column of the B tile"),
                            _even_split("BM*BK", BM * BK, t, "A tile loads"),
                            _even_split("BK*BN", BK * BN, t, "B tile loads")])


def _float4_load_rules(p, t):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    return [(BK % 4 == 0, "BK", BK, "must be a multiple of 4 (float4 loads along k)"),
            _divides_threads("BK/4", BK // 4, t, "each thread loads one float4 column of the A tile"),
            _divides_threads("BN/4", BN // 4, t, "each thread loads one float4 column of the B tile"),
            _even_split("BM*BK/4", BM * BK // 4, t, "float4 loads of the A tile"),
            _even_split("BK*BN/4", BK * BN // 4, t, "float4 loads of the B tile")]


def _float4_shape_rules(s, need_k=True):
    out = [multiple_of("N", s[1], 4, "float4 / 16-byte accesses along the rows of B and C")]
    if need_k:
        out.insert(0, multiple_of("K", s[2], 4, "float4 loads along the rows of A"))
    return out


def _vec4_rules(p, s):
    return _staged(lambda: _reg2d_base(p), lambda: _float4_load_rules(p, _reg2d_threads(p)),
                   lambda: _float4_shape_rules(s))


def _wt_threads(p):
    return 32 * (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])


def _warptile_base(p):
    BM, BN, BK, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "BK", "WM", "WN", "TM", "TN"))
    r = [(BM % WM == 0, "WM", WM, f"must divide BM={BM} (warp tiles tile the block)"),
         (BN % WN == 0, "WN", WN, f"must divide BN={BN} (warp tiles tile the block)"),
         (TM % 4 == 0, "TM", TM, "must be a multiple of 4 (A fragments are float4)"),
         (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B fragments are float4)"),
         (WM % TM == 0, "WM", WM, f"warp sub-tile not divisible by TM={TM}"),
         (WN % TN == 0, "WN", WN, f"warp sub-tile not divisible by TN={TN}")]
    if WM % TM == 0 and WN % TN == 0:
        LM, LN = WM // TM, WN // TN
        r += [(LM * LN == 32, "WM*WN/(TM*TN)", LM * LN,
               f"must be 32: one warp = (WM/TM) x (WN/TN) = {LM} x {LN} lanes"),
              (LM >= 2, "WM/TM", LM, "must be >= 2 (lane layout: lanes n, n^2 share a B fragment)"),
              (2 <= LN <= 16, "WN/TN", LN, "must be in [2, 16] (lane layout: lanes n, n^1 share an A fragment)")]
    r += [(BK % 4 == 0, "BK", BK, "must be a multiple of 4")]
    return _staged(lambda: r, lambda: _threads_rules(_wt_threads(p)))


def _warptile_rules(p, s):
    return _staged(lambda: _warptile_base(p),
                   lambda: [_static_smem_rule(p["BK"] * (p["BM"] + 4 + p["BN"]), "4*BK*(BM+4+BN)")],
                   lambda: _float4_load_rules(p, _wt_threads(p)), lambda: _float4_shape_rules(s))


def _warptile_db_rules(p, s):
    return _staged(lambda: _warptile_rules(p, s), lambda: [
        (p["BK"] % 2 == 0, "BK", p["BK"], "must be even (fragment double buffer)"),
        _static_smem_rule(2 * p["BK"] * (p["BM"] + 4 + p["BN"]), "2 buffers x 4*BK*(BM+4+BN)")])


def _cp_async_smem(p):
    return p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * 4


def _cp_async_rules(p, s):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    t = _wt_threads(p)
    smem = _cp_async_smem(p)
    return _staged(lambda: _warptile_base(p), lambda: [
        (p["STAGES"] >= 2, "STAGES", p["STAGES"], "must be >= 2 (one stage computes while one fills)"),
        (BK % 2 == 0, "BK", BK, "must be even (fragment double buffer)"),
        _divides_threads("BK", BK, t, "each thread copies one k column of the A tile"),
        _even_split("BM*BK", BM * BK, t, "4-byte copies of the A tile"),
        _divides_threads("BN/4", BN // 4, t, "each thread copies one float4 column of the B tile"),
        _even_split("BK*BN/4", BK * BN // 4, t, "16-byte copies of the B tile"),
        (smem <= SMEM_OPTIN_SM90, "shared memory (bytes)", smem,
         f"STAGES*BK*(BM+4+BN)*4 must be <= {SMEM_OPTIN_SM90} (227 KB, the sm_90 per-block limit)"),
    ], lambda: _float4_shape_rules(s, need_k=False))


_R = dict(chapter=5, file="05_register_tiling.cu", op="gemm")
_WT_CHOICES = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16, 32), "WM": (16, 32, 64, 128),
               "WN": (16, 32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "GROUP_M": (0, 4, 8, 16),
               "MIN_BLOCKS": (1, 2, 3, 4), "STAGES": (2, 3, 4, 5, 6)}
_WT_BASE = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "GROUP_M": 8, "MIN_BLOCKS": 1}
_WT_GEOM = dict(block=lambda p: (_wt_threads(p), 1, 1),
                grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1))

register(Kernel(key="reg1d", title="1-D register tile (TM outputs per thread)", entry="sgemm_reg1d",
                defaults={"BM": 64, "BN": 64, "BK": 8, "TM": 8},
                choices={"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (4, 8, 16, 32), "TM": (2, 4, 8, 16)},
                block=lambda p: (_reg1d_threads(p), 1, 1),
                grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
                rules=_reg1d_rules, owner=_tiles_model("owner_reg1d"),
                sweep=({"TM": 16}, {"TM": 16, "BK": 16}, {"BK": 16}, {"BM": 128, "TM": 16}), **_R))
_R2 = dict(defaults={"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
           choices={"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
           block=lambda p: (_reg2d_threads(p), 1, 1),
           grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
           owner=_tiles_model("owner_reg2d"), **_R)
register(Kernel(key="reg2d", title="2-D register tile (TM x TN per thread)", entry="sgemm_reg2d",
                rules=_reg2d_rules, sweep=({"BK": 16}, {"BM": 64, "BN": 64, "TM": 4, "TN": 4},
                                           {"BM": 64, "BN": 128, "TM": 4}), **_R2))
register(Kernel(key="reg2d_vec4", title="2-D register tile + float4 global loads", entry="sgemm_vec4",
                rules=_vec4_rules, align=16,
                sweep=({"BK": 16}, {"BM": 64, "BN": 64, "TM": 4, "TN": 4, "BK": 16}), **_R2))
register(Kernel(key="warptile", title="warp tiling (packed float4 fragments)", entry="sgemm_warptile",
                defaults=dict(_WT_BASE), choices=_WT_CHOICES, rules=_warptile_rules, align=16,
                owner=_tiles_model("owner_warptile"),
                sweep=({"WM": 32, "WN": 64}, {"BK": 16}, {"GROUP_M": 0}), **_WT_GEOM, **_R))
register(Kernel(key="warptile_db", title="warp tiling + double buffering", entry="sgemm_warptile_db",
                defaults=dict(_WT_BASE), choices=_WT_CHOICES, rules=_warptile_db_rules, align=16,
                owner=_tiles_model("owner_warptile"),
                sweep=({"BK": 16}, {"WM": 32, "WN": 64}, {"GROUP_M": 0},
                       {"BN": 256, "WN": 64, "TN": 16}), **_WT_GEOM, **_R))
# The chapter's final kernel. The sweep lists the candidates the GPU run times
# (scripts/record_results.py); the defaults are the winner on the H200.
_CA_SWEEP = (
    {"STAGES": 2}, {"STAGES": 4}, {"STAGES": 5},
    {"BK": 16, "STAGES": 2}, {"BK": 16}, {"BK": 16, "STAGES": 4},
    {"MIN_BLOCKS": 2}, {"MIN_BLOCKS": 2, "STAGES": 4},
    {"WM": 32, "WN": 64}, {"WM": 32, "WN": 64, "BK": 16},
    {"GROUP_M": 0}, {"GROUP_M": 16},
    {"BN": 256, "WN": 64, "TN": 16}, {"BN": 256, "WN": 64, "TN": 16, "BK": 16},
    {"BM": 256, "WM": 128, "TM": 16}, {"BM": 64, "WM": 32, "WN": 32, "TM": 4},
)
# Defaults: the winner of the sweep recorded on the H200 (2026-11-29): 128 x 256 blocks,
# 64 x 64 warp tiles, 8 x 16 per thread, BK 16, 3 stages.
register(Kernel(key="cp_async", title="warp tiling + cp.async multistage pipeline", entry="sgemm_cp_async",
                defaults={**_WT_BASE, "BN": 256, "WN": 64, "TN": 16, "BK": 16, "STAGES": 3},
                choices=_WT_CHOICES, rules=_cp_async_rules, align=16,
                smem=_cp_async_smem, owner=_tiles_model("owner_warptile"),
                sweep=frozen_sweep({**_WT_BASE, "STAGES": 3}, _CA_SWEEP),
                **_WT_GEOM, **_R))
# Pitfall (seed 003, "register spills"): asking __launch_bounds__ for more
# resident blocks than the registers allow. MIN_BLOCKS=2 on the 128 x 256 tile
# caps ptxas at 65536 / (2 * 256) = 128 registers for 128 accumulators + 48
# fragment registers: it spills to local memory. Correct, just slow; the GPU
# suite skips it and the compile test expects its spills (title says both).
register(Kernel(key="cp_async_pitfall", title="pitfall: __launch_bounds__ min blocks forces spills",
                entry="sgemm_cp_async",
                defaults={**_WT_BASE, "BN": 256, "WN": 64, "TN": 16, "STAGES": 3, "MIN_BLOCKS": 2},
                choices=_WT_CHOICES, rules=_cp_async_rules, align=16, smem=_cp_async_smem,
                owner=_tiles_model("owner_warptile"), **_WT_GEOM, **_R))
# (The same tile without the cap is the cp_async sweep point
#  {"BN": 256, "WN": 64, "TN": 16}: 225 registers, no spills.)

# ------------------------------------------------------------------ chapters 6-7
# (Tensor Cores: WMMA, mma.sync + ldmatrix + swizzle + cp.async pipeline)
def _frag_model(name):
    """A function of helpers/fragments.py, imported lazily."""
    def model(p, shape):
        from . import fragments
        return getattr(fragments, name)(p, shape)
    return model


def _tc_rules(p, s):
    """Rules shared by the Tensor Core kernels of chapters 6 and 7 (16-bit
    inputs, 16-byte cp.async chunks, 64x64 warp tiles at ~230 registers)."""
    M, N, K = s
    BM, BN, BK, WM, WN = p["BM"], p["BN"], p["BK"], p["WM"], p["WN"]
    warps = (BM // WM) * (BN // WN) if BM % WM == 0 and BN % WN == 0 else 0
    t = 32 * warps
    return [
        multiple_of("K", K, 8, "each row of A is copied in 16-byte chunks of 8 elements: "
                               "rows must start 16-byte aligned and no chunk may straddle K"),
        multiple_of("N", N, 8, "rows of B and C move in 16-byte chunks of 8 elements"),
        (BM % WM == 0, "WM", WM, f"must divide BM={BM} (warp tiles tile the block tile)"),
        (BN % WN == 0, "WN", WN, f"must divide BN={BN} (warp tiles tile the block tile)"),
        (t in (128, 256), "threads per block", t,
         f"must be 128 or 256 (BM/WM x BN/WN = {warps} warps; a 64x64 warp tile holds 128 fp32 "
         "accumulators per thread, ~230 registers: at most 256 threads fit the 65536 registers of an SM)"),
        (t == 0 or (BM * BK // 8) % t == 0, "BM*BK/8", BM * BK // 8,
         f"16-byte chunks of the A tile must spread evenly over the {t} threads"),
        (t == 0 or (BK * BN // 8) % t == 0, "BK*BN/8", BK * BN // 8,
         f"16-byte chunks of the B tile must spread evenly over the {t} threads"),
        (cdiv(M, BM) <= 65535, "M", M, f"needs ceil(M/BM) <= 65535 blocks along grid.y (BM={BM})"),
    ]


def _wmma_smem(p, acc_bytes=4, cpad=4):
    """Dynamic shared memory of 06_wmma.cu, bytes: the padded stage buffers,
    or the epilogue's per-warp 16 x (WN+CPAD) accumulator strips if larger."""
    pipe = p["STAGES"] * (p["BM"] * (p["BK"] + p["PAD"]) + p["BK"] * (p["BN"] + p["PAD"])) * 2
    warps = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    return max(pipe, warps * 16 * (p["WN"] + cpad) * acc_bytes)


_TC_BLOCK = lambda p: ((p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32, 1, 1)  # noqa: E731
_TC_GRID = lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1)          # noqa: E731

# chapter 6: WMMA. Defaults and sweep: block 128x256, warps 64x64, BK 32.
_W = dict(chapter=6, file="06_wmma.cu", entry="gemm_wmma", op="gemm", align=16,
          defaults={"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "PAD": 8, "STAGES": 3, "GROUP_M": 8},
          choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64), "WM": (32, 64),
                   "WN": (32, 64), "PAD": (0, 8, 16), "STAGES": (2, 3, 4), "GROUP_M": (1, 8)},
          block=_TC_BLOCK, grid=_TC_GRID, rules=_tc_rules, owner=_frag_model("owner_wmma"))
_W_SWEEP = ({"STAGES": 2}, {"STAGES": 4}, {"BM": 256, "BN": 128}, {"BM": 128, "BN": 128},
            {"BM": 128, "BN": 128, "WN": 32}, {"BK": 64}, {"BK": 64, "STAGES": 2},
            {"PAD": 0}, {"PAD": 16}, {"GROUP_M": 1})
# Defaults: the winner of the sweep recorded on the H200 (2026-11-29) for both dtypes:
# 128 x 128 blocks of four 64 x 64 warps (the sweep's points keep their recorded meaning).
_W_SWEEP = frozen_sweep(_W["defaults"], _W_SWEEP)
_W_WIN = {**_W, "defaults": {**_W["defaults"], "BN": 128}}
register(Kernel(key="wmma_f16", title="WMMA, fp16 in, fp32 accumulate", dtype="float16",
                out_dtype="float16", smem=_wmma_smem, sweep=_W_SWEEP, **_W_WIN))
register(Kernel(key="wmma_bf16", title="WMMA, bf16 in, fp32 accumulate", dtype="bfloat16",
                out_dtype="bfloat16", fixed={"BF16": 1}, smem=_wmma_smem, sweep=_W_SWEEP, **_W_WIN))
register(Kernel(key="wmma_wrong_layout_pitfall", title="pitfall: B fragment declared col_major",
                dtype="float16", out_dtype="float16", fixed={"WRONG_LAYOUT": 1}, smem=_wmma_smem, **_W))
register(Kernel(key="wmma_acc_f16_pitfall", title="pitfall: fp16 accumulator fragment",
                dtype="float16", out_dtype="float16", fixed={"ACC_F16": 1},
                smem=lambda p: _wmma_smem(p, acc_bytes=2, cpad=8), **_W))

# chapter 7: mma.sync + ldmatrix + XOR swizzle + multistage cp.async.
_M = dict(chapter=7, file="07_mma_sync.cu", entry="gemm_mma_sync", op="gemm", align=16,
          defaults={"BM": 128, "BN": 256, "BK": 32, "WM": 64, "WN": 64, "STAGES": 4,
                    "SWIZZLE": 1, "GROUP_M": 8, "LOAD_SPREAD": 1},
          choices={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64), "WM": (32, 64),
                   "WN": (32, 64), "STAGES": (2, 3, 4, 5), "SWIZZLE": (0, 1), "GROUP_M": (1, 8),
                   "LOAD_SPREAD": (0, 1)},
          block=_TC_BLOCK, grid=_TC_GRID,
          smem=lambda p: p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 2,
          owner=_frag_model("owner_mma_sync"))


def _mma_sync_rules(p, s):
    t = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32 if p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0 else 0
    return _tc_rules(p, s) + [
        (not p["SWIZZLE"] or t == 0 or t % p["BN"] == 0, "SWIZZLE", p["SWIZZLE"],
         f"=1 needs threads per block ({t}) to be a multiple of BN={p['BN']}: each thread's 16-byte "
         "chunks must lie a multiple of 8 rows apart to share one swizzle key"),
        (t == 0 or (p["BM"] + p["BN"]) * p["BK"] // 8 <= 16 * t, "cp.async chunks per thread",
         (p["BM"] + p["BN"]) * p["BK"] // 8 // max(t, 1),
         "must be <= 16 per k-tile (more in-flight copies per thread spill registers next to the "
         "128 accumulators); use more warps or a smaller BK"),
        (p["BM"] * s[2] < 2 ** 31, "K", s[2],
         f"BM*K = {p['BM'] * s[2]} must be < 2^31: a thread's chunk offsets in A are 32-bit"),
        (p["BK"] * s[1] < 2 ** 31, "N", s[1],
         f"BK*N = {p['BK'] * s[1]} must be < 2^31: a thread's chunk offsets in B are 32-bit"),
    ]


# Candidate configurations timed on the H200; the lead sets the defaults to the winner.
_M_SWEEP = ({"STAGES": 3}, {"STAGES": 5}, {"STAGES": 2},
            {"BM": 256, "BN": 128, "STAGES": 3}, {"BM": 256, "BN": 128},
            {"BK": 64, "STAGES": 3}, {"BK": 64}, {"BM": 256, "BN": 128, "BK": 64, "STAGES": 3},
            {"BM": 128, "BN": 128}, {"BM": 128, "BN": 128, "WM": 32}, {"BM": 128, "BN": 128, "WN": 32},
            {"GROUP_M": 1}, {"SWIZZLE": 0})
# Defaults: the best of the sweep recorded on the H200 (2026-11-29) over both dtypes:
# BK 64 with 4 stages on 128 x 256 blocks (the sweep's points keep their meaning), with
# the copies spread over the k16 steps; {"LOAD_SPREAD": 0} at the defaults is the burst.
_M_SWEEP = frozen_sweep(_M["defaults"], _M_SWEEP + ({"BM": 256, "BN": 128, "BK": 64},
                                                    {"BK": 64, "LOAD_SPREAD": 0}))
_M = {**_M, "defaults": {**_M["defaults"], "BK": 64}}
register(Kernel(key="mma_sync_f16", title="mma.sync m16n8k16 + ldmatrix + swizzle, fp16",
                dtype="float16", out_dtype="float16", rules=_mma_sync_rules, sweep=_M_SWEEP, **_M))
register(Kernel(key="mma_sync_bf16", title="mma.sync m16n8k16 + ldmatrix + swizzle, bf16",
                dtype="bfloat16", out_dtype="bfloat16", fixed={"BF16": 1}, rules=_mma_sync_rules,
                sweep=_M_SWEEP, **_M))

# What each chapter 6-7 pitfall entry shows (tests/gpu skips them by name).
PITFALLS = {
    "wmma_wrong_layout_pitfall":
        "matrix_b declared col_major over a row-major tile: load_matrix_sync reads every 16x16 "
        "block of B transposed; values look plausible, relative error ~1 (fails the fp16 check)",
    "wmma_acc_f16_pitfall":
        "accumulator fragment in fp16: with all-positive inputs and large K the running sum's ulp "
        "outgrows the addends and the sum stops growing. Demo: A = B = 0.5 (exact in fp16), "
        "K = 65536: every k16 step adds 4; the true sum 16384 is exact in fp16 and wmma_f16 returns "
        "it, but an fp16 accumulator stops at 8192 (ulp 8: +4 is a tie, rounded back to even) "
        "after K = 32768. With random normal inputs the error is merely larger than fp32's.",
}
