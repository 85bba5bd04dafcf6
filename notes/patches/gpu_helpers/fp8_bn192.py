"""BN = 192 (notes/patches/fp8_bn192.patch applied): rung 2 and fp8_promote at BN 192 against the shipped BN 128, 8192^3 and 4096^3, ratios to cuBLASLt in alternating rounds; three passes in rotated order."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt
B = [("fp8_r2_block", {}), ("fp8_r2_block", {"BN": 192, "STAGES": 4}),
     ("fp8_promote", {"BN": 192, "STAGES": 4, "PROMOTE": 1}), ("fp8_promote", {"BN": 192, "STAGES": 4, "PROMOTE": 0}),
     ("fp8_promote", {"PROMOTE": 1})]
rows = []
for shape in ((8192,) * 3, (4096,) * 3):
    data = {s: rt.inputs(shape, s) for s in ("tensor", "block")}
    for rep in range(3):
        for key, p in B[rep:] + B[:rep]:
            try:
                r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=3, **p)
            except Exception as e:
                print(f"{shape[0]}^3 {key} {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            rows.append({"shape": shape[0], "kernel": key, "params": p, "value": r["value"], "ratio": r["ratio"], "rel_err": r["rel_err"]})
            print(f"{shape[0]}^3 {key:13s} {json.dumps(p):45s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
for shape in ((1000, 1000, 1008), (129, 392, 4112), (200, 264, 176), (64, 8, 16)):
    data = rt.inputs(shape, "block")
    for p in ({}, {"BN": 192, "STAGES": 4}):
        try:
            r = ch.measure("fp8_r2_block", data, rounds=1, **p)
            print(f"odd {shape} fp8_r2_block {json.dumps(p)} err {r['rel_err']:.2e} ok", flush=True)
            rows.append({"shape": list(shape), "kernel": "fp8_r2_block", "params": p, "rel_err": r["rel_err"], "ratio": r["ratio"]})
        except Exception as e:
            print(f"odd {shape} fp8_r2_block {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
