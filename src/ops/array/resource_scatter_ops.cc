// Sparse updates of resource variables in place: ResourceScatterUpdate / Add / Sub / Mul / Div /
// Max / Min (tf.scatter_update and friends: rows of the variable chosen by indices into its
// first dimension) and ResourceScatterNdUpdate / Add / Sub (tf.scatter_nd_update: slices chosen
// by index vectors). Each kernel holds the variable's lock while it checks and writes; a value a
// reader still holds is copied first, so a fetched value never changes.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/resource.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"
#include "ops/var_memory.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;
using scatter_util::Combine;

// var[indices[i...], ...] = combine(var[indices[i...], ...], updates[i..., ...]); updates has
// shape indices.shape + var.shape[1:], or is a scalar applied to every selected element.
template <Combine C>
Status ResourceScatterKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  WritableVar var(ctx, /*value_input=*/2);
  FS_RETURN_IF_ERROR(var.status());
  const Tensor& value = var.value();
  if (value.rank() < 1) {
    return errors::InvalidArgument("Cannot scatter into variable '", var.name(),
                                   "': it is a scalar, and indices select rows of its first "
                                   "dimension");
  }
  TensorShape expected = indices.shape();
  for (int d = 1; d < value.rank(); ++d) expected.AddDim(value.dim(d));
  const bool scalar_update = updates.rank() == 0;
  if (!scalar_update && updates.shape() != expected) {
    return errors::InvalidArgument(
        "updates must have shape indices.shape + variable.shape[1:] = ", expected.ToString(),
        " (or be a scalar) to scatter into variable '", var.name(), "' of shape ",
        value.shape().ToString(), ", got ", updates.shape().ToString());
  }
  std::vector<int64_t> rows;
  FS_RETURN_IF_ERROR(scatter_util::CheckedIndices(indices, value.dim(0), "indices", &rows));
  const int64_t row_size = array_util::DimProduct(value.shape(), 1, value.rank());
  for (int64_t& row : rows) row *= row_size;
  return scatter_util::ScatterSlicesOfType<C>(ctx, value.dtype(), rows, row_size,
                                              updates.raw_data(), scalar_update, value.raw_data());
}

// var[indices[i..., :]] = combine(var[...], updates[i...]) for index vectors of length K.
template <Combine C>
Status ResourceScatterNdKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  WritableVar var(ctx, /*value_input=*/2);
  FS_RETURN_IF_ERROR(var.status());
  const Tensor& value = var.value();
  scatter_util::NdSlices slices;
  FS_RETURN_IF_ERROR(scatter_util::NdSliceOffsets(indices, value.shape(), "shape", &slices));
  TensorShape expected;
  for (int d = 0; d + 1 < indices.rank(); ++d) expected.AddDim(indices.dim(d));
  for (int d = slices.index_depth; d < value.rank(); ++d) expected.AddDim(value.dim(d));
  if (updates.shape() != expected) {
    return errors::InvalidArgument(
        "updates must have shape indices.shape[:-1] + variable.shape[indices.shape[-1]:] = ",
        expected.ToString(), " to scatter into variable '", var.name(), "' of shape ",
        value.shape().ToString(), ", got ", updates.shape().ToString());
  }
  return scatter_util::ScatterSlicesOfType<C>(ctx, value.dtype(), slices.offsets, slices.slice_size,
                                              updates.raw_data(),
                                              /*scalar_update=*/false, value.raw_data());
}

struct ResourceScatterRow {
  const char* name;
  KernelFn kernel;
  const std::vector<DType>* types;
  const char* resource_input;  // TensorFlow names it "resource", or "ref" for the Nd ops
  const char* type_attr;       // "dtype", or "T" for the Nd ops
  const char* doc;
};

const ResourceScatterRow kResourceScatterRows[] = {
    {"ResourceScatterUpdate", ResourceScatterKernel<Combine::kUpdate>, &kAllTypes, "resource",
     "dtype", "Sets rows of a variable: var[indices] = updates (tf.scatter_update)."},
    {"ResourceScatterAdd", ResourceScatterKernel<Combine::kAdd>, &kNumericTypes, "resource",
     "dtype", "Adds to rows of a variable: var[indices] += updates (tf.scatter_add)."},
    {"ResourceScatterSub", ResourceScatterKernel<Combine::kSub>, &kNumericTypes, "resource",
     "dtype", "Subtracts from rows of a variable: var[indices] -= updates (tf.scatter_sub)."},
    {"ResourceScatterMul", ResourceScatterKernel<Combine::kMul>, &kNumericTypes, "resource",
     "dtype", "Multiplies rows of a variable: var[indices] *= updates (tf.scatter_mul)."},
    {"ResourceScatterDiv", ResourceScatterKernel<Combine::kDiv>, &kFloatTypes, "resource", "dtype",
     "Divides rows of a variable: var[indices] /= updates (tf.scatter_div)."},
    {"ResourceScatterMax", ResourceScatterKernel<Combine::kMax>, &kNumericTypes, "resource",
     "dtype", "var[indices] = max(var[indices], updates) (tf.scatter_max)."},
    {"ResourceScatterMin", ResourceScatterKernel<Combine::kMin>, &kNumericTypes, "resource",
     "dtype", "var[indices] = min(var[indices], updates) (tf.scatter_min)."},
    {"ResourceScatterNdUpdate", ResourceScatterNdKernel<Combine::kUpdate>, &kAllTypes, "ref", "T",
     "Sets slices of a variable at index vectors (tf.scatter_nd_update)."},
    {"ResourceScatterNdAdd", ResourceScatterNdKernel<Combine::kAdd>, &kNumericTypes, "ref", "T",
     "Adds to slices of a variable at index vectors (tf.scatter_nd_add)."},
    {"ResourceScatterNdSub", ResourceScatterNdKernel<Combine::kSub>, &kNumericTypes, "ref", "T",
     "Subtracts from slices of a variable at index vectors (tf.scatter_nd_sub)."},
};

const bool kResourceScatterRegistered = [] {
  for (const ResourceScatterRow& row : kResourceScatterRows) {
    OpBuilder builder(row.name);
    builder.Input(row.resource_input, "resource")
        .Input("indices", "Tindices")
        .Input("updates", row.type_attr)
        .TypeAttr(row.type_attr, *row.types)
        .TypeAttr("Tindices", kIndexTypes);
    if (std::string(row.type_attr) == "T") builder.Attr("use_locking", true);
    OpRegistrar registrar(builder.Stateful()
                              .Shape(shape_fns::NoOutputs)
                              .Kernel("CPU", row.kernel)
                              .NotDifferentiable()
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
