// Heaven 3 - shared-memory tiling: load a tile once, use it TILE times.
//
// Computes C = A @ B in float32, all row-major:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
//
// In heaven 1 every thread streams its own row of A and column of B from
// global memory: a block of TILE x TILE threads reads each A element TILE
// times (once per thread of the row) and each B element TILE times. Here the
// block first copies a TILE x TILE tile of A and one of B into shared memory,
// one element per thread, and then every thread reads its TILE products from
// there. The k loop advances one tile at a time:
//
//   for (int k0 = 0; k0 < K; k0 += TILE) {
//       As[ty][tx] = A[row][k0 + tx];        // one element each, coalesced
//       Bs[ty][tx] = B[k0 + ty][col];
//       __syncthreads();                      // the tiles are complete
//       for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
//       __syncthreads();                      // nobody still reads them
//   }
//
// Global traffic falls by a factor TILE (see helpers/models/tiles.py: reuse()).
// Shared-memory reads in the inner loop: As[ty][k] is the same address for
// every lane of a row of the block (a broadcast), Bs[k][tx] is 32 (or TILE)
// consecutive floats: no bank conflicts for TILE = 8, 16 or 32.
//
// Preconditions: none on the shape (any M, N, K >= 1). Out-of-range tile
// elements are loaded as 0, so the inner loop needs no test; only the final
// store is guarded. Threads outside C still load and synchronize.
// Tile parameter (-D): TILE (default 32; the book's slider offers 8, 16, 32).
// Launch: block = (TILE, TILE), grid = (ceil(N / TILE), ceil(M / TILE)).
// Shared memory: 2 * TILE * TILE * 4 bytes, static (8 KB for TILE = 32).
//
// Instrumented build (-DRECORD_OWNER=1): an extra `int* owner` argument where
// each thread writes blockLinear * 1024 + threadLinear for the C element it
// computes (blockLinear = blockIdx.y * gridDim.x + blockIdx.x,
// threadLinear = threadIdx.y * TILE + threadIdx.x).

#ifndef TILE
#define TILE 32
#endif
#include "instrument.cuh"     // OWNER_PARAM, RECORD(idx): the -DRECORD_OWNER=1 build

static_assert(TILE * TILE <= 1024, "a block of TILE x TILE threads must fit in 1024 threads");

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

    // Walk two pointers instead of recomputing row * K + k0 + tx each step:
    //   a_ptr -> A[row][k0 + tx],  b_ptr -> B[k0 + ty][col].
    // (Only dereferenced when in range.)
    const float* a_ptr = A + (size_t)(row_ok ? row : 0) * K + tx;
    const float* b_ptr = B + (size_t)ty * N + (col_ok ? col : 0);
    const size_t b_step = (size_t)TILE * N;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row_ok && k0 + tx < K) ? *a_ptr : 0.0f;
        Bs[ty][tx] = (col_ok && k0 + ty < K) ? *b_ptr : 0.0f;
        a_ptr += TILE;
        b_ptr += b_step;
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row_ok && col_ok) {
        C[(size_t)row * N + col] = acc;
        RECORD((size_t)row * N + col);
    }
}
