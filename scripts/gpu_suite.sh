#!/usr/bin/env bash
# The GPU suite: everything that needs a real GPU, in one run.
#
#   bash scripts/gpu_suite.sh            tests + nbval (twice) + sanitizers + ncu + record results
#   bash scripts/gpu_suite.sh --execute  ... and re-execute the notebooks in place at the end
#   STEPS="tests nbval" bash scripts/gpu_suite.sh   run only some steps
#
# Steps: precompile compile every configuration the suite needs, one process per core (CuPy disk cache)
#        tests      pytest tests/ (helper units, nvcc checks, GPU kernel tests over many shapes)
#        nbval      pytest --nbval-lax book/ live, twice with one fresh CuPy cache: the second
#                   run must compile nothing (same number of cached modules)
#        sanitize   compute-sanitizer memcheck, racecheck and initcheck over every kernel (small shapes),
#                   and over chapter 9's dispatcher (racecheck on a subset)
#        ncu        Nsight Compute counters: banks and ldmatrix (model vs hardware), the Hopper ladder,
#                   every heaven's panel (chapter 8)
#        record     results/<gpu>.json (scripts/record_results.py)
# Logs go to $OUT (default ./gpu-logs); the last lines printed are a summary.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
STEPS=${STEPS:-"precompile tests nbval sanitize ncu record"}
EXECUTE=0
[ "${1:-}" = "--execute" ] && EXECUTE=1
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
summary=()
failed=0
step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
run() {  # run NAME CMD...: log to $OUT/NAME.log, remember pass/fail and time
  local name=$1; shift
  local t0=$(date +%s)
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  local tail1=$(grep -E "passed|failed|error|ERROR SUMMARY|RACECHECK SUMMARY|sanitize_run|wrote|executed in|precompile:" "$OUT/$name.log" | tail -n 2 | tr '\n' ' ')
  summary+=("$(printf '%-10s rc=%-3s %5ss  %s' "$name" "$rc" "$dt" "$tail1")")
  [ "$rc" = 0 ] || failed=1
  return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
$PY -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'nvrtc', cupy.cuda.nvrtc.getVersion())" >>"$OUT/gpu.txt" 2>&1

if step precompile; then
  run precompile $PY scripts/precompile.py
fi

if step tests; then
  # tests/test_compile.py (nvcc for sm_80 and sm_90) and the book build run on CPU CI; here the GPU tests
  run tests $PY -m pytest tests -q -p no:cacheprovider --ignore=tests/test_book_build.py \
      --ignore=tests/test_compile.py -o addopts="" -rs
fi

if step nbval; then
  export CUPY_CACHE_DIR=$(mktemp -d)
  run nbval1 $PY -m pytest --nbval-lax book -q -p no:cacheprovider -o addopts=""
  n1=$(find "$CUPY_CACHE_DIR" -type f | wc -l)
  run nbval2 $PY -m pytest --nbval-lax book -q -p no:cacheprovider -o addopts=""
  n2=$(find "$CUPY_CACHE_DIR" -type f | wc -l)
  summary+=("cupy cache: $n1 modules after the first nbval run, $n2 after the second ($([ "$n1" = "$n2" ] && echo 'nothing recompiled' || echo 'RECOMPILED'))")
  [ "$n1" = "$n2" ] || failed=1
  unset CUPY_CACHE_DIR
fi

if step sanitize; then
  # --report-api-errors no: cuda.bindings probes driver entry points (cuGetProcAddress) and
  # some probes fail on the host by design; device-side errors are still all reported.
  SAN="compute-sanitizer --report-api-errors no --error-exitcode 1 --print-limit 20"
  run memcheck $SAN --tool memcheck $PY scripts/sanitize_run.py
  run racecheck $SAN --tool racecheck $PY scripts/sanitize_run.py
  run initcheck $SAN --tool initcheck $PY scripts/sanitize_run.py
  # Chapter 9's dispatcher: memcheck and initcheck over every strategy on small odd shapes;
  # racecheck on one shape of 2 x 3 tiles, one strategy per kernel build (over every strategy
  # and shape it runs past 200 s). The Hopper path zeroes the scratch it stages C in, once
  # (scripts/initcheck_control.py: the control of initcheck's reports on it).
  run memcheck9 $SAN --tool memcheck $PY scripts/record_anyshape.py --sanitize-small
  run initcheck9 $SAN --tool initcheck $PY scripts/record_anyshape.py --sanitize-small
  run racecheck9 $SAN --tool racecheck $PY scripts/record_anyshape.py --sanitize-small --dtypes float16 \
      --shapes 3 --strategies dp regs streamk_sk hopper
fi

if step ncu; then
  for s in scripts/ncu_banks.py scripts/ncu_ldmatrix.py scripts/ncu_hopper.py scripts/ncu_panels.py; do
    [ -f "$s" ] || continue
    b=$(basename "$s" .py)
    run "$b" $PY "$s" --out "$OUT/$b.json"
  done
fi

if step record; then
  run record $PY scripts/record_results.py
  cp results/*.json "$OUT/" 2>/dev/null
fi

if [ $EXECUTE = 1 ]; then
  run execute $PY scripts/execute_notebooks.py
  tar czf "$OUT/notebooks.tgz" book/*.ipynb
fi

echo "==== GPU suite summary ($(head -2 "$OUT/gpu.txt" | tail -1))"
for s in "${summary[@]}"; do echo "$s"; done
grep -h -E "^(ch[0-9]|ceilings)" "$OUT/record.log" 2>/dev/null | cut -c1-160
exit $failed
