// Exercise 10.1 - the consumer's mbarrier wait (chapter 10; sm_90a: H100 / H200).
//
// C = A @ B with fp16 (or bf16) inputs, fp32 accumulation and a 16-bit C, all
// row-major; K % 8 == 0 and N % 8 == 0. The chapter's warp-specialized kernel
// (kernels/10_hopper.cu, rungs 2-5), shown here at rung 2: warpgroup 0 is the
// producer (one thread hands k-tiles to TMA through a ring of STAGES slots),
// warpgroups 1 and 2 consume them with wgmma, 64 rows of a 128 x 256 tile each.
// Two mbarriers per slot: full[s] completes a phase when the slot's bytes have
// landed, empty[s] when both consumers are done with it. A barrier's phases
// alternate parity 0, 1, 0, ...; mbar_wait(bar, p) returns once the phase of
// parity p has completed.
// Launch (arguments: TMA descriptors of A, B and C, built on the host):
//   block = 384 threads, grid = one CTA per 128 x 256 tile of C.
//
// The step: before its wgmma reads slot s, a consumer waits until the slot's
// bytes have landed. The it-th k-tile (counting across tiles) uses slot
// it % STAGES in lap it / STAGES of the ring.
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
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40     // setmaxnreg: the producer warpgroup gives registers away ...
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232    // ... and each consumer warpgroup takes them
#endif

#include "../fp16.cuh"          // T, T2, pack2
#include "../hopper_sm90.cuh"   // the PTX wrappers: mbarriers, TMA, wgmma, descriptors, setmaxnreg, clusters
#include "../instrument.cuh"    // -DRECORD_OWNER=1: every C element records the thread that stored it

#define BM 128                 // rungs 2-5: 2 consumer warpgroups x 64 rows
#define R1_BM 64               // rung 1: one warpgroup x 64 rows
#define BN 256
#define BK 64
#define KK (BK / 16)           // wgmma k16 steps per k-tile
#define B_BOXES (BN / 64)      // 64-column TMA boxes per B tile
#define A_TILE_BYTES (BM * BK * 2)
#define R1_A_TILE_BYTES (R1_BM * BK * 2)
#define B_TILE_BYTES (BK * BN * 2)
#define B_BOX_BYTES (BK * 64 * 2)   // = BOX_BYTES: one 64-column box of B
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
        init_ring(full, empty, STAGES, 2, CLUSTER_M);        // empty: 2 consumer warpgroups per CTA
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
