// hopper_sm90.cuh - the Hopper instructions of chapter 10 (sm_90a), one small
// wrapper per PTX instruction: mbarriers, TMA loads and stores (with multicast),
// wgmma and its shared-memory descriptors, setmaxnreg, cluster rank and barrier.
// kernels/10_hopper.cu explains what each one is for (its items 1-4); each wrapper
// here says what the instruction does.
//
// The file needs only BF16 (0: fp16, 1: bf16; the wgmma operand type) from the
// including file, and nothing of its tile parameters, so an experiment can include
// it first and stand its own version in for one of these pieces before it includes
// the kernel (kernels/experiments/10_hopper_variants.cu). NVRTC has no cuda.h: the
// tensor map is an opaque 128-byte struct here.
#ifndef GEMM_BOOK_HOPPER_SM90_CUH
#define GEMM_BOOK_HOPPER_SM90_CUH

typedef unsigned int u32;
typedef unsigned long long u64;

// The 128-byte CUtensorMap, opaque to the kernel (NVRTC has no cuda.h).
struct __align__(64) TmaDesc { u64 d[16]; };

// One TMA box of the kernels: 64 rows of 128 bytes (64 16-bit elements), one
// 128-byte swizzle atom wide: 8 KB.
#define BOX_BYTES (64 * 128)

#if BF16
#define WG_AB "bf16"
#else
#define WG_AB "f16"
#endif

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// ---------------------------------------------------------------- mbarriers
// mbarrier.init: arrival count `count`, phase 0 in progress.
__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
// Arrive once and add `bytes` to the transaction count the phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
// Plain arrive on a barrier of this CTA.
__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// Arrive on the barrier at the same offset in CTA `cta` of this cluster: mapa
// turns this CTA's shared-memory address into that CTA's. The arrive has the
// default .release.cta semantics (a .release.cluster arrive is enough for
// correctness too, and adds a fence to every slot release; that build is
// kernels/experiments/10_hopper_variants.cu with CLUSTER_ARRIVE=1).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta)
{
    asm volatile("{\n .reg .b32 remote;\n"
                 " mapa.shared::cluster.u32 remote, %0, %1;\n"
                 " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                 :: "r"(bar), "r"(cta) : "memory");
}
// A consumer warpgroup is done with a ring slot: one arrive on the slot's empty
// barrier in every CTA whose producer wrote into it: this CTA alone (ctas = 1), or,
// with B multicast, every CTA of the cluster (its own by a local arrive):
//   for (c < ctas) arrive(empty barrier of CTA c);
__device__ __forceinline__ void release_slot(u32 bar, u32 rank, u32 ctas)
{
    for (u32 c = 0; c < ctas; ++c) {
        if (c == rank) mbar_arrive(bar);
        else mbar_arrive_cluster(bar, c);
    }
}
// The barriers of a ring of `stages` slots, 8 bytes apart from full and from
// empty: full[s] completes when the producer has arrived (arrive.expect_tx) and
// the bytes it announced have landed; empty[s] when every consumer warpgroup that
// reads slot s has released it: `consumers` of each of the `ctas` CTAs whose
// producers write into it (release_slot). One thread initializes them.
__device__ __forceinline__ void init_ring(u32 full, u32 empty, int stages, u32 consumers, u32 ctas)
{
    for (int s = 0; s < stages; ++s) {
        mbar_init(full + 8 * s, 1);
        mbar_init(empty + 8 * s, consumers * ctas);
    }
}
// Spin until the phase with parity `parity` has completed:
//   while (!(phase_bit(bar) != parity)) ;   -- try_wait may suspend the thread
//   for a hardware-chosen time instead of burning issue slots.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    u32 done;
    do {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// Make the generic-proxy mbarrier.init visible to the async proxy (TMA) and,
// in a cluster, to the other CTAs.
__device__ __forceinline__ void fence_barrier_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---------------------------------------------------------------- TMA
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* tm)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"((u64)tm) : "memory");
}
// TMA: box at coordinates (x = inner/contiguous, y = outer) of the tensor
// described by *tm -> shared memory at dst; complete_tx on bar when landed.
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDesc* tm, int x, int y, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"((u64)tm), "r"(x), "r"(y), "r"(bar) : "memory");
}
// Same box written to offset dst of every CTA in cta_mask (and complete_tx on
// each one's barrier at offset bar): one L2 read, several destinations.
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const TmaDesc* tm, int x, int y, u32 bar,
                                                      unsigned short cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"((u64)tm), "r"(x), "r"(y), "r"(bar), "h"(cta_mask) : "memory");
}

// The B tile of k-tile row k0: `boxes` 64-column TMA boxes of 64 k-rows, one
// after the other at dst (BOX_BYTES each), their bytes counted on bar. Alone
// (ctas = 1) a CTA loads them all; in a cluster of ctas CTAs that compute tiles of
// the same columns, CTA `rank` loads boxes/ctas of them and multicast writes each
// into every CTA of the cluster (mask: all ctas), at the same offset and with a
// complete_tx on the barrier at the same offset there:
//   for (j < boxes) tma_load_2d(dst + j * BOX_BYTES, tm, n0 + 64 * j, k0, bar);   // each CTA
__device__ __forceinline__ void tma_load_b_tile(u32 dst, const TmaDesc* tm, int n0, int k0, u32 bar,
                                                int boxes, u32 rank, int ctas)
{
    if (ctas == 1) {
#pragma unroll
        for (int j = 0; j < boxes; ++j)
            tma_load_2d(dst + j * BOX_BYTES, tm, n0 + 64 * j, k0, bar);
    } else {
#pragma unroll
        for (int jj = 0; jj < boxes / ctas; ++jj) {
            const int j = (int)rank * (boxes / ctas) + jj;
            tma_load_2d_multicast(dst + j * BOX_BYTES, tm, n0 + 64 * j, k0, bar, (unsigned short)((1u << ctas) - 1));
        }
    }
}

// TMA store: shared memory (a box, same swizzle as the descriptor) -> the
// tensor at (x, y); the engine clips the parts outside the tensor.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* tm, u32 src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 :: "l"((u64)tm), "r"(src), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until at most N bulk groups still READ shared memory (the buffer may be reused).
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory"); }
// Wait until at most N bulk groups are still running (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;\n" :: "n"(N) : "memory"); }
// Barrier over the 128 threads of one warpgroup (ids 1, 2; 0 is __syncthreads).
template <int ID>
__device__ __forceinline__ void warpgroup_sync() { asm volatile("bar.sync %0, 128;\n" :: "n"(ID) : "memory"); }

// ---------------------------------------------------------------- wgmma
// Order register accesses of earlier instructions before the wgmma that follows.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Close the group of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Wait until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// ---------------------------------------------------------------- registers and clusters
// Registers move between warpgroups: the whole warpgroup executes these.
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R)); }
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R)); }

__device__ __forceinline__ u32 cluster_ctarank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// ---------------------------------------------------------------- descriptors
// The shared-memory matrix descriptor, 128-byte swizzle (kernels/10_hopper.cu, item 4).
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 lbo_bytes, u32 sbo_bytes)
{
    u64 d = 0;
    d |= (u64)((addr & 0x3FFFF) >> 4);
    d |= (u64)((lbo_bytes >> 4) & 0x3FFF) << 16;
    d |= (u64)((sbo_bytes >> 4) & 0x3FFF) << 32;
    d |= (u64)1 << 62;                                  // 128-byte swizzle
    return d;
}
// A: K-major, rows 1024 B apart per 8-row group; LBO unused (encoded 1).
__device__ __forceinline__ u64 desc_a(u32 addr) { return smem_desc(addr, 16, 1024); }
// B: MN-major; next 8 K-rows 1024 B on (SBO), next 64-column box BOX_BYTES on (LBO).
// Exchanging the two is the classic mistake: kernels/experiments/10_hopper_variants.cu
// keeps it as a control that must fail the check (B_DESC_SWAP=1).
__device__ __forceinline__ u64 desc_b(u32 addr) { return smem_desc(addr, BOX_BYTES, 1024); }

// D[64x256] (+)= A[64x16] * B[16x256]; A K-major (trans-a 0), B MN-major
// (trans-b 1). scale_d = 0 overwrites D (the first k16 step of a tile).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 da, u64 db, int scale_d)
{
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WG_AB "." WG_AB " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

#endif  // GEMM_BOOK_HOPPER_SM90_CUH
