"""Run every pitfall of the appendix on a GPU and write results/<gpu>-pitfalls.json.

Usage (on a GPU machine, from the repository root):

    GEMM_BOOK_COMMIT=$(git rev-parse --short=12 HEAD) python scripts/record_pitfalls.py [--out DIR]

What it runs (helpers/chapters/ch11_pitfalls.py, ``record()``), about a minute on an H200:

* the double buffer with and without its barrier: 5 reference checks each at 1024^3,
  and ``compute-sanitizer --tool racecheck --error-exitcode 1`` on each (a child process);
* the tiled GEMM with ``__syncthreads()`` inside its bounds check and the fixed one: the
  reference check at 1000^3 and ``--tool synccheck``, each in a child process with a
  time limit (a hang is recorded as such, it cannot stop this script);
* the transposes with and without swapped block coordinates (exact check);
* chapter 2's float4 kernel on a view one float into its allocation: the precondition's
  ValueError, the aligned copy, and the unchecked launch in a child process;
* one kernel timed with a host clock without synchronizing, with it, and with CUDA events;
* chapter 6's WMMA kernel with fp32 and fp16 accumulators on random inputs, K up to 65536.

The file has the provenance block of every results file (GPU, driver, CUDA runtime,
CuPy, date, commit: ``$GEMM_BOOK_COMMIT`` or ``git rev-parse``), plus ``command`` and
the compute-sanitizer version. ``--out DIR`` also copies it there. Prints one line per
check last; exits with status 1 when a fixed kernel fails its check or a sanitizer misses
a broken one (the file is written anyway, so the run can be read).
"""
import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch11_pitfalls as ch
from helpers.runtime import gpu, isolated, results


def sanitizer_version() -> str | None:
    san = isolated.sanitizer_path()
    if san is None:
        return None
    try:
        out = subprocess.run([san, "--version"], capture_output=True, text=True, timeout=60).stdout
        return " ".join(ln.strip() for ln in out.splitlines() if "ersion" in ln) or out.strip()[:200]
    except Exception as e:
        return f"unknown ({type(e).__name__})"


def verdicts(doc: dict) -> list[tuple[bool, str]]:
    """(expected, line) for every check the appendix claims."""
    out = []
    db = doc["double_buffer"]
    fixed, broken = db["reference"]
    out.append((fixed["wrong"] == 0, f"dbuf_fixed passes the reference check ({fixed['runs']} runs)"))
    out.append((True, f"dbuf_no_barrier_pitfall wrong in {broken['wrong']} of {broken['runs']} reference checks"))
    for r in db["racecheck"] + doc["sync_in_branch"]["synccheck"]:
        if r["caught"] is None:
            out.append((False, f"{r['tool']} {r['kernel']}: not run ({r.get('skipped')})"))
        elif r["tool"] == "synccheck" and "pitfall" in r["kernel"]:
            # Reported, not expected either way: on the H200 (sm_90, 2026-12-01) synccheck found
            # nothing in this kernel; the reference check is the one that catches it.
            out.append((True, f"{r['tool']} {r['kernel']}: {'caught' if r['caught'] else 'clean'} "
                              f"(rc {r['rc']}, errors {r['errors']}; reported, the reference check is the catch)"))
        else:
            want = "pitfall" in r["kernel"]
            out.append((r["caught"] == want, f"{r['tool']} {r['kernel']}: {'caught' if r['caught'] else 'clean'} "
                                             f"(rc {r['rc']}, errors {r['errors']}, hazards {r['hazards']}, "
                                             f"timed out {r['timed_out']})"))
    for r in doc["sync_in_branch"]["reference"]:
        want = r["kernel"] == "guard_fixed"
        out.append((bool(r["ok"]) == want, f"reference {r['kernel']}: ok={r['ok']} timed_out={r['timed_out']} "
                                           f"rel_err={r['rel_err']}"))
    for r in doc["transpose"]["rows"]:
        want = r["kernel"] == "transpose_swapped"
        out.append(((r["wrong"] == 0) == want, f"transpose {r['kernel']} {r['shape']}: {r['wrong']} wrong, "
                                               f"{r['nans']} NaN"))
    m = doc["misaligned"]
    out.append((bool(m["precondition"]), f"misaligned view refused: {m['precondition']}"))
    out.append((m["unchecked"]["rc"] not in (0, None) or m["unchecked"]["timed_out"],
                f"unchecked misaligned launch in a child: rc {m['unchecked']['rc']}: {m['unchecked']['error'][:120]}"))
    t = doc["timing"]["rows"]
    out.append((t[0]["ms"] < t[2]["ms"], f"timing: no sync {t[0]['ms']} ms vs events {t[2]['ms']} ms"))
    big = [r for r in doc["fp16_accumulator"]["rows"] if r["inputs"].startswith("uniform")][-1]
    out.append((big["fp32 accumulator"] < big["fp16 accumulator"],
                f"fp16 accumulator at K={big['K']}: {big['fp16 accumulator']} vs fp32 {big['fp32 accumulator']}"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="also copy the results file into this folder")
    args = ap.parse_args()
    if not gpu.live():
        sys.exit("record_pitfalls.py needs a GPU")
    t0 = time.time()
    prov = {**results.provenance(), "command": " ".join(["python"] + sys.argv),
            "compute_sanitizer": sanitizer_version()}
    doc = {"provenance": prov, **ch.record()}
    path = results.RESULTS_DIR / f"{gpu.slug(prov['gpu'])}-{ch.ARTIFACT}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(args.out) / path.name)
    lines = verdicts(doc)
    for ok, line in lines:
        print(("ok        " if ok else "UNEXPECTED ") + line)
    print(f"wrote {path} in {time.time() - t0:.0f} s")
    sys.exit(0 if all(ok for ok, _ in lines) else 1)


if __name__ == "__main__":
    main()
