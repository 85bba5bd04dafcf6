// Heaven 2 - vectorized loads and operand layout.
//
// Computes C = A @ B in float32, row-major, as in heaven 1:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
//
// Two ideas, one kernel each, and a control.
//
// 1. sgemm_vec4: wider loads, more work per load. One thread now owns a 1 x 4
//    strip of C, C[row][4q .. 4q+3], and walks K four steps at a time:
//
//      float4 a = A[row][k .. k+3]               (one 16-byte load, LDG.128)
//      for kk in 0..3:
//        float4 b = B[k+kk][4q .. 4q+3]          (one 16-byte load)
//        acc[0..3] += a[kk] * b[0..3]            (4 FMAs)
//
//    which replaces the heaven-1 loop, for each of the 4 outputs,
//      for (k...) acc += A[row*K + k] * B[k*N + col];
//    Per 16 FMAs the thread issues 5 vector loads instead of 32 scalar ones.
//    A warp's 32 lanes read 512 contiguous bytes of one B row (coalesced) and
//    broadcast one A float4.
//    Preconditions: K % 4 == 0 and N % 4 == 0 (every float4 must be 16-byte
//    aligned: rows start at multiples of K or N floats), pointers 16-byte
//    aligned. M is free (guarded).
//
// 1b. sgemm_strip4, the control for (1): the same four outputs per thread and the same
//    loads per k step as vec4 would make with scalar loads, so that what float4 adds can be
//    told apart from what more outputs per thread add. The thread's four columns are
//    BLOCK_X apart (col0, col0 + BLOCK_X, ...), so each scalar load of a warp still reads
//    one contiguous 128-byte run of a B row:
//
//      for k in 0..K-1:
//        a = A[row][k]                           (one 4-byte load, shared by the 4 FMAs)
//        for c in 0..3:
//          acc[c] += a * B[k][col0 + c * BLOCK_X]  (one 4-byte load, one FMA)
//
//    Per 4 FMAs: 5 scalar loads (heaven 1: 8; vec4: 5 float4 loads per 16 FMAs).
//    Preconditions: none (every index is guarded).
//
// 2. sgemm_kmajor: the operand layout. B is handed over transposed, as
//    Bt = B^T (N x K, row-major, ldb = K): "K-major", each column of B
//    contiguous (in the column-major naming of BLAS and CUTLASS, the "N" of
//    a "TN" GEMM, whose A is row-major). Both dot-product operands are now
//    contiguous in k:
//
//      acc = sum over k of A[row][k] * Bt[col][k]   (float4 along k for both)
//
//    One thread, one output, as in heaven 1; x follows col.
//    Preconditions: K % 4 == 0, pointers 16-byte aligned. M, N free.
//
// Tile parameters (-D): BLOCK_X, BLOCK_Y, the block shape (default 32 x 8).
// Launch: block = (BLOCK_X, BLOCK_Y);
//   vec4, strip4: grid = (ceil(N / (4 * BLOCK_X)), ceil(M / BLOCK_Y))
//   kmajor: grid = (ceil(N / BLOCK_X),       ceil(M / BLOCK_Y))
// -DRECORD_OWNER=1 adds an `owner` output as in 01_naive.cu.

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

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
        const float4 a = *reinterpret_cast<const float4*>(a_ptr + k);
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

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_strip4(const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    const int col0 = blockIdx.x * (4 * BLOCK_X) + threadIdx.x;     // columns col0 + c * BLOCK_X
    if (row >= M) return;

    const float* a_ptr = A + (size_t)row * K;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < K; ++k) {
        const float a = a_ptr[k];
        const float* b_row = B + (size_t)k * N;
        #pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int col = col0 + c * BLOCK_X;
            if (col < N) acc[c] += a * b_row[col];
        }
    }
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
        const int col = col0 + c * BLOCK_X;
        if (col < N) {
            C[(size_t)row * N + col] = acc[c];
            RECORD((size_t)row * N + col);
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
sgemm_kmajor(const float* __restrict__ A, const float* __restrict__ Bt,
             float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (row >= M || col >= N) return;

    const float4* a4 = reinterpret_cast<const float4*>(A + (size_t)row * K);
    const float4* b4 = reinterpret_cast<const float4*>(Bt + (size_t)col * K);
    // Two independent accumulators halve the length of the dependent FMA chain.
    float acc0 = 0.f, acc1 = 0.f;
    for (int k4 = 0; k4 < K / 4; ++k4) {
        const float4 a = a4[k4], b = b4[k4];
        acc0 += a.x * b.x; acc1 += a.y * b.y;
        acc0 += a.z * b.z; acc1 += a.w * b.w;
    }
    C[(size_t)row * N + col] = acc0 + acc1;
    RECORD((size_t)row * N + col);
}
