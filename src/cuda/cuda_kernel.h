// What every CUDA kernel file in the plugin uses: the device's stream and library handles, error
// conversion, and the registrar that adds a "GPU" kernel to an op declared in src/ops/.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/status.h"

namespace flowstone::cuda {

struct CublasApi;  // cublas_api.h: cuBLAS entry points found with dlsym
struct CudnnApi;   // cudnn_api.h: cuDNN entry points found with dlsym

// The per-physical-GPU state shared by every Device object on that GPU.
struct GpuContext {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  // Opaque library handles (cublasHandle_t, cudnnHandle_t); nullptr when the library is missing.
  void* cublas_handle = nullptr;
  void* cudnn_handle = nullptr;
  const CublasApi* cublas = nullptr;  // nullptr when cuBLAS could not be loaded
  const CudnnApi* cudnn = nullptr;    // nullptr when cuDNN could not be loaded
};

// The GPU context of the device a kernel runs on.
const GpuContext& ContextOf(const KernelContext& ctx);
inline cudaStream_t StreamOf(const KernelContext& ctx) { return ContextOf(ctx).stream; }

// OK, or Internal naming the CUDA call, cudaGetErrorString and the op.
Status CudaCheck(cudaError_t err, const char* what);
// The status of the last kernel launch (cudaGetLastError).
Status LaunchCheck(const char* kernel_name);

// Adds a GPU kernel to a registered op at plugin load time:
//   FS_REGISTER_GPU_KERNEL(GpuKernel("MatMul", MatMulGpu).Types({DType::kFloat32}));
class GpuKernel {
 public:
  GpuKernel(std::string op_name, KernelFn fn);
  GpuKernel& Types(std::vector<DType> types);
  // An input or output argument (by its name in the op's schema) kept in host memory.
  GpuKernel& HostMemory(std::string arg_name);
  // A vendor library ("cuBLAS", "cuDNN") the kernel cannot run without. Such a kernel is
  // registered only when the platform starts with that library usable, so that without it the
  // placer puts the op on the CPU instead of failing at run time.
  GpuKernel& Needs(std::string library);
  const std::string& op_name() const { return op_name_; }
  const std::string& needs() const { return needs_; }
  KernelDef Build() const;

 private:
  std::string op_name_;
  KernelFn fn_;
  std::vector<DType> types_;
  std::vector<std::string> host_memory_;
  std::string needs_;
};

struct GpuKernelRegistrar {
  explicit GpuKernelRegistrar(const GpuKernel& kernel);
};

// Registers `def` for `kernel`'s op now, or, when the kernel needs a vendor library, when the
// platform starts (RegisterKernelsNeedingLibraries). Aborts on an unknown op: a plugin bug.
void RegisterGpuKernel(const GpuKernel& kernel, KernelDef def);
// Called once by the platform: registers the waiting kernels whose library is usable and logs,
// per missing library, the ops that will run on the CPU instead.
void RegisterKernelsNeedingLibraries(const std::vector<std::string>& usable_libraries);

}  // namespace flowstone::cuda

#define FS_REGISTER_GPU_KERNEL(kernel) \
  static ::flowstone::cuda::GpuKernelRegistrar FS_CONCAT(fs_gpu_kernel_, __COUNTER__)(kernel)
