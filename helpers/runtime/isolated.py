"""Run a kernel in a child process: for launches that may hang or break the CUDA context.

A CUDA fault (a misaligned address, an illegal access) leaves the process's CUDA
context unusable: every later launch in that process fails. A kernel with a
barrier that not every thread reaches may never finish. Neither may happen in
the notebook's own process, so such launches run here, in a child Python
process with a wall-clock limit:

* :func:`run` starts any command in its own process group and, past
  ``timeout_s``, kills the whole group (the sanitizer and the Python it
  started): a hang costs ``timeout_s`` seconds, never the notebook;
* :func:`gemm_child` runs one catalog GEMM kernel in a child
  (``python -m helpers.runtime.isolated gemm KEY M N K``) and returns what it
  printed: the relative error against a float64 reference, the NaN count, or
  the CUDA error that ended it;
* :func:`sanitize` runs the same child under ``compute-sanitizer --tool
  racecheck|synccheck|memcheck --error-exitcode 1`` and counts what it reports.

The child uploads its inputs from NumPy (seeded standard normal), poisons C with
NaN from NumPy too, and checks on the host (:func:`helpers.runtime.verify.check` on NumPy
arrays): the only kernel it launches is the one under test, so a sanitizer report
is about that kernel. Errors: FileNotFoundError when compute-sanitizer is absent
(:func:`sanitizer_path`); RuntimeError when a child prints no result line.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import catalog, gpu, launch, verify
from .compile import tool_path

REPO = Path(__file__).resolve().parents[2]
RESULT_TAG = "ISOLATED_RESULT "


def run(argv: list, timeout_s: float, env: dict | None = None) -> dict:
    """Run ``argv`` (a list) in the repository root, in a new process group, for at most
    ``timeout_s`` seconds. Returns {"rc" (None when killed), "timed_out", "wall_s",
    "stdout", "stderr", "cmd" (the command line as text)}. Never raises for the
    child's failure; FileNotFoundError if ``argv[0]`` does not exist."""
    t0 = time.perf_counter()
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=str(REPO), env=env, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)      # the whole group: a sanitizer's target too
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    return {"rc": None if timed_out else p.returncode, "timed_out": timed_out,
            "wall_s": round(time.perf_counter() - t0, 2), "stdout": out or "", "stderr": err or "",
            "cmd": " ".join(str(a) for a in argv)}


def child_env() -> dict:
    """The environment of a child: this one, with the repository on PYTHONPATH."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def child_argv(key: str, shape, seed: int = 0, offset_a: int = 0, unchecked: bool = False) -> list:
    """The command line of a :func:`gemm_child` run (``python -m helpers.runtime.isolated gemm ...``)."""
    argv = [sys.executable, "-m", "helpers.runtime.isolated", "gemm", key, *(str(int(s)) for s in shape),
            "--seed", str(seed)]
    if offset_a:
        argv += ["--offset-a", str(offset_a)]
    if unchecked:
        argv.append("--unchecked")
    return argv


def parse_result(stdout: str) -> dict | None:
    """The last result line a child printed (a dict), or None."""
    lines = [ln[len(RESULT_TAG):] for ln in stdout.splitlines() if ln.startswith(RESULT_TAG)]
    return json.loads(lines[-1]) if lines else None


def gemm_child(key: str, shape, timeout_s: float = 120, **kw) -> dict:
    """Run catalog GEMM kernel ``key`` on ``shape`` (M, N, K) in a child process.

    ``kw``: ``seed``, ``offset_a`` (start A that many elements into its allocation: a
    view that is not 16-byte aligned), ``unchecked`` (skip the Python preconditions and
    launch anyway: only ever in a child). Returns :func:`run`'s dict plus ``"result"``:
    the child's result ({"rel_err", "nans", "ok", "message"} or {"error"}), or None
    when it printed none (a hang, a crash)."""
    r = run(child_argv(key, shape, **kw), timeout_s, env=child_env())
    return {**r, "result": parse_result(r["stdout"])}


def sanitizer_path() -> str | None:
    """``compute-sanitizer`` (PATH, the CUDA toolkit's bin, pip's nvidia packages), or None."""
    return tool_path("compute-sanitizer")


_ERRORS = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_HAZARDS = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazard")


def summary(text: str) -> dict:
    """The counts compute-sanitizer printed: {"errors": int or None, "hazards": int or None}
    ("ERROR SUMMARY: 3 errors", racecheck's "RACECHECK SUMMARY: 2 hazards displayed")."""
    e, h = _ERRORS.findall(text), _HAZARDS.findall(text)
    return {"errors": int(e[-1]) if e else None, "hazards": int(h[-1]) if h else None}


def reports(text: str, limit: int = 3) -> list:
    """The first ``limit`` distinct report lines of a sanitizer log ("Error: Race reported
    between ...", "Barrier error detected. Divergent thread(s) in warp", ...), prefix removed."""
    out = []
    for ln in text.splitlines():
        s = re.sub(r"^=+\s*", "", ln).strip()
        if re.match(r"(Error|Warning|Barrier error|Invalid|Race|Divergent|Program hit)", s) and s not in out:
            out.append(s)
        if len(out) >= limit:
            break
    return out


def sanitize(tool: str, key: str, shape, timeout_s: float = 300, **kw) -> dict:
    """Run catalog GEMM kernel ``key`` under ``compute-sanitizer --tool <tool>
    --error-exitcode 1`` in a child (``tool``: "racecheck", "synccheck", "memcheck").

    Returns :func:`run`'s dict plus ``"tool"``, ``"result"`` (the child's own check),
    the counts of :func:`summary`, ``"reports"`` (:func:`reports`) and ``"caught"``: True
    when the sanitizer reported something (exit status 1, or a non-zero count) or the run
    timed out (a hang). Raises FileNotFoundError when compute-sanitizer is not found,
    ValueError for an unknown tool."""
    if tool not in ("racecheck", "synccheck", "memcheck", "initcheck"):
        raise ValueError(f"tool={tool!r}: must be racecheck, synccheck, memcheck or initcheck")
    san = sanitizer_path()
    if san is None:
        raise FileNotFoundError("compute-sanitizer not found (PATH, $CUDA_PATH/bin, /usr/local/cuda/bin)")
    argv = [san, "--tool", tool, "--error-exitcode", "1", "--report-api-errors", "no", "--print-limit", "20",
            *child_argv(key, shape, **kw)]
    r = run(argv, timeout_s, env=child_env())
    text = r["stdout"] + "\n" + r["stderr"]
    counts = summary(text)
    found = any(v for v in counts.values() if v)
    return {**r, "tool": tool, "result": parse_result(r["stdout"]), **counts, "reports": reports(text),
            "caught": bool(r["timed_out"] or r["rc"] == 1 or found)}


# ------------------------------------------------------------------ the child
def _child(key: str, shape, seed: int, offset_a: int, unchecked: bool) -> dict:
    cp = gpu.cupy()
    spec = catalog.get(key)
    M, N, K = shape
    rng = np.random.default_rng(seed)
    Ah = rng.standard_normal((M, K), dtype=np.float32)
    Bh = rng.standard_normal((K, N), dtype=np.float32)
    buf = cp.asarray(np.concatenate([np.zeros(offset_a, np.float32), Ah.ravel()]))
    A = buf[offset_a:].reshape(M, K)                  # offset_a > 0: contiguous, but 4 * offset_a bytes in
    B = cp.asarray(Bh)
    C = cp.asarray(np.full((M, N), np.nan, dtype=np.float32))     # poisoned without a library kernel
    if unchecked:                                     # the preconditions skipped on purpose
        L = launch.prepare(key, shape)
        L(A, B, C, M, N, K)
    else:
        launch.gemm(key, A, B, C)
    cp.cuda.Device().synchronize()
    Ch = cp.asnumpy(C)
    ref = Ah.astype(np.float64) @ Bh.astype(np.float64)
    nans = int(np.isnan(Ch).sum())
    err = verify.rel_err(Ch, ref)
    try:
        verify.check(Ch, ref, spec.dtype, what=key)
        ok, msg = True, f"{key}: relative error {err:.2e}, within the {spec.dtype} tolerance"
    except AssertionError as e:
        ok, msg = False, str(e)
    return {"key": key, "shape": [M, N, K], "rel_err": err, "nans": nans, "ok": ok, "message": msg}


def main(argv) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m helpers.runtime.isolated")
    ap.add_argument("what", choices=["gemm"])
    ap.add_argument("key")
    ap.add_argument("shape", type=int, nargs=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--offset-a", type=int, default=0)
    ap.add_argument("--unchecked", action="store_true")
    a = ap.parse_args(argv)
    try:
        out = _child(a.key, tuple(a.shape), a.seed, a.offset_a, a.unchecked)
        rc = 0
    except Exception as e:                            # a CUDA error, a refused precondition: say which
        out = {"key": a.key, "shape": list(a.shape), "error": f"{type(e).__name__}: {e}".strip()}
        rc = 3
    print(RESULT_TAG + json.dumps(out), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
