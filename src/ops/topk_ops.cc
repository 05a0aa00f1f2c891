// Top-k along the last axis: TopKV2 (the k largest entries of each row and their indices) and
// InTopKV2 (whether each example's target class is among its k largest predictions), plus
// TopKV2Grad, the scatter that carries TopKV2's gradient back to the input positions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

// --- TopKV2 ----------------------------------------------------------------------------------

Status TopKShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 1));
  int64_t k = -1;
  if (const Tensor* value = ctx.input_value(1)) {
    k = value->ElementAsInt64(0);
    if (k < 0) return errors::InvalidArgument("Need k >= 0, got ", k);
  }
  const PartialShape& input = ctx.input(0);
  if (!input.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    ctx.set_output(1, PartialShape::Unknown());
    return Status::OK();
  }
  Dims dims = input.dims();
  const int last = input.rank() - 1;
  if (k >= 0 && dims[last] >= 0 && dims[last] < k) {
    return errors::InvalidArgument("input must have last dimension >= k = ", k, " but is ",
                                   dims[last]);
  }
  dims[last] = k;
  ctx.set_output(0, PartialShape(dims));
  ctx.set_output(1, PartialShape(dims));
  return Status::OK();
}

// Whether value a (at index ia) ranks before value b (at index ib): larger values first, equal
// values in index order. NaN ranks above every number so that the order is total (a sort with
// NaNs is otherwise undefined) and a NaN in the input shows up in the top k.
template <typename T>
bool RanksBefore(T a, int64_t ia, T b, int64_t ib) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = std::isnan(a);
    const bool b_nan = std::isnan(b);
    if (a_nan || b_nan) return a_nan && (!b_nan || ia < ib);
  }
  return a > b || (a == b && ia < ib);
}

// Fills values and indices ([rows, k]) from the rows ([rows, n]) of `in`.
template <typename T, typename Index>
void TopKRows(KernelContext& ctx, const T* in, int64_t rows, int64_t n, int64_t k, T* values,
              Index* indices) {
  const int64_t cost = k == 1 ? n : n * 4 + k * 8;
  ctx.ParallelFor(rows, cost, [&](int64_t begin, int64_t end) {
    std::vector<Index> order;
    for (int64_t r = begin; r < end; ++r) {
      const T* row = in + r * n;
      T* out_values = values + r * k;
      Index* out_indices = indices + r * k;
      auto before = [row](Index a, Index b) { return RanksBefore(row[a], a, row[b], b); };
      if (k == 1) {
        Index best = 0;
        for (Index i = 1; i < n; ++i) {
          if (before(i, best)) best = i;
        }
        out_values[0] = row[best];
        out_indices[0] = best;
        continue;
      }
      order.resize(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), Index{0});
      // Select the k first in O(n), then order just those. sorted=false allows any order;
      // sorting anyway costs little and keeps results deterministic.
      if (k < n) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
      std::sort(order.begin(), order.begin() + k, before);
      for (int64_t j = 0; j < k; ++j) {
        out_indices[j] = order[j];
        out_values[j] = row[order[j]];
      }
    }
  });
}

Status TopKKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& k_tensor = ctx.input(1);
  if (k_tensor.rank() != 0) {
    return errors::InvalidArgument("k must be 0-D (a scalar), got shape ",
                                   k_tensor.shape().ToString());
  }
  const int64_t k = k_tensor.ElementAsInt64(0);
  if (k < 0) return errors::InvalidArgument("Need k >= 0, got ", k);
  if (input.rank() < 1) {
    return errors::InvalidArgument("input must be >= 1-D, got shape ", input.shape().ToString());
  }
  const int64_t n = input.dim(input.rank() - 1);
  if (n < k) {
    return errors::InvalidArgument("input must have at least k columns. Had ", n, ", needed ", k,
                                   "; pass a smaller k or check the input's last axis.");
  }
  if (ctx.output_type(1) == DType::kInt32 && n > std::numeric_limits<int32_t>::max()) {
    return errors::InvalidArgument("the last dimension of input (", n,
                                   ") does not fit in int32 indices; use index_type=int64");
  }
  TensorShape out_shape = input.shape();
  out_shape.set_dim(input.rank() - 1, k);
  Tensor* values;
  Tensor* indices;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, out_shape, &indices));
  if (k == 0) return Status::OK();
  const int64_t rows = input.num_elements() / n;
  return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
      input.dtype(), "TopKV2", [&]<typename T>() -> Status {
        if (indices->dtype() == DType::kInt32) {
          TopKRows<T, int32_t>(ctx, input.data<T>(), rows, n, k, values->data<T>(),
                               indices->data<int32_t>());
        } else {
          TopKRows<T, int64_t>(ctx, input.data<T>(), rows, n, k, values->data<T>(),
                               indices->data<int64_t>());
        }
        return Status::OK();
      });
}

// d input = the output gradients scattered back to the positions the values came from.
Status TopKGrad(GradientContext& ctx) {
  ctx.SetInputGrad(
      0, ctx.Op("TopKV2Grad", {ctx.output_grad(0), ctx.output(1), ctx.Shape(ctx.input(0))}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TopKV2")
                   .Input("input", "T")
                   .Input("k", "Tk")
                   .Output("values", "T")
                   .Output("indices", "index_type")
                   .Attr("sorted", true)
                   .TypeAttr("T", kNumericTypes)
                   .TypeAttr("Tk", kIndexTypes, DType::kInt32)
                   .TypeAttr("index_type", kIndexTypes, DType::kInt32)
                   .Shape(TopKShape)
                   .Kernel("CPU", TopKKernel)
                   .Gradient(TopKGrad)
                   .Doc("The k largest entries of each row (last axis) of input, largest first "
                        "(ties: lower index first), and their indices."));

// --- TopKV2Grad ------------------------------------------------------------------------------

Status TopKGradShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 1, &unused));
  if (!ctx.input(0).IsCompatibleWith(ctx.input(1))) {
    return errors::InvalidArgument("gradients shape ", ctx.input(0).ToString(),
                                   " does not match indices shape ", ctx.input(1).ToString());
  }
  PartialShape out;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(2, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

Status TopKGradKernel(KernelContext& ctx) {
  const Tensor& grad = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& shape_tensor = ctx.input(2);
  std::vector<int64_t> dims(static_cast<size_t>(shape_tensor.num_elements()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = shape_tensor.ElementAsInt64(i);
  const TensorShape shape(dims);
  TensorShape expected = shape;
  if (shape.rank() >= 1 && grad.rank() >= 1) {
    expected.set_dim(shape.rank() - 1, grad.dim(grad.rank() - 1));
  }
  if (shape.rank() < 1 || grad.shape() != expected || indices.shape() != grad.shape()) {
    return errors::InvalidArgument("TopKV2Grad: gradients ", grad.shape().ToString(),
                                   " and indices ", indices.shape().ToString(),
                                   " must both have the input's shape ", shape.ToString(),
                                   " with the last dimension replaced by k");
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  const int64_t n = shape.dim(shape.rank() - 1);
  const int64_t k = grad.rank() ? grad.dim(grad.rank() - 1) : 0;
  const int64_t rows = n ? out->num_elements() / n : 0;
  return DispatchDType<float, double>(grad.dtype(), "TopKV2Grad", [&]<typename T>() -> Status {
    T* dst = out->data<T>();
    std::fill(dst, dst + out->num_elements(), T(0));
    const T* g = grad.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t index = indices.ElementAsInt64(r * k + j);
        if (index < 0 || index >= n) {
          return errors::InvalidArgument("TopKV2Grad: index ", index, " in row ", r,
                                         " is outside [0, ", n, ")");
        }
        dst[r * n + index] += g[r * k + j];
      }
    }
    return Status::OK();
  });
}

// Second derivatives of top-k are not supported: this op only exists inside TopKV2's gradient.
FS_REGISTER_OP(OpBuilder("TopKV2Grad")
                   .Input("gradients", "T")
                   .Input("indices", "Tidx")
                   .Input("input_shape", "int32")
                   .Output("backprops", "T")
                   .TypeAttr("T", kFloatTypes)
                   .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                   .Shape(TopKGradShape)
                   .Kernel("CPU", TopKGradKernel)
                   .NotDifferentiable()
                   .Doc("Gradient of TopKV2: zeros of input_shape with gradients[..., j] added "
                        "at position indices[..., j] of each row."));

// --- InTopKV2 --------------------------------------------------------------------------------

Status InTopKShape(InferenceContext& ctx) {
  PartialShape predictions;
  PartialShape targets;
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &predictions));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &targets));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  int64_t batch;
  FS_RETURN_IF_ERROR(ctx.MergeDim(predictions.dim(0), targets.dim(0), &batch));
  ctx.set_output(0, PartialShape({batch}));
  return Status::OK();
}

// An example counts as a hit when fewer than k classes have a strictly larger prediction than
// its target; ties at the boundary therefore all count. Targets out of range and rows with a
// non-finite prediction are misses, because their rank is undefined.
Status InTopKKernel(KernelContext& ctx) {
  const Tensor& predictions = ctx.input(0);
  const Tensor& targets = ctx.input(1);
  const Tensor& k_tensor = ctx.input(2);
  if (predictions.rank() != 2) {
    return errors::InvalidArgument("predictions must be 2-dimensional [batch, classes], got shape ",
                                   predictions.shape().ToString());
  }
  if (targets.rank() != 1 || targets.dim(0) != predictions.dim(0)) {
    return errors::InvalidArgument(
        "targets must be 1-dimensional with one class index per row of predictions: "
        "expected shape [",
        predictions.dim(0), "], got ", targets.shape().ToString());
  }
  if (k_tensor.rank() != 0) {
    return errors::InvalidArgument("k must be 0-D (a scalar), got shape ",
                                   k_tensor.shape().ToString());
  }
  const int64_t k = k_tensor.ElementAsInt64(0);
  const int64_t batch = predictions.dim(0);
  const int64_t classes = predictions.dim(1);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{batch}, &out));
  const float* p = predictions.data<float>();
  bool* hit = out->data<bool>();
  ctx.ParallelFor(batch, classes * 2, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* row = p + b * classes;
      const int64_t target = targets.ElementAsInt64(b);
      bool defined = target >= 0 && target < classes && std::isfinite(row[target]);
      int64_t larger = 0;
      for (int64_t c = 0; defined && c < classes; ++c) {
        if (!std::isfinite(row[c])) {
          defined = false;
        } else if (row[c] > row[target]) {
          ++larger;
        }
      }
      hit[b] = defined && larger < k;
    }
  });
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("InTopKV2")
                   .Input("predictions", "float32")
                   .Input("targets", "T")
                   .Input("k", "T")
                   .Output("precision", "bool")
                   .TypeAttr("T", kIndexTypes, DType::kInt32)
                   .Shape(InTopKShape)
                   .Kernel("CPU", InTopKKernel)
                   .NotDifferentiable()
                   .Doc("Whether targets[i] is among the k largest predictions[i, :]."));

}  // namespace
}  // namespace flowstone
