// mma_sm80.cuh - the Tensor Core pieces of chapters 7 and 9 (sm_80 and newer):
// mma.sync m16n8k16 fed by ldmatrix from XOR-swizzled stage buffers that cp.async fills.
//
// kernels/07_mma_sync.cu explains each piece (its items 1-4); kernels/09_any_shape.cu
// reuses them under guards. The including file defines, before the #include:
//   BM, BN, BK          block tile (rows of C, columns of C, k per k-tile; BK 32 or 64)
//   WM, WN              warp tile (multiples of 16)
//   SWIZZLE             1: XOR-swizzled stage buffers, 0: plain row-major (chapter 7's control)
//   BF16                0: fp16 operands, 1: bf16
//   T                   (a typedef) the 16-bit element type of A and B
// and gets the derived sizes below, the PTX wrappers (ldsm_x4, ldsm_x4_trans, mma16816),
// swz, the Loader (one thread's share of a k-tile's copies: init_loader, copy_chunks,
// next_tile), FragRows (init_frag_rows, load_frags) (the ldmatrix side) and mma_tile.
// Stage buffers: A tiles BM x BK, B tiles BK x BN, both row-major (B's rows are k: N-major,
// as in global memory), addressed as shared-memory byte addresses (unsigned).
#ifndef GEMM_BOOK_MMA_SM80_CUH
#define GEMM_BOOK_MMA_SM80_CUH

#include "common.cuh"

#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (WARPS_M * WARPS_N * 32)
#define MT (WM / 16)           // m16 fragments per warp tile
#define NT (WN / 8)            // n8 fragments per warp tile
#define KK (BK / 16)           // k16 steps per k-tile
#define RA (BK / 8)            // 16-byte chunks per row of the A tile
#define RB (BN / 8)            // 16-byte chunks per row of the B tile
#define A_STAGE (BM * BK)      // elements of one stage of A
#define B_STAGE (BK * BN)
#define CA (BM * RA / THREADS) // 16-byte A chunks per thread per k-tile
#define CB (BK * RB / THREADS) // 16-byte B chunks per thread per k-tile
#define NCH (CA + CB)          // all of a thread's chunks of one k-tile
#define A_STEP (THREADS / RA)  // rows between a thread's consecutive A chunks
#define B_STEP (THREADS / RB)  // ... B chunks

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64 (an even number of k16 steps)");
static_assert((BM * RA) % THREADS == 0 && (BK * RB) % THREADS == 0,
              "16-byte chunks of a tile must spread evenly over the threads");
static_assert(THREADS % RA == 0 && THREADS % RB == 0,
              "a thread's chunks must stay in one column of chunks (BN <= 256)");
#if SWIZZLE
// The swizzle key of a chunk depends on its row (its 128-byte line for A with
// BK = 32) modulo 8; moving down a multiple of 8 rows (lines) keeps the key,
// so one swizzled offset per thread plus compile-time steps addresses all of
// its chunks, and one per lane plus steps addresses all of its ldmatrix rows.
static_assert(THREADS % (8 * (RA > 8 ? RA : 8)) == 0 && THREADS % (8 * (RB > 8 ? RB : 8)) == 0,
              "SWIZZLE=1: a thread's chunks must lie a multiple of 8 rows (128-byte lines) apart, "
              "i.e. THREADS must be a multiple of 64 and of BN");
#endif

#if BF16
#define MMA_AB "bf16"
#else
#define MMA_AB "f16"
#endif

// ---------------------------------------------------------------- PTX wrappers
// ldmatrix.sync.aligned.m8n8.x4: the warp reads four 8 x 8 tiles of 16-bit values
// from shared memory. Lanes 8j..8j+7 give the addresses of the 8 rows (16 bytes
// each) of tile j; lane `lane` receives, in register r[j], the two values at row
// lane / 4, columns 2 * (lane % 4) and +1 of tile j: one instruction for what would be
//   for (j < 4) r[j] = pack(tile_j[lane / 4][2 * (lane % 4)], tile_j[lane / 4][2 * (lane % 4) + 1]);
// with every lane reading its values itself.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// The same four tiles, each transposed on the way: lane `lane` receives the values
// at rows 2 * (lane % 4) and +1, column lane / 4 (B's fragment from a tile whose rows are k).
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: d[16x8] += a[16x16] * b[16x8] for
// one warp, fp32 accumulators, every operand in registers (chapter 7, item 1, gives
// which lane holds which elements: a 4 registers of two 16-bit values, b 2, d 4
// floats). The plain loop it stands for, spread over the 32 lanes:
//   for (i < 16) for (j < 8) for (k < 16) d[i][j] += a[i][k] * b[k][j];
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB "." MMA_AB ".f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---------------------------------------------------------------- the swizzle
// Physical 16-byte chunk of logical chunk q in a tile with R chunks per row:
//   q' = q ^ ((q / max(R, 8)) % 8)
// the chunk index XOR its row (or its 128-byte line, when rows are shorter) mod 8
// (chapter 7, item 3). SWIZZLE=0: the plain layout, q' = q.
__device__ __forceinline__ int swz(int q, int R)
{
#if SWIZZLE
    const int line = R >= 8 ? q / R : q / 8;
    return q ^ (line & 7);
#else
    (void)R;
    return q;
#endif
}

// ---------------------------------------------------------------- the copies
// One thread's share of the copies of a k-tile: CA chunks of A and CB of B, 16
// bytes each, chunk tid + i * THREADS of the tile (consecutive threads take
// consecutive chunks of a row: coalesced). Chunk i lies A_STEP (B_STEP) rows below
// chunk 0, so the thread keeps one pointer per operand and a step. Stride is the
// type of the steps: int where the caller checks BM * K and BK * N < 2^31 (chapter
// 7), long long otherwise (chapter 9).
template <typename Stride>
struct Loader {
    const T* a_ptr;            // its first A chunk of the next k-tile to load
    const T* b_ptr;            // its first B chunk of the next k-tile to load
    Stride a_step, b_step;     // elements between its consecutive A (B) chunks
    unsigned a_dst, b_dst;     // swizzled byte offsets of its first chunks inside a stage
    unsigned a_rows_ok;        // bit i: the row of A chunk i is < M
    int a_col, b_row;          // column of its A chunks, row of its first B chunk, in the tile
    int b_n_left;              // N - (global column of its B chunks): > 0 when inside
    bool b_col_ok;             // b_n_left > 0: its B chunks lie inside N
};

// Set up the Loader of the calling thread for the block whose C tile starts at
// (m0, n0), its first k-tile at column k0 of A; lda, ldb are the row strides of A and B.
template <typename Stride>
__device__ __forceinline__ void init_loader(Loader<Stride>& ld, const T* __restrict__ A,
                                            const T* __restrict__ B, Stride lda, Stride ldb,
                                            int M, int N, int m0, int n0, int k0)
{
    const int tid = threadIdx.x;
    const int a_row = tid / RA, b_col = (tid % RB) * 8;
    ld.a_col = (tid % RA) * 8;
    ld.b_row = tid / RB;
    ld.a_ptr = A + (long long)(m0 + a_row) * lda + k0 + ld.a_col;
    ld.b_ptr = B + (long long)(k0 + ld.b_row) * ldb + n0 + b_col;
    ld.a_step = A_STEP * lda;
    ld.b_step = B_STEP * ldb;
    ld.a_dst = swz(tid, RA) * 16;
    ld.b_dst = swz(tid, RB) * 16;
    ld.a_rows_ok = 0;
    #pragma unroll
    for (int i = 0; i < CA; ++i)
        ld.a_rows_ok |= (m0 + a_row + i * A_STEP < M ? 1u : 0u) << i;
    ld.b_n_left = N - (n0 + b_col);
    ld.b_col_ok = ld.b_n_left > 0;
}

// Chunks first..last-1 of the thread's share of the k-tile that starts at column
// k0 (A chunks first, then B) into the stage at sA / sB. A chunk is copied whole
// when its first element is inside the matrix (rows < M, k < k_end, and b_col_ok
// for B: the caller passes ld.b_col_ok, or the same test ld.b_n_left > 0) and
// zero-filled otherwise (src-size 0), so a tile that overhangs M, N or K holds
// zeros there, which add nothing to the dot products. first and last are
// compile-time constants at every call, so the loop and its tests fold away.
template <typename Stride>
__device__ __forceinline__ void copy_chunks(int first, int last, unsigned sA, unsigned sB,
                                            const Loader<Stride>& ld, const T* __restrict__ A,
                                            const T* __restrict__ B, int k_end, int k0, bool b_col_ok)
{
    const bool a_k_ok = k0 + ld.a_col < k_end;
    #pragma unroll
    for (int c = 0; c < NCH; ++c) {
        if (c < first || c >= last)
            continue;
        if (c < CA) {
            const bool ok = a_k_ok && ((ld.a_rows_ok >> c) & 1u);
            cp_async16(sA + ld.a_dst + c * THREADS * 16, ok ? ld.a_ptr + c * ld.a_step : A, ok ? 16 : 0);
        } else {
            const int i = c - CA;
            const bool ok = b_col_ok && k0 + ld.b_row + i * B_STEP < k_end;
            cp_async16(sB + ld.b_dst + i * THREADS * 16, ok ? ld.b_ptr + i * ld.b_step : B, ok ? 16 : 0);
        }
    }
}

// Move the thread's pointers on to the next k-tile: BK columns of A, BK rows of B.
template <typename Stride>
__device__ __forceinline__ void next_tile(Loader<Stride>& ld, int ldb)
{
    ld.a_ptr += BK;
    ld.b_ptr += (long long)BK * ldb;
}

// ---------------------------------------------------------------- the fragments
// The byte offsets, inside a stage, of the rows this lane hands to ldmatrix: row
// (lane % 16) of a 16-row tile, 16-byte chunk (lane / 16) of the 16-element k (A)
// or n (B) slice; a[ks] for k16 step ks of the warp's first m16 tile, b[nj] for
// its nj-th pair of n8 fragments at k = 0. The other fragments are whole 16-row
// groups away, which the swizzle leaves in place: constant offsets.
struct FragRows {
    unsigned a[KK];
    unsigned b[WN / 16];
};

__device__ __forceinline__ void init_frag_rows(FragRows& fr, int wm, int wn, int lane)
{
    #pragma unroll
    for (int ks = 0; ks < KK; ++ks)
        fr.a[ks] = swz((wm * WM + lane % 16) * RA + ks * 2 + lane / 16, RA) * 16;
    #pragma unroll
    for (int nj = 0; nj < WN / 16; ++nj)
        fr.b[nj] = swz((lane % 16) * RB + (wn * WN + nj * 16) / 8 + lane / 16, RB) * 16;
}

// The A and B fragments of k16 step ks of the warp tile, from the stage at sA / sB:
// one ldmatrix.x4 per m16 fragment of A, one .x4.trans per two n8 fragments of B.
__device__ __forceinline__ void load_frags(unsigned (&af)[MT][4], unsigned (&bf)[NT][2],
                                           unsigned sA, unsigned sB, const FragRows& fr, int ks)
{
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi)
        ldsm_x4(af[mi], sA + fr.a[ks] + mi * 16 * RA * 16);
    #pragma unroll
    for (int nj = 0; nj < WN / 16; ++nj) {
        unsigned r[4];
        ldsm_x4_trans(r, sB + fr.b[nj] + ks * 16 * RB * 16);
        bf[2 * nj][0] = r[0];  bf[2 * nj][1] = r[1];          // n 0..7:  k 0..7, k 8..15
        bf[2 * nj + 1][0] = r[2];  bf[2 * nj + 1][1] = r[3];  // n 8..15
    }
}

// One k16 step of the warp tile: (WM/16) x (WN/8) mma.sync, acc[mi][nj] += af[mi] * bf[nj].
__device__ __forceinline__ void mma_tile(float (&acc)[MT][NT][4], const unsigned (&af)[MT][4],
                                         const unsigned (&bf)[NT][2])
{
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi)
        #pragma unroll
        for (int nj = 0; nj < NT; ++nj)
            mma16816(acc[mi][nj], af[mi], bf[nj]);
}

// acc = 0: every accumulator of the warp tile.
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NT][4])
{
    #pragma unroll
    for (int i = 0; i < MT; ++i)
        #pragma unroll
        for (int j = 0; j < NT; ++j)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;
}

#endif  // GEMM_BOOK_MMA_SM80_CUH
