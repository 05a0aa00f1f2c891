#include "cuda_device.h"

#include <utility>

namespace flowstone::cuda {

CudaDevice::CudaDevice(int tf_id, const GpuContext* context, Allocator* allocator,
                       ThreadPool* intra_op_pool, std::string physical_description)
    : Device("GPU", tf_id, allocator, intra_op_pool),
      context_(context),
      physical_description_(std::move(physical_description)) {}

DeviceAttributes CudaDevice::attributes() const {
  DeviceAttributes attrs = Device::attributes();
  attrs.description = physical_description_;
  return attrs;
}

Status CudaDevice::CopyToHost(const Tensor& device_tensor, Tensor* host_tensor) {
  Tensor host;
  FS_RETURN_IF_ERROR(
      Tensor::Allocate(CpuAllocator(), device_tensor.dtype(), device_tensor.shape(), &host));
  if (device_tensor.bytes() > 0) {
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(context_->ordinal), "cudaSetDevice"));
    FS_RETURN_IF_ERROR(
        CudaCheck(cudaMemcpyAsync(host.raw_data(), device_tensor.raw_data(), device_tensor.bytes(),
                                  cudaMemcpyDeviceToHost, context_->stream),
                  "cudaMemcpyAsync (device to host)"));
    FS_RETURN_IF_ERROR(Sync());
  }
  *host_tensor = std::move(host);
  return Status::OK();
}

Status CudaDevice::CopyFromHost(const Tensor& host_tensor, Tensor* device_tensor) {
  Tensor device;
  Status s = Tensor::Allocate(allocator(), host_tensor.dtype(), host_tensor.shape(), &device);
  if (!s.ok()) {
    if (s.code() != Code::kResourceExhausted) return s;
    return errors::ResourceExhausted(
        "OOM when allocating tensor with shape", host_tensor.shape().ToString(), " and type ",
        DTypeShortName(host_tensor.dtype()), " on ", name(), " by allocator ", allocator()->name(),
        " while copying it from the host. Reduce the batch size or the model, or let other "
        "processes release GPU memory.");
  }
  if (host_tensor.bytes() > 0) {
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(context_->ordinal), "cudaSetDevice"));
    FS_RETURN_IF_ERROR(
        CudaCheck(cudaMemcpyAsync(device.raw_data(), host_tensor.raw_data(), host_tensor.bytes(),
                                  cudaMemcpyHostToDevice, context_->stream),
                  "cudaMemcpyAsync (host to device)"));
    // The host buffer may be freed or reused as soon as this returns.
    FS_RETURN_IF_ERROR(Sync());
  }
  *device_tensor = std::move(device);
  return Status::OK();
}

Status CudaDevice::Sync() {
  return CudaCheck(cudaStreamSynchronize(context_->stream), "cudaStreamSynchronize");
}

}  // namespace flowstone::cuda
