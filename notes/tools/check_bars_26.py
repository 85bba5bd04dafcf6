"""Summarize results/h200-anyshape.json against issue 26's done-when bars (development aid)."""
import json
import math
import sys

d = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "results/h200-anyshape.json"))
print("provenance:", d["provenance"].get("gpu"), d["provenance"].get("commit"), d["provenance"].get("date"))
print("host (us):")
for r in d.get("host", []):
    print("  ", r["M x N x K"], r["dtype"], r["plan"], "gemm()", r["gemm() us"], "cupy", r["cupy.matmul us"])
for sec in ("end_to_end_hopper", "end_to_end"):
    rows = d.get(sec, [])
    if not rows:
        continue
    ratios = [r["ratio"] for r in rows]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    big = [r for r in rows if r["GFLOP"] >= 1]
    low = [(r["label"], r["M"], r["N"], r["K"], r["dtype"], round(r["ratio"], 3)) for r in big if r["ratio"] < 0.70]
    auto = sum(bool(r["auto within 5% of best"]) for r in rows)
    print(f"{sec}: {len(rows)} rows, geomean {geo:.3f}, auto within 5% {auto}/{len(rows)} = {auto / len(rows):.2f}")
    print("   >=1 GFLOP below 0.70:", low)
    for r in rows:
        if (r["M"], r["N"], r["K"]) in {(1024, 1024, 16384), (512, 512, 32768), (256, 256, 65536),
                                       (8192, 8192, 64), (32768, 64, 4096), (4093, 4093, 4093)}:
            print("   ", r["M"], r["N"], r["K"], r["dtype"], r["plan"], "ratio", round(r["ratio"], 3),
                  "kernel", round(r["kernel ratio"], 3), "host share", r["host share"])
for r in d.get("memory_bound", []):
    print("memory_bound", {k: v for k, v in r.items() if k != "records"})
