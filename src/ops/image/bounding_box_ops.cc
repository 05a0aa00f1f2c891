// Bounding boxes: SampleDistortedBoundingBox (V1: min_object_covered an attr, V2: an input) and
// DrawBoundingBoxes (V1, V2 with colors).
//
// SampleDistortedBoundingBox follows TensorFlow's algorithm (image_ops' "Inception" crop): up to
// max_attempts times, draw an aspect ratio uniformly from aspect_ratio_range, a height between
// the ones giving area_range's smallest and largest area (rounded, bounded by the image), the
// width height * aspect ratio, and an offset uniformly among those keeping the crop inside (TF
// draws from [0, image - crop)), and accept it if it covers at least min_object_covered of some
// box. With no acceptable crop the whole image is returned. Draws come from a per-kernel
// std::mt19937_64 seeded by (seed, seed2), so a seeded op replays its sequence in a fresh
// session; TensorFlow draws from Philox, so the crops are TF's in distribution, not in value.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// w * h as a float, multiplied in floats: the product of a huge image's sides need not fit
// int64, and for sides below 2^24 this rounds exactly as converting the integer product would.
float FloatArea(int64_t w, int64_t h) { return static_cast<float>(w) * static_cast<float>(h); }

struct Rect {
  int64_t min_x, min_y, max_x, max_y;
  float Area() const { return FloatArea(max_x - min_x, max_y - min_y); }
  Rect Intersect(const Rect& r) const {
    const Rect i{std::max(min_x, r.min_x), std::max(min_y, r.min_y), std::min(max_x, r.max_x),
                 std::min(max_y, r.max_y)};
    return i.min_x > i.max_x || i.min_y > i.max_y ? Rect{0, 0, 0, 0} : i;
  }
};

struct Sampler {
  std::mt19937_64 rng;
  float Float() { return static_cast<float>(rng() >> 40) * 0x1.0p-24f; }  // [0, 1)
  int64_t Uniform(int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }
};

// A crop of `aspect_ratio` with an area in [min_area, max_area] (fractions of the image), or
// false when rounding leaves none.
bool RandomCrop(int64_t width, int64_t height, float min_area_fraction, float max_area_fraction,
                float aspect_ratio, Sampler& random, Rect* crop) {
  if (max_area_fraction <= 0 || aspect_ratio <= 0 || min_area_fraction > max_area_fraction) {
    return false;
  }
  const float min_area = min_area_fraction * FloatArea(width, height);
  const float max_area = max_area_fraction * FloatArea(width, height);
  int64_t h = std::lrint(std::sqrt(min_area / aspect_ratio));
  int64_t max_h = std::lrint(std::sqrt(max_area / aspect_ratio));
  // The largest max_h with round(max_h * aspect_ratio) <= width.
  if (std::lrint(static_cast<float>(max_h) * aspect_ratio) > width) {
    max_h = static_cast<int64_t>((static_cast<float>(width) + 0.5f - 1e-7f) / aspect_ratio);
    if (std::lrint(static_cast<float>(max_h) * aspect_ratio) > width) max_h -= 1;
  }
  max_h = std::min(max_h, height);
  h = std::min(h, max_h);
  if (h < max_h) h += random.Uniform(max_h - h + 1);
  int64_t w = std::lrint(static_cast<float>(h) * aspect_ratio);
  // Rounding may leave the area just outside the range: try one row more, then one less.
  float area = FloatArea(w, h);
  if (area < min_area) {
    h += 1;
    w = std::lrint(static_cast<float>(h) * aspect_ratio);
    area = FloatArea(w, h);
  }
  if (area > max_area) {
    h -= 1;
    w = std::lrint(static_cast<float>(h) * aspect_ratio);
    area = FloatArea(w, h);
  }
  if (area < min_area || area > max_area || w > width || h > height || w <= 0 || h <= 0) {
    return false;
  }
  const int64_t y = h < height ? random.Uniform(height - h) : 0;
  const int64_t x = w < width ? random.Uniform(width - w) : 0;
  *crop = {x, y, x + w, y + h};
  return true;
}

bool CoversAnObject(const Rect& crop, float min_object_covered, const std::vector<Rect>& boxes) {
  if (crop.Area() < 1) return false;
  for (const Rect& box : boxes) {
    const float area = box.Area();
    if (area < 1) continue;
    if (crop.Intersect(box).Area() / area >= min_object_covered) return true;
  }
  return false;
}

Status FloatPair(const std::string& op, const AttrMap& attrs, const char* name,
                 std::vector<double> fallback, float* lo, float* hi) {
  const std::vector<double> values = attrs.GetOr<std::vector<double>>(name, fallback);
  if (values.size() != 2) {
    return errors::InvalidArgument(op, ": ", name, " must have 2 elements, got ", values.size());
  }
  *lo = static_cast<float>(values[0]);
  *hi = static_cast<float>(values[1]);
  return Status::OK();
}

class SampleDistortedBoundingBoxKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    const std::string& op = node().type();
    const AttrMap& attrs = node().attrs();
    FS_RETURN_IF_ERROR(
        FloatPair(op, attrs, "aspect_ratio_range", {0.75, 1.33}, &min_ratio_, &max_ratio_));
    FS_RETURN_IF_ERROR(FloatPair(op, attrs, "area_range", {0.05, 1.0}, &min_area_, &max_area_));
    if (!(min_ratio_ > 0) || !(min_ratio_ <= max_ratio_) || !std::isfinite(max_ratio_)) {
      return errors::InvalidArgument(op, ": aspect_ratio_range must be positive and ascending, ",
                                     "got [", min_ratio_, ", ", max_ratio_, "]");
    }
    if (!(min_area_ > 0) || !(max_area_ <= 1) || !(min_area_ <= max_area_)) {
      return errors::InvalidArgument(op, ": area_range must be ascending within (0, 1], got [",
                                     min_area_, ", ", max_area_, "]");
    }
    max_attempts_ = attrs.GetOr<int64_t>("max_attempts", 100);
    if (max_attempts_ <= 0) {
      return errors::InvalidArgument(op, ": max_attempts must be positive, got ", max_attempts_);
    }
    use_image_ = attrs.GetOr<bool>("use_image_if_no_bounding_boxes", false);
    min_object_covered_ = static_cast<float>(attrs.GetOr<double>("min_object_covered", 0.1));
    const uint64_t seed = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed", 0));
    const uint64_t seed2 = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed2", 0));
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      sampler_.rng.seed((uint64_t{device()} << 32) | device());
    } else {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
      sampler_.rng.seed(seq);
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& image_size = ctx.input(0);
    const Tensor& boxes = ctx.input(1);
    if (image_size.rank() != 1 || image_size.num_elements() != 3) {
      return errors::InvalidArgument(op, ": image_size must be 1-D with 3 elements ",
                                     "[height, width, channels], got shape ",
                                     image_size.shape().ToString());
    }
    const int64_t height = image_size.ElementAsInt64(0);
    const int64_t width = image_size.ElementAsInt64(1);
    if (height <= 0 || width <= 0) {
      return errors::InvalidArgument(op, ": image height and width must be positive, got ", height,
                                     " x ", width);
    }
    if (boxes.rank() != 3 || boxes.dim(2) != 4) {
      return errors::InvalidArgument(op, ": bounding_boxes must be 3-D [batch, num_boxes, 4], ",
                                     "got shape ", boxes.shape().ToString());
    }
    float min_object_covered = min_object_covered_;
    if (ctx.num_inputs() == 3) {
      const Tensor& covered = ctx.input(2);
      if (covered.rank() != 0) {
        return errors::InvalidArgument(op, ": min_object_covered must be a scalar, got shape ",
                                       covered.shape().ToString());
      }
      min_object_covered = static_cast<float>(covered.ElementAsDouble(0));
    }
    if (!(min_object_covered >= 0)) {
      return errors::InvalidArgument(op, ": min_object_covered must be non-negative, got ",
                                     min_object_covered);
    }
    std::vector<Rect> objects;
    const float* b = boxes.data<float>();
    for (int64_t i = 0; i < boxes.num_elements(); i += 4) {
      for (int j = 0; j < 4; ++j) {
        if (!(b[i + j] >= 0 && b[i + j] <= 1)) {
          return errors::InvalidArgument(op, ": all bounding box coordinates must be in ",
                                         "[0.0, 1.0], got ", b[i + j], " in box ", i / 4);
        }
      }
      auto scaled = [](float v, int64_t size) {
        return static_cast<int64_t>(v * static_cast<float>(size));
      };
      objects.push_back({scaled(b[i + 1], width), scaled(b[i], height), scaled(b[i + 3], width),
                         scaled(b[i + 2], height)});
    }
    const Rect image{0, 0, width, height};
    if (objects.empty()) {
      if (!use_image_) {
        return errors::InvalidArgument(
            op,
            ": no bounding boxes provided as input; set use_image_if_no_bounding_boxes=True "
            "to sample crops of the whole image instead");
      }
      objects.push_back(image);
    }
    Rect crop = image;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t i = 0; i < max_attempts_; ++i) {
        const float ratio = sampler_.Float() * (max_ratio_ - min_ratio_) + min_ratio_;
        Rect candidate;
        if (RandomCrop(width, height, min_area_, max_area_, ratio, sampler_, &candidate) &&
            CoversAnObject(candidate, min_object_covered, objects)) {
          crop = candidate;
          break;
        }
      }
    }
    Tensor *begin, *size, *bboxes;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{3}, &begin));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{3}, &size));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{1, 1, 4}, &bboxes));
    const int64_t begins[3] = {crop.min_y, crop.min_x, 0};
    const int64_t sizes[3] = {crop.max_y - crop.min_y, crop.max_x - crop.min_x, -1};
    auto write = [&]<typename T>() {
      for (int i = 0; i < 3; ++i) {
        begin->data<T>()[i] = static_cast<T>(begins[i]);
        size->data<T>()[i] = static_cast<T>(sizes[i]);
      }
      return Status::OK();
    };
    FS_RETURN_IF_ERROR(
        (DispatchDType<uint8_t, int32_t, int64_t>(image_size.dtype(), op.c_str(), write)));
    float* out = bboxes->data<float>();
    out[0] = static_cast<float>(crop.min_y) / static_cast<float>(height);
    out[1] = static_cast<float>(crop.min_x) / static_cast<float>(width);
    out[2] = static_cast<float>(crop.max_y) / static_cast<float>(height);
    out[3] = static_cast<float>(crop.max_x) / static_cast<float>(width);
    return Status::OK();
  }

 private:
  float min_ratio_ = 0.75f, max_ratio_ = 1.33f, min_area_ = 0.05f, max_area_ = 1.0f;
  float min_object_covered_ = 0.1f;
  int64_t max_attempts_ = 100;
  bool use_image_ = false;
  std::mutex mu_;  // one draw sequence shared by concurrent runs
  Sampler sampler_;
};

Status SampleShape(InferenceContext& ctx) {
  PartialShape image_size, boxes;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &image_size));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 3, &boxes));
  if (boxes.dim(2) >= 0 && boxes.dim(2) != 4) {
    return errors::InvalidArgument("bounding_boxes must have 4 coordinates in its last ",
                                   "dimension, got shape ", boxes.ToString());
  }
  ctx.set_output(0, PartialShape({3}));
  ctx.set_output(1, PartialShape({3}));
  ctx.set_output(2, PartialShape({1, 1, 4}));
  return Status::OK();
}

const bool kSampleOpsRegistered = [] {
  for (const bool v2 : {false, true}) {
    OpBuilder builder(v2 ? "SampleDistortedBoundingBoxV2" : "SampleDistortedBoundingBox");
    builder.Input("image_size", "T").Input("bounding_boxes", "float32");
    if (v2) {
      builder.Input("min_object_covered", "float32");
    } else {
      builder.Attr("min_object_covered", 0.1f);
    }
    OpRegistrar registrar(
        builder.Output("begin", "T")
            .Output("size", "T")
            .Output("bboxes", "float32")
            .TypeAttr("T", {DType::kUInt8, DType::kInt32, DType::kInt64})
            .Attr("seed", 0)
            .Attr("seed2", 0)
            .Attr("aspect_ratio_range", AttrValue(std::vector<double>{0.75, 1.33}))
            .Attr("area_range", AttrValue(std::vector<double>{0.05, 1.0}))
            .Attr("max_attempts", 100)
            .Attr("use_image_if_no_bounding_boxes", false)
            .Stateful()
            .Shape(SampleShape)
            .KernelClass<SampleDistortedBoundingBoxKernel>("CPU")
            .NotDifferentiable()
            .Doc("A random crop [begin, size] of an image covering at least min_object_covered "
                 "of one of the boxes (tf.image.sample_distorted_bounding_box)."));
  }
  return true;
}();

// ---------------------------------------------------------------------------------------------
// DrawBoundingBoxes: each box's outline, one pixel wide, in a colour cycling through `colors`
// (V2) or TensorFlow's default table. Corners are scaled by (size - 1) and truncated; lines
// outside the image are skipped and inverted boxes are not drawn.

std::vector<std::vector<float>> DefaultColors(int64_t depth) {
  std::vector<std::vector<float>> colors = {
      {1, 1, 0, 1},     {0, 0, 1, 1},   {1, 0, 0, 1},   {0, 1, 0, 1}, {0.5, 0, 0.5, 1},
      {0.5, 0.5, 0, 1}, {0.5, 0, 0, 1}, {0, 0, 0.5, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}};
  // A grey image gets white boxes.
  if (depth == 1) {
    for (auto& c : colors) c[0] = 1;
  }
  return colors;
}

template <typename T>
void DrawBoxes(const Tensor& boxes, const std::vector<std::vector<float>>& colors, int64_t batch,
               int64_t height, int64_t width, int64_t depth, T* canvas) {
  const float* b = boxes.data<float>();
  const int64_t per_image = boxes.dim(1);
  auto paint = [&](int64_t image, int64_t y, int64_t x, const std::vector<float>& color) {
    T* p = canvas + ((image * height + y) * width + x) * depth;
    for (int64_t c = 0; c < depth; ++c) p[c] = static_cast<T>(color[c]);
  };
  for (int64_t image = 0; image < batch; ++image) {
    for (int64_t i = 0; i < per_image; ++i) {
      const float* box = b + (image * per_image + i) * 4;
      const std::vector<float>& color = colors[i % colors.size()];
      // Truncated toward zero as TensorFlow does; coordinates far outside the image (or NaN)
      // are clamped first so the conversion is defined.
      auto scaled = [](float v, int64_t size) {
        const float x = v * static_cast<float>(size - 1);
        return std::isnan(x) ? -(int64_t{1} << 40)
                             : static_cast<int64_t>(std::clamp(x, -0x1p40f, 0x1p40f));
      };
      const int64_t top = scaled(box[0], height), left = scaled(box[1], width);
      const int64_t bottom = scaled(box[2], height), right = scaled(box[3], width);
      if (top > bottom || left > right) continue;
      if (top >= height || bottom < 0 || left >= width || right < 0) continue;
      const int64_t top_c = std::max<int64_t>(top, 0), bottom_c = std::min(bottom, height - 1);
      const int64_t left_c = std::max<int64_t>(left, 0), right_c = std::min(right, width - 1);
      for (int64_t x = left_c; x <= right_c; ++x) {
        if (top >= 0) paint(image, top, x, color);
        if (bottom < height) paint(image, bottom, x, color);
      }
      for (int64_t y = top_c; y <= bottom_c; ++y) {
        if (left >= 0) paint(image, y, left, color);
        if (right < width) paint(image, y, right, color);
      }
    }
  }
}

Status DrawBoundingBoxesKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& images = ctx.input(0);
  const Tensor& boxes = ctx.input(1);
  if (images.rank() != 4) {
    return errors::InvalidArgument(op, ": images must be 4-D [batch, height, width, depth], ",
                                   "got shape ", images.shape().ToString());
  }
  const int64_t batch = images.dim(0), height = images.dim(1), width = images.dim(2);
  const int64_t depth = images.dim(3);
  if (depth != 1 && depth != 3 && depth != 4) {
    return errors::InvalidArgument(op, ": channel depth must be 1 (grey), 3 (RGB) or 4 (RGBA), ",
                                   "got ", depth);
  }
  if (boxes.rank() != 3 || boxes.dim(0) != batch || boxes.dim(2) != 4) {
    return errors::InvalidArgument(op, ": boxes must be 3-D [batch = ", batch,
                                   ", num_boxes, 4], got shape ", boxes.shape().ToString());
  }
  std::vector<std::vector<float>> colors;
  if (ctx.num_inputs() == 3 && ctx.input(2).num_elements() > 0) {
    const Tensor& table = ctx.input(2);
    if (table.rank() != 2 || table.dim(1) < depth) {
      return errors::InvalidArgument(op, ": colors must be 2-D [num_colors, channels >= ", depth,
                                     "], got shape ", table.shape().ToString());
    }
    const float* c = table.data<float>();
    for (int64_t i = 0; i < table.dim(0); ++i) {
      colors.emplace_back(c + i * table.dim(1), c + (i + 1) * table.dim(1));
    }
  } else {
    colors = DefaultColors(depth);
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, images.shape(), &out));
  return DispatchDType<Half, float>(images.dtype(), op.c_str(), [&]<typename T>() {
    std::copy_n(images.data<T>(), images.num_elements(), out->data<T>());
    DrawBoxes<T>(boxes, colors, batch, height, width, depth, out->data<T>());
    return Status::OK();
  });
}

Status DrawShape(InferenceContext& ctx) {
  PartialShape images;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &images));
  ctx.set_output(0, images);
  return Status::OK();
}

const bool kDrawOpsRegistered = [] {
  for (const bool v2 : {false, true}) {
    OpBuilder builder(v2 ? "DrawBoundingBoxesV2" : "DrawBoundingBoxes");
    builder.Input("images", "T").Input("boxes", "float32");
    if (v2) builder.Input("colors", "float32");
    OpRegistrar registrar(builder.Output("output", "T")
                              .TypeAttr("T", {DType::kFloat32, DType::kFloat16}, DType::kFloat32)
                              .Shape(DrawShape)
                              .Kernel("CPU", DrawBoundingBoxesKernel)
                              .NotDifferentiable()
                              .Doc("The images with each box's outline drawn on them (tf.image."
                                   "draw_bounding_boxes)."));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
