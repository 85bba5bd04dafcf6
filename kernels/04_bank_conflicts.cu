// Heaven 4 - shared-memory bank conflicts, and three ways out of them.
//
// Computes C = A @ B in float32, all row-major:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
//
// The vehicle: shared-memory tiling (heaven 3) where each thread now computes
// TN outputs of one row of C, C[m][n0 .. n0+TN-1], a 1-D thread tile. Per k it
// needs one value of A, A[m][k], and TN values of B, B[k][n0 .. n0+TN-1]; the
// A value is reused TN times from a register:
//
//   for k in tile:  a = As[m][k];  for t < TN: acc[t] += a * Bs[k][n0 + t];
//
// Lanes of a warp follow M: lanes 0-15 own 16 consecutive rows m, lanes 16-31
// own the same 16 rows at the next TN columns. So for B every half-warp reads
// one address (a broadcast, read as float4), and for A the warp reads the A
// tile DOWN A COLUMN: As[m0 .. m0+15][k]. How that column maps onto the 32
// banks of shared memory is the subject of the chapter. The A tile is read 4
// k at a time (one float4 per lane) whenever its layout keeps 16-byte rows.
//
// LAYOUT (-D) selects how the A tile (BM x BK) sits in shared memory:
//   0  row-major As[m][k], rows of BK + PAD floats.
//      PAD = 0: rows of 16 or 32 floats start in bank 0 or 16: the column read
//      lands 8 lanes of every quarter-warp on the same 4 banks (8-way, or
//      4-way for BK = 16). PAD = 1 spreads the rows over all banks but breaks
//      16-byte alignment: the reads become 4 scalar LDS per 4 k, and for
//      BK = 16 the tile store (two rows per warp) now conflicts 2-way. PAD = 2
//      gives 8-byte rows (LDS.64); PAD = 4 keeps LDS.128 and is conflict-free
//      for the reads, but for BK = 16 the store conflicts again.
//   1  XOR swizzle, no padding: float4 chunk c of row m is stored at chunk
//      c ^ f(m), f(m) = (m * BK / 32) % (BK / 4). A column read and a row store
//      both hit every bank once per phase, and float4 reads stay aligned.
//   2  A stored transposed, At[k][m], rows of BM + PAD floats: the column read
//      becomes a row read (16 consecutive floats, scalar LDS), but the tile
//      store now writes down a column: 32-way (BK = 32) or 16-way (BK = 16)
//      for PAD = 0; PAD = 1 fixes BK = 32, PAD = 2 fixes BK = 16.
// helpers/models/banks.py models every one of these accesses and predicts the Nsight
// Compute counters; tests/gpu/test_banks_ncu.py checks the prediction.
//
// Preconditions: none on the shape (any M, N, K >= 1): out-of-range tile
// elements are loaded as 0 and the stores of C are guarded. Global loads are
// scalar and coalesced (a warp reads 32 consecutive floats of a row of A or B).
// Tile parameters (-D; the defaults are those of the catalog entry
//   tile1d_conflict, the plain layout the others fix): BM, BN (block tile,
//   default 64 x 64), BK (16 or 32), TN (outputs per thread, 8), LAYOUT (0/1/2),
//   PAD (floats per row, 0..4).
//   Threads per block = BM * BN / TN (512 by default).
//   Rules (checked in helpers/chapters/ch04_bank_conflicts.py): BM % 16 == 0, BN % (2 * TN) == 0,
//   TN % 4 == 0, threads % BK == 0, threads % BN == 0, (BM * BK) % threads
//   == 0, (BK * BN) % threads == 0, BK in {16, 32} for LAYOUT 1.
// Launch: block = (BM * BN / TN), grid = (ceil(N / BN), ceil(M / BM)).
// Shared memory (static): A tile + BK * BN * 4 bytes.
//
// -DRECORD_OWNER=1 adds an `int* owner` argument: owner[m][n] =
// blockLinear * 1024 + threadIdx.x for every C element the thread writes.
//
// bank_probe (at the end): one warp, one shared-memory load of a chosen width
// at per-lane offsets read from global memory, repeated; used to measure the
// hardware's rules for 32-, 64- and 128-bit requests (scripts/ncu_banks.py).

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 32
#endif
#ifndef TN
#define TN 8
#endif
#ifndef LAYOUT
#define LAYOUT 0
#endif
#ifndef PAD
#define PAD 0
#endif

#define THREADS (BM * BN / TN)

#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

static_assert(BM % 16 == 0, "BM: a warp covers 16 rows");
static_assert(BN % (2 * TN) == 0, "BN: a warp covers 2 * TN columns");
static_assert(TN % 4 == 0, "TN: B is read as float4");
static_assert(BK % 4 == 0, "BK: A is read 4 k at a time");
static_assert(THREADS <= 1024 && THREADS % 32 == 0, "threads per block");
static_assert(THREADS % BK == 0 && THREADS % BN == 0, "each thread loads a fixed column of the tiles");
static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0, "tiles split evenly over threads");
#if LAYOUT == 1
static_assert(BK == 16 || BK == 32, "the XOR swizzle is written for BK = 16 or 32");
#endif

// Shared-memory footprint and addressing of the A tile, per layout.
#if LAYOUT == 2
#define A_TILE_FLOATS (BK * (BM + PAD))
#define A_AT(m, k) ((k) * (BM + PAD) + (m))                        // At[k][m]
#elif LAYOUT == 1
#define A_TILE_FLOATS (BM * BK)
#define SWZ(m) ((((m) * BK / 32) % (BK / 4)) * 4)                  // f(m) in floats
#define A_AT(m, k) ((m) * BK + ((k) ^ SWZ(m)))
#else
#define A_TILE_FLOATS (BM * (BK + PAD))
#define A_AT(m, k) ((m) * (BK + PAD) + (k))
#endif

// Width of the A-tile reads: 4 floats while rows stay 16-byte aligned.
#if LAYOUT == 1 || (LAYOUT == 0 && (BK + PAD) % 4 == 0)
#define A_VEC 4
#elif LAYOUT == 0 && (BK + PAD) % 2 == 0
#define A_VEC 2
#else
#define A_VEC 1
#endif

// a[0..3] = A[m][4c .. 4c+3] from the tile, in A_VEC-wide loads.
__device__ __forceinline__ void read_a4(const float* As, int m, int c, float a[4])
{
#if A_VEC == 4
    const float4 v = *reinterpret_cast<const float4*>(As + A_AT(m, 4 * c));   // LDS.128
    a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
#elif A_VEC == 2
    const float2 v0 = *reinterpret_cast<const float2*>(As + A_AT(m, 4 * c));  // LDS.64 x 2
    const float2 v1 = *reinterpret_cast<const float2*>(As + A_AT(m, 4 * c + 2));
    a[0] = v0.x; a[1] = v0.y; a[2] = v1.x; a[3] = v1.y;
#else
    #pragma unroll
    for (int j = 0; j < 4; ++j) a[j] = As[A_AT(m, 4 * c + j)];              // LDS.32 x 4
#endif
}

// (THREADS, 2): ask ptxas to fit two blocks per SM, which caps a thread's
// registers at 65536 / (2 * THREADS); every layout of this file builds with
// at most 64.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_tile1d(const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    __shared__ __align__(16) float As[A_TILE_FLOATS];
    __shared__ __align__(16) float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // Warps tile the block as (BM / 16) rows x (BN / (2 TN)) columns; inside a
    // warp, lane % 16 picks the row and lane / 16 the half (TN columns each).
    const int m = (warp % (BM / 16)) * 16 + lane % 16;                 // row in the tile
    const int n0 = ((warp / (BM / 16)) * 2 + lane / 16) * TN;          // first column in the tile

    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    // Tile loads: thread tid copies column (tid % BK) of rows tid / BK + j * (THREADS / BK)
    // of the A tile, and column (tid % BN) of rows tid / BN + j * (THREADS / BN) of the B tile.
    const int a_k = tid % BK, a_m = tid / BK;
    const int b_n = tid % BN, b_k = tid / BN;
    const bool b_col_ok = col0 + b_n < N;
    // Walking pointers: a_ptr -> A[row0 + a_m][k0 + a_k], b_ptr -> B[k0 + b_k][col0 + b_n]
    // (only dereferenced when the element is inside the matrix).
    const float* a_ptr = A + (size_t)(row0 + a_m) * K + a_k;
    const float* b_ptr = B + (size_t)b_k * N + col0 + b_n;
    const size_t a_rows = (size_t)(THREADS / BK) * K;      // between a thread's A rows
    const size_t b_rows = (size_t)(THREADS / BN) * N;      // between a thread's B rows

    float acc[TN];
    #pragma unroll
    for (int t = 0; t < TN; ++t) acc[t] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool a_k_ok = k0 + a_k < K;
        #pragma unroll
        for (int j = 0; j < BM * BK / THREADS; ++j) {
            const int mm = a_m + j * (THREADS / BK);
            As[A_AT(mm, a_k)] = (a_k_ok && row0 + mm < M) ? a_ptr[j * a_rows] : 0.0f;
        }
        #pragma unroll
        for (int j = 0; j < BK * BN / THREADS; ++j) {
            const int kk = b_k + j * (THREADS / BN);
            Bs[kk * BN + b_n] = (b_col_ok && k0 + kk < K) ? b_ptr[j * b_rows] : 0.0f;
        }
        a_ptr += BK;
        b_ptr += (size_t)BK * N;
        __syncthreads();

        #pragma unroll
        for (int c = 0; c < BK / 4; ++c) {
            float a[4];
            read_a4(As, m, c, a);
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float* brow = Bs + (4 * c + j) * BN + n0;
                #pragma unroll
                for (int q = 0; q < TN / 4; ++q) {
                    const float4 b = *reinterpret_cast<const float4*>(brow + 4 * q);   // broadcast per half-warp
                    acc[4 * q + 0] += a[j] * b.x;
                    acc[4 * q + 1] += a[j] * b.y;
                    acc[4 * q + 2] += a[j] * b.z;
                    acc[4 * q + 3] += a[j] * b.w;
                }
            }
        }
        __syncthreads();
    }

    const int gm = row0 + m;
    if (gm < M) {
        #pragma unroll
        for (int t = 0; t < TN; ++t) {
            const int gn = col0 + n0 + t;
            if (gn < N) {
                C[(size_t)gm * N + gn] = acc[t];
                RECORD((size_t)gm * N + gn);
            }
        }
    }
}

// ---------------------------------------------------------------- bank probe
// One warp (launch: grid = 1, block = 32). Fills an 8 KB shared buffer (64
// row-wise STS.32, conflict-free), then each lane loads PROBE_BYTES (4, 8 or
// 16) bytes at word offset offsets[lane] (a multiple of PROBE_BYTES / 4,
// < 2048), `reps` times. The asm volatile load is one LDS instruction the
// compiler may neither hoist nor merge. out[lane] keeps the result alive.
#ifndef PROBE_BYTES
#define PROBE_BYTES 4
#endif

extern "C" __global__ void __launch_bounds__(32)
bank_probe(const int* __restrict__ offsets, float* __restrict__ out, int reps)
{
    __shared__ __align__(16) float buf[2048];
    for (int i = threadIdx.x; i < 2048; i += 32) buf[i] = (float)i;
    __syncthreads();
    const unsigned addr = (unsigned)__cvta_generic_to_shared(buf + offsets[threadIdx.x]);
    float s = 0.0f;
    for (int r = 0; r < reps; ++r) {
#if PROBE_BYTES == 16
        float x, y, z, w;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(addr));
        s += x + y + z + w;
#elif PROBE_BYTES == 8
        float x, y;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(addr));
        s += x + y;
#else
        float x;
        asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(addr));
        s += x;
#endif
    }
    out[threadIdx.x] = s;
}
