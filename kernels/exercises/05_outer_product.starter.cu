// Exercise 5.1 - the outer product over a thread tile (chapter 5).
//
// C = A @ B in float32, row-major: A is M x K, B is K x N, C is M x N, any
// M, N, K >= 1. A block of (BM / TM) * (BN / TN) threads computes a BM x BN
// tile of C; thread (tr, tc) owns the TM x TN thread tile whose rows start at
// tr * TM and columns at tc * TN inside it. The A tile is stored transposed,
// As[k][m] with rows of A_LD = BM + 4 floats, so a thread's TM values of one
// column k are contiguous; Bs[k][n] holds the B tile as it is.
// Launch: block = ((BM / TM) * (BN / TN)), grid = (ceil(N / BN), ceil(M / BM)).
//
// The step: for each k of the tile, load the thread's TM values of A and TN
// values of B into registers (float4 at a time) and add their outer product,
// TM * TN independent FMAs from TM + TN shared-memory values.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define A_LD (BM + 4)
#define THREADS ((BM / TM) * (BN / TN))
#include "../instrument.cuh"

// dst[0..3] = the float4 at p (16-byte aligned shared memory): one LDS.128.
__device__ __forceinline__ void load4(float* dst, const float* p)
{
    const float4 v = *reinterpret_cast<const float4*>(p);
    dst[0] = v.x; dst[1] = v.y; dst[2] = v.z; dst[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_reg2d(const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
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
        for (int j = 0; j < BM * BK / THREADS; ++j) {
            const int m = a_m + j * (THREADS / BK), gm = row0 + m;
            As[a_k * A_LD + m] = (gm < M && k0 + a_k < K) ? A[(size_t)gm * K + k0 + a_k] : 0.0f;
        }
        #pragma unroll
        for (int j = 0; j < BK * BN / THREADS; ++j) {
            const int k = b_k + j * (THREADS / BN), gn = col0 + b_n;
            Bs[k * BN + b_n] = (gn < N && k0 + k < K) ? B[(size_t)(k0 + k) * N + gn] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            // TODO: load a[0 .. TM) = As[k][tr * TM + i] and b[0 .. TN) = Bs[k][tc * TN + j]
            // (load4 reads four at a time), then acc[i][j] += a[i] * b[j] for every i, j.
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
}
