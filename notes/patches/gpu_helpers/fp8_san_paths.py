"""FP8 rung 2's scale paths on odd shapes, one launch each: run under compute-sanitizer memcheck and racecheck."""
import sys

sys.path.insert(0, ".")
import helpers  # noqa: F401
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt

BUILDS = ({"BN": 128, "STAGES": 5, "SCALE_LOAD": 1}, {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1},
          {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1, "PINGPONG": 1},
          {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1, "CLUSTER_M": 1})
for p in BUILDS:
    for shape in ((333, 392, 4112), (200, 264, 176)):
        a = rt.inputs(shape, "block", bf16_reference=False).arrays
        ch.run_once("fp8_r2_block", a["A"], a["Bt"], a["SA"], a["SB"], **p)
        print("ran", shape, p, flush=True)
print("san runs done")
