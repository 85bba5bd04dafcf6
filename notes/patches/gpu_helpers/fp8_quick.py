"""Rung 2 (block scales) against fp8_promote PROMOTE=1 and PROMOTE=0 at 8192^3 and 4096^3, each vs cuBLASLt in alternating rounds; three passes in rotated order."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt
B = [("fp8_r2_block", {}), ("fp8_promote", {"PROMOTE": 1}), ("fp8_promote", {"PROMOTE": 0})]
rows = []
for shape in ((8192,) * 3, (4096,) * 3):
    data = {s: rt.inputs(shape, s) for s in ("tensor", "block")}
    for rep in range(3):
        for key, p in B[rep:] + B[:rep]:
            r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=3, **p)
            rows.append({"shape": shape[0], "kernel": key, "params": p, "value": r["value"], "ratio": r["ratio"], "rel_err": r["rel_err"]})
            print(f"{shape[0]}^3 {key:13s} {json.dumps(p):16s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
