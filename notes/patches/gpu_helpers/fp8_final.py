"""Rung 2 as committed: shipped defaults against BN 192 with scales from the ring (SCALE_LOAD 1) and its controls."""
import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt, verify
B = [("fp8_r2_block", {}), ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1, "CLUSTER_M": 1}),
     ("fp8_r2_block", {"BN": 192, "STAGES": 4, "SCALE_LOAD": 0})]
tol = verify.TOLERANCE[rt.OUT_TOLERANCE]
for shape in ((333, 392, 4112), (1000, 1000, 1024)):
    data = rt.inputs(shape, "block", bf16_reference=False)
    r = rt.measure(ch.prepare(*B[1][:1], shape, **B[1][1]), data, timed=False)
    print(f"odd {shape} SL2 err {r['rel_err']:.2e} {'ok' if r['rel_err'] <= tol else 'WRONG'}", flush=True)
for shape, passes in (((8192,) * 3, 2), ((4096,) * 3, 1)):
    data = rt.inputs(shape, "block")
    for rep in range(passes):
        for key, p in (B if rep == 0 else B[::-1]):
            r = ch.measure(key, data, rounds=3, **p)
            print(f"{shape[0]}^3 {json.dumps(p):62s} {r['value']:7.1f} TFLOP/s ratio {r['ratio']:.3f} err {r['rel_err']:.2e}", flush=True)
