// Heaven 9 - any shape, split-K and stream-K.
//
// Computes C = A @ B on Tensor Cores, fp32 accumulation, C stored in the input
// dtype (as cupy.matmul / cuBLAS does for fp16 and bf16 arrays):
//   A: M x K (row stride lda)   B: K x N (ldb)   C: M x N (ldc)
//   all row-major; 16-bit elements, fp16, or bf16 with -DBF16=1.
// For C-contiguous arrays lda = K, ldb = N, ldc = N; the kernel takes the
// strides separately so that the padding path (below) can hand it buffers
// whose rows are longer than the matrix.
//
// The main loop is heaven 7's (kernels/07_mma_sync.cu): mma.sync m16n8k16,
// ldmatrix from an XOR-swizzled shared-memory tile, a STAGES-deep cp.async
// pipeline with the copies spread over the k16 steps, GROUP_M rasterization,
// built from the same pieces (kernels/mma_sm80.cuh, kernels/common.cuh).
// That chapter explains each of them; this one is about the three things it
// refused or left on the table:
//
// 1. Any shape. Heaven 7 needs K % 8 == 0, N % 8 == 0 and 16-byte aligned
//    pointers, because every cp.async moves a 16-byte chunk of 8 elements and
//    that chunk must be 16-byte aligned and entirely inside or outside the
//    matrix. Three ways round it:
//    a. Padding (host side, helpers/chapters/ch09_any_shape.py): copy A and B into
//       zero-filled buffers whose sizes and strides are tile multiples, run
//       this kernel on them (every guard then passes), copy C back.
//    b. Predication, ALIGNED=1: strides multiples of 8 elements and 16-byte
//       aligned bases, M, N, K free. A chunk entirely outside the matrix is
//       not read: cp.async with src-size 0 writes 16 zero bytes,
//         cp.async.cg.shared.global [dst], [src], 16, src_size;
//       so partial tiles fill up with zeros that add nothing. With
//       -DPARTIAL_CHUNKS=1 a chunk that straddles the edge (a K tail that is
//       not a multiple of 8, N % 8 != 0 in a wider buffer) copies only its
//       2 * (elements inside) bytes and zero-fills the rest. The default
//       (PARTIAL_CHUNKS=0) copies such a chunk whole and relies on the row
//       padding being zero: true for K % 8 == 0 and N % 8 == 0 (no padding)
//       and for the "repack" path, which copies A and B once into buffers
//       with lda = round_up(K, 8), ldb = round_up(N, 8), padding zeroed,
//       and writes C directly. The byte count costs about 8 instructions per
//       chunk in the main loop, and with them ptxas hoisted all 64 mma of a
//       k-tile above the barrier, which makes the kernel markedly slower.
//    c. Predication, ALIGNED=0: any base pointer, any stride (a view that
//       starts one element in; K = 4093). A 16-byte chunk of a row is then
//       only 2-byte aligned, which cp.async cannot read. The chunk goes
//       through registers instead: five aligned 32-bit loads, four byte
//       permutes that shift it into place (fetch8 + combine), one 16-byte
//       st.shared. The loads of a k16 step's chunks are issued before its
//       mma instructions and combined and stored after them, so their
//       latency hides behind the Tensor Cores, in part (chapter 9 compares
//       its rate with the cp.async build's).
//    The epilogue stores only inside the matrix; two elements at a time when
//    ldc is even and C 4-byte aligned, one at a time otherwise.
//
// 2. Split-K (gemm_any with gridDim.z = splits > 1). A 512 x 512 output is
//    8 tiles of 128 x 256: 8 of 132 SMs busy while K = 32768 is walked in
//    series. Split the k-tiles into gridDim.z equal ranges, one block per
//    (tile, range), and add the partial products:
//      mode 1 (atomic): red.global.add.f32 into an fp32 workspace W[M][N],
//        then splitk_reduce converts W to C (and clears W for the next call).
//        The order of the additions is whatever order the blocks finish in:
//        the result can differ in the last bits from run to run.
//      mode 2 (two-pass): each range writes its own fp32 partial tile
//        W[z][M][N]; splitk_reduce sums z = 0, 1, ... in that fixed order.
//        Bitwise reproducible, at the cost of splits * M * N * 4 bytes.
//      mode 3 (fused): mode 2's partials and splitk_reduce's sum in one
//        launch. Each block counts itself in flags[tile] after its partial is
//        stored; the block that arrives last adds the tile's partials in the
//        order z = 0, 1, ... (bitwise mode 2's result) and writes C. No block
//        waits for another, so any number of splits fits any grid; the call
//        saves the second launch (on the host, about as much as a launch
//        costs) and the reduce kernel's reads of the tiles nobody has left.
//
// 3. Stream-K (gemm_streamk). 272 tiles on 132 SMs are 2.06 waves: the third
//    wave keeps 8 SMs busy and 124 idle. A persistent grid of one block per
//    SM instead splits the total multiply-accumulate work,
//      iterations = tiles * k-tiles per tile,
//    into gridDim.x equal ranges that cross tile boundaries. A tile whose
//    k-tiles are shared by several blocks is finished by its owner, the
//    block holding its first k-tile: the others write fp32 partials to a
//    workspace slot and raise a flag; the owner waits for the flags, adds
//    the partials and stores C. Hybrid: gemm_any takes the first sk_first
//    tiles whole (data-parallel, a 1-D grid), gemm_streamk streams the rest.
//
// Preconditions: none on M, N, K >= 1, strides or pointers with ALIGNED=0.
//   ALIGNED=1: lda % 8 == 0, ldb % 8 == 0, A and B 16-byte aligned (the host
//   picks the build); with PARTIAL_CHUNKS=0 also zeros in the row padding
//   (columns K..lda-1 of A, N..ldb-1 of B). C: any. Element offsets of A and
//   B are 64-bit; stream-K needs tiles * k-tiles < 2^31 (int iterations).
//   Stream-K: gridDim.x <= blocks that can be resident at once (one per SM),
//   since an owner spins on flags raised by later blocks.
//
// Tile parameters (-D): BM, BN, BK (32 or 64), WM, WN, STAGES (>= 3), GROUP_M
// as in heaven 7; ALIGNED (0/1), PARTIAL_CHUNKS (0/1), BF16 (0/1).
// Launch: block = (BM/WM) * (BN/WN) * 32 threads; dynamic shared memory =
//   STAGES * (BM*BK + BK*BN) * 2 bytes; gemm_any grid = (ceil(N/BN),
//   ceil(M/BM), splits) or (X) for tiles 0..X-1; gemm_streamk grid = (number
//   of SMs); splitk_reduce, pad_copy, pad_copy2, unpad_copy: any 1-D grid
//   (grid-stride).
// This file is longer than the book's other kernels (about 700 lines): any
// shape, split-K and stream-K are three uses of one main loop (mac_loop) and
// one epilogue, and the padding path's copies (pad_copy, pad_copy2, unpad_copy) run in
// the same calls; the chapter shows gemm_any and gemm_streamk one at a time.
//
// The file includes no CUDA header: 16-bit values are moved as raw bits
// (unsigned short) and converted with cvt PTX, so NVRTC needs no CUDA headers.
// The tile defaults are those of the catalog entry any_shape_f16 (the other
// entries of chapter 9 change only ALIGNED and BF16).

#ifndef BM
#define BM 128               // the block tile of heaven 7 ...
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32                // ... with 2 k16 steps per k-tile
#endif
#ifndef WM
#define WM 64                // warp tile, as heaven 7
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4             // >= 3 here: ALIGNED=0 stores a tile one k16 step late
#endif
#ifndef GROUP_M
#define GROUP_M 8            // tile-order group height
#endif
#ifndef BF16
#define BF16 0               // 1: bfloat16 (cvt and mma types)
#endif
#ifndef ALIGNED
#define ALIGNED 1            // 0: chunks through registers, any alignment
#endif
#ifndef PARTIAL_CHUNKS
#define PARTIAL_CHUNKS 0     // 1: a chunk that straddles an edge copies only its inside
#endif
#define SWIZZLE 1            // heaven 7's layout, always

typedef unsigned short T;     // raw 16 bits of one fp16 / bf16 element
struct alignas(16) U4 { unsigned x, y, z, w; };   // 8 elements, one 16-byte chunk (in registers)

#include "mma_sm80.cuh"       // heaven 7's pieces: sizes, PTX wrappers, swizzle, Loader, fragments

#if BF16
#define CVT_X2 "cvt.rn.bf16x2.f32"
#define CVT_X1 "cvt.rn.bf16.f32"
#else
#define CVT_X2 "cvt.rn.f16x2.f32"
#define CVT_X1 "cvt.rn.f16.f32"
#endif

static_assert(STAGES >= 3, "at least three stages (ALIGNED=0 stores a tile one k16 step late)");

// ---------------------------------------------------------------- PTX wrappers

__device__ __forceinline__ unsigned ldg32(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ unsigned short ldg16(const T* p)
{
    unsigned short v;
    asm volatile("ld.global.nc.b16 %0, [%1];\n" : "=h"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel)
{
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}
__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;\n" : "=l"(a) : "l"(p));
    return (unsigned)a;
}
__device__ __forceinline__ void red_add(float* p, float v)
{
    asm volatile("red.global.add.f32 [%0], %1;\n" :: "l"(p), "f"(v) : "memory");
}
// Workspace traffic of stream-K goes through L2 only (.cg): another SM wrote it.
__device__ __forceinline__ void stcg4(float* p, float a, float b, float c, float d)
{
    asm volatile("st.global.cg.v4.f32 [%0], {%1,%2,%3,%4};\n" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void ldcg4(const float* p, float& a, float& b, float& c, float& d)
{
    asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(p) : "memory");
}
__device__ __forceinline__ void sts128(unsigned addr, U4 v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n"
                 :: "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// fp32 -> 16-bit, round to nearest even. pack2: x in the low half (lower address).
__device__ __forceinline__ unsigned pack2(float x, float y)
{
    unsigned r;
    asm(CVT_X2 " %0, %1, %2;\n" : "=r"(r) : "f"(y), "f"(x));   // d.hi = cvt(a), d.lo = cvt(b)
    return r;
}
__device__ __forceinline__ unsigned short cvt1(float x)
{
    unsigned short r;
    asm(CVT_X1 " %0, %1;\n" : "=h"(r) : "f"(x));
    return r;
}

// Eight consecutive elements p[0..n) (zeros for i >= n), p only 2-byte
// aligned. The plain version is
//   for (i = 0; i < 8; ++i) e[i] = i < n ? p[i] : 0;     // 8 loads of 2 bytes
// For a whole chunk, five aligned 4-byte words w0..w4 cover p[0..8), and
// prmt(w[i], w[i+1], 0x5432) = (w[i] >> 16) | (w[i+1] << 16) (PTX prmt.b32)
// picks the two elements that straddle them; 0x3210 keeps w[i] when p is
// 4-byte aligned (w4 is then not loaded). No branch on the alignment: lanes
// of one warp hold rows of both parities when the stride is odd.
// Split in two so that the loads can be in flight across Tensor Core work:
// fetch8 issues the loads into a Raw, combine (the first use of the loaded
// words, where the warp waits for them) runs later. Only a partial chunk
// (0 < n < 8, at the matrix edge) is packed at once, element by element.
struct Raw { unsigned w[5]; unsigned sel; };

__device__ __forceinline__ void fetch8(const T* p, int n, Raw& r)
{
    r.sel = 0x3210u;
    r.w[4] = 0u;
    if (n >= 8) {
        const unsigned long long a = (unsigned long long)p;
        const unsigned* w = reinterpret_cast<const unsigned*>(a & ~3ull);
        const bool odd = (a & 2ull) != 0;
        r.w[0] = ldg32(w);  r.w[1] = ldg32(w + 1);  r.w[2] = ldg32(w + 2);  r.w[3] = ldg32(w + 3);
        if (odd) {
            r.w[4] = ldg32(w + 4);
            r.sel = 0x5432u;
        }
    } else {
        unsigned e[8];
        #pragma unroll
        for (int i = 0; i < 8; ++i)
            e[i] = i < n ? (unsigned)ldg16(p + i) : 0u;
        r.w[0] = e[0] | (e[1] << 16);
        r.w[1] = e[2] | (e[3] << 16);
        r.w[2] = e[4] | (e[5] << 16);
        r.w[3] = e[6] | (e[7] << 16);
    }
}
__device__ __forceinline__ U4 combine(const Raw& r)
{
    U4 v;
    v.x = prmt(r.w[0], r.w[1], r.sel);
    v.y = prmt(r.w[1], r.w[2], r.sel);
    v.z = prmt(r.w[2], r.w[3], r.sel);
    v.w = prmt(r.w[3], r.w[4], r.sel);
    return v;
}
__device__ __forceinline__ U4 load8(const T* p, int n)
{
    Raw r;
    fetch8(p, n, r);
    return combine(r);
}

__device__ __forceinline__ int clampi(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// ---------------------------------------------------------------- copies

// One thread's copy state: heaven 7's Loader (kernels/mma_sm80.cuh) with 64-bit
// steps, since the strides here are any int and M, N, K unchecked.
typedef Loader<long long> Loader64;

// How many of the 8 elements of A chunk c / B chunk c of the k-tile starting
// at k0 lie inside the matrix (kb = end of this block's k range).
__device__ __forceinline__ int a_valid(const Loader64& ld, int c, int kb, int k0)
{
    return ((ld.a_rows_ok >> c) & 1u) ? clampi(kb - k0 - ld.a_col, 0, 8) : 0;
}
__device__ __forceinline__ int b_valid(const Loader64& ld, int i, int kb, int k0)
{
    return k0 + ld.b_row + i * B_STEP < kb ? clampi(ld.b_n_left, 0, 8) : 0;
}

#if ALIGNED
// Chunks first..last-1 of this thread's share of a k-tile (A chunks, then B),
// global -> shared with no registers. Partial chunks: src_size < 16.
__device__ __forceinline__ void async_chunks(int first, int last, unsigned sA, unsigned sB,
                                             const Loader64& ld, const T* __restrict__ A,
                                             const T* __restrict__ B, int kb, int k0)
{
#if PARTIAL_CHUNKS
    #pragma unroll
    for (int c = 0; c < NCH; ++c) {
        if (c < first || c >= last)
            continue;                           // folded away: first and last are constants
        if (c < CA) {
            const int n = a_valid(ld, c, kb, k0);
            cp_async16(sA + ld.a_dst + c * THREADS * 16, n ? ld.a_ptr + c * ld.a_step : A, 2 * n);
        } else {
            const int i = c - CA, n = b_valid(ld, i, kb, k0);
            cp_async16(sB + ld.b_dst + i * THREADS * 16, n ? ld.b_ptr + i * ld.b_step : B, 2 * n);
        }
    }
#else
    // Whole chunks, as heaven 7 copies them (copy_chunks): a chunk is copied
    // (16 bytes) when its first element is inside, else zero-filled. Elements
    // past K (N) inside a copied chunk are the row padding of a repacked
    // buffer, zeros (pad_copy).
    copy_chunks(first, last, sA, sB, ld, A, B, kb, k0, ld.b_n_left > 0);
#endif
}
#else
// The same chunks through registers: fetch (global loads in flight), then,
// after some Tensor Core work, put (combine + st.shared).
__device__ __forceinline__ void fetch_chunks(int first, int last, Raw (&v)[NCH],
                                             const Loader64& ld, int kb, int k0)
{
    #pragma unroll
    for (int c = 0; c < NCH; ++c) {
        if (c < first || c >= last)
            continue;
        if (c < CA)
            fetch8(ld.a_ptr + c * ld.a_step, a_valid(ld, c, kb, k0), v[c - first]);
        else
            fetch8(ld.b_ptr + (c - CA) * ld.b_step, b_valid(ld, c - CA, kb, k0), v[c - first]);
    }
}
__device__ __forceinline__ void put_chunks(int first, int last, const Raw (&v)[NCH],
                                           unsigned sA, unsigned sB, const Loader64& ld)
{
    #pragma unroll
    for (int c = 0; c < NCH; ++c) {
        if (c < first || c >= last)
            continue;
        if (c < CA)
            sts128(sA + ld.a_dst + c * THREADS * 16, combine(v[c - first]));
        else
            sts128(sB + ld.b_dst + (c - CA) * THREADS * 16, combine(v[c - first]));
    }
}
#endif

// A whole k-tile (the prologue).
__device__ __forceinline__ void copy_tile(unsigned sA, unsigned sB, Loader64& ld, const T* __restrict__ A,
                                          const T* __restrict__ B, int kb, int k0, int ldb)
{
#if ALIGNED
    async_chunks(0, NCH, sA, sB, ld, A, B, kb, k0);
#else
    Raw v[NCH];
    fetch_chunks(0, NCH, v, ld, kb, k0);
    put_chunks(0, NCH, v, sA, sB, ld);
#endif
    next_tile(ld, ldb);
}

// ---------------------------------------------------------------- MAC loop

// acc += A[m0:m0+BM, kt0*BK : kt1*BK] @ B[same k, n0:n0+BN] (clipped to the
// matrix). Leaves the pipeline drained and shared memory free (a final
// barrier), so a persistent block can call it again for its next tile.
__device__ __forceinline__ void mac_loop(float (&acc)[MT][NT][4],
                                         const T* __restrict__ A, const T* __restrict__ B,
                                         int M, int N, int K, int lda, int ldb,
                                         int m0, int n0, int kt0, int kt1, unsigned sA0, unsigned sB0)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int kb = imin(K, kt1 * BK);            // loads stop here (split-K / stream-K range end)

    Loader64 ld;
    init_loader<long long>(ld, A, B, lda, ldb, M, N, m0, n0, kt0 * BK);
    FragRows fr;
    init_frag_rows(fr, wm, wn, lane);

    // Prologue: k-tiles kt0 .. kt0+STAGES-2 in flight (zero-filled past kb).
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        copy_tile(sA0 + s * A_STAGE * 2, sB0 + s * B_STAGE * 2, ld, A, B, kb, (kt0 + s) * BK, ldb);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    unsigned af[2][MT][4], bf[2][NT][2];
    int rs = 0, ws = STAGES - 1;
    load_frags(af[0], bf[0], sA0, sB0, fr, 0);

    for (int kt = kt0; kt < kt1; ++kt) {
        const int kn = kt + STAGES - 1;        // k-tile being copied during this one
        const unsigned wA = sA0 + ws * A_STAGE * 2, wB = sB0 + ws * B_STAGE * 2;
        #pragma unroll
        for (int ks = 0; ks < KK; ++ks) {
            const int c0 = ks * NCH / KK, c1 = (ks + 1) * NCH / KK;   // this step's chunks
#if !ALIGNED
            Raw v[NCH];
            fetch_chunks(c0, c1, v, ld, kb, kn * BK);               // global loads in flight ...
#endif
            if (ks == KK - 1) {
#if ALIGNED
                async_chunks(c0, c1, wA, wB, ld, A, B, kb, kn * BK);
#endif
                next_tile(ld, ldb);
                cp_async_commit();
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;
                cp_async_wait<STAGES - 2>();                       // k-tile kt+1 has landed
                __syncthreads();
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            }
            if (ks < KK - 1 || kt + 1 < kt1)
                load_frags(af[(ks + 1) % 2], bf[(ks + 1) % 2], sA0 + rs * A_STAGE * 2,
                           sB0 + rs * B_STAGE * 2, fr, (ks + 1) % KK);
#if ALIGNED
            if (ks < KK - 1)
                async_chunks(c0, c1, wA, wB, ld, A, B, kb, kn * BK);
#endif
            mma_tile(acc, af[ks % 2], bf[ks % 2]);
#if !ALIGNED
            // ... and stored behind the mma. Stage ws (the copy of k-tile kn)
            // is read from iteration kn - 1 on, after at least one barrier
            // that follows these stores (STAGES >= 3).
            put_chunks(c0, c1, v, wA, wB, ld);
#endif
        }
    }
    cp_async_wait<0>();
    __syncthreads();                            // shared memory free for the next call
}

// ---------------------------------------------------------------- epilogues

// C fragment position of acc[mi][nj][2h], [2h+1]: (row, col), (row, col+1).
#define FRAG_ROW(mi, h) (m0 + (warp / WARPS_N) * WM + (mi) * 16 + (lane / 4) + 8 * (h))
#define FRAG_COL(nj)    (n0 + (warp % WARPS_N) * WN + (nj) * 8 + 2 * (lane % 4))

// C = acc, guarded: only elements inside M x N are written.
__device__ __forceinline__ void store_c(const float (&acc)[MT][NT][4], T* __restrict__ C,
                                        int M, int N, int ldc, int m0, int n0)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const bool pairs = (ldc % 2 == 0) && ((unsigned long long)C % 4 == 0);
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi)
        #pragma unroll
        for (int nj = 0; nj < NT; ++nj)
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = FRAG_ROW(mi, h), col = FRAG_COL(nj);
                if (row >= M)
                    continue;
                T* p = C + (long long)row * ldc + col;
                const float x = acc[mi][nj][2 * h], y = acc[mi][nj][2 * h + 1];
                if (pairs && col + 1 < N) {
                    *reinterpret_cast<unsigned*>(p) = pack2(x, y);
                } else {
                    if (col < N) p[0] = cvt1(x);
                    if (col + 1 < N) p[1] = cvt1(y);
                }
            }
}

// Split-K partial results into the fp32 workspace W (row stride N).
// atomic: W += acc (red.global.add.f32); otherwise W = acc.
__device__ __forceinline__ void store_w(const float (&acc)[MT][NT][4], float* __restrict__ W,
                                        int M, int N, int m0, int n0, bool atomic)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    #pragma unroll
    for (int mi = 0; mi < MT; ++mi)
        #pragma unroll
        for (int nj = 0; nj < NT; ++nj)
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = FRAG_ROW(mi, h), col = FRAG_COL(nj);
                if (row >= M)
                    continue;
                float* p = W + (long long)row * N + col;
                #pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (col + e < N) {
                        if (atomic) red_add(p + e, acc[mi][nj][2 * h + e]);
                        else p[e] = acc[mi][nj][2 * h + e];
                    }
            }
}

// Four consecutive partials p[0..3] through L2 (.cg: another block wrote them), one float4
// load when ``vec`` (p 16-byte aligned), else up to ``left`` guarded scalar loads (0 past N).
__device__ __forceinline__ float4 partial4(const float* p, bool vec, int left)
{
    if (vec)
        return __ldcg(reinterpret_cast<const float4*>(p));
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    v.x = __ldcg(p);
    if (left > 1) v.y = __ldcg(p + 1);
    if (left > 2) v.z = __ldcg(p + 2);
    if (left > 3) v.w = __ldcg(p + 3);
    return v;
}

// Mode 3 of split-K: store this block's partial tile in W[z], count the block in
// flags[tile]; the last of the tile's gridDim.z blocks adds the partials in the order
// z = 0, 1, ... (as splitk_reduce does: the same float sum, bit for bit), writes C and
// sets flags[tile] back to 0 for the next call.
//   writer:  st W[z] ; fence ; barrier ; atomicAdd(flags[tile])      (release)
//   last:    atomicAdd saw splits - 1 ; fence ; ld.cg W[0..splits)    (acquire)
__device__ __forceinline__ void splitk_fused(const float (&acc)[MT][NT][4], float* __restrict__ W,
                                             int* __restrict__ flags, T* __restrict__ C,
                                             int M, int N, int ldc, int m0, int n0, int tile)
{
    __shared__ int is_last;
    const long long MN = (long long)M * N;
    const int splits = (int)gridDim.z;
    store_w(acc, W + (long long)blockIdx.z * MN, M, N, m0, n0, false);
    __threadfence();                             // this block's partial, visible to every SM ...
    __syncthreads();                             // ... from every thread, before the block is counted
    if (threadIdx.x == 0) {
        is_last = atomicAdd(flags + tile, 1) == splits - 1;
        if (is_last)
            flags[tile] = 0;                     // every other block of the tile has counted itself
    }
    __syncthreads();
    if (!is_last)
        return;
    __threadfence();
    // for (r, c) in the tile:  C[r][c] = ((0 + W[0][r][c]) + W[1][r][c]) + ...
    // The sum is latency-bound (one block reads every partial of its tile from L2), so each
    // thread keeps up to eight splits of four columns in flight: float4 loads where N % 4 == 0
    // (then every row of W starts 16-byte aligned and c is a multiple of 4), guarded scalars
    // otherwise. The adds stay in the order z = 0, 1, ..., element by element.
    const bool vec = N % 4 == 0;
    for (int e = 4 * threadIdx.x; e < BM * BN; e += 4 * THREADS) {
        const int r = m0 + e / BN, c = n0 + e % BN;   // four consecutive columns per thread
        if (r >= M || c >= N)
            continue;
        const long long i = (long long)r * N + c;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int z = 0; z < splits; z += 8) {
            float4 v[8];
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                if (z + j < splits)
                    v[j] = partial4(W + (z + j) * MN + i, vec, N - c);
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                if (z + j < splits) {
                    sum.x += v[j].x; sum.y += v[j].y; sum.z += v[j].z; sum.w += v[j].w;
                }
        }
        T* out = C + (long long)r * ldc + c;
        const float s4[4] = {sum.x, sum.y, sum.z, sum.w};
        #pragma unroll
        for (int k = 0; k < 4; ++k)
            if (c + k < N)
                out[k] = cvt1(s4[k]);
    }
}

// ---------------------------------------------------------------- kernels

// Data-parallel and split-K. blockIdx.z = k range z: k-tiles
// [z * kt_per_split, (z+1) * kt_per_split). mode 0: C directly (gridDim.z
// must be 1); 1: atomics into W[M][N]; 2: partial tile into W[z][M][N]; 3: as 2,
// then the last block of each tile sums the partials into C (flags: one int per tile,
// zero before the call and after it; unused by modes 0-2).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_any(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, float* __restrict__ W,
         int M, int N, int K, int lda, int ldb, int ldc, int kt_per_split, int mode, int* __restrict__ flags)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sA0 = smem_addr(smem);
    const unsigned sB0 = sA0 + STAGES * A_STAGE * 2;

    // Tile number pid in GROUP_M order over the whole matrix: the usual grid
    // (ceil(N/BN), ceil(M/BM), splits) covers every tile; a 1-D grid of X
    // blocks covers tiles 0..X-1 only (the data-parallel part of the hybrid).
    int pid_m, pid_n;
    tile_coords(blockIdx.y * gridDim.x + blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, pid_m, pid_n);
    const int m0 = pid_m * BM, n0 = pid_n * BN;
    const int KT = (K + BK - 1) / BK;
    const int kt0 = blockIdx.z * kt_per_split, kt1 = imin(KT, kt0 + kt_per_split);

    float acc[MT][NT][4];
    zero_acc(acc);

    if (kt0 < kt1)                               // an empty last range still writes its zeros
        mac_loop(acc, A, B, M, N, K, lda, ldb, m0, n0, kt0, kt1, sA0, sB0);

    if (mode == 0)
        store_c(acc, C, M, N, ldc, m0, n0);
    else if (mode == 3)
        splitk_fused(acc, W, flags, C, M, N, ldc, m0, n0, blockIdx.y * gridDim.x + blockIdx.x);
    else
        store_w(acc, W + (mode == 2 ? (long long)blockIdx.z * M * N : 0ll), M, N, m0, n0, mode == 1);
}

// Second pass of split-K: C[r][c] = sum over z < splits of W[z][r][c], in
// the order z = 0, 1, ... (deterministic). With clear = 1 (the atomic path,
// splits = 1) W is zeroed after reading, ready for the next accumulation.
extern "C" __global__ void splitk_reduce(float* __restrict__ W, T* __restrict__ C,
                                         int M, int N, int ldc, int splits, int clear)
{
    const long long MN = (long long)M * N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < MN;
         i += (long long)gridDim.x * blockDim.x) {
        // s = W[0][i] + W[1][i] + ... in that order, eight slabs per step: the
        // eight loads are independent, so they are in flight together (the
        // plain loop waits for each load before the next), while the adds keep
        // the order z = 0, 1, 2, ...: the sum is bitwise the plain loop's.
        float s = 0.f;
        int z = 0;
        for (; z + 8 <= splits; z += 8) {
            float v[8];
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                v[j] = W[(z + j) * MN + i];
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                s += v[j];
        }
        for (; z < splits; ++z)
            s += W[z * MN + i];
        if (clear)
            W[i] = 0.f;
        const long long r = i / N, c = i - r * N;
        C[r * ldc + c] = cvt1(s);
    }
}

// Stream-K. The k-tile iterations of tiles [sk_first, tiles),
//   iters = (tiles - sk_first) * KT,
// are cut into G = gridDim.x equal ranges [b*iters/G, (b+1)*iters/G), one per
// block. Hybrid: gemm_any on a 1-D grid of sk_first blocks first (whole
// tiles 0..sk_first-1, data-parallel), then this kernel for the rest.
// (Doing the data-parallel tiles in this kernel too, in a loop before the
// stream-K part, leaves two inlined MAC loops' worth of live state: ptxas
// schedules the main loop worse, and every tile is slower.)
// A range is walked as segments, one per tile it touches. A segment that
// starts a tile (kt0 == 0) makes its block the tile's owner; a segment that
// does not is the first of its block (ranges are contiguous), so each block
// publishes at most one partial: W[b] (BM*BN floats, in fragment order),
// flags[b] = epoch. epoch changes at every launch, so the flags never need
// clearing.
__device__ __forceinline__ int sk_begin(int b, int iters, int G) { return (int)((long long)b * iters / G); }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_streamk(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
             float* __restrict__ W, int* __restrict__ flags,
             int M, int N, int K, int lda, int ldb, int ldc, int sk_first, int epoch)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sA0 = smem_addr(smem);
    const unsigned sB0 = sA0 + STAGES * A_STAGE * 2;
    const int G = gridDim.x, b = blockIdx.x, tid = threadIdx.x;
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN, tiles = grid_m * grid_n;
    const int KT = (K + BK - 1) / BK;

    float acc[MT][NT][4];

    const int iters = (tiles - sk_first) * KT;   // the host keeps tiles * KT < 2^31
    const int it1 = sk_begin(b + 1, iters, G);
    for (int it = sk_begin(b, iters, G); it < it1;) {
        const int t = sk_first + it / KT;          // this segment: tile t, k-tiles [kt0, kt1)
        const int kt0 = it % KT;
        const int kt1 = imin(KT, kt0 + (it1 - it));
        it += kt1 - kt0;
        int pm, pn;
        tile_coords(t, grid_m, grid_n, GROUP_M, pm, pn);
        const int m0 = pm * BM, n0 = pn * BN;
        zero_acc(acc);
        mac_loop(acc, A, B, M, N, K, lda, ldb, m0, n0, kt0, kt1, sA0, sB0);

        if (kt0 != 0) {
            // Not the owner: publish the partial tile and raise the flag.
            float* dst = W + (long long)b * (BM * BN);
            #pragma unroll
            for (int mi = 0; mi < MT; ++mi)
                #pragma unroll
                for (int nj = 0; nj < NT; ++nj)
                    stcg4(dst + ((mi * NT + nj) * THREADS + tid) * 4,
                          acc[mi][nj][0], acc[mi][nj][1], acc[mi][nj][2], acc[mi][nj][3]);
            __syncthreads();
            if (tid == 0) {
                asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
                asm volatile("st.release.gpu.global.b32 [%0], %1;\n" :: "l"(flags + b), "r"(epoch) : "memory");
            }
        } else {
            // Owner: add the partials of the blocks that hold the rest of the tile.
            int covered = kt1;
            for (int o = b + 1; covered < KT; ++o) {
                const int o_begin = sk_begin(o, iters, G);
                const int o_end = imin(sk_begin(o + 1, iters, G), (t - sk_first + 1) * KT);
                if (o_end == o_begin)
                    continue;                    // an empty range (iters < G): no partial, no flag
                if (tid == 0) {
                    int f;
                    do {
                        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(f) : "l"(flags + o) : "memory");
                    } while (f != epoch);
                }
                __syncthreads();
                const float* src = W + (long long)o * (BM * BN);
                #pragma unroll
                for (int mi = 0; mi < MT; ++mi)
                    #pragma unroll
                    for (int nj = 0; nj < NT; ++nj) {
                        float x, y, z, w;
                        ldcg4(src + ((mi * NT + nj) * THREADS + tid) * 4, x, y, z, w);
                        acc[mi][nj][0] += x; acc[mi][nj][1] += y;
                        acc[mi][nj][2] += z; acc[mi][nj][3] += w;
                    }
                covered += o_end - o_begin;
            }
            store_c(acc, C, M, N, ldc, m0, n0);
        }
    }
}

// ---------------------------------------------------------------- padding path

// dst[r][c] = src[r][c] inside rows x cols, 0 elsewhere, for a dst of
// drows x dcols (dcols % 8 == 0, 16-byte aligned); src any stride, any
// alignment. Eight elements per thread, read with load8, one 16-byte store.
__device__ __forceinline__ void pad_chunk(const T* __restrict__ src, int rows, int cols, long long lds,
                                          T* __restrict__ dst, int dcols, long long i)
{
    const long long r = i / (dcols / 8);                 // chunk i: row r, columns c .. c+7 of dst
    const int c = (int)(i - r * (dcols / 8)) * 8;
    const int n = r < rows ? clampi(cols - c, 0, 8) : 0;
    const U4 v = load8(src + r * lds + c, n);
    *reinterpret_cast<U4*>(dst + r * dcols + c) = v;
}

extern "C" __global__ void pad_copy(const T* __restrict__ src, int rows, int cols, long long lds,
                                    T* __restrict__ dst, int drows, int dcols)
{
    const long long chunks = (long long)drows * (dcols / 8);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks;
         i += (long long)gridDim.x * blockDim.x)
        pad_chunk(src, rows, cols, lds, dst, dcols, i);
}

// pad_copy of A into dstA and of B into dstB in one launch: the two copies'
// chunks numbered one after the other (A's first), so a call that repacks both
// operands pays one launch for them, not two. The same as
//   pad_copy(A, ...); pad_copy(B, ...);
extern "C" __global__ void pad_copy2(const T* __restrict__ srcA, int rowsA, int colsA, long long ldsA,
                                     T* __restrict__ dstA, int drowsA, int dcolsA,
                                     const T* __restrict__ srcB, int rowsB, int colsB, long long ldsB,
                                     T* __restrict__ dstB, int drowsB, int dcolsB)
{
    const long long chunksA = (long long)drowsA * (dcolsA / 8);
    const long long chunks = chunksA + (long long)drowsB * (dcolsB / 8);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks;
         i += (long long)gridDim.x * blockDim.x) {
        if (i < chunksA)
            pad_chunk(srcA, rowsA, colsA, ldsA, dstA, dcolsA, i);
        else
            pad_chunk(srcB, rowsB, colsB, ldsB, dstB, dcolsB, i - chunksA);
    }
}

// C[r][c] = src[r][c] for r < M, c < N: C is C-contiguous (ldc == N), any
// 2-byte alignment; src is M' x scols (scols % 8 == 0, 16-byte aligned).
// C is walked as one flat array of M * N elements in 16-byte-aligned chunks of
// 8, so that every store is one st.global.v4 whatever N is. A chunk's 8 source
// elements lie in one row of src (one load8 at any alignment) or straddle the
// end of a row (gathered one by one, 1 chunk in N / 8). The elements before
// C's first 16-byte boundary go one at a time (head), and so do those after
// its last chunk. (Storing each element on its own, as in
//   for (r, c) in M x N: C[r * N + c] = src[r * scols + c];
// takes eight 2-byte stores per thread and stays far from a memcpy's
// bandwidth, where pad_copy's 16-byte stores reach it; the copy's share of a
// call is measured by scripts/hopper_anyshape_breakdown.py.)
__device__ __forceinline__ T unpad_elem(const T* src, int scols, int N, long long e)
{
    const long long r = e / N;
    return src[r * scols + (e - r * N)];
}

extern "C" __global__ void unpad_copy(const T* __restrict__ src, int scols, T* __restrict__ C,
                                      int M, int N)
{
    const long long total = (long long)M * N;
    const long long head = imin((int)(((16u - ((unsigned)(unsigned long long)C & 15u)) & 15u) / 2u),
                                (int)(total < 8 ? total : 8));
    const long long chunks = (total - head) / 8;      // whole aligned chunks
    const long long tail0 = head + 8 * chunks;       // first element after them
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (long long i = tid; i < chunks; i += stride) {
        const long long e0 = head + 8 * i;
        const long long r = e0 / N;
        const int c = (int)(e0 - r * N);
        U4 v;
        if (c + 8 <= N) {
            v = load8(src + r * scols + c, 8);
        } else {                                     // the chunk crosses the end of row r
            unsigned w[8];
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                w[j] = unpad_elem(src, scols, N, e0 + j);
            v.x = w[0] | (w[1] << 16); v.y = w[2] | (w[3] << 16);
            v.z = w[4] | (w[5] << 16); v.w = w[6] | (w[7] << 16);
        }
        *reinterpret_cast<U4*>(C + e0) = v;
    }
    if (tid < head)                                  // before the first aligned chunk
        C[tid] = unpad_elem(src, scols, N, tid);
    if (tid < total - tail0)                         // after the last one (fewer than 8)
        C[tail0 + tid] = unpad_elem(src, scols, N, tail0 + tid);
}
