"""Measure chapter 9 on a GPU and write results/<gpu>-anyshape.json.

Usage (on an sm_80+ GPU):
    python scripts/record_anyshape.py                       # every section
    python scripts/record_anyshape.py --sections zoo waves  # some sections (merged into the file)
    python scripts/record_anyshape.py --sanitize-small      # every strategy once on tiny odd shapes
    compute-sanitizer --tool memcheck python scripts/record_anyshape.py --sanitize-small
    compute-sanitizer --tool racecheck python scripts/record_anyshape.py --sanitize-small \
        --dtypes float16 --shapes 3 --strategies dp regs streamk_sk hopper   # each kernel build once

Sections (each the return value of the chapter function of the same name,
helpers/chapters/ch09_any_shape.py): ``odd`` (4093^3 against the aligned kernel,
fp16 and bf16), ``check_grid`` (every strategy on the issue's correctness grid),
``splitk_float16`` / ``splitk_bfloat16``, ``reproducibility``, ``streamk_float16`` /
``streamk_bfloat16``, ``waves`` (wave quantization and its control), ``zoo`` (the
shape zoo, fp16), ``end_to_end`` (gemm(A, B, out=C) as a reader calls it over the zoo
and the LLM GEMMs, beside the kernel-only run(), chapter 9's kernels only), ``host``
(CPU microseconds per call of gemm(), run() and cupy.matmul), ``hopper_dispatch`` and
``end_to_end_hopper`` (chapter 10's last section: its kernel as the dispatcher's "hopper"
strategies; sm_90), ``reductions`` (split-K's two deterministic reductions at the same split
count, on both loops: the control behind the dispatcher's row limit for the one-launch sum), ``memory_bound``
(tall-skinny and short-K shapes, auto's plan and the wide tile, against cuBLAS and against a copy of the
same compulsory bytes). Sections other than check_grid, host and those two run with chapter 9's
kernels only (``anyshape.without_hopper``). Every speed is a ratio to cuBLAS timed on the same inputs in
alternating rounds; every result was checked against float64 first. The file's
``provenance`` says where and when (GPU, driver, CuPy, date, commit), and each
section's ``<name>_seconds`` how long it took and ``<name>_commit`` the commit it ran at.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers.chapters import ch09_any_shape as ch, end_to_end as e2e, hopper_dispatch as hd  # noqa: E402
from helpers.runtime import anyshape as rt, gpu, results  # noqa: E402

SECTIONS = {
    "odd": ch.odd_shapes,
    "check_grid": ch.check_grid,
    "splitk_float16": lambda: ch.splitk_rows("float16"),
    "splitk_bfloat16": lambda: ch.splitk_rows("bfloat16"),
    "reproducibility": ch.reproducibility,
    "streamk_float16": lambda: ch.streamk_rows("float16"),
    "streamk_bfloat16": lambda: ch.streamk_rows("bfloat16"),
    "waves": ch.wave_rows,
    "zoo": ch.zoo,
    "end_to_end": e2e.end_to_end,
    "host": e2e.host_rows,
    "hopper_dispatch": hd.hopper_dispatch,
    "end_to_end_hopper": hd.end_to_end_hopper,
    "reductions": e2e.reduction_control,
    "memory_bound": e2e.memory_bound_rows,
}
WITH_HOPPER = ("check_grid", "host", "hopper_dispatch", "end_to_end_hopper", "reductions")   # the others: chapter 9's kernels

SANITIZE = [((35, 79, 19), (0, 0, 0)), ((129, 131, 67), (1, 1, 1)), ((130, 264, 200), (0, 0, 0)),
            ((300, 520, 264), (0, 0, 0))]


def sanitize_small(dtypes, strategies=None, shapes=None) -> int:
    """Every strategy the GPU runs (or those of ``strategies``), once, on small odd shapes
    (:data:`SANITIZE`, or its entries at the indices ``shapes``; the last one has 2 x 3 tiles,
    so stream-K shares tiles between blocks); prints one line per shape."""
    names = [s for s in (strategies or ch.STRATEGIES) if ch.can_run(s) is None]
    for dt in dtypes:
        for shape, offs in (SANITIZE if shapes is None else [SANITIZE[i] for i in shapes]):
            recs = ch.measure(names, shape, dt, offs, check_only=True)
            print(dt, shape, offs, "max rel_err", max(r["rel_err"] for r in recs if r.get("rel_err") is not None),
                  flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", nargs="*", default=list(SECTIONS), choices=list(SECTIONS))
    ap.add_argument("--out", default=None, help="default: results/<gpu slug>-anyshape.json")
    ap.add_argument("--sanitize-small", action="store_true")
    ap.add_argument("--dtypes", nargs="*", default=["float16", "bfloat16"], help="for --sanitize-small")
    ap.add_argument("--strategies", nargs="*", default=None, help="for --sanitize-small (default: all)")
    ap.add_argument("--shapes", nargs="*", type=int, default=None,
                    help="for --sanitize-small: indices into SANITIZE (default: all)")
    a = ap.parse_args()
    if not ch.live_here():
        sys.exit(f"record_anyshape.py needs an sm_80+ GPU ({ch.can_run('dp')})")
    if a.sanitize_small:
        return sanitize_small(a.dtypes, a.strategies, a.shapes)
    prov = results.provenance()
    out = Path(a.out or results.RESULTS_DIR / f"{gpu.slug(prov['gpu'])}-anyshape.json")
    doc = json.loads(out.read_text()) if out.is_file() else {}
    doc["provenance"] = prov
    doc["command"] = "python scripts/record_anyshape.py " + " ".join(sys.argv[1:])
    for name in a.sections:
        t0 = time.time()
        if name in WITH_HOPPER:              # every strategy; the runtime as a reader has it; chapter 10
            doc[name] = SECTIONS[name]()
        else:                                 # chapter 9's own kernels (chapter 10 adds its Hopper path)
            with rt.without_hopper():
                doc[name] = SECTIONS[name]()
        doc[f"{name}_seconds"] = round(time.time() - t0, 1)
        doc[f"{name}_commit"] = prov.get("commit")      # sections merge into one file: each keeps its own
        print(f"{name}: {doc[f'{name}_seconds']} s", flush=True)
        out.write_text(json.dumps(doc, indent=1, default=str))
    if "zoo" in doc:
        print(ch.zoo_summary(doc["zoo"]))
    if "end_to_end" in a.sections:
        print(e2e.summary(doc["end_to_end"]))
        for r in doc["end_to_end"]:
            print(f"{r['M']:>6} x {r['N']:>6} x {r['K']:>6} {r['plan']:32s} gemm() {r['ratio']:.3f} "
                  f"run() {r['kernel ratio']:.3f} host {r['host share']:.2f} best {r['best plan']} {r['best ratio']:.3f}")
    for r in doc.get("host", []) if "host" in a.sections else []:
        print(r)
    for r in doc.get("odd", []):
        print(f"{r['dtype']:9s} {r['title']:40s} {'x'.join(map(str, r['shape'])):15s} {r.get('value')} TFLOP/s "
              f"ratio {r.get('ratio')} of_aligned {r.get('of_aligned')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
