// Losses: softmax cross entropy (dense and sparse labels) and L2 loss. The cross-entropy ops
// return the per-example loss and its gradient with respect to the logits ("backprop"), computed
// together in one numerically stable pass, as TensorFlow's do.
#include <algorithm>
#include <cmath>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"
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
// (given densely, or as one class index), in double with <cmath>.
void XentRow(const double* logits, int64_t classes, const double* dense_labels, int64_t label,
             double* loss, double* backprop) {
  if (classes == 0) {  // an empty distribution: nothing to compare, so no loss
    *loss = 0;
    return;
  }
  double max_logit = logits[0];
  for (int64_t c = 1; c < classes; ++c) max_logit = std::max(max_logit, logits[c]);
  // One exp per class: backprop holds exp(logit - max) until the sum is known, then the
  // probability exp(logit - max) / sum minus the label.
  double sum_exp = 0;
  for (int64_t c = 0; c < classes; ++c) {
    backprop[c] = std::exp(logits[c] - max_logit);
    sum_exp += backprop[c];
  }
  const double log_sum = std::log(sum_exp);
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double y = dense_labels ? dense_labels[c] : (c == label ? 1.0 : 0.0);
    total += y * (log_sum - (logits[c] - max_logit));
    backprop[c] = backprop[c] / sum_exp - y;
  }
  *loss = total;
}

// The float row: the same three passes, vectorized. exp is vecmath's float Exp (within 3 ulp);
// the sums run in double in kLanes independent partial sums, folded in a fixed order, so the
// result does not depend on the vector width the CPU runs (FS_MULTIVERSION picks AVX2 or the
// baseline) and a 10,000-class row keeps float32 accuracy in the loss. The probabilities are the
// float exp(logit - max) times the float reciprocal of the sum, within a few ulp of the exact
// value.
constexpr int64_t kLanes = 8;

// Writes exp(logit - max) to exps and returns their sum. Two loops: GCC keeps the lanes of a sum
// fused into the exp loop in memory, which made the pair 1.5x slower.
FS_MULTIVERSION double SumOfExps(const float* __restrict logits, int64_t classes, float max_logit,
                                 float* __restrict exps) {
  for (int64_t c = 0; c < classes; ++c) exps[c] = vecmath::Exp(logits[c] - max_logit);
  double lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= classes; c += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += exps[c + l];
  }
  for (; c < classes; ++c) lanes[c % kLanes] += exps[c];
  double sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// The largest logit, in kLanes running maxima (vecmath::Select, since GCC does not vectorize
// a float `?:` or std::max under -ftrapping-math). max is exact, so the lanes change nothing but
// the speed; a NaN makes the row's sum, and so its loss, NaN either way.
FS_MULTIVERSION float MaxOf(const float* x, int64_t n) {
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, x[0]);
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      lanes[l] = vecmath::Select(x[c + l] > lanes[l], x[c + l], lanes[l]);
    }
  }
  for (; c < n; ++c) lanes[0] = std::max(lanes[0], x[c]);
  return *std::max_element(lanes, lanes + kLanes);
}

// sum_c y_c * (log_sum - (logit_c - max)) for dense labels, in double lanes as above.
FS_MULTIVERSION double DenseLoss(const float* logits, const float* labels, int64_t classes,
                                 double shift) {
  double lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= classes; c += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      lanes[l] += double(labels[c + l]) * (shift - double(logits[c + l]));
    }
  }
  for (; c < classes; ++c) lanes[c % kLanes] += double(labels[c]) * (shift - double(logits[c]));
  double sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

FS_MULTIVERSION void ScaleMinusLabels(float* backprop, int64_t classes, float scale,
                                      const float* labels) {
  if (labels == nullptr) {
    for (int64_t c = 0; c < classes; ++c) backprop[c] *= scale;
  } else {
    for (int64_t c = 0; c < classes; ++c) backprop[c] = backprop[c] * scale - labels[c];
  }
}

void XentRow(const float* logits, int64_t classes, const float* dense_labels, int64_t label,
             float* loss, float* backprop) {
  if (classes == 0) {
    *loss = 0;
    return;
  }
  const float max_logit = MaxOf(logits, classes);
  const double sum_exp = SumOfExps(logits, classes, max_logit, backprop);
  const double log_sum = std::log(sum_exp);
  // loss = log(sum) - (logit_label - max), or its dense labels' weighted sum.
  const double shift = log_sum + double(max_logit);
  ScaleMinusLabels(backprop, classes, static_cast<float>(1.0 / sum_exp), dense_labels);
  if (dense_labels == nullptr) {
    *loss = static_cast<float>(shift - double(logits[label]));
    backprop[label] -= 1.0f;
  } else {
    *loss = static_cast<float>(DenseLoss(logits, dense_labels, classes, shift));
  }
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
            XentRow(x + b * classes, classes, dense, label, loss->data<T>() + b,
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
