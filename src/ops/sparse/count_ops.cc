// DenseCountSparseOutput and SparseCountSparseOutput (tf.sparse.bincount): how often each value
// occurs (or the sum of its weights, or 1 with binary_output) in each batch row, as a
// SparseTensor of the values that occur, in increasing order per row. Negative values are an
// error and values >= maxlength (when maxlength > 0) are skipped, as in TensorFlow; the last
// dimension of the output is maxlength when positive, else max(largest value + 1, minlength).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Counts by batch row, then by value; rows without counts take no space (a SparseTensor's
// dense shape may promise many rows).
using Counts = std::map<int64_t, std::map<int64_t, double>>;

struct CountAttrs {
  int64_t minlength;
  int64_t maxlength;
  bool binary;
};

CountAttrs ReadCountAttrs(const KernelContext& ctx) {
  return {ctx.attrs().GetOr<int64_t>("minlength", -1), ctx.attrs().GetOr<int64_t>("maxlength", -1),
          ctx.attrs().GetOr<bool>("binary_output", false)};
}

// Adds value (from entry i) to `row`, keeping the largest value counted in *max_value.
Status Count(const CountAttrs& a, const Tensor& weights, int64_t i, int64_t value,
             std::map<int64_t, double>* row, int64_t* max_value) {
  if (value < 0) {
    return errors::InvalidArgument("Input values must all be non-negative, but value ", i, " is ",
                                   value);
  }
  if (a.maxlength > 0 && value >= a.maxlength) return Status::OK();
  if (a.binary) {
    (*row)[value] = 1;
  } else if (weights.num_elements() > 0) {
    (*row)[value] += weights.ElementAsDouble(i);
  } else {
    (*row)[value] += 1;
  }
  *max_value = std::max(*max_value, value);
  return Status::OK();
}

Status WriteCounts(KernelContext& ctx, const CountAttrs& a, const Counts& counts, bool is_1d,
                   int64_t batches, int64_t max_value) {
  // The dense shape's last dimension is the largest value + 1, which INT64_MAX leaves no room for.
  if (a.maxlength <= 0 && max_value == std::numeric_limits<int64_t>::max()) {
    return errors::InvalidArgument(ctx.node().type(), ": value ", max_value,
                                   " leaves no room for the output's dense shape (the largest "
                                   "value + 1); values must be below it, or set maxlength");
  }
  int64_t total = 0;
  for (const auto& [b, row] : counts) total += static_cast<int64_t>(row.size());
  const int64_t rank = is_1d ? 1 : 2;
  Tensor* indices;
  Tensor* values;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape({total, rank}), &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape({total}), &values));
  int64_t k = 0;
  Status written = DispatchDType<int32_t, int64_t, float, double>(
      values->dtype(), ctx.node().type().c_str(), [&]<typename W>() -> Status {
        for (const auto& [b, row] : counts) {
          for (const auto& [value, count] : row) {
            int64_t* index = indices->data<int64_t>() + k * rank;
            if (!is_1d) *index++ = b;
            *index = value;
            values->data<W>()[k++] = static_cast<W>(count);
          }
        }
        return Status::OK();
      });
  FS_RETURN_IF_ERROR(written);
  const int64_t size = a.maxlength > 0 ? a.maxlength : std::max(max_value + 1, a.minlength);
  std::vector<int64_t> shape;
  if (!is_1d) shape.push_back(batches);
  shape.push_back(size);
  ctx.SetOutput(2, Tensor::FromVector<int64_t>(shape, TensorShape({rank})));
  return Status::OK();
}

Status CheckWeights(const Tensor& weights, const Tensor& values, const char* what) {
  if (weights.num_elements() > 0 && weights.shape() != values.shape()) {
    return errors::InvalidArgument(
        "Weights and ", what,
        " must have the same shape. Weight shape: ", weights.shape().ToString(), "; ", what,
        " shape: ", values.shape().ToString());
  }
  return Status::OK();
}

Status DenseCountKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& weights = ctx.input(1);
  if (data.rank() != 1 && data.rank() != 2) {
    return errors::InvalidArgument("Input must be a 1 or 2-dimensional tensor. Got: ",
                                   data.shape().ToString());
  }
  FS_RETURN_IF_ERROR(CheckWeights(weights, data, "data"));
  const bool is_1d = data.rank() == 1;
  if (!is_1d && data.dim(0) == 0) {
    return errors::InvalidArgument("Invalid input: Shapes dimension cannot be 0.");
  }
  const int64_t batches = is_1d ? 1 : data.dim(0);
  const int64_t per_batch = batches == 0 ? 0 : data.num_elements() / batches;
  const CountAttrs a = ReadCountAttrs(ctx);
  Counts counts;
  int64_t max_value = 0;
  for (int64_t i = 0; i < data.num_elements(); ++i) {
    FS_RETURN_IF_ERROR(
        Count(a, weights, i, data.ElementAsInt64(i), &counts[i / per_batch], &max_value));
  }
  return WriteCounts(ctx, a, counts, is_1d, batches, max_value);
}

Status SparseCountKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(1);
  const Tensor& shape = ctx.input(2);
  const Tensor& weights = ctx.input(3);
  if (indices.rank() != 2 || values.rank() != 1 || shape.rank() != 1 ||
      indices.dim(0) != values.dim(0) || indices.dim(1) != shape.dim(0)) {
    return errors::InvalidArgument(
        "SparseCountSparseOutput: indices [N, rank], values [N] and dense_shape [rank] do not "
        "agree: ",
        indices.shape().ToString(), ", ", values.shape().ToString(), ", ",
        shape.shape().ToString());
  }
  if (shape.num_elements() == 0) {
    return errors::InvalidArgument("The shape argument requires at least one element.");
  }
  FS_RETURN_IF_ERROR(CheckWeights(weights, values, "values"));
  const int64_t rank = indices.dim(1);
  const int64_t* idx = indices.data<int64_t>();
  const int64_t* dims = shape.data<int64_t>();
  for (int64_t i = 0; i < values.dim(0); ++i) {
    for (int64_t j = 0; j < rank; ++j) {
      if (idx[i * rank + j] < 0 || idx[i * rank + j] >= dims[j]) {
        return errors::InvalidArgument("Invalid index value at ", i, ": dimension ", j,
                                       " has value ", idx[i * rank + j], " which is not in [0, ",
                                       dims[j], ") (as given by dense shape ",
                                       shape.SummarizeValue(-1), ")");
      }
    }
  }
  const bool is_1d = rank == 1;
  const int64_t batches = is_1d ? 1 : dims[0];
  const CountAttrs a = ReadCountAttrs(ctx);
  Counts counts;
  int64_t max_value = 0;
  for (int64_t i = 0; i < values.dim(0); ++i) {
    Count(a, weights, i, values.ElementAsInt64(i), &counts[is_1d ? 0 : idx[i * rank]], &max_value);
  }
  return WriteCounts(ctx, a, counts, is_1d, batches, max_value);
}

Status CountShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape({-1, -1}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({-1}));
  return Status::OK();
}

const std::vector<DType> kWeightTypes = {DType::kInt32, DType::kInt64, DType::kFloat32,
                                         DType::kFloat64};

// (input name, type) pairs, then the outputs and attrs both ops share.
OpBuilder CountOp(const char* name, std::vector<std::pair<const char*, const char*>> inputs,
                  KernelFn kernel, const char* doc) {
  OpBuilder builder(name);
  for (const auto& [input, type] : inputs) builder.Input(input, type);
  builder.Output("output_indices", "int64")
      .Output("output_values", "output_type")
      .Output("output_dense_shape", "int64")
      .TypeAttr("T", {DType::kInt32, DType::kInt64})
      .Attr("minlength", -1)
      .Attr("maxlength", -1)
      .RequiredAttr("binary_output", AttrType::kBool)
      .TypeAttr("output_type", kWeightTypes)
      .Shape(CountShape)
      .Kernel("CPU", std::move(kernel))
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(CountOp("DenseCountSparseOutput", {{"values", "T"}, {"weights", "output_type"}},
                       DenseCountKernel,
                       "Counts of each value per row of a 1-D or 2-D tensor, as a SparseTensor."));
FS_REGISTER_OP(CountOp(
    "SparseCountSparseOutput",
    {{"indices", "int64"}, {"values", "T"}, {"dense_shape", "int64"}, {"weights", "output_type"}},
    SparseCountKernel, "Counts of each value per row of a SparseTensor, as a SparseTensor."));

}  // namespace
}  // namespace flowstone
