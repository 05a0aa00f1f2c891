// Greedy non-maximum suppression (tf.image.non_max_suppression): boxes taken in order of
// decreasing score (the lower index first among equal scores), each kept unless its IoU with a
// box already kept exceeds iou_threshold, until max_output_size are kept. Boxes are
// [y1, x1, y2, x2] with the corners in either order. NonMaxSuppression (iou_threshold an attr),
// V2 (an input), V3 (and a score_threshold below which boxes are dropped), V4 (optionally
// padded to max_output_size, with the count of valid outputs), V5 (and the kept scores, with
// soft suppression), NonMaxSuppressionWithOverlaps (similarities given, not IoU) and
// CombinedNonMaxSuppression (per class, then across classes, batched). Not differentiable.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

struct Box {
  float ymin, xmin, ymax, xmax;
};

Box BoxAt(const float* b) {
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Intersection over union; 0 when either box has no area.
float IoU(const Box& a, const Box& b) {
  const float area_a = (a.ymax - a.ymin) * (a.xmax - a.xmin);
  const float area_b = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (area_a <= 0 || area_b <= 0) return 0.0f;
  const float height = std::max(std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin), 0.0f);
  const float width = std::max(std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin), 0.0f);
  const float intersection = height * width;
  return intersection / (area_a + area_b - intersection);
}

// TensorFlow's greedy selection of at most max_output of n candidates, the ones scoring above
// score_threshold, by decreasing score (the lower index first among equal scores). A candidate
// more similar than iou_threshold to a box already kept is dropped. With soft suppression
// (scale = -0.5 / soft_nms_sigma < 0) a candidate's score also decays by
// exp(scale * similarity^2) for each kept box, and a decayed one goes back among the candidates
// while it still scores above score_threshold. Appends to *selected (and *selected_scores).
template <typename Similarity>
void Greedy(int64_t n, const float* scores, float score_threshold, float iou_threshold, float scale,
            int64_t max_output, Similarity&& similarity, std::vector<int32_t>* selected,
            std::vector<float>* selected_scores) {
  struct Candidate {
    int64_t index;
    float score;
    size_t checked;  // kept boxes it has been compared with
  };
  auto after = [](const Candidate& a, const Candidate& c) {
    return a.score < c.score || (a.score == c.score && a.index > c.index);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(after)> queue(after);
  for (int64_t i = 0; i < n; ++i) {
    if (scores[i] > score_threshold) queue.push({i, scores[i], 0});
  }
  while (static_cast<int64_t>(selected->size()) < max_output && !queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    const float original = c.score;
    bool suppressed = false;
    // Newest kept boxes first: overlapping boxes tend to have close scores.
    for (size_t j = selected->size(); j-- > c.checked;) {
      const float s = similarity(c.index, (*selected)[j]);
      if (s > iou_threshold) {
        suppressed = true;
        break;
      }
      if (scale != 0) c.score *= std::exp(scale * s * s);
      if (c.score <= score_threshold) break;
    }
    c.checked = selected->size();
    if (suppressed) continue;
    if (c.score == original) {
      selected->push_back(static_cast<int32_t>(c.index));
      if (selected_scores != nullptr) selected_scores->push_back(c.score);
    } else if (c.score > score_threshold) {
      queue.push(c);
    }
  }
}

Status ScalarFloat(const Tensor& t, const char* name, float* out) {
  if (t.rank() != 0) {
    return errors::InvalidArgument(name, " must be 0-D, got shape ", t.shape().ToString());
  }
  *out = static_cast<float>(t.ElementAsDouble(0));
  return Status::OK();
}

// The indices NMS keeps, in the order it keeps them (and their scores when asked). Input 0 is
// boxes [num_boxes, 4], or for NonMaxSuppressionWithOverlaps the similarities [n, n].
Status Select(KernelContext& ctx, float iou_threshold, float score_threshold, float scale,
              std::vector<int32_t>* selected, std::vector<float>* selected_scores,
              int64_t* max_output) {
  const bool overlaps = ctx.node().type() == "NonMaxSuppressionWithOverlaps";
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (overlaps && (boxes.rank() != 2 || boxes.dim(0) != boxes.dim(1))) {
    return errors::InvalidArgument("overlaps must be a square matrix [num_boxes, num_boxes], ",
                                   "got shape ", boxes.shape().ToString());
  }
  if (!overlaps && (boxes.rank() != 2 || boxes.dim(1) != 4)) {
    return errors::InvalidArgument("boxes must be 2-D [num_boxes, 4], got shape ",
                                   boxes.shape().ToString());
  }
  if (scores.rank() != 1 || scores.dim(0) != boxes.dim(0)) {
    return errors::InvalidArgument("scores must be 1-D [num_boxes = ", boxes.dim(0),
                                   "], got shape ", scores.shape().ToString());
  }
  const Tensor& max_size = ctx.input(2);
  if (max_size.rank() != 0) {
    return errors::InvalidArgument("max_output_size must be 0-D, got shape ",
                                   max_size.shape().ToString());
  }
  *max_output = max_size.ElementAsInt64(0);
  if (*max_output < 0) {
    return errors::InvalidArgument("max_output_size must be non-negative, got ", *max_output);
  }
  if (!overlaps && !(iou_threshold >= 0 && iou_threshold <= 1)) {
    return errors::InvalidArgument("iou_threshold must be in [0, 1], got ", iou_threshold);
  }
  const float* b = boxes.data<float>();
  const int64_t n = boxes.dim(0);
  if (overlaps) {
    Greedy(
        n, scores.data<float>(), score_threshold, iou_threshold, scale, *max_output,
        [&](int64_t i, int64_t j) { return b[i * n + j]; }, selected, selected_scores);
  } else {
    Greedy(
        n, scores.data<float>(), score_threshold, iou_threshold, scale, *max_output,
        [&](int64_t i, int64_t j) { return IoU(BoxAt(b + 4 * i), BoxAt(b + 4 * j)); }, selected,
        selected_scores);
  }
  return Status::OK();
}

template <typename T>
Status WriteVector(KernelContext& ctx, int output, const std::vector<T>& values, int64_t length) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(output, TensorShape{length}, &out));
  std::fill_n(out->data<T>(), length, T(0));
  std::copy(values.begin(), values.end(), out->data<T>());
  return Status::OK();
}

// kVersion 1-5 as TensorFlow numbers them; 0 is NonMaxSuppressionWithOverlaps (thresholds as
// V3's inputs).
template <int kVersion>
Status NmsKernel(KernelContext& ctx) {
  float iou_threshold = 0.5f;
  float score_threshold = -INFINITY;
  float scale = 0.0f;
  if constexpr (kVersion == 1) {
    iou_threshold = static_cast<float>(ctx.attrs().GetOr<double>("iou_threshold", 0.5));
  } else {
    FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(3), "iou_threshold", &iou_threshold));
  }
  if constexpr (kVersion >= 3 || kVersion == 0) {
    FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(4), "score_threshold", &score_threshold));
  }
  if constexpr (kVersion == 5) {
    float sigma = 0.0f;
    FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(5), "soft_nms_sigma", &sigma));
    if (!(sigma >= 0)) {
      return errors::InvalidArgument("soft_nms_sigma must be non-negative, got ", sigma);
    }
    scale = sigma > 0 ? -0.5f / sigma : 0.0f;
  }
  std::vector<int32_t> selected;
  std::vector<float> scores;
  int64_t max_output = 0;
  FS_RETURN_IF_ERROR(Select(ctx, iou_threshold, score_threshold, scale, &selected,
                            kVersion == 5 ? &scores : nullptr, &max_output));
  const int64_t count = static_cast<int64_t>(selected.size());
  if constexpr (kVersion >= 4) {
    const bool pad = ctx.attrs().GetOr<bool>("pad_to_max_output_size", false);
    const int64_t length = pad ? max_output : count;
    FS_RETURN_IF_ERROR(WriteVector(ctx, 0, selected, length));
    if constexpr (kVersion == 5) FS_RETURN_IF_ERROR(WriteVector(ctx, 1, scores, length));
    Tensor* valid;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(kVersion == 5 ? 2 : 1, TensorShape{}, &valid));
    *valid->data<int32_t>() = static_cast<int32_t>(count);
    return Status::OK();
  }
  return WriteVector(ctx, 0, selected, count);
}

Status NmsShape(InferenceContext& ctx) {
  PartialShape boxes, scores;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &boxes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &scores));
  if (ctx.op_type() != "NonMaxSuppressionWithOverlaps" && boxes.dim(1) >= 0 && boxes.dim(1) != 4) {
    return errors::InvalidArgument("boxes must be [num_boxes, 4], got ", boxes.ToString());
  }
  int64_t length = -1;
  const bool padded = ctx.attrs().GetOr<bool>("pad_to_max_output_size", false);
  if (padded && ctx.input_value(2) != nullptr) length = ctx.input_value(2)->ElementAsInt64(0);
  ctx.set_output(0, PartialShape({length}));
  // V4: valid_outputs; V5: selected_scores, valid_outputs.
  if (ctx.num_outputs() == 3) ctx.set_output(1, PartialShape({length}));
  if (ctx.num_outputs() >= 2) {
    ctx.set_output(ctx.num_outputs() - 1, PartialShape(std::vector<int64_t>{}));
  }
  return Status::OK();
}

OpBuilder NmsOp(const char* name, int version) {
  OpBuilder builder(name);
  builder.Input(version == 0 ? "overlaps" : "boxes", "float")
      .Input("scores", "float")
      .Input("max_output_size", "int32");
  if (version != 1) builder.Input(version == 0 ? "overlap_threshold" : "iou_threshold", "float");
  if (version >= 3 || version == 0) builder.Input("score_threshold", "float");
  if (version == 5) builder.Input("soft_nms_sigma", "float");
  builder.Output("selected_indices", "int32");
  if (version == 5) builder.Output("selected_scores", "float");
  if (version >= 4) builder.Output("valid_outputs", "int32");
  builder.Shape(NmsShape).NotDifferentiable();
  return builder;
}

// CombinedNonMaxSuppression: for each image, NMS per class (boxes [batch, num_boxes, q, 4] with q
// 1, shared by the classes, or num_classes), then the kept boxes of all classes by decreasing
// score (stably: the lower class, then the earlier kept, first among equal scores), the first
// max_total_size (with pad_per_class at most max_output_size_per_class * num_classes) written,
// zero-padded, with coordinates clipped to [0, 1] unless clip_boxes is off.
Status CombinedNmsKernel(KernelContext& ctx) {
  const std::string op = "CombinedNonMaxSuppression";
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 4 || boxes.dim(3) != 4) {
    return errors::InvalidArgument(op, ": boxes must be 4-D [batch, num_boxes, q, 4], got ",
                                   boxes.shape().ToString());
  }
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(1) != boxes.dim(1)) {
    return errors::InvalidArgument(op, ": scores must be 3-D [batch = ", boxes.dim(0),
                                   ", num_boxes = ", boxes.dim(1), ", num_classes], got ",
                                   scores.shape().ToString());
  }
  const int64_t batch = boxes.dim(0), num_boxes = boxes.dim(1), q = boxes.dim(2);
  const int64_t classes = scores.dim(2);
  if (q != 1 && q != classes) {
    return errors::InvalidArgument(
        op, ": boxes' third dimension must be 1 or num_classes = ", classes, ", got ", q);
  }
  int64_t per_class = 0, total = 0;
  for (const auto& [index, name, out] : {std::tuple{2, "max_output_size_per_class", &per_class},
                                         std::tuple{3, "max_total_size", &total}}) {
    const Tensor& t = ctx.input(index);
    if (t.rank() != 0) {
      return errors::InvalidArgument(op, ": ", name, " must be 0-D, got shape ",
                                     t.shape().ToString());
    }
    *out = t.ElementAsInt64(0);
    if (*out <= 0) return errors::InvalidArgument(op, ": ", name, " must be > 0, got ", *out);
  }
  float iou_threshold = 0, score_threshold = 0;
  FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(4), "iou_threshold", &iou_threshold));
  FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(5), "score_threshold", &score_threshold));
  if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
    return errors::InvalidArgument(op, ": iou_threshold must be in [0, 1], got ", iou_threshold);
  }
  const bool pad_per_class = ctx.attrs().GetOr<bool>("pad_per_class", false);
  const bool clip = ctx.attrs().GetOr<bool>("clip_boxes", true);
  const int64_t detections = pad_per_class ? std::min(per_class * classes, total) : total;
  Tensor *out_boxes, *out_scores, *out_classes, *valid;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{batch, detections, 4}, &out_boxes));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{batch, detections}, &out_scores));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{batch, detections}, &out_classes));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(3, TensorShape{batch}, &valid));
  std::fill_n(out_boxes->data<float>(), out_boxes->num_elements(), 0.0f);
  std::fill_n(out_scores->data<float>(), out_scores->num_elements(), 0.0f);
  std::fill_n(out_classes->data<float>(), out_classes->num_elements(), 0.0f);
  const float* all_boxes = boxes.data<float>();
  const float* all_scores = scores.data<float>();
  struct Kept {
    const float* box;
    float score;
    int64_t cls;
  };
  std::vector<float> class_scores(num_boxes);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Kept> kept;
    for (int64_t c = 0; c < classes; ++c) {
      auto box = [&](int64_t i) {
        return all_boxes + ((b * num_boxes + i) * q + (q == 1 ? 0 : c)) * 4;
      };
      for (int64_t i = 0; i < num_boxes; ++i) {
        class_scores[i] = all_scores[(b * num_boxes + i) * classes + c];
      }
      std::vector<int32_t> selected;
      std::vector<float> selected_scores;
      Greedy(
          num_boxes, class_scores.data(), score_threshold, iou_threshold, 0.0f, per_class,
          [&](int64_t i, int64_t j) { return IoU(BoxAt(box(i)), BoxAt(box(j))); }, &selected,
          &selected_scores);
      for (size_t k = 0; k < selected.size(); ++k) {
        kept.push_back({box(selected[k]), selected_scores[k], c});
      }
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [](const Kept& x, const Kept& y) { return x.score > y.score; });
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(kept.size()), detections);
    for (int64_t k = 0; k < count; ++k) {
      float* o = out_boxes->data<float>() + (b * detections + k) * 4;
      for (int j = 0; j < 4; ++j) {
        o[j] = clip ? std::clamp(kept[k].box[j], 0.0f, 1.0f) : kept[k].box[j];
      }
      out_scores->data<float>()[b * detections + k] = kept[k].score;
      out_classes->data<float>()[b * detections + k] = static_cast<float>(kept[k].cls);
    }
    valid->data<int32_t>()[b] = static_cast<int32_t>(count);
  }
  return Status::OK();
}

Status CombinedNmsShape(InferenceContext& ctx) {
  PartialShape boxes, scores;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &boxes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 3, &scores));
  int64_t detections = -1;
  const Tensor* total = ctx.input_value(3);
  const Tensor* per_class = ctx.input_value(2);
  if (total != nullptr) {
    detections = total->ElementAsInt64(0);
    if (ctx.attrs().GetOr<bool>("pad_per_class", false)) {
      detections = per_class != nullptr && scores.dim(2) >= 0
                       ? std::min(detections, per_class->ElementAsInt64(0) * scores.dim(2))
                       : -1;
    }
  }
  const int64_t batch = boxes.dim(0);
  ctx.set_output(0, PartialShape({batch, detections, 4}));
  ctx.set_output(1, PartialShape({batch, detections}));
  ctx.set_output(2, PartialShape({batch, detections}));
  ctx.set_output(3, PartialShape({batch}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("CombinedNonMaxSuppression")
                   .Input("boxes", "float")
                   .Input("scores", "float")
                   .Input("max_output_size_per_class", "int32")
                   .Input("max_total_size", "int32")
                   .Input("iou_threshold", "float")
                   .Input("score_threshold", "float")
                   .Output("nmsed_boxes", "float")
                   .Output("nmsed_scores", "float")
                   .Output("nmsed_classes", "float")
                   .Output("valid_detections", "int32")
                   .Attr("pad_per_class", false)
                   .Attr("clip_boxes", true)
                   .Shape(CombinedNmsShape)
                   .Kernel("CPU", CombinedNmsKernel)
                   .NotDifferentiable()
                   .Doc("Batched greedy NMS per class, then across classes "
                        "(tf.image.combined_non_max_suppression)."));

FS_REGISTER_OP(NmsOp("NonMaxSuppression", 1)
                   .Attr("iou_threshold", 0.5f)
                   .Kernel("CPU", NmsKernel<1>)
                   .Doc("Greedy NMS with the IoU threshold as an attr (TensorFlow 1)."));
FS_REGISTER_OP(NmsOp("NonMaxSuppressionV2", 2)
                   .Kernel("CPU", NmsKernel<2>)
                   .Doc("Greedy NMS: the indices of the boxes kept, by decreasing score."));
FS_REGISTER_OP(NmsOp("NonMaxSuppressionV3", 3)
                   .Kernel("CPU", NmsKernel<3>)
                   .Doc("Greedy NMS over the boxes scoring above score_threshold."));
FS_REGISTER_OP(NmsOp("NonMaxSuppressionV4", 4)
                   .Attr("pad_to_max_output_size", false)
                   .Kernel("CPU", NmsKernel<4>)
                   .Doc("NonMaxSuppressionV3, optionally padded with zeros to max_output_size, "
                        "and the count of valid indices."));
FS_REGISTER_OP(NmsOp("NonMaxSuppressionV5", 5)
                   .Attr("pad_to_max_output_size", false)
                   .Kernel("CPU", NmsKernel<5>)
                   .Doc("NonMaxSuppressionV4 with the kept boxes' scores and soft suppression "
                        "(Gaussian, soft_nms_sigma > 0; Bodla et al. 2017)."));
FS_REGISTER_OP(NmsOp("NonMaxSuppressionWithOverlaps", 0)
                   .Kernel("CPU", NmsKernel<0>)
                   .Doc("Greedy NMS by a given [n, n] similarity matrix instead of IoU."));

}  // namespace
}  // namespace flowstone
