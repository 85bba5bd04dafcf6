"""Dev probe (notes only): why one kernel shows two ratios to cuBLAS in one run.

In one execution of chapter 10 (H200), the ladder put rung 5 (fp16, 4096^3) at 0.996 of a
cuBLAS timed at 662 TFLOP/s, and the dispatcher table, later in the same run, put the same
kernel through ``run()`` at 0.908 of a cuBLAS timed at 731 TFLOP/s. The kernel's own TFLOP/s
agreed (about 664); cuBLAS's moved by 10 %. Within the ladder's bf16 rows cuBLAS read 698-778.

Hypothesis to test: under the 700 W cap, cuBLAS's speed depends on the board's recent load
more than the kernel's does, so a ratio depends on what ran just before, and time_pair's
order (R F per round, R always first) favours R after an idle gap.

What it does, at 4096^3 fp16 on one set of random inputs: blocks of about 40 ms of calls of
R (cuBLAS, cupy.matmul), F (rung 5 launched directly), D (the dispatcher's hopper plan through
run()) and L (rung 1, a cooler kernel at about 0.6 of cuBLAS), in the sequence R F R D R L ...; each block's median call time, its host
start and end, and the SM clock / power sampled with nvidia-smi (timestamped) meanwhile.
Conditions: after 3 s idle ("cool"), and after 8 s of continuous cuBLAS ("hot"); each twice.
Per condition it prints the ratio of the block medians (R over F, R over D), the ratio of the
first R-F pair alone (what the first round of time_pair sees after a gap), R's first blocks,
and R's median speed by the block before it (F, D or L: is cuBLAS slower beside a hotter kernel?).

    python3 .gpu/pair_drift.py OUT.json
"""
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import helpers  # noqa: F401  (fills the catalog)
from helpers.chapters import ch09_any_shape as ch9, ch10_hopper as ch10
from helpers.runtime import bench, gpu, launch, power, timing

SHAPE = (4096, 4096, 4096)
BLOCK_MS = 40.0
PAIRS = 12                      # R F R D ... : 4 * PAIRS / 2 blocks


class Sampler(power.PowerSampler):
    """helpers.runtime.power's sampler with a host timestamp on each sample: (t, MHz, W, cap)."""

    def _poll(self):
        exe = shutil.which("nvidia-smi")
        while exe and not self._stop.is_set():
            t = time.perf_counter()
            try:
                out = subprocess.run([exe, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits", "-i", "0"],
                                     capture_output=True, text=True, timeout=5).stdout.strip().splitlines()[0]
                f = [x.strip() for x in out.split(",")]
                self.rows.append((t, float(f[0]), float(f[2]), f[4]))
            except Exception:
                pass
            self._stop.wait(self.period_s)

    def during(self, t0, t1):
        s = [r for r in self.rows if t0 <= r[0] <= t1]
        if not s:
            return None, None
        return statistics.median(r[1] for r in s), statistics.median(r[2] for r in s)


def main():
    out = sys.argv[1]
    cp = gpu.cupy()
    data = bench.inputs(SHAPE, "float16")
    A, B, C = data.arrays["A"], data.arrays["B"], data.arrays["C"]
    L = launch.prepare(ch10.key("r5_tma_store", "float16"), SHAPE)
    L1 = launch.prepare(ch10.key("r1_tma_wgmma", "float16"), SHAPE)       # a cooler kernel (about 0.6)
    plan = ch9.plan_for("hopper", *SHAPE, ch9.aligned_inputs(A, B))
    R = timing.cublas_gemm(A, B, cp.empty_like(C))
    fns = {"R": R, "F": lambda: L(A, B, C, *SHAPE), "D": lambda: ch9.run(plan, A, B, C),
           "L": lambda: L1(A, B, C, *SHAPE)}
    for f in fns.values():                       # compile, load, warm
        for _ in range(3):
            f()
    cp.cuda.Device().synchronize()
    flops = timing.gemm_flops(*SHAPE)
    doc = {"shape": SHAPE, "block_ms": BLOCK_MS, "gpu": gpu.device_info()["name"], "conditions": []}
    with Sampler(period_s=0.02) as smp:
        for cond in ("cool", "hot", "cool", "hot"):
            if cond == "cool":
                time.sleep(3.0)
            else:
                t_end = time.perf_counter() + 8.0
                while time.perf_counter() < t_end:
                    for _ in range(20):
                        R()
                    cp.cuda.Device().synchronize()
            blocks = []
            for i in range(PAIRS):
                for name in ("R", "FDL"[i % 3]):
                    t0 = time.perf_counter()
                    r = timing.time_ms(fns[name], warmup=1, budget_ms=BLOCK_MS, min_repeat=5)
                    t1 = time.perf_counter()
                    blocks.append({"fn": name, "ms": r["ms"], "tflops": flops / r["ms"] / 1e9,
                                   "t0": t0, "t1": t1, "n": r["n"]})
            time.sleep(0.3)                      # let the last samples land
            for b in blocks:
                b["clock_MHz"], b["power_W"] = smp.during(b["t0"], b["t1"])
            doc["conditions"].append({"condition": cond, "blocks": blocks})
            line = " ".join(f"{b['fn']}{b['tflops']:.0f}@{b['clock_MHz'] or 0:.0f}" for b in blocks)
            print(f"{cond}: {line}", flush=True)
    for c in doc["conditions"]:
        rs = [b for b in c["blocks"] if b["fn"] == "R"]
        fs = [b for b in c["blocks"] if b["fn"] == "F"]
        ds = [b for b in c["blocks"] if b["fn"] == "D"]
        after = {k: [b["tflops"] for i, b in enumerate(c["blocks"])           # R's own speed, by what preceded it
                     if b["fn"] == "R" and i and c["blocks"][i - 1]["fn"] == k] for k in "FDL"}
        c["R_after"] = {k: round(statistics.median(v), 1) for k, v in after.items() if v}
        c["R_first3_tflops"] = [round(b["tflops"], 1) for b in rs[:3]]
        c["ratio_F"] = statistics.median(b["ms"] for b in rs) / statistics.median(b["ms"] for b in fs)
        c["ratio_D"] = statistics.median(b["ms"] for b in rs) / statistics.median(b["ms"] for b in ds)
        c["ratio_F_first_pair"] = rs[0]["ms"] / fs[0]["ms"]
        print(f"{c['condition']}: ratio F {c['ratio_F']:.3f}  D {c['ratio_D']:.3f}  first pair F {c['ratio_F_first_pair']:.3f}; "
              f"R TFLOP/s first blocks {c['R_first3_tflops']}; R's median after F, D, L: {c['R_after']}", flush=True)
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
