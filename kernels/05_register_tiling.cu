// Heaven 5 - register tiling, warp tiling, double buffering, cp.async.
//
// Computes C = A @ B in float32, all row-major:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
//
// Heavens 3 and 4 are limited by shared memory, not by arithmetic: every FMA
// (or every few) needs a shared-memory load. This chapter makes each value
// loaded from shared memory feed more FMAs, by keeping more of C in registers,
// then hides the latency of the loads that remain. One entry point per step:
//
//  1. sgemm_reg1d        a thread computes TM outputs of one COLUMN of C:
//                        per k, one B value (a register) times TM A values.
//                        Lanes follow N, so the TM A values are broadcasts.
//  2. sgemm_reg2d        a TM x TN block of C per thread (outer product):
//                        per k, TM + TN loads feed TM * TN FMAs. A is stored
//                        transposed in shared memory, As[k][m], so a thread's
//                        TM A values are contiguous (float4 reads).
//  3. sgemm_vec4         as 2, with float4 global loads (LDG.128) and stores.
//  4. sgemm_warptile     as 3, but a warp owns a WM x WN tile and a thread's
//                        TM x TN outputs are (TM/4) x (TN/4) blocks of 4 x 4
//                        spread over the warp tile, so that the lanes of a warp
//                        read shared memory in packed float4 broadcasts: no
//                        bank conflicts, half the wavefronts of plain LDS.128.
//  5. sgemm_warptile_db  as 4, double-buffered: the next tile is fetched into
//                        registers while the current one is computed, stored
//                        into the other shared buffer, one barrier per tile;
//                        the fragments of step k+1 load during step k.
//  6. sgemm_cp_async     as 5, with a STAGES-deep ring of shared buffers filled
//                        by cp.async (global -> shared, no registers; A as
//                        4-byte copies into its transposed place, B as 16-byte
//                        copies). Dynamic shared memory (may exceed 48 KB).
//
// Preconditions (checked by helpers/chapters/ch05_register_tiling.py before launch):
//   reg1d, reg2d   none on the shape (edges zero-filled and guarded).
//   vec4, warptile, warptile_db: K % 4 == 0 and N % 4 == 0, A, B, C 16-byte
//                  aligned (float4 accesses); M is free.
//   cp_async       N % 4 == 0, B and C 16-byte aligned; M and K are free.
// Tile parameters (-D; the catalog lists legal values and rules):
//   BM, BN, BK   block tile (rows of C, columns of C, depth of one k step)
//   TM, TN       thread tile (outputs per thread along M and N)
//   WM, WN       warp tile (steps 4-6); the 32 lanes form LM x LN =
//                (WM/TM) x (WN/TN) = 32 and the block has (BM/WM) x (BN/WN) warps
//   STAGES       shared-memory buffers in the cp.async ring (step 6, >= 2)
//   GROUP_M      block raster (steps 4-6): consecutive blocks walk GROUP_M
//                tile rows before moving right (L2 reuse); 0 = plain row order
//   SERPENTINE   steps 2-6: order of the FMAs of one k step (1 = serpentine,
//                the default when MIN_BLOCKS = 1; 0 = plain row by row); see
//                outer_product
//   FAST_INTERIOR  step 6: 1 = tiles wholly inside A and B skip the per-copy
//                bounds checks (one test per k tile); 0 = every copy checked.
//                Default: 1 when MIN_BLOCKS = 1, like SERPENTINE. It removes
//                about 2 % of the instructions issued per k tile (SASS); what
//                that is worth depends on the rest of the build, since each
//                build is a different register allocation by ptxas: chapter 5
//                shows the four builds timed side by side (scripts/ch5_flags.py).
//                SERPENTINE=0 FAST_INTERIOR=0 builds the kernel as it was
//                before either switch.
//   MIN_BLOCKS   second __launch_bounds__ argument (steps 4-6, default 1).
//                A larger value makes ptxas cap registers at
//                65536 / (MIN_BLOCKS * threads): the book's pitfall variant.
// The -D defaults below are those of the catalog entry cp_async (step 6, the
// chapter's fastest); the other entries build with their own catalog values.
// Launch: block = (threads, 1, 1); grid = (ceil(N / BN), ceil(M / BM)).
//   threads: reg1d BM*BN/TM; reg2d, vec4 (BM/TM)*(BN/TN); 4-6 32*(BM/WM)*(BN/WN).
//   Dynamic shared memory (step 6 only): STAGES * BK * (BM + 4 + BN) * 4 bytes.
// -DRECORD_OWNER=1: extra `int* owner` argument; every thread writes
//   blockLinear * 1024 + threadIdx.x for each C element it stores.
//
// This file is longer than the book's other kernels (about 700 lines): the six
// steps stay in one file, compiled with the same -D values and sharing their
// pieces (the outer product, the fragment loads, the epilogue), so that each
// step reads as a small change of the one before; the chapter shows one entry
// at a time.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef FAST_INTERIOR
#define FAST_INTERIOR (MIN_BLOCKS == 1)
#endif
#include "common.cuh"         // step 6's cp_async16, cp_async_commit, cp_async_wait
#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

// A tiles are stored transposed, As[k][m], with rows of A_LD floats. The +4
// keeps rows 16-byte aligned (float4 reads) and shifts row k by 4k banks
// (BM is a multiple of 32): element (k, m) sits in bank (4k + m) % 32. The
// transposing stores run lanes along k, so eight k-rows cover the 32 banks
// once: at BK = 8 those stores are conflict-free, but at BK = 16 (the cp_async
// default) rows k and k + 8 share a bank and each store of A, step 6's 4-byte
// copies included, is a 2-way conflict (a model count; chapter 5's panel
// counts them together with the B copies, not apart).
#define A_LD (BM + 4)

// ================================================================ step 1
#define R1_THREADS (BM * BN / TM)
// Static shared memory is limited to 48 KB per block. Every entry of this file
// is compiled with the same -D values, and a parameter set valid for one entry
// may not be for another (a different thread count), so each entry has a
// validity test (R1_OK ... CA_OK). The build of an entry defines ENTRY_<name>
// (helpers.runtime.compile does), and then that entry's test is a static_assert:
// an invalid configuration is a compile error. The other entries of the same
// build keep an empty body: they are never launched from it, and ptxas compiles
// one kernel instead of six (the entry's own code is the same either way). A
// build that names no entry (nvcc by hand, no -DENTRY_...) compiles all six,
// each one whose test passes.
#if defined(ENTRY_sgemm_reg1d) || defined(ENTRY_sgemm_reg2d) || defined(ENTRY_sgemm_vec4) \
    || defined(ENTRY_sgemm_warptile) || defined(ENTRY_sgemm_warptile_db) || defined(ENTRY_sgemm_cp_async)
#define ONE_ENTRY 1
#else
#define ONE_ENTRY 0
#endif
#define STATIC_SMEM_MAX (48 * 1024)
#define R1_OK (4 * BK * (BM + BN) <= STATIC_SMEM_MAX && BM % TM == 0 && R1_THREADS >= 32 && R1_THREADS <= 1024 && R1_THREADS % 32 == 0 \
               && R1_THREADS % BK == 0 && R1_THREADS % BN == 0                           \
               && (BM * BK) % R1_THREADS == 0 && (BK * BN) % R1_THREADS == 0)

extern "C" __global__ void __launch_bounds__(R1_OK ? R1_THREADS : 32)
sgemm_reg1d(const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_reg1d
    static_assert(R1_OK, "sgemm_reg1d: invalid parameters (its R1_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
#if R1_OK && (!ONE_ENTRY || defined(ENTRY_sgemm_reg1d))
    __shared__ float As[BM * BK];           // row-major As[m][k]
    __shared__ float Bs[BK * BN];           // Bs[k][n]

    const int tid = threadIdx.x;
    const int tc = tid % BN;                // column of C in the tile (lanes follow N)
    const int tr = tid / BN;                // this thread owns rows tr*TM .. tr*TM+TM-1
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int a_k = tid % BK, a_m = tid / BK;
    const int b_n = tid % BN, b_k = tid / BN;

    float acc[TM];
    #pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        #pragma unroll
        for (int j = 0; j < BM * BK / R1_THREADS; ++j) {
            const int m = a_m + j * (R1_THREADS / BK), gm = row0 + m;
            As[m * BK + a_k] = (gm < M && k0 + a_k < K) ? A[(size_t)gm * K + k0 + a_k] : 0.0f;
        }
        #pragma unroll
        for (int j = 0; j < BK * BN / R1_THREADS; ++j) {
            const int k = b_k + j * (R1_THREADS / BN), gn = col0 + b_n;
            Bs[k * BN + b_n] = (gn < N && k0 + k < K) ? B[(size_t)(k0 + k) * N + gn] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + tc];                        // reused TM times
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                acc[i] += As[(tr * TM + i) * BK + k] * b;           // same for the whole warp
        }
        __syncthreads();
    }
    const int gn = col0 + tc;
    if (gn < N) {
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int gm = row0 + tr * TM + i;
            if (gm < M) { C[(size_t)gm * N + gn] = acc[i]; RECORD((size_t)gm * N + gn); }
        }
    }
#endif
}

// ================================================================ steps 2-3
#define R2_THREADS ((BM / TM) * (BN / TN))

// acc[i][j] += a[i] * b[j]: the outer product, TM * TN independent FMAs.
// The plain loop it stands for:
//   for (int i = 0; i < TM; ++i)
//       for (int j = 0; j < TN; ++j)
//           acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
// The same FMAs are issued in a serpentine order: row i walks j forwards when
// i is even and backwards when i is odd,
//   i = 0: b[0] b[1] ... b[TN-1]      i = 1: b[TN-1] ... b[1] b[0]     ...
// so the last FMA of a row and the first of the next read the same b[j].
// Each acc[i][j] receives the same FMAs in the same k order, so the result
// is bit-for-bit the same. Why it can be faster: an operand read by two
// consecutive instructions can come from the operand reuse cache instead of
// the register file, and ptxas marks more such reuses in this order (chapter
// 5 gives the measurement; the explanation was not tested further).
// SERPENTINE=0 builds the plain order (the control). Under a register cap
// (MIN_BLOCKS = 2: 128 registers for 256 threads) the serpentine order made
// NVRTC spill where the plain order does not, so capped builds keep the plain
// order by default.
#ifndef SERPENTINE
#define SERPENTINE (MIN_BLOCKS == 1)
#endif
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN])
{
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
            const int j = (SERPENTINE && i % 2) ? TN - 1 - jj : jj;
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
}

// dst[0..3] = the float4 at p (16-byte aligned shared memory): one LDS.128.
__device__ __forceinline__ void load4(float* dst, const float* p)
{
    const float4 v = *reinterpret_cast<const float4*>(p);
    dst[0] = v.x; dst[1] = v.y; dst[2] = v.z; dst[3] = v.w;
}

#define R2_BASE_OK (4 * BK * (A_LD + BN) <= STATIC_SMEM_MAX && BM % TM == 0 && BN % TN == 0 && TM % 4 == 0 && TN % 4 == 0 \
                    && R2_THREADS >= 32 && R2_THREADS <= 1024 && R2_THREADS % 32 == 0)
#define R2_OK (R2_BASE_OK && R2_THREADS % BK == 0 && R2_THREADS % BN == 0 \
               && (BM * BK) % R2_THREADS == 0 && (BK * BN) % R2_THREADS == 0)

extern "C" __global__ void __launch_bounds__(R2_OK ? R2_THREADS : 32)
sgemm_reg2d(const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_reg2d
    static_assert(R2_OK, "sgemm_reg2d: invalid parameters (its R2_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
#if R2_OK && (!ONE_ENTRY || defined(ENTRY_sgemm_reg2d))
    __shared__ __align__(16) float As[BK * A_LD];     // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);   // thread tile (tr, tc)
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int a_k = tid % BK, a_m = tid / BK;
    const int b_n = tid % BN, b_k = tid / BN;

    float acc[TM][TN] = {};
    float a[TM], b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        #pragma unroll
        for (int j = 0; j < BM * BK / R2_THREADS; ++j) {
            const int m = a_m + j * (R2_THREADS / BK), gm = row0 + m;
            As[a_k * A_LD + m] = (gm < M && k0 + a_k < K) ? A[(size_t)gm * K + k0 + a_k] : 0.0f;
        }
        #pragma unroll
        for (int j = 0; j < BK * BN / R2_THREADS; ++j) {
            const int k = b_k + j * (R2_THREADS / BN), gn = col0 + b_n;
            Bs[k * BN + b_n] = (gn < N && k0 + k < K) ? B[(size_t)(k0 + k) * N + gn] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            #pragma unroll
            for (int i = 0; i < TM; i += 4) load4(a + i, As + k * A_LD + tr * TM + i);
            #pragma unroll
            for (int j = 0; j < TN; j += 4) load4(b + j, Bs + k * BN + tc * TN + j);
            outer_product(acc, a, b);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gm = row0 + tr * TM + i;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gn = col0 + tc * TN + j;
            if (gm < M && gn < N) { C[(size_t)gm * N + gn] = acc[i][j]; RECORD((size_t)gm * N + gn); }
        }
    }
#endif
}

// Float4 global loads of one BM x BK tile of A and one BK x BN tile of B,
// shared by steps 3-5. These two stay macros over the caller's variables
// (row0, a_m, a_kq, b_k, b_nq, A, B, M, N, K): written as functions they change
// sgemm_warptile_db's machine code (ptxas then moves its prefetch loads next
// to their stores), so it would not be the
// kernel the chapter measured. Thread `tid` owns A_LOADS float4s of A (rows
// a_m + j * A_ROWSTEP, k = 4 * a_kq .. +3) and B_LOADS float4s of B (rows
// b_k + j * B_ROWSTEP, n = 4 * b_nq .. +3). Out-of-range float4s read as 0
// (K % 4 == 0 and N % 4 == 0, so a float4 is wholly in or wholly out).
#define A_LOADS (BM * BK / 4 / THREADS_)
#define B_LOADS (BK * BN / 4 / THREADS_)
#define A_ROWSTEP (THREADS_ / (BK / 4))
#define B_ROWSTEP (THREADS_ / (BN / 4))

#define GLOBAL_TILE_LOAD(ra, rb, k0)                                                        \
    _Pragma("unroll") for (int j = 0; j < A_LOADS; ++j) {                                   \
        const int gm = row0 + a_m + j * A_ROWSTEP, gk = (k0) + 4 * a_kq;                    \
        ra[j] = (gm < M && gk < K) ? *reinterpret_cast<const float4*>(A + (size_t)gm * K + gk) \
                                   : make_float4(0.f, 0.f, 0.f, 0.f);                       \
    }                                                                                       \
    _Pragma("unroll") for (int j = 0; j < B_LOADS; ++j) {                                   \
        const int gk = (k0) + b_k + j * B_ROWSTEP, gn = col0 + 4 * b_nq;                    \
        rb[j] = (gk < K && gn < N) ? *reinterpret_cast<const float4*>(B + (size_t)gk * N + gn) \
                                   : make_float4(0.f, 0.f, 0.f, 0.f);                       \
    }

// Registers -> shared: A transposed (4 scalar stores per float4), B as is.
#define SHARED_TILE_STORE(as, bs, ra, rb)                                                   \
    _Pragma("unroll") for (int j = 0; j < A_LOADS; ++j) {                                   \
        float* p_ = (as) + (4 * a_kq) * A_LD + a_m + j * A_ROWSTEP;                         \
        p_[0] = ra[j].x; p_[A_LD] = ra[j].y; p_[2 * A_LD] = ra[j].z; p_[3 * A_LD] = ra[j].w; \
    }                                                                                       \
    _Pragma("unroll") for (int j = 0; j < B_LOADS; ++j)                                     \
        *reinterpret_cast<float4*>((bs) + (b_k + j * B_ROWSTEP) * BN + 4 * b_nq) = rb[j];

#define THREADS_ R2_THREADS
#define V4_OK (R2_BASE_OK && BK % 4 == 0 && BN % 4 == 0 \
               && (BM * BK / 4) % R2_THREADS == 0 && (BK * BN / 4) % R2_THREADS == 0 \
               && R2_THREADS % (BK / 4) == 0 && R2_THREADS % (BN / 4) == 0)
extern "C" __global__ void __launch_bounds__(V4_OK ? R2_THREADS : 32)
sgemm_vec4(const float* __restrict__ A, const float* __restrict__ B,
           float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_vec4
    static_assert(V4_OK, "sgemm_vec4: invalid parameters (its V4_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
#if V4_OK && (!ONE_ENTRY || defined(ENTRY_sgemm_vec4))
    __shared__ __align__(16) float As[BK * A_LD];
    __shared__ __align__(16) float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int a_kq = tid % (BK / 4), a_m = tid / (BK / 4);
    const int b_nq = tid % (BN / 4), b_k = tid / (BN / 4);

    float acc[TM][TN] = {};
    float a[TM], b[TN];
    float4 ra[A_LOADS], rb[B_LOADS];

    for (int k0 = 0; k0 < K; k0 += BK) {
        GLOBAL_TILE_LOAD(ra, rb, k0)
        SHARED_TILE_STORE(As, Bs, ra, rb)
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            #pragma unroll
            for (int i = 0; i < TM; i += 4) load4(a + i, As + k * A_LD + tr * TM + i);
            #pragma unroll
            for (int j = 0; j < TN; j += 4) load4(b + j, Bs + k * BN + tc * TN + j);
            outer_product(acc, a, b);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gm = row0 + tr * TM + i;
        if (gm >= M) continue;
        #pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int gn = col0 + tc * TN + j;
            if (gn < N) {
                *reinterpret_cast<float4*>(C + (size_t)gm * N + gn) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                RECORD((size_t)gm * N + gn); RECORD((size_t)gm * N + gn + 1);
                RECORD((size_t)gm * N + gn + 2); RECORD((size_t)gm * N + gn + 3);
            }
        }
    }
#endif
}
#undef THREADS_

// ================================================================ steps 4-6
// Warp tiling. The block's BM x BN tile is split into (BM/WM) x (BN/WN) warp
// tiles; warp w takes warp row w / (BN/WN), warp column w % (BN/WN). Inside a
// warp the lanes form an LM x LN grid (LM = WM/TM, LN = WN/TN, LM * LN = 32)
// and lane (lm, ln) owns, for every im < TM/4 and in < TN/4, the 4 x 4 block
//   rows  im * 4*LM + 4*lm .. +3,   columns  in * 4*LN + 4*ln .. +3
// of the warp tile. Its A fragment at step k is thus TM/4 float4s at
// As[k][warp_row0 + im*4*LM + 4*lm], its B fragment TN/4 float4s at
// Bs[k][warp_col0 + in*4*LN + 4*ln].
//   Lane bits are dealt so that lanes n and n^1 share lm (same A float4) and
// lanes n and n^2 share ln (same B float4): bit 0 -> ln, bit 1 -> lm, the
// remaining bits fill ln, then lm. Such "paired" LDS.128 requests are served
// in 2 wavefronts instead of 4 (helpers/models/banks.py), and the distinct float4s
// of each half-warp are consecutive: no bank conflicts.
#define LM (WM / TM)
#define LN (WN / TN)
#define WT_THREADS (32 * (BM / WM) * (BN / WN))
#define LOG2_LN (LN == 1 ? 0 : LN == 2 ? 1 : LN == 4 ? 2 : LN == 8 ? 3 : LN == 16 ? 4 : 5)

#define WT_BASE_OK (BM % WM == 0 && BN % WN == 0 && WM % TM == 0 && WN % TN == 0      \
                    && LM * LN == 32 && LM >= 2 && LN >= 2 && LN <= 16                   \
                    && TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && BN % 4 == 0          \
                    && WT_THREADS <= 1024)

// Block tile (tile_m, tile_n) of this block: plain raster (GROUP_M == 0) or
// grouped: blocks walk down GROUP_M tile rows, then move one tile right.
__device__ __forceinline__ void block_tile(int M, int N, int* tile_m, int* tile_n)
{
    const int tiles_n = gridDim.x;
    const int pid = blockIdx.y * gridDim.x + blockIdx.x;
#if GROUP_M > 0
    const int tiles_m = gridDim.y;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (pid / per_group) * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M);
    *tile_m = first_m + (pid % per_group) % rows;
    *tile_n = (pid % per_group) / rows;
#else
    *tile_m = pid / tiles_n;
    *tile_n = pid % tiles_n;
#endif
}

// Fragments of step k: a[TM] from As (transposed tile), b[TN] from Bs.
__device__ __forceinline__ void load_frags(float (&a)[TM], float (&b)[TN], const float* as, const float* bs,
                                           int k, int a_frag0, int b_frag0)
{
    #pragma unroll
    for (int im = 0; im < TM / 4; ++im)
        load4(a + 4 * im, as + k * A_LD + a_frag0 + im * 4 * LM);
    #pragma unroll
    for (int in = 0; in < TN / 4; ++in)
        load4(b + 4 * in, bs + k * BN + b_frag0 + in * 4 * LN);
}

// Where the calling thread works (steps 4-6): a_frag0, the first column of its A
// fragment in the transposed A tile (its first row of C in the block tile), and
// b_frag0, the first column of its B fragment (of C); row0, col0: the block's
// C tile in C.
__device__ __forceinline__ void warp_tile(int M, int N, int& a_frag0, int& b_frag0, int& row0, int& col0)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int ln = (lane & 1) | (((lane >> 2) & ((LN >> 1) - 1)) << 1);
    const int lm = ((lane >> 1) & 1) | ((lane >> (1 + LOG2_LN)) << 1);
    const int warp_m = warp / (BN / WN), warp_n = warp % (BN / WN);
    a_frag0 = warp_m * WM + 4 * lm;
    b_frag0 = warp_n * WN + 4 * ln;
    int tile_m, tile_n;
    block_tile(M, N, &tile_m, &tile_n);
    row0 = tile_m * BM;
    col0 = tile_n * BN;
}

// Store the TM x TN accumulators: float4 stores, rows and columns guarded.
__device__ __forceinline__ void store_c(float* __restrict__ C, const float (&acc)[TM][TN], int M, int N,
                                        int row0, int col0, int a_frag0, int b_frag0 OWNER_PARAM)
{
    #pragma unroll
    for (int im = 0; im < TM / 4; ++im)
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int gm = row0 + a_frag0 + im * 4 * LM + i;
            if (gm < M) {
                #pragma unroll
                for (int in = 0; in < TN / 4; ++in) {
                    const int gn = col0 + b_frag0 + in * 4 * LN;
                    if (gn < N) {
                        const float* c = acc[4 * im + i] + 4 * in;
                        *reinterpret_cast<float4*>(C + (size_t)gm * N + gn) = make_float4(c[0], c[1], c[2], c[3]);
                        RECORD((size_t)gm * N + gn); RECORD((size_t)gm * N + gn + 1);
                        RECORD((size_t)gm * N + gn + 2); RECORD((size_t)gm * N + gn + 3);
                    }
                }
            }
        }
}

#define THREADS_ WT_THREADS
#define WT_OK (WT_BASE_OK && 4 * BK * (A_LD + BN) <= STATIC_SMEM_MAX && (BM * BK / 4) % WT_THREADS == 0 && (BK * BN / 4) % WT_THREADS == 0 \
               && WT_THREADS % (BK / 4) == 0 && WT_THREADS % (BN / 4) == 0)
#define WT_DB_OK (WT_OK && BK % 2 == 0 && 2 * 4 * BK * (A_LD + BN) <= STATIC_SMEM_MAX)

// ---------------------------------------------------------------- step 4
extern "C" __global__ void __launch_bounds__(WT_OK ? WT_THREADS : 32, MIN_BLOCKS)
sgemm_warptile(const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_warptile
    static_assert(WT_OK, "sgemm_warptile: invalid parameters (its WT_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
#if WT_OK && (!ONE_ENTRY || defined(ENTRY_sgemm_warptile))
    __shared__ __align__(16) float As[BK * A_LD];
    __shared__ __align__(16) float Bs[BK * BN];
    const int tid = threadIdx.x;
    int a_frag0, b_frag0, row0, col0;
    warp_tile(M, N, a_frag0, b_frag0, row0, col0);
    const int a_kq = tid % (BK / 4), a_m = tid / (BK / 4);
    const int b_nq = tid % (BN / 4), b_k = tid / (BN / 4);

    float acc[TM][TN] = {};
    float a[TM], b[TN];
    float4 ra[A_LOADS], rb[B_LOADS];

    for (int k0 = 0; k0 < K; k0 += BK) {
        GLOBAL_TILE_LOAD(ra, rb, k0)
        SHARED_TILE_STORE(As, Bs, ra, rb)
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            load_frags(a, b, As, Bs, k, a_frag0, b_frag0);
            outer_product(acc, a, b);
        }
        __syncthreads();
    }
    store_c(C, acc, M, N, row0, col0, a_frag0, b_frag0 OWNER_ARG);
#endif
}

// ---------------------------------------------------------------- step 5
// Two shared buffers. Iteration kt: issue the global loads of tile kt+1 into
// registers first (they fly during the math), compute tile kt from buffer
// kt % 2 with fragments double-buffered in registers, and at the last k step
// store the registers into the other buffer; one barrier per tile.
extern "C" __global__ void __launch_bounds__(WT_DB_OK ? WT_THREADS : 32, MIN_BLOCKS)
sgemm_warptile_db(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_warptile_db
    static_assert(WT_DB_OK, "sgemm_warptile_db: invalid parameters (its WT_DB_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
#if WT_DB_OK && (!ONE_ENTRY || defined(ENTRY_sgemm_warptile_db))
    __shared__ __align__(16) float As[2][BK * A_LD];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int tid = threadIdx.x;
    int a_frag0, b_frag0, row0, col0;
    warp_tile(M, N, a_frag0, b_frag0, row0, col0);
    const int a_kq = tid % (BK / 4), a_m = tid / (BK / 4);
    const int b_nq = tid % (BN / 4), b_k = tid / (BN / 4);

    float acc[TM][TN] = {};
    float a[2][TM], b[2][TN];
    float4 ra[A_LOADS], rb[B_LOADS];
    const int KT = (K + BK - 1) / BK;

    GLOBAL_TILE_LOAD(ra, rb, 0)
    SHARED_TILE_STORE(As[0], Bs[0], ra, rb)
    __syncthreads();
    load_frags(a[0], b[0], As[0], Bs[0], 0, a_frag0, b_frag0);

    int cur = 0;
    for (int kt = 0; kt < KT; ++kt) {
        const bool more = kt + 1 < KT;
        if (more) { GLOBAL_TILE_LOAD(ra, rb, (kt + 1) * BK) }
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {
                if (more) { SHARED_TILE_STORE(As[cur ^ 1], Bs[cur ^ 1], ra, rb) }
                __syncthreads();
                cur ^= 1;
            }
            // fragments of the next step (at k = BK-1: step 0 of the next tile)
            load_frags(a[(k + 1) % 2], b[(k + 1) % 2], As[cur], Bs[cur], (k + 1) % BK, a_frag0, b_frag0);
            outer_product(acc, a[k % 2], b[k % 2]);
        }
    }
    store_c(C, acc, M, N, row0, col0, a_frag0, b_frag0 OWNER_ARG);
#endif
}
#undef THREADS_

// ---------------------------------------------------------------- step 6
// cp.async (sm_80+): copies global -> shared without passing through
// registers; the copies of a tile form one "group", and
// cp.async.wait_group n waits until at most n groups are still in flight.
// src-size 0 fills the destination with zeros (our edge handling). The 16-byte
// copy, the commit and the wait are in kernels/common.cuh (chapters 6-9 use
// them too); A's transposing copies move 4 bytes each (.ca: cached in L1 too).
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
}
// The same copies without the src-size operand: for copies known to be in range.
__device__ __forceinline__ void cp_async4_full(float* dst, const float* src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16_full(float* dst, const float* src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(d), "l"(src) : "memory");
}

#define CA_A_COPIES (BM * BK / WT_THREADS)          // 4-byte copies of A per thread
#define CA_B_COPIES (BK * BN / 4 / WT_THREADS)      // 16-byte copies of B per thread
#define STAGE_A (BK * A_LD)                          // floats per stage
#define STAGE_B (BK * BN)

#define CA_OK (WT_BASE_OK && STAGES >= 2 && BK % 2 == 0                                   \
               && (BM * BK) % WT_THREADS == 0 && WT_THREADS % BK == 0                    \
               && (BK * BN / 4) % WT_THREADS == 0 && WT_THREADS % (BN / 4) == 0)

extern "C" __global__ void __launch_bounds__(CA_OK ? WT_THREADS : 32, MIN_BLOCKS)
sgemm_cp_async(const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
#ifdef ENTRY_sgemm_cp_async
    static_assert(CA_OK, "sgemm_cp_async: invalid parameters (its CA_OK test; rules in helpers/chapters/ch05_register_tiling.py)");
#endif
// cp.async exists from sm_80 on. Built for an older GPU (a T4 is sm_75) this kernel is
// empty, so steps 1-5 of this file still compile there; the catalog (min_cc = 8.0)
// refuses to launch it on such a GPU.
#if CA_OK && __CUDA_ARCH__ >= 800 && (!ONE_ENTRY || defined(ENTRY_sgemm_cp_async))
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                                  // [STAGES][BK][A_LD]
    float* Bs = smem + STAGES * STAGE_A;               // [STAGES][BK][BN]
    const int tid = threadIdx.x;
    int a_frag0, b_frag0, row0, col0;
    warp_tile(M, N, a_frag0, b_frag0, row0, col0);

    // A: thread copies k = a_k of rows a_m + j * (THREADS / BK), 4 bytes each;
    // a warp reads 32 / BK rows x BK consecutive floats (whole 32-byte sectors).
    const int a_k = tid % BK, a_m = tid / BK;
    // B: thread copies float4 n = 4 * b_nq of rows b_k + j * (THREADS / (BN/4)).
    const int b_nq = tid % (BN / 4), b_k = tid / (BN / 4);
    const bool b_col_ok = col0 + 4 * b_nq < N;
    // Source of copy j at tile t: a_src + j * a_step + t * BK (row a_m + j * (THREADS/BK));
    // rows past M and columns past K are zero-filled (src-size 0, source not read).
    const float* a_src = A + (size_t)(row0 + a_m) * K + a_k;
    const size_t a_step = (size_t)(WT_THREADS / BK) * K;
    const int a_rows_left = M - row0 - a_m;            // copy j is in range if j * (THREADS/BK) < this
    const float* b_src = B + (size_t)b_k * N + col0 + 4 * b_nq;
    const size_t b_step = (size_t)(WT_THREADS / (BN / 4)) * N;
    float* a_dst0 = As + a_k * A_LD + a_m;
    float* b_dst0 = Bs + b_k * BN + 4 * b_nq;
    const int KT = (K + BK - 1) / BK;
#if FAST_INTERIOR
    const bool interior = row0 + BM <= M && col0 + BN <= N;   // every tile of this block, but for K
#endif

    // Issue the copies of k tile `t` into stage `s` (t < KT).
    auto load_tile = [&](int t, int s) {
        const int k0 = t * BK;
#if FAST_INTERIOR
        // A tile wholly inside A and B needs no check: one test per tile
        // replaces, for each of the CA_A_COPIES + CA_B_COPIES copies, a
        // compare, a select of a dummy source and a src-size operand (a few
        // instructions each in SASS). The plain loop it stands for is the
        // checked one below, which edge tiles still take. Whether it pays
        // depends on the rest of the build (see FAST_INTERIOR above).
        if (interior && k0 + BK <= K) {
            const float* a = a_src + k0;
            #pragma unroll
            for (int j = 0; j < CA_A_COPIES; ++j, a += a_step)
                cp_async4_full(a_dst0 + s * STAGE_A + j * (WT_THREADS / BK), a);
            const float* b = b_src + (size_t)k0 * N;
            #pragma unroll
            for (int j = 0; j < CA_B_COPIES; ++j, b += b_step)
                cp_async16_full(b_dst0 + s * STAGE_B + j * (WT_THREADS / (BN / 4)) * BN, b);
            return;
        }
#endif
        const bool a_k_ok = k0 + a_k < K;
        #pragma unroll
        for (int j = 0; j < CA_A_COPIES; ++j) {
            const bool ok = a_k_ok && j * (WT_THREADS / BK) < a_rows_left;
            cp_async4(a_dst0 + s * STAGE_A + j * (WT_THREADS / BK), ok ? a_src + j * a_step + k0 : A, ok);
        }
        #pragma unroll
        for (int j = 0; j < CA_B_COPIES; ++j) {
            const int kk = k0 + b_k + j * (WT_THREADS / (BN / 4));
            const bool ok = b_col_ok && kk < K;
            cp_async16(b_dst0 + s * STAGE_B + j * (WT_THREADS / (BN / 4)) * BN,
                       ok ? b_src + j * b_step + (size_t)k0 * N : B, ok ? 16 : 0);
        }
    };

    // Prologue: tiles 0 .. STAGES-2 in flight, one group each (empty groups
    // past the end keep the count uniform).
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();          // tile 0 has landed (for this thread) ...
    __syncthreads();                    // ... and for every thread

    float acc[TM][TN] = {};
    float a[2][TM], b[2][TN];
    load_frags(a[0], b[0], As, Bs, 0, a_frag0, b_frag0);

    int rd = 0, wr = STAGES - 1;        // stage read now, stage refilled next
    for (int kt = 0; kt < KT; ++kt) {
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {
                // Tile kt+1 must be complete before its first fragments load.
                // Groups committed: STAGES-1 + (kt+1); allowing STAGES-2 in
                // flight means tiles 0 .. kt+1 are done.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rd = (rd + 1 == STAGES) ? 0 : rd + 1;
            }
            load_frags(a[(k + 1) % 2], b[(k + 1) % 2], As + rd * STAGE_A, Bs + rd * STAGE_B, (k + 1) % BK, a_frag0, b_frag0);
            if (k == 0) {
                // Refill the stage everybody finished reading before the last
                // barrier (it held tile kt-1) with tile kt + STAGES - 1.
                if (kt + STAGES - 1 < KT) load_tile(kt + STAGES - 1, wr);
                cp_async_commit();
                wr = (wr + 1 == STAGES) ? 0 : wr + 1;
            }
            outer_product(acc, a[k % 2], b[k % 2]);
        }
    }
    cp_async_wait<0>();                   // nothing may land after the block exits
    store_c(C, acc, M, N, row0, col0, a_frag0, b_frag0 OWNER_ARG);
#endif
}
