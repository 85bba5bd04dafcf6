// Chapter 10's kernels with one of their Hopper pieces replaced: the variants
// measured in notes/hopper_tuning.md (timed with scripts/hopper_bench.py) and the
// descriptor control of the GPU suite (tests/gpu/test_hopper_gpu.py).
//
// This file is kernels/10_hopper.cu itself, same entries, same -D parameters:
// it includes kernels/hopper_sm90.cuh first, defines its own version of a
// wrapper under another name for each switch that is on, makes the kernel's
// name for that wrapper stand for it (#define), and then includes the kernel.
// With every switch at its default it builds exactly the chapter's kernels.
//
//   WAIT_SPIN=1       mbar_wait spins on mbarrier.test_wait instead of try_wait
//                     (which may suspend the thread): does a barrier completed
//                     from another SM wake its waiter late? (it did not)
//   CLUSTER_ARRIVE=1  release_slot frees the slot in every CTA of the cluster,
//                     its own included, by mapa + mbarrier.arrive.release.cluster:
//                     the pitfall chapter 10 describes (the .release.cluster
//                     qualifier makes every release a cluster-wide fence)
//   CLUSTER_ARRIVE=2  the same with plain arrives: separates the qualifier from
//                     the remote arrive to one's own CTA
//   MULTICAST=0       (rungs 4-5) the cluster launch without sharing B: each CTA
//                     loads its whole B tile and frees only its own slots
//   B_DESC_SWAP=1     the B descriptor with LBO and SBO exchanged: must fail the
//                     float64 check (the roles chapter 10 gives them are right)

#ifndef WAIT_SPIN
#define WAIT_SPIN 0
#endif
#ifndef CLUSTER_ARRIVE
#define CLUSTER_ARRIVE 0
#endif
#ifndef MULTICAST
#define MULTICAST 1
#endif
#ifndef B_DESC_SWAP
#define B_DESC_SWAP 0
#endif

#ifdef EARLY_RELEASE
#error "EARLY_RELEASE (wait_group 0, free the slot at once) is retired: its measurement is in notes/hopper_tuning.md, its code in kernels/10_hopper.cu at commit 68721ef"
#endif
#if CLUSTER_ARRIVE && !MULTICAST
#error "CLUSTER_ARRIVE needs MULTICAST=1: without multicast each CTA frees only its own slots"
#endif

#include "../hopper_sm90.cuh"

#if WAIT_SPIN
__device__ __forceinline__ void mbar_wait_spin(u32 bar, u32 parity)
{
    for (u32 done = 0; !done;)      // as mbar_wait, with test_wait, which never suspends the thread
        asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
#define mbar_wait mbar_wait_spin
#endif

#if CLUSTER_ARRIVE
// Every CTA's slot, its own included, through mapa (CLUSTER_ARRIVE 1: with .release.cluster).
__device__ __forceinline__ void release_slot_all_remote(u32 bar, u32 rank, u32 ctas)
{
    (void)rank;
    for (u32 c = 0; c < ctas; ++c) {
        if (ctas == 1) {
            mbar_arrive(bar);
        } else if (CLUSTER_ARRIVE == 1) {
            asm volatile("{\n .reg .b32 remote;\n"
                         " mapa.shared::cluster.u32 remote, %0, %1;\n"
                         " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n"
                         :: "r"(bar), "r"(c) : "memory");
        } else {
            mbar_arrive_cluster(bar, c);
        }
    }
}
#define release_slot release_slot_all_remote
#endif

#if !MULTICAST
// Each CTA loads its whole B tile, and only its own consumers release its slots.
__device__ __forceinline__ void tma_load_b_tile_own(u32 dst, const TmaDesc* tm, int n0, int k0, u32 bar,
                                                    int boxes, u32 rank, int ctas)
{
    (void)ctas;
    tma_load_b_tile(dst, tm, n0, k0, bar, boxes, rank, 1);
}
__device__ __forceinline__ void release_slot_own(u32 bar, u32 rank, u32 ctas)
{
    (void)ctas;
    (void)rank;
    mbar_arrive(bar);
}
__device__ __forceinline__ void init_ring_own(u32 full, u32 empty, int stages, u32 consumers, u32 ctas)
{
    (void)ctas;
    init_ring(full, empty, stages, consumers, 1);
}
#define tma_load_b_tile tma_load_b_tile_own
#define release_slot release_slot_own
#define init_ring init_ring_own
#endif

#if B_DESC_SWAP
__device__ __forceinline__ u64 desc_b_swapped(u32 addr) { return smem_desc(addr, 1024, BOX_BYTES); }
#define desc_b desc_b_swapped
#endif

#include "../10_hopper.cu"
