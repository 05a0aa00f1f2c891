// Launch geometry shared by the plugin's elementwise and reduction kernels: one-dimensional
// grids of fixed-size blocks whose threads stride over the elements.
#pragma once

#include <algorithm>
#include <cstdint>

namespace flowstone::cuda {

constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU; larger inputs are covered by grid-stride loops.
constexpr int64_t kMaxBlocks = 4096;

inline unsigned BlocksFor(int64_t n) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, kMaxBlocks));
}

#ifdef __CUDACC__
// This thread's first element and the stride of a grid-stride loop.
__device__ inline int64_t GridStart() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridStride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }
#endif

}  // namespace flowstone::cuda
