// Softmax and LogSoftmax over the last axis.
//
// Both subtract the row maximum before exponentiating, so large logits cannot overflow:
//   softmax(x)_j     = exp(x_j - max) / sum_i exp(x_i - max)
//   log_softmax(x)_j = x_j - max - log(sum_i exp(x_i - max))
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"

namespace flowstone {
namespace {

Status SoftmaxShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 1));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

// Rows are reduced over a fixed number of lanes (element j goes to lane j % kLanes, then the
// lanes are combined in order), so that the loops vectorize and the summation order, and so the
// result's bits, do not depend on the vector width of the CPU.
constexpr int64_t kLanes = 8;

// The largest element of in[0, n), -inf when empty; NaN elements are skipped (a NaN row still
// gives NaN: its exponentials are NaN).
template <typename T>
T RowMax(const T* in, int64_t n) {
  T lane[kLanes];
  for (int64_t k = 0; k < kLanes; ++k) lane[k] = -std::numeric_limits<T>::infinity();
  const int64_t body = n - n % kLanes;
  for (int64_t j = 0; j < body; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      lane[k] = vecmath::Select(in[j + k] > lane[k], in[j + k], lane[k]);
    }
  }
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < kLanes; ++k) max = vecmath::Select(lane[k] > max, lane[k], max);
  for (int64_t j = body; j < n; ++j) max = vecmath::Select(in[j] > max, in[j], max);
  return max;
}

// acc[j % kLanes] += e[j] for j in [0, n).
template <typename T, typename Acc>
void LaneSum(const T* e, int64_t n, Acc* acc) {
  const int64_t body = n - n % kLanes;
  for (int64_t j = 0; j < body; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += static_cast<Acc>(e[j + k]);
  }
  for (int64_t j = body; j < n; ++j) acc[j - body] += static_cast<Acc>(e[j]);
}

template <typename T>
void ExpShifted(const T* in, T shift, T* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = vecmath::Exp(in[j] - shift);
}

// One row: a pass for the maximum, one for the exponentials and their sum, one to scale (or
// shift, for the log). out may alias in: each element is read before it is written.
template <bool kLog, typename T>
FS_MULTIVERSION void SoftmaxRow(const T* in, T* out, int64_t depth) {
  // float32 rows sum their exponentials in double; the extra precision is free here.
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  const T max = RowMax(in, depth);
  Acc lanes[kLanes] = {};
  if constexpr (kLog) {
    // The logits are read again below, so the exponentials go through a buffer, not `out`.
    constexpr int64_t kChunk = 256;  // a multiple of kLanes, so lanes continue across chunks
    T buffer[kChunk];
    for (int64_t j = 0; j < depth; j += kChunk) {
      const int64_t n = std::min(kChunk, depth - j);
      ExpShifted(in + j, max, buffer, n);
      LaneSum(buffer, n, lanes);
    }
  } else {
    ExpShifted(in, max, out, depth);
    LaneSum(out, depth, lanes);
  }
  Acc sum = 0;
  for (int64_t k = 0; k < kLanes; ++k) sum += lanes[k];
  if constexpr (kLog) {
    // (x - max) first: it is exact for logits near the maximum, where the result is most
    // sensitive; folding max and log(sum) into one shift would round at the logits' scale.
    const T log_sum = static_cast<T>(std::log(sum));
    for (int64_t j = 0; j < depth; ++j) out[j] = (in[j] - max) - log_sum;
  } else {
    const T scale = static_cast<T>(Acc(1) / sum);
    for (int64_t j = 0; j < depth; ++j) out[j] *= scale;
  }
}

template <bool kLog, typename T>
void SoftmaxRows(KernelContext& ctx, const T* x, T* y, int64_t rows, int64_t depth) {
  ctx.ParallelFor(rows, 40 * depth, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) SoftmaxRow<kLog>(x + r * depth, y + r * depth, depth);
  });
}

template <bool kLog>
Status SoftmaxKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  if (logits.rank() < 1) {
    return errors::InvalidArgument(
        "logits must have at least one dimension (the classes), but "
        "has shape ",
        logits.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, logits.shape(), &out));
  int64_t depth = logits.dim(logits.rank() - 1);
  if (logits.num_elements() == 0) return Status::OK();
  return DispatchDType<float, double>(logits.dtype(), ctx.node().type().c_str(),
                                      [&]<typename T>() -> Status {
                                        SoftmaxRows<kLog>(ctx, logits.data<T>(), out->data<T>(),
                                                          logits.num_elements() / depth, depth);
                                        return Status::OK();
                                      });
}

// Sum over the last axis, kept as size 1 so the result broadcasts against the rows.
Endpoint SumLastAxis(GradientContext& ctx, Endpoint x) {
  AttrMap keep;
  keep.Set("keep_dims", true);
  return ctx.Op("Sum", {x, ctx.Const(Tensor::Scalar<int32_t>(-1))}, keep);
}

// With s = softmax(x): dx = (g - sum(g * s)) * s, from the output alone.
Status SoftmaxGrad(GradientContext& ctx) {
  Endpoint g = ctx.output_grad(0);
  Endpoint s = ctx.output(0);
  Endpoint dot = SumLastAxis(ctx, ctx.Op("Mul", {g, s}));
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.Op("Sub", {g, dot}), s}));
  return Status::OK();
}

// With l = log_softmax(x): dx = g - exp(l) * sum(g).
Status LogSoftmaxGrad(GradientContext& ctx) {
  Endpoint g = ctx.output_grad(0);
  Endpoint softmax = ctx.Op("Exp", {ctx.output(0)});
  ctx.SetInputGrad(0, ctx.Op("Sub", {g, ctx.Op("Mul", {softmax, SumLastAxis(ctx, g)})}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Softmax")
                   .Input("logits", "T")
                   .Output("softmax", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(SoftmaxShape)
                   .Kernel("CPU", SoftmaxKernel<false>)
                   .Gradient(SoftmaxGrad)
                   .Doc("exp(logits) / sum(exp(logits)) along the last axis."));

FS_REGISTER_OP(OpBuilder("LogSoftmax")
                   .Input("logits", "T")
                   .Output("logsoftmax", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(SoftmaxShape)
                   .Kernel("CPU", SoftmaxKernel<true>)
                   .Gradient(LogSoftmaxGrad)
                   .Doc("logits - log(sum(exp(logits))) along the last axis."));

}  // namespace
}  // namespace flowstone
