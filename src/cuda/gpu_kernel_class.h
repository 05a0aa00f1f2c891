// Registers a GPU kernel written as an OpKernel class, for kernels that keep state per node and
// session (the random ops' stream position), which FS_REGISTER_GPU_KERNEL's plain functions
// cannot:
//   FS_REGISTER_GPU_KERNEL_CLASS(RandomKernel, GpuKernel("RandomUniform", nullptr)
//                                                  .Types({DType::kFloat32}).HostMemory("shape"));
// The GpuKernel supplies the op name, dtypes and host-memory arguments; its function is unused.
#pragma once

#include <cstdio>
#include <memory>
#include <utility>

#include "cuda/cuda_kernel.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"

namespace flowstone::cuda {

template <typename K>
struct GpuKernelClassRegistrar {
  explicit GpuKernelClassRegistrar(const GpuKernel& kernel) {
    KernelDef def = kernel.Build();
    def.factory = [](const Node& node, std::unique_ptr<OpKernel>* out) {
      auto instance = std::make_unique<K>(node);
      Status s = instance->Init();
      if (s.ok()) *out = std::move(instance);
      return s;
    };
    Status s = OpRegistry::Global().RegisterKernel(kernel.op_name(), std::move(def));
    // Registration runs while the plugin is being loaded, before any Status can be returned:
    // an op missing from the core means the plugin and the core come from different builds.
    if (!s.ok()) {
      std::fprintf(stderr, "flowstone CUDA plugin: cannot register the GPU kernel of %s: %s\n",
                   kernel.op_name().c_str(), s.ToString().c_str());
    }
  }
};

}  // namespace flowstone::cuda

#define FS_REGISTER_GPU_KERNEL_CLASS(K, kernel)                                        \
  static ::flowstone::cuda::GpuKernelClassRegistrar<K> FS_CONCAT(fs_gpu_kernel_class_, \
                                                                 __COUNTER__)(kernel)
