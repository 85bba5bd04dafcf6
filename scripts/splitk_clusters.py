"""Chapter 9's Hopper split-K with and without a 2x1 cluster, and how many clusters fit.

Usage (on an H100/H200): ``python scripts/splitk_clusters.py``

For each of the issue's three split-K shapes (fp16), times the Hopper split-K plan built
with CLUSTER_M=1 and CLUSTER_M=2 against cuBLAS, alternating (three rounds each, every
result checked against float64 first), and prints what cuOccupancyMaxActiveClusters
reports for the CLUSTER_M=2 build (a persistent grid larger than that many clusters
leaves some to a second wave). Prints one line per measurement.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import helpers  # noqa: E402,F401  (fills the catalog)
from helpers.chapters import ch09_any_shape as ch  # noqa: E402
from helpers.models import anyshape as model  # noqa: E402
from helpers.runtime import anyshape as rt  # noqa: E402


def max_clusters(fn, smem: int, grid: int) -> str:
    try:
        from cuda.bindings import driver as drv
        cfg = drv.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = 384, 1, 1
        cfg.sharedMemBytes = smem
        attr = drv.CUlaunchAttribute()
        attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = 2, 1, 1
        cfg.attrs, cfg.numAttrs = [attr], 1
        err, n = drv.cuOccupancyMaxActiveClusters(drv.CUfunction(fn.kernel.ptr), cfg)
        return f"{n} ({err})"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__}: {e})"


def main() -> int:
    spec, p, fn, smem = rt._hopper_splitk("float16", 2)
    print("cuOccupancyMaxActiveClusters, CLUSTER_M=2 build:", max_clusters(fn, smem, 132), flush=True)
    for shape in ch.SPLITK_SHAPES:
        M, N, K = shape
        s = max(2, model.choose_splits(M, N, K, rt.sm_count(), model.HOPPER_CFG)[0])
        plan = model.Plan(operands="hopper", schedule="splitk", splits=s)
        for rnd in range(2):
            for cl in (1, 2):
                rt.HOPPER_SPLITK_CLUSTER_M = cl
                r = ch.measure([plan], shape, "float16")[0]
                print(f"{M}x{N}x{K} splits {s} CLUSTER_M={cl} round {rnd}: {r['value']} TFLOP/s, "
                      f"{r['ratio']} of cuBLAS ({r['reference_value']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
