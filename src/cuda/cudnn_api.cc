#include "cuda/cudnn_api.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"

namespace flowstone::cuda {
namespace {

// Looks `name` up in the library and stores it in `slot`; records the name when it is missing.
template <typename Fn>
void Resolve(void* dl_handle, const char* name, Fn* slot, std::vector<std::string>* missing) {
  void* symbol = dlsym(dl_handle, name);
  *slot = reinterpret_cast<Fn>(symbol);
  if (symbol == nullptr) missing->push_back(name);
}

std::string Describe(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  const char* text = api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : nullptr;
  return StrCat(what, " failed with cuDNN status ", status, " (", text ? text : "no description",
                ")");
}

}  // namespace

Status LoadCudnnApi(void* dl_handle, const CudnnApi** api) {
  *api = nullptr;
  if (dl_handle == nullptr) {
    return errors::FailedPrecondition("cuDNN is not loaded: no library handle to look up in");
  }
  // Filled once; a second call (a second platform in one process) resolves the same symbols.
  static CudnnApi table;
  CudnnApi* out = &table;
  std::vector<std::string> missing;
#define FS_RESOLVE_CUDNN(name) Resolve(dl_handle, #name, &out->name, &missing)
  FS_RESOLVE_CUDNN(cudnnGetVersion);
  FS_RESOLVE_CUDNN(cudnnCreate);
  FS_RESOLVE_CUDNN(cudnnDestroy);
  FS_RESOLVE_CUDNN(cudnnSetStream);
  FS_RESOLVE_CUDNN(cudnnGetErrorString);
  FS_RESOLVE_CUDNN(cudnnCreateTensorDescriptor);
  FS_RESOLVE_CUDNN(cudnnSetTensor4dDescriptor);
  FS_RESOLVE_CUDNN(cudnnDestroyTensorDescriptor);
  FS_RESOLVE_CUDNN(cudnnCreateFilterDescriptor);
  FS_RESOLVE_CUDNN(cudnnSetFilter4dDescriptor);
  FS_RESOLVE_CUDNN(cudnnDestroyFilterDescriptor);
  FS_RESOLVE_CUDNN(cudnnCreateConvolutionDescriptor);
  FS_RESOLVE_CUDNN(cudnnSetConvolution2dDescriptor);
  FS_RESOLVE_CUDNN(cudnnSetConvolutionMathType);
  FS_RESOLVE_CUDNN(cudnnDestroyConvolutionDescriptor);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionForwardWorkspaceSize);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize);
  FS_RESOLVE_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize);
  FS_RESOLVE_CUDNN(cudnnConvolutionForward);
  FS_RESOLVE_CUDNN(cudnnConvolutionBackwardData);
  FS_RESOLVE_CUDNN(cudnnConvolutionBackwardFilter);
#undef FS_RESOLVE_CUDNN
  if (!missing.empty()) {
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    return errors::NotFound("The cuDNN library lacks ", missing.size(), " function(s) Flowstone ",
                            "needs: ", names,
                            ". Install cuDNN 9 (libcudnn.so.9, with its libcudnn_ops and "
                            "libcudnn_cnn sub-libraries) next to the CUDA runtime.");
  }
  *api = out;
  return Status::OK();
}

Status CreateCudnnHandle(int ordinal, const CudnnApi* api, void** handle) {
  *handle = nullptr;
  if (api == nullptr) return errors::FailedPrecondition("cuDNN is not loaded");
  int previous = 0;
  FS_RETURN_IF_ERROR(CudaCheck(cudaGetDevice(&previous), "cudaGetDevice"));
  FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ordinal), "cudaSetDevice"));
  cudnnHandle_t created = nullptr;
  Status status = CudnnCheck(*api, api->cudnnCreate(&created), "cudnnCreate");
  if (!status.ok()) {
    status.Append(StrCat(" on GPU ", ordinal,
                         ". cuDNN could not initialize: this is usually too little free GPU "
                         "memory (another process, or a session that reserved it all; set "
                         "allow_growth or a lower per_process_gpu_memory_fraction) or a cuDNN "
                         "built for a different CUDA major version."));
  }
  cudaSetDevice(previous);
  FS_RETURN_IF_ERROR(status);
  *handle = created;
  return Status::OK();
}

Status CudnnCheck(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::OK();
  return errors::Internal(Describe(api, status, what));
}

Status CudnnAlgorithmCheck(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::OK();
  const int category = status / 1000;
  if (category != kCudnnStatusNotSupportedCategory &&
      category != kCudnnStatusInternalErrorCategory &&
      category != kCudnnStatusExecutionFailedCategory) {
    return CudnnCheck(api, status, what);
  }
  const bool allocation_failed =
      status == kCudnnStatusHostAllocationFailed || status == kCudnnStatusDeviceAllocationFailed;
  const std::string message = StrCat(
      "Failed to get convolution algorithm: ", Describe(api, status, what), ". This is ",
      allocation_failed ? "" : "often ",
      "GPU memory running out while cuDNN sets up the convolution, not a cuDNN bug (TensorFlow "
      "issue #24828). Leave cuDNN room: set GPUOptions(allow_growth=True) or "
      "tf.config.experimental.set_memory_growth(gpu, True), lower "
      "per_process_gpu_memory_fraction, use a smaller batch, or stop other processes using the "
      "GPU (see nvidia-smi).");
  if (allocation_failed) return errors::ResourceExhausted(message);
  return errors::Internal(message);
}

}  // namespace flowstone::cuda
