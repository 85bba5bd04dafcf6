"""Device smoke of the cached dispatcher (fp16): correctness through gemm() (miss then hit),
CPU cost per call, and a few end-to-end rows."""
import sys
import time
sys.path.insert(0, ".")
from helpers.runtime import anyshape as rt, gpu, verify, bench
from helpers.chapters import ch09_end_to_end as e2e
cp = gpu.cupy()
T0 = time.time()
names = [s for s in rt.STRATEGIES if rt.can_run(s) is None]
print("strategies", names, flush=True)
bad = 0
for shape, offs in [((7, 7, 7), (0, 0, 0)), ((35, 79, 19), (0, 0, 0)), ((129, 131, 67), (1, 1, 1)),
                    ((300, 520, 264), (0, 0, 0)), ((1000, 1001, 1002), (0, 0, 0)), ((512, 512, 32768), (0, 0, 0)),
                    ((200, 136, 264), (0, 3, 0))]:
    d = bench.inputs(shape, "float16", offsets=offs)
    A, B, C = d.args()
    ref = verify.reference_gemm(A, B)
    worst = 0.0
    for s in names:
        for _ in range(2):                       # a miss, then a hit of the call cache
            verify.poison(C)
            rt.gemm(A, B, out=C, strategy=s)
            e = verify.rel_err(C, ref)
            worst = max(worst, e)
            if not e <= verify.TOLERANCE["float16"]:
                bad += 1
                print("WRONG", shape, offs, s, e, flush=True)
    print(f"ok {shape} {offs}: {len(names)} strategies x 2 calls, max rel_err {worst:.1e}", flush=True)
print("cache", rt.CACHE_STATS, "correctness", "FAIL" if bad else "PASS", f"t={time.time()-T0:.1f}s", flush=True)
for r in e2e.host_rows(host_shapes=((64, 64, 64), (1000, 1001, 1002), (512, 512, 32768), (1, 4096, 4096),
                                    (4093, 4093, 4093), (4096, 4096, 4096))):
    print("host", r, flush=True)
print(f"t={time.time()-T0:.1f}s", flush=True)
for g, lab, s in [("LLM", "Llama-3-8B MLP down", (16, 4096, 14336)), ("zoo", "", (512, 512, 32768)),
                  ("zoo", "", (1000, 1001, 1002)), ("LLM", "Llama-3-8B attention output", (2048, 4096, 4096)),
                  ("zoo", "", (8192, 8192, 64)), ("LLM", "TinyLlama MLP up", (1, 5632, 2048))]:
    r = e2e.measure_shape(g, lab, s, rounds=3, budget_ms=30)
    print(f"e2e {s} plan={r['plan']} gemm()/cuBLAS={r['ratio']} run()/cuBLAS={r['kernel ratio']} "
          f"host_share={r['host share']} ms={r['ms']} kernel_ms={r['kernel ms']} cublas_ms={r['cuBLAS ms']} "
          f"best={r['best plan']} {r['best ratio']}", flush=True)
print(f"done t={time.time()-T0:.1f}s", flush=True)
