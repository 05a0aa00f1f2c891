// The cuBLAS entry points the plugin uses, resolved with dlsym from the libcublas.so.13 handle
// that GPU discovery opened. The plugin never links against cuBLAS, so that a machine without
// it still gets a working GPU device (matrix products then fail with a clear message).
//
// The types and values below are cuBLAS's public API (cublas_api.h), declared here because the
// cuBLAS headers are not needed to build the plugin.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "flowstone/status.h"

namespace flowstone::cuda {

using cublasHandle = void*;  // cublasHandle_t (a pointer to cuBLAS's context)
using cublasStatus = int;    // cublasStatus_t; 0 is CUBLAS_STATUS_SUCCESS
constexpr cublasStatus kCublasSuccess = 0;
// cublasOperation_t
constexpr int kCublasOpN = 0;
constexpr int kCublasOpT = 1;

struct CublasApi {
  cublasStatus (*Create)(cublasHandle* handle);                    // cublasCreate_v2
  cublasStatus (*Destroy)(cublasHandle handle);                    // cublasDestroy_v2
  cublasStatus (*SetStream)(cublasHandle handle, cudaStream_t s);  // cublasSetStream_v2
  cublasStatus (*GetVersion)(cublasHandle handle, int* version);   // cublasGetVersion_v2
  const char* (*GetStatusString)(cublasStatus status);             // cublasGetStatusString
  // cublasSgemm_v2 / cublasDgemm_v2: C = alpha op(A) op(B) + beta C, column-major.
  cublasStatus (*Sgemm)(cublasHandle handle, int transa, int transb, int m, int n, int k,
                        const float* alpha, const float* a, int lda, const float* b, int ldb,
                        const float* beta, float* c, int ldc);
  cublasStatus (*Dgemm)(cublasHandle handle, int transa, int transb, int m, int n, int k,
                        const double* alpha, const double* a, int lda, const double* b, int ldb,
                        const double* beta, double* c, int ldc);
  // cublasSgemmStridedBatched / cublasDgemmStridedBatched: matrix i of A starts at a + i*stride_a.
  cublasStatus (*SgemmStridedBatched)(cublasHandle handle, int transa, int transb, int m, int n,
                                      int k, const float* alpha, const float* a, int lda,
                                      long long stride_a, const float* b, int ldb,
                                      long long stride_b, const float* beta, float* c, int ldc,
                                      long long stride_c, int batch_count);
  cublasStatus (*DgemmStridedBatched)(cublasHandle handle, int transa, int transb, int m, int n,
                                      int k, const double* alpha, const double* a, int lda,
                                      long long stride_a, const double* b, int ldb,
                                      long long stride_b, const double* beta, double* c, int ldc,
                                      long long stride_c, int batch_count);
};

// Resolves every entry point from `library_handle` (a dlopen handle of libcublas.so.13). Fails
// with NotFound naming the first missing symbol.
Status LoadCublasApi(void* library_handle, std::unique_ptr<CublasApi>* api);

// OK, or Internal naming the cuBLAS call and cuBLAS's description of the status.
Status CublasCheck(const CublasApi& api, cublasStatus status, const char* what);

}  // namespace flowstone::cuda
