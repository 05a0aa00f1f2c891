#include "cuda/conv_layout.h"
#include "cuda/cuda_kernel.h"
#include "cuda/gpu_launch.h"

namespace flowstone::cuda {
namespace {

__global__ void RelayoutKernel(const float* in, Dims4 in_dims, Perm4 perm, Dims4 shift,
                               Dims4 out_dims, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i;
    int64_t at[4];  // input coordinates
    bool inside = true;
    for (int k = 3; k >= 0; --k) {
      const int dim = perm.p[k];
      at[dim] = rest % out_dims.d[k] - shift.d[dim];
      rest /= out_dims.d[k];
      inside = inside && at[dim] >= 0 && at[dim] < in_dims.d[dim];
    }
    const int64_t offset =
        ((at[0] * in_dims.d[1] + at[1]) * in_dims.d[2] + at[2]) * in_dims.d[3] + at[3];
    out[i] = inside ? in[offset] : 0.0f;
  }
}

}  // namespace

Status Relayout(cudaStream_t stream, const float* in, const Dims4& in_dims, const Perm4& perm,
                const Dims4& shift, const Dims4& out_dims, float* out) {
  const int64_t n = out_dims.num_elements();
  if (n == 0) return Status::OK();
  RelayoutKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, in_dims, perm, shift, out_dims,
                                                                n, out);
  return LaunchCheck("RelayoutKernel");
}

}  // namespace flowstone::cuda
