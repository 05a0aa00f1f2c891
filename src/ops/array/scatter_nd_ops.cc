// N-dimensional indexing: GatherNd (tf.gather_nd), ScatterNd (tf.scatter_nd) and the
// TensorScatter family (tf.tensor_scatter_nd_update / _add / _sub / _max / _min), which write
// slices into a copy of a tensor. An index tensor of shape [..., K] holds index vectors of length
// K; each selects a slice of shape shape[K:]. An index vector outside the shape is an error.
#include <cstring>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;
using array_util::ShapeAs;
using scatter_util::Combine;
using scatter_util::NdSliceOffsets;
using scatter_util::NdSlices;

// indices.shape[:-1] + shape[K:], the shape of GatherNd's result and of a scatter's updates;
// unknown when a rank or K is unknown.
PartialShape SlicesShape(const PartialShape& indices, const PartialShape& shape) {
  if (!indices.known_rank() || !shape.known_rank() || indices.rank() < 1) {
    return PartialShape::Unknown();
  }
  const int64_t depth = indices.dim(indices.rank() - 1);
  if (depth < 0 || depth > shape.rank()) return PartialShape::Unknown();
  std::vector<int64_t> dims;
  for (int i = 0; i + 1 < indices.rank(); ++i) dims.push_back(indices.dim(i));
  for (int i = static_cast<int>(depth); i < shape.rank(); ++i) dims.push_back(shape.dim(i));
  return PartialShape(dims);
}

TensorShape SlicesShape(const Tensor& indices, const TensorShape& shape, int depth) {
  TensorShape out;
  for (int i = 0; i + 1 < indices.rank(); ++i) out.AddDim(indices.dim(i));
  for (int i = depth; i < shape.rank(); ++i) out.AddDim(shape.dim(i));
  return out;
}

// Graph-time checks shared by the shape functions: indices are at least a vector whose last
// dimension fits the shape's rank.
Status CheckIndexDepth(const PartialShape& indices, const PartialShape& shape,
                       const char* shape_name) {
  if (indices.known_rank() && indices.rank() < 1) {
    return errors::InvalidArgument("indices must be at least a vector, got shape ",
                                   indices.ToString());
  }
  if (indices.known_rank() && shape.known_rank() && indices.dim(indices.rank() - 1) >= 0 &&
      indices.dim(indices.rank() - 1) > shape.rank()) {
    return errors::InvalidArgument("index innermost dimension length must be <= ", shape_name,
                                   " rank; saw: ", indices.dim(indices.rank() - 1), " vs. ",
                                   shape.rank());
  }
  return Status::OK();
}

Status CheckUpdatesShape(const PartialShape& updates, const PartialShape& expected) {
  if (!updates.IsCompatibleWith(expected)) {
    return errors::InvalidArgument(
        "updates must have shape indices.shape[:-1] + "
        "shape[indices.shape[-1]:] = ",
        expected.ToString(), ", got ", updates.ToString());
  }
  return Status::OK();
}

// --- GatherNd --------------------------------------------------------------------------------

Status GatherNdShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(CheckIndexDepth(ctx.input(1), ctx.input(0), "params"));
  ctx.set_output(0, SlicesShape(ctx.input(1), ctx.input(0)));
  return Status::OK();
}

Status GatherNdKernel(KernelContext& ctx) {
  const Tensor& params = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  NdSlices slices;
  FS_RETURN_IF_ERROR(NdSliceOffsets(indices, params.shape(), "param shape", &slices));
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, SlicesShape(indices, params.shape(), slices.index_depth), &out));
  const int64_t element = static_cast<int64_t>(DTypeSize(params.dtype()));
  const int64_t slice_bytes = slices.slice_size * element;
  if (slice_bytes == 0) return Status::OK();
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  ctx.ParallelFor(static_cast<int64_t>(slices.offsets.size()), slice_bytes / 4 + 1,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t n = begin; n < end; ++n) {
                      CopyElementBytes(params.dtype(), src + slices.offsets[n] * element,
                                       dst + n * slice_bytes, slice_bytes);
                    }
                  });
  return Status::OK();
}

// d params: the gradient slices summed back into zeros of params' shape.
Status GatherNdGrad(GradientContext& ctx) {
  const DType index_type = ctx.input_type(1);
  ctx.SetInputGrad(0, ctx.Op("ScatterNd", {ctx.input(1), ctx.output_grad(0),
                                           ShapeAs(ctx, ctx.input(0), index_type)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("GatherNd")
                   .Input("params", "Tparams")
                   .Input("indices", "Tindices")
                   .Output("output", "Tparams")
                   .TypeAttr("Tparams", kAllTypesAndString)
                   .TypeAttr("Tindices", kIndexTypes)
                   .Attr("bad_indices_policy", "")
                   .Shape(GatherNdShape)
                   .Kernel("CPU", GatherNdKernel)
                   .Gradient(GatherNdGrad)
                   .Doc("Slices of params at the index vectors in the last dimension of indices "
                        "(tf.gather_nd): output[i...] = params[indices[i..., :]]."));

// --- ScatterNd -------------------------------------------------------------------------------

// The output shape of ScatterNd: a vector of non-negative sizes whose product fits int64.
Status ReadScatterShape(const Tensor& shape_tensor, TensorShape* out) {
  if (shape_tensor.rank() != 1) {
    return errors::InvalidArgument("shape must be a vector, got shape ",
                                   shape_tensor.shape().ToString());
  }
  const std::vector<int64_t> dims = array_util::IntValues(shape_tensor);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return errors::InvalidArgument("shape[", i, "] = ", dims[i], " must be non-negative");
    }
  }
  return scatter_util::CheckedShape(dims, out);
}

Status ScatterNdShape(InferenceContext& ctx) {
  PartialShape shape;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(2, &shape));
  FS_RETURN_IF_ERROR(CheckIndexDepth(ctx.input(0), shape, "output"));
  FS_RETURN_IF_ERROR(CheckUpdatesShape(ctx.input(1), SlicesShape(ctx.input(0), shape)));
  ctx.set_output(0, shape);
  return Status::OK();
}

Status CheckUpdates(const Tensor& updates, const Tensor& indices, const TensorShape& shape,
                    int depth) {
  const TensorShape expected = SlicesShape(indices, shape, depth);
  if (updates.shape() != expected) {
    return errors::InvalidArgument(
        "updates must have shape indices.shape[:-1] + "
        "shape[indices.shape[-1]:] = ",
        expected.ToString(), ", got ", updates.shape().ToString());
  }
  return Status::OK();
}

// Zeros of `shape` with each update slice added at its index vector (duplicates add up).
Status ScatterNdKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& updates = ctx.input(1);
  TensorShape shape;
  FS_RETURN_IF_ERROR(ReadScatterShape(ctx.input(2), &shape));
  NdSlices slices;
  FS_RETURN_IF_ERROR(NdSliceOffsets(indices, shape, "shape", &slices));
  FS_RETURN_IF_ERROR(CheckUpdates(updates, indices, shape, slices.index_depth));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  if (out->bytes() > 0) std::memset(out->raw_data(), 0, out->bytes());
  return scatter_util::ScatterSlicesOfType<Combine::kAdd>(ctx, updates.dtype(), slices.offsets,
                                                          slices.slice_size, updates.raw_data(),
                                                          /*scalar_update=*/false, out->raw_data());
}

// d updates: the gradient at the positions the updates went to.
Status ScatterNdGrad(GradientContext& ctx) {
  ctx.SetInputGrad(1, ctx.Op("GatherNd", {ctx.output_grad(0), ctx.input(0)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ScatterNd")
                   .Input("indices", "Tindices")
                   .Input("updates", "T")
                   .Input("shape", "Tindices")
                   .Output("output", "T")
                   .TypeAttr("T", kNumericTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .Attr("bad_indices_policy", "")
                   .Shape(ScatterNdShape)
                   .Kernel("CPU", ScatterNdKernel)
                   .Gradient(ScatterNdGrad)
                   .Doc("Zeros of `shape` with the slices of updates added at the index vectors "
                        "in indices (tf.scatter_nd); duplicate indices add up."));

// --- TensorScatterUpdate / Add / Sub / Max / Min ---------------------------------------------

Status TensorScatterShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(CheckIndexDepth(ctx.input(1), ctx.input(0), "tensor"));
  FS_RETURN_IF_ERROR(CheckUpdatesShape(ctx.input(2), SlicesShape(ctx.input(1), ctx.input(0))));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

// A copy of tensor (its buffer, when no one else holds it) with the update slices combined in,
// in index order.
template <Combine C>
Status TensorScatterKernel(KernelContext& ctx) {
  const Tensor& tensor = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  NdSlices slices;
  FS_RETURN_IF_ERROR(NdSliceOffsets(indices, tensor.shape(), "shape", &slices));
  FS_RETURN_IF_ERROR(CheckUpdates(updates, indices, tensor.shape(), slices.index_depth));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, tensor.shape(), &out));
  if (out->raw_data() != tensor.raw_data() && tensor.bytes() > 0) {
    std::memcpy(out->raw_data(), tensor.raw_data(), tensor.bytes());
  }
  return scatter_util::ScatterSlicesOfType<C>(ctx, tensor.dtype(), slices.offsets,
                                              slices.slice_size, updates.raw_data(),
                                              /*scalar_update=*/false, out->raw_data());
}

// Replaced positions get no gradient; each update gets the gradient at its position.
Status TensorScatterUpdateGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(
      0, ctx.Op("TensorScatterUpdate", {grad, ctx.input(1), ctx.Op("ZerosLike", {ctx.input(2)})}));
  ctx.SetInputGrad(2, ctx.Op("GatherNd", {grad, ctx.input(1)}));
  return Status::OK();
}

Status TensorScatterAddGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Identity", {grad}));
  ctx.SetInputGrad(2, ctx.Op("GatherNd", {grad, ctx.input(1)}));
  return Status::OK();
}

Status TensorScatterSubGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Identity", {grad}));
  ctx.SetInputGrad(2, ctx.Op("Neg", {ctx.Op("GatherNd", {grad, ctx.input(1)})}));
  return Status::OK();
}

// As TensorFlow: the gradient of an output element is shared equally by the inputs (the
// original value and the updates) that equal it.
Status TensorScatterMinOrMaxGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint tensor = ctx.input(0);
  const Endpoint indices = ctx.input(1);
  const Endpoint updates = ctx.input(2);
  const Endpoint output = ctx.output(0);
  AttrMap cast;
  cast.Set("DstT", ctx.input_type(0));
  const Endpoint x_indicators = ctx.Op("Cast", {ctx.Op("Equal", {output, tensor})}, cast);
  const Endpoint y_output = ctx.Op("GatherNd", {output, indices});
  const Endpoint y_indicators = ctx.Op("Cast", {ctx.Op("Equal", {y_output, updates})}, cast);
  const Endpoint ys_indicators =
      ctx.Op("ScatterNd", {indices, y_indicators, ShapeAs(ctx, tensor, ctx.input_type(1))});
  const Endpoint indicators = ctx.Op("AddV2", {x_indicators, ys_indicators});
  ctx.SetInputGrad(0, ctx.Op("RealDiv", {ctx.Op("Mul", {grad, x_indicators}), indicators}));
  ctx.SetInputGrad(
      2, ctx.Op("Mul", {ctx.Op("GatherNd", {ctx.Op("RealDiv", {grad, indicators}), indices}),
                        y_indicators}));
  return Status::OK();
}

struct TensorScatterRow {
  const char* name;
  KernelFn kernel;
  const std::vector<DType>* types;
  GradFn gradient;
  const char* doc;
};

const TensorScatterRow kTensorScatterRows[] = {
    {"TensorScatterUpdate", TensorScatterKernel<Combine::kUpdate>, &kAllTypes,
     TensorScatterUpdateGrad,
     "A copy of tensor with the slices at indices replaced by updates "
     "(tf.tensor_scatter_nd_update)."},
    {"TensorScatterAdd", TensorScatterKernel<Combine::kAdd>, &kNumericTypes, TensorScatterAddGrad,
     "A copy of tensor with updates added at indices (tf.tensor_scatter_nd_add)."},
    {"TensorScatterSub", TensorScatterKernel<Combine::kSub>, &kNumericTypes, TensorScatterSubGrad,
     "A copy of tensor with updates subtracted at indices (tf.tensor_scatter_nd_sub)."},
    {"TensorScatterMax", TensorScatterKernel<Combine::kMax>, &kNumericTypes,
     TensorScatterMinOrMaxGrad,
     "A copy of tensor with each slice at indices the elementwise maximum of itself and the "
     "update (tf.tensor_scatter_nd_max)."},
    {"TensorScatterMin", TensorScatterKernel<Combine::kMin>, &kNumericTypes,
     TensorScatterMinOrMaxGrad,
     "A copy of tensor with each slice at indices the elementwise minimum of itself and the "
     "update (tf.tensor_scatter_nd_min)."},
};

const bool kTensorScatterRegistered = [] {
  for (const TensorScatterRow& row : kTensorScatterRows) {
    OpRegistrar registrar(OpBuilder(row.name)
                              .Input("tensor", "T")
                              .Input("indices", "Tindices")
                              .Input("updates", "T")
                              .Output("output", "T")
                              .TypeAttr("T", *row.types)
                              .TypeAttr("Tindices", kIndexTypes)
                              .Attr("bad_indices_policy", "")
                              .Shape(TensorScatterShape)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.gradient)
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
