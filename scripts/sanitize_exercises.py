"""Run every exercise's solution once on its small shapes, in this process, for compute-sanitizer.

Usage (on a GPU machine):
    compute-sanitizer --tool memcheck  --error-exitcode 1 python scripts/sanitize_exercises.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python scripts/sanitize_exercises.py

The book checks a reader's kernel in a child process (helpers.runtime.exercise.check); here the
same child code runs in this process (helpers.runtime.exercise.run_here), so the sanitizer sees
every launch of the solution, of its owner-recording build and of the probe. Only the small odd
shapes run (the sanitizers slow kernels 10-100x), no timing. The deliberately wrong variants are
left out: they fault, race or hang on purpose, and tests/gpu/test_exercises_gpu.py checks that
each gets its hint. Exit status 1 if a solution does not pass on a GPU that can run it.
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.chapters import exercises as ex
from helpers.models import exercise as model
from helpers.runtime import catalog, exercise as rt, gpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", nargs="+", default=list(ex.EXERCISES), help="exercise ids (default: all)")
    a = ap.parse_args(argv)
    if not gpu.live():
        print("no GPU: nothing to run")
        return 0
    cc = gpu.capability()
    failed = 0
    for ex_id in a.ids:
        e = ex.get(ex_id)
        spec = catalog.get(e.key)
        if not spec.runs_on(cc):
            print(f"{ex_id}: skipped, {e.key} needs {spec.needs()}")
            continue
        small = [s for s in e.shapes if max(s) < 512] or list(e.shapes[:1])
        j = ex.job_for(e, e.text("solution"), small, timed=False)
        t0 = time.perf_counter()
        res = rt.run_here(j)
        d = model.diagnose(ex.observe(e, e.text("solution"), res))
        ok = d["hint"] == "pass"
        failed += not ok
        runs = res.get("runs", [])
        print(f"{ex_id} ({e.key}): {d['hint']}; shapes {', '.join('x'.join(map(str, s)) for s in small)}; "
              f"{sum(r['ok'] for r in runs)}/{len(runs)} correct; {time.perf_counter() - t0:.1f} s")
    print(f"sanitize_exercises: {len(a.ids) - failed} of {len(a.ids)} solutions passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
