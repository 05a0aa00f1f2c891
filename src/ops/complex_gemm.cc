// Complex matrix products (ComplexGemm, gemm.h) through OpenBLAS's cgemm and zgemm, the BLAS that
// tf.linalg already links (ops/linalg/lapack.h): oneDNN has no complex gemm.
#include <algorithm>
#include <complex>

#include "ops/gemm.h"
#include "ops/linalg/lapack.h"

namespace flowstone {
namespace {

CBLAS_TRANSPOSE ToCblas(MatrixOp op) {
  switch (op) {
    case MatrixOp::kTranspose:
      return CblasTrans;
    case MatrixOp::kAdjoint:
      return CblasConjTrans;
    case MatrixOp::kNone:
      break;
  }
  return CblasNoTrans;
}

void CallGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, lapack_int m, lapack_int n, lapack_int k,
              const complex64* a, lapack_int lda, const complex64* b, lapack_int ldb, complex64* c,
              lapack_int ldc) {
  const complex64 one(1.0f, 0.0f), zero(0.0f, 0.0f);
  scipy_cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}

void CallGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, lapack_int m, lapack_int n, lapack_int k,
              const complex128* a, lapack_int lda, const complex128* b, lapack_int ldb,
              complex128* c, lapack_int ldc) {
  const complex128 one(1.0, 0.0), zero(0.0, 0.0);
  scipy_cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}

}  // namespace

template <typename T>
Status ComplexGemm(MatrixOp op_a, MatrixOp op_b, int64_t m, int64_t n, int64_t k, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return Status::OK();
  if (k == 0) {  // BLAS would leave C alone; the product of empty matrices is zeros
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return Status::OK();
  }
  lapack_int dims[6];
  const int64_t values[6] = {m, n, k, std::max<int64_t>(lda, 1), std::max<int64_t>(ldb, 1), ldc};
  for (int i = 0; i < 6; ++i)
    FS_RETURN_IF_ERROR(lapack::ToLapackInt(values[i], "MatMul", &dims[i]));
  lapack::UseCallingThreadOnly();
  CallGemm(ToCblas(op_a), ToCblas(op_b), dims[0], dims[1], dims[2], a, dims[3], b, dims[4], c,
           dims[5]);
  return Status::OK();
}

template Status ComplexGemm<complex64>(MatrixOp, MatrixOp, int64_t, int64_t, int64_t,
                                       const complex64*, int64_t, const complex64*, int64_t,
                                       complex64*, int64_t);
template Status ComplexGemm<complex128>(MatrixOp, MatrixOp, int64_t, int64_t, int64_t,
                                        const complex128*, int64_t, const complex128*, int64_t,
                                        complex128*, int64_t);

}  // namespace flowstone
