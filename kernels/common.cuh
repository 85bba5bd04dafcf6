// common.cuh - what the kernels of chapters 5 to 9 share: the cp.async copy
// (chapter 5 introduces it) and the grouped order of block tiles.
//
// Every function is a __device__ __forceinline__ wrapper: it compiles to the
// instructions written in it and nothing else, so a kernel that calls it builds
// exactly as if the lines were written in its body. The file needs no CUDA header
// (chapter 9's kernel includes none); helpers.runtime.compile pastes it where a
// kernel #includes it, since NVRTC has no include path.
#ifndef GEMM_BOOK_COMMON_CUH
#define GEMM_BOOK_COMMON_CUH

// The 32-bit shared-memory address of a generic pointer into shared memory,
// the form the .shared PTX instructions below take.
__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// ---------------------------------------------------------------- cp.async (sm_80)
// cp.async.cg.shared.global copies 16 bytes from global to shared memory without
// passing through registers, and the thread goes on at once (the copy runs in the
// background; .cg: cached in L2 only). Of the 16 bytes, the first src_bytes are
// read and the rest written as zeros; src_bytes = 0 reads nothing (src must still
// be a valid address): that is how a tile that overhangs the matrix fills up with
// zeros without a branch. It replaces a round trip through a register,
//
//   uint4 v = src_bytes ? *(const uint4*)src : make_uint4(0, 0, 0, 0);
//   *(uint4*)dst_generic = v;                    // waits for the load first
//
// dst is a shared-memory address (smem_u32) and 16-byte aligned, src 16-byte aligned.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// The same, dst given as a generic pointer into shared memory.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes)
{
    cp_async16(smem_u32(dst), src, src_bytes);
}

// The copies a thread issued since its last commit form one group; a kernel commits
// one group per tile it requests (an empty group keeps the count when there is none).
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N_PENDING of this thread's committed groups are still in
// flight: with one group per tile, waiting for N_PENDING = STAGES - 2 means the
// oldest tile in flight has landed. Only this thread's copies are waited for: a
// __syncthreads() after it makes every thread's copies visible to the block.
template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N_PENDING) : "memory"); }

// ---------------------------------------------------------------- block order
// Tile number pid -> (tile row pid_m, tile column pid_n) of a grid_m x grid_n grid
// of C tiles, walked group_m tile rows at a time, column by column within a group:
//
//   pid:  0  4  8 12 | 16 ...        the plain order would be
//         1  5  9 13 | 17            pid_m = pid / grid_n, pid_n = pid % grid_n
//         2  6 10 14 | ...           (row after row)
//         3  7 11 15 |               (group_m = 4)
//
// Blocks that run at the same time then read the same few panels of A and B,
// which stay in L2. The last group may have fewer than group_m rows.
__device__ __forceinline__ void tile_coords(int pid, int grid_m, int grid_n, int group_m, int& pid_m, int& pid_n)
{
    const int per_group = group_m * grid_n;
    const int first_m = (pid / per_group) * group_m;
    const int group_h = min(grid_m - first_m, group_m);
    pid_m = first_m + (pid % per_group) % group_h;
    pid_n = (pid % per_group) / group_h;
}

#endif  // GEMM_BOOK_COMMON_CUH
