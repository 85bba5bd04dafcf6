// Chapter 0 - the transpose warm-up: how close to a plain copy can we get?
//
// Computes   out[c][r] = in[r][c]   for a ROWS x COLS float32 matrix `in`
// (row-major, leading dimension COLS); `out` is COLS x ROWS (leading dimension
// ROWS). A transpose does no arithmetic at all, so its only job is to move
// 2 * ROWS * COLS * 4 bytes; the best it can do is run as fast as a copy.
//
// Four kernels, one step each:
//   copy_tiled        the upper bound: same tiles, same threads, no transpose
//   transpose_naive   reads rows (coalesced), writes columns (strided by ROWS)
//   transpose_shared  stages a TILE x TILE tile in shared memory so that both
//                     the global read and the global write are row-wise;
//                     the column read of the tile hits one bank 32 times
//   (same entry, -DPAD=1)  pads each tile row by one float: conflict-free
//
// Preconditions: none on the shape (any ROWS, COLS >= 1; edges are guarded).
// Tile parameters (compile-time, -D; the defaults are the catalog's, which all
// four entries share):
//   TILE        side of the square tile a block moves (default 64)
//   BLOCK_ROWS  threads per block in y; each thread moves TILE / BLOCK_ROWS
//               elements (default 4, so 64 x 4 = 256 threads per block)
//   PAD         extra floats per shared tile row (default 0; transpose_padded: 1)
// Launch: grid = (ceil(COLS / TILE), ceil(ROWS / TILE)), block = (TILE, BLOCK_ROWS).

#ifndef TILE
#define TILE 64
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 4
#endif
#ifndef PAD
#define PAD 0
#endif

static_assert(TILE % BLOCK_ROWS == 0, "TILE must be a multiple of BLOCK_ROWS");

// Upper bound. Each thread copies TILE / BLOCK_ROWS elements of one column of
// the tile; a warp (32 consecutive threadIdx.x) touches 32 consecutive floats
// of one row: one 128-byte line per load and per store.
extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
copy_tiled(float* __restrict__ out, const float* __restrict__ in, int ROWS, int COLS)
{
    const int c = blockIdx.x * TILE + threadIdx.x;
    const int r0 = blockIdx.y * TILE + threadIdx.y;
    if (c >= COLS) return;
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = r0 + j;
        if (r < ROWS) out[(size_t)r * COLS + c] = in[(size_t)r * COLS + c];
    }
}

// Naive: the read in[r][c] is row-wise (coalesced), but the write out[c][r]
// puts consecutive lanes ROWS floats apart: 32 separate 32-byte sectors per
// warp store, each carrying 4 useful bytes.
extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_naive(float* __restrict__ out, const float* __restrict__ in, int ROWS, int COLS)
{
    const int c = blockIdx.x * TILE + threadIdx.x;
    const int r0 = blockIdx.y * TILE + threadIdx.y;
    if (c >= COLS) return;
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int r = r0 + j;
        if (r < ROWS) out[(size_t)c * ROWS + r] = in[(size_t)r * COLS + c];
    }
}

// Shared-memory tile. Phase 1 reads a TILE x TILE tile row-wise into `tile`.
// Phase 2 writes it out row-wise too, but reading `tile` by column:
//     tile[threadIdx.x][threadIdx.y + j]
// Lane x reads address x * (TILE + PAD) + const. With PAD = 0 and TILE a
// multiple of 32 every lane of the warp lands in the same bank (32-way conflict: 32
// wavefronts for one instruction). PAD = 1 shifts row x by x banks, so the 32
// lanes hit 32 different banks (1 wavefront).
extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_shared(float* __restrict__ out, const float* __restrict__ in, int ROWS, int COLS)
{
    __shared__ float tile[TILE][TILE + PAD];

    int c = blockIdx.x * TILE + threadIdx.x;          // column of `in`
    int r = blockIdx.y * TILE + threadIdx.y;          // row of `in`
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (c < COLS && r + j < ROWS)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(r + j) * COLS + c];

    __syncthreads();  // the whole tile must be in shared memory before anyone reads a column

    // Swap the block's role: now threadIdx.x walks a row of `out`, i.e. a
    // column of the tile.
    c = blockIdx.y * TILE + threadIdx.x;              // column of `out` (= row of `in`)
    r = blockIdx.x * TILE + threadIdx.y;              // row of `out` (= column of `in`)
    #pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (c < ROWS && r + j < COLS)
            out[(size_t)(r + j) * ROWS + c] = tile[threadIdx.x][threadIdx.y + j];
}
