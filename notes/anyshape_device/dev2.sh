#!/usr/bin/env bash
cd "$(dirname "$0")"
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../../.whl/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
echo "pip $(( $(date +%s)-t0 ))s" > $OUT/times.txt
pc() { python3 -c "import sys; sys.path.insert(0,'.'); from helpers.runtime import anyshape as rt, launch; from helpers.chapters import ch10_hopper as c; $1" > $OUT/compile_$2.log 2>&1; }
pc "rt._kernels('float16', True)" a & pc "rt._kernels('float16', False)" b &
pc "launch.prepare(c.key('r5_tma_store','float16'), (256,256,64))" c &
pc "launch.prepare(c.key('r4_cluster','float16'), (256,256,64))" d &
wait
echo "compile $(( $(date +%s)-t0 ))s" >> $OUT/times.txt
( timeout $(( 44 - ($(date +%s)-t0) )) compute-sanitizer --tool initcheck --report-api-errors no --print-limit 400 python3 scripts/initcheck_control.py > $OUT/initcheck_control.log 2>&1; echo "rc=$?" >> $OUT/initcheck_control.log ) &
timeout $(( 45 - ($(date +%s)-t0) )) python3 smoke.py > $OUT/smoke.log 2>&1; echo "smoke rc=$?" >> $OUT/smoke.log
wait
echo "end $(( $(date +%s)-t0 ))s" >> $OUT/times.txt
cat $OUT/times.txt; grep -E "WRONG|cache|^e2e|done|rc=|Error|error" $OUT/smoke.log | cut -c1-300
grep -E "^host" $OUT/smoke.log | cut -c1-400
awk '/^==== phase/{p=$3} /Uninitialized/{n[p]++} /rel_err|finite|ERROR SUMMARY|rc=/{print} END{for(k in n) print "initcheck reports in phase", k, n[k]}' $OUT/initcheck_control.log
