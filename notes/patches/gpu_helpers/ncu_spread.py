"""Dev probe (notes only): how far DRAM bytes and L2 hit rates of one build move between
launches in one ncu run. The controls' vec4 launch read 3,169 MB (83.2 % L2 hits) in one
recording and 1,493 MB (91.1 %) live in another. Here naive_yfirst, strip4 and vec4 each
launch REPEAT times, interleaved, under ncu's default cache control (caches flushed
before each profiled launch), at 4096^3 with their default parameters.

    python3 .gpu/ncu_spread.py OUT.json [REPEAT]
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from helpers.chapters.common import HEADLINE  # noqa: F401  (fills the catalog)
from helpers.runtime import catalog, ncu as ncu_tool, panels

KEYS = ("naive_yfirst", "strip4", "vec4")
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
L2 = "lts__t_sector_hit_rate.pct"

out, repeat = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
shape = [4096, 4096, 4096]
items = [{"key": k, "params": catalog.get(k).params(), "shape": shape, "repeat": i}
         for i in range(repeat) for k in KEYS]
ncu = ncu_tool.find(None)
known, _, _ = ncu_tool.query_metrics(ncu, panels.METRICS)
runs, res = panels.profile_many(items, ncu, known)
rows = {}
for r in runs:
    m = r["metrics"]
    mb = sum(m.get(k, 0.0) for k in DRAM) / 1e6
    rows.setdefault(r["key"], []).append({"dram_MB": round(mb, 1), "l2_hit_pct": m.get(L2),
                                          "read_MB": round(m.get(DRAM[0], 0.0) / 1e6, 1)})
    print(f"{r['key']:14s} #{r['repeat']}  DRAM {mb:8.1f} MB  L2 hit {m.get(L2, float('nan')):5.1f} %", flush=True)
for k, v in rows.items():
    mbs = [x["dram_MB"] for x in v]
    print(f"{k:14s} DRAM MB min {min(mbs):.0f} median {statistics.median(mbs):.0f} max {max(mbs):.0f}")
Path(out).write_text(json.dumps({"command": res["command"], "shape": shape, "rows": rows,
                                 "provenance": ncu_tool.provenance(ncu)}, indent=1) + "\n")
