// Connectionist temporal classification (Graves et al., 2006): CTCLoss, the negative log
// likelihood of each batch entry's label sequence under per-frame class scores, with its gradient
// with respect to the scores; and CTCGreedyDecoder, the best path's labels. Inputs are time-major
// logits [max_time, batch, num_classes]; the last class is the blank. The loss runs the
// forward-backward recursions in log space over the label sequence with blanks interleaved
// (l' = blank, l1, blank, l2, ..., blank).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/nn/ctc_util.h"

namespace flowstone {
namespace {

constexpr double kLogZero = -std::numeric_limits<double>::infinity();

double LogSumExp(double a, double b) {
  if (a == kLogZero) return b;
  if (b == kLogZero) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// Each batch entry's labels from the sparse (indices [N, 2], values [N]) form, in index order,
// checked against the batch size and the classes (blank excluded).
Status GatherLabels(KernelContext& ctx, int64_t batch, int64_t num_classes,
                    std::vector<std::vector<int>>* labels) {
  const std::string& op = ctx.node().type();
  const Tensor& indices = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (indices.shape().rank() != 2 || indices.shape().dim(1) != 2) {
    return errors::InvalidArgument(op, ": labels_indices must be a matrix [num_labels, 2], got ",
                                   indices.shape().ToString());
  }
  if (values.shape().rank() != 1 || values.shape().dim(0) != indices.shape().dim(0)) {
    return errors::InvalidArgument(op, ": labels_values must be a vector with one value per ",
                                   "row of labels_indices; got shapes ", values.shape().ToString(),
                                   " and ", indices.shape().ToString());
  }
  labels->assign(batch, {});
  std::vector<std::vector<std::pair<int64_t, int>>> positioned(batch);
  for (int64_t i = 0; i < values.num_elements(); ++i) {
    const int64_t b = indices.data<int64_t>()[2 * i];
    const int64_t position = indices.data<int64_t>()[2 * i + 1];
    const int32_t label = values.data<int32_t>()[i];
    if (b < 0 || b >= batch || position < 0) {
      return errors::InvalidArgument(op, ": labels_indices[", i, "] = [", b, ", ", position,
                                     "] is out of range: the batch index must be in [0, ", batch,
                                     ") and the position non-negative");
    }
    if (label < 0 || label >= num_classes - 1) {
      return errors::InvalidArgument(op, ": labels_values[", i, "] = ", label,
                                     " is not a valid label: labels are in [0, num_classes - 1 = ",
                                     num_classes - 1, "), the last class being the blank");
    }
    positioned[b].emplace_back(position, label);
  }
  for (int64_t b = 0; b < batch; ++b) {
    std::sort(positioned[b].begin(), positioned[b].end());
    for (const auto& [position, label] : positioned[b]) (*labels)[b].push_back(label);
  }
  return Status::OK();
}

struct CtcOptions {
  bool collapse_repeated = false;  // preprocess_collapse_repeated
  bool merge_repeated = true;      // ctc_merge_repeated
  bool ignore_longer = false;      // ignore_longer_outputs_than_inputs
};

// One batch entry: the loss and, in `grad` (frame t's row at grad + t * stride), the gradient with
// respect to the logits. `log_probs` holds the frames' log-softmax rows [time][class].
template <typename T>
Status EntryLossAndGradient(const std::string& op, int64_t b, std::vector<int> labels,
                            const std::vector<std::vector<double>>& log_probs,
                            const CtcOptions& options, T* loss, T* grad, int64_t stride) {
  const int64_t time = static_cast<int64_t>(log_probs.size());
  const int num_classes = time > 0 ? static_cast<int>(log_probs[0].size()) : 0;
  const int blank = num_classes - 1;
  if (options.collapse_repeated) {
    labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  }
  const int64_t num_labels = static_cast<int64_t>(labels.size());
  int64_t repeats = 0;
  for (int64_t i = 1; i < num_labels; ++i) repeats += labels[i] == labels[i - 1];
  const int64_t required = num_labels + (options.merge_repeated ? repeats : 0);
  if (required > time) {
    if (options.ignore_longer) {
      *loss = T(0);
      return Status::OK();
    }
    return errors::InvalidArgument(
        op, ": Not enough time for target transition sequence (required: ", required,
        ", available: ", time, ") in batch entry ", b,
        ". You can turn this error into a warning by using the flag "
        "ignore_longer_outputs_than_inputs");
  }
  if (time == 0) {
    *loss = T(0);
    return Status::OK();
  }
  const int64_t s_len = 2 * num_labels + 1;
  std::vector<int> extended(s_len, blank);
  for (int64_t i = 0; i < num_labels; ++i) extended[2 * i + 1] = labels[i];
  // A path may stay on a position (a repeated blank, or a repeated label that merges), move one
  // forward, or skip the blank between two labels (when they differ, or when repeats do not
  // merge: then two frames of one class are two labels).
  auto can_stay = [&](int64_t s) { return options.merge_repeated || extended[s] == blank; };
  auto can_skip = [&](int64_t s) {
    return s >= 2 && extended[s] != blank &&
           (!options.merge_repeated || extended[s] != extended[s - 2]);
  };
  std::vector<std::vector<double>> alpha(time, std::vector<double>(s_len, kLogZero));
  std::vector<std::vector<double>> beta(time, std::vector<double>(s_len, kLogZero));
  alpha[0][0] = log_probs[0][blank];
  if (s_len > 1) alpha[0][1] = log_probs[0][extended[1]];
  for (int64_t t = 1; t < time; ++t) {
    for (int64_t s = 0; s < s_len; ++s) {
      double sum = can_stay(s) ? alpha[t - 1][s] : kLogZero;
      if (s >= 1) sum = LogSumExp(sum, alpha[t - 1][s - 1]);
      if (can_skip(s)) sum = LogSumExp(sum, alpha[t - 1][s - 2]);
      if (sum != kLogZero) alpha[t][s] = sum + log_probs[t][extended[s]];
    }
  }
  beta[time - 1][s_len - 1] = log_probs[time - 1][extended[s_len - 1]];
  if (s_len > 1) beta[time - 1][s_len - 2] = log_probs[time - 1][extended[s_len - 2]];
  for (int64_t t = time - 2; t >= 0; --t) {
    for (int64_t s = 0; s < s_len; ++s) {
      double sum = can_stay(s) ? beta[t + 1][s] : kLogZero;
      if (s + 1 < s_len) sum = LogSumExp(sum, beta[t + 1][s + 1]);
      if (s + 2 < s_len && can_skip(s + 2)) sum = LogSumExp(sum, beta[t + 1][s + 2]);
      if (sum != kLogZero) beta[t][s] = sum + log_probs[t][extended[s]];
    }
  }
  double log_likelihood = alpha[time - 1][s_len - 1];
  if (s_len > 1) log_likelihood = LogSumExp(log_likelihood, alpha[time - 1][s_len - 2]);
  *loss = T(-log_likelihood);
  // d loss / d logit[t][c] = softmax[t][c] - sum over positions s labelled c of
  // exp(alpha[t][s] + beta[t][s] - log_probs[t][c] - log_likelihood).
  std::vector<double> occupancy(num_classes);
  for (int64_t t = 0; t < time; ++t) {
    std::fill(occupancy.begin(), occupancy.end(), kLogZero);
    for (int64_t s = 0; s < s_len; ++s) {
      const int c = extended[s];
      occupancy[c] = LogSumExp(occupancy[c], alpha[t][s] + beta[t][s] - log_probs[t][c]);
    }
    T* row = grad + t * stride;
    for (int c = 0; c < num_classes; ++c) {
      const double posterior =
          occupancy[c] == kLogZero ? 0.0 : std::exp(occupancy[c] - log_likelihood);
      row[c] = T(std::exp(log_probs[t][c]) - posterior);
    }
  }
  return Status::OK();
}

Status CtcLossKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& logits = ctx.input(0);
  const Tensor& lengths = ctx.input(3);
  FS_RETURN_IF_ERROR(ctc::CheckLogitsAndLengths(ctx, logits, lengths));
  const int64_t max_time = logits.shape().dim(0);
  const int64_t batch = logits.shape().dim(1);
  const int64_t num_classes = logits.shape().dim(2);
  std::vector<std::vector<int>> labels;
  FS_RETURN_IF_ERROR(GatherLabels(ctx, batch, num_classes, &labels));
  CtcOptions options;
  options.collapse_repeated = ctx.attrs().GetOr<bool>("preprocess_collapse_repeated", false);
  options.merge_repeated = ctx.attrs().GetOr<bool>("ctc_merge_repeated", true);
  options.ignore_longer = ctx.attrs().GetOr<bool>("ignore_longer_outputs_than_inputs", false);
  Tensor* loss;
  Tensor* grad;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape({batch}), &loss));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, logits.shape(), &grad));
  return DispatchDType<float, double>(logits.dtype(), op.c_str(), [&]<typename T>() -> Status {
    T* g = grad->data<T>();
    std::fill(g, g + grad->num_elements(), T(0));
    std::vector<Status> statuses(batch);
    ctx.ParallelFor(batch, max_time * num_classes * 50, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t time = lengths.data<int32_t>()[b];
        std::vector<std::vector<double>> log_probs(time, std::vector<double>(num_classes));
        for (int64_t t = 0; t < time; ++t) {
          const T* row = logits.data<T>() + (t * batch + b) * num_classes;
          const double max = *std::max_element(row, row + num_classes);
          double sum = 0;
          for (int64_t c = 0; c < num_classes; ++c) sum += std::exp(double(row[c]) - max);
          const double log_norm = max + std::log(sum);
          for (int64_t c = 0; c < num_classes; ++c) log_probs[t][c] = double(row[c]) - log_norm;
        }
        statuses[b] =
            EntryLossAndGradient(op, b, labels[b], log_probs, options, loss->data<T>() + b,
                                 g + b * num_classes, batch * num_classes);
      }
    });
    for (const Status& s : statuses) FS_RETURN_IF_ERROR(s);
    return Status::OK();
  });
}

Status CtcLossShape(InferenceContext& ctx) {
  PartialShape logits;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 3, &logits));
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(3, 1, &unused));
  ctx.set_output(0, PartialShape({logits.dim(1)}));
  ctx.set_output(1, logits);
  return Status::OK();
}

// d loss_b / d logits = gradient[:, b, :], scaled by the incoming gradient of loss_b. The
// gradient output itself is not differentiated again, as in TensorFlow.
Status CtcLossGrad(GradientContext& ctx) {
  Endpoint scale =
      ctx.Op("ExpandDims", {ctx.output_grad(0), ctx.Const(Tensor::Scalar<int32_t>(-1))});
  ctx.SetInputGrad(0, ctx.Op("Mul", {scale, ctx.output(1)}));
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("CTCLoss")
                   .Input("inputs", "T")
                   .Input("labels_indices", "int64")
                   .Input("labels_values", "int32")
                   .Input("sequence_length", "int32")
                   .Output("loss", "T")
                   .Output("gradient", "T")
                   .TypeAttr("T", kFloatTypes, DType::kFloat32)
                   .Attr("preprocess_collapse_repeated", false)
                   .Attr("ctc_merge_repeated", true)
                   .Attr("ignore_longer_outputs_than_inputs", false)
                   .Shape(CtcLossShape)
                   .Kernel("CPU", CtcLossKernel)
                   .Gradient(CtcLossGrad)
                   .Doc("The CTC loss of each batch entry and its gradient with respect to the "
                        "logits [max_time, batch, num_classes] (the last class is the blank)."));

// Per entry, the most likely class of each frame; blanks are dropped and, with merge_repeated,
// runs of one class become one label. log_probability is minus the sum of the frames' largest
// logits, as TensorFlow reports it.
Status GreedyDecoderKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& logits = ctx.input(0);
  const Tensor& lengths = ctx.input(1);
  FS_RETURN_IF_ERROR(ctc::CheckLogitsAndLengths(ctx, logits, lengths));
  const int64_t batch = logits.shape().dim(1);
  const int64_t num_classes = logits.shape().dim(2);
  const bool merge_repeated = ctx.attrs().GetOr<bool>("merge_repeated", false);
  int64_t blank = ctx.attrs().GetOr<int64_t>("blank_index", -1);
  if (blank < 0) blank += num_classes;
  if (blank < 0 || blank >= num_classes) {
    return errors::InvalidArgument(
        op, ": blank_index ", ctx.attrs().GetOr<int64_t>("blank_index", -1),
        " is outside [-num_classes, num_classes) for num_classes = ", num_classes);
  }
  std::vector<std::vector<int64_t>> decoded(batch);
  Tensor* log_probability;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(3, TensorShape({batch, 1}), &log_probability));
  const Status decoded_status =
      DispatchDType<float, double>(logits.dtype(), op.c_str(), [&]<typename T>() -> Status {
        for (int64_t b = 0; b < batch; ++b) {
          double score = 0;
          int64_t previous = -1;
          for (int64_t t = 0; t < lengths.data<int32_t>()[b]; ++t) {
            const T* row = logits.data<T>() + (t * batch + b) * num_classes;
            const int64_t best = std::max_element(row, row + num_classes) - row;
            score -= double(row[best]);
            if (best != blank && !(merge_repeated && best == previous)) {
              decoded[b].push_back(best);
            }
            previous = best;
          }
          log_probability->data<T>()[b] = T(score);
        }
        return Status::OK();
      });
  FS_RETURN_IF_ERROR(decoded_status);
  int64_t total = 0, longest = 0;
  for (const auto& d : decoded) {
    total += static_cast<int64_t>(d.size());
    longest = std::max<int64_t>(longest, static_cast<int64_t>(d.size()));
  }
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape({total, 2}), &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape({total}), &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape({2}), &shape));
  int64_t k = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < decoded[b].size(); ++i, ++k) {
      indices->data<int64_t>()[2 * k] = b;
      indices->data<int64_t>()[2 * k + 1] = static_cast<int64_t>(i);
      values->data<int64_t>()[k] = decoded[b][i];
    }
  }
  shape->data<int64_t>()[0] = batch;
  shape->data<int64_t>()[1] = longest;
  return Status::OK();
}

Status GreedyDecoderShape(InferenceContext& ctx) {
  PartialShape logits;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 3, &logits));
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  ctx.set_output(0, PartialShape({-1, 2}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({2}));
  ctx.set_output(3, PartialShape({logits.dim(1), 1}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("CTCGreedyDecoder")
                   .Input("inputs", "T")
                   .Input("sequence_length", "int32")
                   .Output("decoded_indices", "int64")
                   .Output("decoded_values", "int64")
                   .Output("decoded_shape", "int64")
                   .Output("log_probability", "T")
                   .TypeAttr("T", kFloatTypes, DType::kFloat32)
                   .Attr("merge_repeated", false)
                   .Attr("blank_index", -1)
                   .Shape(GreedyDecoderShape)
                   .Kernel("CPU", GreedyDecoderKernel)
                   .NotDifferentiable()
                   .Doc("Best-path CTC decoding of logits [max_time, batch, num_classes], as a "
                        "sparse [batch, max_decoded_length] result."));

}  // namespace
}  // namespace flowstone
