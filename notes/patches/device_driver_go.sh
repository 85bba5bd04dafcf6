#!/usr/bin/env bash
# go.sh BUDGET STEP... : run the steps in order while their estimates fit the budget (seconds).
# Records are kept in $HOME/rec across calls on a warm machine and restored over results/.
# Off an H200: ONLY_H200=1 stops at once; IF_H100="step ..." runs those steps instead (tests and
# development measurements only; records are never written off the H200).
set -u
T0=$(date +%s); BUDGET=$1; shift
export PYTHONUNBUFFERED=1 GEMM_BOOK_COMMIT=${GEMM_BOOK_COMMIT:?}
REC=$HOME/rec; mkdir -p $REC/logs; touch $REC/done
[ -n "$(ls $REC/*.json 2>/dev/null)" ] && cp $REC/*.json results/ && echo "restored $(ls $REC/*.json | wc -l) records from a warm machine"
[ -f $REC/nb.tgz ] && tar xzf $REC/nb.tgz && echo "restored notebooks"
SLUG=h200
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "NOT an H200: $(nvidia-smi --query-gpu=name --format=csv,noheader); records skipped, tests only"
  if [ -n "${IF_H100:-}" ]; then set -- $IF_H100; echo "IF_H100: running $* instead"
  elif [ -n "${ONLY_H200:-}" ]; then echo "ONLY_H200: stopping"; exit 3; fi
  set -- $(for s in "$@"; do case $s in pre|pre9|pre27|t_any|ncuspread|san|san9|sanex|host|extra|t_ex|nbval|fusedab|nbsub|fp8ahead|fp8scales|fp8quick|fp8san|hostgraph|graph1) echo $s;; esac; done)
fi
SAN="compute-sanitizer --report-api-errors no --error-exitcode 1 --print-limit 20"
declare -A EST=([pre]=120 [t_any]=90 [san]=170 [san9]=150 [results]=170 [anyshape]=160 [fp8]=55 [exercises]=105
  [ladder]=10 [pitfalls]=25 [flags]=70 [ncu]=120 [t_ex]=150 [execute]=310 [nbval]=200 [fp8ahead]=300 [fp8scales]=320 [fp8quick]=60 [fp8san]=60 [hostgraph]=100 [sanex]=30 [host]=40 [extra]=60 [ncuc]=35 [fusedab]=60 [nbsub]=120 [tuning]=200 [pre9]=60 [ex910]=130 [ex11]=60 [pre27]=80 [ex27]=190 [nb27]=120 [ncuspread]=70 [drift]=60 [graph1]=70)
pack() { cp results/*.json $REC/ 2>/dev/null; tar czf $OUT/rec.tgz -C $REC logs $(cd $REC && ls *.json 2>/dev/null) done 2>/dev/null; cp $REC/done $OUT/summary.txt; }
run() { local name=$1; shift; local t=$(date +%s)
  "$@" >$REC/logs/$name.log 2>&1; local rc=$?
  echo "$(printf '%-12s rc=%-3s %4ss' $name $rc $(( $(date +%s) - t ))) $(grep -E 'passed|failed|SUMMARY|wrote|executed in|precompile:|launches' $REC/logs/$name.log | tail -n 2 | tr '\n' ' ' | cut -c1-200)" | tee -a $REC/done; return $rc; }
for s in "$@"; do
  grep -q "^$s " $REC/done && { echo "skip $s (done on this machine)"; continue; }
  left=$(( BUDGET - ($(date +%s) - T0) ))
  [ ${EST[$s]} -gt $left ] && { echo "STOP before $s: ${EST[$s]} s > $left s left"; break; }
  case $s in
    pre) run pre python3 scripts/precompile.py ;;
    t_any) run t_any python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/gpu/test_any_shape_gpu.py tests/gpu/test_hopper_gpu.py tests/gpu/test_fp8_gpu.py || { pack; echo "GATE: GPU tests failed"; exit 1; } ;;
    san) run memcheck $SAN --tool memcheck python3 scripts/sanitize_run.py; run racecheck $SAN --tool racecheck python3 scripts/sanitize_run.py; run initcheck $SAN --tool initcheck python3 scripts/sanitize_run.py; echo "san " >> $REC/done ;;
    san9) run memcheck9 $SAN --tool memcheck python3 scripts/record_anyshape.py --sanitize-small; run racecheck9 $SAN --tool racecheck python3 scripts/record_anyshape.py --sanitize-small --dtypes float16 --shapes 3 --strategies dp regs streamk_sk hopper splitk hopper_splitk; echo "san9 " >> $REC/done ;;
    results) run results python3 scripts/record_results.py ;;
    tuning) run tuning python3 scripts/tune.py ;;
    pre9) run pre9 python3 scripts/precompile.py --chapters 9 10 --combos 4 ;;
    ex910) run ex910 python3 scripts/execute_notebooks.py book/09_any_shape.ipynb book/10_hopper.ipynb; tar czf $REC/nb.tgz book/*.ipynb; cp $REC/nb.tgz $OUT/nb.tgz ;;
    anyshape) run anyshape python3 scripts/record_anyshape.py ;;
    ex11) run ex11 python3 scripts/execute_notebooks.py book/12_fp8.ipynb; tar czf $REC/nb.tgz book/*.ipynb; cp $REC/nb.tgz $OUT/nb.tgz ;;
    extra) run extra bash .gpu/extra.sh ;;
    host) run host python3 scripts/record_anyshape.py --sections host ;;
    fp8) run fp8 python3 scripts/record_fp8.py ;;
    exercises) run exercises python3 scripts/record_exercises.py ;;
    ladder) run ladder python3 scripts/record_ladder.py --dtypes float16 bfloat16 ;;
    pitfalls) run pitfalls python3 scripts/record_pitfalls.py ;;
    flags) run flags python3 scripts/ch5_flags.py --rotations 6 ;;
    ncu) run ncu_banks python3 scripts/ncu_banks.py --out results/$SLUG-banks.json
         run ncu_ldmatrix python3 scripts/ncu_ldmatrix.py --out results/$SLUG-ldmatrix.json
         run ncu_hopper python3 scripts/ncu_hopper.py --out results/$SLUG-hopper.json
         run ncu_panels python3 scripts/ncu_panels.py --out results/$SLUG-ncu-panels.json
         run ncu_controls python3 scripts/ncu_panels.py --controls --out results/$SLUG-ncu-controls.json
         run ncu_tuned python3 scripts/ncu_panels.py --tuned results/$SLUG-tuning.json --out results/$SLUG-ncu-tuned.json
         run ncu_cublas python3 scripts/ncu_vs_cublas.py --out results/$SLUG-ncu-cublas.json
         run ncu_cublas_tile python3 scripts/ncu_vs_cublas.py --tile-control --out results/$SLUG-ncu-cublas.json
         echo "ncu " >> $REC/done ;;
    t_ex) run t_ex python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/gpu/test_exercises_gpu.py ;;
    execute) run execute python3 scripts/execute_notebooks.py; tar czf $REC/nb.tgz book/*.ipynb; cp $REC/nb.tgz $OUT/nb.tgz ;;
    nbval) run nbval python3 -m pytest --nbval-lax -n 4 -q -p no:cacheprovider -o addopts="" --dist loadfile --nbval-current-env --nbval-cell-timeout=600 --nbval-kernel-startup-timeout=300 book ;;
    ncuc) run ncu_controls python3 scripts/ncu_panels.py --controls --out results/$SLUG-ncu-controls.json ;;
    nbsub) run nbsub timeout 200 python3 -m pytest --nbval-lax -n 4 -q -p no:cacheprovider -o addopts="" --dist loadfile --nbval-current-env --nbval-cell-timeout=300 --nbval-kernel-startup-timeout=120 book/09_any_shape.ipynb book/10_hopper.ipynb book/intro.ipynb book/12_fp8.ipynb ;;
    pre27) run pre27 python3 scripts/precompile.py --chapters 1 2 3 4 5 6 7 9 10 ;;
    ex27) run ex27 python3 scripts/execute_notebooks.py book/0[1-79]_*.ipynb book/10_hopper.ipynb; tar czf $REC/nb.tgz book/*.ipynb; cp $REC/nb.tgz $OUT/nb.tgz ;;
    nb27) run nb27 timeout $(( left - 15 )) python3 -m pytest --nbval-lax -n 4 -q -p no:cacheprovider -o addopts="" --dist loadfile --nbval-current-env --nbval-cell-timeout=300 --nbval-kernel-startup-timeout=120 book/0[1-79]_*.ipynb book/10_hopper.ipynb ;;
    fusedab) run fusedab python3 .gpu/fusedab.py ;;
    ncuspread) run ncuspread python3 .gpu/ncu_spread.py $OUT/ncu_spread.json 3 ;;
    drift) run drift python3 .gpu/pair_drift.py $OUT/pair_drift.json ;;
    graph1) run graph1 python3 .gpu/graph_one.py $OUT/graph_one.json ;;
    fp8ahead) run fp8ahead bash .gpu/fp8ahead.sh ;;
    fp8scales) run fp8scales bash .gpu/fp8scales.sh ;;
    hostgraph) run hostgraph bash -c 'python3 .gpu/host_graph.py $OUT/host_graph.json; python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_any_shape_calls.py tests/gpu/test_any_shape_gpu.py -k "packed or graph"' ;;
    fp8quick) run fp8quick python3 .gpu/fp8_final.py ;;
    fp8san) run fp8_memcheck $SAN --tool memcheck python3 .gpu/fp8_san_paths.py; run fp8_racecheck $SAN --tool racecheck python3 .gpu/fp8_san_paths.py; echo "fp8san " >> $REC/done ;;
    sanex) run sanex_memcheck $SAN --tool memcheck python3 scripts/sanitize_exercises.py; run sanex_racecheck $SAN --tool racecheck python3 scripts/sanitize_exercises.py; echo "sanex " >> $REC/done ;;
  esac
  pack
done
pack; [ -f $REC/nb.tgz ] && cp $REC/nb.tgz $OUT/nb.tgz
echo "==== $(( $(date +%s) - T0 )) s"; cat $REC/done
