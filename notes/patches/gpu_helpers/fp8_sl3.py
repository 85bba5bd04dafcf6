"""SCALE_LOAD 3 (scales one k-tile ahead in registers) against 2 (producer warp, smem) and 0/1."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt, verify
B = [("fp8_r2_block", {}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 3}), ("fp8_r2_block", {"STAGES": 6, "SCALE_LOAD": 3}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 0}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 3, "CLUSTER_M": 1})]
tol = verify.TOLERANCE[rt.OUT_TOLERANCE]
for shape in ((333, 392, 4112), (200, 264, 176), (128, 192, 128), (1000, 1000, 1024)):
    data = rt.inputs(shape, "block", bf16_reference=False)
    for key, p in B[1:]:
        try:
            r = rt.measure(ch.prepare(key, shape, **p), data, timed=False)
            print(f"odd {shape} {json.dumps(p)} err {r['rel_err']:.2e} {'ok' if r['rel_err'] <= tol else 'WRONG'}", flush=True)
        except Exception as e:
            print(f"odd {shape} {p} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
for shape, passes, builds in (((8192,) * 3, 2, B), ((4096,) * 3, 1, B[:4])):
    data = rt.inputs(shape, "block")
    for rep in range(passes):
        for key, p in (builds if rep == 0 else builds[::-1]):
            r = ch.measure(key, data, rounds=3, **p)
            print(f"{shape[0]}^3 {key:13s} {json.dumps(p):62s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
