"""Record the exercise checks on this GPU: results/<gpu-slug>-exercises.json.

Every starter, solution and deliberately wrong variant of every exercise
(helpers/chapters/exercises.py, kernels/exercises/) goes through the same check a reader's
kernel gets: in a child process with a time limit, odd shapes then large ones, NaN-poisoned
output, float64 reference; each solution is then timed against its chapter's kernel and
cuBLAS in the same run (helpers.runtime.bench.measure). The wrong variants and starters run
--workers at a time (untimed), the solutions one at a time.

Writes {"provenance": as in results/<gpu>.json, "exercises": {id: {variant: {"hint",
"passed", "expected", "verdict", "details", "records", "wall_s", "last_stage"}}}} and prints
one line per file; exits 1 when a file got a hint it was not expected to get (the file is
written anyway, so the notebooks show what happened).

    python scripts/record_exercises.py [--only 3.1 4.1] [--workers 4]
    python scripts/record_exercises.py --table      # no GPU: the recorded file as a Markdown table
"""
from __future__ import annotations

import argparse
import os
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import exercises as ex
from helpers.runtime import gpu, results


def table(doc) -> str:
    """Markdown: per exercise, each wrong variant and starter with the hint it got, and the
    solution's speed against the chapter's kernel and cuBLAS (same run)."""
    if not doc:
        return f"results/<gpu>-{ex.ARTIFACT}.json: not recorded yet"
    prov = doc["provenance"]
    out = [f"Recorded on {prov['gpu']} ({prov['date']}, commit {prov['commit']}).", "",
           "| exercise | file | hint | expected | solution TFLOP/s | x chapter kernel | x cuBLAS |",
           "|---|---|---|---|---:|---:|---:|"]
    for i, vs in doc["exercises"].items():
        for v, s in vs.items():
            recs = s.get("records") or []
            speed = ["", "", ""]
            if len(recs) == 2 and recs[0]["value"] and recs[1]["value"]:
                speed = [f"{recs[0]['value']:.3g}", f"{recs[0]['value'] / recs[1]['value']:.3g}",
                         f"{recs[0]['ratio']:.3g}"]
            out.append(f"| {i} | {v} | {s['hint']} | {' or '.join(s['expected'])} | " + " | ".join(speed) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="exercise ids (default: all)")
    ap.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 4),
                    help="wrong variants checked at once (default: the CPU count, at most 8)")
    ap.add_argument("--out", default=None, help="default: results/<gpu-slug>-exercises.json")
    ap.add_argument("--table", action="store_true", help="print the recorded file as a Markdown table and stop")
    a = ap.parse_args(argv)
    if a.table:
        print(table(results.artifact(ex.ARTIFACT)))
        return 0
    if not gpu.live():
        print("no CUDA GPU visible: nothing recorded", file=sys.stderr)
        return 2
    t0 = time.time()
    prov = results.provenance()
    out = Path(a.out) if a.out else results.RESULTS_DIR / f"{gpu.slug(prov['gpu'])}-{ex.ARTIFACT}.json"
    doc = json.loads(out.read_text()) if out.is_file() and a.only else {"exercises": {}}
    got = ex.check_files(a.only, workers=a.workers, say=lambda s: print(s, flush=True))
    doc["provenance"] = prov
    doc.setdefault("exercises", {}).update(got)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    bad = [f"{i} {v}: got {s['hint']}, expected {' or '.join(s['expected'])}"
           for i, vs in got.items() for v, s in vs.items() if s["hint"] not in s["expected"]]
    print(f"wrote {out} in {time.time() - t0:.0f} s; {len(bad)} unexpected hint(s)")
    for b in bad:
        print("  UNEXPECTED", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
