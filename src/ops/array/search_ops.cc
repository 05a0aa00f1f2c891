// Searching and counting: LowerBound / UpperBound (tf.searchsorted: where each value would be
// inserted into a sorted row), Bincount (tf.math.bincount), HistogramFixedWidth
// (tf.histogram_fixed_width) and UnravelIndex (tf.unravel_index: flat indices to coordinates).
// None is differentiable, as in TensorFlow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;

// Writes value into element i of an int32 or int64 tensor.
void SetIndex(Tensor* t, int64_t i, int64_t value) {
  if (t->dtype() == DType::kInt32) {
    t->data<int32_t>()[i] = static_cast<int32_t>(value);
  } else {
    t->data<int64_t>()[i] = value;
  }
}

// --- LowerBound / UpperBound -----------------------------------------------------------------

Status BoundShape(InferenceContext& ctx) {
  PartialShape sorted;
  PartialShape values;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &sorted));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &values));
  int64_t batch;
  FS_RETURN_IF_ERROR(ctx.MergeDim(sorted.dim(0), values.dim(0), &batch));
  ctx.set_output(0, PartialShape({batch, values.dim(1)}));
  return Status::OK();
}

// For each values[b, j], the first position in sorted_inputs[b, :] whose entry is not less than
// it (kUpper: greater than it).
template <bool kUpper>
Status BoundKernel(KernelContext& ctx) {
  const Tensor& sorted = ctx.input(0);
  const Tensor& values = ctx.input(1);
  if (sorted.rank() != 2 || values.rank() != 2 || sorted.dim(0) != values.dim(0)) {
    return errors::InvalidArgument(
        "sorted_inputs and values must be matrices with the same number of rows, got shapes ",
        sorted.shape().ToString(), " and ", values.shape().ToString());
  }
  const int64_t n = sorted.dim(1);
  const int64_t m = values.dim(1);
  if (ctx.output_type(0) == DType::kInt32 && n > std::numeric_limits<int32_t>::max()) {
    return errors::InvalidArgument("sorted_inputs rows have ", n,
                                   " entries, too many for out_type=int32");
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, values.shape(), &out));
  return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
      sorted.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        const T* s = sorted.data<T>();
        const T* v = values.data<T>();
        ctx.ParallelFor(values.num_elements(), 20, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const T* row = s + (i / std::max<int64_t>(m, 1)) * n;
            const T* found = kUpper ? std::upper_bound(row, row + n, v[i])
                                    : std::lower_bound(row, row + n, v[i]);
            SetIndex(out, i, found - row);
          }
        });
        return Status::OK();
      });
}

OpBuilder BoundOp(const char* name, KernelFn kernel, const char* doc) {
  OpBuilder builder(name);
  builder.Input("sorted_inputs", "T")
      .Input("values", "T")
      .Output("output", "out_type")
      .TypeAttr("T", kNumericTypes)
      .TypeAttr("out_type", kIndexTypes, DType::kInt32)
      .Shape(BoundShape)
      .Kernel("CPU", std::move(kernel))
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(BoundOp("LowerBound", BoundKernel<false>,
                       "For each values[b, j], the first index i of sorted_inputs[b] with "
                       "sorted_inputs[b, i] >= values[b, j] (searchsorted side='left')."));
FS_REGISTER_OP(BoundOp("UpperBound", BoundKernel<true>,
                       "For each values[b, j], the first index i of sorted_inputs[b] with "
                       "sorted_inputs[b, i] > values[b, j] (searchsorted side='right')."));

// --- Bincount --------------------------------------------------------------------------------

Status BincountShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  int64_t size = -1;
  if (const Tensor* value = ctx.input_value(1)) {
    size = value->ElementAsInt64(0);
    if (size < 0) {
      return errors::InvalidArgument("size (", size, ") must be non-negative");
    }
  }
  ctx.set_output(0, PartialShape({size}));
  return Status::OK();
}

// bins[i] = the number of entries of arr equal to i (or the sum of their weights); entries
// >= size are ignored, negative ones are an error.
Status BincountKernel(KernelContext& ctx) {
  const Tensor& arr = ctx.input(0);
  const Tensor& size_tensor = ctx.input(1);
  const Tensor& weights = ctx.input(2);
  if (size_tensor.rank() != 0) {
    return errors::InvalidArgument("size must be a scalar, got shape ",
                                   size_tensor.shape().ToString());
  }
  const int64_t size = size_tensor.ElementAsInt64(0);
  if (size < 0) return errors::InvalidArgument("size (", size, ") must be non-negative");
  const bool weighted = weights.num_elements() > 0;
  if (weighted && weights.shape() != arr.shape()) {
    return errors::InvalidArgument("weights must have the shape of arr ", arr.shape().ToString(),
                                   " (or be empty), got ", weights.shape().ToString());
  }
  const int32_t* values = arr.data<int32_t>();
  for (int64_t i = 0; i < arr.num_elements(); ++i) {
    if (values[i] < 0) {
      return errors::InvalidArgument("Input arr must be non-negative! arr",
                                     array_util::JoinInts({i}), " = ", values[i]);
    }
  }
  Tensor* bins;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{size}, &bins));
  return DispatchDType<float, double, int32_t, int64_t>(
      bins->dtype(), "Bincount", [&]<typename T>() -> Status {
        T* out = bins->data<T>();
        std::fill_n(out, size, T(0));
        const T* w = weighted ? weights.data<T>() : nullptr;
        for (int64_t i = 0; i < arr.num_elements(); ++i) {
          if (values[i] < size) out[values[i]] += weighted ? w[i] : T(1);
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("Bincount")
                   .Input("arr", "int32")
                   .Input("size", "int32")
                   .Input("weights", "T")
                   .Output("bins", "T")
                   .TypeAttr("T", kRealTypes)
                   .Shape(BincountShape)
                   .Kernel("CPU", BincountKernel)
                   .NotDifferentiable()
                   .Doc("How often each value in [0, size) occurs in arr, or the sum of the "
                        "weights of its occurrences when weights is not empty."));

// --- HistogramFixedWidth ---------------------------------------------------------------------

Status HistogramShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  int64_t nbins = -1;
  if (const Tensor* value = ctx.input_value(2)) {
    nbins = value->ElementAsInt64(0);
    if (nbins <= 0) {
      return errors::InvalidArgument("nbins should be a positive number, but got '", nbins, "'");
    }
  }
  ctx.set_output(0, PartialShape({nbins}));
  return Status::OK();
}

// Bin i counts the values in [lo + i * w, lo + (i + 1) * w) with w = (hi - lo) / nbins; values
// below lo count in the first bin and values from hi on in the last.
Status HistogramKernel(KernelContext& ctx) {
  const Tensor& values = ctx.input(0);
  const Tensor& range = ctx.input(1);
  const Tensor& nbins_tensor = ctx.input(2);
  if (range.rank() != 1 || range.num_elements() != 2) {
    return errors::InvalidArgument(
        "value_range must be a vector of 2 elements [lo, hi], got "
        "shape ",
        range.shape().ToString());
  }
  if (nbins_tensor.rank() != 0) {
    return errors::InvalidArgument("nbins must be a scalar, got shape ",
                                   nbins_tensor.shape().ToString());
  }
  const int64_t nbins = nbins_tensor.ElementAsInt64(0);
  if (nbins <= 0) {
    return errors::InvalidArgument("nbins should be a positive number, but got '", nbins, "'");
  }
  const double lo = range.ElementAsDouble(0);
  const double hi = range.ElementAsDouble(1);
  if (!(lo < hi)) {
    return errors::InvalidArgument(
        "value_range should satisfy value_range[0] < value_range[1], but got '[", lo, ", ", hi,
        "]'");
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{nbins}, &out));
  Tensor counts_tensor;  // a temp, so that a huge nbins fails as an allocation, not a crash
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kInt64, TensorShape{nbins}, &counts_tensor));
  int64_t* counts = counts_tensor.data<int64_t>();
  std::fill_n(counts, nbins, 0);
  for (int64_t i = 0; i < values.num_elements(); ++i) {
    const double v = values.ElementAsDouble(i);
    if (std::isnan(v)) {
      return errors::InvalidArgument("Histogram values must not contain NaN; values",
                                     array_util::JoinInts({i}), " is NaN");
    }
    const double bin = std::floor((v - lo) / (hi - lo) * static_cast<double>(nbins));
    counts[static_cast<int64_t>(std::clamp(bin, 0.0, static_cast<double>(nbins - 1)))] += 1;
  }
  for (int64_t b = 0; b < nbins; ++b) SetIndex(out, b, counts[b]);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("HistogramFixedWidth")
                   .Input("values", "T")
                   .Input("value_range", "T")
                   .Input("nbins", "int32")
                   .Output("out", "dtype")
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("dtype", kIndexTypes, DType::kInt32)
                   .Shape(HistogramShape)
                   .Kernel("CPU", HistogramKernel)
                   .NotDifferentiable()
                   .Doc("Counts of values in nbins equal-width bins spanning value_range; values "
                        "outside the range count in the first or last bin."));

// --- UnravelIndex ----------------------------------------------------------------------------

Status UnravelIndexShape(InferenceContext& ctx) {
  PartialShape dims;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &dims));
  const PartialShape& indices = ctx.input(0);
  if (!indices.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
  } else if (indices.rank() == 0) {
    ctx.set_output(0, PartialShape({dims.dim(0)}));
  } else if (indices.rank() == 1) {
    ctx.set_output(0, PartialShape({dims.dim(0), indices.dim(0)}));
  } else {
    return errors::InvalidArgument("indices must be a scalar or a vector, got shape ",
                                   indices.ToString());
  }
  return Status::OK();
}

// Coordinates of flat indices in a row-major tensor of shape `dims`: output[:, i] for indices[i].
Status UnravelIndexKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& dims = ctx.input(1);
  if (dims.rank() != 1) {
    return errors::InvalidArgument("dims must be a vector, got shape ", dims.shape().ToString());
  }
  if (indices.rank() > 1) {
    return errors::InvalidArgument("indices must be a scalar or a vector, got shape ",
                                   indices.shape().ToString());
  }
  const std::vector<int64_t> shape = array_util::IntValues(dims);
  int64_t total = 1;
  for (size_t j = 0; j < shape.size(); ++j) {
    if (shape[j] <= 0) {
      return errors::InvalidArgument("dims[", j, "] = ", shape[j], " must be positive");
    }
    if (total > std::numeric_limits<int64_t>::max() / shape[j]) {
      return errors::InvalidArgument("dims ", array_util::JoinInts(shape),
                                     " have too many elements to fit int64");
    }
    total *= shape[j];
  }
  const int64_t n = indices.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = indices.ElementAsInt64(i);
    if (index < 0 || index >= total) {
      return errors::InvalidArgument("index is out of bound as with dims: indices",
                                     indices.rank() ? array_util::JoinInts({i}) : "", " = ", index,
                                     " is not in [0, ", total, ") for dims ",
                                     array_util::JoinInts(shape));
    }
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  TensorShape out_shape = indices.rank() == 0 ? TensorShape{rank} : TensorShape{rank, n};
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = indices.ElementAsInt64(i);
    for (int64_t j = rank - 1; j >= 0; --j) {
      SetIndex(out, j * n + i, rest % shape[j]);
      rest /= shape[j];
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("UnravelIndex")
                   .Input("indices", "Tidx")
                   .Input("dims", "Tidx")
                   .Output("output", "Tidx")
                   .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                   .Shape(UnravelIndexShape)
                   .Kernel("CPU", UnravelIndexKernel)
                   .NotDifferentiable()
                   .Doc("The coordinates of flat indices in a row-major tensor of shape dims "
                        "(tf.unravel_index)."));

}  // namespace
}  // namespace flowstone
