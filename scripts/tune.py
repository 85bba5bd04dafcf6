"""Autotune kernels of the book on this GPU (heaven 8) and record the result.

Usage (on a GPU): ``python scripts/tune.py [--kernels cp_async mma_sync_f16 mma_sync_bf16]
[--top 16] [--sample 8] [--seed 0] [--shape 4096 4096 4096] [--out results/<gpu>-tuning.json]``

For each kernel: every combination of its slider choices is pruned by the catalog's rules
(this GPU's shared-memory limit included), ranked by helpers.models.tuning's cost model
(with chapter 7's ldmatrix bank model for mma_sync) with registers from nvcc (the head of an estimate's order when the space is too large),
then the top ``--top`` plus a seeded random ``--sample`` of the rest are compiled in
parallel and timed against cuBLAS in the same run (helpers.runtime.tune.tune). Writes
one document per kernel, with provenance, the timed configurations, the winner and the
model's Spearman correlation with the measurements.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import helpers  # noqa: E402,F401  (fills the catalog)
from helpers.chapters.ch08_profiling import TUNE_SHARED_EFF  # noqa: E402
from helpers.runtime import gpu, tune  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=["cp_async", "mma_sync_f16", "mma_sync_bf16"])
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--slug", help="results file slug (default: this GPU's)")
    a = ap.parse_args(argv)
    if not gpu.live():
        print("tune.py: no GPU visible; nothing timed", file=sys.stderr)
        return 1
    docs = []
    for key in a.kernels:
        doc = tune.tune(key, tuple(a.shape), top=a.top, sample=a.sample, seed=a.seed,
                        shared_eff=TUNE_SHARED_EFF.get(key))
        b = doc["best"]
        print(f"{key}: {doc['space']} configurations, {doc['refused']} refused by the rules, {doc['ranked']} ranked, "
              f"{len(doc['timed'])} timed; best {b['value']:.1f} TFLOP/s = {b['ratio']:.3f} x cuBLAS {b['params']}; "
              f"model Spearman {doc['model_spearman']}", flush=True)
        docs.append(doc)
    print("wrote", tune.save(docs, a.slug))
    return 0


if __name__ == "__main__":
    sys.exit(main())
