"""The one-launch split-K sum against the two-pass one, kernel-only (pre-planned run()), both loops,
same s, alternating rounds against cupy.matmul; bit-equality of the two C's checked."""
import sys
sys.path.insert(0, ".")
import cupy as cp
import helpers  # noqa
from helpers.chapters import ch10_hopper  # noqa: F401  (registers the Hopper kernel with the dispatcher)
from helpers.runtime import anyshape as rt, timing
from helpers.models import anyshape as model
sms = rt.sm_count()
for (M, N, K) in ((128, 5632, 2048), (16, 4096, 4096), (1, 4096, 4096), (512, 512, 32768), (1024, 1024, 16384)):
    rng = cp.random.default_rng(0)
    A = (rng.standard_normal((M, K), dtype=cp.float32)).astype(cp.float16)
    B = (rng.standard_normal((K, N), dtype=cp.float32)).astype(cp.float16)
    for loop in ("mma", "hopper"):
        if loop == "mma":
            s, ops = max(2, model.choose_splits(M, N, K, sms)[0]), "direct"
        else:
            s, ops = max(2, model.choose_splits(M, N, K, sms, model.HOPPER_CFG)[0]), "hopper"
        out = {}
        for red in ("twopass", "fused"):
            p = model.Plan(operands=ops, schedule="splitk", splits=s, reduction=red, reason="ab")
            C = cp.full((M, N), cp.nan, dtype=cp.float16)
            rt.run(p, A, B, C)
            t = timing.time_pair(lambda: rt.run(p, A, B, C), lambda: cp.matmul(A, B), rounds=5)
            out[red] = (t, C.copy())
        eq = bool(cp.array_equal(out["twopass"][1], out["fused"][1]))
        tp, fu = out["twopass"][0], out["fused"][0]
        print(f"{M}x{N}x{K} {loop:6s} s={s:3d}  twopass {tp['ms']*1e3:8.1f} us ({tp['ratio']:.3f} x cuBLAS)  "
              f"fused {fu['ms']*1e3:8.1f} us ({fu['ratio']:.3f})  fused/twopass time {fu['ms']/tp['ms']:.3f}  bit-equal {eq}",
              flush=True)
