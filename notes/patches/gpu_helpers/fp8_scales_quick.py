"""Quick form of fp8_scales.py: 8192^3 only, five builds, two rotated passes, then two odd shapes."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt, verify
B = [("fp8_r2_block", {}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2}),
     ("fp8_r2_block", {"STAGES": 5, "SCALE_LOAD": 2}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1}),
     ("fp8_promote", {"BN": 192, "STAGES": 4, "PROMOTE": 1})]
tol = verify.TOLERANCE[rt.OUT_TOLERANCE]
for shape in ((333, 392, 4112), (200, 264, 176)):
    data = rt.inputs(shape, "block", bf16_reference=False)
    for key, p in B[:4]:
        try:
            r = rt.measure(ch.prepare(key, shape, **p), data, timed=False)
            print(f"odd {shape} {json.dumps(p)} err {r['rel_err']:.2e} {'ok' if r['rel_err'] <= tol else 'WRONG'}", flush=True)
        except Exception as e:
            print(f"odd {shape} {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
shape = (8192,) * 3
data = {s: rt.inputs(shape, s) for s in ("tensor", "block")}
for rep in range(2):
    for key, p in (B if rep == 0 else B[::-1]):
        r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=3, **p)
        print(f"8192^3 {key:13s} {json.dumps(p):50s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
