// Heaven 1 - the naive GEMM, and why thread order decides coalescing.
//
// Computes C = A @ B in float32, all row-major:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
// One thread computes one element of C with a plain dot product over K:
//
//   for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
//
// The two kernels below differ in ONE thing: which of (row, col) follows
// threadIdx.x, the index that changes fastest inside a warp.
//
//   sgemm_naive_xfirst   row = x index. The 32 lanes of a warp hold 32
//                        different rows: A[row*K + k] is 32 loads K floats
//                        apart (32 sectors per request), C is written with
//                        stride N. B[k*N + col] is one address (broadcast).
//   sgemm_naive_yfirst   col = x index. The 32 lanes read 32 consecutive
//                        floats of one B row (one 128-byte line), broadcast
//                        one A element, and write 32 consecutive floats of C.
//
// Preconditions: none on the shape (any M, N, K >= 1; edges are guarded).
// Tile parameters (-D): BLOCK_X, BLOCK_Y, the block shape (default 32 x 8).
// Launch: block = (BLOCK_X, BLOCK_Y);
//   xfirst: grid = (ceil(M / BLOCK_X), ceil(N / BLOCK_Y))
//   yfirst: grid = (ceil(N / BLOCK_X), ceil(M / BLOCK_Y))
//
// Instrumented build (-DRECORD_OWNER=1): each thread also writes
//   owner[row * N + col] = blockLinear * 1024 + threadLinear
// so a test can check which block and thread really computed each element.

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_naive_xfirst(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int row = blockIdx.x * BLOCK_X + threadIdx.x;   // fast index -> rows: uncoalesced
    const int col = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
    RECORD((size_t)row * N + col);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_naive_yfirst(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;   // fast index -> columns: coalesced
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
    RECORD((size_t)row * N + col);
}
