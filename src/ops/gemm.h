// General matrix multiply for the MatMul family. Every matrix product in Flowstone's CPU kernels
// goes through Gemm, so a faster library (oneDNN, a BLAS) can replace the body of gemm.cc without
// touching the kernels.
#pragma once

#include <cstdint>

#include "flowstone/kernel.h"
#include "flowstone/status.h"

namespace flowstone {

// C = op(A) * op(B), all matrices row-major.
//   op(A) is m x k: A is stored m x k, or k x m when transpose_a (leading dimension lda).
//   op(B) is k x n: B is stored k x n, or n x k when transpose_b (leading dimension ldb).
//   C is m x n with leading dimension ldc; its previous contents are overwritten.
// Work is split over ctx's intra-op threads; scratch memory comes from ctx's allocator, so
// running out of it is reported as ResourceExhausted. Integer products wrap around on overflow.
// Instantiated for float, double, int32_t and int64_t.
template <typename T>
Status Gemm(KernelContext& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
            const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc);

}  // namespace flowstone
