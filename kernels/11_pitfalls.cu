// Appendix - pitfalls: three small kernels that are wrong on purpose, each beside its fix.
//
// Every pitfall here is one line (or one brace) away from a correct kernel, and
// every one of them compiles without a warning. What catches them is a check:
//
//   pitfall                           broken entry              fixed entry           the check that catches it
//   a double buffer without the       dbuf_gemm_broken          dbuf_gemm_fixed       compute-sanitizer racecheck;
//     barrier that guards it                                                          the float64 reference (when
//                                                                                     the warps drift apart)
//   __syncthreads() inside the        guard_gemm_broken         guard_gemm_fixed      the float64 reference (synccheck
//     bounds check                                                                    found nothing on an H200)
//   a transpose that forgets to       transpose_unswapped       transpose_swapped     the exact reference (NaN-poisoned
//     swap its block coordinates                                                      output, out == in.T)
//
// The other pitfalls of the appendix need no new kernel: a misaligned float4
// view uses chapter 2's `sgemm_vec4`, the fp16 accumulator chapter 6's WMMA
// kernel, the __launch_bounds__ spill chapter 5's `cp_async`, and the timing
// and TF32 pitfalls are about the host side (book/11_pitfalls.ipynb).
//
// GEMM entries compute C = A @ B in float32, all row-major:
//   A: M x K (lda = K)   B: K x N (ldb = N)   C: M x N (ldc = N)
// Transpose entries compute out[c][r] = in[r][c] for a ROWS x COLS `in`.
// Preconditions: none on the shape (any M, N, K, ROWS, COLS >= 1); the fixed
// kernels guard every edge. The broken GEMM of pitfall 2 is only wrong when M or
// N is not a multiple of TILE: that is exactly when its guard diverges.
//
// Tile parameters (-D): TILE, the side of the GEMMs' square tile (default 16:
// 256 threads per block); BLOCK_ROWS, the transposes' threads in y (default 8:
// their 32 x 32 tile is moved by 32 x 8 threads; chapter 0 uses 64 x 64 tiles).
// Launch (helpers/chapters/ch11_pitfalls.py):
//   GEMM:      block = (TILE, TILE), grid = (ceil(N / TILE), ceil(M / TILE))
//   transpose: block = (32, BLOCK_ROWS), grid = (ceil(COLS / 32), ceil(ROWS / 32))
// Static shared memory: GEMM 2 (or 4, double-buffered) * TILE * TILE * 4 bytes;
// transpose 32 * 33 * 4 bytes.

#ifndef TILE
#define TILE 16
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

static_assert(TILE * TILE <= 1024, "a GEMM block of TILE x TILE threads must fit in 1024 threads");
static_assert(32 % BLOCK_ROWS == 0, "the transposes move 32 / BLOCK_ROWS elements per thread");

// ============================================================== pitfall 1
// A double buffer (heaven 5's warptile_db, reduced to one output per thread).
// Two copies of each shared tile: while the block multiplies tile t from
// buffer t % 2, its threads already hold tile t + 1 in registers and store it
// into the other buffer. One barrier per iteration keeps both hazards away:
//
//   iteration t:   read  buf[t % 2]          (the products)
//                  write buf[(t + 1) % 2]    (the next tile)
//                  __syncthreads()           <- this one
//
// * read-after-write: iteration t + 1 reads buf[(t + 1) % 2], which other
//   threads wrote in iteration t; without the barrier a fast warp reads a
//   slot that a slow warp has not stored yet (it still holds tile t - 1);
// * write-after-read: iteration t + 1 writes buf[t % 2], which slow warps may
//   still be reading for tile t.
//
// Leaving the barrier out is tempting ("the buffers are different, so there
// is nothing to wait for"), and the kernel often still gives the right answer
// on a small test: whether it does depends on how the warps happen to be
// scheduled. racecheck reports every such hazard whatever the schedule.
template <bool BARRIER>
__device__ __forceinline__ void dbuf_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;           // row of A and C this thread owns
    const int col = blockIdx.x * TILE + tx;           // column of B and C
    const int tiles = (K + TILE - 1) / TILE;

    // Tile t of A: A[blockRow][t*TILE .. t*TILE + TILE); of B: B[t*TILE ..][blockCol]. Out of range: 0.
    auto load_a = [&](int t) { int k = t * TILE + tx; return (row < M && k < K) ? A[(size_t)row * K + k] : 0.0f; };
    auto load_b = [&](int t) { int k = t * TILE + ty; return (col < N && k < K) ? B[(size_t)k * N + col] : 0.0f; };

    As[0][ty][tx] = load_a(0);
    Bs[0][ty][tx] = load_b(0);
    __syncthreads();                                  // tile 0 is complete

    float acc = 0.0f;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        float a_next = 0.0f, b_next = 0.0f;
        if (t + 1 < tiles) {                          // global loads in flight during the products
            a_next = load_a(t + 1);
            b_next = load_b(t + 1);
        }
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[cur][ty][k] * Bs[cur][k][tx];
        if (t + 1 < tiles) {
            As[cur ^ 1][ty][tx] = a_next;
            Bs[cur ^ 1][ty][tx] = b_next;
        }
        if (BARRIER)
            __syncthreads();                          // FIXED: tile t+1 stored, tile t no longer read
        // BROKEN (BARRIER = false): no barrier here; the next iteration reads
        // buf[cur ^ 1] before every thread has stored it, and overwrites
        // buf[cur] while other warps still multiply from it.
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

extern "C" __global__ void __launch_bounds__(TILE * TILE)
dbuf_gemm_fixed(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K)
{
    dbuf_gemm<true>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(TILE * TILE)
dbuf_gemm_broken(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K)
{
    dbuf_gemm<false>(A, B, C, M, N, K);
}

// ============================================================== pitfall 2
// __syncthreads() inside a branch. Heaven 3's tiled GEMM, written the
// "obvious" way: threads outside C have nothing to compute, so wrap the
// whole k loop in the bounds check.
//
//   BROKEN                                   FIXED (heaven 3)
//   if (row < M && col < N) {                for (k0 ...) {
//       for (k0 ...) {                           As[ty][tx] = row < M && ... ? A[..] : 0;
//           As[ty][tx] = A[..];                  Bs[ty][tx] = col < N && ... ? B[..] : 0;
//           Bs[ty][tx] = B[..];                  __syncthreads();
//           __syncthreads();   <- divergent      acc += ...;
//           acc += ...;                          __syncthreads();
//           __syncthreads();                 }
//       }                                    if (row < M && col < N) C[..] = acc;
//       C[..] = acc;
//   }
//
// Two things go wrong in a block that overhangs C (M or N not a multiple of
// TILE). The barrier is reached by only some of the block's threads, which
// the CUDA programming guide leaves undefined: the block may hang, or the
// barrier may release early. And the threads that skipped the loop never
// store their share of the tiles, yet the others read it: the products of an
// edge block use whatever an earlier block left in shared memory. Blocks that
// lie wholly inside C are fine, so a test on a multiple of the tile passes.
extern "C" __global__ void __launch_bounds__(TILE * TILE)
guard_gemm_broken(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    if (row < M && col < N) {                         // BROKEN: the barriers below are inside this branch
        float acc = 0.0f;
        for (int k0 = 0; k0 < K; k0 += TILE) {
            As[ty][tx] = (k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
            Bs[ty][tx] = (k0 + ty < K) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
            __syncthreads();
            #pragma unroll
            for (int k = 0; k < TILE; ++k)
                acc += As[ty][k] * Bs[k][tx];
            __syncthreads();
        }
        C[(size_t)row * N + col] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(TILE * TILE)
guard_gemm_fixed(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {            // FIXED: every thread loops, loads (0 outside) and waits
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)                           // only the store is guarded
        C[(size_t)row * N + col] = acc;
}

// ============================================================== pitfall 3
// Chapter 0's shared-memory transpose (with its +1 padding). A block reads the
// tile at block coordinates (bx, by) of `in` and must write it, transposed,
// at (by, bx) of `out`. The second half recomputes the thread's coordinates
// for `out`; copying the first half's two lines unchanged is the slip.
//
//   BROKEN                                   FIXED
//   c = blockIdx.x * TILE + threadIdx.x;     c = blockIdx.y * TILE + threadIdx.x;
//   r = blockIdx.y * TILE + threadIdx.y;     r = blockIdx.x * TILE + threadIdx.y;
//
// Every tile is transposed correctly, and put back in its own place: only the
// diagonal tiles of a square matrix come out right. The guards still use the
// dimensions of `out`, so nothing is written out of bounds; on a non-square
// matrix part of `out` is never written at all (NaN in a poisoned output).
template <bool SWAP>
__device__ __forceinline__ void transpose_tile(float* __restrict__ out, const float* __restrict__ in,
                                               int ROWS, int COLS)
{
    __shared__ float tile[32][32 + 1];
    int c = blockIdx.x * 32 + threadIdx.x;            // column of `in`
    int r = blockIdx.y * 32 + threadIdx.y;            // row of `in`
    #pragma unroll
    for (int j = 0; j < 32; j += BLOCK_ROWS)
        if (c < COLS && r + j < ROWS)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(r + j) * COLS + c];
    __syncthreads();
    if (SWAP) {
        c = blockIdx.y * 32 + threadIdx.x;            // FIXED: column of `out` = row of `in`
        r = blockIdx.x * 32 + threadIdx.y;            //        row of `out` = column of `in`
    } else {
        c = blockIdx.x * 32 + threadIdx.x;            // BROKEN: the coordinates of `in`, reused
        r = blockIdx.y * 32 + threadIdx.y;
    }
    #pragma unroll
    for (int j = 0; j < 32; j += BLOCK_ROWS)
        if (c < ROWS && r + j < COLS)
            out[(size_t)(r + j) * ROWS + c] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void __launch_bounds__(32 * BLOCK_ROWS)
transpose_swapped(float* __restrict__ out, const float* __restrict__ in, int ROWS, int COLS)
{
    transpose_tile<true>(out, in, ROWS, COLS);
}

extern "C" __global__ void __launch_bounds__(32 * BLOCK_ROWS)
transpose_unswapped(float* __restrict__ out, const float* __restrict__ in, int ROWS, int COLS)
{
    transpose_tile<false>(out, in, ROWS, COLS);
}
