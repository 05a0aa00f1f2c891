// GPU kernels for BiasAdd and BiasAddGrad (float32 and float64). As on the CPU
// (src/ops/bias_ops.cc), the channels are the last dimension for NHWC and dimension 1 for NCHW,
// and a tensor is viewed as [outer, channels, inner].
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "cuda/gpu_launch.h"
#include "flowstone/kernel.h"
#include "ops/bias_util.h"

namespace flowstone::cuda {
namespace {

template <typename T>
__global__ void BiasAddKernel(const T* x, const T* bias, int64_t channels, int64_t inner, int64_t n,
                              T* y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[i] + bias[(i / inner) % channels];
  }
}

// One block per channel: each thread sums a strided share of the channel's elements, then the
// block adds the shares up in shared memory.
template <typename T>
__global__ void BiasAddGradKernel(const T* g, int64_t outer, int64_t channels, int64_t inner,
                                  T* out) {
  __shared__ T shares[kThreadsPerBlock];
  const int64_t channel = blockIdx.x;
  const int64_t count = outer * inner;
  T sum = T(0);
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t o = k / inner, j = k % inner;
    sum += g[(o * channels + channel) * inner + j];
  }
  shares[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shares[threadIdx.x] += shares[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[channel] = shares[0];
}

Status BiasAddGpu(KernelContext& ctx) {
  const Tensor& value = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  if (value.rank() < 2) {
    return errors::InvalidArgument("Input tensor must be at least 2D: ", value.shape().ToString());
  }
  if (bias.rank() != 1) {
    return errors::InvalidArgument("Biases must be 1D: ", bias.shape().ToString());
  }
  bool nchw;
  FS_RETURN_IF_ERROR(ParseBiasFormat(ctx.attrs(), &nchw));
  const int channel_dim = ChannelDim(nchw, value.rank());
  if (bias.dim(0) != value.dim(channel_dim)) {
    return errors::InvalidArgument(
        "Must provide as many biases as the ", nchw ? "channel dimension (1)" : "last dimension",
        " of the input tensor: ", bias.shape().ToString(), " vs. ", value.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, value.shape(), &out));
  const int64_t n = value.num_elements();
  if (n == 0) return Status::OK();
  const ChannelView view(value.shape(), channel_dim);
  return DispatchDType<float, double>(value.dtype(), "BiasAdd", [&]<typename T>() -> Status {
    BiasAddKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
        value.data<T>(), bias.data<T>(), view.channels, view.inner, n, out->data<T>());
    return LaunchCheck("BiasAdd");
  });
}

Status BiasAddGradGpu(KernelContext& ctx) {
  const Tensor& grad = ctx.input(0);
  if (grad.rank() < 2) {
    return errors::InvalidArgument("Input tensor must be at least 2D: ", grad.shape().ToString());
  }
  bool nchw;
  FS_RETURN_IF_ERROR(ParseBiasFormat(ctx.attrs(), &nchw));
  const ChannelView view(grad.shape(), ChannelDim(nchw, grad.rank()));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{view.channels}, &out));
  if (view.channels == 0) return Status::OK();
  return DispatchDType<float, double>(grad.dtype(), "BiasAddGrad", [&]<typename T>() -> Status {
    // An empty gradient sums to zero: the blocks still run and write 0.
    BiasAddGradKernel<T>
        <<<static_cast<unsigned>(view.channels), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
            grad.data<T>(), view.outer, view.channels, view.inner, out->data<T>());
    return LaunchCheck("BiasAddGrad");
  });
}

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

FS_REGISTER_GPU_KERNEL(GpuKernel("BiasAdd", BiasAddGpu).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("BiasAddGrad", BiasAddGradGpu).Types(kGpuFloatTypes));

}  // namespace
}  // namespace flowstone::cuda
