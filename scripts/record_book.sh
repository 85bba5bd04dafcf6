#!/usr/bin/env bash
# Re-record every measurement the book quotes, from one commit, then re-execute the notebooks.
#
#   GEMM_BOOK_COMMIT=<sha> bash scripts/record_book.sh               # every step, in order
#   STEPS="results anyshape" GEMM_BOOK_COMMIT=<sha> bash scripts/record_book.sh   # some steps
#
# The book's prose quotes only records (results/*.json, through MyST-NB glue) and its tables show
# the notebooks' own live run; both must come from the same tree, so this script refuses to run
# without the commit it records (GEMM_BOOK_COMMIT, as a copy of the tree on a GPU machine has no
# .git) and every file it writes names that commit in its provenance. Steps, in dependency order
# (each writes the files named; "tuned" reads what "tuning" wrote):
#
#   precompile  every configuration the steps below build, in parallel (CuPy's disk cache)
#   results     results/<gpu>.json          scripts/record_results.py (every shipped configuration)
#   anyshape    results/<gpu>-anyshape.json scripts/record_anyshape.py (every section)
#   ladder      results/<gpu>-ladder.json   scripts/record_ladder.py (chapter 7's ladder, both dtypes)
#   pitfalls    results/<gpu>-pitfalls.json scripts/record_pitfalls.py
#   flags       results/<gpu>-fp32-flags.json scripts/ch5_flags.py
#   tuning      results/<gpu>-tuning.json   scripts/tune.py (the autotuner's search and race)
#   exhaustive  results/<gpu>-tuning-exhaustive.json scripts/tune.py --exhaustive mma_sync_f16, then
#               --confirm 10 (its top ten and the tuner's pick re-timed side by side); about 1,000
#               builds and timings: not in the default STEPS, run it on its own
#   ncu         results/<gpu>-{banks,ldmatrix,hopper,ncu-panels,ncu-controls,ncu-tuned,ncu-cublas}.json
#   extra       the recorders of later chapters, where present (scripts/record_*.py not named above)
#   execute     every notebook re-executed in place (scripts/execute_notebooks.py)
#
# Logs go to $OUT (default ./gpu-logs), one per step; the last lines printed say each step's
# exit status and seconds. The exit status is non-zero if any step failed.
set -u
cd "$(dirname "$0")/.."
: "${GEMM_BOOK_COMMIT:?set GEMM_BOOK_COMMIT to the commit being recorded (git rev-parse --short=12 HEAD)}"
export GEMM_BOOK_COMMIT PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
STEPS=${STEPS:-"precompile results anyshape ladder pitfalls flags tuning ncu extra execute"}
PY=${PYTHON:-python3}
SLUG=$($PY -c "from helpers.runtime import gpu, results; print(gpu.slug(results.provenance()['gpu']))")
summary=()
failed=0
step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
run() {  # run NAME CMD...: log to $OUT/NAME.log, remember the status and the seconds
  local name=$1; shift
  local t0=$(date +%s)
  echo "[$(date +%H:%M:%S)] $name: $*"
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$? dt=$(( $(date +%s) - t0 ))
  summary+=("$(printf '%-16s rc=%-3s %5ss  %s' "$name" "$rc" "$dt" "$(tail -n 1 "$OUT/$name.log" | cut -c1-120)")")
  [ "$rc" = 0 ] || failed=1
  return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
step precompile && run precompile $PY scripts/precompile.py
step results    && run results    $PY scripts/record_results.py
step anyshape   && run anyshape   $PY scripts/record_anyshape.py
step ladder     && run ladder     $PY scripts/record_ladder.py --dtypes float16 bfloat16
step pitfalls   && run pitfalls   $PY scripts/record_pitfalls.py
step flags      && run flags      $PY scripts/ch5_flags.py --rotations 6
step tuning && run tuning $PY scripts/tune.py
if step exhaustive; then
  run exhaustive $PY scripts/tune.py --exhaustive mma_sync_f16 && run exhaustive_confirm $PY scripts/tune.py --confirm 10
fi
if step ncu; then
  run ncu_banks    $PY scripts/ncu_banks.py --out "results/$SLUG-banks.json"
  run ncu_ldmatrix $PY scripts/ncu_ldmatrix.py --out "results/$SLUG-ldmatrix.json"
  run ncu_hopper   $PY scripts/ncu_hopper.py --out "results/$SLUG-hopper.json"
  run ncu_panels   $PY scripts/ncu_panels.py --out "results/$SLUG-ncu-panels.json"
  run ncu_controls $PY scripts/ncu_panels.py --controls --out "results/$SLUG-ncu-controls.json"
  run ncu_tuned    $PY scripts/ncu_panels.py --tuned "results/$SLUG-tuning.json" --out "results/$SLUG-ncu-tuned.json"
  run ncu_cublas   $PY scripts/ncu_vs_cublas.py --out "results/$SLUG-ncu-cublas.json"
  run ncu_cublas_tile $PY scripts/ncu_vs_cublas.py --tile-control --out "results/$SLUG-ncu-cublas.json"
fi
if step extra; then
  for s in scripts/record_*.py; do
    case "$s" in */record_results.py|*/record_anyshape.py|*/record_ladder.py|*/record_pitfalls.py) continue ;; esac
    run "$(basename "$s" .py)" $PY "$s"
  done
fi
step execute && run execute $PY scripts/execute_notebooks.py

echo
echo "record_book at $GEMM_BOOK_COMMIT ($SLUG):"
printf '%s\n' "${summary[@]}"
exit $failed
