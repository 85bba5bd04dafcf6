"""Record chapter 7's ladder from WMMA to mma.sync on a GPU: results/<gpu>-ladder.json.

Usage (on a GPU machine, from the repository root)::

    python scripts/record_ladder.py [--dtypes float16 bfloat16] [--out PATH]

Each rung of :func:`helpers.chapters.ch07_mma_sync.ladder_rungs` is checked against its
catalog rules first, then all rungs are verified against a float64 reference and timed
against cuBLAS in alternating rounds, in one run (:func:`~helpers.chapters.ch07_mma_sync.ladder_measure`,
one ``bench.gemm`` call per dtype). Writes ``{"provenance", "shape", "runs": {dtype: [record
per rung, with "rung", "change", "what"]}}`` (provenance as in results/<gpu>.json: GPU,
driver, CUDA runtime, CuPy, date, commit) to ``--out`` (default
results/<gpu-slug>-ladder.json) and prints one line per rung. About a minute on an H200
with a cold compile cache (fp16 only).
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch07_mma_sync as ch
from helpers.runtime import gpu, results

SHAPE = (4096, 4096, 4096)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", nargs="+", default=["float16"], choices=sorted(ch.LADDER_KEYS))
    ap.add_argument("--out", default=None, help="default: results/<gpu-slug>-ladder.json")
    args = ap.parse_args()
    for dt in args.dtypes:                       # every rung passes the catalog's rules before anything compiles
        ch.ladder_check(ch.ladder_rungs(dt), SHAPE)
    if not gpu.live():
        sys.exit("record_ladder.py needs a GPU")
    t0 = time.time()
    prov = results.provenance()
    doc = {"provenance": prov, "shape": list(SHAPE), "runs": {}}
    for dt in args.dtypes:
        recs = ch.ladder_measure(dt, SHAPE)
        doc["runs"][dt] = [{k: v for k, v in r.items() if k != "source"} for r in recs]
        for r in recs:
            print(f"{dt} rung {r['rung']} {r['change']:14s} {r['value']:8.2f} TFLOP/s  ratio {r['ratio']:.4f}  "
                  f"cuBLAS {r['reference_value']:.1f}  rel_err {r['rel_err']:.1e}", flush=True)
    out = Path(args.out) if args.out else results.RESULTS_DIR / f"{gpu.slug(prov['gpu'])}-{ch.LADDER_ARTIFACT}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
