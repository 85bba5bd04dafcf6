"""Autotune kernels of the book on this GPU (heaven 8) and record the result.

Usage (on a GPU):
    python scripts/tune.py [--kernels cp_async mma_sync_f16 mma_sync_bf16] [--top 16] [--sample 8]
                           [--seed 0] [--local-steps 3] [--shape 4096 4096 4096]
    python scripts/tune.py --exhaustive mma_sync_f16      # every valid configuration, timed once
    python scripts/tune.py --confirm 10 [--confirm-rounds 3] [--confirm-field reconfirmed]
                                                          # re-time its top 10 + the tuner's pick side by side
    python scripts/tune.py --accuracy                     # compare the two files, no GPU needed

For each kernel: every combination of its slider choices is pruned by the catalog's rules
(this GPU's shared-memory limit included), ranked by helpers.models.tuning's cost model
(with chapter 7's ldmatrix bank model for mma_sync) with registers from nvcc (a head of the
estimate's order spread over block tiles when the space is too large), then the top ``--top``,
a seeded random ``--sample`` of the rest and the kernel's current default are compiled in
parallel and timed against cuBLAS in the same run, and the fastest is refined through its
one-step neighbours (helpers.runtime.tune.tune). Writes results/<gpu>-tuning.json (one
document per kernel, with provenance); --exhaustive writes results/<gpu>-tuning-exhaustive.json.
--accuracy prints, for each kernel in both files, where the tuner's pick stands in the
exhaustive table (same measurement run for both numbers) and what share of the space it timed.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters.ch08_profiling import TUNE_SHARED_EFF
from helpers.runtime import gpu, results, tune


def accuracy(slug: str = "h200") -> list:
    """Rows comparing the tuner's pick with the exhaustive best (helpers.runtime.tune.accuracy)."""
    return tune.accuracy(json.loads((results.RESULTS_DIR / f"{slug}-tuning.json").read_text()),
                         json.loads((results.RESULTS_DIR / f"{slug}-tuning-exhaustive.json").read_text()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=["cp_async", "mma_sync_f16", "mma_sync_bf16"])
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--local-steps", type=int, default=3)
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--exhaustive", metavar="KERNEL", help="time every valid configuration of KERNEL once")
    ap.add_argument("--accuracy", action="store_true", help="compare the tuning and exhaustive files and exit")
    ap.add_argument("--confirm", type=int, metavar="N",
                    help="re-time the exhaustive file's top N and the tuner's pick with the full method")
    ap.add_argument("--confirm-rounds", type=int, default=3, metavar="R",
                    help="alternating rounds per configuration in --confirm (default 3)")
    ap.add_argument("--confirm-field", default="confirmed", choices=("confirmed", "reconfirmed"),
                    help="where --confirm stores its records in the exhaustive file (default: confirmed)")
    ap.add_argument("--slug", help="results file slug (default: this GPU's)")
    a = ap.parse_args(argv)
    if a.accuracy:
        for row in accuracy(a.slug or "h200"):
            print(json.dumps(row))
        return 0
    if not gpu.live():
        print("tune.py: no GPU visible; nothing timed", file=sys.stderr)
        return 1
    if a.confirm:
        slug = a.slug or gpu.slug(gpu.device_info()["name"])
        path = results.RESULTS_DIR / f"{slug}-tuning-exhaustive.json"
        full = json.loads(path.read_text())
        tuned = json.loads((results.RESULTS_DIR / f"{slug}-tuning.json").read_text())
        for ex in full["runs"]:
            top = [r["params"] for r in sorted(ex["timed"], key=lambda r: -tune.speed(r))[:a.confirm]]
            run = next((r for r in tuned["runs"] if r["kernel"] == ex["kernel"]), None)
            picks = [max(run["timed"], key=tune.speed)["params"], run["best"]["params"]] if run else []
            todo = top + [q for n, q in enumerate(picks) if q not in top and q not in picks[:n]]
            pick = picks[0] if picks else None
            f = a.confirm_field
            ex[f] = tune.confirm(ex["kernel"], todo, tuple(ex["shape"]), rounds=a.confirm_rounds)
            ex[f + "_provenance"] = {**results.provenance(), "command": "python scripts/tune.py " + " ".join(
                sys.argv[1:] if argv is None else argv)}
            for r in ex[f]:
                print(f"{ex['kernel']} confirmed {r['value']} TFLOP/s = {r['ratio']} x cuBLAS"
                      f"{' (tuner pick)' if r['params'] == pick else ''} {r['params']}", flush=True)
        path.write_text(json.dumps(full, indent=1) + "\n")
        print("wrote", path)
        return 0
    if a.exhaustive:
        doc = tune.exhaustive(a.exhaustive, tuple(a.shape))
        b = doc["best"]
        print(f"{a.exhaustive}: {doc['space'] - doc['refused']} valid configurations timed once; best "
              f"{b['value']:.1f} TFLOP/s = {b['ratio']:.3f} x cuBLAS {b['params']}", flush=True)
        print("wrote", tune.save([doc], a.slug, name="tuning-exhaustive"))
        return 0
    docs = []
    for key in a.kernels:
        doc = tune.tune(key, tuple(a.shape), top=a.top, sample=a.sample, seed=a.seed,
                        shared_eff=TUNE_SHARED_EFF.get(key), local_steps=a.local_steps)
        b, d = doc["best"], doc["baseline"]
        print(f"{key}: {doc['space']} configurations, {doc['refused']} refused by the rules, {doc['ranked']} ranked, "
              f"{len(doc['timed'])} timed; best {b['value']:.1f} TFLOP/s = {b['ratio']:.3f} x cuBLAS {b['params']}; "
              f"default {d['value']:.1f} TFLOP/s = {d['ratio']:.3f}; model Spearman {doc['model_spearman']}", flush=True)
        docs.append(doc)
    print("wrote", tune.save(docs, a.slug))
    return 0


if __name__ == "__main__":
    sys.exit(main())
