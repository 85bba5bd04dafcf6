// Heaven 7 - mma.sync PTX, ldmatrix, a swizzled shared-memory layout and a
// multistage cp.async pipeline.
//
// Computes C = A @ B on Tensor Cores, fp32 accumulation, C stored in the input
// dtype (as cupy.matmul / cuBLAS does for fp16 and bf16 arrays):
//   A: M x K  (lda = K)   B: K x N  (ldb = N)   C: M x N  (ldc = N)
//   all row-major; T = __half, or __nv_bfloat16 with -DBF16=1.
//
// Heaven 6 let WMMA hide three things. Here each one is written out; the PTX
// wrappers live in kernels/mma_sm80.cuh (included below, shared with chapter 9),
// each with the plain loop it replaces.
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
//    quarters of the 16x16 A tile. B is stored row-major in shared memory
//    (rows = k, N-major, as in global memory), so its fragment needs the transposed
//    load, ldmatrix ... .x4.trans, which hands lane `lane` the values at
//    (rows 2*(lane%4)..+1, col lane/4): the B fragment. One .x4.trans covers
//    k16 x n16, i.e. two n8 fragments.
//      per lane: row (lane % 16) of the 16-row tile, 16-byte chunk (lane / 16)
//
// 3. The shared-memory layout. One ldmatrix phase reads 8 rows x 16 bytes.
//    In a plain row-major tile those 8 chunks sit at the same offset of rows
//    that are 64, 128 or 512 bytes apart, i.e. in the same 4 banks: 4-way (A,
//    BK=32), 8-way (A, BK=64) or 8-way (B) bank conflicts. Padding every row by 16 bytes fixes
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
//    between the mma instructions of each, instead of one burst per tile
//    (LOAD_SPREAD=0, the control chapter 7's sweep and ladder time):
//      burst:  for each k-tile { copy 12 chunks; 4 x (ldmatrix, 32 mma) }
//      spread: for each k-tile { 4 x (ldmatrix, 3 chunks, 32 mma) }
//    Each thread keeps one pointer into A and one into B that move by one
//    k-tile per tile (next_tile) instead of recomputing 64-bit addresses.
//
// 5. Block rasterization. Block ids are remapped so that GROUP_M consecutive
//    blocks walk down a column of tiles before moving right, so that blocks
//    running at the same time read the same A and B panels (tile_coords, in
//    kernels/common.cuh). Whether L2 turns that into fewer DRAM bytes is a
//    measurement, not a given: chapter 5 times GROUP_M against plain order.
//
// Preconditions (helpers/chapters/ch07_mma_sync.py refuses anything else before launch):
//   K % 8 == 0 and N % 8 == 0: every 16-byte chunk of a row of A or B is
//   16-byte aligned and lies entirely inside or outside the matrix; C is
//   stored two elements (4 bytes) at a time. Pointers 16-byte aligned.
//   M is free. Tiles that overhang M, N or K are zero-filled by cp.async
//   (src-size operand 0) and their stores are guarded.
//
// Tile parameters (-D; the defaults below are those of the catalog entry
// mma_sync_f16): BM, BN (block tile), BK (32 or 64), WM, WN (warp tile,
// multiples of 16), STAGES (2..5), SWIZZLE (0/1; 1 needs the thread count to
// be a multiple of BN), GROUP_M (>= 1, rasterization group height),
// LOAD_SPREAD (0/1), BF16 (0/1). Chunk offsets are 32-bit: BM*K and BK*N must
// stay below 2^31 (checked on the host). A 64x64 warp tile keeps 128 fp32
// accumulators per thread (ptxas gives it well over 200 registers), so blocks
// have 4 or 8 warps and one block runs per SM (two for 4-warp blocks).
// Launch: block = (WARPS_M * WARPS_N * 32), WARPS_M = BM/WM, WARPS_N = BN/WN;
//   grid = (ceil(N / BN), ceil(M / BM));
//   dynamic shared memory = STAGES * (BM*BK + BK*BN) * 2 bytes.
// -DRECORD_OWNER=1 adds an `int* owner` argument: every C element records
// blockLinear * 1024 + threadIdx.x of the lane that wrote it (so the GPU test
// can check the C fragment layout and the rasterization against the model).
// kernels/experiments/07_mma_probe.cu builds this kernel with one stage left out
// at a time (the chapter's "leave one stage out" ladder).

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

#include "fp16.cuh"           // T, T2, pack2
#include "mma_sm80.cuh"       // THREADS, MT, NT, KK, ...; the PTX wrappers; Loader, FragRows
#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

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
    init_frag_rows(fr, wm, wn, lane);
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
