"""Measure every shipped kernel configuration and write results/<gpu>.json.

Usage (on a GPU machine): ``python scripts/record_results.py [--chapters 0 1 2] [--quick | --missing]``

Records, with the provenance of this run (GPU, driver, CUDA runtime, CuPy,
date, commit): the ceilings (copy bandwidth, cuBLAS per dtype, the spec
sheet), every catalog kernel at its default parameters on the book's shape
(GEMM 4096^3, transpose 4096^2), every point of each kernel's sweep, and the
timing-rule demonstrations of chapter 0. Each record holds the kernel's value
and the same-run reference (cuBLAS or cudaMemcpy), so ratios are honest even
though absolute figures move between runs. Prints a summary table last.
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.runtime import bench, catalog, gpu, results, roofline, sweep, timing, verify

GEMM_SHAPE = (4096, 4096, 4096)
T_SHAPE = (4096, 4096)
# Chapters that also record their defaults at a larger size (chapter 10's ladder at 8192^3).
EXTRA_SHAPES = {10: [(8192, 8192, 8192)]}


def measure(key, shape, params=None):
    spec = catalog.get(key)
    item = (key, {**spec.defaults, **(params or {})})
    try:
        if spec.op == "gemm":
            return bench.gemm([item], shape)[0]
        return bench.transpose([item], shape)[0]
    except verify.WrongResult as e:   # a pitfall kernel: wrong on purpose
        return results.Record(chapter=spec.chapter, kernel=key, params=item[1], dtype=spec.dtype,
                              shape=list(shape), metric="TFLOP/s" if spec.op == "gemm" else "GB/s", value=None,
                              reference="cuBLAS" if spec.op == "gemm" else "cudaMemcpy D2D",
                              reference_value=None, ratio=None, rel_err=None, wrong=str(e)).as_dict()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chapters", type=int, nargs="*", default=None)
    ap.add_argument("--quick", action="store_true", help="defaults only, no sweeps")
    ap.add_argument("--missing", action="store_true",
                    help="only the shipped configurations (defaults and sweep points) with no record yet; "
                         "other records stay as they are, no extras")
    args = ap.parse_args()
    if not gpu.live():
        sys.exit("record_results.py needs a GPU")
    t0 = time.time()
    prov = results.provenance()
    slug = gpu.slug(prov["gpu"])
    ceil = roofline.measure_ceilings()
    print(f"ceilings: copy {ceil['copy_GBps']} GB/s, cuBLAS {ceil['cublas_TFLOPs']}", flush=True)
    runs = []
    for key, spec in catalog.KERNELS.items():
        if args.chapters is not None and spec.chapter not in args.chapters:
            continue
        if spec.dtype.startswith("float8"):       # FP8 has its own recorder and reference (cuBLASLt FP8)
            print(f"ch{spec.chapter} {key}: recorded by scripts/record_fp8.py", flush=True)
            continue
        shape = GEMM_SHAPE if spec.op == "gemm" else T_SHAPE
        if args.missing:
            todo = [c for c in spec.configs() if results.lookup(key, c, spec.dtype, shape, slug) is None]
            recs = sweep.run(key, shape, points=todo) if todo else []
            runs += recs
            for r in recs:
                print(f"ch{spec.chapter} {key:24s} {str(r['params']):60s} {r['value']} ratio {r['ratio']}", flush=True)
            continue
        recs = [measure(key, shape)]
        if not args.quick and spec.sweep:
            recs = sweep.run(key, shape)
        recs += [measure(key, s) for s in EXTRA_SHAPES.get(spec.chapter, [])]
        runs += recs
        for r in recs:
            v = "WRONG (pitfall)" if r["value"] is None else f"{r['value']:9.2f} {r['metric']:7s} ratio {r['ratio']:.3f}"
            print(f"ch{spec.chapter} {key:24s} {str(r['params']):60s} {v}", flush=True)
    extras = {}
    if not args.missing and (args.chapters is None or 0 in args.chapters):
        extras["timing_rules"] = timing.rule_demos()
    if not args.missing and (args.chapters is None or 6 in args.chapters or 7 in args.chapters):
        from helpers.chapters import ch06_wmma
        from helpers.runtime import precision
        extras["tf32_vs_fp32"] = precision.tf32_vs_fp32(4096)
        extras["fp16_accumulator"] = ch06_wmma.fp16_accumulator_demo()
    if not args.missing and (args.chapters is None or 7 in args.chapters):
        from helpers.chapters import ch07_mma_sync
        extras["mma_sync_probes"] = {dt: ch07_mma_sync.mma_sync_probes(dt, GEMM_SHAPE)
                                     for dt in ch07_mma_sync.PROBE_KEYS}
        for dt, r in extras["mma_sync_probes"].items():
            print(f"ch7 probes {dt}: " + ", ".join(f"{x['probe']}:{x['ratio']:.3f}" for x in r["rows"]), flush=True)
    # a full run (not --quick) measured every shipped configuration of its chapters:
    # their older records go, so none of a configuration the catalog no longer ships stays
    full = () if (args.quick or args.missing) else sorted({r["chapter"] for r in runs})
    before = results.load(slug)
    data_path = results.merge(runs, slug, ceilings={k: ceil[k] for k in ("copy_GBps", "cublas_TFLOPs", "spec")},
                              prov=prov, replace_chapters=full)
    if args.missing and before.get("provenance"):
        # Only new records were added (each stamped with this run's date and commit): the file's
        # ceilings and top-level provenance stay those of the full run the other records come from.
        data = results.load(slug)
        data["provenance"], data["ceilings"] = before["provenance"], before["ceilings"]
        results.save(data, slug)
    if extras:
        data = results.load(slug)
        data.setdefault("extras", {}).update(extras)
        results.save(data, slug)
    print(f"wrote {data_path} ({len(runs)} runs) in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
