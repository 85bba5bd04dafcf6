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
//   rung 3  PERSISTENT=1 : grid = number of SMs; each CTA loops over tiles
//           t = blockIdx.x, + gridDim.x, ... in GROUP_M order. The ring
//           continues across tiles, so the producer loads the next tile
//           while the consumers store this one (the epilogue overlaps).
//   rung 4  CLUSTER_M=2 : __cluster_dims__(2,1,1); the two CTAs of a cluster
//           take vertically adjacent tiles (same columns of B). Each loads
//           its own A and HALF of the B tile, multicast into both CTAs'
//           shared memory (.multicast::cluster): B traffic from L2 halves.
//           Consumers release a slot in both CTAs (remote mbarrier arrive).
//           Pitfall measured on the H200: a remote arrive with
//           .release.cluster semantics (CLUSTER_ARRIVE=1) halves the speed
//           (0.54 of cuBLAS instead of 0.90); the default .release.cta form
//           is enough, since the slot's readers are the async wgmma, already
//           complete at wait_group.
//   rung 5  EPI_TMA=1 : the epilogue goes through shared memory: each
//           consumer rounds its 64 x 256 block to T into a 16 KB staging
//           buffer (two 64 x 128 halves, 128-byte swizzled, conflict-free
//           4-byte writes), fence.proxy.async, and one thread issues TMA
//           stores (the engine clips the M, N edges). Instead of 64 scattered
//           4-byte global stores per thread, whole 128-byte lines leave the
//           SM asynchronously. Measured: 0.90 -> 0.99 of cuBLAS at 4096^3.
//
// Chapter 9 borrows rungs 3-4 for split-K (SPLIT_K=1): a work unit is a
//   (tile, k range) pair, unit u = z * tiles + t, so the persistent loop
//   walks units exactly as it walks tiles. Range z of `splits` covers k-tiles
//   [z * nk / splits, (z + 1) * nk / splits); the consumers store their fp32
//   accumulators to the workspace slab W[z][M][N] (no rounding), and chapter
//   9's splitk_reduce adds the slabs in the order z = 0, 1, ... and rounds to
//   T: deterministic. A skinny 512 x 512 x 32768 has 8 tiles for 132 SMs;
//   16 ranges of 32 k-tiles each make 128 units.
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
// Tile parameters (-D): BF16 (0/1); STAGES (ring depth, 2..4: 4 x 48 KB fits
//   the 227 KB opt-in limit); GROUP_M (tile-order group height, >= 1);
//   PERSISTENT (0/1); CLUSTER_M (1 or 2); EPI_TMA (0/1); SPLIT_K (0/1, with
//   EPI_TMA=0: chapter 9's split-K); and the switches
//   kept for the measurements in notes/hopper_tuning.md: MULTICAST (0/1),
//   CLUSTER_ARRIVE (0/1/2), WAIT_SPIN (0/1), EARLY_RELEASE (0/1),
//   B_DESC_SWAP (0/1, a wrong descriptor: must fail the check),
//   PRODUCER_REGS / CONSUMER_REGS (setmaxnreg targets). BM = 128 (two consumer warpgroups
//   x m64), BN = 256 (wgmma n256), BK = 64 (one 128-byte swizzle atom) are
//   fixed by the instruction shapes and the swizzle and are asserted.
// Launch (rungs 2-5): block = 384, dynamic shared memory = SMEM_WS bytes,
//   grid = CLUSTER_M x row units x column tiles (PERSISTENT=0), or, persistent,
//   a multiple of CLUSTER_M no larger than the SMs (or the clusters that fit).
// Kernel arguments: rung 1 (tmA, tmB, C, M, N, K); rungs 2-5 (tmA, tmB, tmC,
//   C, M, N, K), then with SPLIT_K=1 (W, splits): W holds splits x M x N
//   floats, 1 <= splits. tm* are 128-byte CUtensorMap descriptors passed by value as
//   __grid_constant__ parameters: A box 64 x BM, B box 64 x 64, C box 64 x 64
//   (tmC is read only with EPI_TMA=1), all SWIZZLE_128B.
// -DRECORD_OWNER=1 (kernels/instrument.cuh) appends an `int* owner` argument:
//   every C element the direct epilogue stores records the thread that stored it.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "instrument.cuh"   // -DRECORD_OWNER=1: every C element records the thread that stored it

#ifndef BF16
#define BF16 0
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef B_DESC_SWAP          // 1 swaps LBO/SBO of the B descriptor (a test that must FAIL)
#define B_DESC_SWAP 0
#endif
#ifndef MULTICAST            // CLUSTER_M=2 without multicast: the cluster launch alone (a control)
#define MULTICAST 1
#endif
#ifndef WAIT_SPIN            // 1: mbarrier.test_wait spin instead of try_wait (which may suspend)
#define WAIT_SPIN 0
#endif
#ifndef CLUSTER_ARRIVE       // how a consumer frees a slot in the cluster (a measured pitfall, see notes):
#define CLUSTER_ARRIVE 0     // 0: local arrive for its own CTA, remote arrive (default .release.cta) for the peer
#endif                       // 1: mapa + arrive.release.cluster for every CTA, its own included; 2: mapa + plain arrive for all
#ifndef EARLY_RELEASE        // 1: wait_group 0 and free the slot at once (no wgmma kept in flight)
#define EARLY_RELEASE 0
#endif
#ifndef EPI_TMA              // rung 5: epilogue through shared memory + TMA store
#define EPI_TMA 0
#endif
#ifndef SPLIT_K              // chapter 9: fp32 partial tiles per k range (extra arguments W, splits)
#define SPLIT_K 0
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif

#define BM 128                 // rungs 2-5: 2 consumer warpgroups x 64 rows
#define R1_BM 64               // rung 1: one warpgroup x 64 rows
#define BN 256
#define BK 64
#define KK (BK / 16)           // wgmma k16 steps per k-tile
#define B_BOXES (BN / 64)      // 64-column TMA boxes per B tile
#define A_TILE_BYTES (BM * BK * 2)
#define R1_A_TILE_BYTES (R1_BM * BK * 2)
#define B_TILE_BYTES (BK * BN * 2)
#define B_BOX_BYTES (BK * 64 * 2)
#define WS_THREADS 384
// 1 KB slack to round the dynamic shared-memory base up to 1024 bytes, the ring, 2 barriers per slot
#define C_HALF_BYTES (64 * 128 * 2)   // EPI_TMA: one consumer's 64 rows x 128 cols staging buffer
#define SMEM_WS (1024 + STAGES * (A_TILE_BYTES + B_TILE_BYTES) + EPI_TMA * 2 * C_HALF_BYTES + 2 * STAGES * 8)
#define SMEM_R1 (1024 + STAGES * (R1_A_TILE_BYTES + B_TILE_BYTES) + 2 * STAGES * 8)

static_assert(BK * 2 == 128, "BK must be one 128-byte swizzle atom (64 16-bit elements)");
static_assert(BN == 256 && BN % 64 == 0, "BN is the wgmma N (n256), a whole number of 64-column boxes");
static_assert(BM == 128, "two consumer warpgroups of m64");
static_assert(STAGES >= 2 && STAGES <= 4, "2..4 stages");
static_assert(SMEM_R1 <= 232448, "rung-1 ring must fit the 227 KB opt-in shared memory");
static_assert(SMEM_WS <= 232448, "rungs 2-5: STAGES <= 4 (with EPI_TMA too) fits the 227 KB opt-in shared memory");
static_assert(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT is 0 or 1");
static_assert(CLUSTER_M == 1 || CLUSTER_M == 2, "clusters of 1 or 2 CTAs along M");
static_assert(B_BOXES % CLUSTER_M == 0, "each cluster rank multicasts a whole number of B boxes");
static_assert(GROUP_M >= 1, "GROUP_M >= 1");
static_assert(SPLIT_K == 0 || (SPLIT_K == 1 && EPI_TMA == 0), "SPLIT_K is 0 or 1; its fp32 epilogue is the direct one (EPI_TMA=0)");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg takes multiples of 8");
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 65536, "register file: 64 K registers per SM");

#if BF16
typedef __nv_bfloat16 T;
typedef __nv_bfloat162 T2;
#define WG_AB "bf16"
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2bfloat162_rn(x, y); }
#else
typedef __half T;
typedef __half2 T2;
#define WG_AB "f16"
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2half2_rn(x, y); }
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

// The 128-byte CUtensorMap, opaque to the kernel (NVRTC has no cuda.h).
struct __align__(64) TmaDesc { u64 d[16]; };

// ---------------------------------------------------------------------------
// Small wrappers, one per PTX instruction.
// ---------------------------------------------------------------------------

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// mbarrier.init: arrival count `count`, phase 0 in progress.
__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
// Arrive once and add `bytes` to the transaction count the phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
// Plain arrive on a barrier of this CTA.
__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// Arrive on the barrier at the same offset in CTA `cta` of this cluster.
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta)
{
#if CLUSTER_ARRIVE == 1
    asm volatile("{\n .reg .b32 remote;\n"
                 " mapa.shared::cluster.u32 remote, %0, %1;\n"
                 " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n"
                 :: "r"(bar), "r"(cta) : "memory");
#else
    asm volatile("{\n .reg .b32 remote;\n"
                 " mapa.shared::cluster.u32 remote, %0, %1;\n"
                 " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                 :: "r"(bar), "r"(cta) : "memory");
#endif
}
// Free slot `bar` in every CTA of the cluster (CLUSTER_ARRIVE 0: the own CTA's by a local arrive).
__device__ __forceinline__ void mbar_arrive_all_ctas(u32 bar, u32 rank, u32 ctas)
{
    for (u32 c = 0; c < ctas; ++c) {
        if (CLUSTER_ARRIVE == 0 && c == rank) mbar_arrive(bar);
        else mbar_arrive_cluster(bar, c);
    }
}
// A consumer warpgroup is done with a slot: one arrive on its empty barrier, in
// this CTA, or (multicast) in every CTA of the cluster, whose producers all wrote it.
__device__ __forceinline__ void release_slot(u32 bar, u32 rank)
{
#if CLUSTER_M > 1 && MULTICAST
    mbar_arrive_all_ctas(bar, rank, CLUSTER_M);
#else
    (void)rank;
    mbar_arrive(bar);
#endif
}
// Spin until the phase with parity `parity` has completed:
//   while (!(phase_bit(bar) != parity)) ;   -- try_wait may suspend the thread
//   for a hardware-chosen time instead of burning issue slots.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    u32 done;
    do {
        asm volatile("{\n .reg .pred p;\n"
#if WAIT_SPIN
                     " mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
#else
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
#endif
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// Make the generic-proxy mbarrier.init visible to the async proxy (TMA) and,
// in a cluster, to the other CTAs.
__device__ __forceinline__ void fence_barrier_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* tm)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"((u64)tm) : "memory");
}
// TMA: box at coordinates (x = inner/contiguous, y = outer) of the tensor
// described by *tm -> shared memory at dst; complete_tx on bar when landed.
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDesc* tm, int x, int y, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"((u64)tm), "r"(x), "r"(y), "r"(bar) : "memory");
}
// Same box written to offset dst of every CTA in cta_mask (and complete_tx on
// each one's barrier at offset bar): one L2 read, several destinations.
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const TmaDesc* tm, int x, int y, u32 bar,
                                                      unsigned short cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"((u64)tm), "r"(x), "r"(y), "r"(bar), "h"(cta_mask) : "memory");
}

// TMA store: shared memory (a box, same swizzle as the descriptor) -> the
// tensor at (x, y); the engine clips the parts outside the tensor.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* tm, u32 src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 :: "l"((u64)tm), "r"(src), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until at most N bulk groups still READ shared memory (the buffer may be reused).
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory"); }
// Wait until at most N bulk groups are still running (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;\n" :: "n"(N) : "memory"); }
// Barrier over the 128 threads of one warpgroup (ids 1, 2; 0 is __syncthreads).
template <int ID>
__device__ __forceinline__ void warpgroup_sync() { asm volatile("bar.sync %0, 128;\n" :: "n"(ID) : "memory"); }

// Order register accesses of earlier instructions before the wgmma that follows.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Close the group of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Wait until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Registers move between warpgroups: the whole warpgroup executes these.
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R)); }
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R)); }

__device__ __forceinline__ u32 cluster_ctarank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The shared-memory matrix descriptor, 128-byte swizzle (see 4. above).
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 lbo_bytes, u32 sbo_bytes)
{
    u64 d = 0;
    d |= (u64)((addr & 0x3FFFF) >> 4);
    d |= (u64)((lbo_bytes >> 4) & 0x3FFF) << 16;
    d |= (u64)((sbo_bytes >> 4) & 0x3FFF) << 32;
    d |= (u64)1 << 62;                                  // 128-byte swizzle
    return d;
}
// A: K-major, rows 1024 B apart per 8-row group; LBO unused (encoded 1).
__device__ __forceinline__ u64 desc_a(u32 addr) { return smem_desc(addr, 16, 1024); }
// B: MN-major; next 8 K-rows 1024 B on, next 64-column box B_BOX_BYTES on.
__device__ __forceinline__ u64 desc_b(u32 addr)
{
#if B_DESC_SWAP
    return smem_desc(addr, 1024, B_BOX_BYTES);
#else
    return smem_desc(addr, B_BOX_BYTES, 1024);
#endif
}

// D[64x256] (+)= A[64x16] * B[16x256]; A K-major (trans-a 0), B MN-major
// (trans-b 1). scale_d = 0 overwrites D (the first k16 step of a tile).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 da, u64 db, int scale_d)
{
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WG_AB "." WG_AB " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
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
// written by TMA stores (16-byte swizzled smem writes, whole 128-byte lines to
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
#define MCAST (CLUSTER_M > 1 && MULTICAST)   // B multicast and cross-CTA slot release

#if SPLIT_K
#define SPLIT_PARAM , float* __restrict__ W, int splits   // W: splits x M x N fp32 slabs
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

extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(WS_THREADS, 1)
hopper_ws(const __grid_constant__ TmaDesc tmA, const __grid_constant__ TmaDesc tmB,
          const __grid_constant__ TmaDesc tmC, T* __restrict__ C, int M, int N, int K SPLIT_PARAM OWNER_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;   // same offset in every CTA: multicast relies on it
    const u32 sA = base;                                     // STAGES x [128 rows][64 k]        16 KB each
    const u32 sB = sA + STAGES * A_TILE_BYTES;               // STAGES x 4 x [64 k][64 n]        32 KB each
    const u32 sC = sB + STAGES * B_TILE_BYTES;               // EPI_TMA: 2 x 16 KB staging (one per consumer)
    const u32 full = sC + EPI_TMA * 2 * C_HALF_BYTES;        // STAGES mbarriers: data landed
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
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);                      // the local producer's arrive.expect_tx
            mbar_init(empty + 8 * s, MCAST ? 2 * CLUSTER_M : 2); // one arrive per consumer warpgroup (per CTA)
        }
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
#if !MCAST
#pragma unroll
                    for (int j = 0; j < B_BOXES; ++j)
                        tma_load_2d(sB + s * B_TILE_BYTES + j * B_BOX_BYTES, &tmB, n0 + 64 * j, kt * BK, bar);
#else
                    // this rank's share of the B tile, written into every CTA of the cluster
#pragma unroll
                    for (int jj = 0; jj < B_BOXES / CLUSTER_M; ++jj) {
                        const int j = (int)rank * (B_BOXES / CLUSTER_M) + jj;
                        tma_load_2d_multicast(sB + s * B_TILE_BYTES + j * B_BOX_BYTES, &tmB, n0 + 64 * j,
                                              kt * BK, bar, (unsigned short)((1u << CLUSTER_M) - 1));
                    }
#endif
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
#if EARLY_RELEASE
                wgmma_wait<0>();                             // this k-tile's group is done: free its slot now
                prev = s;                                    // (the other warpgroup keeps the Tensor Cores busy)
#else
                wgmma_wait<1>();                             // the previous k-tile's group is done
#endif
                if (prev >= 0 && (threadIdx.x & 127) == 0) release_slot(empty + 8 * prev, rank);
                prev = s;
            }
#if EARLY_RELEASE
            prev = -1;                                       // every slot already released
#endif
            wgmma_wait<0>();
            if (prev >= 0 && (threadIdx.x & 127) == 0) release_slot(empty + 8 * prev, rank);
#if SPLIT_K
            store_partial(d, W + (size_t)(u / tiles) * M * N, M, N, m0 + 64 * cw, n0);   // an empty range stores zeros
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
