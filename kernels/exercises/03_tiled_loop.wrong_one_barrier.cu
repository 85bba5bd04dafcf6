// Exercise 3.1 - the tiled loop and its two barriers (chapter 3).
//
// C = A @ B in float32, row-major: A is M x K, B is K x N, C is M x N, any
// M, N, K >= 1. A block of TILE x TILE threads computes a TILE x TILE tile of C,
// one element per thread. Launch: block = (TILE, TILE), grid = (ceil(N / TILE),
// ceil(M / TILE)); 2 * TILE * TILE floats of static shared memory.
//
// The step: the loop over k-tiles. Each thread copies one element of the A tile
// and one of the B tile into shared memory (0 outside the matrices, so the
// inner loop needs no test), the block waits until both tiles are complete,
// every thread adds its TILE products, and the block waits again before the
// next copy overwrites tiles that slower threads may still be reading.
#ifndef TILE
#define TILE 32
#endif
#include "../instrument.cuh"

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_smem_tiled(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K OWNER_PARAM)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;          // row of A and C this thread owns
    const int col = blockIdx.x * TILE + tx;          // column of B and C
    const bool row_ok = row < M, col_ok = col < N;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row_ok && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (col_ok && k0 + ty < K) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();                             // both tiles are complete

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        // WRONG ON PURPOSE: no barrier here; the next copy may overwrite a tile still read.
    }
    if (row_ok && col_ok) {
        C[(size_t)row * N + col] = acc;
        RECORD((size_t)row * N + col);
    }
}
