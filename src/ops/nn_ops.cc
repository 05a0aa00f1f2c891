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

namespace flowstone {
namespace {

Status SoftmaxShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 1));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

template <bool kLog, typename T>
void SoftmaxRows(KernelContext& ctx, const T* x, T* y, int64_t rows, int64_t depth) {
  // float32 rows sum their exponentials in double; the extra precision is free here.
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  ctx.ParallelFor(rows, 40 * depth, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* in = x + r * depth;
      T* out = y + r * depth;  // may alias `in`: each element is read before it is written
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < depth; ++j) max = std::max(max, in[j]);
      Acc sum = 0;
      if constexpr (kLog) {
        for (int64_t j = 0; j < depth; ++j) sum += std::exp(in[j] - max);
        // (x - max) first: it is exact for logits near the maximum, where the result is most
        // sensitive; folding max and log(sum) into one shift would round at the logits' scale.
        T log_sum = static_cast<T>(std::log(sum));
        for (int64_t j = 0; j < depth; ++j) out[j] = (in[j] - max) - log_sum;
      } else {
        for (int64_t j = 0; j < depth; ++j) {
          out[j] = std::exp(in[j] - max);
          sum += out[j];
        }
        T scale = static_cast<T>(Acc(1) / sum);
        for (int64_t j = 0; j < depth; ++j) out[j] *= scale;
      }
    }
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
