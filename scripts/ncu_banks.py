"""Shared-memory bank counters of the chapter-4 GEMMs, the chapter-0
transposes and the bank probes: Nsight Compute against helpers/models/banks.py.

Usage (a GPU machine with Nsight Compute; reading counters may need root or
NVreg_RestrictProfilingToAdminUsers=0):

    python scripts/ncu_banks.py --out results/h200-banks.json
    python scripts/ncu_banks.py --out /tmp/b.json --shape 512 512 512 --ncu /usr/local/cuda/bin/ncu

The script runs itself under

    ncu --clock-control none --target-processes all --print-units base --csv
        --log-file <tmp.csv> --kernel-name regex:^(sgemm_tile1d|transpose_shared|bank_probe)$
        --metrics <METRICS> python scripts/ncu_banks.py --child <plan.json>

and the child launches every variant of ``ncu_plan`` (helpers/chapters/ch04_bank_conflicts.py) in order, the whole plan
twice (``LAUNCHES``), through
the book's helpers (helpers.runtime.launch: the catalog's rules and -D parameters,
CuPy/NVRTC), checking each result. The parent parses ncu's CSV (one row per
launch and metric), pairs launches with the plan in order (kernel names are
checked), keeps each counter's minimum over a variant's launches, and writes JSON::

    {"<variant>": {"<metric>": value, ...}, ...,
     "_meta": {"provenance", "command", "shape", "metrics",
               "variants": {"<variant>": {"key", "params", "shape",
                                          "predicted": {...}, "match": bool,
                                          "launches": [{<metric>: value}, ...]}}}}

Variants: ``tile1d_<layout>/BK<bk>[_PAD<p>][_TN<tn>]`` (GEMM at --shape),
``transpose_shared/PAD<p>`` (1024 x 1024, TILE 32, BLOCK_ROWS 8: the shape of
the H200 anchor), ``probe/<pattern>`` (one warp, REPS loads; see
helpers/models/banks.py PROBES). tests/gpu/test_banks_ncu.py asserts model == ncu.

Exit status: 0 when ncu ran and the JSON was written (the last line says how
many counters matched the model), 1 when ncu is missing or failed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helpers.chapters.ch04_bank_conflicts import TRANSPOSE_SHAPE, ncu_plan, ncu_predict  # noqa: E402
from helpers.models import banks  # noqa: E402  (after the path set-up)
from helpers.runtime import catalog, compile as kc, gpu, launch, ncu as ncu_tool, verify  # noqa: E402

METRICS = list(banks.METRICS)
EXTRA_METRICS = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                 "smsp__inst_executed_op_shared_st.sum"]        # recorded, not modelled
KERNEL_REGEX = "regex:^(sgemm_tile1d|transpose_shared|bank_probe)$"
LAUNCHES = 2     # profiled launches per variant; each counter keeps the minimum (see main)


# ------------------------------------------------------------------ child: the launches
def child(plan_file: str) -> None:
    import numpy as np
    cp = gpu.cupy()
    for it in json.loads(Path(plan_file).read_text()):
        if it["key"] == "probe":
            pr = banks.PROBES[it["params"]["pattern"]]
            fn = kc.build("04_bank_conflicts.cu", "bank_probe", {"PROBE_BYTES": pr["PROBE_BYTES"]})
            offs = cp.asarray(np.array(pr["offsets"], dtype=np.int32))
            out = cp.zeros(32, dtype=cp.float32)
            fn((1,), (32,), (offs, out, np.int32(it["params"]["reps"])))
            cp.cuda.Device().synchronize()
            print(f"child: {it['name']} done", flush=True)
        elif catalog.get(it["key"]).op == "transpose":
            X = verify.random_matrix(tuple(it["shape"]))
            Y = launch.transpose(it["key"], X, **it["params"])
            cp.cuda.Device().synchronize()
            assert bool((Y == X.T).all()), f"{it['name']}: wrong transpose"
            print(f"child: {it['name']} ok", flush=True)
        else:
            M, N, K = it["shape"]
            A = verify.random_matrix((M, K))
            B = verify.random_matrix((K, N))
            C = cp.empty((M, N), dtype=cp.float32)
            verify.poison(C)
            launch.gemm(it["key"], A, B, C, **it["params"])
            cp.cuda.Device().synchronize()
            err = verify.check(C, verify.reference_gemm(A, B), "float32", what=it["name"])
            print(f"child: {it['name']} rel_err {err:.2e}", flush=True)


# ------------------------------------------------------------------ parent
def main() -> int:
    a = ncu_tool.command_line(__doc__, "GEMM shape for the chapter-4 variants (default 512 512 512)")
    if a.child:
        child(a.child)
        return 0
    ncu = ncu_tool.find(a.ncu)
    if not ncu:
        print("ncu_banks: Nsight Compute (ncu) not found; nothing measured", file=sys.stderr)
        return 1
    items = ncu_plan(tuple(a.shape))
    # The whole plan twice: every variant is profiled in two launches and each counter
    # keeps the smaller value. On the H200 ncu now and then reports a few extra events
    # for one launch (2026-11-29: +3 conflicts on the 1,015,808 of the unpadded
    # transpose in one run; +32,768 conflict-free loads on a swizzled GEMM in another)
    # that the next launch of the same kernel does not repeat; both launches are kept
    # in _meta.variants[name]["launches"].
    items = [{**it, "launch": r} for r in range(LAUNCHES) for it in items]
    res = ncu_tool.profile(ncu, __file__, items, KERNEL_REGEX, METRICS + EXTRA_METRICS)
    print(res["stdout"], res["stderr"], sep="\n", flush=True)
    launches = res["launches"]
    if res["returncode"] != 0 or len(launches) != len(items):
        print(f"ncu_banks: ncu rc={res['returncode']}, {len(launches)} profiled launches for {len(items)} planned",
              file=sys.stderr)
        if len(launches) != len(items):
            return 1
    per_launch: dict = {}
    for it, L in zip(items, launches):
        if L["kernel"].split("(")[0].strip() != it["entry"]:
            print(f"ncu_banks: launch {L['id']} is {L['kernel']!r}, expected {it['entry']}", file=sys.stderr)
            return 1
        per_launch.setdefault(it["name"], (it, []))[1].append(L["metrics"])
    doc, meta, matched, differ = {}, {}, 0, 0
    for name, (it, runs) in per_launch.items():
        pred = ncu_predict(it)
        got = {m: min(r[m] for r in runs if isinstance(r.get(m), (int, float)))
               for m in runs[0] if any(isinstance(r.get(m), (int, float)) for r in runs)}
        doc[name] = got
        ok = all(got.get(m) == pred[m] for m in METRICS)
        matched += ok
        differ += not ok
        meta[name] = {"key": it["key"], "params": it["params"], "shape": it["shape"],
                      "predicted": pred, "match": ok, "launches": runs}
        cells = "  ".join(f"{m.split('__')[1][:28]} {got.get(m)!s:>10}/{pred[m]:<10}" for m in METRICS)
        print(f"{'ok ' if ok else 'DIFF'} {name:34s} {cells}")
    prov = ncu_tool.provenance(ncu)
    doc["provenance"] = prov      # top level, as in every results/*.json (results contract)
    doc["_meta"] = {"provenance": prov, "command": res["command"], "shape": a.shape,
                    "transpose_shape": list(TRANSPOSE_SHAPE), "metrics": METRICS, "extra_metrics": EXTRA_METRICS,
                    "variants": meta}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(f"ncu_banks: {matched} passed, {differ} failed (variants whose 4 counters equal the model); wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
