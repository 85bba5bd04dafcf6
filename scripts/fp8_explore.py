"""Chapter 11's rung 2 on an H100/H200: the block-scaled and promotion builds with and
without PINGPONG (the two consumer warpgroups taking turns), over clusters and ring
depths, each against cuBLASLt FP8 (``torch._scaled_mm``) timed in the same run in
alternating rounds, checked against float64 of the dequantized inputs.

    python scripts/fp8_explore.py [--rounds 3] [--out DIR]      # about 2 minutes

Prints one line per build and writes fp8_explore.json to --out (default: the working
directory). A development measurement: the chapter's numbers come from record_fp8.py.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt

BUILDS = [("fp8_r2_block", {"PINGPONG": pp, "CLUSTER_M": cl, "STAGES": st})
          for pp in (0, 1) for cl in (1, 2) for st in (4, 6)]
BUILDS += [("fp8_promote", {"PROMOTE": P, "PINGPONG": pp}) for P in (0, 1, 2, 4) for pp in (0, 1)]
BUILDS += [("fp8_r1_tensor", {})]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    rows, t0 = [], time.time()
    for shape in ((8192,) * 3, (4096,) * 3):
        data = {s: rt.inputs(shape, s) for s in ("tensor", "block")}
        for key, p in BUILDS:
            if shape[0] == 4096 and key == "fp8_r2_block" and p["STAGES"] == 4:
                continue
            r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=a.rounds, **p)
            rows.append({"shape": list(shape), "kernel": key, "params": p, "value": r["value"],
                         "reference_value": r["reference_value"], "ratio": r["ratio"], "rel_err": r["rel_err"]})
            print(f"{shape[0]}^3 {key:14s} {json.dumps(p):48s} {r['value']:8.1f} TFLOP/s  "
                  f"ratio {r['ratio']:.3f}  err {r['rel_err']:.2e}  ({time.time() - t0:.0f} s)", flush=True)
    Path(a.out, "fp8_explore.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
