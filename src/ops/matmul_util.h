// Shape planning shared by the CPU matrix-product kernels (matmul_ops.cc) and the GPU ones
// (src/cuda/matmul_kernels.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "flowstone/shape.h"
#include "flowstone/status.h"

namespace flowstone {

// Rows and columns of op(X) for a matrix X of shape [rows, cols] (dims may be unknown, -1).
struct MatrixDims {
  int64_t rows;
  int64_t cols;
};
inline MatrixDims Op(int64_t rows, int64_t cols, bool transpose) {
  return transpose ? MatrixDims{cols, rows} : MatrixDims{rows, cols};
}

// For each matrix of the broadcast batch, the index of the matrix it reads in x and in y.
struct BatchPlan {
  std::vector<int64_t> out_dims;  // broadcast batch dimensions
  std::vector<int64_t> x_index;
  std::vector<int64_t> y_index;
};

// Broadcasts the batch dimensions (all but the last two) of x and y like numpy, or fails with
// InvalidArgument naming both shapes.
Status PlanBatches(const TensorShape& x, const TensorShape& y, BatchPlan* plan);

}  // namespace flowstone
