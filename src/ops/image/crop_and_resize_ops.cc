// CropAndResize (tf.image.crop_and_resize) and its two gradient ops, CropAndResizeGradImage and
// CropAndResizeGradBoxes, as TensorFlow defines them. Box b = [y1, x1, y2, x2] in normalized
// coordinates of image box_ind[b]; crop row y samples the image at
//   y1 * (height - 1) + y * (y2 - y1) * (height - 1) / (crop_height - 1)
// (the box's centre when crop_height is 1), and likewise for columns. Samples outside the image
// get extrapolation_value; inside they are interpolated bilinearly or taken from the nearest
// pixel. Coordinates are float, as TensorFlow computes them, so samples land where TF's do.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// One box's sampling geometry along one axis.
struct Axis {
  float start, scale;  // position of sample 0, and the step between samples
  int64_t crop, size;  // samples, and the image's extent

  Axis(float lo, float hi, int64_t crop_size, int64_t image_size)
      : start(crop_size > 1 ? lo * static_cast<float>(image_size - 1)
                            : 0.5f * (lo + hi) * static_cast<float>(image_size - 1)),
        scale(crop_size > 1 ? (hi - lo) * static_cast<float>(image_size - 1) /
                                  static_cast<float>(crop_size - 1)
                            : 0.0f),
        crop(crop_size),
        size(image_size) {}
  float At(int64_t i) const { return crop > 1 ? start + static_cast<float>(i) * scale : start; }
  bool Inside(float position) const {
    return position >= 0 && position <= static_cast<float>(size - 1);
  }
};

struct Geometry {
  int64_t batch, height, width, depth, boxes, crop_height, crop_width;
  bool bilinear;
};

Status ReadMethod(const std::string& op, const AttrMap& attrs, bool* bilinear) {
  const std::string method = attrs.GetOr<std::string>("method", "bilinear");
  if (method != "bilinear" && method != "nearest") {
    return errors::InvalidArgument(op, ": method must be 'bilinear' or 'nearest', got '", method,
                                   "'");
  }
  *bilinear = method == "bilinear";
  return Status::OK();
}

// Checks boxes [num_boxes, 4] and box_ind [num_boxes] (each index in [0, batch)).
Status CheckBoxes(const std::string& op, const Tensor& boxes, const Tensor& box_ind,
                  int64_t batch) {
  if (boxes.rank() != 2 || boxes.dim(1) != 4) {
    return errors::InvalidArgument(op, ": boxes must be 2-D [num_boxes, 4], got shape ",
                                   boxes.shape().ToString());
  }
  if (box_ind.rank() != 1 || box_ind.dim(0) != boxes.dim(0)) {
    return errors::InvalidArgument(op, ": box_ind must be 1-D [num_boxes = ", boxes.dim(0),
                                   "], got shape ", box_ind.shape().ToString());
  }
  const int32_t* index = box_ind.data<int32_t>();
  for (int64_t b = 0; b < box_ind.dim(0); ++b) {
    if (index[b] < 0 || index[b] >= batch) {
      return errors::InvalidArgument(op, ": box_ind[", b, "] = ", index[b],
                                     " is not in [0, batch_size = ", batch, ")");
    }
  }
  return Status::OK();
}

Status CheckImage(const std::string& op, const TensorShape& image) {
  if (image.rank() != 4) {
    return errors::InvalidArgument(op, ": image must be 4-D [batch, height, width, depth], got ",
                                   image.ToString());
  }
  if (image.dim(1) <= 0 || image.dim(2) <= 0) {
    return errors::InvalidArgument(op, ": image dimensions must be positive, got ",
                                   image.ToString());
  }
  return Status::OK();
}

Status ReadCropSize(const std::string& op, const Tensor& size, int64_t* height, int64_t* width) {
  if (size.rank() != 1 || size.num_elements() != 2) {
    return errors::InvalidArgument(op, ": crop_size must be 1-D with 2 elements, got shape ",
                                   size.shape().ToString());
  }
  *height = size.ElementAsInt64(0);
  *width = size.ElementAsInt64(1);
  if (*height <= 0 || *width <= 0) {
    return errors::InvalidArgument(op, ": crop dimensions must be positive, got ", *height, " x ",
                                   *width);
  }
  return Status::OK();
}

// Calls visit(box, crop_row, image_index, sample_index, in_y, in_x) for every crop sample inside
// its image (in_y, in_x: its position there), and outside(sample_index) for the others; a
// sample's index is (box * crop_height + row) * crop_width + column.
template <typename Visit, typename Outside>
void ForEachSample(const Geometry& g, const float* boxes, const int32_t* box_ind, Visit&& visit,
                   Outside&& outside) {
  for (int64_t b = 0; b < g.boxes; ++b) {
    const float* box = boxes + 4 * b;
    const Axis ys(box[0], box[2], g.crop_height, g.height);
    const Axis xs(box[1], box[3], g.crop_width, g.width);
    const int64_t image = box_ind[b];
    for (int64_t y = 0; y < g.crop_height; ++y) {
      const float in_y = ys.At(y);
      for (int64_t x = 0; x < g.crop_width; ++x) {
        const int64_t sample = (b * g.crop_height + y) * g.crop_width + x;
        const float in_x = xs.At(x);
        if (!ys.Inside(in_y) || !xs.Inside(in_x)) {
          outside(sample);
          continue;
        }
        visit(b, y, image, sample, in_y, in_x);
      }
    }
  }
}

// Pixel offsets of an image position's neighbours and their weights.
struct Corners {
  int64_t top, bottom, left, right;
  float y_lerp, x_lerp;
};

Corners Bilinear(float in_y, float in_x) {
  const float top = std::floor(in_y), left = std::floor(in_x);
  return {static_cast<int64_t>(top),
          static_cast<int64_t>(std::ceil(in_y)),
          static_cast<int64_t>(left),
          static_cast<int64_t>(std::ceil(in_x)),
          in_y - top,
          in_x - left};
}

template <typename T>
Status CropAndResizeTyped(KernelContext& ctx, const Geometry& g) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.boxes, g.crop_height, g.crop_width, g.depth}, &out));
  if (out->num_elements() == 0) return Status::OK();
  const float extrapolation =
      static_cast<float>(ctx.attrs().GetOr<double>("extrapolation_value", 0));
  const T* image = ctx.input(0).data<T>();
  float* dst = out->data<float>();
  const int64_t row = g.width * g.depth;
  auto pixel = [&](int64_t index, int64_t y, int64_t x) {
    return image + ((index * g.height + y) * g.width + x) * g.depth;
  };
  ForEachSample(
      g, ctx.input(1).data<float>(), ctx.input(2).data<int32_t>(),
      [&](int64_t, int64_t, int64_t index, int64_t sample, float in_y, float in_x) {
        float* o = dst + sample * g.depth;
        if (!g.bilinear) {
          const T* p = pixel(index, static_cast<int64_t>(std::round(in_y)),
                             static_cast<int64_t>(std::round(in_x)));
          for (int64_t d = 0; d < g.depth; ++d) o[d] = static_cast<float>(p[d]);
          return;
        }
        const Corners c = Bilinear(in_y, in_x);
        const T* tl = pixel(index, c.top, c.left);
        const T* tr = tl + (c.right - c.left) * g.depth;
        const T* bl = tl + (c.bottom - c.top) * row;
        const T* br = bl + (c.right - c.left) * g.depth;
        for (int64_t d = 0; d < g.depth; ++d) {
          const float top = static_cast<float>(tl[d]) +
                            (static_cast<float>(tr[d]) - static_cast<float>(tl[d])) * c.x_lerp;
          const float bottom = static_cast<float>(bl[d]) +
                               (static_cast<float>(br[d]) - static_cast<float>(bl[d])) * c.x_lerp;
          o[d] = top + (bottom - top) * c.y_lerp;
        }
      },
      [&](int64_t sample) { std::fill_n(dst + sample * g.depth, g.depth, extrapolation); });
  return Status::OK();
}

Status CropAndResizeKernel(KernelContext& ctx) {
  const std::string op = "CropAndResize";
  const Tensor& image = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckImage(op, image.shape()));
  Geometry g{image.dim(0), image.dim(1), image.dim(2), image.dim(3), 0, 0, 0, true};
  FS_RETURN_IF_ERROR(CheckBoxes(op, ctx.input(1), ctx.input(2), g.batch));
  g.boxes = ctx.input(1).dim(0);
  FS_RETURN_IF_ERROR(ReadCropSize(op, ctx.input(3), &g.crop_height, &g.crop_width));
  FS_RETURN_IF_ERROR(ReadMethod(op, ctx.attrs(), &g.bilinear));
  return DispatchDType<uint8_t, int32_t, int64_t, Half, float, double>(
      image.dtype(), op.c_str(), [&]<typename T>() { return CropAndResizeTyped<T>(ctx, g); });
}

// d(crops)/d(image): each crop sample's gradient spread over the pixels it was read from.
template <typename T>
Status GradImageTyped(KernelContext& ctx, const Geometry& g) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{g.batch, g.height, g.width, g.depth}, &out));
  if (out->num_elements() == 0) return Status::OK();
  // Accumulated in float, as TensorFlow does, then converted.
  Tensor temp;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, out->shape(), &temp));
  float* sums = temp.data<float>();
  std::fill_n(sums, temp.num_elements(), 0.0f);
  const float* grads = ctx.input(0).data<float>();
  auto at = [&](int64_t index, int64_t y, int64_t x) {
    return sums + ((index * g.height + y) * g.width + x) * g.depth;
  };
  ForEachSample(
      g, ctx.input(1).data<float>(), ctx.input(2).data<int32_t>(),
      [&](int64_t, int64_t, int64_t index, int64_t sample, float in_y, float in_x) {
        const float* grad = grads + sample * g.depth;
        if (!g.bilinear) {
          float* p = at(index, static_cast<int64_t>(std::round(in_y)),
                        static_cast<int64_t>(std::round(in_x)));
          for (int64_t d = 0; d < g.depth; ++d) p[d] += grad[d];
          return;
        }
        const Corners c = Bilinear(in_y, in_x);
        float* tl = at(index, c.top, c.left);
        float* tr = at(index, c.top, c.right);
        float* bl = at(index, c.bottom, c.left);
        float* br = at(index, c.bottom, c.right);
        for (int64_t d = 0; d < g.depth; ++d) {
          const float dtop = (1 - c.y_lerp) * grad[d];
          const float dbottom = c.y_lerp * grad[d];
          tl[d] += (1 - c.x_lerp) * dtop;
          tr[d] += c.x_lerp * dtop;
          bl[d] += (1 - c.x_lerp) * dbottom;
          br[d] += c.x_lerp * dbottom;
        }
      },
      [](int64_t) {});
  T* dst = out->data<T>();
  for (int64_t i = 0; i < temp.num_elements(); ++i) dst[i] = static_cast<T>(sums[i]);
  return Status::OK();
}

Status CheckGrads(const std::string& op, const Tensor& grads, int64_t boxes) {
  if (grads.rank() != 4) {
    return errors::InvalidArgument(op, ": grads must be 4-D [num_boxes, crop_height, ",
                                   "crop_width, depth], got shape ", grads.shape().ToString());
  }
  if (grads.dim(0) != boxes) {
    return errors::InvalidArgument(op, ": grads has ", grads.dim(0), " boxes, boxes has ", boxes);
  }
  if (grads.dim(1) <= 0 || grads.dim(2) <= 0) {
    return errors::InvalidArgument(op, ": crop dimensions must be positive, got shape ",
                                   grads.shape().ToString());
  }
  return Status::OK();
}

Status GradImageKernel(KernelContext& ctx) {
  const std::string op = "CropAndResizeGradImage";
  const Tensor& grads = ctx.input(0);
  const Tensor& image_size = ctx.input(3);
  if (image_size.rank() != 1 || image_size.num_elements() != 4) {
    return errors::InvalidArgument(op, ": image_size must be 1-D with 4 elements, got shape ",
                                   image_size.shape().ToString());
  }
  for (int i = 0; i < 4; ++i) {
    if (image_size.ElementAsInt64(i) < 0) {
      return errors::InvalidArgument(op, ": image_size must be non-negative, got dimension ", i,
                                     " = ", image_size.ElementAsInt64(i));
    }
  }
  TensorShape image{image_size.ElementAsInt64(0), image_size.ElementAsInt64(1),
                    image_size.ElementAsInt64(2), image_size.ElementAsInt64(3)};
  FS_RETURN_IF_ERROR(CheckImage(op, image));
  FS_RETURN_IF_ERROR(CheckBoxes(op, ctx.input(1), ctx.input(2), image.dim(0)));
  FS_RETURN_IF_ERROR(CheckGrads(op, grads, ctx.input(1).dim(0)));
  if (grads.dim(3) != image.dim(3)) {
    return errors::InvalidArgument(op, ": image_size depth ", image.dim(3),
                                   " differs from the grads' depth ", grads.dim(3));
  }
  Geometry g{image.dim(0), image.dim(1), image.dim(2), image.dim(3),
             grads.dim(0), grads.dim(1), grads.dim(2), true};
  FS_RETURN_IF_ERROR(ReadMethod(op, ctx.attrs(), &g.bilinear));
  return DispatchDType<Half, float, double>(
      ctx.output_type(0), op.c_str(), [&]<typename T>() { return GradImageTyped<T>(ctx, g); });
}

// d(crops)/d(boxes): how each bilinear sample moves with the box's corners.
template <typename T>
Status GradBoxesTyped(KernelContext& ctx, const Geometry& g) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{g.boxes, 4}, &out));
  float* dst = out->data<float>();
  std::fill_n(dst, g.boxes * 4, 0.0f);
  if (ctx.input(0).num_elements() == 0) return Status::OK();
  const float* grads = ctx.input(0).data<float>();
  const T* image = ctx.input(1).data<T>();
  const float height_ratio =
      g.crop_height > 1 ? static_cast<float>(g.height - 1) / static_cast<float>(g.crop_height - 1)
                        : 0.0f;
  const float width_ratio =
      g.crop_width > 1 ? static_cast<float>(g.width - 1) / static_cast<float>(g.crop_width - 1)
                       : 0.0f;
  auto value = [&](int64_t index, int64_t y, int64_t x, int64_t d) {
    return static_cast<float>(image[((index * g.height + y) * g.width + x) * g.depth + d]);
  };
  ForEachSample(
      g, ctx.input(2).data<float>(), ctx.input(3).data<int32_t>(),
      [&](int64_t b, int64_t y, int64_t index, int64_t sample, float in_y, float in_x) {
        const Corners c = Bilinear(in_y, in_x);
        const int64_t x = sample % g.crop_width;
        float* box = dst + 4 * b;
        for (int64_t d = 0; d < g.depth; ++d) {
          const float tl = value(index, c.top, c.left, d), tr = value(index, c.top, c.right, d);
          const float bl = value(index, c.bottom, c.left, d);
          const float br = value(index, c.bottom, c.right, d);
          const float grad = grads[sample * g.depth + d];
          const float dy = grad * ((1 - c.x_lerp) * (bl - tl) + c.x_lerp * (br - tr));
          const float dx = grad * ((1 - c.y_lerp) * (tr - tl) + c.y_lerp * (br - bl));
          if (g.crop_height > 1) {
            box[0] +=
                dy * (static_cast<float>(g.height - 1) - static_cast<float>(y) * height_ratio);
            box[2] += dy * (static_cast<float>(y) * height_ratio);
          } else {
            box[0] += dy * 0.5f * static_cast<float>(g.height - 1);
            box[2] += dy * 0.5f * static_cast<float>(g.height - 1);
          }
          if (g.crop_width > 1) {
            box[1] += dx * (static_cast<float>(g.width - 1) - static_cast<float>(x) * width_ratio);
            box[3] += dx * (static_cast<float>(x) * width_ratio);
          } else {
            box[1] += dx * 0.5f * static_cast<float>(g.width - 1);
            box[3] += dx * 0.5f * static_cast<float>(g.width - 1);
          }
        }
      },
      [](int64_t) {});
  return Status::OK();
}

Status GradBoxesKernel(KernelContext& ctx) {
  const std::string op = "CropAndResizeGradBoxes";
  const Tensor& grads = ctx.input(0);
  const Tensor& image = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckImage(op, image.shape()));
  FS_RETURN_IF_ERROR(CheckBoxes(op, ctx.input(2), ctx.input(3), image.dim(0)));
  FS_RETURN_IF_ERROR(CheckGrads(op, grads, ctx.input(2).dim(0)));
  if (grads.dim(3) != image.dim(3)) {
    return errors::InvalidArgument(op, ": image depth ", image.dim(3),
                                   " differs from the grads' depth ", grads.dim(3));
  }
  const std::string method = ctx.attrs().GetOr<std::string>("method", "bilinear");
  if (method != "bilinear") {
    return errors::InvalidArgument(op, ": method must be 'bilinear', got '", method, "'");
  }
  const Geometry g{image.dim(0), image.dim(1), image.dim(2), image.dim(3),
                   grads.dim(0), grads.dim(1), grads.dim(2), true};
  return DispatchDType<uint8_t, int32_t, int64_t, Half, float, double>(
      image.dtype(), op.c_str(), [&]<typename T>() { return GradBoxesTyped<T>(ctx, g); });
}

Status CropAndResizeShape(InferenceContext& ctx) {
  PartialShape image, boxes, size;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &image));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &boxes));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(3, &size));
  const bool known = size.known_rank() && size.rank() == 2;
  ctx.set_output(0,
                 PartialShape({boxes.known_rank() ? boxes.dim(0) : -1, known ? size.dim(0) : -1,
                               known ? size.dim(1) : -1, image.known_rank() ? image.dim(3) : -1}));
  return Status::OK();
}

Status GradImageShape(InferenceContext& ctx) {
  PartialShape image;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(3, &image));
  ctx.set_output(0, image.known_rank() ? image : PartialShape::UnknownOfRank(4));
  return Status::OK();
}

Status GradBoxesShape(InferenceContext& ctx) {
  PartialShape boxes;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 2, &boxes));
  ctx.set_output(0, boxes);
  return Status::OK();
}

// TensorFlow's gradient: the image's for float images, the boxes' always (bilinear box
// gradients, whatever the method), none for box_ind and crop_size.
Status CropAndResizeGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const DType image_type = ctx.input_type(0);
  if (image_type == DType::kFloat32 || image_type == DType::kFloat64 ||
      image_type == DType::kFloat16) {
    AttrMap attrs;
    attrs.Set("T", image_type);
    attrs.Set("method", ctx.attrs().GetOr<std::string>("method", "bilinear"));
    ctx.SetInputGrad(0, ctx.Op("CropAndResizeGradImage",
                               {grad, ctx.input(1), ctx.input(2), ctx.Shape(ctx.input(0))}, attrs));
  }
  ctx.SetInputGrad(
      1, ctx.Op("CropAndResizeGradBoxes", {grad, ctx.input(0), ctx.input(1), ctx.input(2)}));
  return Status::OK();
}

const std::vector<DType> kImageTypes = {DType::kUInt8,   DType::kInt32,   DType::kInt64,
                                        DType::kFloat16, DType::kFloat32, DType::kFloat64};

FS_REGISTER_OP(OpBuilder("CropAndResize")
                   .Input("image", "T")
                   .Input("boxes", "float32")
                   .Input("box_ind", "int32")
                   .Input("crop_size", "int32")
                   .Output("crops", "float32")
                   .TypeAttr("T", kImageTypes)
                   .Attr("method", "bilinear")
                   .Attr("extrapolation_value", 0.0f)
                   .Shape(CropAndResizeShape)
                   .Kernel("CPU", CropAndResizeKernel)
                   .Gradient(CropAndResizeGrad)
                   .Doc("Crops of boxes of the images, each resized to crop_size by bilinear or "
                        "nearest-neighbour sampling (tf.image.crop_and_resize)."));

FS_REGISTER_OP(OpBuilder("CropAndResizeGradImage")
                   .Input("grads", "float32")
                   .Input("boxes", "float32")
                   .Input("box_ind", "int32")
                   .Input("image_size", "int32")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat16, DType::kFloat64})
                   .Attr("method", "bilinear")
                   .Shape(GradImageShape)
                   .Kernel("CPU", GradImageKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of CropAndResize with respect to its image."));

FS_REGISTER_OP(OpBuilder("CropAndResizeGradBoxes")
                   .Input("grads", "float32")
                   .Input("image", "T")
                   .Input("boxes", "float32")
                   .Input("box_ind", "int32")
                   .Output("output", "float32")
                   .TypeAttr("T", kImageTypes)
                   .Attr("method", "bilinear")
                   .Shape(GradBoxesShape)
                   .Kernel("CPU", GradBoxesKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of CropAndResize (bilinear) with respect to its boxes."));

}  // namespace
}  // namespace flowstone
