"""Does racecheck follow an mbarrier hand-off? A writer warp stores 32 floats to shared
memory and each lane arrives on `full`; a reader warp waits on `full`, reads a neighbour
lane's value, and each lane arrives on `empty`, which the writer waits on before the next
round. Correct under the PTX memory model (arrive releases, try_wait acquires). mode 1 is
the same hand-off through two __syncthreads() per round (racecheck's own barrier)."""
import sys
import cupy as cp
SRC = r'''
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    unsigned done;
    do { asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                      : "=r"(done) : "r"(bar), "r"(parity) : "memory"); } while (!done);
}
__device__ __forceinline__ void arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
extern "C" __global__ void handoff(float* out, int rounds, int mode) {
    __shared__ __align__(8) unsigned long long bars[2];
    __shared__ float buf[32];
    const unsigned full = (unsigned)__cvta_generic_to_shared(&bars[0]), empty = full + 8;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 32;" :: "r"(full) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 32;" :: "r"(empty) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    for (int r = 0; r < rounds; ++r) {
        if (mode == 0) {
            if (warp == 0) { wait_parity(empty, (r & 1) ^ 1); buf[lane] = (float)(r + lane); arrive(full); }
            else { wait_parity(full, r & 1); out[r * 32 + lane] = buf[(lane + 1) % 32]; arrive(empty); }
        } else {
            if (warp == 0) buf[lane] = (float)(r + lane);
            __syncthreads();
            if (warp == 1) out[r * 32 + lane] = buf[(lane + 1) % 32];
            __syncthreads();
        }
    }
}
'''
mode = int(sys.argv[1])
k = cp.RawKernel(SRC, "handoff")
R = 64
out = cp.full(R * 32, cp.nan, cp.float32)
k((1,), (64,), (out, cp.int32(R), cp.int32(mode)))
want = cp.asarray([[r + (lane + 1) % 32 for lane in range(32)] for r in range(R)], cp.float32).ravel()
print(f"mode {mode}: values {'right' if bool(cp.all(out == want)) else 'WRONG'}", flush=True)
