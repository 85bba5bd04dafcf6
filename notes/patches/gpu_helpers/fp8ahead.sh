set -u
D=$OUT/fp8; mkdir -p $D
NCU="ncu --clock-control none --kernel-name regex:fp8 --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats"
{ git apply notes/patches/fp8_bn192.patch || patch -p1 < notes/patches/fp8_bn192.patch; } && echo applied bn192
python3 .gpu/fp8_bn192.py $D/bn192.json > $D/bn192.txt 2>&1; echo "bn192 rc=$?"
$NCU python3 .gpu/fp8_ncu1.py fp8_r2_block '{"BN": 192, "STAGES": 4}' > $D/ncu_r2_bn192.txt 2>&1; echo "ncu r2 bn192 rc=$?"
{ git apply -R notes/patches/fp8_bn192.patch || patch -R -p1 < notes/patches/fp8_bn192.patch; } && echo reverted bn192
grep -h "ratio\|FAILED\|odd" $D/bn192.txt | tail -50
python3 .gpu/fp8_quick.py $D/before.json > $D/before.txt 2>&1; echo "before rc=$?"
$NCU python3 .gpu/fp8_ncu1.py fp8_r2_block '{}' > $D/ncu_r2.txt 2>&1; echo "ncu r2 rc=$?"
$NCU python3 .gpu/fp8_ncu1.py fp8_promote '{"PROMOTE": 1}' > $D/ncu_p1.txt 2>&1; echo "ncu p1 rc=$?"
$NCU python3 .gpu/fp8_ncu1.py fp8_promote '{"PROMOTE": 0}' > $D/ncu_p0.txt 2>&1; echo "ncu p0 rc=$?"
{ git apply notes/patches/fp8_scales_ahead.patch || patch -p1 < notes/patches/fp8_scales_ahead.patch; } && echo applied
python3 .gpu/fp8_quick.py $D/ahead.json > $D/ahead.txt 2>&1; echo "ahead rc=$?"
$NCU python3 .gpu/fp8_ncu1.py fp8_r2_block '{}' > $D/ncu_r2_ahead.txt 2>&1; echo "ncu r2 ahead rc=$?"
{ git apply -R notes/patches/fp8_scales_ahead.patch || patch -R -p1 < notes/patches/fp8_scales_ahead.patch; } && echo reverted
grep -h "ratio" $D/before.txt $D/ahead.txt | tail -40
