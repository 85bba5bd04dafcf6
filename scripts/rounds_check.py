"""Does alternating the reference with the kernel change the ratio? (H200, power-capped)

Usage (a GPU machine): ``python scripts/rounds_check.py``

Times the chapter-5 cp_async kernel (fp32) and WMMA / mma.sync (fp16, bf16)
at 4096^3 with :func:`helpers.runtime.bench.gemm` for rounds = 1 (cuBLAS timed once,
then the kernel), 3 and 5 (cuBLAS and the kernel alternated; medians over
all rounds), twice over, in one process. Prints one line per measurement:
kernel TFLOP/s / cuBLAS TFLOP/s = ratio. Quoted in chapter 7 and in
notes/mma_sync_tuning.md.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.runtime import bench, gpu

SHAPE = (4096, 4096, 4096)


def main():
    if not gpu.live():
        sys.exit("rounds_check.py needs a GPU")
    for rep in range(2):
        for keys in (["cp_async"], ["wmma_f16", "mma_sync_f16"], ["wmma_bf16", "mma_sync_bf16"]):
            for rounds in (1, 3, 5):
                t0 = time.time()
                recs = bench.gemm(keys, SHAPE, rounds=rounds)
                cells = "  ".join(f"{r['kernel']} {r['value']:.1f}/{r['reference_value']:.1f}={r['ratio']:.4f}"
                                  for r in recs)
                print(f"rep{rep} rounds={rounds} {cells}  ({time.time() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
