// Scans along one axis: Cumsum (tf.math.cumsum), Cumprod (tf.math.cumprod) and
// CumulativeLogsumexp (tf.math.cumulative_logsumexp), each with TensorFlow's `exclusive` (leave
// out the element itself) and `reverse` (scan from the end) attrs. Rows of the table share one
// kernel template; each line along the axis is scanned by one thread, in order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"
#include "ops/elementwise.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::kIndexTypes;

enum class Scan { kSum, kProd, kLogSumExp };

template <Scan S, typename T>
T ScanIdentity() {
  if constexpr (S == Scan::kProd) return T(1);
  if constexpr (S == Scan::kLogSumExp) return -std::numeric_limits<T>::infinity();
  return T(0);
}

template <Scan S, typename T>
T ScanStep(T acc, T x) {
  // Integer sums and products wrap around on overflow (WrapAdd, WrapMul), as in TensorFlow.
  if constexpr (S == Scan::kProd) {
    return WrapMul(acc, x);
  } else if constexpr (S == Scan::kLogSumExp) {
    // log(exp(acc) + exp(x)) without overflow; -inf + -inf stays -inf.
    const T hi = std::max(acc, x);
    if (hi == -std::numeric_limits<T>::infinity()) return hi;
    return hi + std::log1p(std::exp(std::min(acc, x) - hi));
  } else {
    return WrapAdd(acc, x);
  }
}

Status ScanShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  const PartialShape& x = ctx.input(0);
  if (const Tensor* axis = ctx.input_value(1); axis != nullptr && x.known_rank()) {
    int canonical;
    FS_RETURN_IF_ERROR(array_util::CanonicalAxis(axis->ElementAsInt64(0), std::max(x.rank(), 1),
                                                 "axis", &canonical));
  }
  ctx.set_output(0, x);
  return Status::OK();
}

template <Scan S>
Status ScanKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.input(1).rank() != 0) {
    return errors::InvalidArgument("axis must be a scalar, got shape ",
                                   ctx.input(1).shape().ToString());
  }
  const int64_t axis_arg = ctx.input(1).ElementAsInt64(0);
  int axis = 0;
  FS_RETURN_IF_ERROR(array_util::CanonicalAxis(axis_arg, std::max(x.rank(), 1), "axis", &axis));
  const bool exclusive = ctx.attrs().GetOr<bool>("exclusive", false);
  const bool reverse = ctx.attrs().GetOr<bool>("reverse", false);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &out));
  if (x.num_elements() == 0) return Status::OK();
  const int64_t n = x.rank() == 0 ? 1 : x.dim(axis);
  const int64_t inner = x.rank() == 0 ? 1 : DimProduct(x.shape(), axis + 1, x.rank());
  const int64_t lines = x.num_elements() / n;
  auto scan = [&]<typename T>() -> Status {
    const T* in = x.data<T>();
    T* dst = out->data<T>();
    ctx.ParallelFor(lines, n * 4, [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t start = (line / inner) * n * inner + line % inner;
        T acc = ScanIdentity<S, T>();
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = start + (reverse ? n - 1 - j : j) * inner;
          if (exclusive) {
            dst[at] = acc;
            acc = ScanStep<S, T>(acc, in[at]);
          } else {
            acc = ScanStep<S, T>(acc, in[at]);
            dst[at] = acc;
          }
        }
      }
    });
    return Status::OK();
  };
  if constexpr (S == Scan::kLogSumExp) {
    return DispatchDType<float, double>(x.dtype(), ctx.node().type().c_str(), scan);
  } else {
    return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
        x.dtype(), ctx.node().type().c_str(), scan);
  }
}

// The same scan op with `reverse` flipped (and other attrs kept), applied to v.
Endpoint ReversedScan(GradientContext& ctx, const char* op, Endpoint v) {
  AttrMap attrs;
  attrs.Set("exclusive", ctx.attrs().GetOr<bool>("exclusive", false));
  attrs.Set("reverse", !ctx.attrs().GetOr<bool>("reverse", false));
  return ctx.Op(op, {v, ctx.input(1)}, attrs);
}

// Each output sums inputs on one side of it, so each input's gradient sums the output gradients
// on the other side.
Status CumsumGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ReversedScan(ctx, "Cumsum", ctx.output_grad(0)));
  return Status::OK();
}

// As TensorFlow: cumsum(prod * grad, reversed) / x, with 0 where x is 0 (where this formula
// does not hold); complex products and inputs enter conjugated.
Status CumprodGrad(GradientContext& ctx) {
  const Endpoint x = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint summed = ReversedScan(
      ctx, "Cumsum", ctx.Op("Mul", {ctx.ConjIfComplex(ctx.output(0)), ctx.output_grad(0)}));
  const Endpoint is_zero = ctx.Op("Equal", {x, ctx.ScalarLike(x, 0)});
  const Endpoint safe_x = ctx.Op("SelectV2", {is_zero, ctx.Op("OnesLike", {x}), x});
  const Endpoint quotient = ctx.Op("RealDiv", {summed, safe_x});
  ctx.SetInputGrad(0, ctx.Op("SelectV2", {is_zero, ctx.Op("ZerosLike", {quotient}), quotient}));
  return Status::OK();
}

// As TensorFlow: d out_j / d x_i = exp(x_i - out_j) for the outputs j that include x_i; the sum
// over j is taken in log space, separately for positive and negative output gradients.
Status CumulativeLogsumexpGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint out = ctx.output(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint zero = ctx.ScalarLike(grad, 0);
  const Endpoint minus_inf = ctx.Op(
      "Fill", {ctx.Shape(grad), ctx.ScalarLike(grad, -std::numeric_limits<double>::infinity())});
  auto part = [&](Endpoint selected, Endpoint magnitude) {
    // log|grad| where selected (log of a safe 1 elsewhere, then replaced by -inf).
    const Endpoint safe = ctx.Op("SelectV2", {selected, magnitude, ctx.Op("OnesLike", {grad})});
    const Endpoint log_grad = ctx.Op("SelectV2", {selected, ctx.Op("Log", {safe}), minus_inf});
    return ctx.Op(
        "Exp",
        {ctx.Op("AddV2",
                {ReversedScan(ctx, "CumulativeLogsumexp", ctx.Op("Sub", {log_grad, out})), x})});
  };
  const Endpoint positive = part(ctx.Op("Greater", {grad, zero}), grad);
  const Endpoint negative = part(ctx.Op("Less", {grad, zero}), ctx.Op("Neg", {grad}));
  ctx.SetInputGrad(0, ctx.Op("Sub", {positive, negative}));
  return Status::OK();
}

struct ScanRow {
  const char* name;
  KernelFn kernel;
  const std::vector<DType>* types;
  GradFn gradient;
  const char* doc;
};

const ScanRow kScanRows[] = {
    {"Cumsum", ScanKernel<Scan::kSum>, &kNumericAndComplexTypes, CumsumGrad,
     "Cumulative sum along axis (tf.math.cumsum)."},
    {"Cumprod", ScanKernel<Scan::kProd>, &kNumericAndComplexTypes, CumprodGrad,
     "Cumulative product along axis (tf.math.cumprod)."},
    {"CumulativeLogsumexp", ScanKernel<Scan::kLogSumExp>, &kFloatTypes, CumulativeLogsumexpGrad,
     "log(cumsum(exp(x))) along axis, computed without overflow "
     "(tf.math.cumulative_logsumexp)."},
};

const bool kScanOpsRegistered = [] {
  for (const ScanRow& row : kScanRows) {
    OpRegistrar registrar(OpBuilder(row.name)
                              .Input("x", "T")
                              .Input("axis", "Tidx")
                              .Output("out", "T")
                              .Attr("exclusive", false)
                              .Attr("reverse", false)
                              .TypeAttr("T", *row.types)
                              .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                              .Shape(ScanShape)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.gradient)
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
