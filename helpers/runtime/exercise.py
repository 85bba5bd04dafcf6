"""Check a reader's kernel, in a child process, with a time limit.

A reader's kernel may not compile, may hang, may fault or may be wrong; none of it may
reach the notebook's process. :func:`check` writes a job (the source text, the catalog
entry whose launch geometry and parameters it takes, the shapes) to a temporary file and
runs ``python -m helpers.runtime.exercise <job.json>`` through
:func:`helpers.runtime.isolated.run`, which kills the child's whole process group after
``timeout_s``. The child:

1. pastes the local ``#include "..."`` files into the source with ``#line`` markers
   (:func:`expand`), so the compiler's messages keep the reader's line numbers, and
   compiles it twice with NVRTC (CuPy), plainly and with ``-DRECORD_OWNER=1``;
2. runs it on each shape in order (small odd shapes first, then large ones): standard
   normal inputs, C NaN-poisoned inside a NaN guard band of :data:`GUARD` elements on each
   side (a write past either end of C is counted), the float64 reference, the dtype's
   tolerance (:func:`helpers.runtime.verify.check`); a second run on the same inputs
   tells a race from a deterministic error;
3. on the first failing shape, records who wrote each element (the instrumented build)
   and tries the shape rounded up to whole tiles (does the kernel fail only at the tile
   edge?), then summarises with :func:`helpers.models.exercise.locate`;
4. when every shape passed, records the owner map of the first shape (the thread order),
   runs the job's probe kernel if any (a ``__device__`` function of the reader's source
   called on every index, e.g. a shared-memory layout), and times the kernel and the
   chapter's kernel against cuBLAS in the same run with :func:`helpers.runtime.bench.measure`.

Each stage prints a line first (``EXERCISE_STAGE ...``), so a child killed by the time
limit still says what it was doing. Errors: ValueError for a bad job (before any child
starts); nothing else raises: a failing kernel is a result.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from helpers.models import exercise as model

from . import bench, catalog, gpu, isolated, launch, verify
from .checks import require
from .compile import KERNEL_DIR, TOOLKIT_HEADERS, cuda_include_dirs, entry_defines, source

EXERCISE_DIR = KERNEL_DIR / "exercises"
RESULT_TAG = "EXERCISE_RESULT "
STAGE_TAG = "EXERCISE_STAGE "
CELL = "exercise.cu"          # the file name the compiler's messages give the reader's source
GUARD = 4096                  # NaN elements before and after C (16 KB of float32)


# ------------------------------------------------------------------ source
def expand(text: str, base: Path = EXERCISE_DIR) -> str:
    """``text`` with each local ``#include "x"`` (relative to ``base``) replaced by the
    file's text (its own includes pasted too, :func:`helpers.runtime.compile.source`),
    framed by ``#line`` directives so that every line of ``text`` keeps its number in the
    compiler's messages, under the file name :data:`CELL`. Raises FileNotFoundError for
    an include that does not exist, naming its line."""
    out = [f'#line 1 "{CELL}"']
    seen: set = set()
    for i, line in enumerate(text.splitlines(), 1):
        m = re.match(r'\s*#include\s+"([^"]+)"', line)
        if not m:
            out.append(line)
            continue
        inc = (base / m.group(1)).resolve()
        if not inc.is_file():
            raise FileNotFoundError(f"line {i}: #include \"{m.group(1)}\": no such file in kernels/")
        if inc not in seen:
            seen.add(inc)
            out.append(f'#line 1 "{inc.name}"')
            out.append(source(str(inc.relative_to(KERNEL_DIR.resolve()))))
        out.append(f'#line {i + 1} "{CELL}"')
    return "\n".join(out) + "\n"


def compile_messages(log: str, text: str, context: int = 1) -> str:
    """The errors of a compiler log at the reader's line numbers, each with the lines of
    ``text`` (the reader's source) around it; an error inside an included header is
    shown as the compiler gave it."""
    lines = text.splitlines()
    out = []
    for m in re.finditer(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\): (?P<kind>error|catastrophic error)[^:]*: (?P<msg>.*)$",
                         log, re.M):
        n, msg = int(m.group("line")), m.group("msg").strip()
        if m.group("file") != CELL:
            out.append(f"{m.group('file')} line {n}: error: {msg}")
            continue
        out.append(f"line {n}: error: {msg}")
        for i in range(max(1, n - context), min(len(lines), n + context) + 1):
            out.append(f"  {'>' if i == n else ' '}{i:4d} | {lines[i - 1]}")
    return "\n".join(out) if out else log.strip()


# ------------------------------------------------------------------ the parent
def job(source_text: str, key: str, shapes, time_shape=None, tile=(1, 1, 1), probe: dict | None = None,
        params: dict | None = None, seed: int = 0) -> dict:
    """A check job, validated. ``key``: the catalog entry the reader's kernel stands for
    (its entry name, launch geometry, -D parameters, dtype, layout and owner model);
    ``shapes``: (M, N, K) tuples, run in order, each satisfying the entry's rules;
    ``time_shape``: the (M, N, K) the timing runs on, None for no timing; ``tile``:
    (rows, columns, k) of C and K one block covers per step (the shape is rounded up
    to it for the tile-edge test); ``probe``: {"code": CUDA appended to the source,
    "entry": its kernel, "count": ints it writes} or None; ``params``: -D values over the
    entry's shipped defaults. Raises ValueError naming what is wrong."""
    spec = catalog.get(key)
    require(isinstance(source_text, str) and source_text.strip() != "", "source", type(source_text).__name__,
            "must be the kernel's CUDA source as a non-empty string")
    p = {**spec.defaults, **(params or {})}
    require(len(shapes) >= 1, "shapes", shapes, "must name at least one (M, N, K)")
    for s in list(shapes) + ([time_shape] if time_shape else []):
        spec.validate(p, tuple(s))
    return {"source": source_text, "key": key, "params": p, "shapes": [list(map(int, s)) for s in shapes],
            "time_shape": list(map(int, time_shape)) if time_shape else None, "tile": list(tile),
            "probe": probe, "seed": int(seed)}


def check(job_: dict, timeout_s: float = 120.0) -> dict:
    """Run ``job_`` (from :func:`job`) in a child process for at most ``timeout_s`` seconds.

    Returns the child's result (see the module doc: ``"stage"``, ``"compile_error"``,
    ``"runs"``, ``"where"``, ``"owner"``, ``"probe"``, ``"records"``) plus ``"timed_out"``,
    ``"wall_s"``, ``"last_stage"`` (the last stage line the child printed) and, when it
    printed no result, ``"error"`` (what ended it: the time limit, or its exit status and
    last lines of stderr). Needs a GPU in the child; the notebook's process only waits."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(job_))
        r = isolated.run([sys.executable, "-m", "helpers.runtime.exercise", str(path)], timeout_s,
                         env=isolated.child_env())
    stages = [ln[len(STAGE_TAG):] for ln in r["stdout"].splitlines() if ln.startswith(STAGE_TAG)]
    res = [ln[len(RESULT_TAG):] for ln in r["stdout"].splitlines() if ln.startswith(RESULT_TAG)]
    out = json.loads(res[-1]) if res else {"stage": "child"}
    out.update(timed_out=r["timed_out"], wall_s=r["wall_s"], last_stage=stages[-1] if stages else "starting")
    if r["timed_out"]:
        out["error"] = (f"did not finish within {timeout_s:g} s while {out['last_stage']}: the child process "
                        "was killed")
    elif not res:
        tail = " | ".join(r["stderr"].strip().splitlines()[-3:])
        out["error"] = f"the child process ended with exit status {r['rc']} while {out['last_stage']}: {tail}"
    return out


# ------------------------------------------------------------------ the child
def _stage(text: str) -> None:
    print(STAGE_TAG + text, flush=True)


def _compile(cp, spec, p: dict, text: str, extra_code: str = "") -> dict:
    src = expand(text) + extra_code
    defines = {**entry_defines(spec.entry, spec.defines(p))}
    opts = ["-std=c++17", *(f"-D{k}={int(v)}" for k, v in sorted(defines.items())), *spec.compile_options]
    if any(re.search(rf"#include\s*<{re.escape(h)}>", src) for h in TOOLKIT_HEADERS):
        opts += [f"-I{d}" for d in cuda_include_dirs(cp.cuda.nvrtc.getVersion()[0])]
    mods = {}
    for name, extra in (("plain", ()), ("owner", ("-DRECORD_OWNER=1",))):
        try:
            mods[name] = cp.RawModule(code=src, options=tuple(opts) + extra)
            mods[name].compile()
        except cp.cuda.compiler.CompileException as e:
            return {"compile_error": compile_messages(str(e), text), "log": str(e)}
    return mods


def _launcher(spec, p, shape, fn):
    smem = spec.smem(p)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    return launch.Launch(spec, p, tuple(shape), fn, spec.grid(p, tuple(shape)), spec.block(p), smem)


def _arrays(cp, spec, shape, rng):
    M, N, K = shape
    Ah = rng.standard_normal((M, K), dtype=np.float32).astype(verify.np_dtype(spec.dtype))
    Bh = rng.standard_normal((K, N), dtype=np.float32).astype(verify.np_dtype(spec.dtype))
    A = cp.asarray(Ah)
    B = cp.asarray(np.ascontiguousarray(Bh.T) if spec.layout == "NT" else Bh)
    ref = Ah.astype(np.float64) @ Bh.astype(np.float64)
    return A, B, ref


def _run_once(cp, spec, L, A, B, shape, owner_fn=None):
    """(C on the host as float32, elements written outside C, owner map or None)."""
    M, N, K = shape
    odt = verify.np_dtype(spec.out_dtype)
    buf = cp.asarray(np.full(M * N + 2 * GUARD, np.nan, dtype=odt))
    C = buf[GUARD:GUARD + M * N].reshape(M, N)
    owner = None
    if owner_fn is not None:
        own = cp.full((M, N), -1, dtype=cp.int32)
        L(A, B, C, M, N, K, own)
    else:
        L(A, B, C, M, N, K)
    cp.cuda.Device().synchronize()
    host = cp.asnumpy(buf).astype(np.float32)
    if owner_fn is not None:
        owner = cp.asnumpy(own)
    guard = np.concatenate([host[:GUARD], host[GUARD + M * N:]])
    return host[GUARD:GUARD + M * N].reshape(M, N), int((~np.isnan(guard)).sum()), owner


def _judge(spec, Ch, ref, K):
    nan = np.isnan(Ch)
    tol = verify.TOLERANCE[spec.dtype]
    bad = nan | (np.abs(Ch.astype(np.float64) - ref) > 10 * tol * np.sqrt(K) + tol)
    try:
        err = verify.check(Ch, ref, spec.dtype, what="your kernel")
        return True, err, "", bad, nan
    except verify.WrongResult as e:
        return False, verify.rel_err(Ch, ref), str(e), bad, nan


def _one_shape(cp, spec, p, mods, shape, rng):
    A, B, ref = _arrays(cp, spec, shape, rng)
    L = _launcher(spec, p, shape, mods["plain"].get_function(spec.entry))
    Ch, guard, _ = _run_once(cp, spec, L, A, B, shape)
    ok, err, msg, bad, nan = _judge(spec, Ch, ref, shape[2])
    Ch2, guard2, _ = _run_once(cp, spec, L, A, B, shape)
    same = (Ch == Ch2) | (np.isnan(Ch) & np.isnan(Ch2))
    return {"shape": list(shape), "ok": ok and not guard, "rel_err": None if not np.isfinite(err) else float(err),
            "message": msg, "guard_writes": max(guard, guard2), "nondeterministic": int((~same).sum()),
            "never_written": int(nan.sum()), "wrong": int(bad.sum())}, (A, B, bad, nan)


def _owner(cp, spec, p, mods, shape, A, B):
    Lo = _launcher(spec, p, shape, mods["owner"].get_function(spec.entry))
    return _run_once(cp, spec, Lo, A, B, shape, owner_fn=True)[2]


def _time(cp, spec, p, L_fn, shape):
    data = bench.inputs(tuple(shape), spec.dtype, "gemm", out_dtype=spec.out_dtype)
    Lr = _launcher(spec, p, shape, L_fn)
    Lc = launch.prepare(spec.key, tuple(shape), **p)
    dims = tuple(shape)
    recs = []
    for what, L in (("your kernel", Lr), (spec.key, Lc)):
        recs.append(bench.measure(lambda *a, L=L: L(*a, *dims), dims, spec.dtype, "gemm", data=data,
                                  layout=spec.layout, chapter=spec.chapter, kernel=what,
                                  title=spec.title if what == spec.key else "your kernel", params=p).as_dict())
    return recs


def _timed(cp, spec, p, fn, shape, out):
    """:func:`_time` into ``out["records"]``; a kernel wrong at the timing shape becomes a failed run."""
    try:
        out["records"] = _time(cp, spec, p, fn, shape)
    except verify.WrongResult as e:
        out["runs"].append({"shape": list(shape), "ok": False, "rel_err": None, "message": str(e),
                            "guard_writes": 0, "nondeterministic": 0, "never_written": 0, "wrong": None})
        out["stage"] = "run"
        return False
    return True


def _child(j: dict, out: dict | None = None) -> dict:
    """Run job ``j``, filling ``out`` (a dict the caller keeps: what was done before an
    exception is still there) and returning it."""
    out = {} if out is None else out
    cp = gpu.cupy()
    spec = catalog.get(j["key"])
    p = j["params"]
    _stage("compiling")
    probe = j.get("probe")
    mods = _compile(cp, spec, p, j["source"], "\n" + probe["code"] if probe else "")
    if "compile_error" in mods:
        out.update(stage="compile", **mods)
        return out
    rng = np.random.default_rng(j["seed"])
    runs = []
    out.update(stage="run", runs=runs)
    tile = j["tile"]
    for shape in j["shapes"]:
        M, N, K = shape
        _stage(f"running M, N, K = {M}, {N}, {K}")
        r, (A, B, bad, nan) = _one_shape(cp, spec, p, mods, shape, rng)
        runs.append(r)
        if r["ok"]:
            continue
        _stage(f"recording who wrote each element at M, N, K = {M}, {N}, {K}")
        owner = _owner(cp, spec, p, mods, shape, A, B)
        gx = spec.grid(p, tuple(shape))[0]
        out["where"] = model.locate(bad, nan, owner if (owner >= 0).any() else None, gx, tile=(tile[0], tile[1]))
        up = [-(-v // t) * t for v, t in zip(shape, tile)]
        if up != list(shape) and not r["guard_writes"]:
            _stage(f"running M, N, K = {up[0]}, {up[1]}, {up[2]} (whole tiles)")
            try:
                spec.validate(p, tuple(up))
                out["aligned_ok"] = _one_shape(cp, spec, p, mods, up, rng)[0]["ok"]
            except ValueError:
                out["aligned_ok"] = None
        return out
    shape = j["shapes"][0]
    _stage("recording the thread map")
    A, B, _ = _arrays(cp, spec, shape, rng)
    owner = _owner(cp, spec, p, mods, shape, A, B)
    esize = verify.np_dtype(spec.out_dtype).itemsize
    out["owner"] = {"stores": model.warp_store_sectors(owner, esize)}
    if spec.owner is not None:
        out["owner"]["stores_model"] = model.warp_store_sectors(np.asarray(spec.owner(p, tuple(shape))), esize)
    if probe:
        _stage("running the probe")
        res = cp.full(probe["count"], -1, dtype=cp.int32)
        mods["plain"].get_function(probe["entry"])((1,), (1,), (res,))
        cp.cuda.Device().synchronize()
        out["probe"] = cp.asnumpy(res).tolist()
    if j.get("time_shape"):
        M, N, K = j["time_shape"]
        _stage(f"timing at M, N, K = {M}, {N}, {K} against the chapter's kernel and cuBLAS")
        if not _timed(cp, spec, p, mods["plain"].get_function(spec.entry), j["time_shape"], out):
            return out
    out["stage"] = "done"
    return out


def run_here(job_: dict) -> dict:
    """Run ``job_`` in this process, without the child's time limit: what the child runs, for
    compute-sanitizer to see every launch (``scripts/sanitize_exercises.py``). A kernel that
    hangs or faults takes this process with it: only for known-good sources. Needs a GPU."""
    return _child(job_)


def main(argv) -> int:
    j = json.loads(Path(argv[0]).read_text())
    out: dict = {}
    try:
        _child(j, out)
        rc = 0
    except Exception as e:                 # a CUDA error (illegal address, misaligned access): say which
        out.update(stage="run", error=f"{type(e).__name__}: {e}".strip())
        rc = 3
    print(RESULT_TAG + json.dumps(out), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
