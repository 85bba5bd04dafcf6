// Heaven 6 - Tensor Cores through WMMA (<mma.h>).
//
// Computes C = A @ B with fp16 or bf16 inputs and fp32 accumulation; C is
// stored in the input dtype (as cupy.matmul / cuBLAS does for these dtypes):
//   A: M x K  (lda = K)   B: K x N  (ldb = N)   C: M x N  (ldc = N)
//   all row-major; T = __half, or __nv_bfloat16 with -DBF16=1.
//
// The structure is heaven 5's warp-tiled, double-buffered kernel, with the
// inner product handed to the Tensor Cores. One warp owns a WM x WN tile of C,
// kept as (WM/16) x (WN/16) accumulator fragments of 16 x 16. Per k16 step it
// loads WM/16 fragments of A and WN/16 of B from shared memory and issues
// (WM/16)*(WN/16) wmma::mma_sync, each a 16x16x16 product. The plain loop
// this replaces, for one fragment pair:
//
//   for (i < 16) for (j < 16) for (k < 16) acc[i][j] += a[i][k] * b[k][j];
//
// Which lane holds which element of a fragment is unspecified by the WMMA
// API: the fragment is opaque, and only load/store/mma/fill touch it as a
// whole. Heaven 7 opens it up (mma.sync + ldmatrix).
//
// Data flow per k-tile (BK wide):
//   global --cp.async 16 B--> shared (STAGES buffers, rows padded by PAD)
//          --wmma::load_matrix_sync--> fragments --wmma::mma_sync--> fp32
// The tile for k-step kt + STAGES - 1 is requested while tile kt is being
// multiplied (STAGES = 2 is classic double buffering). A row of the A tile is
// BK + PAD elements long: with PAD = 8 (16 bytes), the 8 rows that one
// 8x8 sub-load reads start in 8 different 16-byte bank groups, so
// load_matrix_sync is conflict-free; PAD = 0 gives 2-, 4- or 8-way conflicts.
//
// Epilogue: a fragment's element layout is opaque, so the fp32 accumulators
// go through shared memory (store_matrix_sync into a per-warp 16 x WN strip),
// are converted to T and written 8 elements (16 bytes) per lane, guarded.
//
// Two pitfalls, compiled from the same file:
//   -DWRONG_LAYOUT=1 declares the B fragment wmma::col_major while shared
//     memory holds B row-major. load_matrix_sync cannot know: it reads the
//     16x16 block transposed, and every result is a plausible-looking number
//     of the right magnitude, and wrong (relative error ~1).
//   -DACC_F16=1 (fp16 only) accumulates in a half fragment. Each product is
//     added to a running sum held in fp16 (11-bit significand): once the sum
//     is large, an addend below half its ulp no longer changes it; with
//     all-positive inputs and large K the result stops growing.
//
// Preconditions (helpers/chapters/ch06_wmma.py refuses the rest before launch):
//   K % 8 == 0 and N % 8 == 0 (each 16-byte chunk of a row of A, B and C is
//   aligned and wholly inside or outside the matrix); pointers 16-byte aligned.
//   M is free. Tiles that overhang M, N or K are zero-filled by cp.async
//   (src-size operand 0) and the stores are guarded.
//
// Tile parameters (-D; the defaults are those of the catalog entry wmma_f16,
// whose 128 x 128 tile the two pitfall entries widen to 128 x 256): BM, BN
// (block tile), BK (multiple of 16), WM, WN (warp tile, multiples of 16), PAD
// (row padding in elements, multiple of 8), STAGES (>= 2), GROUP_M (block
// rasterization group, 1 = plain order), BF16, ACC_F16, WRONG_LAYOUT (0/1).
// Launch: block = (BM/WM * BN/WN * 32); grid = (ceil(N/BN), ceil(M/BM));
//   dynamic shared memory = max(STAGES * (BM*(BK+PAD) + BK*(BN+PAD)) * 2,
//                               warps * 16 * (WN + CPAD) * sizeof(accumulator)).
// -DRECORD_OWNER=1 adds `int* owner`: every C element records
// blockLinear * 1024 + threadIdx.x of the thread that stored it.

#include <mma.h>

#ifndef BM
#define BM 128               // block tile: 128 x 128 of C, 4 warps ...
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32                // ... 2 k16 steps per k-tile
#endif
#ifndef WM
#define WM 64                // warp tile: 4 x 4 fragments of 16 x 16
#endif
#ifndef WN
#define WN 64
#endif
#ifndef PAD
#define PAD 8                // 16 bytes per shared row: conflict-free fragment loads
#endif
#ifndef STAGES
#define STAGES 3             // cp.async ring depth
#endif
#ifndef GROUP_M
#define GROUP_M 8            // tile-order group height (1: plain order)
#endif
#ifndef BF16
#define BF16 0               // 1: bfloat16
#endif
#ifndef ACC_F16
#define ACC_F16 0            // pitfall: fp16 accumulator
#endif
#ifndef WRONG_LAYOUT
#define WRONG_LAYOUT 0       // pitfall: B fragment declared col_major
#endif
using namespace nvcuda;

#include "fp16.cuh"           // T, to_T
#include "common.cuh"         // cp_async16, cp_async_commit, cp_async_wait, tile_coords

#if ACC_F16
#if BF16
#error "ACC_F16 needs fp16 inputs: WMMA has no bf16 accumulator"
#endif
typedef __half ACC;
#define CPAD 8               // epilogue strip padding, elements (16 bytes)
#else
typedef float ACC;
#define CPAD 4
#endif

#if WRONG_LAYOUT
typedef wmma::col_major B_LAYOUT;   // the bug: shared memory holds B row-major
#else
typedef wmma::row_major B_LAYOUT;
#endif

#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (WARPS_M * WARPS_N * 32)
#define FM (WM / 16)           // fragments per warp tile, along M
#define FN (WN / 16)           // ... along N
#define LDA_S (BK + PAD)       // shared-memory row pitch of the A tile, elements
#define LDB_S (BN + PAD)
#define A_STAGE (BM * LDA_S)
#define B_STAGE (BK * LDB_S)
#define LDC_S (WN + CPAD)

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "WMMA works on 16x16x16 pieces");
static_assert(PAD % 8 == 0, "rows must stay 16-byte aligned for cp.async");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0,
              "16-byte chunks of a tile must spread evenly over the threads");
static_assert(STAGES >= 2, "at least two stages");

#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

// Fragment loads from shared memory. For fp16 this is plain load_matrix_sync,
// which nvcc turns into one ldmatrix (LDSM) per fragment. For bf16, nvcc 13
// emits the same PTX instruction, wmma.load, but with a generic address (no
// .shared): ptxas then cannot use ldmatrix and loads the fragment with 32-bit
// LD.E and in-register transposes (MOVM), about 4x the instructions. Issuing
// wmma.load ... .shared.bf16 ourselves restores LDSM; the fragment is filled
// as the header's own builtin fills it, four 32-bit registers in order.
#if BF16
#if WRONG_LAYOUT
#define B_LAYOUT_PTX "col"
#else
#define B_LAYOUT_PTX "row"
#endif
#define WMMA_LD_SHARED_BF16(frag, ptr, ldm, OPERAND, LAYOUT)                                   \
    do {                                                                                          \
        unsigned* r_ = reinterpret_cast<unsigned*>(&(frag).x[0]);                                \
        asm volatile("wmma.load." OPERAND ".sync.aligned." LAYOUT ".m16n16k16.shared.bf16 "      \
                     "{%0,%1,%2,%3}, [%4], %5;\n"                                                \
                     : "=r"(r_[0]), "=r"(r_[1]), "=r"(r_[2]), "=r"(r_[3])                         \
                     : "r"((unsigned)__cvta_generic_to_shared(ptr)), "r"(ldm));                  \
    } while (0)
#define LOAD_A(frag, ptr, ldm) WMMA_LD_SHARED_BF16(frag, ptr, ldm, "a", "row")
#define LOAD_B(frag, ptr, ldm) WMMA_LD_SHARED_BF16(frag, ptr, ldm, "b", B_LAYOUT_PTX)
#else
#define LOAD_A(frag, ptr, ldm) wmma::load_matrix_sync(frag, ptr, ldm)
#define LOAD_B(frag, ptr, ldm) wmma::load_matrix_sync(frag, ptr, ldm)
#endif

// One k-tile of A (BM x BK) and B (BK x BN) into a stage, 16 bytes per cp.async;
// a chunk outside the matrix is zero-filled (src-size 0: the tile's overhang).
__device__ __forceinline__ void load_tile(T* sA, T* sB, const T* __restrict__ A, const T* __restrict__ B,
                                          int M, int N, int K, int m0, int n0, int k0, int tid)
{
    #pragma unroll
    for (int i = 0; i < BM * BK / 8 / THREADS; ++i) {
        const int q = tid + i * THREADS, row = q / (BK / 8), col = (q % (BK / 8)) * 8;
        const bool ok = m0 + row < M && k0 + col < K;
        cp_async16(sA + row * LDA_S + col, ok ? A + (size_t)(m0 + row) * K + k0 + col : A, ok ? 16 : 0);
    }
    #pragma unroll
    for (int i = 0; i < BK * BN / 8 / THREADS; ++i) {
        const int q = tid + i * THREADS, row = q / (BN / 8), col = (q % (BN / 8)) * 8;
        const bool ok = k0 + row < K && n0 + col < N;
        cp_async16(sB + row * LDB_S + col, ok ? B + (size_t)(k0 + row) * N + n0 + col : B, ok ? 16 : 0);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_wmma(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
          int M, int N, int K OWNER_PARAM)
{
    extern __shared__ __align__(128) unsigned char smem[];
    T* sA = reinterpret_cast<T*>(smem);            // STAGES x [BM][LDA_S]
    T* sB = sA + STAGES * A_STAGE;                 // STAGES x [BK][LDB_S]

    int pid_m, pid_n;            // block rasterization in GROUP_M order (chapter 5)
    tile_coords(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, GROUP_M, pid_m, pid_n);
    const int m0 = pid_m * BM, n0 = pid_n * BN;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int KT = (K + BK - 1) / BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, ACC> acc[FM][FN];
    #pragma unroll
    for (int i = 0; i < FM; ++i)
        #pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::fill_fragment(acc[i][j], (ACC)0.f);

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT)
            load_tile(sA + s * A_STAGE, sB + s * B_STAGE, A, B, M, N, K, m0, n0, s * BK, tid);
        cp_async_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        // Tile kt has landed (groups committed: STAGES-1+kt, at most STAGES-2
        // still pending), and every warp has finished tile kt-1, whose buffer
        // is refilled next.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int kn = kt + STAGES - 1;
        if (kn < KT)
            load_tile(sA + (kn % STAGES) * A_STAGE, sB + (kn % STAGES) * B_STAGE, A, B, M, N, K,
                      m0, n0, kn * BK, tid);
        cp_async_commit();

        const T* a_s = sA + (kt % STAGES) * A_STAGE + (wm * WM) * LDA_S;
        const T* b_s = sB + (kt % STAGES) * B_STAGE + wn * WN;
        #pragma unroll
        for (int ks = 0; ks < BK; ks += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, B_LAYOUT> b[FN];
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                LOAD_A(a[i], a_s + i * 16 * LDA_S + ks, LDA_S);
            #pragma unroll
            for (int j = 0; j < FN; ++j)
                LOAD_B(b[j], b_s + ks * LDB_S + j * 16, LDB_S);
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                #pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    cp_async_wait<0>();
    __syncthreads();                     // the pipeline buffers become the epilogue strips

    // Epilogue: per row of fragments, a 16 x WN strip through shared memory.
    ACC* strip = reinterpret_cast<ACC*>(smem) + warp * 16 * LDC_S;
    #pragma unroll
    for (int i = 0; i < FM; ++i) {
        #pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::store_matrix_sync(strip + j * 16, acc[i][j], LDC_S, wmma::mem_row_major);
        __syncwarp();
        #pragma unroll
        for (int q = lane; q < 16 * WN / 8; q += 32) {
            const int r = q / (WN / 8), c = (q % (WN / 8)) * 8;
            const int row = m0 + wm * WM + i * 16 + r, col = n0 + wn * WN + c;
            if (row < M && col < N) {              // N % 8 == 0: all 8 columns are inside
                union { uint4 v; T h[8]; } out;
                #pragma unroll
                for (int e = 0; e < 8; ++e)
                    out.h[e] = to_T((float)strip[r * LDC_S + c + e]);
                const size_t idx = (size_t)row * N + col;
                *reinterpret_cast<uint4*>(C + idx) = out.v;
                #pragma unroll
                for (int e = 0; e < 8; ++e)
                    RECORD(idx + e);
            }
        }
        __syncwarp();
    }
}
