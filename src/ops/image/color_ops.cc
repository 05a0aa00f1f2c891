// Per-pixel colour ops on [..., 3] float32 images: RGBToHSV, HSVToRGB, AdjustHue and
// AdjustSaturation, rows of one table read by one registration loop. Each row is a functor from
// one pixel (and the op's scalar, when it has one) to one pixel, with TensorFlow's formulas: hue
// and saturation in [0, 1], hue 0 for greys.
#include <algorithm>
#include <cmath>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

struct Pixel {
  float a, b, c;
};

Pixel RgbToHsv(Pixel rgb) {
  const float r = rgb.a, g = rgb.b, b = rgb.c;
  const float value = std::max({r, g, b});
  const float range = value - std::min({r, g, b});
  const float saturation = value > 0 ? range / value : 0.0f;
  float hue = 0.0f;
  if (range > 0) {
    const float norm = 1.0f / (6.0f * range);
    if (r == value) {
      hue = norm * (g - b);
    } else if (g == value) {
      hue = norm * (b - r) + 2.0f / 6.0f;
    } else {
      hue = norm * (r - g) + 4.0f / 6.0f;
    }
    if (hue < 0) hue += 1.0f;
  }
  return {hue, saturation, value};
}

Pixel HsvToRgb(Pixel hsv) {
  const float h = hsv.a, s = hsv.b, v = hsv.c;
  const float c = s * v;
  const float m = v - c;
  const float dh = h * 6.0f;
  const float x = c * (1.0f - std::fabs(std::fmod(dh, 2.0f) - 1.0f));
  float r = 0, g = 0, b = 0;
  switch (static_cast<int>(std::floor(dh))) {
    case 0:
      r = c, g = x;
      break;
    case 1:
      r = x, g = c;
      break;
    case 2:
      g = c, b = x;
      break;
    case 3:
      g = x, b = c;
      break;
    case 4:
      r = x, b = c;
      break;
    case 5:
      r = c, b = x;
      break;
    default:
      break;
  }
  return {r + m, g + m, b + m};
}

Pixel AdjustHue(Pixel rgb, float delta) {
  Pixel hsv = RgbToHsv(rgb);
  hsv.a = std::fmod(hsv.a + delta, 1.0f);
  if (hsv.a < 0) hsv.a += 1.0f;
  return HsvToRgb(hsv);
}

Pixel AdjustSaturation(Pixel rgb, float scale) {
  Pixel hsv = RgbToHsv(rgb);
  hsv.b = std::clamp(hsv.b * scale, 0.0f, 1.0f);
  return HsvToRgb(hsv);
}

using PixelFn = Pixel (*)(Pixel, float);

template <Pixel (*F)(Pixel)>
Pixel IgnoringScalar(Pixel p, float) {
  return F(p);
}

Status ColorKernel(KernelContext& ctx, PixelFn fn, bool has_scalar) {
  const Tensor& images = ctx.input(0);
  const std::string& op = ctx.node().op_def().name;
  if (images.rank() < 1 || images.dim(images.rank() - 1) != 3) {
    return errors::InvalidArgument(op,
                                   ": the last dimension of images must be 3 (RGB or HSV), "
                                   "got shape ",
                                   images.shape().ToString());
  }
  float scalar = 0;
  if (has_scalar) {
    const Tensor& t = ctx.input(1);
    if (t.rank() != 0) {
      return errors::InvalidArgument(op, ": ", ctx.node().op_def().inputs[1].name,
                                     " must be a scalar, got shape ", t.shape().ToString());
    }
    scalar = *t.data<float>();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, images.shape(), &out));
  const float* in = images.data<float>();
  float* dst = out->data<float>();
  for (int64_t i = 0; i < images.num_elements(); i += 3) {
    const Pixel p = fn({in[i], in[i + 1], in[i + 2]}, scalar);
    dst[i] = p.a, dst[i + 1] = p.b, dst[i + 2] = p.c;
  }
  return Status::OK();
}

struct ColorRow {
  const char* name;
  PixelFn fn;
  const char* scalar;  // the scalar input's name, or null
  const char* doc;
};

const ColorRow kColorOps[] = {
    {"RGBToHSV", IgnoringScalar<RgbToHsv>, nullptr,
     "RGB pixels in [0, 1] as hue, saturation and value in [0, 1] (tf.image.rgb_to_hsv)."},
    {"HSVToRGB", IgnoringScalar<HsvToRgb>, nullptr,
     "Hue, saturation and value pixels as RGB (tf.image.hsv_to_rgb)."},
    {"AdjustHue", AdjustHue, "delta",
     "RGB pixels with delta added to their hue, modulo 1 (tf.image.adjust_hue)."},
    {"AdjustSaturation", AdjustSaturation, "scale",
     "RGB pixels with their saturation multiplied by scale, clipped to [0, 1] "
     "(tf.image.adjust_saturation)."},
};

const bool kColorOpsRegistered = [] {
  for (const ColorRow& row : kColorOps) {
    OpBuilder builder(row.name);
    builder.Input("images", "T");
    if (row.scalar) builder.Input(row.scalar, "float32");
    const PixelFn fn = row.fn;
    const bool has_scalar = row.scalar != nullptr;
    OpRegistrar registrar(builder.Output("output", "T")
                              .TypeAttr("T", {DType::kFloat32}, DType::kFloat32)
                              .Shape(shape_fns::Unchanged)
                              .Kernel("CPU",
                                      [fn, has_scalar](KernelContext& ctx) {
                                        return ColorKernel(ctx, fn, has_scalar);
                                      })
                              .NotDifferentiable()
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
