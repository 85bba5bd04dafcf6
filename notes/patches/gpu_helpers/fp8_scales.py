"""FP8 rung 2: where the block scales come from (SCALE_LOAD 0/1/2) at BN 128 and 192 (STAGES 5 without
staged scales is the control of STAGES 5 with them)
(the scale paths of 2debb53), against cuBLASLt in alternating rounds, three passes
in rotated order at 8192^3 and 4096^3, the scale-free promoted build (fp8_promote PROMOTE 1) as the
ceiling; then correctness of every variant on odd shapes against float64 (bf16 tolerance)."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt, verify
B = [("fp8_r2_block", {}), ("fp8_r2_block", {"SCALE_LOAD": 1}), ("fp8_r2_block", {"STAGES": 5, "SCALE_LOAD": 2}),
     ("fp8_r2_block", {"STAGES": 5}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2}), ("fp8_promote", {"BN": 192, "STAGES": 4, "PROMOTE": 1}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2, "PINGPONG": 1})]
rows = []
for shape in ((8192,) * 3, (4096,) * 3):
    data = {s: rt.inputs(shape, s) for s in ("tensor", "block")}
    for rep in range(3):
        k = (rep * 3) % len(B)
        for key, p in B[k:] + B[:k]:
            try:
                r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=3, **p)
            except Exception as e:
                print(f"{shape[0]}^3 {key} {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            rows.append({"shape": shape[0], "kernel": key, "params": p, "value": r["value"], "ratio": r["ratio"], "rel_err": r["rel_err"]})
            print(f"{shape[0]}^3 {key:13s} {json.dumps(p):50s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
tol = verify.TOLERANCE[rt.OUT_TOLERANCE]
for shape in ((1, 8, 16), (200, 264, 176), (333, 392, 4112), (1000, 1000, 1008), (4093, 4088, 4096)):
    data = rt.inputs(shape, "block", bf16_reference=False)
    for key, p in [b for b in B if b[0] == "fp8_r2_block"]:
        try:
            r = rt.measure(ch.prepare(key, shape, **p), data, timed=False)
            ok = r["rel_err"] <= tol
            print(f"odd {shape} {json.dumps(p)} err {r['rel_err']:.2e} {'ok' if ok else 'WRONG'}", flush=True)
            rows.append({"shape": list(shape), "kernel": key, "params": p, "rel_err": r["rel_err"], "ok": ok})
        except Exception as e:
            print(f"odd {shape} {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
