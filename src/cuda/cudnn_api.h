// The cuDNN entry points the plugin calls, found with dlsym at run time.
//
// The plugin never links against cuDNN and never includes its headers: cuDNN may be missing on
// a machine whose GPU works, and then only the ops that need it fail (with a message naming the
// library). The types below restate cuDNN 9's public C API (cudnn_graph.h, cudnn_ops.h,
// cudnn_cnn.h): handles and descriptors are opaque pointers, enums are ints with cuDNN's values.
// cuDNN 9 still exports this legacy convolution API; libcudnn.so.9 is a shim that forwards to
// libcudnn_ops / libcudnn_cnn, so every symbol is found through its handle.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "flowstone/status.h"

namespace flowstone::cuda {

// Opaque cuDNN handle and descriptor types.
using cudnnHandle_t = struct cudnnContext*;
using cudnnTensorDescriptor_t = struct cudnnTensorStruct*;
using cudnnFilterDescriptor_t = struct cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = struct cudnnConvolutionStruct*;

// cudnnStatus_t. cuDNN 9 numbers its codes by category: 0 success, 1xxx not initialized,
// 2xxx bad parameter, 3xxx not supported, 4xxx internal error (4003/4004 are host and device
// allocation failures), 5xxx execution failed.
using cudnnStatus_t = int;
constexpr cudnnStatus_t CUDNN_STATUS_SUCCESS = 0;
constexpr int kCudnnStatusNotSupportedCategory = 3;
constexpr int kCudnnStatusInternalErrorCategory = 4;
constexpr int kCudnnStatusExecutionFailedCategory = 5;
constexpr cudnnStatus_t kCudnnStatusHostAllocationFailed = 4003;  // CUDNN_STATUS_ALLOC_FAILED
constexpr cudnnStatus_t kCudnnStatusDeviceAllocationFailed = 4004;

// cudnnTensorFormat_t: NCHW images, and KCRS ([out, in, rows, cols]) filters.
constexpr int CUDNN_TENSOR_NCHW = 0;
// cudnnDataType_t
constexpr int CUDNN_DATA_FLOAT = 0;
// cudnnConvolutionMode_t: TensorFlow's convolutions are cross-correlations.
constexpr int CUDNN_CROSS_CORRELATION = 1;
// cudnnMathType_t: plain FMA math keeps float32 results float32-accurate (no TF32 tensor cores),
// so GPU results agree with the CPU's.
constexpr int CUDNN_FMA_MATH = 3;

// The algorithm choices returned by the *_v7 heuristics; algo and the enums are ints.
struct cudnnConvolutionPerf_t {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

struct CudnnApi {
  size_t (*cudnnGetVersion)();
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t* handle);
  cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t handle);
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t handle, cudaStream_t stream);
  const char* (*cudnnGetErrorString)(cudnnStatus_t status);

  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t* desc);
  cudnnStatus_t (*cudnnSetTensor4dDescriptor)(cudnnTensorDescriptor_t desc, int format,
                                              int data_type, int n, int c, int h, int w);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t desc);

  cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t* desc);
  cudnnStatus_t (*cudnnSetFilter4dDescriptor)(cudnnFilterDescriptor_t desc, int data_type,
                                              int format, int k, int c, int h, int w);
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t desc);

  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t* desc);
  cudnnStatus_t (*cudnnSetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t desc, int pad_h,
                                                   int pad_w, int stride_h, int stride_w,
                                                   int dilation_h, int dilation_w, int mode,
                                                   int compute_type);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t desc, int math_type);
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t desc);

  // Heuristic algorithm choices, best first.
  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(
      cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, int requested, int* returned,
      cudnnConvolutionPerf_t* results);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(
      cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int requested, int* returned,
      cudnnConvolutionPerf_t* results);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(
      cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
      cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int requested, int* returned,
      cudnnConvolutionPerf_t* results);

  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(
      cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, int algo, size_t* bytes);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataWorkspaceSize)(
      cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int algo, size_t* bytes);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(
      cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
      cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int algo, size_t* bytes);

  // alpha and beta point to host floats: result = alpha * op(...) + beta * result.
  cudnnStatus_t (*cudnnConvolutionForward)(cudnnHandle_t handle, const void* alpha,
                                           cudnnTensorDescriptor_t x_desc, const void* x,
                                           cudnnFilterDescriptor_t w_desc, const void* w,
                                           cudnnConvolutionDescriptor_t conv, int algo,
                                           void* workspace, size_t workspace_bytes,
                                           const void* beta, cudnnTensorDescriptor_t y_desc,
                                           void* y);
  cudnnStatus_t (*cudnnConvolutionBackwardData)(cudnnHandle_t handle, const void* alpha,
                                                cudnnFilterDescriptor_t w_desc, const void* w,
                                                cudnnTensorDescriptor_t dy_desc, const void* dy,
                                                cudnnConvolutionDescriptor_t conv, int algo,
                                                void* workspace, size_t workspace_bytes,
                                                const void* beta, cudnnTensorDescriptor_t dx_desc,
                                                void* dx);
  cudnnStatus_t (*cudnnConvolutionBackwardFilter)(cudnnHandle_t handle, const void* alpha,
                                                  cudnnTensorDescriptor_t x_desc, const void* x,
                                                  cudnnTensorDescriptor_t dy_desc, const void* dy,
                                                  cudnnConvolutionDescriptor_t conv, int algo,
                                                  void* workspace, size_t workspace_bytes,
                                                  const void* beta, cudnnFilterDescriptor_t dw_desc,
                                                  void* dw);
};

// Resolves the entry points from a dlopen handle of libcudnn.so.9 into a table that lives for
// the process (one cuDNN per process), and points *api at it. Fails with NotFound naming every
// missing symbol (a cuDNN older than 8 lacks the *_v7 calls; a cuDNN built without the legacy
// API lacks the convolution calls); *api is then nullptr.
Status LoadCudnnApi(void* dl_handle, const CudnnApi** api);

// Creates a cuDNN handle on GPU `ordinal` (made current for the call). Kernels set the handle's
// stream before each use; cudnnDestroy releases it.
Status CreateCudnnHandle(int ordinal, const CudnnApi* api, void** handle);

// OK for CUDNN_STATUS_SUCCESS; otherwise Internal naming the call, cuDNN's status code and
// cudnnGetErrorString.
Status CudnnCheck(const CudnnApi& api, cudnnStatus_t status, const char* what);

// Like CudnnCheck, for the calls that choose or prepare a convolution algorithm: cuDNN reports
// running out of GPU memory there as allocation, internal, not-supported or execution failures
// (TensorFlow's "Failed to get convolution algorithm. This is probably because cuDNN failed to
// initialize", issue #24828), so the message says so and how to leave cuDNN room. Allocation
// failures are ResourceExhausted, the others Internal.
Status CudnnAlgorithmCheck(const CudnnApi& api, cudnnStatus_t status, const char* what);

}  // namespace flowstone::cuda
