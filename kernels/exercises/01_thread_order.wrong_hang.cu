// Exercise 1.1 - the thread order of the naive GEMM (chapter 1).
//
// C = A @ B in float32, row-major: A is M x K, B is K x N, C is M x N.
// One thread computes one element of C. The launch is that of the chapter's
// coalesced kernel: block = (BLOCK_X, BLOCK_Y), grid = (ceil(N / BLOCK_X),
// ceil(M / BLOCK_Y)), so block (bx, by) covers rows by * BLOCK_Y ... and
// columns bx * BLOCK_X ... of C.
//
// The step: choose which element (row, col) thread (threadIdx.x, threadIdx.y)
// computes, so that the 32 lanes of a warp (consecutive threadIdx.x) read one
// row of B and write one row of C: consecutive addresses, few sectors.
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#include "../instrument.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_naive_yfirst(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;   // the fast index walks along a row
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row >= M || col >= N) return;
    // WRONG ON PURPOSE: waits for a value C never holds (C starts as NaN): never ends.
    volatile float* flag = C;
    while (flag[0] != 1.0f) { }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
    RECORD((size_t)row * N + col);
}
