// Shared pieces of the tf.linalg op families: reading a batch of matrices [..., rows, cols] in
// shape functions and kernels, and the matrix building blocks their gradients are made of.
#pragma once

#include <cstdint>
#include <string>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace linalg {

// A tensor seen as `batch` row-major matrices of rows x cols.
struct MatrixBatch {
  int64_t batch = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t matrix_size() const { return rows * cols; }
};

// Reads [..., rows, cols]; fails unless the rank is at least 2 (and, with `square`, unless
// rows == cols), naming the op and the shape.
Status ReadMatrixBatch(const Tensor& t, const char* op, bool square, MatrixBatch* out);

// Shape functions. SquareMatrix: input 0 is [..., N, N] and output 0 has its shape.
// SquareMatrixToBatch: output 0 (and every other output) is the batch shape [...].
Status SquareMatrixShape(InferenceContext& ctx);
Status SquareMatrixToBatchShape(InferenceContext& ctx);
// Checks that input `i` has rank >= 2 and, with `square`, equal last two dimensions where known.
Status CheckMatrixInput(InferenceContext& ctx, int i, bool square);

// Gradient building blocks, as graph ops on [..., M, N] tensors.
// op(a) @ op(b), where op is the (conjugate) transpose when the flag is set.
Endpoint MatMul(GradientContext& ctx, Endpoint a, Endpoint b, bool adjoint_a = false,
                bool adjoint_b = false);
// The transpose of the last two dimensions.
Endpoint Adjoint(GradientContext& ctx, Endpoint x);
// MatrixBandPart with constant bounds (-1 keeps a whole triangle).
Endpoint BandPart(GradientContext& ctx, Endpoint x, int64_t num_lower, int64_t num_upper);
// x * reciprocal(x * x + 1e-20): 1/x away from 0 and 0 at 0, as TensorFlow's _SafeReciprocal.
Endpoint SafeReciprocal(GradientContext& ctx, Endpoint x);
// ExpandDims with a constant axis.
Endpoint ExpandDims(GradientContext& ctx, Endpoint x, int axis);

}  // namespace linalg
}  // namespace flowstone
