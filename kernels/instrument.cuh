// Owner instrumentation, shared by the kernels of chapters 1-7 and 10.
//
// The normal build (RECORD_OWNER 0, the default) adds nothing: OWNER_PARAM and
// RECORD(idx) expand to nothing, so the kernels the book times are unchanged.
// The instrumented build (-DRECORD_OWNER=1) gives every kernel an extra
// argument `int* owner` and makes RECORD(idx) store, for the C element at
// flat index idx, which thread wrote it:
//
//   owner[idx] = blockLinear * 1024 + threadLinear
//   blockLinear  = blockIdx.y * gridDim.x + blockIdx.x
//   threadLinear = threadIdx.y * blockDim.x + threadIdx.x   (threadIdx.x for 1-D blocks)
//
// OWNER_ARG passes the pointer on to a __device__ helper that takes OWNER_PARAM
// (chapter 10's epilogue stores C in a function of its own).
//
// The GPU suite compares this record, element by element, with the Python
// owner models (helpers/models/), so the figures show what the kernels do.
// helpers.runtime.compile pastes this file where a kernel #includes it.
#ifndef GEMM_BOOK_INSTRUMENT_CUH
#define GEMM_BOOK_INSTRUMENT_CUH

#ifndef RECORD_OWNER
#define RECORD_OWNER 0
#endif

#if RECORD_OWNER
#define OWNER_PARAM , int* __restrict__ owner
#define OWNER_ARG , owner
#define RECORD(idx) owner[idx] = (int)((blockIdx.y * gridDim.x + blockIdx.x) * 1024 \
                                       + threadIdx.y * blockDim.x + threadIdx.x)
#else
#define OWNER_PARAM
#define OWNER_ARG
#define RECORD(idx)
#endif

#endif  // GEMM_BOOK_INSTRUMENT_CUH
