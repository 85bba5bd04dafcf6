"""The catalog framework: :class:`Kernel` (one kernel variant), the registry, :func:`get`.

The entries themselves live with their chapters (helpers/chapters/chNN_*.py),
which register them when ``helpers`` is imported.

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

import itertools
import random
from dataclasses import dataclass, field
from typing import Callable

from . import defaults as gpu_defaults
from .checks import positive_int, require, require_all


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
    intensity on the roofline, or None; ``pitfall``: for an entry that shows a
    mistake on purpose, what goes wrong ("" for a real kernel; the GPU suite
    skips pitfalls where a fast correct result is expected); ``compile_options``:
    extra NVRTC/nvcc options (``("-arch=sm_90a",)`` for the Hopper kernels);
    ``min_cc``: the oldest compute capability that runs it, and
    ``arch_specific``: True when its machine code is for exactly ``min_cc``
    (``sm_90a`` runs on compute capability 9.0 and no other); ``args``: for a
    kernel whose arguments are not ``(A, B, C, M, N, K)``, a function
    ``(p, A, B, C, M, N, K, *extra) -> tuple`` the launcher calls to build
    them (chapter 10's TMA descriptors); ``experiments``: ``{switch: (file, entry)}``,
    the ``-D`` switches of this kernel that live in an experiment file under
    ``kernels/experiments/`` instead of the teaching file (a probe, a measured
    variant): a build that sets one compiles that file and entry
    (:meth:`build_target`).
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
    pitfall: str = ""
    compile_options: tuple = ()
    min_cc: tuple = (0, 0)
    arch_specific: bool = False
    args: Callable | None = None
    experiments: dict = field(default_factory=dict)

    def build_target(self, defines: dict | None = None) -> tuple[str, str]:
        """(file, entry) that a build with the extra ``-D`` values ``defines`` compiles:
        the experiment file and entry of the first of them that ``experiments`` names
        (e.g. ``PROBE`` -> ``("experiments/07_mma_probe.cu", "gemm_mma_probe")``),
        else this kernel's own ``(file, entry)``."""
        for name in defines or {}:
            if name in self.experiments:
                return tuple(self.experiments[name])
        return self.file, self.entry

    def runs_on(self, cc: tuple) -> bool:
        """True if a GPU of compute capability ``cc`` (major, minor) can run this kernel."""
        cc = tuple(cc)
        return cc == tuple(self.min_cc) if self.arch_specific else cc >= tuple(self.min_cc)

    def needs(self) -> str:
        """What GPU the kernel needs, in words: "sm_90a (compute capability 9.0 exactly)"."""
        major, minor = self.min_cc
        if self.arch_specific:
            return f"sm_{major}{minor}a (compute capability {major}.{minor} exactly)"
        return f"sm_{major}{minor} or newer" if self.min_cc != (0, 0) else "any CUDA GPU"

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
        """Defaults updated with ``overrides``; an unknown name is a ValueError. With no
        overrides: the defaults on the GPU the book decides for (:meth:`default_params`);
        overrides apply to the shipped ``defaults`` (what a recorded sweep point varies)."""
        for k, v in overrides.items():
            require(k in self.defaults, k, v,
                    f"is not a parameter of {self.key} (it takes {sorted(self.defaults) or 'none'})")
            require(isinstance(v, int) and not isinstance(v, bool), k, v, "must be an integer")
        if not overrides:
            return self.default_params()
        return {**self.defaults, **overrides}

    def default_params(self) -> dict:
        """The defaults on the GPU the book decides for: the autotuner's configuration that
        replaces the shipped ``defaults`` there (:func:`helpers.runtime.defaults.resolve`: a
        same-run winner from ``results/<gpu>-tuning.json``, or the fastest timed one that fits
        a smaller GPU's shared memory), else ``defaults``."""
        r = gpu_defaults.resolve(self)
        return dict(r["params"]) if r else dict(self.defaults)

    def defines(self, p: dict) -> dict:
        """The -D values of a build: ``p`` plus the variant's ``fixed`` values."""
        return {**p, **self.fixed}

    def full(self, p: dict | None = None) -> dict:
        """Every -D value of this variant: defaults, updated with ``p`` (not
        validated), plus ``fixed`` (what the models of helpers.models take)."""
        return {**self.defaults, **(p or {}), **self.fixed}

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
