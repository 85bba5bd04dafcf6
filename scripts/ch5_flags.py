"""Chapter 5's cp_async kernel built with each combination of its two build flags, timed
side by side on a GPU: results/<gpu>-fp32-flags.json.

Usage (on a GPU machine, from the repository root)::

    GEMM_BOOK_COMMIT=$(git rev-parse --short=12 HEAD) python scripts/ch5_flags.py [--rotations 6]

The flags are ``-D`` switches of kernels/05_register_tiling.cu, not catalog parameters:
SERPENTINE (the order of the FMAs of one k step) and FAST_INTERIOR (one bounds test per
k tile for tiles wholly inside A and B). Both default to 1 for uncapped builds. Two sets of
four builds, each set sharing one tile: the catalog's cp_async defaults (128 x 256 x 16,
3 stages) and the 128 x 128 x 8 tile of chapter 5's controls table (3 stages), where each
copy and its bounds test share about 100 FFMAs of a thread instead of about 170. Shape 4096^3.

A third group, ``cap``, is the control of chapter 5's launch-bounds pitfall, three builds at the
pitfall's tile (128 x 256 x 8, 3 stages): the pitfall as shipped (``__launch_bounds__(256, 2)``;
under that cap both switches default to 0), the same build with MIN_BLOCKS = 1 and both switches
held at 0 (one switch apart from the pitfall), and MIN_BLOCKS = 1 with both switches on (the twin
the chapter's table shows beside the pitfall).

Method (METHOD.md), through :func:`helpers.runtime.bench.measure` on one set of random
float32 inputs: each build's output poisoned with NaN and checked against a float64
reference before it is timed; each timing is the build and cuBLAS in 3 alternating rounds;
``--rotations`` timings per build, the builds' order rotated every rotation and reversed
every other one, so no build always runs first or hot. The record keeps every ratio, their
median, the medians of TFLOP/s, and the registers and local memory NVRTC gave each build.
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime import bench, catalog, gpu, launch, results

KEY = "cp_async"
FLAGS = ("SERPENTINE", "FAST_INTERIOR")
SHAPE = (4096, 4096, 4096)
ARTIFACT = "fp32-flags"
# The second tile, as overrides of the defaults: chapter 5's controls compare cp_async and
# warptile_db there (helpers.chapters.ch05_register_tiling.twins).
SMALL_TILE = {"BN": 128, "WN": 32, "TN": 8, "BK": 8}


CAP_KEY = "cp_async_pitfall"
OFF = {f: 0 for f in FLAGS}


def builds() -> list[dict]:
    """The four flag combinations, the kernel's default (1, 1) first."""
    return [dict(zip(FLAGS, v)) for v in itertools.product((1, 0), repeat=len(FLAGS))]


def cap_builds() -> list[dict]:
    """The launch-bounds control: {"key", "params", "defines" (extra -D, as built), "switches"
    (SERPENTINE and FAST_INTERIOR as the kernel sees them)} for the pitfall, the one-switch control
    and the chapter's twin, all at the pitfall's tile."""
    trap = dict(catalog.get(CAP_KEY).defaults)
    free = {**trap, "MIN_BLOCKS": 1}
    return [{"key": CAP_KEY, "params": trap, "defines": {}, "switches": dict(OFF)},     # capped: 0, 0 by default
            {"key": KEY, "params": free, "defines": dict(OFF), "switches": dict(OFF)},
            {"key": KEY, "params": free, "defines": {}, "switches": {f: 1 for f in FLAGS}}]


def time_builds(rows: list, data, rotations: int, label: str) -> None:
    """Check each build of ``rows`` ({"key", "params", "defines"}) once, then time them all
    ``rotations`` times, the order rotated every rotation and reversed every other one; adds
    "registers", "local_bytes", "rel_err", "timings" and the medians "ratio", "tflops",
    "cublas_tflops" to each row."""
    def prepared(r):                                   # cached after the first build
        return launch.prepare(r["key"], SHAPE, extra_defines=r["defines"] or None, **r["params"])
    for r in rows:
        L = prepared(r)
        m = bench.measure(lambda A, B, C, L=L: L(A, B, C, *SHAPE), SHAPE, data=data, timed=False,
                          what=f"{r['key']} {r['params']} {r['defines']}")
        res = L.resources()
        r.update(registers=res["registers"], local_bytes=res["local_bytes"], rel_err=m.rel_err, timings=[])
    n = len(rows)
    for rot in range(rotations):
        order = list(range(rot % n, n)) + list(range(rot % n))
        for i in (order if rot % 2 == 0 else order[::-1]):
            L = prepared(rows[i])
            t = bench.measure(lambda A, B, C, L=L: L(A, B, C, *SHAPE), SHAPE, data=data, check=False, rounds=3)
            rows[i]["timings"].append({"ratio": t.ratio, "tflops": t.value, "cublas_tflops": t.reference_value})
        print(f"{label} rotation {rot}: " + "  ".join(f"{r['timings'][-1]['ratio']:.4f}" for r in rows), flush=True)
    for r in rows:
        ts = r["timings"]
        r["ratio"] = round(statistics.median(t["ratio"] for t in ts), 4)
        r["tflops"] = round(statistics.median(t["tflops"] for t in ts), 2)
        r["cublas_tflops"] = round(statistics.median(t["cublas_tflops"] for t in ts), 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rotations", type=int, default=6, help="timings per build (default 6)")
    ap.add_argument("--out", help="also copy the record into this directory")
    a = ap.parse_args(argv)
    if a.rotations < 1:
        raise SystemExit(f"--rotations={a.rotations}: must be >= 1")
    if not gpu.live():
        raise SystemExit("ch5_flags: no GPU in this run; nothing measured")
    spec = catalog.get(KEY)
    data = bench.inputs(SHAPE, "float32")      # one set of random inputs for every build and timing
    sets = []
    for p in (dict(spec.defaults), {**spec.defaults, **SMALL_TILE}):
        rows = [{"key": KEY, "params": p, "defines": flags} for flags in builds()]
        time_builds(rows, data, a.rotations, f"{p['BM']}x{p['BN']}x{p['BK']}")
        sets.append({"params": p, "rows": [{"flags": r.pop("defines"), **{k: v for k, v in r.items()
                                                                          if k not in ("key", "params")}}
                                           for r in rows]})
    cap = cap_builds()
    time_builds(cap, data, a.rotations, "launch-bounds control")
    doc = {"provenance": results.provenance(),
           "command": "python scripts/ch5_flags.py --rotations " + str(a.rotations),
           "kernel": KEY, "shape": list(SHAPE), "flags": list(FLAGS),
           "method": "each timing: bench.measure, 3 alternating rounds against cuBLAS (cupy.matmul); "
                     "within a set (and within cap) the builds are rotated every rotation and reversed every other one",
           "sets": sets, "cap": cap}
    out = results.RESULTS_DIR / f"{results.DEFAULT_SLUG}-{ARTIFACT}.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"ch5_flags: wrote {out}")
    for st in sets:
        for r in st["rows"]:
            print(f"  {st['params']['BM']}x{st['params']['BN']}x{st['params']['BK']} {r['flags']}: "
                  f"{r['ratio']:.4f} of cuBLAS ({r['tflops']} vs {r['cublas_tflops']} TFLOP/s), "
                  f"{r['registers']} registers, {r['local_bytes']} B local")
    for r in cap:
        print(f"  cap {r['key']} MIN_BLOCKS={r['params']['MIN_BLOCKS']} {r['switches']}: {r['ratio']:.4f} of cuBLAS, "
              f"{r['registers']} registers, {r['local_bytes']} B local")
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / out.name).write_text(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
