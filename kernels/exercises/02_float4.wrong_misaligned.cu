// Exercise 2.1 - the float4 loads (chapter 2).
//
// C = A @ B in float32, row-major: A is M x K, B is K x N, C is M x N.
// One thread computes a 1 x 4 strip of C, C[row][col .. col+3], and walks K
// four steps at a time. Preconditions (checked before the launch): K % 4 == 0,
// N % 4 == 0, pointers 16-byte aligned, so every float4 below is aligned.
// Launch: block = (BLOCK_X, BLOCK_Y), grid = (ceil(N / (4 BLOCK_X)), ceil(M / BLOCK_Y)).
//
// The step: per four k, one 16-byte load of A[row][k .. k+3] and four 16-byte
// loads of B[k+kk][col .. col+3], then 16 FMAs.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#include "../instrument.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_vec4(const float* __restrict__ A, const float* __restrict__ B,
           float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int col = 4 * (blockIdx.x * BLOCK_X + threadIdx.x);   // first of 4 columns
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row >= M || col >= N) return;

    const float* a_ptr = A + (size_t)row * K;
    const float* b_ptr = B + col;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int k = 0; k < K; k += 4) {
        const float4 a = *reinterpret_cast<const float4*>(a_ptr + k + 1);  // WRONG ON PURPOSE: not 16-byte aligned
        const float av[4] = {a.x, a.y, a.z, a.w};
        #pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const float4 b = *reinterpret_cast<const float4*>(b_ptr + (size_t)(k + kk) * N);
            acc.x += av[kk] * b.x;
            acc.y += av[kk] * b.y;
            acc.z += av[kk] * b.z;
            acc.w += av[kk] * b.w;
        }
    }
    *reinterpret_cast<float4*>(C + (size_t)row * N + col) = acc;   // one 16-byte store
    RECORD((size_t)row * N + col + 0); RECORD((size_t)row * N + col + 1);
    RECORD((size_t)row * N + col + 2); RECORD((size_t)row * N + col + 3);
}
