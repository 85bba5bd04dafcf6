"""Compile the book's kernels: CuPy/NVRTC when live, ``nvcc`` as a check when not.

Every kernel lives in ``kernels/NN_name.cu`` and is the single source of truth:
the notebooks display it, CuPy compiles it, the nvcc test compiles it. Compile-
time parameters (tile sizes, padding, stages) go in as ``-D`` defines, so one
file is one family of kernels::

    k = build("05_register_tiling.cu", "sgemm_warptile", {"BM": 128, "BN": 128, "BK": 16})

Compiled modules are cached twice: in this process (``functools.lru_cache``)
and on disk by CuPy (``~/.cupy/kernel_cache``, or ``$CUPY_CACHE_DIR``), keyed
by the source text and options; a second run in a fresh Python process loads
the cubin and recompiles nothing. Local ``#include "x.cuh"`` files are pasted
into the source before compiling, so the cache key sees their text too.

Errors raised: :class:`KernelCompileError` (the compiler's message with the
offending source lines), :class:`CudaHeadersNotFound` (what to install),
``FileNotFoundError`` for an unknown kernel file.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from . import gpu

REPO = Path(__file__).resolve().parents[2]
KERNEL_DIR = REPO / "kernels"

# Toolkit headers NVRTC does not always ship built in; a kernel that includes
# one of them gets the toolkit's include directories added to its options.
TOOLKIT_HEADERS = ("mma.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_pipeline.h")


class KernelCompileError(RuntimeError):
    """The compiler rejected a kernel. ``str(err)`` shows each error with the
    source line it points at; ``err.log`` is the compiler's full log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class CudaHeadersNotFound(RuntimeError):
    """No CUDA include directory with the toolkit headers a kernel needs."""


def kernel_path(file: str) -> Path:
    """``kernels/<file>``; ``file`` may name a file in a subfolder (``experiments/07_mma_probe.cu``).
    FileNotFoundError lists the kernel files there are."""
    p = KERNEL_DIR / file
    if not p.is_file():
        known = ", ".join(sorted(str(x.relative_to(KERNEL_DIR)) for x in KERNEL_DIR.rglob("*.cu")))
        raise FileNotFoundError(f"file={file!r}: no such kernel in kernels/ (have: {known})")
    return p


def source(file: str) -> str:
    """The text of ``kernels/<file>`` with local ``#include "..."`` files pasted in, each
    once (an include of a file already pasted is dropped: the headers' include guards
    would skip it too), paths relative to the including file
    (``kernels/experiments/07_mma_probe.cu`` includes ``"../07_mma_sync.cu"``)."""
    def expand(path: Path, seen: set) -> str:
        out = []
        for line in path.read_text().splitlines():
            m = re.match(r'\s*#include\s+"([^"]+)"', line)
            if m:
                inc = (path.parent / m.group(1)).resolve()
                if inc not in seen:
                    seen.add(inc)
                    out.append(f"// ---- begin {m.group(1)} ----")
                    out.append(expand(inc, seen))
                    out.append(f"// ---- end {m.group(1)} ----")
                continue
            out.append(line)
        return "\n".join(out)
    return expand(kernel_path(file), set())


def _cuda_major_of(include_dir: str) -> int | None:
    h = Path(include_dir) / "cuda_runtime_api.h"
    if not h.is_file():
        h = Path(include_dir) / "cuda.h"
    try:
        m = re.search(r"#define\s+CUDA(?:RT)?_VERSION\s+(\d+)", h.read_text(errors="ignore"))
        return int(m.group(1)) // 1000 if m else None
    except OSError:
        return None


def _candidate_include_dirs() -> list[str]:
    """Directories that may hold CUDA toolkit headers, most specific first.

    Order: cuda.pathfinder's answer (pip wheels, conda, CUDA_PATH/CUDA_HOME,
    system installs), then the pip layouts by hand (CUDA 13: ``nvidia/cu13/
    include``, where ``nvidia-cuda-crt`` puts ``crt/``; CUDA 12: ``nvidia/
    cuda_runtime/include`` and ``nvidia/cuda_nvcc/include``), then CUDA_PATH,
    CUDA_HOME, /usr/local/cuda*, /opt/cuda.
    """
    dirs: list[str] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        for lib in ("cudart", "nvcc"):
            try:
                d = find_nvidia_header_directory(lib)
                if d:
                    dirs.append(d)
            except Exception:
                pass
    except ImportError:
        pass
    roots = list(sys.path)
    try:
        roots += site.getsitepackages() + [site.getusersitepackages()]
    except Exception:
        pass
    for r in roots:
        for sub in ("nvidia/cu13/include", "nvidia/cuda_runtime/include",
                    "nvidia/cuda_nvcc/include", "nvidia/cuda_crt/include"):
            dirs.append(os.path.join(r, sub))
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            dirs.append(os.path.join(os.environ[env], "include"))
    dirs += ["/usr/local/cuda/include"] + sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    dirs += ["/opt/cuda/include"]
    seen, out = set(), []
    for d in dirs:
        d = os.path.realpath(d)
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


@functools.lru_cache(maxsize=None)
def cuda_include_dirs(cuda_major: int | None = None) -> tuple[str, ...]:
    """Include directories that together provide ``mma.h`` and ``crt/mma.h``.

    ``cuda_major`` is the CUDA major version of the compiler that will read
    them (NVRTC's); directories of that version are preferred, since headers
    of another major version may not compile. Raises :class:`CudaHeadersNotFound`
    with the package to install when ``crt/mma.h`` is nowhere (the error seen
    with pip-only CUDA 13: "cannot open source file crt/mma.h").
    """
    cands = _candidate_include_dirs()
    def pick(rel):
        have = [d for d in cands if os.path.isfile(os.path.join(d, rel))]
        same = [d for d in have if cuda_major is None or _cuda_major_of(d) in (cuda_major, None)]
        return (same or have)[:1]
    top, crt = pick("mma.h"), pick("crt/mma.h")
    if not crt:
        major = cuda_major or 12
        pkg = "nvidia-cuda-crt" if major >= 13 else "nvidia-cuda-nvcc-cu12"
        raise CudaHeadersNotFound(
            f"no CUDA include directory has crt/mma.h (searched {len(cands)}: "
            f"{', '.join(cands[:6])}{' ...' if len(cands) > 6 else ''}). Kernels that "
            f"include <mma.h> need it. Fix: `pip install {pkg}` (CUDA {major} pip layout), "
            "or install the CUDA toolkit and set CUDA_PATH to it.")
    return tuple(dict.fromkeys(top + crt))


def _defines(params: dict | None) -> tuple[str, ...]:
    return tuple(f"-D{k}={int(v) if isinstance(v, bool) else v}" for k, v in sorted((params or {}).items()))


def _needs_toolkit_headers(src: str) -> bool:
    return any(re.search(rf"#include\s*<{re.escape(h)}>", src) for h in TOOLKIT_HEADERS)


def format_compile_log(log: str, src: str, context: int = 1) -> str:
    """Turn an NVRTC/nvcc log into 'line N: error ...' plus the source lines."""
    lines = src.splitlines()
    out = []
    for m in re.finditer(r"\((\d+)\): (error|warning)[^:]*: (.*)", log):
        n, kind, msg = int(m.group(1)), m.group(2), m.group(3).strip()
        if kind != "error":
            continue
        out.append(f"line {n}: error: {msg}")
        for i in range(max(1, n - context), min(len(lines), n + context) + 1):
            out.append(f"  {'>' if i == n else ' '}{i:5d} | {lines[i - 1]}")
    return "\n".join(out) if out else log.strip()


@functools.lru_cache(maxsize=256)
def _build(file: str, entry: str, defines: tuple, extra: tuple):
    return _build_entries(file, (entry,), defines, extra)[entry]


@functools.lru_cache(maxsize=64)
def _build_entries(file: str, entries: tuple, defines: tuple, extra: tuple) -> dict:
    cp = gpu.cupy()
    src = source(file)
    opts = ["-std=c++17", *defines, *extra]
    if _needs_toolkit_headers(src):
        major = cp.cuda.nvrtc.getVersion()[0]
        opts += [f"-I{d}" for d in cuda_include_dirs(major)]
    try:
        mod = cp.RawModule(code=src, options=tuple(opts))
        return {e: mod.get_function(e) for e in entries}
    except cp.cuda.compiler.CompileException as e:
        log = str(e)
        raise KernelCompileError(
            f"{file} ({' '.join(defines) or 'no -D'}) did not compile:\n"
            + format_compile_log(log, src), log) from None


def entry_defines(entry: str, params: dict | None = None) -> dict:
    """``params`` plus ``ENTRY_<entry>=1``: which entry point a build is for. A
    kernel file with several entries (kernels/05_register_tiling.cu) turns that
    entry's validity test into a ``static_assert``, so a configuration it
    rejects fails to compile instead of running."""
    return {**(params or {}), f"ENTRY_{entry}": 1}


def build(file: str, entry: str, params: dict | None = None, extra_options: tuple = ()):
    """Compile ``entry`` from ``kernels/<file>`` with ``-D`` for each of ``params``.

    Returns a ``cupy.RawKernel``. Cached (see module doc). Raises
    :class:`KernelCompileError`, :class:`CudaHeadersNotFound`, RuntimeError in
    recorded mode.
    """
    return _build(file, entry, _defines(entry_defines(entry, params)), tuple(extra_options))


def build_all(file: str, entries, params: dict | None = None, extra_options: tuple = ()) -> dict:
    """Several entry points of ``kernels/<file>`` from one NVRTC compile (a file whose
    entries share their parameters, such as 09_any_shape.cu's GEMM, reduction and copy
    kernels). No ``ENTRY_`` define is added. Returns ``{entry: cupy.RawKernel}``; cached;
    raises as :func:`build`."""
    return _build_entries(file, tuple(entries), _defines(params), tuple(extra_options))


def resources(kernel) -> dict:
    """Registers per thread, static shared memory and local memory (bytes) of
    a compiled ``cupy.RawKernel``, read from the CUDA driver (cuFuncGetAttribute)."""
    return {"registers": int(kernel.num_regs),
            "smem_static": int(kernel.shared_size_bytes),
            "local_bytes": int(kernel.local_size_bytes),
            "max_threads": int(kernel.max_threads_per_block)}


# ---------------------------------------------------------------- nvcc check
def nvcc_path() -> str | None:
    """Path of ``nvcc`` (PATH, then $CUDA_PATH/bin, /usr/local/cuda/bin), or None."""
    p = shutil.which("nvcc")
    for d in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if not p and d and os.path.isfile(os.path.join(d, "bin", "nvcc")):
            p = os.path.join(d, "bin", "nvcc")
    return p


_PTXAS = re.compile(
    r"Compiling entry function '(?P<fn>[^']+)' for '(?P<arch>sm_\d+a?)'.*?"
    r"(?P<stack>\d+) bytes stack frame, (?P<sst>\d+) bytes spill stores, (?P<sld>\d+) bytes spill loads.*?"
    r"Used (?P<regs>\d+) registers(?:, used \d+ barriers)?(?:, (?P<smem>\d+) bytes smem)?",
    re.S)


NVCC_CACHE_VAR = "GEMM_BOOK_NVCC_CACHE"


@functools.lru_cache(maxsize=None)
def _tool_version(path: str) -> str:
    """What ``path --version`` prints (nvcc, nvdisasm), read once per process: part of
    every disk-cache key, so a new toolkit compiles everything again."""
    r = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return r.stdout.strip() or f"{os.path.realpath(path)} {os.stat(path).st_mtime_ns}"


def _disk_cache(kind: str, tools: tuple, src: str, file: str, defines: tuple, arch: str,
                extra: tuple) -> Path | None:
    """The file of one build's result in ``$GEMM_BOOK_NVCC_CACHE`` (a directory), or None
    when the variable is unset. ``kind`` names what is cached (``"ptxas"``: the resource
    report of :func:`nvcc_check`; ``"sass"``: the listing of :func:`sass_listing`). The key is
    everything the result depends on: the version of each tool in ``tools`` (nvcc, and
    nvdisasm for SASS), the source with its includes pasted in, the file name, the defines,
    the architecture and the extra options; a changed source, option or toolkit is a new
    key. The test suite points the variable at a directory that outlives the session
    (tests/conftest.py), so a second run compiles nothing it compiled before."""
    root = os.environ.get(NVCC_CACHE_VAR)
    if not root:
        return None
    key = json.dumps([kind, [_tool_version(t) for t in tools], src, file, defines, arch, extra])
    return Path(root) / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()}.json"


def _cached(path: Path | None, make):
    """``make()``, read from (or written whole to) ``path`` when one is given."""
    if path is not None and path.is_file():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass                       # a damaged entry is made again
    out = make()
    if path is not None:               # written whole, then renamed: a reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(out))
        os.replace(tmp, path)
    return out


@functools.lru_cache(maxsize=4096)
def _nvcc_check(file: str, defines: tuple, arch: str, extra: tuple) -> dict:
    nvcc = nvcc_path()
    if not nvcc:
        raise FileNotFoundError("nvcc not found (PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    src = source(file)
    out = _cached(_disk_cache("ptxas", (nvcc,), src, file, defines, arch, extra),
                  lambda: _nvcc_run(nvcc, src, file, defines, arch, extra))
    return {fn: {**r, "warnings": tuple(r["warnings"])} for fn, r in out.items()}


def _nvcc_run(nvcc: str, src: str, file: str, defines: tuple, arch: str, extra: tuple) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / Path(file).name      # experiments/x.cu: no folder in tmp
        cu.write_text(src)
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", *defines, *extra,
               "-o", str(Path(tmp) / "k.cubin"), str(cu)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise KernelCompileError(f"nvcc {file} {' '.join(defines)} for {arch} failed:\n"
                                 + format_compile_log(r.stderr, src), r.stderr)
    out = {}
    # ptxas reports its performance warnings as "info" lines with a code: "(C7508) Potential
    # Performance Loss: 'setmaxnreg' ignored", "(C7510) ... wgmma ... serialized".
    warnings = tuple(ln.strip() for ln in r.stderr.splitlines()
                     if "warning" in ln.lower() or re.search(r"\(C\d{4}\)", ln))
    for block in re.split(r"(?=ptxas info\s*: Compiling entry function)", r.stderr):
        m = _PTXAS.search(block)
        if m:
            out[m.group("fn")] = {"registers": int(m.group("regs")),
                                  "smem_static": int(m.group("smem") or 0),
                                  "stack": int(m.group("stack")),
                                  "spill_stores": int(m.group("sst")),
                                  "spill_loads": int(m.group("sld")),
                                  "warnings": warnings}
    return out


def nvcc_defines(file: str, entry: str, params: dict | None = None) -> tuple:
    """The ``-D`` options of :func:`nvcc_check`'s build of ``entry``: ``params``,
    plus ``ENTRY_<entry>`` where the file reads it (kernels/05_register_tiling.cu).
    A file that never mentions ``ENTRY_`` builds the same whichever entry is asked
    for, so its entries share one nvcc run (one cache entry) per parameter set."""
    return _defines(entry_defines(entry, params) if "ENTRY_" in source(file) else params)


def nvcc_check(file: str, entry: str, params: dict | None = None, arch: str = "sm_90",
               extra_options: tuple = ()) -> dict:
    """Compile with ``nvcc -cubin -arch=<arch> -Xptxas -v`` (no GPU needed).

    Returns ``{"registers", "smem_static", "stack", "spill_stores", "spill_loads"}``
    (bytes) for ``entry``, and ``"warnings"``: every warning line of the build,
    nvcc's and ptxas's, including ptxas's coded performance notes such as
    "(C7508) ... 'setmaxnreg' ignored" or "(C7510) ... wgmma serialized". Raises FileNotFoundError when nvcc is absent,
    :class:`KernelCompileError` when the kernel does not compile, KeyError if
    ``entry`` is not in the file.
    """
    res = _nvcc_check(file, nvcc_defines(file, entry, params), arch, tuple(extra_options))
    if entry not in res:
        raise KeyError(f"entry={entry!r}: not found in {file} (have {sorted(res)}); "
                       "is it extern \"C\" __global__?")
    return res[entry]


def tool_path(name: str) -> str | None:
    """A CUDA binary tool such as ``cuobjdump`` or ``nvdisasm``: PATH,
    $CUDA_PATH/bin, $CUDA_HOME/bin, /usr/local/cuda/bin, or the pip packages
    nvidia-cuda-<name> (``nvidia/*/bin/<name>``); None when none has it."""
    cands = [shutil.which(name)]
    cands += [os.path.join(d, "bin", name) for d in
              (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda") if d]
    try:
        import nvidia
        for root in nvidia.__path__:
            cands += [str(x) for x in Path(root).glob(f"*/bin/{name}")]
    except ImportError:
        pass
    return next((c for c in cands if c and os.path.isfile(c)), None)


def _sass_text(file: str, defines: tuple, arch: str) -> str:
    """nvdisasm's listing of the cubin that nvcc builds from ``kernels/<file>`` with
    ``defines`` (``-D`` options) for ``arch``, cached on disk like :func:`nvcc_check`."""
    nvcc, dis = nvcc_path(), tool_path("nvdisasm")
    if not nvcc or not dis:
        raise FileNotFoundError("nvcc and nvdisasm are needed to read SASS "
                                "(pip install nvidia-cuda-nvdisasm)")
    src = source(file)

    def make() -> str:
        with tempfile.TemporaryDirectory() as tmp:
            cu = Path(tmp) / Path(file).name      # experiments/x.cu: no folder in tmp
            cu.write_text(src)
            cubin = Path(tmp) / "k.cubin"
            subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-std=c++17", *defines, "-o", str(cubin), str(cu)],
                           check=True, capture_output=True, text=True)
            return subprocess.run([dis, "-c", str(cubin)], check=True, capture_output=True, text=True).stdout
    return _cached(_disk_cache("sass", (nvcc, dis), src, file, defines, arch, ()), make)


def sass_listing(file: str, entry: str, params: dict, arch: str = "sm_90") -> list[str]:
    """The SASS of ``entry`` in ``kernels/<file>`` built with ``-D`` ``params``,
    one instruction per item without addresses (predicates such as ``@!PT`` kept),
    branch labels (``.L_x_3:``) kept, so that positions can be compared
    (tests/test_sass_order.py) and two listings diffed (scripts/ch5_regression.py).
    Uses nvcc and nvdisasm (pip package nvidia-cuda-nvdisasm); raises FileNotFoundError
    when either is missing and subprocess.CalledProcessError when the build fails."""
    defs = tuple(f"-D{k}={v}" for k, v in sorted(params.items()))
    out, inside = [], False
    for line in _sass_text(file, defs, arch).splitlines():
        if line.startswith("//----"):
            inside = line.split()[1:2] == [f".text.{entry}"]
            continue
        if inside:
            m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*$", line)
            if m:
                out.append(m.group(1))
            elif re.match(r"\.L_x_\d+:", line):
                out.append(line.strip())
    if not out:
        raise KeyError(f"entry={entry!r}: no SASS for it in {file} built with {params}")
    return out


def sass_shared_ops(file: str, entry: str, params: dict, arch: str = "sm_90") -> Counter:
    """Shared-memory instructions in the compiled SASS of ``entry`` (static
    count over the whole kernel), by mnemonic: Counter({"LDS.128": 72, ...}).
    Compared with :func:`helpers.models.banks.static_shared_ops`. Instructions
    predicated ``@!PT`` (never executed: the compiler's ``LDS RZ, [RZ]`` placeholders)
    are not counted. Reads :func:`sass_listing`; raises what it raises."""
    ops = Counter()
    for ins in sass_listing(file, entry, params, arch):
        if ins.startswith("@!PT"):
            continue
        m = re.search(r"\b((?:LDS|STS)(?:\.(?:64|128|U\.128|U))?)\s", ins)
        if m:
            ops[m.group(1)] += 1
    return ops
