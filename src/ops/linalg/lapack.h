// The LAPACK and BLAS routines tf.linalg uses, from the OpenBLAS that PyPI's scipy-openblas32
// ships (every symbol carries a scipy_ prefix, so another BLAS in the process never clashes).
// Overloads on float and double pick the s/d routine. LAPACK works on column-major matrices with
// 32-bit sizes; the helpers below copy between Flowstone's row-major matrices and column-major
// scratch, and check that sizes fit.
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "flowstone/status.h"

// lapack.h names each routine through LAPACK_GLOBAL; this build's names are prefixed.
#define LAPACK_GLOBAL(lcname, UCNAME) scipy_##lcname##_
// Character arguments are followed by hidden Fortran string lengths at the end of the call.
#define LAPACK_FORTRAN_STRLEN_END
#include <cblas.h>
#include <lapack.h>

namespace flowstone {
namespace lapack {

// OpenBLAS would start its own threads in every call; Flowstone splits batches over its intra-op
// pool instead, so OpenBLAS runs each call on the calling thread.
inline void UseCallingThreadOnly() {
  static std::once_flag once;
  std::call_once(once, [] { scipy_openblas_set_num_threads(1); });
}

// A matrix dimension as LAPACK's int, or InvalidArgument when it does not fit.
inline Status ToLapackInt(int64_t value, const char* op, lapack_int* out) {
  if (value > std::numeric_limits<lapack_int>::max() / 2) {
    return errors::InvalidArgument(op, ": matrix dimension ", value,
                                   " is too large for LAPACK's 32-bit sizes");
  }
  *out = static_cast<lapack_int>(value);
  return Status::OK();
}

// dst (column-major, leading dimension `rows`) = src (row-major rows x cols), and back.
template <typename T>
void ToColMajor(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r + c * rows] = src[r * cols + c];
  }
}
template <typename T>
void FromColMajor(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r + c * rows];
  }
}

// LU factorization with partial pivoting: A = P L U. info > 0: U is exactly singular.
inline void Getrf(lapack_int m, lapack_int n, float* a, lapack_int lda, lapack_int* ipiv,
                  lapack_int* info) {
  LAPACK_sgetrf(&m, &n, a, &lda, ipiv, info);
}
inline void Getrf(lapack_int m, lapack_int n, double* a, lapack_int lda, lapack_int* ipiv,
                  lapack_int* info) {
  LAPACK_dgetrf(&m, &n, a, &lda, ipiv, info);
}

// The inverse from Getrf's factors (in place); lwork = -1 queries the workspace size.
inline void Getri(lapack_int n, float* a, lapack_int lda, const lapack_int* ipiv, float* work,
                  lapack_int lwork, lapack_int* info) {
  LAPACK_sgetri(&n, a, &lda, ipiv, work, &lwork, info);
}
inline void Getri(lapack_int n, double* a, lapack_int lda, const lapack_int* ipiv, double* work,
                  lapack_int lwork, lapack_int* info) {
  LAPACK_dgetri(&n, a, &lda, ipiv, work, &lwork, info);
}

// Solves op(A) X = B from Getrf's factors; trans is 'N' or 'T'.
inline void Getrs(char trans, lapack_int n, lapack_int nrhs, const float* a, lapack_int lda,
                  const lapack_int* ipiv, float* b, lapack_int ldb, lapack_int* info) {
  scipy_LAPACK_sgetrs(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}
inline void Getrs(char trans, lapack_int n, lapack_int nrhs, const double* a, lapack_int lda,
                  const lapack_int* ipiv, double* b, lapack_int ldb, lapack_int* info) {
  scipy_LAPACK_dgetrs(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info);
}

// Cholesky factorization of the `uplo` triangle; info > 0: not positive definite.
inline void Potrf(char uplo, lapack_int n, float* a, lapack_int lda, lapack_int* info) {
  scipy_LAPACK_spotrf(&uplo, &n, a, &lda, info);
}
inline void Potrf(char uplo, lapack_int n, double* a, lapack_int lda, lapack_int* info) {
  scipy_LAPACK_dpotrf(&uplo, &n, a, &lda, info);
}

// B = op(A)^-1 B for a triangular A (column-major); a zero on A's diagonal gives inf/NaN, as
// TensorFlow's kernel does, rather than an error.
inline void Trsm(CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, lapack_int n, lapack_int nrhs,
                 const float* a, float* b) {
  scipy_cblas_strsm(CblasColMajor, CblasLeft, uplo, trans, CblasNonUnit, n, nrhs, 1.0f, a, n, b, n);
}
inline void Trsm(CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, lapack_int n, lapack_int nrhs,
                 const double* a, double* b) {
  scipy_cblas_dtrsm(CblasColMajor, CblasLeft, uplo, trans, CblasNonUnit, n, nrhs, 1.0, a, n, b, n);
}

// QR: Householder factorization, then Q formed from the reflectors. lwork = -1 queries the size.
inline void Geqrf(lapack_int m, lapack_int n, float* a, lapack_int lda, float* tau, float* work,
                  lapack_int lwork, lapack_int* info) {
  LAPACK_sgeqrf(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void Geqrf(lapack_int m, lapack_int n, double* a, lapack_int lda, double* tau, double* work,
                  lapack_int lwork, lapack_int* info) {
  LAPACK_dgeqrf(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void Orgqr(lapack_int m, lapack_int n, lapack_int k, float* a, lapack_int lda,
                  const float* tau, float* work, lapack_int lwork, lapack_int* info) {
  LAPACK_sorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void Orgqr(lapack_int m, lapack_int n, lapack_int k, double* a, lapack_int lda,
                  const double* tau, double* work, lapack_int lwork, lapack_int* info) {
  LAPACK_dorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}

// SVD by divide and conquer; jobz 'N' (values only), 'S' (thin) or 'A' (full).
inline void Gesdd(char jobz, lapack_int m, lapack_int n, float* a, lapack_int lda, float* s,
                  float* u, lapack_int ldu, float* vt, lapack_int ldvt, float* work,
                  lapack_int lwork, lapack_int* iwork, lapack_int* info) {
  scipy_LAPACK_sgesdd(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}
inline void Gesdd(char jobz, lapack_int m, lapack_int n, double* a, lapack_int lda, double* s,
                  double* u, lapack_int ldu, double* vt, lapack_int ldvt, double* work,
                  lapack_int lwork, lapack_int* iwork, lapack_int* info) {
  scipy_LAPACK_dgesdd(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);
}

// Eigen-decomposition of a symmetric matrix from its `uplo` triangle, eigenvalues ascending;
// jobz 'N' (values only) or 'V'.
inline void Syevd(char jobz, char uplo, lapack_int n, float* a, lapack_int lda, float* w,
                  float* work, lapack_int lwork, lapack_int* iwork, lapack_int liwork,
                  lapack_int* info) {
  scipy_LAPACK_ssyevd(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}
inline void Syevd(char jobz, char uplo, lapack_int n, double* a, lapack_int lda, double* w,
                  double* work, lapack_int lwork, lapack_int* iwork, lapack_int liwork,
                  lapack_int* info) {
  scipy_LAPACK_dsyevd(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);
}

// The workspace size a query (lwork = -1) wrote into its first work element.
template <typename T>
lapack_int QueriedSize(T value) {
  return static_cast<lapack_int>(value) + 1;
}

}  // namespace lapack
}  // namespace flowstone
