// Exercise 4.1 - the XOR swizzle of the A tile (chapter 4).
//
// C = A @ B in float32, row-major: A is M x K, B is K x N, C is M x N, any
// M, N, K >= 1. The chapter's 1-D tile kernel: a block of BM * BN / TN threads
// computes a BM x BN tile of C, each thread TN outputs of one row; lanes 0-15
// of a warp own 16 consecutive rows, so the warp reads the A tile down a column,
// four k at a time (one float4 per lane). Launch: block = (BM * BN / TN),
// grid = (ceil(N / BN), ceil(M / BM)).
//
// The step: a_at(m, k), where element A[m][k] of the BM x BK tile sits in
// shared memory. Row-major (m * BK + k) puts the 16 rows a column read touches
// on the same few banks. The swizzle keeps rows unpadded and moves each 16-byte
// chunk of row m to chunk c ^ f(m): float4 reads stay aligned (a chunk moves
// whole), and the rows of one read spread over all 32 banks.
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
#define THREADS (BM * BN / TN)
#include "../instrument.cuh"

static_assert(BK == 16 || BK == 32, "the swizzle is written for BK = 16 or 32");

// Float offset of A[m][k] in the A tile (BM rows of BK floats, no padding).
__device__ __forceinline__ int a_at(int m, int k)
{
    const int f = ((m * BK / 32) % (BK / 4)) * 4;   // chunk shift of row m, in floats
    return m * BK + (k ^ f);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_tile1d(const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    __shared__ __align__(16) float As[BM * BK];
    __shared__ __align__(16) float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int m = (warp % (BM / 16)) * 16 + lane % 16;                 // row in the tile
    const int n0 = ((warp / (BM / 16)) * 2 + lane / 16) * TN;          // first column in the tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int a_k = tid % BK, a_m = tid / BK;
    const int b_n = tid % BN, b_k = tid / BN;

    float acc[TN];
    #pragma unroll
    for (int t = 0; t < TN; ++t) acc[t] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        #pragma unroll
        for (int j = 0; j < BM * BK / THREADS; ++j) {
            const int mm = a_m + j * (THREADS / BK), gm = row0 + mm;
            As[a_at(mm, a_k)] = (gm < M && k0 + a_k < K) ? A[(size_t)gm * K + k0 + a_k] : 0.0f;
        }
        #pragma unroll
        for (int j = 0; j < BK * BN / THREADS; ++j) {
            const int kk = b_k + j * (THREADS / BN), gn = col0 + b_n;
            Bs[kk * BN + b_n] = (gn < N && k0 + kk < K) ? B[(size_t)(k0 + kk) * N + gn] : 0.0f;
        }
        __syncthreads();

        #pragma unroll
        for (int c = 0; c < BK / 4; ++c) {
            const float4 a4 = *reinterpret_cast<const float4*>(As + a_at(m, 4 * c));   // LDS.128
            const float a[4] = {a4.x, a4.y, a4.z, a4.w};
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float* brow = Bs + (4 * c + j) * BN + n0;
                #pragma unroll
                for (int q = 0; q < TN / 4; ++q) {
                    const float4 b = *reinterpret_cast<const float4*>(brow + 4 * q);
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
