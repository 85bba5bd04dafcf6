set -u
D=$OUT/fp8s; mkdir -p $D
python3 .gpu/fp8_scales.py $D/scales.json > $D/scales.txt 2>&1; echo "scales rc=$?"
SAN="compute-sanitizer --report-api-errors no --error-exitcode 1 --print-limit 20"
cat > /tmp/san1.py <<'PY'
import sys; sys.path.insert(0, ".")
import helpers  # noqa
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import fp8 as rt
for p in ({"STAGES": 5, "SCALE_LOAD": 2}, {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2}, {"BN": 192, "STAGES": 4, "SCALE_LOAD": 1},
          {"BN": 192, "STAGES": 4, "SCALE_LOAD": 2, "PINGPONG": 1}):
    for shape in ((333, 392, 4112), (200, 264, 176)):
        d = rt.inputs(shape, "block", bf16_reference=False); a = d.arrays
        ch.run_once("fp8_r2_block", a["A"], a["Bt"], a["SA"], a["SB"], **p)
        print("ran", shape, p, flush=True)
print("san runs done")
PY
$SAN --tool memcheck python3 /tmp/san1.py > $D/memcheck.txt 2>&1; echo "memcheck rc=$?"
$SAN --tool racecheck python3 /tmp/san1.py > $D/racecheck.txt 2>&1; echo "racecheck rc=$?"
grep -h "ratio\|FAILED\|odd\|WRONG" $D/scales.txt | tail -80; grep -h "ran\|san runs done\|ERROR SUMMARY\|RACECHECK SUMMARY\|Error" $D/memcheck.txt $D/racecheck.txt | tail -20
tar czf $OUT/fp8s.tgz -C $OUT fp8s && rm -rf $OUT/fp8s
