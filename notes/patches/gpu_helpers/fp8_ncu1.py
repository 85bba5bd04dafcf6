import sys
import json
sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt
key, p = sys.argv[1], json.loads(sys.argv[2])
d = rt.inputs((8192,) * 3, "block" if key == "fp8_r2_block" else "tensor")
a = d.arrays
for _ in range(3):
    ch.run_once(key, a["A"], a["Bt"], a["SA"], a["SB"], **p)
