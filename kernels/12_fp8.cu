// Heaven 11 - FP8 on Hopper: e4m3 x e4m3 -> fp32 accumulators -> bf16, with a
// per-tensor scale (rung 1) or block scales (rung 2). sm_90a only (H100 / H200).
//
// Computes C = (A @ B) scaled, rounded to bf16:
//   A : M x K  e4m3 bytes, row-major (lda = K)              -- K-major
//   Bt: N x K  e4m3 bytes, row-major (B transposed, ldb = K) -- K-major too
//   C : M x N  bf16, row-major (ldc = N)
// Rung 1 (BLOCK_SCALE=0): C = sa * sb * (A @ B), sa and sb one float each
//   (the dequantization factors of the two tensors, read from device memory, as
//   cuBLASLt reads its scales).
// Rung 2 (BLOCK_SCALE=1): one scale per 1 x 128 strip of A and per 128 x 128 block
//   of B, applied to each k-block's partial sum:
//     C[m][n] = sum over k-blocks kb of  SA[kb][m] * SB[kb][n / 128] * (A_kb @ B_kb)[m][n]
//   SA: ceil(K/128) x M floats, SB: ceil(K/128) x ceil(N/128) floats.
//
// What changes from heaven 10's last rung (kernels/10_hopper.cu), and why:
//
// 1. Both operands K-major. The 16-bit wgmma can read B N-major (its transpose
//    bit); the fp8 forms have no transpose bits: the Tensor Core wants each
//    operand's 32 K-values of a row contiguous. So B arrives transposed (Bt, N x K),
//    as cuBLASLt's FP8 GEMM also asks, and B's descriptor is built exactly like A's.
// 2. BK counts bytes. The 128-byte swizzle atom is 8 rows x 128 bytes whatever the
//    element: 64 bf16 values but 128 e4m3 values of a row. So a k-tile is BK = 128
//    (one atom wide), twice heaven 10's 64 in elements but the same 128 bytes:
//    the TMA boxes (128 bytes x rows), the ring slots (16 KB of A, BN x 128 bytes of
//    B) and the XOR pattern (16-byte chunk c of row r at c ^ (r % 8)) are unchanged,
//    while every byte loaded now feeds twice the multiply-adds.
// 3. k32 per instruction. wgmma.m64nNk32.f32.e4m3.e4m3 consumes 32 bytes of K per
//    row, as the bf16 k16 form did: the k-step still advances the descriptors'
//    start address by 32 bytes inside the atom, 4 instructions per k-tile.
// 4. The epilogue multiplies by the scales before rounding to bf16 (TMA store, as
//    heaven 10's rung 5).
// 5. Promotion (PROMOTE = P > 0). The Tensor Core adds fp8 products into its
//    accumulator with fewer mantissa bits than fp32 (chapter 11 measures how many).
//    Every P k-tiles the warpgroup waits for its wgmma (wait_group 0), adds the
//    P k-tiles' partial sum tc[] into a second register array acc[] with ordinary
//    fp32 FADDs (times the block scales in rung 2), and starts the next partial sum
//    from zero (scale_d = 0):
//      for (kt) { tc = (kt % P ? tc : 0) + A_kt @ B_kt;  if (kt % P == P - 1) acc += tc; }
//    Two arrays of accumulators need BN <= 192 (96 + 96 registers per thread at
//    192); the wait costs the overlap of one k-tile's wgmma with the next.
// 6. Taking turns (PINGPONG = 1). Both consumer warpgroups wait for the same k-tile,
//    so left alone they issue their wgmma together, the Tensor Core finishes both
//    together, and both promote while it stands idle. Two named barriers make them
//    take turns: a warpgroup issues its k-tile only after the other has issued its
//    own, so the Tensor Core runs one warpgroup's k-tile while the other promotes:
//      consumer 0: [issue kt] arrive(3) ... sync(4) [issue kt+1] arrive(3) ...
//      consumer 1:            sync(3) [issue kt] arrive(4) ... sync(3) [issue kt+1]
//    Off by default: on the H200 the turns timed slower than issuing together (chapter
//    11's record times both).
// 7. Where the block scales come from (SCALE_LOAD, rung 2). 0: each consumer thread
//    loads its k-block's scales from global memory at the top of the k-tile, before
//    the wgmma; 1: a producer warp copies each k-block's 128 A scales and its B scales into the ring slot beside the
//    tiles, and the consumers read them from shared memory once the slot is full.
//
// Preconditions (helpers/chapters/ch12_fp8.py refuses anything else before launch):
//   compute capability 9.0 (sm_90a machine code); K % 16 == 0 (TMA: the row pitch
//   of A and Bt, K bytes, a multiple of 16), N % 8 == 0 (C's pitch, N x 2 bytes);
//   A, Bt, C 16-byte aligned; M, N, K >= 1 and < 2^31. M, N need not be tile
//   multiples, nor K a multiple of BK: TMA zero-fills what lies outside the tensors
//   (a zero byte is +0 in e4m3) and clips the stores.
//
// Tile parameters (-D; the defaults below are those of the catalog entry fp8_r1_tensor):
//   BN (256, 192 or 128: the wgmma N, one consumer's 64 x BN block);
//   STAGES (ring depth, 2..6 while the ring fits 227 KB); GROUP_M (tile order);
//   CLUSTER_M (1, or 2: clusters along M sharing B by multicast); PROMOTE (0: the
//   whole K in the Tensor Core's accumulator; 1, 2, 4: promote every P k-tiles,
//   needs BN <= 192); BLOCK_SCALE (0/1, needs PROMOTE = 1: each k-block's scales);
//   PINGPONG (0/1: the two consumers take turns issuing their k-tiles).
//   BM = 128 (two consumer warpgroups of m64) and BK = 128 bytes are fixed.
// Launch: block = 384 (a producer warpgroup, two consumers); dynamic shared memory
//   SMEM_FP8; a persistent grid: a multiple of CLUSTER_M, at most one CTA per SM.
//   OUT_F32 (0/1): C in fp32, stored straight from the registers (the chapter's
//   accuracy measurements, where bf16 rounding would hide the accumulator's).
// Arguments: (tmA, tmB, tmC, M, N, K, SA, SB, Cf); Cf is the fp32 C of OUT_F32=1
//   (tmC is unused then), any pointer otherwise. tmA: box 128 bytes x 128 rows of A;
//   tmB: box 128 bytes x BN / 2 rows of Bt; tmC: box 64 x 64 bf16 of C; all
//   SWIZZLE_128B. SA, SB: the scales (one float each in rung 1).

#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef PROMOTE
#define PROMOTE 0
#endif
#ifndef BLOCK_SCALE
#define BLOCK_SCALE 0
#endif
#ifndef PINGPONG
#define PINGPONG 0           // 1: the consumers issue their k-tiles in turn (named barriers 3 and 4)
#endif
#ifndef SCALE_LOAD
#define SCALE_LOAD 0         // rung 2: where the block scales come from (see 7. above)
#endif
#ifndef OUT_F32
#define OUT_F32 0            // 1: C is fp32, stored directly (the accuracy measurements: no bf16 rounding)
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif

#define BF16 1                 // C is bf16 (fp16.cuh's T, pack2)
#include "fp16.cuh"
#include "hopper_sm90.cuh"     // mbarriers, TMA, descriptors, setmaxnreg, clusters

#define BM 128
#define BK 128                           // bytes = e4m3 elements: one 128-byte swizzle atom
#define KSTEPS (BK / 32)                 // wgmma k32 steps per k-tile
#define ACC (BN / 2)                     // fp32 accumulators per thread: 64 rows x BN / 128 threads
#define A_TILE_BYTES (BM * BK)           // 16 KB
#define B_BOX_ROWS (BN / 2)              // one TMA box of Bt: BN / 2 rows x 128 bytes (two boxes: one per cluster rank)
#define B_BOX_BYTES (B_BOX_ROWS * BK)
#define B_BOXES (BN / B_BOX_ROWS)
#define B_TILE_BYTES (BN * BK)
#define C_HALF_BYTES (64 * 128 * 2)      // one consumer's 64 x 128 bf16 staging buffer
#define SCALE_BYTES ((BM + 4) * 4)       // SCALE_LOAD = 1: a slot's scales, 128 rows of A and two of B
#define SMEM_FP8 (1024 + STAGES * (A_TILE_BYTES + B_TILE_BYTES) + 2 * C_HALF_BYTES + 2 * STAGES * 8 \
                  + (SCALE_LOAD == 1 ? STAGES * SCALE_BYTES : 0))

static_assert(BN == 256 || BN == 192 || BN == 128, "BN is the wgmma N: 256, 192 or 128");
static_assert(STAGES >= 2 && STAGES <= 6, "2..6 stages");
static_assert(SMEM_FP8 <= 232448, "the ring and the staging buffers must fit the 227 KB opt-in shared memory");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 CTAs along M");
static_assert(B_BOXES % CLUSTER_M == 0, "each cluster rank multicasts a whole number of B boxes");
static_assert(GROUP_M >= 1, "GROUP_M >= 1");
static_assert(PROMOTE == 0 || PROMOTE == 1 || PROMOTE == 2 || PROMOTE == 4, "PROMOTE is 0, 1, 2 or 4");
static_assert(PROMOTE == 0 || BN <= 192, "promotion keeps two accumulator arrays of BN / 2 registers: BN <= 192");
static_assert(BLOCK_SCALE == 0 || PROMOTE == 1, "block scales change every k-block: PROMOTE = 1");
static_assert(PINGPONG == 0 || PINGPONG == 1, "PINGPONG is 0 or 1");
static_assert((SCALE_LOAD == 0 || SCALE_LOAD == 1) && (SCALE_LOAD == 0 || BLOCK_SCALE),
              "SCALE_LOAD is 0 or 1; 1 is for block scales");
static_assert(SCALE_LOAD == 0 || PROMOTE == 1,
              "SCALE_LOAD = 1 releases each slot right after its k-tile's wgmma: every k-tile promoted");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg takes multiples of 8");
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 65536, "register file: 64 K registers per SM");

// ---------------------------------------------------------------- the fp8 wgmma
// D[64x256] (+)= A[64x32] * B[32x256] in e4m3, fp32 D. Both operands K-major: the fp8
// forms of wgmma have no transpose immediates. scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_m64n256k32_e4m3(float (&d)[128], u64 da, u64 db, int scale_d)
{
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

// D[64x128] (+)= A[64x32] * B[32x128] in e4m3, fp32 D. Both operands K-major: the fp8
// forms of wgmma have no transpose immediates. scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[64], u64 da, u64 db, int scale_d)
{
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}


// D[64x192] (+)= A[64x32] * B[32x192] in e4m3, fp32 D: the tile between the two above,
// for promotion with a wider tile (two arrays of 96 registers fit a thread's 232).
__device__ __forceinline__ void wgmma_m64n192k32_e4m3(float (&d)[96], u64 da, u64 db, int scale_d)
{
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(da), "l"(db), "r"(scale_d));
}


// Tile t -> (row unit mu, column tile n), GROUP_M row units down a column of tiles
// before moving right (heaven 10's order); a row unit is CLUSTER_M stacked tiles.
__device__ __forceinline__ void fp8_tile_coords(int t, int num_mu, int num_n, int& mu, int& n)
{
    const int per_group = GROUP_M * num_n;
    const int first = (t / per_group) * GROUP_M;
    const int rows = min(num_mu - first, GROUP_M);
    const int in = t % per_group;
    mu = first + in % rows;
    n = in / rows;
}

// One k-tile (128 bytes of K = 4 k32 steps) of a warpgroup's 64 x BN block. Both
// tiles are K-major, 128-byte swizzled, 8-row groups 1024 bytes apart (SBO):
//   for (ks = 0; ks < 4; ++ks)  D += A[:, 32ks:32ks+32] * Bt[:, 32ks:32ks+32]^T
// `first`: this k-tile starts a new partial sum (scale_d = 0 on its first step).
__device__ __forceinline__ void mma_k_tile_fp8(float (&d)[ACC], u32 a_tile, u32 b_tile, bool first)
{
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
#if BN == 256
        wgmma_m64n256k32_e4m3(d, desc_a(a_tile + 32 * ks), desc_a(b_tile + 32 * ks), (ks > 0 || !first) ? 1 : 0);
#elif BN == 192
        wgmma_m64n192k32_e4m3(d, desc_a(a_tile + 32 * ks), desc_a(b_tile + 32 * ks), (ks > 0 || !first) ? 1 : 0);
#else
        wgmma_m64n128k32_e4m3(d, desc_a(a_tile + 32 * ks), desc_a(b_tile + 32 * ks), (ks > 0 || !first) ? 1 : 0);
#endif
    }
}

// acc += partial sum, times the k-block's scales in rung 2 (s_lo for row r, s_hi for
// row r + 8 of the m64nN layout: elements 0, 1 and 2, 3 of each group of four).
// With BN = 192 a tile's columns can reach into a second 128-column block of B: the n8
// groups j >= JB use the second block's scales (s_lo2, s_hi2). JB is a template
// argument so that each group's scale is chosen at compile time (one FFMA per value).
template <int JB = ACC / 4>
__device__ __forceinline__ void promote(float (&acc)[ACC], const float (&tc)[ACC], float s_lo, float s_hi,
                                        float s_lo2 = 0.f, float s_hi2 = 0.f)
{
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
#if BLOCK_SCALE
        const float lo = j >= JB ? s_lo2 : s_lo;
        const float hi = j >= JB ? s_hi2 : s_hi;
        acc[4 * j + 0] += lo * tc[4 * j + 0];
        acc[4 * j + 1] += lo * tc[4 * j + 1];
        acc[4 * j + 2] += hi * tc[4 * j + 2];
        acc[4 * j + 3] += hi * tc[4 * j + 3];
#else
        acc[4 * j + 0] += tc[4 * j + 0];
        acc[4 * j + 1] += tc[4 * j + 1];
        acc[4 * j + 2] += tc[4 * j + 2];
        acc[4 * j + 3] += tc[4 * j + 3];
#endif
    }
}

// This thread's block scales for k-block kt (rung 2; 1 otherwise): s_lo for row r_lo,
// s_hi for row r_lo + 8; rows past M get 0. With BN = 192, s_lo2 / s_hi2 are the same rows
// times the next 128-column block of B (clamped to the last block; its columns past N are
// clipped by the store).
__device__ __forceinline__ void block_scales(const float* __restrict__ SA, const float* __restrict__ SB,
                                             int M, int N, int kt, int r_lo, int n0, float& s_lo, float& s_hi,
                                             float& s_lo2, float& s_hi2)
{
#if BLOCK_SCALE
    const int nbn = (N + 127) / 128;
    const float a_lo = r_lo < M ? SA[(size_t)kt * M + r_lo] : 0.f;
    const float a_hi = r_lo + 8 < M ? SA[(size_t)kt * M + r_lo + 8] : 0.f;
    const float sb = SB[(size_t)kt * nbn + n0 / 128];
    s_lo = a_lo * sb;
    s_hi = a_hi * sb;
    if (BN > 128) {
        const float sb2 = SB[(size_t)kt * nbn + min(n0 / 128 + 1, nbn - 1)];
        s_lo2 = a_lo * sb2;
        s_hi2 = a_hi * sb2;
    } else {
        s_lo2 = s_lo; s_hi2 = s_hi;
    }
#else
    s_lo = s_hi = s_lo2 = s_hi2 = 1.f;
#endif
}

// SCALE_LOAD = 1: the same four scales, read from the slot's scale area (A's 128 rows,
// then B's two blocks); `row` is r_lo's row within the tile.
__device__ __forceinline__ void slot_scales(u32 sc, int row, float& s_lo, float& s_hi, float& s_lo2, float& s_hi2)
{
    float a_lo, a_hi, b0, b1;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(a_lo) : "r"(sc + 4 * row) : "memory");
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(a_hi) : "r"(sc + 4 * (row + 8)) : "memory");
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(b0), "=f"(b1) : "r"(sc + 4 * BM) : "memory");
    s_lo = a_lo * b0; s_hi = a_hi * b0;
    s_lo2 = a_lo * b1; s_hi2 = a_hi * b1;
}

// The consumers' turns (PINGPONG): bar.arrive signals a named barrier without waiting,
// bar.sync waits until 256 threads (both warpgroups) have reached it.
template <int ID>
__device__ __forceinline__ void turn_wait() { asm volatile("bar.sync %0, 256;\n" :: "n"(ID) : "memory"); }
template <int ID>
__device__ __forceinline__ void turn_pass() { asm volatile("bar.arrive %0, 256;\n" :: "n"(ID) : "memory"); }

// The epilogue: one warpgroup's 64 x BN fp32 values times `alpha`, rounded to bf16,
// staged in shared memory as 64 x 64 boxes with the 128-byte swizzle
//   byte(r, c) = box(c) * 8192 + r * 128 + (((c % 64) / 8) ^ (r % 8)) * 16 + (c % 8) * 2
// (conflict-free 4-byte writes), then written by TMA stores, 128 columns at a time.
template <int BAR_ID>
__device__ __forceinline__ void store_tile_bf16(const float (&v)[ACC], float alpha, const TmaDesc* tmC,
                                                u32 buf, bool lead, int row0, int col0)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int r = 16 * warp + (lane >> 2);
    const int t = lane & 3;
#pragma unroll
    for (int h = 0; h < (BN + 127) / 128; ++h) {
        const int boxes = BN / 64 - 2 * h >= 2 ? 2 : 1;     // 64-column boxes this round (BN = 192: 2, then 1)
        if (lead) bulk_wait_read<0>();                       // the previous store has read the buffer
        warpgroup_sync<BAR_ID>();
#pragma unroll
        for (int jj = 0; jj < 8 * boxes; ++jj) {
            const int j = 16 * h + jj;                       // n8 block of the accumulator layout
            const u32 a0 = buf + (jj / 8) * 8192 + r * 128 + (((jj & 7) ^ (r & 7)) << 4) + 4 * t;
            T2 x0 = pack2(alpha * v[4 * j + 0], alpha * v[4 * j + 1]);
            T2 x1 = pack2(alpha * v[4 * j + 2], alpha * v[4 * j + 3]);
            asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(a0), "r"(*reinterpret_cast<u32*>(&x0)) : "memory");
            asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(a0 + 8 * 128), "r"(*reinterpret_cast<u32*>(&x1)) : "memory");
        }
        fence_proxy_async();                                 // generic-proxy writes -> visible to TMA
        warpgroup_sync<BAR_ID>();
        if (lead) {
            tma_store_2d(tmC, buf, col0 + 128 * h, row0);
            if (boxes == 2) tma_store_2d(tmC, buf + 8192, col0 + 128 * h + 64, row0);
            bulk_commit();
        }
    }
}

// OUT_F32: alpha * v straight to fp32 C, 8-byte stores guarded against the M and N edges.
__device__ __forceinline__ void store_tile_f32(const float (&v)[ACC], float alpha, float* __restrict__ C,
                                               int M, int N, int row0, int col0)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int r = row0 + 16 * warp + (lane >> 2);
    const int c = col0 + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
        if (c + 8 * j < N) {
            if (r < M)
                *reinterpret_cast<float2*>(C + (size_t)r * N + c + 8 * j) = make_float2(alpha * v[4 * j], alpha * v[4 * j + 1]);
            if (r + 8 < M)
                *reinterpret_cast<float2*>(C + (size_t)(r + 8) * N + c + 8 * j) = make_float2(alpha * v[4 * j + 2], alpha * v[4 * j + 3]);
        }
    }
}

#if CLUSTER_M > 1
#define FP8_CLUSTER_ATTR __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define FP8_CLUSTER_ATTR
#endif

extern "C" __global__ void FP8_CLUSTER_ATTR __launch_bounds__(384, 1)
fp8_gemm(const __grid_constant__ TmaDesc tmA, const __grid_constant__ TmaDesc tmB,
         const __grid_constant__ TmaDesc tmC, int M, int N, int K,
         const float* __restrict__ SA, const float* __restrict__ SB, float* __restrict__ Cf)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;   // same offset in every CTA: multicast relies on it
    const u32 sA = base;                                     // STAGES x [128 rows][128 B]       16 KB each
    const u32 sB = sA + STAGES * A_TILE_BYTES;               // STAGES x [BN rows][128 B]  16, 24 or 32 KB each
    const u32 sC = sB + STAGES * B_TILE_BYTES;               // 2 x 16 KB staging (one per consumer)
    const u32 full = sC + 2 * C_HALF_BYTES;
    const u32 empty = full + 8 * STAGES;
#if SCALE_LOAD == 1
    const u32 sS = empty + 8 * STAGES;                      // STAGES x SCALE_BYTES of block scales
#endif

    const int wg = threadIdx.x / 128;                        // 0 producer, 1 and 2 consumers
    const u32 rank = CLUSTER_M > 1 ? cluster_ctarank() : 0;
    const int num_m = (M + BM - 1) / BM, num_n = (N + BN - 1) / BN;
    const int num_mu = (num_m + CLUSTER_M - 1) / CLUSTER_M;
    const int tiles = num_mu * num_n;
    const int stride = gridDim.x / CLUSTER_M;                // persistent: clusters walk the tiles
    const int nk = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        tma_prefetch_desc(&tmA);
        tma_prefetch_desc(&tmB);
        tma_prefetch_desc(&tmC);
#if SCALE_LOAD == 1
        // full: the TMA thread and the 32 lanes of the scale warp; empty: all 256 consumer
        // threads of this CTA (each has read its scales from the slot) and the leads of
        // the other CTAs' consumer warpgroups (their wgmma have read the multicast B)
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1 + 32);
            mbar_init(empty + 8 * s, 256 + 2 * (CLUSTER_M - 1));
        }
#else
        init_ring(full, empty, STAGES, 2, CLUSTER_M);
#endif
        fence_barrier_init();
    }
#if CLUSTER_M > 1
    cluster_sync();
#else
    __syncthreads();
#endif

    if (wg == 0) {
        // ---------------- producer: one thread drives the copy engine ----------------
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x / CLUSTER_M; t < tiles; t += stride) {
                int mu, nb;
                fp8_tile_coords(t, num_mu, num_n, mu, nb);
                const int m0 = (mu * CLUSTER_M + (int)rank) * BM, n0 = nb * BN;
                for (int kt = 0; kt < nk; ++kt, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);   // first lap passes at once
                    const u32 bar = full + 8 * s;
                    mbar_arrive_expect_tx(bar, A_TILE_BYTES + B_TILE_BYTES);
                    tma_load_2d(sA + s * A_TILE_BYTES, &tmA, kt * BK, m0, bar);
                    // Bt: BN rows of 128 bytes, in 128-row boxes; in a cluster each rank loads
                    // its share and multicasts it into both CTAs (same offset, same barrier offset)
#pragma unroll
                    for (int jj = 0; jj < B_BOXES / CLUSTER_M; ++jj) {
                        const int j = (int)rank * (B_BOXES / CLUSTER_M) + jj;
                        const u32 dst = sB + s * B_TILE_BYTES + j * B_BOX_BYTES;
                        if (CLUSTER_M == 1) tma_load_2d(dst, &tmB, kt * BK, n0 + B_BOX_ROWS * j, bar);
                        else tma_load_2d_multicast(dst, &tmB, kt * BK, n0 + B_BOX_ROWS * j, bar,
                                                   (unsigned short)((1u << CLUSTER_M) - 1));
                    }
                }
            }
        }
#if SCALE_LOAD == 1
        // The scale warp: for each k-tile, this CTA's 128 A scales (rows past M: 0) and the
        // tile's B scales (its 128-column block and the next, clamped) into the slot's
        // scale area; each lane then arrives on the slot's full barrier, releasing its own
        // stores. The loads are issued before the wait for the slot, so their latency runs
        // under it.
        if (threadIdx.x / 32 == 1) {
            const int lane = threadIdx.x & 31, nbn = (N + 127) / 128;
            int it = 0;
            for (int t = blockIdx.x / CLUSTER_M; t < tiles; t += stride) {
                int mu, nb;
                fp8_tile_coords(t, num_mu, num_n, mu, nb);
                const int m0 = (mu * CLUSTER_M + (int)rank) * BM, n0 = nb * BN;
                for (int kt = 0; kt < nk; ++kt, ++it) {
                    const int s = it % STAGES;
                    float a[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int r = m0 + lane + 32 * i;
                        a[i] = r < M ? SA[(size_t)kt * M + r] : 0.f;
                    }
                    const float b = lane < 2 ? SB[(size_t)kt * nbn + min(n0 / 128 + lane, nbn - 1)] : 0.f;
                    mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);
                    const u32 sc = sS + s * SCALE_BYTES;
#pragma unroll
                    for (int i = 0; i < 4; ++i)
                        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(sc + 4 * (lane + 32 * i)), "f"(a[i]) : "memory");
                    if (lane < 2)
                        asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(sc + 4 * (BM + lane)), "f"(b) : "memory");
                    mbar_arrive(full + 8 * s);                  // release: these stores are seen by the waiters
                }
            }
        }
#endif
    } else {
        // ---------------- consumers: 64 rows each ----------------
        setmaxnreg_inc<CONSUMER_REGS>();
        const int cw = wg - 1;
        const bool lead = (threadIdx.x & 127) == 0;
        float tc[ACC];                                       // the Tensor Core's accumulator
#if PROMOTE
        float acc[ACC];                                      // promoted fp32 sums
#endif
        const float alpha = BLOCK_SCALE ? 1.f : SA[0] * SB[0];
        int it = 0;
        for (int t = blockIdx.x / CLUSTER_M; t < tiles; t += stride) {
            int mu, nb;
            fp8_tile_coords(t, num_mu, num_n, mu, nb);
            const int m0 = (mu * CLUSTER_M + (int)rank) * BM, n0 = nb * BN;
            const int r_lo = m0 + 64 * cw + 16 * ((threadIdx.x >> 5) & 3) + ((threadIdx.x & 31) >> 2);
#if PROMOTE
#pragma unroll
            for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
#endif
            // BN = 192: the first n8 group of this thread's columns that lies in B's next
            // 128-column scale block (ACC / 4: none does)
            const int jb = BN > 128 ? min(ACC / 4, (128 * (n0 / 128 + 1) - n0) / 8) : ACC / 4;
            int prev = -1;
            for (int kt = 0; kt < nk; ++kt, ++it) {
                const int s = it % STAGES;
                float s_lo, s_hi, s_lo2, s_hi2;
#if SCALE_LOAD == 0
                block_scales(SA, SB, M, N, kt, r_lo, n0, s_lo, s_hi, s_lo2, s_hi2);   // loads run under the copy and the wgmma
#endif
                mbar_wait(full + 8 * s, (it / STAGES) & 1);
#if SCALE_LOAD == 1
                slot_scales(sS + s * SCALE_BYTES, r_lo - m0, s_lo, s_hi, s_lo2, s_hi2);
#endif
#if PINGPONG
                if (cw == 1) turn_wait<3>();                 // consumer 0 has issued this k-tile
                else if (it > 0) turn_wait<4>();             // consumer 1 has issued the previous one
#endif
                wgmma_fence();
#if PROMOTE
                mma_k_tile_fp8(tc, sA + s * A_TILE_BYTES + cw * 64 * 128, sB + s * B_TILE_BYTES, kt % PROMOTE == 0);
                wgmma_commit();
#if PINGPONG
                if (cw == 0) turn_pass<3>(); else turn_pass<4>();
#endif
                if (kt % PROMOTE == PROMOTE - 1 || kt == nk - 1) {
                    wgmma_wait<0>();                         // the partial sum is complete ...
#if SCALE_LOAD == 1
                    // every thread releases the slot itself: its own ld.shared of the scales
                    // is then ordered before the scale warp's next stores into the slot by
                    // its own release (racecheck flags a single arrival by the lead after a
                    // warpgroup barrier); the other CTAs of the cluster hear from this
                    // warpgroup's lead
                    mbar_arrive(empty + 8 * s);
                    if (lead)
                        for (u32 c = 0; c < CLUSTER_M; ++c)
                            if (c != rank) mbar_arrive_cluster(empty + 8 * s, c);
#else
                    if (lead) {
                        if (prev >= 0) release_slot(empty + 8 * prev, rank, CLUSTER_M);
                        release_slot(empty + 8 * s, rank, CLUSTER_M);   // the wgmma has read the tiles
                    }
#endif
                    prev = -1;
#if BLOCK_SCALE && BN == 192
                    // n0 is a multiple of 192: B's next scale block starts at column 128 of the
                    // tile (n0 % 128 == 0, jb = 16) or at column 64 (jb = 8)
                    if (jb == 8) promote<8>(acc, tc, s_lo, s_hi, s_lo2, s_hi2);
                    else         promote<16>(acc, tc, s_lo, s_hi, s_lo2, s_hi2);
#else
                    (void)jb;
                    promote(acc, tc, s_lo, s_hi, s_lo2, s_hi2);   // ... promote it into fp32 registers
#endif
                } else {
                    wgmma_wait<1>();
                    if (prev >= 0 && lead) release_slot(empty + 8 * prev, rank, CLUSTER_M);
                    prev = s;
                }
#else
                (void)s_lo; (void)s_hi; (void)s_lo2; (void)s_hi2; (void)jb;
                mma_k_tile_fp8(tc, sA + s * A_TILE_BYTES + cw * 64 * 128, sB + s * B_TILE_BYTES, kt == 0);
                wgmma_commit();
#if PINGPONG
                if (cw == 0) turn_pass<3>(); else turn_pass<4>();
#endif
                wgmma_wait<1>();                             // the previous k-tile's group is done
                if (prev >= 0 && lead) release_slot(empty + 8 * prev, rank, CLUSTER_M);
                prev = s;
#endif
            }
            wgmma_wait<0>();
            if (prev >= 0 && lead) release_slot(empty + 8 * prev, rank, CLUSTER_M);
#if PROMOTE
            const float (&out)[ACC] = acc;
#else
            const float (&out)[ACC] = tc;
#endif
#if OUT_F32
            store_tile_f32(out, alpha, Cf, M, N, m0 + 64 * cw, n0);
#else
            if (cw == 0) store_tile_bf16<1>(out, alpha, &tmC, sC, lead, m0, n0);
            else         store_tile_bf16<2>(out, alpha, &tmC, sC + C_HALF_BYTES, lead, m0 + 64, n0);
#endif
        }
#if PINGPONG
        if (cw == 0 && it > 0) turn_wait<4>();               // consumer 1's last turn_pass, so none is left pending
#endif
        if (lead) bulk_wait<0>();                            // stores done before the CTA's smem goes away
    }
#if CLUSTER_M > 1
    cluster_sync();
#endif
}
