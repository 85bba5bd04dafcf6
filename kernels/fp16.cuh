// fp16.cuh - the 16-bit element type of the Tensor Core kernels (chapters 6, 7, 10).
//
// The including file defines BF16 first (-DBF16=1 for bfloat16, 0 for fp16) and gets
//   T       the element type of A, B and C: __half or __nv_bfloat16
//   T2      two of them in 32 bits (one 4-byte store of two neighbouring columns)
//   to_T    fp32 -> T, rounded to nearest even
//   pack2   (x, y) -> T2 with x in the low half (the lower address), rounded likewise
// Chapter 9's kernel does without these headers: it moves raw 16-bit values and
// converts them with cvt PTX (kernels/09_any_shape.cu).
#ifndef GEMM_BOOK_FP16_CUH
#define GEMM_BOOK_FP16_CUH

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#if BF16
typedef __nv_bfloat16 T;
typedef __nv_bfloat162 T2;
__device__ __forceinline__ T to_T(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2bfloat162_rn(x, y); }
#else
typedef __half T;
typedef __half2 T2;
__device__ __forceinline__ T to_T(float x) { return __float2half_rn(x); }
__device__ __forceinline__ T2 pack2(float x, float y) { return __floats2half2_rn(x, y); }
#endif

#endif  // GEMM_BOOK_FP16_CUH
