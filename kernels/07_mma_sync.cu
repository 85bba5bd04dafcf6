// Heaven 7 - mma.sync PTX, ldmatrix, a swizzled shared-memory layout and a
// multistage cp.async pipeline.
//
// Computes C = A @ B on Tensor Cores, fp32 accumulation, C stored in the input
// dtype (as cupy.matmul / cuBLAS does for fp16 and bf16 arrays):
//   A: M x K  (lda = K)   B: K x N  (ldb = N)   C: M x N  (ldc = N)
//   all row-major; T = __half, or __nv_bfloat16 with -DBF16=1.
//
// Heaven 6 let WMMA hide three things. Here each one is written out:
//
// 1. The instruction. One warp executes
//      mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
//    D[16x8] = A[16x16] * B[16x8] + C[16x8]. Its operands live in registers,
//    spread over the 32 lanes in a fixed pattern (PTX ISA, "Matrix Fragments
//    for mma.m16n8k16"; helpers/figures/fragments.py draws it). With g = lane / 4 and
//    t = lane % 4, lane `lane` holds
//      A: (g, 2t..2t+1) (g+8, 2t..2t+1) (g, 2t+8..2t+9) (g+8, 2t+8..2t+9)
//      B: (k = 2t..2t+1, n = g) and (k = 2t+8..2t+9, n = g)
//      C: (g, 2t..2t+1) and (g+8, 2t..2t+1)
//    A warp tile of WM x WN is (WM/16) x (WN/8) such instructions per k16 step.
//
// 2. The register load. ldmatrix.sync.aligned.m8n8.x4 reads four 8x8 tiles
//    of 16-bit values from shared memory; lanes 8j..8j+7 give the addresses
//    of the 8 rows (16 bytes each) of tile j, and lane `lane` receives, for
//    tile j, the two values at (row lane/4, cols 2*(lane%4)..+1) in register
//    j: exactly the A fragment above, if the four tiles are the four 8x8
//    quarters of the 16x16 A tile. B is stored k-major in shared memory
//    (rows = k, as in global memory), so its fragment needs the transposed
//    load, ldmatrix ... .x4.trans, which hands lane `lane` the values at
//    (rows 2*(lane%4)..+1, col lane/4): the B fragment. One .x4.trans covers
//    k16 x n16, i.e. two n8 fragments.
//      per lane: row (lane % 16) of the 16-row tile, 16-byte chunk (lane / 16)
//
// 3. The shared-memory layout. One ldmatrix phase reads 8 rows x 16 bytes.
//    In a plain row-major tile those 8 chunks sit at the same offset of rows
//    that are 64, 256 or 512 bytes apart, i.e. in the same 4 banks: 4-way (A,
//    BK=32) or 8-way (B) bank conflicts. Padding every row by 16 bytes fixes
//    the reads too (heaven 6 does that), at the cost of shared memory and of
//    rows that no longer fill whole 128-byte lines; the XOR swizzle wastes
//    nothing: it permutes the 16-byte chunks inside every 128-byte line:
//
//      q  = row * R + chunk          (R = 16-byte chunks per tile row)
//      q' = q ^ ((q / max(R, 8)) % 8)
//
//    For B (R >= 8) that is chunk ^ (row % 8): 8 consecutive k rows read the
//    same logical chunk from 8 different bank groups. For A with BK = 32
//    (R = 4) two tile rows share one 128-byte line, and the key is the line
//    index. The permutation stays inside a 128-byte line, so the cp.async
//    stores (8 consecutive lanes fill one line) remain conflict-free too.
//    -DSWIZZLE=0 keeps the plain layout, for the bank-conflict comparison.
//
// 4. The pipeline. STAGES shared-memory buffers; the tile for k-step kt +
//    STAGES - 1 is requested with cp.async.cg (16 bytes, global -> shared,
//    no registers, L1 bypassed) while tile kt is multiplied;
//    cp.async.wait_group STAGES-2 + __syncthreads() make tile kt+1 visible.
//    Fragments are double-buffered in registers: the ldmatrix for k16 step
//    s+1 is issued before the mma of step s. With LOAD_SPREAD=1 (default) a
//    thread's copies of the next tile are spread over the k16 steps, a few
//    between the mma instructions of each, instead of one burst per tile:
//      burst:  for each k-tile { copy 12 chunks; 4 x (ldmatrix, 32 mma) }
//      spread: for each k-tile { 4 x (ldmatrix, 3 chunks, 32 mma) }
//    Each thread keeps one pointer into A and one into B that move by one
//    k-tile per tile (next_tile) instead of recomputing 64-bit addresses.
//
// 5. Block rasterization. Block ids are remapped so that GROUP_M consecutive
//    blocks walk down a column of tiles before moving right; blocks running
//    at the same time then share A and B panels in L2.
//
// Preconditions (helpers/chapters/ch07_mma_sync.py refuses anything else before launch):
//   K % 8 == 0 and N % 8 == 0: every 16-byte chunk of a row of A or B is
//   16-byte aligned and lies entirely inside or outside the matrix; C is
//   stored two elements (4 bytes) at a time. Pointers 16-byte aligned.
//   M is free. Tiles that overhang M, N or K are zero-filled by cp.async
//   (src-size operand 0) and their stores are guarded.
//
// Tile parameters (-D): BM, BN (block tile), BK (32 or 64), WM, WN (warp
// tile, multiples of 16), STAGES (2..5), SWIZZLE (0/1; 1 needs the thread
// count to be a multiple of BN), GROUP_M (>= 1, rasterization group height),
// LOAD_SPREAD (0/1), BF16 (0/1). Chunk offsets are 32-bit: BM*K and BK*N
// must stay below 2^31 (checked on the host). A 64x64 warp tile keeps 128
// fp32 accumulators per thread (~230 registers), so blocks have 4 or 8 warps
// and one block runs per SM (two for 4-warp blocks).
// Launch: block = (WARPS_M * WARPS_N * 32), WARPS_M = BM/WM, WARPS_N = BN/WN;
//   grid = (ceil(N / BN), ceil(M / BM));
//   dynamic shared memory = STAGES * (BM*BK + BK*BN) * 2 bytes.
// -DRECORD_OWNER=1 adds an `int* owner` argument: every C element records
// blockLinear * 1024 + threadIdx.x of the lane that wrote it (so the GPU test
// can check the C fragment layout and the rasterization against the model).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
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
#ifndef PROBE
#define PROBE 0
#endif
// The PROBE ladder (timing experiments only, wrong results; PROBE 0 is the
// kernel): rung n leaves out one more stage, so two rungs differ by one stage.
#define KEEP_C_STORES    (PROBE < 1)   // rung 1 drops the C stores
#define KEEP_LOOP_COPIES (PROBE < 2)   // rung 2 also drops the main loop's cp.async copies
#define KEEP_TILE_SYNC   (PROBE < 3)   // rung 3 also drops each k-tile's cp.async wait + barrier
#define KEEP_LOOP_LDSM   (PROBE < 4)   // rung 4 also drops the loop's ldmatrix: the mma alone

#if BF16
typedef __nv_bfloat16 T;
typedef __nv_bfloat162 T2;
#define MMA_AB "bf16"
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2bfloat162_rn(x, y); }
#else
typedef __half T;
typedef __half2 T2;
#define MMA_AB "f16"
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2half2_rn(x, y); }
#endif

#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (WARPS_M * WARPS_N * 32)
#define MT (WM / 16)          // m16 fragments per warp tile
#define NT (WN / 8)           // n8 fragments per warp tile
#define KK (BK / 16)          // k16 steps per k-tile
#define RA (BK / 8)           // 16-byte chunks per row of the A tile
#define RB (BN / 8)           // 16-byte chunks per row of the B tile
#define A_STAGE (BM * BK)     // elements
#define B_STAGE (BK * BN)
#define CA (BM * RA / THREADS) // 16-byte A chunks per thread per k-tile
#define CB (BK * RB / THREADS) // 16-byte B chunks per thread per k-tile

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64 (an even number of k16 steps)");
static_assert(STAGES >= 2, "at least two stages");
static_assert(PROBE == 0 || LOAD_SPREAD, "PROBE builds use the LOAD_SPREAD=1 loop");
static_assert((BM * RA) % THREADS == 0 && (BK * RB) % THREADS == 0,
              "16-byte chunks of a tile must spread evenly over the threads");
static_assert(THREADS % RA == 0 && THREADS % RB == 0,
              "a thread's chunks must stay in one column of chunks (BN <= 256)");

#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

// Physical 16-byte chunk of logical chunk q in a tile with R chunks per row.
__device__ __forceinline__ int swz(int q, int R)
{
#if SWIZZLE
    const int line = R >= 8 ? q / R : q / 8;   // row, or 128-byte line when rows are shorter
    return q ^ (line & 7);
#else
    (void)R;
    return q;
#endif
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool in_bounds)
{
    // src-size 0 writes 16 zero bytes and reads nothing: out-of-range chunks
    // become zeros that add nothing to the dot products.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(in_bounds ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N_PENDING) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB "." MMA_AB ".f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Block rasterization: hardware block id -> (tile row, tile column).
// Plain order would be pid_m = pid / grid_n, pid_n = pid % grid_n.
__device__ __forceinline__ void tile_of_block(int& pid_m, int& pid_n)
{
    const int grid_n = gridDim.x, grid_m = gridDim.y;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int per_group = GROUP_M * grid_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int group_h = min(grid_m - first_m, GROUP_M);
    pid_m = first_m + (pid % per_group) % group_h;
    pid_n = (pid % per_group) / group_h;
}

// Row steps between the cp.async chunks of one thread: chunk i of a thread is
// chunk tid + i*THREADS of the tile, i.e. A_STEP (B_STEP) rows further down.
#define A_STEP (THREADS / RA)
#define B_STEP (THREADS / RB)
#if SWIZZLE
// The swizzle key of a chunk depends on its row (its 128-byte line for A with
// BK = 32) modulo 8; moving down a multiple of 8 rows (lines) keeps the key,
// so one swizzled offset per thread plus compile-time steps addresses all of
// its chunks, and one per lane plus steps addresses all of its ldmatrix rows.
static_assert(THREADS % (8 * (RA > 8 ? RA : 8)) == 0 && THREADS % (8 * (RB > 8 ? RB : 8)) == 0,
              "SWIZZLE=1: a thread's chunks must lie a multiple of 8 rows (128-byte lines) apart, "
              "i.e. THREADS must be a multiple of 64 and of BN");
#endif

struct LoadCoords {            // one thread's cp.async state
    const T* a_ptr;            // its first A chunk of the next k-tile to load
    const T* b_ptr;            // its first B chunk of the next k-tile to load
    int a_step, b_step;        // elements between its consecutive A (B) chunks
    unsigned a_dst, b_dst;     // swizzled byte offsets inside a stage
    unsigned a_rows_ok;        // bit i: row of A chunk i is < M
    int a_col, b_row;
    bool b_col_ok;
};

// Part of one k-tile of A (BM x BK) and B (BK x BN) into stage buffers, 16
// bytes per cp.async; consecutive threads take consecutive chunks of a row
// (coalesced). A thread owns CA chunks of A and CB of B per k-tile; this call
// issues those numbered first..last-1 (A chunks first, then B). k0 is the
// tile's first k, for the bounds tests; the addresses come from lc.
__device__ __forceinline__ void load_chunks(int first, int last, unsigned sA, unsigned sB,
                                            const LoadCoords& lc,
                                            const T* __restrict__ A, const T* __restrict__ B,
                                            int K, int k0)
{
    const bool a_k_ok = k0 + lc.a_col < K;
    #pragma unroll
    for (int c = 0; c < CA + CB; ++c) {
        if (c < first || c >= last)
            continue;                           // folded away: first and last are constants
        if (c < CA) {
            const bool ok = a_k_ok && ((lc.a_rows_ok >> c) & 1u);
            cp_async16(sA + lc.a_dst + c * THREADS * 16, ok ? lc.a_ptr + c * lc.a_step : A, ok);
        } else {
            const int i = c - CA;
            const bool ok = lc.b_col_ok && k0 + lc.b_row + i * B_STEP < K;
            cp_async16(sB + lc.b_dst + i * THREADS * 16, ok ? lc.b_ptr + i * lc.b_step : B, ok);
        }
    }
}

// Move a thread's copy pointers to the next k-tile: BK columns of A, BK rows of B.
__device__ __forceinline__ void next_tile(LoadCoords& lc, int N)
{
    lc.a_ptr += BK;
    lc.b_ptr += (size_t)BK * N;
}

// The whole k-tile at once (prologue, and the main loop with LOAD_SPREAD=0).
__device__ __forceinline__ void load_tile(unsigned sA, unsigned sB, LoadCoords& lc,
                                          const T* __restrict__ A, const T* __restrict__ B,
                                          int N, int K, int k0)
{
    load_chunks(0, CA + CB, sA, sB, lc, A, B, K, k0);
    next_tile(lc, N);
}

// Fragments of k16 step `ks` of the warp tile, from one stage. a_off[ks] and
// b_off[nj] are the lane's swizzled byte offsets (see the kernel); the other
// indices move by whole 16-row groups, which the swizzle leaves in place.
__device__ __forceinline__ void load_frags(unsigned (&af)[MT][4], unsigned (&bf)[NT][2],
                                           unsigned sA, unsigned sB, const unsigned (&a_off)[KK],
                                           const unsigned (&b_off)[WN / 16], int ks)
{
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi)
        ldsm_x4(af[mi], sA + a_off[ks] + mi * 16 * RA * 16);
    #pragma unroll
    for (int nj = 0; nj < WN / 16; ++nj) {
        unsigned r[4];
        ldsm_x4_trans(r, sB + b_off[nj] + ks * 16 * RB * 16);
        bf[2 * nj][0] = r[0];  bf[2 * nj][1] = r[1];          // n 0..7:  k 0..7, k 8..15
        bf[2 * nj + 1][0] = r[2];  bf[2 * nj + 1][1] = r[3];  // n 8..15
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_mma_sync(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
              int M, int N, int K OWNER_PARAM)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sA0 = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned sB0 = sA0 + STAGES * A_STAGE * 2;

    int pid_m, pid_n;
    tile_of_block(pid_m, pid_n);
    const int m0 = pid_m * BM, n0 = pid_n * BN;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int KT = (K + BK - 1) / BK;

    LoadCoords lc;
    {
        const int a_row = tid / RA, b_col = (tid % RB) * 8;
        lc.a_col = (tid % RA) * 8;
        lc.b_row = tid / RB;
        lc.a_ptr = A + (size_t)(m0 + a_row) * K + lc.a_col;
        lc.b_ptr = B + (size_t)lc.b_row * N + n0 + b_col;
        lc.a_step = A_STEP * K;                  // the host checks BM * K < 2^31
        lc.b_step = B_STEP * N;                  // and BK * N < 2^31
        lc.a_dst = swz(tid, RA) * 16;
        lc.b_dst = swz(tid, RB) * 16;
        lc.a_rows_ok = 0;
        #pragma unroll
        for (int i = 0; i < CA; ++i)
            lc.a_rows_ok |= (m0 + a_row + i * A_STEP < M ? 1u : 0u) << i;
        lc.b_col_ok = n0 + b_col < N;
    }
    // ldmatrix row addresses of this lane: row (lane % 16) of a 16-row tile,
    // 16-byte chunk (lane / 16) of the 16-element k (A) or n (B) slice.
    unsigned a_off[KK], b_off[WN / 16];
    #pragma unroll
    for (int ks = 0; ks < KK; ++ks)
        a_off[ks] = swz((wm * WM + lane % 16) * RA + ks * 2 + lane / 16, RA) * 16;
    #pragma unroll
    for (int nj = 0; nj < WN / 16; ++nj)
        b_off[nj] = swz((lane % 16) * RB + (wn * WN + nj * 16) / 8 + lane / 16, RB) * 16;

    float acc[MT][NT][4];
    #pragma unroll
    for (int i = 0; i < MT; ++i)
        #pragma unroll
        for (int j = 0; j < NT; ++j)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each.
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT)
            load_tile(sA0 + s * A_STAGE * 2, sB0 + s * B_STAGE * 2, lc, A, B, N, K, s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    unsigned af[2][MT][4], bf[2][NT][2];
    int rs = 0, ws = STAGES - 1;                 // stage being read, stage being written
    load_frags(af[0], bf[0], sA0, sB0, a_off, b_off, 0);

#if LOAD_SPREAD
    // The copies of k-tile kn = kt + STAGES - 1 are spread over the KK k16
    // steps of iteration kt, NCH / KK per step, so each step issues a few
    // cp.async between its ldmatrix and mma instructions. The burst at the
    // top of the tile (LOAD_SPREAD=0, below) issues all of them, with their
    // address arithmetic, in one block with no Tensor Core work in between.
    // Stage ws was last read in iteration kt-1, before its barrier, so it may
    // be refilled from the first step on.
    //
    // KEEP_* are the PROBE ladder's switches (top of the file); all true in the kernel.
    constexpr int NCH = CA + CB;
    for (int kt = 0; kt < KT; ++kt) {
        const int kn = kt + STAGES - 1;
        const unsigned wA = sA0 + ws * A_STAGE * 2, wB = sB0 + ws * B_STAGE * 2;
        #pragma unroll
        for (int ks = 0; ks < KK; ++ks) {
            if (ks == KK - 1) {
                // The last copies of tile kn, then its commit group. Groups
                // committed: STAGES + kt; STAGES-2 pending means tile kt+1 landed.
                // No branch on kn < KT: past the last k-tile every chunk fails
                // its k < K test and is zero-filled into a stage nobody reads.
                if (KEEP_LOOP_COPIES)
                    load_chunks(ks * NCH / KK, NCH, wA, wB, lc, A, B, K, kn * BK);
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
                           sB0 + rs * B_STAGE * 2, a_off, b_off, (ks + 1) % KK);
            if (KEEP_LOOP_COPIES && ks < KK - 1)
                load_chunks(ks * NCH / KK, (ks + 1) * NCH / KK, wA, wB, lc, A, B, K, kn * BK);
            #pragma unroll
            for (int mi = 0; mi < MT; ++mi)
                #pragma unroll
                for (int nj = 0; nj < NT; ++nj)
                    mma16816(acc[mi][nj], af[KEEP_LOOP_LDSM ? ks % 2 : 0][mi], bf[KEEP_LOOP_LDSM ? ks % 2 : 0][nj]);
        }
    }
#else
    for (int kt = 0; kt < KT; ++kt) {
        #pragma unroll
        for (int ks = 0; ks < KK; ++ks) {
            if (ks == KK - 1) {
                // Last k16 step of this tile: make tile kt+1 visible before
                // prefetching its first fragments. Groups committed so far:
                // STAGES + kt; allowing STAGES-2 pending means tile kt+1 landed.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            }
            if (ks < KK - 1 || kt + 1 < KT)
                load_frags(af[(ks + 1) % 2], bf[(ks + 1) % 2], sA0 + rs * A_STAGE * 2,
                           sB0 + rs * B_STAGE * 2, a_off, b_off, (ks + 1) % KK);
            if (ks == 0) {
                // Refill the stage read during iteration kt-1: every warp has
                // passed the barrier above since its last ldmatrix from it.
                const int kn = kt + STAGES - 1;
                if (kn < KT)
                    load_tile(sA0 + ws * A_STAGE * 2, sB0 + ws * B_STAGE * 2, lc, A, B, N, K, kn * BK);
                cp_async_commit();               // possibly empty: keeps the group count
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;
            }
            #pragma unroll
            for (int mi = 0; mi < MT; ++mi)
                #pragma unroll
                for (int nj = 0; nj < NT; ++nj)
                    mma16816(acc[mi][nj], af[ks % 2][mi], bf[ks % 2][nj]);
        }
    }
#endif
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
                // N % 8 == 0: col+1 < N too. Without KEEP_C_STORES the test on the
                // accumulator stays (so no mma is optimized away) but never stores.
                if (row < M && col < N && (KEEP_C_STORES || acc[mi][nj][0] == -1.5e-38f)) {
                    const size_t idx = (size_t)row * N + col;
                    *reinterpret_cast<T2*>(C + idx) = pack2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
                    RECORD(idx);
                    RECORD(idx + 1);
                }
            }
        }
    }
}
