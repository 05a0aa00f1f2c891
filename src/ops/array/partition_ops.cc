// Splitting rows into lists and merging them back: DynamicPartition (tf.dynamic_partition: row
// i goes to output partitions[i]) and DynamicStitch / ParallelDynamicStitch (tf.dynamic_stitch:
// merged[indices[m][i]] = data[m][i]). Each is the other's gradient. Rows are moved as bytes, so
// every dtype is served.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::IndexScalar;

// Whether `prefix` is the start of `shape`.
bool StartsWith(const TensorShape& shape, const TensorShape& prefix) {
  if (shape.rank() < prefix.rank()) return false;
  for (int i = 0; i < prefix.rank(); ++i) {
    if (shape.dim(i) != prefix.dim(i)) return false;
  }
  return true;
}

// --- DynamicPartition ------------------------------------------------------------------------

Status DynamicPartitionShape(InferenceContext& ctx) {
  int64_t num_partitions = 0;
  FS_RETURN_IF_ERROR(ctx.GetAttr("num_partitions", &num_partitions));
  if (num_partitions < 1) {
    return errors::InvalidArgument("num_partitions must be at least 1, got ", num_partitions);
  }
  const PartialShape& data = ctx.input(0);
  const PartialShape& partitions = ctx.input(1);
  PartialShape out = PartialShape::Unknown();
  if (data.known_rank() && partitions.known_rank()) {
    if (data.rank() < partitions.rank()) {
      return errors::InvalidArgument("data.shape ", data.ToString(),
                                     " must start with partitions.shape ", partitions.ToString());
    }
    std::vector<int64_t> dims = {-1};
    for (int i = 0; i < partitions.rank(); ++i) {
      if (data.dim(i) >= 0 && partitions.dim(i) >= 0 && data.dim(i) != partitions.dim(i)) {
        return errors::InvalidArgument("data.shape ", data.ToString(),
                                       " must start with partitions.shape ", partitions.ToString());
      }
    }
    for (int i = partitions.rank(); i < data.rank(); ++i) dims.push_back(data.dim(i));
    out = PartialShape(dims);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, out);
  return Status::OK();
}

Status DynamicPartitionKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& partitions = ctx.input(1);
  const int num_partitions = ctx.num_outputs();
  if (!StartsWith(data.shape(), partitions.shape())) {
    return errors::InvalidArgument("data.shape ", data.shape().ToString(),
                                   " must start with partitions.shape ",
                                   partitions.shape().ToString());
  }
  std::vector<int64_t> target;
  FS_RETURN_IF_ERROR(
      scatter_util::CheckedIndices(partitions, num_partitions, "partitions", &target));
  std::vector<int64_t> counts(num_partitions, 0);
  for (int64_t p : target) ++counts[p];
  std::vector<char*> next(num_partitions);
  const int64_t row_bytes = DimProduct(data.shape(), partitions.rank(), data.rank()) *
                            static_cast<int64_t>(DTypeSize(data.dtype()));
  for (int p = 0; p < num_partitions; ++p) {
    TensorShape shape{counts[p]};
    for (int i = partitions.rank(); i < data.rank(); ++i) shape.AddDim(data.dim(i));
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(p, shape, &out));
    next[p] = static_cast<char*>(out->raw_data());
  }
  const char* src = static_cast<const char*>(data.raw_data());
  for (size_t k = 0; k < target.size() && row_bytes > 0; ++k) {
    std::memcpy(next[target[k]], src + static_cast<int64_t>(k) * row_bytes, row_bytes);
    next[target[k]] += row_bytes;
  }
  return Status::OK();
}

// As TensorFlow: partition the positions of the rows like the rows, and stitch the output
// gradients back to those positions.
Status DynamicPartitionGrad(GradientContext& ctx) {
  const Endpoint partitions = ctx.input(1);
  const Endpoint prefix_shape = ctx.Shape(partitions);
  const Endpoint positions = ctx.Op(
      "Reshape",
      {ctx.Op("Range", {IndexScalar(ctx, 0), ctx.Op("Size", {partitions}), IndexScalar(ctx, 1)}),
       prefix_shape});
  AttrMap attrs;
  attrs.Set("num_partitions", static_cast<int64_t>(ctx.num_outputs()));
  Node* partitioned = ctx.AddNode("DynamicPartition", {positions, partitions}, attrs);
  if (partitioned == nullptr) return ctx.status();
  std::vector<Endpoint> stitch_inputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) stitch_inputs.push_back(Endpoint{partitioned, i});
  for (int i = 0; i < ctx.num_outputs(); ++i) stitch_inputs.push_back(ctx.output_grad(i));
  AttrMap stitch_attrs;
  stitch_attrs.Set("N", static_cast<int64_t>(ctx.num_outputs()));
  const Endpoint stitched = ctx.Op("DynamicStitch", stitch_inputs, stitch_attrs);
  ctx.SetInputGrad(0, ctx.Op("Reshape", {stitched, ctx.Shape(ctx.input(0))}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DynamicPartition")
                   .Input("data", "T")
                   .Input("partitions", "int32")
                   .OutputList("outputs", "T", "num_partitions")
                   .TypeAttr("T", kAllTypes)
                   .Shape(DynamicPartitionShape)
                   .Kernel("CPU", DynamicPartitionKernel)
                   .Gradient(DynamicPartitionGrad)
                   .Doc("Splits the rows of data (its dims after partitions' dims) into "
                        "num_partitions outputs by partition id, keeping their order."));

// --- DynamicStitch / ParallelDynamicStitch ---------------------------------------------------

Status DynamicStitchShape(InferenceContext& ctx) {
  const int n = ctx.num_inputs() / 2;
  const PartialShape& indices = ctx.input(0);
  const PartialShape& data = ctx.input(n);
  if (!indices.known_rank() || !data.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (data.rank() < indices.rank()) {
    return errors::InvalidArgument("data[0].shape ", data.ToString(),
                                   " must start with indices[0].shape ", indices.ToString());
  }
  std::vector<int64_t> dims = {-1};
  for (int i = indices.rank(); i < data.rank(); ++i) dims.push_back(data.dim(i));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status DynamicStitchKernel(KernelContext& ctx) {
  const int n = ctx.num_inputs() / 2;
  const Tensor& first_indices = ctx.input(0);
  const Tensor& first_data = ctx.input(n);
  if (!StartsWith(first_data.shape(), first_indices.shape())) {
    return errors::InvalidArgument("data[0].shape ", first_data.shape().ToString(),
                                   " must start with indices[0].shape ",
                                   first_indices.shape().ToString());
  }
  TensorShape row_shape;
  for (int i = first_indices.rank(); i < first_data.rank(); ++i) {
    row_shape.AddDim(first_data.dim(i));
  }
  int64_t rows = 0;
  for (int m = 0; m < n; ++m) {
    const Tensor& indices = ctx.input(m);
    const Tensor& data = ctx.input(n + m);
    TensorShape expected = indices.shape();
    for (int i = 0; i < row_shape.rank(); ++i) expected.AddDim(row_shape.dim(i));
    if (data.shape() != expected) {
      return errors::InvalidArgument("data[", m, "].shape = ", data.shape().ToString(),
                                     " must be indices[", m, "].shape + ", row_shape.ToString(),
                                     " = ", expected.ToString());
    }
    for (int64_t k = 0; k < indices.num_elements(); ++k) {
      const int64_t index = indices.ElementAsInt64(k);
      if (index < 0) {
        return errors::InvalidArgument("indices[", m, "]",
                                       scatter_util::PositionOf(indices.shape(), k), " = ", index,
                                       " is negative; indices must be >= 0");
      }
      rows = std::max(rows, index + 1);
    }
  }
  const int64_t row_elements = row_shape.num_elements();
  if (row_elements > 0 && rows > std::numeric_limits<int64_t>::max() / row_elements) {
    return errors::InvalidArgument("the merged tensor would have ", rows, " rows of ", row_elements,
                                   " elements, too many to fit int64");
  }
  TensorShape out_shape{rows};
  for (int i = 0; i < row_shape.rank(); ++i) out_shape.AddDim(row_shape.dim(i));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->bytes() == 0) return Status::OK();
  // Rows no index names are zeros; for an index named twice, the later one wins.
  std::memset(out->raw_data(), 0, out->bytes());
  const int64_t row_bytes = row_elements * static_cast<int64_t>(DTypeSize(first_data.dtype()));
  char* dst = static_cast<char*>(out->raw_data());
  for (int m = 0; m < n; ++m) {
    const Tensor& indices = ctx.input(m);
    const char* src = static_cast<const char*>(ctx.input(n + m).raw_data());
    for (int64_t k = 0; k < indices.num_elements(); ++k) {
      std::memcpy(dst + indices.ElementAsInt64(k) * row_bytes, src + k * row_bytes, row_bytes);
    }
  }
  return Status::OK();
}

// Each data tensor's gradient is the merged gradient at its indices (as in TensorFlow, also for
// rows a later duplicate index overwrote).
Status DynamicStitchGrad(GradientContext& ctx) {
  const int n = ctx.num_inputs() / 2;
  for (int m = 0; m < n; ++m) {
    ctx.SetInputGrad(n + m,
                     ctx.Op("GatherV2", {ctx.output_grad(0), ctx.input(m), IndexScalar(ctx, 0)}));
  }
  return Status::OK();
}

OpBuilder StitchOp(const char* name) {
  OpBuilder builder(name);
  builder.InputList("indices", "int32", "N")
      .InputList("data", "T", "N")
      .Output("merged", "T")
      .TypeAttr("T", kAllTypes)
      .Shape(DynamicStitchShape)
      .Kernel("CPU", DynamicStitchKernel)
      .Gradient(DynamicStitchGrad);
  return builder;
}

FS_REGISTER_OP(StitchOp("DynamicStitch")
                   .Doc("Merges the rows of the data tensors into one tensor: merged[indices[m]"
                        "[i...], ...] = data[m][i..., ...] (tf.dynamic_stitch); later entries "
                        "win."));
FS_REGISTER_OP(StitchOp("ParallelDynamicStitch")
                   .Doc("DynamicStitch; TensorFlow leaves the winner among duplicate indices "
                        "unspecified, here the later entry wins as in DynamicStitch."));

}  // namespace
}  // namespace flowstone
