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

// Everything BatchMatMulV2 needs to know before computing: op(x) is [.., m, k], op(y) is
// [.., k, n], and the output has the broadcast batch dimensions followed by [m, n].
struct BatchMatMulPlan {
  BatchPlan batches;
  int64_t m = 0, n = 0, k = 0;
  TensorShape out_shape;
};

// Checks the ranks and the inner dimensions (InvalidArgument naming both shapes) and plans the
// batches.
Status PlanBatchMatMul(const TensorShape& x, const TensorShape& y, bool adj_x, bool adj_y,
                       BatchMatMulPlan* plan);

}  // namespace flowstone
