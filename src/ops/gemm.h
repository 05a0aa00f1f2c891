// General matrix multiply for the MatMul family. Every matrix product in Flowstone's CPU kernels
// goes through Gemm: float32 runs on oneDNN's sgemm, float64 and the integers on a hand-written
// blocked kernel (gemm.cc), complex numbers on OpenBLAS's cgemm/zgemm (ComplexGemm,
// complex_gemm.cc).
#pragma once

#include <cstdint>

#include "flowstone/kernel.h"
#include "flowstone/status.h"

namespace flowstone {

// C = op(A) * op(B), all matrices row-major.
//   op(A) is m x k: A is stored m x k, or k x m when transpose_a (leading dimension lda).
//   op(B) is k x n: B is stored k x n, or n x k when transpose_b (leading dimension ldb).
//   C is m x n with leading dimension ldc; its previous contents are overwritten.
// Work is split over ctx's intra-op threads, in pieces that depend on the shape only, so results
// do not depend on the number of threads. The hand-written path takes its scratch memory from
// ctx's allocator and oneDNN's sgemm its (small) packing buffers from the heap; running out of
// either is reported as ResourceExhausted. Integer products wrap around on overflow. Tiles stop
// once the run is cancelled, and Gemm then returns the cancellation's Status.
// Instantiated for float, double, int32_t and int64_t.
template <typename T>
Status Gemm(KernelContext& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
            const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc);

// dst = src^T: src is rows x cols (leading dimension lds), dst cols x rows (leading dimension
// ldd), both row-major; work is split over ctx's intra-op threads. Instantiated for float and
// double.
template <typename T>
void TransposeMatrix(KernelContext& ctx, int64_t rows, int64_t cols, const T* src, int64_t lds,
                     T* dst, int64_t ldd);

// How a complex operand enters a product: as stored, transposed, or conjugate-transposed (the
// adjoint, BatchMatMulV2's adj_x/adj_y).
enum class MatrixOp { kNone, kTranspose, kAdjoint };

// C = op(A) * op(B) for complex64 or complex128 matrices, row-major, with Gemm's dimensions and
// leading dimensions, on the calling thread. Sizes that do not fit OpenBLAS's 32-bit integers
// are InvalidArgument.
template <typename T>
Status ComplexGemm(MatrixOp op_a, MatrixOp op_b, int64_t m, int64_t n, int64_t k, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc);

}  // namespace flowstone
