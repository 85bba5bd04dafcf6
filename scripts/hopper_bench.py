#!/usr/bin/env python3
"""Heaven 10 (Hopper): check and time the rungs of chapter 10, with build overrides.

A thin script over chapter 10's catalog entries (helpers/chapters/ch10_hopper.py) and the
book's one measurement (helpers.runtime.bench.measure): each rung is compiled through
helpers.runtime.launch.prepare, checked against a float64 reference on NaN-poisoned
outputs on every shape, and timed against cuBLAS (cupy.matmul) of the same dtype in
alternating rounds on the timed shapes.

Rungs (catalog keys hopper_<rung>_<bf16|fp16>; switches: see kernels/10_hopper.cu):
  1  r1_tma_wgmma          TMA + mbarrier + wgmma, 1 warpgroup, 64x256 tile
  2  r2_warp_specialized  producer + 2 consumer warpgroups, 128x256, setmaxnreg
  3  r3_persistent        persistent, grid = SMs, GROUP_M tile order
  4  r4_cluster           2x1 clusters, B multicast
  5  r5_tma_store         epilogue through shared memory + TMA store
A rung spec may add overrides after colons: "4:STAGES=3:GROUP_M=16:GRID=128". A name
that is one of the rung's catalog parameters is a parameter (its slider rules apply);
GRID replaces a persistent rung's 1-D grid (a multiple of CLUSTER_M); any other NAME=VALUE is
an extra -D of the build (an experiment switch the catalog does not offer). Specs in
--rungs are separated by commas.

Examples:
  python3 scripts/hopper_bench.py                                  # rungs 1-5, 4096^3 and 8192^3, bf16 and fp16
  python3 scripts/hopper_bench.py --rungs 3,4 --shapes 4096 --dtypes bf16
  python3 scripts/hopper_bench.py --check-only --shapes 1001x1000x1000,4096
  compute-sanitizer --tool memcheck python3 scripts/hopper_bench.py --sanitize-small --rungs 4

Units: times in ms, rates in TFLOP/s (2*M*N*K / time). ratio = cuBLAS time / kernel time,
medians of the same run, alternating rounds.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch10_hopper as ch
from helpers.runtime import bench, catalog, gpu, launch, verify

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def parse_rung(spec: str, dtype: str) -> tuple:
    """'4:STAGES=3:GRID=128' -> (catalog key, params overrides, extra -D values, grid or None).
    Raises ValueError naming a bad rung, a value that is not an integer or a GRID that is
    not a whole number of clusters."""
    name, *extra = spec.split(":")
    rungs = [r[0] for r in ch.RUNGS]
    if not name.isdigit() or not 1 <= int(name) <= len(rungs):
        raise ValueError(f"rung={name!r}: must be one of 1..{len(rungs)}")
    key = ch.key(rungs[int(name) - 1], dtype)
    spec_ = catalog.get(key)
    params, defines, grid = {}, {}, None
    for kv in filter(None, extra):
        k, _, v = kv.partition("=")
        if not v.lstrip("-").isdigit():
            raise ValueError(f"{k}={v!r}: must be an integer (in rung spec {spec!r})")
        if k == "GRID":
            grid = int(v)
        elif k in spec_.defaults:
            params[k] = int(v)
        else:
            defines[k] = int(v)
    full = {**spec_.defaults, **params}
    cl = full.get("CLUSTER_M", 1)
    if grid is not None and not full.get("PERSISTENT"):
        raise ValueError(f"GRID={grid}: only a persistent rung (PERSISTENT=1) takes a grid of its own")
    if grid is not None and (grid < cl or grid % cl):
        raise ValueError(f"GRID={grid}: must be a positive multiple of CLUSTER_M={cl}")
    return key, params, defines, grid


def parse_shape(s: str) -> tuple:
    parts = [int(p) for p in s.lower().split("x")]
    if len(parts) == 1:
        parts = parts * 3
    if len(parts) != 3:
        raise ValueError(f"shape={s!r}: give N or MxNxK")
    return tuple(parts)


def build(key: str, shape, params: dict, defines: dict, grid: int | None) -> launch.Launch:
    """The catalog's launch of ``key`` on ``shape`` (validated, compiled with ``defines`` added),
    its grid replaced by ``grid`` when given."""
    L = launch.prepare(key, shape, extra_defines=defines or None, **params)
    return dataclasses.replace(L, grid=(grid, 1, 1)) if grid else L


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rungs", default="1,2,3,4,5", help="comma list of rung specs, e.g. 1,2,4:STAGES=3:GRID=128")
    ap.add_argument("--shapes", default="4096,8192", help="comma list of N or MxNxK (timed)")
    ap.add_argument("--check-shapes", default="1001x1000x1000,333x264x72,4093x4088x4104,128x256x64,1x8x8",
                    help="extra shapes checked (not timed); '' for none")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--check-only", action="store_true", help="check correctness, do not time")
    ap.add_argument("--sanitize-small", action="store_true",
                    help="small shapes only, check only (for compute-sanitizer)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget-ms", type=float, default=400.0, help="timed milliseconds per rung and shape")
    ap.add_argument("--json", default=None, help="append all records to this file")
    a = ap.parse_args(argv)

    if not gpu.live() or gpu.capability() != (9, 0):
        raise SystemExit(f"{gpu.describe_target()}: these kernels are sm_90a machine code (needs 9.0)")
    if a.sanitize_small:
        timed, checked = [], [(192, 264, 136), (130, 520, 72)]
        a.check_only = True
    else:
        timed = [parse_shape(s) for s in a.shapes.split(",") if s]
        checked = [parse_shape(s) for s in a.check_shapes.split(",") if s]
    dtypes = [DTYPES[d] for d in a.dtypes.split(",")]
    plans = [(spec, dt, *parse_rung(spec, dt)) for dt in dtypes for spec in a.rungs.split(",")]
    for spec, dt, key, params, defines, grid in plans:          # every rule, before anything compiles
        s = catalog.get(key)
        for shape in checked + timed:
            s.validate(s.params(**params), shape, smem_limit=launch.device_limits()["smem_per_block_max"])
    for bad in ((64, 64, 60), (64, 60, 64)):                    # what the rules refuse, and how
        try:
            catalog.get(plans[0][2]).validate(catalog.get(plans[0][2]).defaults, bad)
        except ValueError as e:
            print(f"refused {bad}: {e}")
    d = gpu.device_info()
    print(f"# {d['name']}  SMs={d['sms']}", flush=True)

    records, fails = [], 0
    for spec, dt, key, params, defines, grid in plans:
        label = f"[{spec} {dt}]"
        for shape in checked + timed:
            L = build(key, shape, params, defines, grid)
            try:
                r = bench.measure(lambda A, B, C, L=L, s=shape: L(A, B, C, *s), shape, dt,
                                  timed=not a.check_only and shape in timed, rounds=a.rounds, budget_ms=a.budget_ms,
                                  chapter=10, kernel=key, params={**L.params, **defines}).as_dict()
            except verify.WrongResult as e:
                fails += 1
                print(f"{label} {'x'.join(map(str, shape))}: FAIL {e}", flush=True)
                records.append({"rung": spec, "kernel": key, "dtype": dt, "shape": list(shape), "wrong": str(e)})
                continue
            res = L.resources()
            r.update(rung=spec, grid=list(L.grid), defines=defines, registers=res["registers"],
                     local_bytes=res["local_bytes"])
            if L.params.get("CLUSTER_M", 1) > 1:
                r["clusters_fit"] = launch.max_active_clusters(L.fn, L.spec.threads(L.params), L.smem,
                                                               L.params["CLUSTER_M"], L.grid[0])
            records.append(r)
            what = (f"{r['value']:.0f} TFLOP/s, cuBLAS {r['reference_value']:.0f}, ratio {r['ratio']:.3f}"
                    if r.get("value") else "checked")
            print(f"{label} {'x'.join(map(str, shape))}: rel_err {r['rel_err']:.2e} {what}  grid {r['grid']}  "
                  f"{res['registers']} regs", flush=True)

    print("\n| rung | dtype | shape | kernel TFLOP/s | cuBLAS TFLOP/s | ratio | rel_err |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        if r.get("value"):
            print(f"| {r['rung']} | {r['dtype']} | {'x'.join(map(str, r['shape']))} | {r['value']:.0f} "
                  f"| {r['reference_value']:.0f} | {r['ratio']:.3f} | {r['rel_err']:.2e} |")
    print(f"checks: {len(records) - fails} ok, {fails} failed")
    out = a.json or (os.path.join(os.environ["OUT"], "hopper_bench.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "records": records}) + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
