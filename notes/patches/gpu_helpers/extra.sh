set -u
python3 - <<'PY' 2>&1 | tee $OUT/narrow.txt
import helpers
from helpers.chapters import ch09_any_shape as ch
for shape in [(30000, 64, 64), (30000, 64, 1002), (30000, 64, 4093), (30000, 64, 16384), (32768, 64, 4096), (20001, 61, 1003)]:
    recs = ch.measure(["auto", "dp", "narrow"], shape, "float16", rounds=5, budget_ms=100)
    print(shape, " | ".join(f"{r['params']['strategy']}: {r['title']} {r['value']:.1f} TFLOP/s ratio {r['ratio']:.3f}" for r in recs), flush=True)
PY
