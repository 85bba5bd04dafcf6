"""Compile every kernel configuration the GPU suite will use, in parallel.

Usage (on a GPU machine): ``python scripts/precompile.py [--combos N] [--jobs J]``

NVRTC compiles take 0.5-6 s each and the suite needs hundreds (every shipped
configuration, the instrumented RECORD_OWNER builds, a sample of slider
combinations). CuPy caches compiled modules on disk (``~/.cupy/kernel_cache``
or ``$CUPY_CACHE_DIR``) keyed by source and options, so compiling them once
here, one process per CPU core, makes every later step load from the cache.
The options are built exactly as helpers.runtime.launch.prepare builds them.
"""
import argparse
import os
import sys
import time
import multiprocessing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def jobs(combos: int, chapters=None):
    from helpers.runtime import catalog, gpu
    limit = gpu.device_info()["smem_per_block_optin"]
    cc = gpu.device_info()["cc"]
    out = set()
    for key, spec in catalog.KERNELS.items():
        if (chapters is not None and spec.chapter not in chapters) or not spec.runs_on(cc):
            continue
        for p in spec.slider_configs(combos, smem_limit=limit):
            d = spec.defines(p)
            out.add((spec.file, spec.entry, tuple(sorted(d.items())), spec.compile_options))
            if spec.owner is not None:
                out.add((spec.file, spec.entry, tuple(sorted({**d, "RECORD_OWNER": 1}.items())), spec.compile_options))
    from helpers.chapters import ch07_mma_sync as ch7     # chapter 7's leave-one-stage-out builds (defaults only)
    for key in ch7.PROBE_KEYS.values() if chapters is None or 7 in chapters else ():
        spec = catalog.get(key)
        for n, _, _ in ch7.PROBE_LADDER[1:]:
            file, entry = spec.build_target({"PROBE": n})      # the probe file (kernels/experiments/)
            out.add((file, entry, tuple(sorted({**spec.defines(spec.defaults), "PROBE": n}.items())),
                     spec.compile_options))
    return sorted(out)


def compile_one(job):
    from helpers.runtime import compile as kc
    file, entry, defines, options = job
    t0 = time.time()
    try:
        kc.build(file, entry, dict(defines), extra_options=options)
        return None, time.time() - t0
    except Exception as e:          # reported, not fatal: the tests will show it again
        return f"{file} {entry} {dict(defines)}: {str(e).splitlines()[0]}", time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--combos", type=int, default=int(os.environ.get("GEMM_BOOK_MAX_COMBOS", "48")))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--chapters", type=int, nargs="*", default=None, help="only these chapters' kernels")
    a = ap.parse_args()
    todo = jobs(a.combos, a.chapters)
    t0 = time.time()
    # spawn, not fork: the parent has initialized CUDA, which a forked child cannot use
    with multiprocessing.get_context("spawn").Pool(a.jobs) as pool:
        res = pool.map(compile_one, todo, chunksize=1)
    errs = [e for e, _ in res if e]
    for e in errs:
        print("FAILED", e)
    print(f"precompile: {len(todo)} modules, {len(errs)} failed, {sum(t for _, t in res):.0f} s of compiling "
          f"in {time.time() - t0:.0f} s on {a.jobs} processes")


if __name__ == "__main__":
    main()
