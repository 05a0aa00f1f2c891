// Registers a GPU kernel written as an OpKernel class, for kernels that keep state per node and
// session (the random ops' stream position), which FS_REGISTER_GPU_KERNEL's plain functions
// cannot:
//   FS_REGISTER_GPU_KERNEL_CLASS(RandomKernel, GpuKernel("RandomUniform", nullptr)
//                                                  .Types({DType::kFloat32}).HostMemory("shape"));
// The GpuKernel supplies the op name, dtypes and host-memory arguments; its function is unused.
#pragma once

#include <memory>
#include <utility>

#include "cuda/cuda_kernel.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"

namespace flowstone::cuda {

// Runs K's Compute with the kernel's GPU current, as GpuKernel::Build does for functions.
template <typename K>
class OnDeviceKernel final : public K {
 public:
  using K::K;
  Status Compute(KernelContext& ctx) override {
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ContextOf(ctx).ordinal), "cudaSetDevice"));
    return K::Compute(ctx);
  }
};

template <typename K>
struct GpuKernelClassRegistrar {
  explicit GpuKernelClassRegistrar(const GpuKernel& kernel) {
    KernelDef def = kernel.Build();
    def.factory = [](const Node& node, std::unique_ptr<OpKernel>* out) {
      auto instance = std::make_unique<OnDeviceKernel<K>>(node);
      Status s = instance->Init();
      if (s.ok()) *out = std::move(instance);
      return s;
    };
    RegisterGpuKernel(kernel, std::move(def));
  }
};

}  // namespace flowstone::cuda

#define FS_REGISTER_GPU_KERNEL_CLASS(K, kernel)                                        \
  static ::flowstone::cuda::GpuKernelClassRegistrar<K> FS_CONCAT(fs_gpu_kernel_class_, \
                                                                 __COUNTER__)(kernel)
