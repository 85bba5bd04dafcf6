"""The control behind the book's one currency: does cuBLAS's own rate depend on the kernel
it alternates with?

Every speed in the book is a ratio to cuBLAS timed in alternating rounds with the kernel
(:func:`helpers.runtime.bench.measure`). On the H200 the recorded cuBLAS fp16 rate at
4096^3 differs between runs: 739.6 TFLOP/s timed alone (the ceilings), 648 to 719 beside
heavens 6 to 10 (results/h200.json). This script times cuBLAS alternately with four
partners in one run, with the SM clock and board power sampled during each pair
(:class:`helpers.runtime.power.PowerSampler`):

* cuBLAS itself (the control: a ratio of 1 by construction, and cuBLAS's rate when its
  partner draws what it draws);
* heaven 10's kernel (hopper_r5_tma_store_f16, sm_90 only);
* heaven 7's kernel (mma_sync_f16);
* a device-to-device copy of 256 MB (a partner that draws little Tensor Core power).

Usage (a GPU machine, repository root; about a minute on an H200)::

    GEMM_BOOK_COMMIT=$(git rev-parse --short=12 HEAD) python scripts/reference_control.py [--out DIR] [--rounds 5]

Writes ``reference_control.json`` to --out (default: results/, as <gpu>-reference.json):
per partner, cuBLAS's TFLOP/s beside it, the partner's ms (and its error where it computes
the GEMM), and the clock/power summary.
If cuBLAS's rate beside a partner differs from its rate beside itself by more than the spread
of the pairs, a same-run ratio depends on the partner, and the book must say by how much.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime import bench, catalog, gpu, launch, power, results, timing

SHAPE = (4096, 4096, 4096)
PARTNERS = ("cuBLAS", "hopper_r5_tma_store_f16", "mma_sync_f16", "copy")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget-ms", type=float, default=1500.0)
    a = ap.parse_args()
    if not gpu.live():
        sys.exit("reference_control.py needs a CUDA GPU")
    cp = gpu.cupy()
    M, N, K = SHAPE
    data = bench.inputs(SHAPE, "float16", "gemm")
    src = cp.ones(128 * 2 ** 20, cp.float16)             # 256 MB, copied device to device
    dst = cp.empty_like(src)
    rows = []
    for name in PARTNERS:
        # bench.measure times `run` and cuBLAS (data.reference) in alternating rounds: its
        # reference_value is cuBLAS's rate beside this partner, the number this control is after
        check, layout = True, "NN"
        if name == "cuBLAS":
            def run(A, B, C):
                cp.matmul(A, B, out=C)
        elif name == "copy":
            check = False                                # the partner computes no GEMM
            copy = timing.memcpy_d2d(dst, src)

            def run(A, B, C, copy=copy):
                copy()
        else:
            spec = catalog.get(name)
            if not spec.runs_on(gpu.device_info()["cc"]):
                rows.append({"partner": name, "skipped": f"needs {spec.needs()}"})
                continue
            L, layout = launch.prepare(name, SHAPE), spec.layout

            def run(*args, L=L):
                L(*args, M, N, K)
        with power.PowerSampler() as ps:
            r = bench.measure(run, SHAPE, "float16", data=data, layout=layout, check=check, rounds=a.rounds,
                              budget_ms=a.budget_ms, kernel=name).as_dict()
        row = {"partner": name, "cuBLAS TFLOP/s": r["reference_value"], "partner ms": r["ms"],
               "partner rel_err": r["rel_err"], "power": ps.summary()}
        rows.append(row)
        print(f"cuBLAS beside {name:26s} {row['cuBLAS TFLOP/s']:8.1f} TFLOP/s  partner {r['ms']} ms  "
              f"{power.power_note(row['power'])}", flush=True)
    doc = {"provenance": results.provenance(), "command": "scripts/reference_control.py",
           "shape": list(SHAPE), "dtype": "float16", "rounds": a.rounds, "pairs": rows}
    out = Path(a.out) / "reference_control.json" if a.out else \
        Path(__file__).resolve().parent.parent / "results" / f"{results.DEFAULT_SLUG}-reference.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
