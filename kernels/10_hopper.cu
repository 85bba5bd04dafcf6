// Heaven 10 - the Hopper summit: TMA, wgmma, warp specialization, persistent
// tiles and thread-block clusters (sm_90a only: H100 / H200).
//
// Computes C = A @ B on Hopper's Tensor Cores, fp32 accumulation, C stored in
// the input dtype (as cupy.matmul / cuBLAS does for fp16 and bf16 arrays):
//   A: M x K  (lda = K)   B: K x N  (ldb = N)   C: M x N  (ldc = N)
//   all row-major; T = __half, or __nv_bfloat16 with -DBF16=1.
// Same convention as heaven 7 (07_mma_sync.cu). What changes is who moves the
// data and who multiplies it:
//
// 1. TMA (the Tensor Memory Accelerator). Heaven 7 had every thread compute
//    addresses and issue 16-byte cp.async copies. Here ONE thread hands the
//    copy engine a tensor descriptor (built on the host by
//    cuTensorMapEncodeTiled: base, sizes, strides, box, swizzle) and the
//    coordinates of a box:
//      cp.async.bulk.tensor.2d  [smem], [tmap, {x, y}], [mbar]
//    replaces
//      for (row = 0; row < box_rows; ++row)           // every thread a slice
//        for (c = 0; c < 8; ++c)                      // 8 x 16 B = 128 B
//          cp_async16(smem + row*128 + ((c ^ row % 8) * 16),
//                     gmem + (y + row) * ld + x + 8*c, in_bounds);
//    The engine applies the 128-byte swizzle (16-byte chunk c of row r lands at
//    chunk c ^ (r % 8), heaven 7's XOR pattern), fills everything outside the
//    tensor with zeros (so M, N, K tails need no predication) and, when the
//    bytes have landed, decrements the transaction count of an mbarrier.
//
// 2. mbarriers. A 64-bit shared-memory object with an arrival count and a
//    transaction (byte) count; it completes a phase when both reach zero and
//    flips its phase bit. Waiting = "has the phase with parity p completed?".
//    The producer does arrive.expect_tx(bytes); TMA does complete_tx(bytes);
//    consumers try_wait on the parity. A ring of STAGES buffers uses two
//    barriers per slot: full[s] (data landed) and empty[s] (consumers done).
//
// 3. wgmma. A warpgroup (4 warps, 128 threads) issues
//      wgmma.mma_async.sync.aligned.m64n256k16.f32.{bf16,f16}
//    D[64x256] += A[64x16] * B[16x256], with A and B read straight from shared
//    memory through 64-bit matrix descriptors (no ldmatrix, no fragments in
//    registers). One instruction replaces heaven 7's
//      for (mi = 0; mi < 4; ++mi) for (ni = 0; ni < 32; ++ni)   // 128 mma.sync
//        mma_m16n8k16(acc[mi][ni], afrag[mi], bfrag[ni]);        // + ldmatrix
//    It is asynchronous: issue, commit_group, and later wait_group(n) ("at
//    most n groups still running") before reading D or reusing the shared
//    buffers. Accumulator layout (fp32 D, 128 registers per thread): warp w of
//    the warpgroup owns rows 16w..16w+15; with g = lane/4, t = lane%4, for each
//    n8 block j = 0..31:
//      d[4j+0], d[4j+1] -> row 16w+g,   cols 8j+2t, 8j+2t+1
//      d[4j+2], d[4j+3] -> row 16w+g+8, cols 8j+2t, 8j+2t+1
//    (the m16n8 C fragment of mma.sync, repeated over 32 n8 blocks).
//
// 4. The shared-memory matrix descriptor (64 bits):
//      bits  0-13  start address >> 4
//      bits 16-29  leading-dimension byte offset (LBO) >> 4
//      bits 32-45  stride-dimension byte offset  (SBO) >> 4
//      bits 49-51  base offset (0: our tiles are 1024-byte aligned)
//      bits 62-63  swizzle mode (1 = 128-byte swizzle)
//    A (K-major, 128B swizzle): the TMA box is 64 K-elements (128 B) x BM rows,
//      one "swizzle atom" = 8 rows x 128 B = 1024 B. SBO = 1024 (next 8 rows),
//      LBO unused (K of one wgmma, 16, fits in the 64-wide atom). The k16 step
//      kk moves the start address by kk * 32 B inside the atom: the hardware
//      applies the XOR to the final address, so this lands on the right chunks.
//    B (MN-major, i.e. K x N row-major, 128B swizzle, transpose bit set): the
//      TMA box is 64 N-elements (128 B) x 64 K-rows; BN = 256 is 4 boxes.
//      SBO = 1024 (next 8 K-rows), LBO = 8192 (next 64-column box along N);
//      the k16 step moves the start by 16 rows x 128 B = 2048 B.
//
// The ladder (each rung a small step from the one before):
//   rung 1  hopper_tma_wgmma : 128 threads = one warpgroup, 64 x 256 tile.
//           Thread 0 issues the TMA loads of a STAGES-deep ring; everyone
//           waits on full[s], issues 4 wgmma, keeps one group in flight
//           (wait_group 1) and after a __syncthreads thread 0 refills the
//           slot of the previous k-tile. grid = (ceil(N/256), ceil(M/64)).
//   rung 2  hopper_ws, PERSISTENT=0, CLUSTER_M=1 : 384 threads = 3
//           warpgroups. Warpgroup 0 is the producer (one thread issues TMA,
//           waits on empty[s]); warpgroups 1 and 2 are consumers, each owns 64
//           rows of a 128 x 256 tile, waits on full[s] and arrives on empty[s].
//           setmaxnreg gives the producer 40 registers and the consumers 232.
//           One CTA per tile, grid = number of tiles, grouped order.
//           CONSUMERS=1 is the control that splits this rung in two: the
//           same producer and ring with one consumer warpgroup (256 threads)
//           and rung 1's 64 x 256 tile, so specialization is measured apart
//           from the taller tile.
//   rung 3  PERSISTENT=1 : grid = number of SMs; each CTA loops over tiles
//           t = blockIdx.x, + gridDim.x, ... in GROUP_M order. The ring
//           continues across tiles, so the producer loads the next tile
//           while the consumers store this one (the epilogue overlaps).
//   rung 4  CLUSTER_M=2 : __cluster_dims__(2,1,1); the two CTAs of a cluster
//           take vertically adjacent tiles (same columns of B). Each loads
//           its own A and HALF of the B tile, multicast into both CTAs'
//           shared memory (.multicast::cluster): B traffic from L2 halves.
//           Consumers release a slot in both CTAs (remote mbarrier arrive,
//           with the default .release.cta semantics: the slot's readers are
//           the async wgmma, already complete at wait_group; CLUSTER_ARRIVE=1
//           builds a .release.cluster arrive instead, not timed against it).
//   rung 5  EPI_TMA=1 : the epilogue goes through shared memory: each
//           consumer rounds its 64 x 256 block to T half by half (64 x 128,
//           16 KB) into one 16 KB staging buffer (128-byte swizzled,
//           conflict-free 4-byte writes), fence.proxy.async, and one thread
//           issues the half's TMA stores (the engine clips the M, N edges);
//           the second half waits until the first has been read out
//           (cp.async.bulk.wait_group.read) before it reuses the buffer. Instead of 64 scattered
//           4-byte global stores per thread, whole 128-byte lines leave the
//           SM asynchronously (chapter 10 measures what that is worth).
//
// Chapter 9 borrows rungs 3-4 for split-K (SPLIT_K=1): a work unit is a
//   (tile, k range) pair, unit u = z * tiles + t, so the persistent loop
//   walks units exactly as it walks tiles. Range z of `splits` covers k-tiles
//   [z * nk / splits, (z + 1) * nk / splits); the consumers store their fp32
//   accumulators to the workspace slab W[z][M][N] (no rounding), and chapter
//   9's splitk_reduce adds the slabs in the order z = 0, 1, ... and rounds to
//   T: deterministic. With fused = 1 the same sum happens in this launch: the
//   consumer warpgroup that stores a tile's last partial half adds them all
//   (splitk_last_sum), so a call is one launch instead of two. A skinny
//   512 x 512 x 32768 has 8 tiles for 132 SMs; 16 ranges of 32 k-tiles each
//   make 128 units.
//
// Preconditions (scripts/hopper_bench.py refuses anything else before launch):
//   compute capability 9.0 (sm_90a machine code);
//   K % 8 == 0 and N % 8 == 0: TMA global strides (K*2, N*2 bytes) must be
//   multiples of 16 bytes; K >= 8, M >= 1, N >= 8; base pointers 16-byte
//   aligned. M and N need not be tile multiples (TMA zero-fills loads; the
//   epilogue guards its stores, or the TMA store clips them), nor K a
//   multiple of BK (zero-filled K tail).
//   M, N, K < 2^31 each (the C offset is computed in 64 bits).
//
// Tile parameters (-D; the defaults below are those of the catalog entry
//   hopper_r2_warp_specialized_f16, the first rung of hopper_ws: every rung
//   switch off; rungs 3-5 turn them on, rung 1 reads only BF16 and STAGES):
//   BF16 (0/1); STAGES (ring depth, 2..4: 4 x 48 KB fits the 227 KB opt-in
//   limit); GROUP_M (tile-order group height, >= 1); PERSISTENT (0/1);
//   CLUSTER_M (1 or 2); EPI_TMA (0/1); CONSUMERS (2, or 1: the control of
//   rung 2, BM = 64); SPLIT_K (0/1, with EPI_TMA=0: chapter
//   9's split-K); PRODUCER_REGS / CONSUMER_REGS (the setmaxnreg targets).
//   BM = 64 x CONSUMERS (one m64 per consumer warpgroup), BN = 256 (wgmma n256), BK = 64
//   (one 128-byte swizzle atom) are fixed by the instruction shapes and the
//   swizzle and are asserted. The PTX wrappers are in kernels/hopper_sm90.cuh;
//   kernels/experiments/10_hopper_variants.cu builds this file with some of
//   them replaced (the variants scripts/hopper_bench.py times against it).
// Launch (rungs 2-5): block = 128 x (1 + CONSUMERS) = 384, dynamic shared memory = SMEM_WS bytes,
//   grid = CLUSTER_M x row units x column tiles (PERSISTENT=0), or, persistent,
//   a multiple of CLUSTER_M no larger than the SMs (or the clusters that fit).
// Kernel arguments: rung 1 (tmA, tmB, C, M, N, K); rungs 2-5 (tmA, tmB, tmC,
//   C, M, N, K), then with SPLIT_K=1 (W, splits, flags, fused): W holds
//   splits x M x N floats, 1 <= splits; flags one int per tile, all zero. tm* are 128-byte CUtensorMap descriptors passed by value as
//   __grid_constant__ parameters: A box 64 x BM, B box 64 x 64, C box 64 x 64
//   (tmC is read only with EPI_TMA=1), all SWIZZLE_128B.
// -DRECORD_OWNER=1 (kernels/instrument.cuh) appends an `int* owner` argument:
//   every C element the direct epilogue stores records the thread that stored it.

#ifndef BF16
#define BF16 0               // 1: bfloat16 operands and C
#endif
#ifndef STAGES
#define STAGES 4             // slots in the TMA ring
#endif
#ifndef GROUP_M
#define GROUP_M 8            // tile-order group height, in row units
#endif
#ifndef PERSISTENT
#define PERSISTENT 0         // rung 3: one CTA per SM loops over tiles
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1          // rung 4: 2 = clusters of two CTAs along M, B multicast
#endif
#ifndef EPI_TMA
#define EPI_TMA 0            // rung 5: epilogue through shared memory + TMA store
#endif
#ifndef SPLIT_K
#define SPLIT_K 0            // chapter 9: fp32 partial tiles per k range (extra arguments W, splits)
#endif
#ifndef CONSUMERS
#define CONSUMERS 2          // consumer warpgroups (1: rung 2's control, a 64-row tile)
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40     // setmaxnreg: the producer warpgroup gives registers away ...
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232    // ... and each consumer warpgroup takes them
#endif

#include "fp16.cuh"          // T, T2, pack2
#include "hopper_sm90.cuh"   // the PTX wrappers: mbarriers, TMA, wgmma, descriptors, setmaxnreg, clusters
#include "instrument.cuh"    // -DRECORD_OWNER=1: every C element records the thread that stored it

#define BM (64 * CONSUMERS)    // rungs 2-5: one consumer warpgroup per 64 rows (2: 128)
#define R1_BM 64               // rung 1: one warpgroup x 64 rows
#define BN 256
#define BK 64
#define KK (BK / 16)           // wgmma k16 steps per k-tile
#define B_BOXES (BN / 64)      // 64-column TMA boxes per B tile
#define A_TILE_BYTES (BM * BK * 2)
#define R1_A_TILE_BYTES (R1_BM * BK * 2)
#define B_TILE_BYTES (BK * BN * 2)
#define B_BOX_BYTES (BK * 64 * 2)   // = BOX_BYTES: one 64-column box of B
#define WS_THREADS (128 * (1 + CONSUMERS))   // the producer warpgroup + the consumers (2: 384)
// 1 KB slack to round the dynamic shared-memory base up to 1024 bytes, the ring, 2 barriers per slot
#define C_HALF_BYTES (64 * 128 * 2)   // EPI_TMA: one consumer's 64 rows x 128 cols staging buffer
#define SMEM_WS (1024 + STAGES * (A_TILE_BYTES + B_TILE_BYTES) + EPI_TMA * CONSUMERS * C_HALF_BYTES + 2 * STAGES * 8)
#define SMEM_R1 (1024 + STAGES * (R1_A_TILE_BYTES + B_TILE_BYTES) + 2 * STAGES * 8)

static_assert(BK * 2 == 128, "BK must be one 128-byte swizzle atom (64 16-bit elements)");
static_assert(BN == 256 && BN % 64 == 0, "BN is the wgmma N (n256), a whole number of 64-column boxes");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups of m64 (2 ships; 1 is rung 2's control)");
static_assert(STAGES >= 2 && STAGES <= 4, "2..4 stages");
static_assert(SMEM_R1 <= 232448, "rung-1 ring must fit the 227 KB opt-in shared memory");
static_assert(SMEM_WS <= 232448, "rungs 2-5: STAGES <= 4 (with EPI_TMA too) fits the 227 KB opt-in shared memory");
static_assert(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT is 0 or 1");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 CTAs along M");
static_assert(B_BOXES % CLUSTER_M == 0, "each cluster rank multicasts a whole number of B boxes");
static_assert(GROUP_M >= 1, "GROUP_M >= 1");
static_assert(SPLIT_K == 0 || (SPLIT_K == 1 && EPI_TMA == 0), "SPLIT_K is 0 or 1; its fp32 epilogue is the direct one (EPI_TMA=0)");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg takes multiples of 8");
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536, "register file: 64 K registers per SM");

// ---------------------------------------------------------------------------
// Epilogue: one warpgroup's 64 x 256 fp32 accumulators -> C (rows row0..row0+63,
// cols col0..col0+255), rounded to T, two elements (4 bytes) per store,
// guarded against the M and N edges (N is even, so a pair never straddles N).
// ---------------------------------------------------------------------------
__device__ __forceinline__ void store_acc(const float (&d)[128], T* __restrict__ C, int M, int N,
                                          int row0, int col0 OWNER_PARAM)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int r = row0 + 16 * warp + (lane >> 2);
    const int c = col0 + 2 * (lane & 3);
    T* p0 = C + (size_t)r * N + c;
    T* p1 = p0 + (size_t)8 * N;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        if (c + 8 * j < N) {
            if (r < M) {
                *reinterpret_cast<T2*>(p0 + 8 * j) = pack2(d[4 * j + 0], d[4 * j + 1]);
                RECORD((size_t)r * N + c + 8 * j); RECORD((size_t)r * N + c + 8 * j + 1);
            }
            if (r + 8 < M) {
                *reinterpret_cast<T2*>(p1 + 8 * j) = pack2(d[4 * j + 2], d[4 * j + 3]);
                RECORD((size_t)(r + 8) * N + c + 8 * j); RECORD((size_t)(r + 8) * N + c + 8 * j + 1);
            }
        }
    }
}

// Rung 5 epilogue: the same accumulators, staged through shared memory and
// written by TMA stores (4-byte smem writes into a layout swizzled in 16-byte
// chunks, whole 128-byte lines to
// global, edges clipped by the engine, and the consumer does not wait for
// global memory). Half h holds cols 128h..128h+127 of the warpgroup's
// 64 x 256 block as two 64 x 64 boxes in the 128-byte-swizzled layout:
//   byte(r, c) = box(c) * 8192 + r * 128 + (((c % 64) / 8) ^ (r % 8)) * 16 + (c % 8) * 2
// A warp's 32 four-byte writes for one j then hit 32 different banks.
template <int BAR_ID>
__device__ __forceinline__ void store_acc_tma(const float (&d)[128], const TmaDesc* tmC, u32 buf,
                                              bool lead, int row0, int col0)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int r = 16 * warp + (lane >> 2);
    const int t = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (lead) bulk_wait_read<0>();                       // the previous store has read the buffer
        warpgroup_sync<BAR_ID>();
#pragma unroll
        for (int jj = 0; jj < 16; ++jj) {
            const int j = 16 * h + jj;                       // n8 block
            const u32 box = buf + (jj / 8) * 8192;
            const u32 a0 = box + r * 128 + (((jj & 7) ^ (r & 7)) << 4) + 4 * t;
            const u32 a1 = a0 + 8 * 128;                     // row r + 8: same (r % 8)
            T2 v0 = pack2(d[4 * j + 0], d[4 * j + 1]);
            T2 v1 = pack2(d[4 * j + 2], d[4 * j + 3]);
            asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(a0), "r"(*reinterpret_cast<u32*>(&v0)) : "memory");
            asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(a1), "r"(*reinterpret_cast<u32*>(&v1)) : "memory");
        }
        fence_proxy_async();                                 // generic-proxy writes -> visible to TMA
        warpgroup_sync<BAR_ID>();
        if (lead) {
            tma_store_2d(tmC, buf, col0 + 128 * h, row0);
            tma_store_2d(tmC, buf + 8192, col0 + 128 * h + 64, row0);
            bulk_commit();
        }
    }
}

// One k-tile (BK = 64 = 4 k16 steps) of a warpgroup's 64 x 256 block:
//   for (kk = 0; kk < 4; ++kk)  D += A[:, 16kk:16kk+16] * B[16kk:16kk+16, :]
// a_tile: this warpgroup's 64 rows x 128 B of A (8 swizzle atoms of 1 KB);
// b_tile: 4 boxes of 64 K-rows x 128 B.
__device__ __forceinline__ void mma_k_tile(float (&d)[128], u32 a_tile, u32 b_tile)
{
#pragma unroll
    for (int kk = 0; kk < KK; ++kk)
        wgmma_m64n256k16(d, desc_a(a_tile + kk * 32), desc_b(b_tile + kk * 16 * 128), 1);
}

// ===========================================================================
// Rung 1: TMA + mbarriers + wgmma, one warpgroup, no specialization.
// Tile 64 x 256; grid = (ceil(N/256), ceil(M/64)); block = 128;
// dynamic shared memory SMEM_R1.
// ===========================================================================
extern "C" __global__ void __launch_bounds__(128, 1)
hopper_tma_wgmma(const __grid_constant__ TmaDesc tmA, const __grid_constant__ TmaDesc tmB,
                 T* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;   // swizzle atoms need 1024-byte alignment
    const u32 sA = base;                                     // STAGES x [64 rows][64 k]          8 KB each
    const u32 sB = sA + STAGES * R1_A_TILE_BYTES;            // STAGES x 4 x [64 k][64 n]        32 KB each
    const u32 full = sB + STAGES * B_TILE_BYTES;             // STAGES mbarriers, 8 B each
    const int m0 = blockIdx.y * R1_BM, n0 = blockIdx.x * BN;
    const int nk = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        tma_prefetch_desc(&tmA);
        tma_prefetch_desc(&tmB);
        for (int s = 0; s < STAGES; ++s) mbar_init(full + 8 * s, 1);
        fence_barrier_init();
    }
    __syncthreads();

    // k-tile kt -> slot kt % STAGES: A box (64 k, 64 rows) and 4 B boxes (64 n, 64 k).
    auto load = [&](int kt) {
        const int s = kt % STAGES;
        const u32 bar = full + 8 * s;
        mbar_arrive_expect_tx(bar, R1_A_TILE_BYTES + B_TILE_BYTES);
        tma_load_2d(sA + s * R1_A_TILE_BYTES, &tmA, kt * BK, m0, bar);
#pragma unroll
        for (int j = 0; j < B_BOXES; ++j)
            tma_load_2d(sB + s * B_TILE_BYTES + j * B_BOX_BYTES, &tmB, n0 + 64 * j, kt * BK, bar);
    };
    if (threadIdx.x == 0)
        for (int kt = 0; kt < STAGES && kt < nk; ++kt) load(kt);

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;

    for (int kt = 0; kt < nk; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(full + 8 * s, (kt / STAGES) & 1);          // the slot's bytes have landed
        wgmma_fence();
        mma_k_tile(d, sA + s * R1_A_TILE_BYTES, sB + s * B_TILE_BYTES);
        wgmma_commit();
        wgmma_wait<1>();                                     // k-tile kt-1's wgmma are done ...
        __syncthreads();                                     // ... in every warp: its slot is free
        if (threadIdx.x == 0 && kt >= 1 && kt - 1 + STAGES < nk) load(kt - 1 + STAGES);
    }
    wgmma_wait<0>();
    store_acc(d, C, M, N, m0, n0 OWNER_ARG);
}

// ===========================================================================
// Rungs 2-5: warp-specialized producer / 2 consumers, 128 x 256 tile.
// ===========================================================================

// Tile t -> (row unit mu, column tile n) in GROUP_M order: GROUP_M row units
// walk down one column of tiles before moving right, so CTAs running at the
// same time share panels of A and B in L2. A row unit is CLUSTER_M tiles
// stacked along M (one per CTA of a cluster).
//   plain order:   mu = t / num_n,  n = t % num_n
__device__ __forceinline__ void tile_coords(int t, int num_mu, int num_n, int& mu, int& n)
{
    const int per_group = GROUP_M * num_n;
    const int group = t / per_group;
    const int first = group * GROUP_M;
    const int rows = min(num_mu - first, GROUP_M);
    const int in = t - group * per_group;
    mu = first + in % rows;
    n = in / rows;
}

#if CLUSTER_M > 1
#define CLUSTER_ATTR __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define CLUSTER_ATTR
#endif

#if SPLIT_K
// W: splits x M x N fp32 slabs; fused = 1: the last consumer of a tile adds them into C
// (flags: one int per tile, zero before the call and after it)
#define SPLIT_PARAM , float* __restrict__ W, int splits, int* __restrict__ flags, int fused
#else
#define SPLIT_PARAM
#endif

// k-tiles [kb, ke) of range z when nk k-tiles are cut into `splits` near-equal ranges.
__device__ __forceinline__ void k_range(int z, int splits, int nk, int& kb, int& ke)
{
    kb = (int)((long long)z * nk / splits);
    ke = (int)((long long)(z + 1) * nk / splits);
}

// The fp32 twin of store_acc for SPLIT_K: the same fragment walk, 8-byte
// float2 stores into one slab of the workspace (row pitch N; N % 8 == 0 keeps
// them aligned), no rounding.
__device__ __forceinline__ void store_partial(const float (&d)[128], float* __restrict__ W, int M, int N,
                                              int row0, int col0)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int r = row0 + 16 * warp + (lane >> 2);
    const int c = col0 + 2 * (lane & 3);
    float* p0 = W + (size_t)r * N + c;
    float* p1 = p0 + (size_t)8 * N;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        if (c + 8 * j < N) {
            if (r < M)     *reinterpret_cast<float2*>(p0 + 8 * j) = make_float2(d[4 * j + 0], d[4 * j + 1]);
            if (r + 8 < M) *reinterpret_cast<float2*>(p1 + 8 * j) = make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

#if SPLIT_K
// Split-K in one launch (fused = 1). Each consumer warpgroup counts its stored 64-row half
// of the partial in flags[tile]; the last of the tile's CONSUMERS x splits halves adds the
// BM x BN tile's partials in the order z = 0, 1, ... (chapter 9's splitk_reduce order, so
// the same float sum bit for bit), rounds them to T into C (row pitch N) and sets the
// count back to 0. No warpgroup waits for another CTA: the last one does the work.
//   writer:  st W[z] ; fence ; bar(warpgroup) ; atomicAdd(flags[tile])     (release)
//   last:    atomicAdd saw CONSUMERS * splits - 1 ; fence ; ld.cg W[0..splits)  (acquire)
template <int BAR_ID>
__device__ __forceinline__ void splitk_last_sum(const float* __restrict__ W, int* __restrict__ flags, T* __restrict__ C,
                                                int M, int N, int splits, int tile, int m0, int n0)
{
    __shared__ int is_last;
    const bool lead = (threadIdx.x & 127) == 0;
    __threadfence();                                 // this half of the partial, visible to every SM ...
    warpgroup_sync<BAR_ID>();                        // ... from all 128 threads, before it is counted
    if (lead) {
        is_last = atomicAdd(flags + tile, 1) == CONSUMERS * splits - 1;
        if (is_last)
            flags[tile] = 0;                         // every other half of the tile has counted itself
    }
    warpgroup_sync<BAR_ID>();
    if (!is_last)
        return;
    __threadfence();
    const long long MN = (long long)M * N;
    // for (r, c) in the tile:  C[r][c] = ((0 + W[0][r][c]) + W[1][r][c]) + ...
    // Latency-bound (one warpgroup reads every partial of the tile from L2): each thread keeps
    // up to eight splits of four columns in flight, float4 loads where N % 4 == 0 (rows of W
    // 16-byte aligned, c a multiple of 4), guarded scalars otherwise; the adds stay in the
    // order z = 0, 1, ..., element by element.
    const bool vec = N % 4 == 0;
    for (int e = 4 * (threadIdx.x & 127); e < BM * BN; e += 4 * 128) {
        const int r = m0 + e / BN, c = n0 + e % BN;  // four consecutive columns per thread
        if (r >= M || c >= N)
            continue;
        const long long i = (long long)r * N + c;
        float sum[4] = {0.f, 0.f, 0.f, 0.f};
        for (int z = 0; z < splits; z += 8) {
            float v[8][4];
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                if (z + j < splits) {
                    const float* p = W + (z + j) * MN + i;
                    if (vec) {
                        const float4 q = __ldcg(reinterpret_cast<const float4*>(p));
                        v[j][0] = q.x; v[j][1] = q.y; v[j][2] = q.z; v[j][3] = q.w;
                    } else {
                        #pragma unroll
                        for (int k = 0; k < 4; ++k)
                            v[j][k] = c + k < N ? __ldcg(p + k) : 0.f;
                    }
                }
            #pragma unroll
            for (int j = 0; j < 8; ++j)
                if (z + j < splits) {
                    #pragma unroll
                    for (int k = 0; k < 4; ++k)
                        sum[k] += v[j][k];
                }
        }
        #pragma unroll
        for (int k = 0; k < 4; ++k)
            if (c + k < N)
                C[i + k] = to_T(sum[k]);
    }
}
#endif

extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(WS_THREADS, 1)
hopper_ws(const __grid_constant__ TmaDesc tmA, const __grid_constant__ TmaDesc tmB,
          const __grid_constant__ TmaDesc tmC, T* __restrict__ C, int M, int N, int K SPLIT_PARAM OWNER_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;   // same offset in every CTA: multicast relies on it
    const u32 sA = base;                                     // STAGES x [128 rows][64 k]        16 KB each
    const u32 sB = sA + STAGES * A_TILE_BYTES;               // STAGES x 4 x [64 k][64 n]        32 KB each
    const u32 sC = sB + STAGES * B_TILE_BYTES;               // EPI_TMA: 16 KB staging per consumer
    const u32 full = sC + EPI_TMA * CONSUMERS * C_HALF_BYTES; // STAGES mbarriers: data landed
    const u32 empty = full + 8 * STAGES;                     // STAGES mbarriers: slot consumed

    const int wg = threadIdx.x / 128;                        // 0 producer, 1 and 2 consumers
    const u32 rank = CLUSTER_M > 1 ? cluster_ctarank() : 0;
    const int num_m = (M + BM - 1) / BM, num_n = (N + BN - 1) / BN;
    const int num_mu = (num_m + CLUSTER_M - 1) / CLUSTER_M;
    const int tiles = num_mu * num_n;
#if !SPLIT_K
    const int splits = 1;
#endif
    const int units = tiles * splits;                        // (tile, k range) pairs; = tiles without split-K
    const int first_tile = blockIdx.x / CLUSTER_M;           // clusters are consecutive blockIdx.x
#if PERSISTENT
    const int tile_stride = gridDim.x / CLUSTER_M;
#else
    const int tile_stride = units;                           // one unit per CTA (cluster)
#endif
    const int nk = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        tma_prefetch_desc(&tmA);
        tma_prefetch_desc(&tmB);
        init_ring(full, empty, STAGES, CONSUMERS, CLUSTER_M); // empty: every consumer warpgroup of the cluster
        fence_barrier_init();
    }
#if CLUSTER_M > 1
    cluster_sync();                                          // peers' barriers exist before any multicast
#else
    __syncthreads();
#endif

    if (wg == 0) {
        // ---------------- producer: one thread drives the copy engine ----------------
        setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            int it = 0;                                      // k-tiles issued so far, across tiles
            for (int u = first_tile; u < units; u += tile_stride) {
                int mu, nb, kb, ke;
                tile_coords(u % tiles, num_mu, num_n, mu, nb);
                k_range(u / tiles, splits, nk, kb, ke);      // the whole K (0, nk) without split-K
                const int m0 = (mu * CLUSTER_M + (int)rank) * BM, n0 = nb * BN;
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = it % STAGES;
                    const u32 phase = (it / STAGES) & 1;
                    mbar_wait(empty + 8 * s, phase ^ 1);     // first lap: passes at once
                    const u32 bar = full + 8 * s;
                    mbar_arrive_expect_tx(bar, A_TILE_BYTES + B_TILE_BYTES);
                    tma_load_2d(sA + s * A_TILE_BYTES, &tmA, kt * BK, m0, bar);
                    // the B tile: all of it, or this rank's share multicast into every CTA of the cluster
                    tma_load_b_tile(sB + s * B_TILE_BYTES, &tmB, n0, kt * BK, bar, B_BOXES, rank, CLUSTER_M);
                }
            }
        }
    } else {
        // ---------------- consumers: 64 rows each ----------------
        setmaxnreg_inc<CONSUMER_REGS>();
        const int cw = wg - 1;
        float d[128];
        int it = 0;
        for (int u = first_tile; u < units; u += tile_stride) {
            int mu, nb, kb, ke;
            tile_coords(u % tiles, num_mu, num_n, mu, nb);
            k_range(u / tiles, splits, nk, kb, ke);
            const int m0 = (mu * CLUSTER_M + (int)rank) * BM, n0 = nb * BN;
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.f;
            int prev = -1;
            for (int kt = kb; kt < ke; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(full + 8 * s, (it / STAGES) & 1);
                wgmma_fence();
                mma_k_tile(d, sA + s * A_TILE_BYTES + cw * 64 * 128, sB + s * B_TILE_BYTES);
                wgmma_commit();
                wgmma_wait<1>();                             // the previous k-tile's group is done
                if (prev >= 0 && (threadIdx.x & 127) == 0) release_slot(empty + 8 * prev, rank, CLUSTER_M);
                prev = s;
            }
            wgmma_wait<0>();
            if (prev >= 0 && (threadIdx.x & 127) == 0) release_slot(empty + 8 * prev, rank, CLUSTER_M);
#if SPLIT_K
            store_partial(d, W + (size_t)(u / tiles) * M * N, M, N, m0 + 64 * cw, n0);   // an empty range stores zeros
            if (fused) {
                const int tile = (u % tiles) * CLUSTER_M + (int)rank;
                if (cw == 0) splitk_last_sum<1>(W, flags, C, M, N, splits, tile, m0, n0);
                else         splitk_last_sum<2>(W, flags, C, M, N, splits, tile, m0, n0);
            }
#elif EPI_TMA
            if (cw == 0) store_acc_tma<1>(d, &tmC, sC, (threadIdx.x & 127) == 0, m0, n0);
            else         store_acc_tma<2>(d, &tmC, sC + C_HALF_BYTES, (threadIdx.x & 127) == 0, m0 + 64, n0);
#else
            store_acc(d, C, M, N, m0 + 64 * cw, n0 OWNER_ARG);       // the producer is already loading the next tile
#endif
        }
#if EPI_TMA
        if ((threadIdx.x & 127) == 0) bulk_wait<0>();        // stores done before the CTA's smem goes away
#endif
    }
#if CLUSTER_M > 1
    cluster_sync();                                          // no CTA leaves while a peer may still signal it
#endif
}

// ===========================================================================
// A probe for chapter 10's swizzle figure (not a GEMM): TMA-load one 64 x 64
// box of 16-bit elements at (0, 0) with the 128-byte swizzle, then copy the
// raw shared memory out, slot by slot, so the host sees where each element
// landed: out[slot] = the element TMA put in 2-byte slot `slot` of the tile.
// block = 128 threads; dynamic shared memory 2048 + 8192 bytes.
// ===========================================================================
extern "C" __global__ void tma_box_dump(const __grid_constant__ TmaDesc tm, unsigned short* __restrict__ out)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 tile = (smem_u32(smem_raw) + 1023) & ~1023u;   // the swizzle pattern repeats every 1024 bytes
    const u32 bar = tile + 64 * 128;
    if (threadIdx.x == 0) {
        mbar_init(bar, 1);
        fence_barrier_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_arrive_expect_tx(bar, 64 * 128);
        tma_load_2d(tile, &tm, 0, 0, bar);
    }
    mbar_wait(bar, 0);
    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) {
        unsigned short v;
        asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(tile + 2 * i));
        out[i] = v;
    }
}
