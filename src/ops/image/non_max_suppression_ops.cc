// Greedy non-maximum suppression (tf.image.non_max_suppression): boxes taken in order of
// decreasing score (the lower index first among equal scores), each kept unless its IoU with a
// box already kept exceeds iou_threshold, until max_output_size are kept. Boxes are
// [y1, x1, y2, x2] with the corners in either order. NonMaxSuppression (iou_threshold an attr),
// V2 (an input), V3 (and a score_threshold below which boxes are dropped) and V4 (optionally
// padded to max_output_size, with the count of valid outputs). Not differentiable.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
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

Status ScalarFloat(const Tensor& t, const char* name, float* out) {
  if (t.rank() != 0) {
    return errors::InvalidArgument(name, " must be 0-D, got shape ", t.shape().ToString());
  }
  *out = static_cast<float>(t.ElementAsDouble(0));
  return Status::OK();
}

// The indices NMS keeps, in the order it keeps them.
Status Select(KernelContext& ctx, float iou_threshold, float score_threshold,
              std::vector<int32_t>* selected, int64_t* max_output) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 2 || boxes.dim(1) != 4) {
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
  if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
    return errors::InvalidArgument("iou_threshold must be in [0, 1], got ", iou_threshold);
  }
  const int64_t n = boxes.dim(0);
  const float* b = boxes.data<float>();
  const float* s = scores.data<float>();
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i) {
    if (s[i] > score_threshold) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
  std::vector<Box> kept;
  for (int64_t i : order) {
    if (static_cast<int64_t>(selected->size()) >= *max_output) break;
    const Box box = BoxAt(b + 4 * i);
    bool suppressed = false;
    for (const Box& other : kept) {
      if (IoU(box, other) > iou_threshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) {
      kept.push_back(box);
      selected->push_back(static_cast<int32_t>(i));
    }
  }
  return Status::OK();
}

Status WriteSelected(KernelContext& ctx, const std::vector<int32_t>& selected, int64_t length) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{length}, &out));
  std::fill_n(out->data<int32_t>(), length, 0);
  std::copy(selected.begin(), selected.end(), out->data<int32_t>());
  return Status::OK();
}

template <int kVersion>
Status NmsKernel(KernelContext& ctx) {
  float iou_threshold = 0.5f;
  float score_threshold = -INFINITY;
  if constexpr (kVersion == 1) {
    iou_threshold = static_cast<float>(ctx.attrs().GetOr<double>("iou_threshold", 0.5));
  } else {
    FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(3), "iou_threshold", &iou_threshold));
  }
  if constexpr (kVersion >= 3) {
    FS_RETURN_IF_ERROR(ScalarFloat(ctx.input(4), "score_threshold", &score_threshold));
  }
  std::vector<int32_t> selected;
  int64_t max_output = 0;
  FS_RETURN_IF_ERROR(Select(ctx, iou_threshold, score_threshold, &selected, &max_output));
  const int64_t count = static_cast<int64_t>(selected.size());
  if constexpr (kVersion == 4) {
    const bool pad = ctx.attrs().GetOr<bool>("pad_to_max_output_size", false);
    FS_RETURN_IF_ERROR(WriteSelected(ctx, selected, pad ? max_output : count));
    Tensor* valid;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{}, &valid));
    *valid->data<int32_t>() = static_cast<int32_t>(count);
    return Status::OK();
  }
  return WriteSelected(ctx, selected, count);
}

Status NmsShape(InferenceContext& ctx) {
  PartialShape boxes, scores;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &boxes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &scores));
  if (boxes.dim(1) >= 0 && boxes.dim(1) != 4) {
    return errors::InvalidArgument("boxes must be [num_boxes, 4], got ", boxes.ToString());
  }
  int64_t length = -1;
  const bool padded = ctx.op_type() == "NonMaxSuppressionV4" &&
                      ctx.attrs().GetOr<bool>("pad_to_max_output_size", false);
  if (padded && ctx.input_value(2) != nullptr) length = ctx.input_value(2)->ElementAsInt64(0);
  ctx.set_output(0, PartialShape({length}));
  if (ctx.num_outputs() == 2) ctx.set_output(1, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

OpBuilder NmsOp(const char* name, int version) {
  OpBuilder builder(name);
  builder.Input("boxes", "float").Input("scores", "float").Input("max_output_size", "int32");
  if (version >= 2) builder.Input("iou_threshold", "float");
  if (version >= 3) builder.Input("score_threshold", "float");
  builder.Output("selected_indices", "int32");
  if (version == 4) builder.Output("valid_outputs", "int32");
  builder.Shape(NmsShape).NotDifferentiable();
  return builder;
}

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

}  // namespace
}  // namespace flowstone
