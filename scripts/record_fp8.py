"""Record chapter 11's FP8 measurements on an H100/H200: results/<gpu>-fp8.json.

Usage (on the GPU machine, from the repository root; torch optional but wanted: with it the
speed reference is cuBLASLt FP8, ``torch._scaled_mm``):

    GEMM_BOOK_COMMIT=$(git rev-parse --short=12 HEAD) python scripts/record_fp8.py [--out DIR] [--quick]

What it runs (helpers/chapters/ch12_fp8.py), about 2 minutes on an H200:

* correctness of every entry on odd shapes (M, N not tile multiples, K not a multiple of 128),
  against float64 of the dequantized inputs;
* speed at 4096^3 and 8192^3 of rung 1 (per-tensor), rung 2 (block scales) and the
  promotion builds (PROMOTE = 0, 1, 2, 4 at BN = 128), each against cuBLASLt FP8 on the
  same bytes in alternating rounds (:func:`helpers.runtime.fp8.measure`), and rung 1 against
  cuBLAS bf16 on the dequantized inputs (the ratio a reader without torch sees live);
* accuracy against K (256 x 256 x K, K = 256 ... 65536, fp32 C): no promotion, every 1, 2, 4
  k-tiles, block scales, cuBLAS bf16;
* the Tensor Core accumulator probe (:func:`helpers.chapters.ch12_fp8.accumulator_probe`).

Prints a short table last. The file has the provenance block of every results file.
"""
import argparse
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch12_fp8 as ch
from helpers.runtime import catalog, fp8 as rt, gpu, results

ODD = [(200, 264, 176), (129, 136, 4112), (1000, 1000, 1008), (64, 8, 16)]
# rung 2 as shipped and its control, the other PINGPONG (chapter 11 quotes both: ch.prose_values)
SPEED = [("fp8_r1_tensor", {}), ("fp8_r1_tensor", {"CLUSTER_M": 2}), ("fp8_r2_block", {}),
         ("fp8_r2_block", {"PINGPONG": 1 - catalog.get("fp8_r2_block").defaults["PINGPONG"]}),
         ("fp8_r2_block", {"SCALE_LOAD": 0}), ("fp8_r2_block", {"BN": 128, "STAGES": 6, "SCALE_LOAD": 0}),
         ("fp8_promote", {"PROMOTE": 0}), ("fp8_promote", {"PROMOTE": 1}), ("fp8_promote", {"PROMOTE": 2}),
         ("fp8_promote", {"PROMOTE": 4})]
KS = [256, 1024, 4096, 16384, 65536]


def log(msg):
    print(msg, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="4096^3 only, fewer K")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    t0 = time.time()
    path = Path(__file__).resolve().parent.parent / "results" / f"{results.DEFAULT_SLUG}-{ch.ARTIFACT}.json"

    def save():                                              # after every phase: a timeout keeps what was done
        doc["seconds"] = round(time.time() - t0, 1)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            shutil.copy(path, a.out)
    doc = {"provenance": results.provenance(), "command": " ".join(sys.argv),
           "torch": getattr(rt.torch_fp8(), "__version__", None), "odd": [], "runs": [], "accuracy": [],
           "probe": None, "errors": []}
    # 0. a first look: one tile, where the errors are (rows and columns in groups of 8)
    for key, p, shape in (("fp8_r1_tensor", {}, (128, 256, 128)), ("fp8_r1_tensor", {}, (128, 256, 32)),
                          ("fp8_promote", {"PROMOTE": 0, "CLUSTER_M": 1}, (128, 128, 128))):
        try:
            d = rt.inputs(shape, "tensor", out_f32=True, bf16_reference=False)
            C = ch.run_once(key, d.arrays["A"], d.arrays["Bt"], d.arrays["SA"], d.arrays["SB"], out_f32=True, **p)
            cp = gpu.cupy()
            bad = cp.asnumpy(cp.abs(C - d.expect) > 1e-2 * (cp.abs(d.expect) + 1))
            import numpy as np
            rows = np.nonzero(bad.reshape(shape[0] // 8, 8, -1).any(axis=(1, 2)))[0].tolist()
            cols = np.nonzero(bad.reshape(shape[0], -1, 8).any(axis=(0, 2)))[0].tolist()
            log(f"diag {key} {p} {shape}: {int(bad.sum())} bad of {bad.size}; bad row groups {rows[:20]}; "
                f"bad col groups {cols[:40]}; nan {int(cp.isnan(C).sum())}")
            doc.setdefault("diagnosis", []).append({"kernel": key, "shape": list(shape), "bad": int(bad.sum())})
        except Exception as e:
            doc["errors"].append(f"diag {key} {shape}: {e!r}"[:300])
            log(f"diag {key} {shape}: FAILED {e!r}"[:400])
            traceback.print_exc()
    save()
    # 1. correctness on odd shapes
    for shape in ODD:
        for key, p in (("fp8_r1_tensor", {}), ("fp8_r2_block", {}), ("fp8_promote", {"PROMOTE": 2})):
            try:
                data = rt.inputs(shape, "block" if key == "fp8_r2_block" else "tensor")
                r = rt.measure(ch.prepare(key, shape, **p), data, timed=False)
                doc["odd"].append({"kernel": key, "params": p, "shape": list(shape), "rel_err": r["rel_err"]})
                log(f"odd {key} {p} {shape}: rel_err {r['rel_err']:.2e}")
            except Exception as e:
                doc["odd"].append({"kernel": key, "params": p, "shape": list(shape), "error": repr(e)[:300]})
                doc["errors"].append(f"odd {key} {shape}: {e!r}"[:300])
                log(f"odd {key} {p} {shape}: FAILED {e!r}"[:400])
    save()
    # 2. speed
    shapes = [(4096, 4096, 4096)] + ([] if a.quick else [(8192, 8192, 8192)])
    for shape in shapes:
        data = {s: rt.inputs(shape, s, bf16_reference=True) for s in ("tensor", "block")}
        for key, p in SPEED:
            try:
                r = ch.measure(key, data["block" if key == "fp8_r2_block" else "tensor"], rounds=a.rounds, **p)
                doc["runs"].append(r)
                log(f"{key} {p} {shape}: {r['value']} TFLOP/s, ratio {r['ratio']} to {r['reference']} "
                    f"({r['reference_value']}), rel_err {r['rel_err']:.2e}")
            except Exception as e:
                doc["errors"].append(f"speed {key} {p} {shape}: {e!r}"[:300])
                log(f"speed {key} {p} {shape}: FAILED {e!r}"[:400])
                traceback.print_exc()
        try:                                                 # rung 1 against cuBLAS bf16 (no torch)
            r = ch.measure("fp8_r1_tensor", data["tensor"].against_bf16(), rounds=a.rounds)
            doc["runs"].append(r)
            log(f"fp8_r1_tensor vs bf16 {shape}: ratio {r['ratio']} to {r['reference']} ({r['reference_value']})")
        except Exception as e:
            doc["errors"].append(f"bf16 ref {shape}: {e!r}"[:300])
            log(f"bf16 ref {shape}: FAILED {e!r}"[:400])
        del data
    save()
    # 3. accuracy against K
    for dist in ("positive", "normal"):
        for K in (KS[:3] if a.quick else KS):
            try:
                row = ch.accuracy_row(K, dist=dist)
                doc["accuracy"].append(row)
                log("acc " + " ".join(f"{k}={v:.2e}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
            except Exception as e:
                doc["errors"].append(f"accuracy K={K} {dist}: {e!r}"[:300])
                log(f"accuracy K={K}: FAILED {e!r}"[:400])
                traceback.print_exc()
    save()
    # 4. accumulator probe
    try:
        doc["probe"] = ch.accumulator_probe()
        for mode, v in doc["probe"].items():
            log(f"probe {mode}: " + " ".join(f"{e}:{k:g}" for e, k in zip(v["e"], v["kept"])))
    except Exception as e:
        doc["errors"].append(f"probe: {e!r}"[:300])
        traceback.print_exc()
    save()
    log(f"\nwrote {path} in {doc['seconds']} s; GPU {gpu.device_info()['name']}; torch {doc['torch']}")
    log(f"{'kernel':16} {'params':22} {'shape':16} {'TFLOP/s':>8} {'ratio':>6} reference")
    for r in doc["runs"]:
        log(f"{r['kernel']:16} {json.dumps({k: v for k, v in r['params'].items() if k in ('BN', 'CLUSTER_M', 'PROMOTE')}):22} "
            f"{'x'.join(map(str, r['shape'])):16} {r['value']:>8} {r['ratio']:>6} {r['reference']}")
    log(f"errors: {len(doc['errors'])}")
    return 1 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
