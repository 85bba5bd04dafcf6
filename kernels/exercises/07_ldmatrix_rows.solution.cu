// Exercise 7.1 - the ldmatrix addresses (chapter 7).
//
// C = A @ B with fp16 (or bf16) inputs, fp32 accumulation and a 16-bit C, all
// row-major; K % 8 == 0 and N % 8 == 0, M free. This is the chapter's kernel
// (kernels/07_mma_sync.cu, its helpers in kernels/mma_sm80.cuh): mma.sync
// m16n8k16 fed by ldmatrix from XOR-swizzled stage buffers that cp.async fills.
// A stage holds the A tile as BM rows of RA 16-byte chunks and the B tile as BK
// rows of RB chunks; logical chunk q sits at physical chunk swz(q, R).
// Launch: block = (BM/WM * BN/WN * 32), grid = (ceil(N/BN), ceil(M/BM)).
//
// The step: lane_rows, the byte offset inside a stage of the row each lane hands
// to ldmatrix. For the x4 load of A at k16 step ks, lane l gives row l % 16 of
// the warp's first m16 tile, 16-byte chunk l / 16 of that step's 16 k; for the
// x4.trans load of the nj-th pair of n8 fragments of B at k = 0, row l % 16 of
// the k16 slice, chunk l / 16 of that pair's 16 columns. Both through the swizzle.
#ifndef BM
#define BM 128               // block tile: rows of C
#endif
#ifndef BN
#define BN 256               // block tile: columns of C
#endif
#ifndef BK
#define BK 64                // k per k-tile: 4 k16 steps
#endif
#ifndef WM
#define WM 64                // warp tile: rows
#endif
#ifndef WN
#define WN 64                // warp tile: columns
#endif
#ifndef STAGES
#define STAGES 4             // shared-memory buffers in the cp.async ring
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef BF16
#define BF16 0
#endif
#ifndef LOAD_SPREAD
#define LOAD_SPREAD 1
#endif

#include "../fp16.cuh"           // T, T2, pack2
#include "../mma_sm80.cuh"       // THREADS, MT, NT, KK, ...; the PTX wrappers; Loader, FragRows
#include "../instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

static_assert(STAGES >= 2, "at least two stages");

// A whole k-tile into the stage at sA / sB (the prologue; the main loop with
// LOAD_SPREAD=0), then the copy pointers move on to the next k-tile.
__device__ __forceinline__ void load_tile(unsigned sA, unsigned sB, Loader<int>& lc,
                                          const T* __restrict__ A, const T* __restrict__ B,
                                          int N, int K, int k0)
{
    copy_chunks(0, NCH, sA, sB, lc, A, B, K, k0, lc.b_col_ok);
    next_tile(lc, N);
}

// Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (an empty
// group where there is no tile, so that the count stays uniform); then tile 0
// has landed and is visible to every thread.
__device__ __forceinline__ void prologue(unsigned sA0, unsigned sB0, Loader<int>& lc,
                                         const T* __restrict__ A, const T* __restrict__ B,
                                         int N, int K, int KT)
{
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT)
            load_tile(sA0 + s * A_STAGE * 2, sB0 + s * B_STAGE * 2, lc, A, B, N, K, s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
}

// The byte offsets of this lane's ldmatrix rows (the chapter's init_frag_rows).
__device__ __forceinline__ void lane_rows(FragRows& fr, int wm, int wn, int lane)
{
    #pragma unroll
    for (int ks = 0; ks < KK; ++ks)
        fr.a[ks] = swz((wm * WM + lane % 16) * RA + ks * 2 + lane / 16, RA) * 16;
    #pragma unroll
    for (int nj = 0; nj < WN / 16; ++nj)
        fr.b[nj] = swz((lane % 16) * RB + (wn * WN + nj * 16) / 8 + lane / 16, RB) * 16;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_mma_sync(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
              int M, int N, int K OWNER_PARAM)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sA0 = smem_u32(smem);
    const unsigned sB0 = sA0 + STAGES * A_STAGE * 2;

    int pid_m, pid_n;
    tile_coords(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, GROUP_M, pid_m, pid_n);
    const int m0 = pid_m * BM, n0 = pid_n * BN;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int KT = (K + BK - 1) / BK;

    Loader<int> lc;              // this thread's cp.async chunks (int steps: the host checks BM*K, BK*N < 2^31)
    init_loader<int>(lc, A, B, K, N, M, N, m0, n0, 0);
    FragRows fr;                 // this lane's ldmatrix rows
    lane_rows(fr, wm, wn, lane);
    float acc[MT][NT][4];
    zero_acc(acc);
    prologue(sA0, sB0, lc, A, B, N, K, KT);

    unsigned af[2][MT][4], bf[2][NT][2];         // fragments, double-buffered
    int rs = 0, ws = STAGES - 1;                 // stage being read, stage being written
    load_frags(af[0], bf[0], sA0, sB0, fr, 0);

    for (int kt = 0; kt < KT; ++kt) {
        // During k-tile kt the copies of k-tile kn fill stage ws. That stage
        // was last read in iteration kt-1, before its barrier, so it may be
        // refilled from the first k16 step on.
        const int kn = kt + STAGES - 1;
        const unsigned wA = sA0 + ws * A_STAGE * 2, wB = sB0 + ws * B_STAGE * 2;
        #pragma unroll
        for (int ks = 0; ks < KK; ++ks) {
            if (ks == KK - 1) {
                // Last k16 step: make tile kt+1 visible before loading its
                // first fragments. With LOAD_SPREAD=1 the last share of tile
                // kn's copies and its commit group come first. Groups
                // committed: STAGES + kt; STAGES-2 pending means tile kt+1
                // landed. No branch on kn < KT: past the last k-tile every
                // chunk fails its k < K test and is zero-filled into a stage
                // nobody reads.
                if (LOAD_SPREAD) {
                    copy_chunks(ks * NCH / KK, NCH, wA, wB, lc, A, B, K, kn * BK, lc.b_col_ok);
                    next_tile(lc, N);
                    cp_async_commit();
                    ws = (ws + 1 == STAGES) ? 0 : ws + 1;
                }
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            }
            if (ks < KK - 1 || kt + 1 < KT)    // the fragments of the next k16 step
                load_frags(af[(ks + 1) % 2], bf[(ks + 1) % 2], sA0 + rs * A_STAGE * 2,
                           sB0 + rs * B_STAGE * 2, fr, (ks + 1) % KK);
            if (LOAD_SPREAD && ks < KK - 1)      // a share of tile kn's copies between ldmatrix and mma
                copy_chunks(ks * NCH / KK, (ks + 1) * NCH / KK, wA, wB, lc, A, B, K, kn * BK, lc.b_col_ok);
            if (!LOAD_SPREAD && ks == 0) {       // the burst: all of tile kn's copies at once
                if (kn < KT)
                    load_tile(wA, wB, lc, A, B, N, K, kn * BK);
                cp_async_commit();               // possibly empty: keeps the group count
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;
            }
            mma_tile(acc, af[ks % 2], bf[ks % 2]);
        }
    }
    cp_async_wait<0>();

    // Epilogue: straight from the C fragments, two elements per store.
    const int g = lane / 4, t = lane % 4;
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        #pragma unroll
        for (int nj = 0; nj < NT; ++nj) {
            const int col = n0 + wn * WN + nj * 8 + 2 * t;
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WM + mi * 16 + g + 8 * h;
                if (row < M && col < N) {        // N % 8 == 0: col+1 < N too
                    const size_t idx = (size_t)row * N + col;
                    *reinterpret_cast<T2*>(C + idx) = pack2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
                    RECORD(idx);
                    RECORD(idx + 1);
                }
            }
        }
    }
}
