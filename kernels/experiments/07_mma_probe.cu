// Chapter 7's probe ladder: the kernel of kernels/07_mma_sync.cu with one more
// stage left out per rung, to time what each stage costs (helpers/runtime/probes.py;
// the chapter's "Where the time goes: leave one stage out").
//
//   PROBE 1   no C stores (each accumulator is still tested, so no mma is optimized away)
//   PROBE 2   ... and none of the main loop's cp.async copies (the prologue's stay)
//   PROBE 3   ... and no cp.async wait + __syncthreads() per k-tile
//   PROBE 4   ... and no ldmatrix in the loop: the mma instructions alone, fed
//             from the registers the prologue loaded
//
// Every rung computes a wrong C on purpose and is never verified; the kernel
// itself (rung 0) is gemm_mma_sync. Two neighbouring rungs differ by one stage,
// so the difference of their times is the price of that stage. The rungs share
// the kernel's parameters, pieces and set-up (this file includes it) and its
// main loop with LOAD_SPREAD=1; only the loop and the epilogue are written
// here. Entry: gemm_mma_probe, with gemm_mma_sync's arguments (no owner record).

#include "../07_mma_sync.cu"

#ifndef PROBE
#define PROBE 1
#endif
static_assert(PROBE >= 1 && PROBE <= 4, "PROBE is a rung 1..4 (rung 0 is gemm_mma_sync itself)");
static_assert(LOAD_SPREAD, "the probes leave stages out of the LOAD_SPREAD=1 loop");

#define KEEP_C_STORES    (PROBE < 1)   // false on every rung
#define KEEP_LOOP_COPIES (PROBE < 2)
#define KEEP_TILE_SYNC   (PROBE < 3)
#define KEEP_LOOP_LDSM   (PROBE < 4)

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_mma_probe(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K)
{
    // The set-up of gemm_mma_sync, call for call.
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sA0 = smem_u32(smem);
    const unsigned sB0 = sA0 + STAGES * A_STAGE * 2;
    int pid_m, pid_n;
    tile_coords(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, GROUP_M, pid_m, pid_n);
    const int m0 = pid_m * BM, n0 = pid_n * BN;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int KT = (K + BK - 1) / BK;
    Loader<int> lc;
    init_loader<int>(lc, A, B, K, N, M, N, m0, n0, 0);
    FragRows fr;
    init_frag_rows(fr, wm, wn, lane);
    float acc[MT][NT][4];
    zero_acc(acc);
    prologue(sA0, sB0, lc, A, B, N, K, KT);
    unsigned af[2][MT][4], bf[2][NT][2];
    int rs = 0, ws = STAGES - 1;
    load_frags(af[0], bf[0], sA0, sB0, fr, 0);

    // The main loop, the stages of the rung left out.
    for (int kt = 0; kt < KT; ++kt) {
        const int kn = kt + STAGES - 1;
        const unsigned wA = sA0 + ws * A_STAGE * 2, wB = sB0 + ws * B_STAGE * 2;
        #pragma unroll
        for (int ks = 0; ks < KK; ++ks) {
            if (ks == KK - 1) {
                if (KEEP_LOOP_COPIES)
                    copy_chunks(ks * NCH / KK, NCH, wA, wB, lc, A, B, K, kn * BK, lc.b_col_ok);
                next_tile(lc, N);
                cp_async_commit();
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;
                if (KEEP_TILE_SYNC) {
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();
                }
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            }
            if (KEEP_LOOP_LDSM && (ks < KK - 1 || kt + 1 < KT))
                load_frags(af[(ks + 1) % 2], bf[(ks + 1) % 2], sA0 + rs * A_STAGE * 2,
                           sB0 + rs * B_STAGE * 2, fr, (ks + 1) % KK);
            if (KEEP_LOOP_COPIES && ks < KK - 1)
                copy_chunks(ks * NCH / KK, (ks + 1) * NCH / KK, wA, wB, lc, A, B, K, kn * BK, lc.b_col_ok);
            mma_tile(acc, af[KEEP_LOOP_LDSM ? ks % 2 : 0], bf[KEEP_LOOP_LDSM ? ks % 2 : 0]);
        }
    }
    cp_async_wait<0>();

    // No C stores: a store only where an accumulator holds one value it never
    // does, so that every mma still has a use and none is optimized away.
    const int g = lane / 4, t = lane % 4;
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        #pragma unroll
        for (int nj = 0; nj < NT; ++nj) {
            const int col = n0 + wn * WN + nj * 8 + 2 * t;
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WM + mi * 16 + g + 8 * h;
                if (row < M && col < N && (KEEP_C_STORES || acc[mi][nj][0] == -1.5e-38f)) {
                    const size_t idx = (size_t)row * N + col;
                    *reinterpret_cast<T2*>(C + idx) = pack2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
                }
            }
        }
    }
}
