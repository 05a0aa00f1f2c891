// Layout changes around cuDNN convolutions, as stream-ordered CUDA kernels on float32 data.
//
// The convolutions run in cuDNN's NCHW layout with KCRS ([out, in, rows, cols]) filters, the
// combination every legacy cuDNN algorithm supports for float32 (TensorFlow's GPU kernels
// transpose float32 NHWC data the same way). One kernel moves data between layouts and, in the
// same pass, adds or removes the uneven part of the padding, which cuDNN cannot express: it pads
// both sides of a dimension equally.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flowstone/status.h"

namespace flowstone::cuda {

// Four sizes or coordinates of a dense row-major 4-D tensor.
struct Dims4 {
  int64_t d[4];
  int64_t num_elements() const { return d[0] * d[1] * d[2] * d[3]; }
};

// Output dimension k is input dimension perm[k].
struct Perm4 {
  int p[4];
};
constexpr Perm4 kSameOrder = {{0, 1, 2, 3}};
constexpr Perm4 kNhwcToNchw = {{0, 3, 1, 2}};
constexpr Perm4 kNchwToNhwc = {{0, 2, 3, 1}};
constexpr Perm4 kHwioToOihw = {{3, 2, 0, 1}};
constexpr Perm4 kOihwToHwio = {{2, 3, 1, 0}};

// Writes `out` (sizes `out_dims`) from `in` (sizes `in_dims`) transposed by `perm`: the element
// at output coordinate o reads input coordinate i with i[perm[k]] = o[k] - shift[perm[k]], or is
// 0 where that falls outside `in`. A positive shift pads the input before its start, a negative
// one crops that many elements off it.
Status Relayout(cudaStream_t stream, const float* in, const Dims4& in_dims, const Perm4& perm,
                const Dims4& shift, const Dims4& out_dims, float* out);

}  // namespace flowstone::cuda
