"""Chapter 9's Hopper split-K with and without a 2x1 cluster, and how many clusters fit.

Usage (on an H100/H200): ``python scripts/splitk_clusters.py``

For each of the issue's three split-K shapes (fp16), times the Hopper split-K plan built
with CLUSTER_M=1 and CLUSTER_M=2 against cuBLAS, alternating (three rounds each, every
result checked against float64 first: helpers.chapters.ch09_any_shape.measure), and prints
what cuOccupancyMaxActiveClusters reports for the CLUSTER_M=2 build (a persistent grid
larger than that many clusters leaves some to a second wave), and, per build, how long
Python takes to enqueue one call against how long the GPU takes per call when the queue
never runs dry (when the first is longer, per-call event timing measures Python). Prints
one line per measurement.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch09_any_shape as ch
from helpers.models import anyshape as model
from helpers.runtime import anyshape as rt, bench, gpu, launch


def host_and_gpu(plan, shape, calls: int = 50, cached: bool = True) -> str:
    """Python's time to enqueue one call (perf_counter over ``calls`` calls, no sync) against
    the GPU's time per call when the queue never runs dry (events around the whole batch).
    ``cached=False`` empties the runner's prepared arguments before every call
    (:func:`helpers.runtime.anyshape.clear_prepared`: the runner as it was before it kept
    them, the control)."""
    cp = gpu.cupy()
    A, B, C = bench.inputs(shape, "float16").args()

    def call():
        if not cached:
            rt.clear_prepared()
        rt.run(plan, A, B, C)
    for _ in range(3):
        call()
    cp.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) / calls * 1e3
    cp.cuda.get_current_stream().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(calls):
        call()
    e.record()
    e.synchronize()
    return f"host enqueue {host * 1e3:.1f} us per call, GPU {cp.cuda.get_elapsed_time(s, e) / calls * 1e3:.1f} us per call"


def main() -> int:
    spec, p, fn, smem = rt.hopper_splitk_build("float16", 2)
    print("cuOccupancyMaxActiveClusters, CLUSTER_M=2 build:",
          launch.max_active_clusters(fn, spec.threads(p), smem, 2, rt.sm_count()), flush=True)
    for shape in ch.SPLITK_SHAPES:
        M, N, K = shape
        s = max(2, model.choose_splits(M, N, K, rt.sm_count(), model.HOPPER_CFG)[0])
        plans = {cl: model.Plan(operands="hopper", schedule="splitk", splits=s, cluster_m=cl) for cl in (1, 2)}
        for cl, plan in plans.items():
            for cached in (False, True):
                print(f"{M}x{N}x{K} CLUSTER_M={cl} {'cached' if cached else 'uncached'} arguments: "
                      f"{host_and_gpu(plan, shape, cached=cached)}", flush=True)
        for rnd in range(2):
            for cl, plan in plans.items():
                r = ch.measure([plan], shape, "float16")[0]
                print(f"{M}x{N}x{K} splits {s} CLUSTER_M={cl} round {rnd}: {r['value']} TFLOP/s, "
                      f"{r['ratio']} of cuBLAS ({r['reference_value']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
