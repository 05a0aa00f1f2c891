#include "cuda/conv_layout.h"

#include "cuda/cuda_kernel.h"

namespace flowstone::cuda {
namespace {

constexpr int kThreads = 256;

int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? blocks : 65535);
}

// Splits a linear index of a dense 4-D tensor into its coordinates.
__device__ void Coordinates(int64_t index, const Dims4& dims, int64_t* c) {
  for (int k = 3; k >= 0; --k) {
    c[k] = index % dims.d[k];
    index /= dims.d[k];
  }
}

__device__ int64_t LinearIndex(const int64_t* c, const Dims4& dims) {
  return ((c[0] * dims.d[1] + c[1]) * dims.d[2] + c[2]) * dims.d[3] + c[3];
}

__global__ void PadKernel(const float* in, Dims4 in_dims, Dims4 before, Dims4 out_dims,
                          int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t c[4];
    Coordinates(i, out_dims, c);
    bool inside = true;
    for (int k = 0; k < 4; ++k) {
      c[k] -= before.d[k];
      inside = inside && c[k] >= 0 && c[k] < in_dims.d[k];
    }
    out[i] = inside ? in[LinearIndex(c, in_dims)] : 0.0f;
  }
}

__global__ void CropKernel(const float* in, Dims4 in_dims, Dims4 offset, Dims4 out_dims,
                           int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t c[4];
    Coordinates(i, out_dims, c);
    for (int k = 0; k < 4; ++k) c[k] += offset.d[k];
    out[i] = in[LinearIndex(c, in_dims)];
  }
}

__global__ void TransposeKernel(const float* in, int64_t rows, int64_t cols, float* out) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    out[c * rows + r] = in[i];
  }
}

}  // namespace

Status PadImage(cudaStream_t stream, const float* in, const Dims4& in_dims, const Dims4& before,
                const Dims4& out_dims, float* out) {
  const int64_t n = out_dims.num_elements();
  if (n == 0) return Status::OK();
  PadKernel<<<BlocksFor(n), kThreads, 0, stream>>>(in, in_dims, before, out_dims, n, out);
  return LaunchCheck("PadKernel");
}

Status CropImage(cudaStream_t stream, const float* in, const Dims4& in_dims, const Dims4& offset,
                 const Dims4& out_dims, float* out) {
  const int64_t n = out_dims.num_elements();
  if (n == 0) return Status::OK();
  CropKernel<<<BlocksFor(n), kThreads, 0, stream>>>(in, in_dims, offset, out_dims, n, out);
  return LaunchCheck("CropKernel");
}

Status TransposeMatrix(cudaStream_t stream, const float* in, int64_t rows, int64_t cols,
                       float* out) {
  if (rows * cols == 0) return Status::OK();
  TransposeKernel<<<BlocksFor(rows * cols), kThreads, 0, stream>>>(in, rows, cols, out);
  return LaunchCheck("TransposeKernel");
}

}  // namespace flowstone::cuda
