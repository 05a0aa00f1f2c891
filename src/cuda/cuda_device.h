// A GPU device: tensors live in GPU memory (from the GPU's BFC allocator) and kernels queue work
// on the GPU's stream. Several Device objects (logical devices, one per session) may share one
// physical GPU's context.
#pragma once

#include <string>

#include "cuda_kernel.h"
#include "flowstone/device.h"

namespace flowstone::cuda {

class CudaDevice final : public Device {
 public:
  // `context` and `allocator` belong to the platform and outlive the device.
  CudaDevice(int tf_id, const GpuContext* context, Allocator* allocator, ThreadPool* intra_op_pool,
             std::string physical_description);

  const GpuContext& context() const { return *context_; }

  bool host_memory() const override { return false; }
  // Allocate the destination (host memory from CpuAllocator(), device memory from this device's
  // allocator), copy on the stream and wait for the copy, so the result is ready on return.
  Status CopyToHost(const Tensor& device_tensor, Tensor* host_tensor) override;
  Status CopyFromHost(const Tensor& host_tensor, Tensor* device_tensor) override;
  Status Sync() override;
  // "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:00:04.0, compute capability: 9.0"
  std::string physical_description() const override { return physical_description_; }
  DeviceAttributes attributes() const override;

 private:
  const GpuContext* context_;
  std::string physical_description_;
};

}  // namespace flowstone::cuda
