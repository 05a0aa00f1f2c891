// Layout changes around cuDNN convolutions, as stream-ordered CUDA kernels on float32 data:
// cuDNN pads symmetrically, so uneven padding is applied to (or removed from) the image around
// the call, and it wants filters as [out, rows, cols, in] where TensorFlow keeps
// [rows, cols, in, out].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flowstone/status.h"

namespace flowstone::cuda {

// Dense 4-D sizes in memory order (for NHWC images: batch, rows, columns, channels).
struct Dims4 {
  int64_t d[4];
  int64_t num_elements() const { return d[0] * d[1] * d[2] * d[3]; }
};

// out[i] = in[i - before] inside `in`, 0 outside; out has sizes `out_dims`.
Status PadImage(cudaStream_t stream, const float* in, const Dims4& in_dims, const Dims4& before,
                const Dims4& out_dims, float* out);

// out[i] = in[i + offset]: the `out_dims` window of `in` starting at `offset`.
Status CropImage(cudaStream_t stream, const float* in, const Dims4& in_dims, const Dims4& offset,
                 const Dims4& out_dims, float* out);

// Transposes a row-major [rows, cols] matrix into a [cols, rows] one. HWIO filters are
// [rows*cols*in, out] matrices, so this turns them into [out, rows, cols, in] and back.
Status TransposeMatrix(cudaStream_t stream, const float* in, int64_t rows, int64_t cols,
                       float* out);

}  // namespace flowstone::cuda
