// Losses: softmax cross entropy (dense and sparse labels) and L2 loss. The cross-entropy ops
// return the per-example loss and its gradient with respect to the logits ("backprop"), computed
// together in one numerically stable pass, as TensorFlow's do.
#include <algorithm>
#include <cmath>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/xent_util.h"

namespace flowstone {
namespace {

Status XentShape(InferenceContext& ctx) {
  PartialShape logits;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &logits));
  const PartialShape& labels = ctx.input(1);
  const bool sparse = ctx.op_type() == "SparseSoftmaxCrossEntropyWithLogits";
  if (labels.known_rank()) {
    if (sparse && labels.rank() != 1) {
      return errors::InvalidArgument(
          "labels must be 1-D (one class index per example), but has shape ", labels.ToString());
    }
    if (!sparse && labels.rank() != 2) {
      return errors::InvalidArgument("labels must be 2-D [batch, classes], but has shape ",
                                     labels.ToString());
    }
  }
  int64_t batch = logits.dim(0);
  if (labels.known_rank()) {
    FS_RETURN_IF_ERROR(ctx.MergeDim(batch, labels.dim(0), &batch));
    if (!sparse) {
      int64_t classes;
      FS_RETURN_IF_ERROR(ctx.MergeDim(logits.dim(1), labels.dim(1), &classes));
    }
  }
  ctx.set_output(0, PartialShape({batch}));
  ctx.set_output(1, PartialShape({batch, logits.dim(1)}));
  return Status::OK();
}

// Writes loss[b] and backprop[b, :] for one example from its logits and label distribution
// (given densely, or as one class index).
template <typename T>
void XentRow(const T* logits, int64_t classes, const T* dense_labels, int64_t label, T* loss,
             T* backprop) {
  if (classes == 0) {  // an empty distribution: nothing to compare, so no loss
    *loss = T(0);
    return;
  }
  T max_logit = logits[0];
  for (int64_t c = 1; c < classes; ++c) max_logit = std::max(max_logit, logits[c]);
  // One exp per class: backprop holds exp(logit - max) until the sum is known, then the
  // probability exp(logit - max) / sum minus the label.
  double sum_exp = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double e = std::exp(double(logits[c] - max_logit));
    backprop[c] = static_cast<T>(e);
    sum_exp += e;
  }
  const double log_sum = std::log(sum_exp);
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double log_p = double(logits[c] - max_logit) - log_sum;
    const double y = dense_labels ? double(dense_labels[c]) : (c == label ? 1.0 : 0.0);
    total -= y * log_p;
    backprop[c] = static_cast<T>(double(backprop[c]) / sum_exp - y);
  }
  *loss = static_cast<T>(total);
}

Status XentKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  const bool sparse = ctx.node().type() == "SparseSoftmaxCrossEntropyWithLogits";
  FS_RETURN_IF_ERROR(CheckXentInputs(logits, labels, sparse));
  const int64_t batch = logits.dim(0);
  const int64_t classes = logits.dim(1);
  if (sparse) {
    for (int64_t b = 0; b < batch; ++b) {
      int64_t label = labels.ElementAsInt64(b);
      if (label < 0 || label >= classes) {
        std::string shown;
        for (int64_t k = 0; k < std::min<int64_t>(batch, 16); ++k)
          shown += StrCat(k ? " " : "", labels.ElementAsInt64(k));
        return errors::InvalidArgument(
            "Received a label value of ", label, " which is outside the valid range of [0, ",
            classes, ").  Label values: ", shown, batch > 16 ? " ..." : "",
            ". Labels must be class indices in [0, num_classes); check the labels you feed or "
            "the number of units of the last layer.");
      }
    }
  }
  Tensor* loss;
  Tensor* backprop;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{batch}, &loss));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{batch, classes}, &backprop));
  return DispatchDType<float, double>(
      logits.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        const T* x = logits.data<T>();
        ctx.ParallelFor(batch, classes * 20, [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b) {
            const T* dense = sparse ? nullptr : labels.data<T>() + b * classes;
            const int64_t label = sparse ? labels.ElementAsInt64(b) : -1;
            XentRow<T>(x + b * classes, classes, dense, label, loss->data<T>() + b,
                       backprop->data<T>() + b * classes);
          }
        });
        return Status::OK();
      });
}

// d loss / d logits = grad_loss[:, None] * backprop.
Endpoint ScaledBackprop(GradientContext& ctx) {
  Endpoint column =
      ctx.Op("ExpandDims", {ctx.output_grad(0), ctx.Const(Tensor::Scalar<int32_t>(-1))});
  return ctx.Op("Mul", {column, ctx.output(1)});
}

Status SparseXentGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ScaledBackprop(ctx));
  return Status::OK();
}

Status XentGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ScaledBackprop(ctx));
  // d loss / d labels = -grad_loss[:, None] * log_softmax(logits).
  Endpoint column =
      ctx.Op("ExpandDims", {ctx.output_grad(0), ctx.Const(Tensor::Scalar<int32_t>(-1))});
  Endpoint log_p = ctx.Op("LogSoftmax", {ctx.input(0)});
  ctx.SetInputGrad(1, ctx.Op("Neg", {ctx.Op("Mul", {column, log_p})}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SparseSoftmaxCrossEntropyWithLogits")
                   .Input("features", "T")
                   .Input("labels", "Tlabels")
                   .Output("loss", "T")
                   .Output("backprop", "T")
                   .TypeAttr("T", kFloatTypes)
                   .TypeAttr("Tlabels", {DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Shape(XentShape)
                   .Kernel("CPU", XentKernel)
                   .Gradient(SparseXentGrad)
                   .Doc("Per-example cross entropy of softmax(features) against class indices."));

FS_REGISTER_OP(OpBuilder("SoftmaxCrossEntropyWithLogits")
                   .Input("features", "T")
                   .Input("labels", "T")
                   .Output("loss", "T")
                   .Output("backprop", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(XentShape)
                   .Kernel("CPU", XentKernel)
                   .Gradient(XentGrad)
                   .Doc("Per-example cross entropy of softmax(features) against distributions."));

Status L2LossKernel(KernelContext& ctx) {
  const Tensor& t = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return DispatchDType<float, double>(t.dtype(), "L2Loss", [&]<typename T>() -> Status {
    double sum = 0;
    const T* x = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) sum += double(x[i]) * double(x[i]);
    *out->data<T>() = static_cast<T>(sum / 2);
    return Status::OK();
  });
}

Status L2LossGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.input(0), ctx.output_grad(0)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("L2Loss")
                   .Input("t", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", L2LossKernel)
                   .Gradient(L2LossGrad)
                   .Doc("sum(t ** 2) / 2"));

}  // namespace
}  // namespace flowstone
