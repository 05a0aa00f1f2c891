#include "ops/linalg/linalg_util.h"

#include <vector>

namespace flowstone {
namespace linalg {

Status ReadMatrixBatch(const Tensor& t, const char* op, bool square, MatrixBatch* out) {
  const int rank = t.rank();
  if (rank < 2) {
    return errors::InvalidArgument(op,
                                   ": input must have rank >= 2 (a batch of matrices "
                                   "[..., M, N]), but has shape ",
                                   t.shape().ToString());
  }
  out->rows = t.dim(rank - 2);
  out->cols = t.dim(rank - 1);
  if (square && out->rows != out->cols) {
    return errors::InvalidArgument(op, ": input matrices must be square, but the shape is ",
                                   t.shape().ToString());
  }
  out->batch = 1;
  for (int i = 0; i < rank - 2; ++i) out->batch *= t.dim(i);
  return Status::OK();
}

Status CheckMatrixInput(InferenceContext& ctx, int i, bool square) {
  const PartialShape& in = ctx.input(i);
  if (!in.known_rank()) return Status::OK();
  if (in.rank() < 2) {
    return errors::InvalidArgument("Shape must be at least rank 2 but is rank ", in.rank(),
                                   " for '", ctx.node_name(), "' (op: '", ctx.op_type(),
                                   "') with input shape ", in.ToString());
  }
  const int64_t rows = in.dim(in.rank() - 2);
  const int64_t cols = in.dim(in.rank() - 1);
  if (square && rows >= 0 && cols >= 0 && rows != cols) {
    return errors::InvalidArgument("Dimensions must be equal, but are ", rows, " and ", cols,
                                   " for '", ctx.node_name(), "' (op: '", ctx.op_type(),
                                   "'): the input matrices must be square");
  }
  return Status::OK();
}

Status SquareMatrixShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(CheckMatrixInput(ctx, 0, true));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status SquareMatrixToBatchShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(CheckMatrixInput(ctx, 0, true));
  const PartialShape& in = ctx.input(0);
  PartialShape batch;
  if (in.known_rank()) {
    std::vector<int64_t> dims = in.ToVector();
    dims.resize(dims.size() - 2);
    batch = PartialShape(dims);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, batch);
  return Status::OK();
}

Endpoint MatMul(GradientContext& ctx, Endpoint a, Endpoint b, bool adjoint_a, bool adjoint_b) {
  AttrMap attrs;
  attrs.Set("adj_x", adjoint_a);
  attrs.Set("adj_y", adjoint_b);
  return ctx.Op("BatchMatMulV2", {a, b}, attrs);
}

Endpoint Adjoint(GradientContext& ctx, Endpoint x) {
  const PartialShape& shape = x.node ? x.node->output_shape(x.index) : PartialShape();
  if (shape.known_rank()) {
    const int rank = shape.rank();
    std::vector<int32_t> perm(rank);
    for (int i = 0; i < rank; ++i) perm[i] = i;
    std::swap(perm[rank - 2], perm[rank - 1]);
    return ctx.Op("Transpose", {x, ctx.Const(Tensor::FromVector(perm, TensorShape{rank}))});
  }
  // perm[i] = i + [i == rank - 2] - [i == rank - 1], computed when the graph runs.
  AttrMap to_int;
  to_int.Set("DstT", DType::kInt32);
  const Endpoint one = ctx.Const(Tensor::Scalar<int32_t>(1));
  const Endpoint two = ctx.Const(Tensor::Scalar<int32_t>(2));
  const Endpoint rank = ctx.Op("Rank", {x});
  const Endpoint index = ctx.Op("Range", {ctx.Const(Tensor::Scalar<int32_t>(0)), rank, one});
  const Endpoint up =
      ctx.Op("Cast", {ctx.Op("Equal", {index, ctx.Op("Sub", {rank, two})})}, to_int);
  const Endpoint down =
      ctx.Op("Cast", {ctx.Op("Equal", {index, ctx.Op("Sub", {rank, one})})}, to_int);
  const Endpoint perm = ctx.Op("Sub", {ctx.Op("AddV2", {index, up}), down});
  return ctx.Op("Transpose", {x, perm});
}

Endpoint BandPart(GradientContext& ctx, Endpoint x, int64_t num_lower, int64_t num_upper) {
  return ctx.Op("MatrixBandPart", {x, ctx.Const(Tensor::Scalar<int64_t>(num_lower)),
                                   ctx.Const(Tensor::Scalar<int64_t>(num_upper))});
}

Endpoint SafeReciprocal(GradientContext& ctx, Endpoint x) {
  const Endpoint squared_plus_epsilon =
      ctx.Op("AddV2", {ctx.Op("Mul", {x, x}), ctx.ScalarLike(x, 1e-20)});
  return ctx.Op("Mul", {x, ctx.Op("Reciprocal", {squared_plus_epsilon})});
}

Endpoint ExpandDims(GradientContext& ctx, Endpoint x, int axis) {
  return ctx.Op("ExpandDims", {x, ctx.Const(Tensor::Scalar<int32_t>(axis))});
}

}  // namespace linalg
}  // namespace flowstone
