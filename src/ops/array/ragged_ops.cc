// The per-element kernels of tf.RaggedTensor (a composite of flat values and one row_splits vector
// per ragged dimension, python/flowstone/ops/ragged_tensor.py):
//   - RaggedTensorToTensor: the padded dense tensor (RaggedTensor.to_tensor), its partitions given
//     as ROW_SPLITS, or FIRST_DIM_SIZE then VALUE_ROWIDS; a shape crops or pads it;
//   - RaggedTensorToSparse: the SparseTensor of the same elements (RaggedTensor.to_sparse);
//   - RaggedRange: a ragged tensor of ranges (tf.ragged.range);
//   - RaggedGather: rows of a ragged tensor gathered along its first dimension (tf.gather).
// TensorFlow's schemas, so the TensorFlow oracle checks them op for op. RaggedTensorToTensor,
// RaggedTensorToSparse and RaggedGather are differentiable in their values, as TensorFlow's
// Python gradients make them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;
using Splits = std::vector<int64_t>;

// The largest FIRST_DIM_SIZE accepted (its row splits are allocated before any check).
constexpr int64_t kMaxRows = int64_t{1} << 32;

// Checks that `splits` partitions `size` elements: starts at 0, never decreases, ends at `size`.
Status CheckSplits(const char* op, const Splits& splits, int64_t size, int level) {
  if (splits.empty() || splits.front() != 0 || splits.back() != size ||
      !std::is_sorted(splits.begin(), splits.end())) {
    return errors::InvalidArgument(op, ": row_splits of ragged dimension ", level,
                                   " must start at 0, not decrease and end at ", size,
                                   " (the size of the next dimension), got [",
                                   array_util::JoinInts(splits), "]");
  }
  return Status::OK();
}

// The row splits of each ragged level read from inputs [first, first + count), checked against
// the size of the level below (the last against `num_values`).
Status ReadNestedSplits(const char* op, KernelContext& ctx, int first, int count,
                        int64_t num_values, std::vector<Splits>* out) {
  out->resize(count);
  for (int k = 0; k < count; ++k) {
    const Tensor& t = ctx.input(first + k);
    if (t.rank() != 1) {
      return errors::InvalidArgument(op, ": row_splits must be vectors, got shape ",
                                     t.shape().ToString());
    }
    (*out)[k] = array_util::IntValues(t);
  }
  for (int k = 0; k < count; ++k) {
    const int64_t below =
        k + 1 < count ? static_cast<int64_t>((*out)[k + 1].size()) - 1 : num_values;
    FS_RETURN_IF_ERROR(CheckSplits(op, (*out)[k], below, k));
  }
  return Status::OK();
}

// For each value row, its coordinates in the ragged dimensions: (top row, position in each
// ragged level), row-major: coords[v * (levels + 1) + k].
std::vector<int64_t> ValueCoordinates(const std::vector<Splits>& splits, int64_t num_values) {
  const int levels = static_cast<int>(splits.size());
  std::vector<int64_t> coords(num_values * (levels + 1));
  // rowids[k][e]: the row of level k holding element e of the level below.
  std::vector<std::vector<int64_t>> rowids(levels);
  for (int k = 0; k < levels; ++k) {
    rowids[k].resize(splits[k].back());
    for (size_t r = 0; r + 1 < splits[k].size(); ++r) {
      std::fill(rowids[k].begin() + splits[k][r], rowids[k].begin() + splits[k][r + 1],
                static_cast<int64_t>(r));
    }
  }
  for (int64_t v = 0; v < num_values; ++v) {
    int64_t e = v;
    for (int k = levels - 1; k >= 0; --k) {
      const int64_t row = rowids[k][e];
      coords[v * (levels + 1) + k + 1] = e - splits[k][row];
      e = row;
    }
    coords[v * (levels + 1)] = e;
  }
  return coords;
}

int64_t LongestRow(const Splits& splits) {
  int64_t longest = 0;
  for (size_t r = 0; r + 1 < splits.size(); ++r) {
    longest = std::max(longest, splits[r + 1] - splits[r]);
  }
  return longest;
}

// Writes `values` into the int32 or int64 output `index`, shaped `shape`.
Status WriteInts(KernelContext& ctx, int index, const std::vector<int64_t>& values,
                 const TensorShape& shape) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(index, shape, &out));
  for (size_t i = 0; i < values.size(); ++i) {
    if (out->dtype() == DType::kInt32) {
      out->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      out->data<int64_t>()[i] = values[i];
    }
  }
  return Status::OK();
}

std::vector<int64_t> InnerDims(const Tensor& values) {
  std::vector<int64_t> dims = values.shape().ToVector();
  return std::vector<int64_t>(dims.begin() + std::min<size_t>(1, dims.size()), dims.end());
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// --- RaggedTensorToTensor ----------------------------------------------------------------------

class RaggedTensorToTensorKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    FS_RETURN_IF_ERROR(node().attrs().Get("row_partition_types", &types_));
    const bool splits = !types_.empty() && types_[0] == "ROW_SPLITS";
    const bool rowids = types_.size() >= 2 && types_[0] == "FIRST_DIM_SIZE";
    for (size_t i = 1; i < types_.size(); ++i) {
      if (types_[i] != (splits ? "ROW_SPLITS" : "VALUE_ROWIDS")) {
        return errors::InvalidArgument(
            "RaggedTensorToTensor: row_partition_types must be all "
            "ROW_SPLITS, or FIRST_DIM_SIZE then VALUE_ROWIDS, got ",
            types_[i], " at ", i);
      }
    }
    if (!splits && !rowids) {
      return errors::InvalidArgument(
          "RaggedTensorToTensor: row_partition_types must start with "
          "ROW_SPLITS, or with FIRST_DIM_SIZE and VALUE_ROWIDS");
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& shape = ctx.input(0);
    const Tensor& values = ctx.input(1);
    const Tensor& fallback = ctx.input(2);
    if (values.rank() < 1) {
      return errors::InvalidArgument(
          "RaggedTensorToTensor: values must have rank >= 1, got a "
          "scalar");
    }
    std::vector<Splits> splits;
    FS_RETURN_IF_ERROR(PartitionsAsSplits(ctx, values.dim(0), &splits));
    const int levels = static_cast<int>(splits.size());
    const std::vector<int64_t> inner = InnerDims(values);
    // The natural shape, then the requested one where it says a size.
    std::vector<int64_t> dims{static_cast<int64_t>(splits[0].size()) - 1};
    for (const Splits& s : splits) dims.push_back(LongestRow(s));
    dims.insert(dims.end(), inner.begin(), inner.end());
    if (shape.rank() == 1) {
      if (shape.num_elements() != static_cast<int64_t>(dims.size())) {
        return errors::InvalidArgument("RaggedTensorToTensor: shape has ", shape.num_elements(),
                                       " dimensions, the ragged tensor ", dims.size());
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t want = shape.ElementAsInt64(static_cast<int64_t>(d));
        if (want < 0) continue;
        if (d > static_cast<size_t>(levels) && want != dims[d]) {
          return errors::InvalidArgument("RaggedTensorToTensor: shape[", d, "] = ", want,
                                         " differs from the values' dimension ", dims[d]);
        }
        dims[d] = want;
      }
    } else if (shape.rank() > 1) {
      return errors::InvalidArgument(
          "RaggedTensorToTensor: shape must be a vector or a scalar, "
          "got shape ",
          shape.shape().ToString());
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
    const int64_t row = Product(inner);
    Tensor filler;
    FS_RETURN_IF_ERROR(BroadcastDefault(ctx, fallback, inner, &filler));
    const DType dtype = values.dtype();
    const size_t element = DTypeSize(dtype);
    auto* dst = static_cast<char*>(out->raw_data());
    const int64_t out_rows = row == 0 ? 0 : out->num_elements() / row;
    for (int64_t r = 0; r < out_rows; ++r) {
      CopyElements(dtype, filler.raw_data(), dst + r * row * element, row);
    }
    const std::vector<int64_t> coords = ValueCoordinates(splits, values.dim(0));
    const auto* src = static_cast<const char*>(values.raw_data());
    for (int64_t v = 0; v < values.dim(0); ++v) {
      int64_t offset = 0;
      bool inside = true;
      for (int k = 0; k <= levels && inside; ++k) {
        const int64_t c = coords[v * (levels + 1) + k];
        inside = c < dims[k];
        offset = offset * dims[k] + c;
      }
      if (inside) CopyElements(dtype, src + v * row * element, dst + offset * row * element, row);
    }
    return Status::OK();
  }

 private:
  // The partitions as row splits: ROW_SPLITS as they are, VALUE_ROWIDS (sorted row ids, the
  // first level's row count given by FIRST_DIM_SIZE) counted into splits.
  Status PartitionsAsSplits(KernelContext& ctx, int64_t num_values,
                            std::vector<Splits>* out) const {
    const int count = ctx.num_inputs() - 3;
    if (count != static_cast<int>(types_.size())) {
      return errors::InvalidArgument("RaggedTensorToTensor: ", count, " row_partition_tensors for ",
                                     types_.size(), " row_partition_types");
    }
    if (types_[0] == "ROW_SPLITS") {
      return ReadNestedSplits("RaggedTensorToTensor", ctx, 3, count, num_values, out);
    }
    const Tensor& first_dim = ctx.input(3);
    int64_t rows = first_dim.num_elements() == 1 ? first_dim.ElementAsInt64(0) : -1;
    if (first_dim.rank() != 0 || rows < 0 || rows > kMaxRows) {
      return errors::InvalidArgument(
          "RaggedTensorToTensor: FIRST_DIM_SIZE must be a scalar in [0, ", kMaxRows, "], got ",
          first_dim.shape().ToString(), rows < 0 ? "" : " holding ",
          rows < 0 ? "" : std::to_string(rows));
    }
    for (int k = 1; k < count; ++k) {
      if (ctx.input(3 + k).rank() != 1) {
        return errors::InvalidArgument(
            "RaggedTensorToTensor: value_rowids must be vectors, got "
            "shape ",
            ctx.input(3 + k).shape().ToString());
      }
      const std::vector<int64_t> ids = array_util::IntValues(ctx.input(3 + k));
      Splits splits(rows + 1, 0);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= rows || (i > 0 && ids[i] < ids[i - 1])) {
          return errors::InvalidArgument(
              "RaggedTensorToTensor: value_rowids must be sorted and "
              "in [0, ",
              rows, "), got ", ids[i], " at ", i);
        }
        ++splits[ids[i] + 1];
      }
      for (int64_t r = 0; r < rows; ++r) splits[r + 1] += splits[r];
      rows = static_cast<int64_t>(ids.size());
      out->push_back(std::move(splits));
    }
    return CheckSplits("RaggedTensorToTensor", out->back(), num_values, count - 2);
  }

  // default_value broadcast to one row of the inner dimensions.
  static Status BroadcastDefault(KernelContext& ctx, const Tensor& fallback,
                                 const std::vector<int64_t>& inner, Tensor* out) {
    const std::vector<int64_t> dims = fallback.shape().ToVector();
    if (dims.size() > inner.size()) {
      return errors::InvalidArgument(
          "RaggedTensorToTensor: default_value of shape ", fallback.shape().ToString(),
          " does not broadcast to the values' inner shape [", array_util::JoinInts(inner), "]");
    }
    const size_t lead = inner.size() - dims.size();
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] != 1 && dims[d] != inner[lead + d]) {
        return errors::InvalidArgument(
            "RaggedTensorToTensor: default_value of shape ", fallback.shape().ToString(),
            " does not broadcast to the values' inner shape [", array_util::JoinInts(inner), "]");
      }
    }
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(fallback.dtype(), TensorShape(inner), out));
    const size_t element = DTypeSize(fallback.dtype());
    const int64_t n = Product(inner);
    for (int64_t i = 0; i < n; ++i) {
      // The default's element for inner position i: its coordinates, 0 where it broadcasts.
      int64_t rest = i, source = 0, stride = 1;
      for (int d = static_cast<int>(inner.size()) - 1; d >= static_cast<int>(lead); --d) {
        const int64_t c = rest % inner[d];
        rest /= inner[d];
        if (dims[d - lead] != 1) source += c * stride;
        stride *= dims[d - lead];
      }
      CopyElements(fallback.dtype(),
                   static_cast<const char*>(fallback.raw_data()) + source * element,
                   static_cast<char*>(out->raw_data()) + i * element, 1);
    }
    return Status::OK();
  }

  std::vector<std::string> types_;
};

Status RaggedTensorToTensorShape(InferenceContext& ctx) {
  const PartialShape& values = ctx.input(1);
  const int levels = ctx.num_inputs() - 3;
  const Tensor* shape = ctx.input_value(0);
  if (shape != nullptr && shape->rank() == 1) {
    std::vector<int64_t> dims = array_util::IntValues(*shape);
    for (auto& d : dims) d = d < 0 ? -1 : d;
    ctx.set_output(0, PartialShape(dims));
    return Status::OK();
  }
  if (!values.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims(levels + 1, -1);
  for (int d = 1; d < values.rank(); ++d) dims.push_back(values.dim(d));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// d values = the gradient at each value's place in the dense result (zero where the shape
// cropped it); d default_value = the gradient summed over the padding, reduced to its shape.
// The places come from the op itself run on the values' flat positions (padding -1).
Status RaggedTensorToTensorGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint values = ctx.input(1);
  std::vector<Endpoint> inputs{ctx.input(0)};
  AttrMap int64_size;
  int64_size.Set("out_type", DType::kInt64);
  const Endpoint count = ctx.Op("Size", {values}, int64_size);
  const Endpoint zero = ctx.Const(Tensor::Scalar<int64_t>(0));
  const Endpoint one = ctx.Const(Tensor::Scalar<int64_t>(1));
  const Endpoint positions =
      ctx.Op("Reshape", {ctx.Op("Range", {zero, count, one}), ctx.Shape(values)});
  inputs.push_back(positions);
  inputs.push_back(ctx.Const(Tensor::Scalar<int64_t>(-1)));
  for (int i = 3; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  AttrMap attrs = ctx.attrs();
  attrs.Set("T", DType::kInt64);
  const Endpoint places = ctx.Op("RaggedTensorToTensor", inputs, attrs);
  const Endpoint flat = ctx.Const(Tensor::FromVector<int32_t>({-1}, TensorShape{1}));
  const Endpoint summed = ctx.Op("UnsortedSegmentSum", {ctx.Op("Reshape", {grad, flat}),
                                                        ctx.Op("Reshape", {places, flat}), count});
  ctx.SetInputGrad(1, ctx.Op("Reshape", {summed, ctx.Shape(values)}));
  const Endpoint padding = ctx.Op("Less", {places, zero});
  const Endpoint padded = ctx.Op("SelectV2", {padding, grad, ctx.ScalarLike(grad, 0.0)});
  ctx.SetInputGrad(2, ctx.ReduceToShapeOf(padded, ctx.input(2), padded));
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("RaggedTensorToTensor")
                   .Input("shape", "Tshape")
                   .Input("values", "T")
                   .Input("default_value", "T")
                   .InputList("row_partition_tensors", "Tindex", "num_row_partition_tensors")
                   .Output("result", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Tindex", kIndexTypes)
                   .TypeAttr("Tshape", kIndexTypes)
                   .RequiredAttr("row_partition_types", AttrType::kStringList)
                   .Shape(RaggedTensorToTensorShape)
                   .KernelClass<RaggedTensorToTensorKernel>("CPU")
                   .Gradient(RaggedTensorToTensorGrad)
                   .Doc("A ragged tensor (values and row partitions) as a dense tensor, padded "
                        "with default_value and cropped or padded to shape."));

// --- RaggedTensorToSparse ----------------------------------------------------------------------

Status RaggedTensorToSparseKernel(KernelContext& ctx) {
  const int levels = ctx.num_inputs() - 1;
  const Tensor& values = ctx.input(levels);
  if (levels < 1) {
    return errors::InvalidArgument("RaggedTensorToSparse: RAGGED_RANK must be at least 1");
  }
  if (values.rank() < 1) {
    return errors::InvalidArgument("RaggedTensorToSparse: rt_dense_values must have rank >= 1");
  }
  std::vector<Splits> splits;
  FS_RETURN_IF_ERROR(
      ReadNestedSplits("RaggedTensorToSparse", ctx, 0, levels, values.dim(0), &splits));
  const std::vector<int64_t> inner = InnerDims(values);
  const int64_t row = Product(inner);
  const int rank = levels + 1 + static_cast<int>(inner.size());
  const int64_t n = values.num_elements();
  const std::vector<int64_t> coords = ValueCoordinates(splits, values.dim(0));
  Tensor *indices, *sparse_values, *dense_shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{n, rank}, &indices));
  int64_t* idx = indices->data<int64_t>();
  for (int64_t v = 0; v < values.dim(0); ++v) {
    for (int64_t i = 0; i < row; ++i) {
      int64_t* at = idx + (v * row + i) * rank;
      std::copy_n(coords.begin() + v * (levels + 1), levels + 1, at);
      int64_t rest = i;
      for (int d = static_cast<int>(inner.size()) - 1; d >= 0; --d) {
        at[levels + 1 + d] = rest % inner[d];
        rest /= inner[d];
      }
    }
  }
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{n}, &sparse_values));
  CopyElements(values.dtype(), values.raw_data(), sparse_values->raw_data(), n);
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{rank}, &dense_shape));
  int64_t* shape = dense_shape->data<int64_t>();
  shape[0] = static_cast<int64_t>(splits[0].size()) - 1;
  for (int k = 0; k < levels; ++k) shape[k + 1] = LongestRow(splits[k]);
  std::copy(inner.begin(), inner.end(), shape + levels + 1);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("RaggedTensorToSparse")
                   .InputList("rt_nested_splits", "Tsplits", "RAGGED_RANK")
                   .Input("rt_dense_values", "T")
                   .Output("sparse_indices", "int64")
                   .Output("sparse_values", "T")
                   .Output("sparse_dense_shape", "int64")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Tsplits", kIndexTypes, DType::kInt64)
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape({-1, -1}));
                     ctx.set_output(1, PartialShape({-1}));
                     ctx.set_output(2, PartialShape({-1}));
                     return Status::OK();
                   })
                   .Kernel("CPU", RaggedTensorToSparseKernel)
                   .Gradient([](GradientContext& ctx) {
                     const Endpoint values = ctx.input(ctx.num_inputs() - 1);
                     ctx.SetInputGrad(ctx.num_inputs() - 1,
                                      ctx.Op("Reshape", {ctx.output_grad(1), ctx.Shape(values)}));
                     return ctx.status();
                   })
                   .Doc("A ragged tensor (nested row splits and flat values) as the indices, "
                        "values and dense shape of a SparseTensor."));

// --- RaggedRange -------------------------------------------------------------------------------

// The most values RaggedRange makes (far past any memory, but small enough to add up).
constexpr int64_t kMaxRangeSize = int64_t{1} << 48;

// The number of values in [start, limit) by delta (delta != 0), computed without overflow.
template <typename T>
Status RangeSize(T start, T limit, T delta, int64_t* size) {
  *size = 0;
  if ((delta > 0 && limit < start) || (delta < 0 && limit > start)) return Status::OK();
  if constexpr (std::is_integral_v<T>) {
    const uint64_t span = limit > start
                              ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                              : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    const uint64_t step =
        delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
    const uint64_t count = span / step + (span % step != 0 ? 1 : 0);
    if (count > static_cast<uint64_t>(kMaxRangeSize)) {
      return errors::InvalidArgument("RaggedRange: a range of ", count, " values is too large");
    }
    *size = static_cast<int64_t>(count);
  } else {
    const double count = std::ceil(std::abs((static_cast<double>(limit) - start) / delta));
    if (!(count <= static_cast<double>(kMaxRangeSize))) {
      return errors::InvalidArgument("RaggedRange: the range [", start, ", ", limit, ") by ", delta,
                                     " is not finite or too large");
    }
    *size = static_cast<int64_t>(count);
  }
  return Status::OK();
}

Status RaggedRangeKernel(KernelContext& ctx) {
  const Tensor& starts = ctx.input(0);
  const Tensor& limits = ctx.input(1);
  const Tensor& deltas = ctx.input(2);
  int64_t rows = 1;
  bool any_vector = false;
  for (const Tensor* t : {&starts, &limits, &deltas}) {
    if (t->rank() > 1) {
      return errors::InvalidArgument(
          "RaggedRange: starts, limits and deltas must be scalars or "
          "vectors, got shape ",
          t->shape().ToString());
    }
    if (t->rank() == 1) {
      if (any_vector && t->dim(0) != rows) {
        return errors::InvalidArgument(
            "RaggedRange: starts, limits and deltas must have the same "
            "length, got ",
            rows, " and ", t->dim(0));
      }
      rows = t->dim(0);
      any_vector = true;
    }
  }
  return DispatchDType<float, double, int32_t, int64_t>(
      starts.dtype(), "RaggedRange", [&]<typename T>() -> Status {
        auto at = [](const Tensor& t, int64_t i) { return t.data<T>()[t.rank() == 0 ? 0 : i]; };
        std::vector<int64_t> splits(rows + 1, 0);
        for (int64_t r = 0; r < rows; ++r) {
          const T delta = at(deltas, r);
          if (delta == T(0)) return errors::InvalidArgument("Requires delta != 0");
          int64_t size;
          FS_RETURN_IF_ERROR(RangeSize<T>(at(starts, r), at(limits, r), delta, &size));
          if (splits[r] > kMaxRangeSize - size) {
            return errors::InvalidArgument("RaggedRange: the ranges hold more than ", kMaxRangeSize,
                                           " values");
          }
          splits[r + 1] = splits[r] + size;
        }
        FS_RETURN_IF_ERROR(WriteInts(ctx, 0, splits, TensorShape{rows + 1}));
        Tensor* values;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{splits.back()}, &values));
        T* out = values->data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          // Accumulated as TensorFlow does, so float ranges round as its do. No step past the
          // last value: it can leave T's range (8 by -1815985065 in int32, undefined behaviour).
          T value = at(starts, r);
          for (int64_t j = splits[r]; j < splits[r + 1]; ++j) {
            out[j] = value;
            if (j + 1 < splits[r + 1]) value += at(deltas, r);
          }
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("RaggedRange")
                   .Input("starts", "T")
                   .Input("limits", "T")
                   .Input("deltas", "T")
                   .Output("rt_nested_splits", "Tsplits")
                   .Output("rt_dense_values", "T")
                   .TypeAttr("T", kRealTypes, DType::kInt32)
                   .TypeAttr("Tsplits", kIndexTypes, DType::kInt64)
                   .Shape([](InferenceContext& ctx) {
                     int64_t rows = 0;
                     for (int i = 0; i < 3; ++i) {
                       const PartialShape& s = ctx.input(i);
                       if (!s.known_rank()) rows = -1;
                       if (rows >= 0 && s.known_rank() && s.rank() == 1) {
                         rows = s.dim(0) < 0 ? -1 : s.dim(0);
                       }
                     }
                     ctx.set_output(0,
                                    PartialShape({rows < 0 ? -1 : std::max<int64_t>(rows, 1) + 1}));
                     ctx.set_output(1, PartialShape({-1}));
                     return Status::OK();
                   })
                   .Kernel("CPU", RaggedRangeKernel)
                   .NotDifferentiable()
                   .Doc("The ranges [starts[i], limits[i]) by deltas[i] as a ragged tensor "
                        "(row splits and values); scalars broadcast."));

// --- RaggedGather ------------------------------------------------------------------------------

Status RaggedGatherKernel(KernelContext& ctx) {
  int64_t params_levels = 0, output_levels = 0;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("PARAMS_RAGGED_RANK", &params_levels));
  FS_RETURN_IF_ERROR(ctx.attrs().Get("OUTPUT_RAGGED_RANK", &output_levels));
  const int levels = static_cast<int>(params_levels);
  if (levels < 1 || levels + 2 != ctx.num_inputs()) {
    return errors::InvalidArgument(
        "RaggedGather: PARAMS_RAGGED_RANK must be at least 1 and match "
        "the params_nested_splits, got ",
        params_levels);
  }
  const Tensor& values = ctx.input(levels);
  const Tensor& indices = ctx.input(levels + 1);
  if (values.rank() < 1 || indices.rank() < 1) {
    return errors::InvalidArgument(
        "RaggedGather: params_dense_values and indices must have rank "
        ">= 1, got shapes ",
        values.shape().ToString(), " and ", indices.shape().ToString());
  }
  if (output_levels != indices.rank() - 1 + params_levels) {
    return errors::InvalidArgument(
        "RaggedGather: OUTPUT_RAGGED_RANK must be indices.rank - 1 + "
        "PARAMS_RAGGED_RANK = ",
        indices.rank() - 1 + params_levels, ", got ", output_levels);
  }
  std::vector<Splits> splits;
  FS_RETURN_IF_ERROR(ReadNestedSplits("RaggedGather", ctx, 0, levels, values.dim(0), &splits));
  const int64_t nrows = static_cast<int64_t>(splits[0].size()) - 1;
  std::vector<int64_t> rows = array_util::IntValues(indices);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= nrows) {
      return errors::InvalidArgument("indices[", i, "] = ", rows[i], " is not in [0, ", nrows, ")");
    }
  }
  int out = 0;
  // The dimensions of indices past its first are uniform ragged dimensions of the result.
  int64_t outer = indices.dim(0);
  for (int d = 1; d < indices.rank(); ++d, ++out) {
    std::vector<int64_t> uniform(outer + 1);
    for (int64_t r = 0; r <= outer; ++r) uniform[r] = r * indices.dim(d);
    FS_RETURN_IF_ERROR(WriteInts(ctx, out, uniform, TensorShape{outer + 1}));
    outer *= indices.dim(d);
  }
  // Each level: the gathered rows' lengths as splits, and their elements as the next level's rows.
  for (int k = 0; k < levels; ++k, ++out) {
    std::vector<int64_t> gathered{0}, next;
    for (int64_t r : rows) {
      gathered.push_back(gathered.back() + splits[k][r + 1] - splits[k][r]);
      for (int64_t e = splits[k][r]; e < splits[k][r + 1]; ++e) next.push_back(e);
    }
    FS_RETURN_IF_ERROR(
        WriteInts(ctx, out, gathered, TensorShape{static_cast<int64_t>(gathered.size())}));
    rows = std::move(next);
  }
  std::vector<int64_t> dims = values.shape().ToVector();
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor* gathered_values;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(out, TensorShape(dims), &gathered_values));
  const int64_t row = Product(InnerDims(values));
  const size_t bytes = row * DTypeSize(values.dtype());
  for (size_t i = 0; i < rows.size(); ++i) {
    CopyElements(values.dtype(), static_cast<const char*>(values.raw_data()) + rows[i] * bytes,
                 static_cast<char*>(gathered_values->raw_data()) + i * bytes, row);
  }
  return Status::OK();
}

// d params values = the output values' gradient summed into the value rows they came from; the
// rows come from the op itself run on the values' row numbers.
Status RaggedGatherGrad(GradientContext& ctx) {
  const int levels = ctx.num_inputs() - 2;
  const Endpoint values = ctx.input(levels);
  const Endpoint zero = ctx.Const(Tensor::Scalar<int32_t>(0));
  const Endpoint rows = ctx.Op("GatherV2", {ctx.Shape(values), zero, zero});
  std::vector<Endpoint> inputs;
  for (int k = 0; k < levels; ++k) inputs.push_back(ctx.input(k));
  inputs.push_back(ctx.Op("Range", {zero, rows, ctx.Const(Tensor::Scalar<int32_t>(1))}));
  inputs.push_back(ctx.input(levels + 1));
  AttrMap attrs = ctx.attrs();
  attrs.Set("Tvalues", DType::kInt32);
  const int out_values = ctx.num_outputs() - 1;
  const Endpoint sources = ctx.Op("RaggedGather", inputs, attrs, out_values);
  ctx.SetInputGrad(levels,
                   ctx.Op("UnsortedSegmentSum", {ctx.output_grad(out_values), sources, rows}));
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("RaggedGather")
                   .InputList("params_nested_splits", "Tsplits", "PARAMS_RAGGED_RANK")
                   .Input("params_dense_values", "Tvalues")
                   .Input("indices", "Tindices")
                   .OutputList("output_nested_splits", "Tsplits", "OUTPUT_RAGGED_RANK")
                   .Output("output_dense_values", "Tvalues")
                   .TypeAttr("Tvalues", kAllTypesAndString)
                   .TypeAttr("Tindices", kIndexTypes)
                   .TypeAttr("Tsplits", kIndexTypes, DType::kInt64)
                   .Shape([](InferenceContext& ctx) {
                     for (int i = 0; i + 1 < ctx.num_outputs(); ++i) {
                       ctx.set_output(i, PartialShape({-1}));
                     }
                     const PartialShape& values = ctx.input(ctx.num_inputs() - 2);
                     if (!values.known_rank()) {
                       ctx.set_output(ctx.num_outputs() - 1, PartialShape::Unknown());
                       return Status::OK();
                     }
                     std::vector<int64_t> dims = values.ToVector();
                     if (!dims.empty()) dims[0] = -1;
                     ctx.set_output(ctx.num_outputs() - 1, PartialShape(dims));
                     return Status::OK();
                   })
                   .Kernel("CPU", RaggedGatherKernel)
                   .Gradient(RaggedGatherGrad)
                   .Doc("The rows `indices` of a ragged tensor (nested row splits and flat "
                        "values), gathered along its first dimension."));

}  // namespace
}  // namespace flowstone
