// Per-pixel colour ops on [..., 3] float32 images: RGBToHSV, HSVToRGB, AdjustHue and
// AdjustSaturation, rows of one table read by one registration loop. Each row is a functor from
// one pixel (and the op's scalar, when it has one) to one pixel, with TensorFlow's formulas: hue
// and saturation in [0, 1], hue 0 for greys. RGBToHSV has TensorFlow's gradient (the others, as
// in TensorFlow, none).
#include <algorithm>
#include <cmath>

#include "flowstone/gradients.h"
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

// d(h, s, v)/d(r, g, b), piecewise by which channel is the largest (r, then g, on ties, as the
// kernel picks) and the smallest: v = max; s = 1 - min / max (0 at v = 0); with range =
// max - min > 0, 6h = k + (p - q) / range for the channels p, q after the largest (g - b, b - r
// or r - g). Built from graph ops, so it runs on any device.
Status RgbToHsvGrad(GradientContext& ctx) {
  AttrMap unpack;
  unpack.Set("num", int64_t{3});
  unpack.Set("axis", int64_t{-1});
  Node* rgb = ctx.AddNode("Unpack", {ctx.input(0)}, unpack);
  Node* grads = ctx.AddNode("Unpack", {ctx.output_grad(0)}, unpack);
  Node* hsv = ctx.AddNode("Unpack", {ctx.output(0)}, unpack);
  if (rgb == nullptr || grads == nullptr || hsv == nullptr) return Status::OK();
  const Endpoint x[3] = {{rgb, 0}, {rgb, 1}, {rgb, 2}};
  const Endpoint value{hsv, 2};
  auto op = [&](const char* type, Endpoint a, Endpoint b) { return ctx.Op(type, {a, b}); };
  auto as_float = [&](Endpoint mask) {
    AttrMap cast;
    cast.Set("DstT", DType::kFloat32);
    return ctx.Op("Cast", {mask}, cast);
  };
  auto logical_not = [&](Endpoint a) { return ctx.Op("LogicalNot", {a}); };
  auto both = [&](Endpoint a, Endpoint b) { return op("LogicalAnd", a, b); };
  // Largest: r on ties, then g; smallest: r on ties, then g.
  const Endpoint r_max = both(op("GreaterEqual", x[0], x[1]), op("GreaterEqual", x[0], x[2]));
  const Endpoint g_max = both(logical_not(r_max), op("GreaterEqual", x[1], x[2]));
  const Endpoint b_max = both(logical_not(r_max), logical_not(g_max));
  const Endpoint r_min = both(op("LessEqual", x[0], x[1]), op("LessEqual", x[0], x[2]));
  const Endpoint g_min = both(logical_not(r_min), op("LessEqual", x[1], x[2]));
  const Endpoint b_min = both(logical_not(r_min), logical_not(g_min));
  const Endpoint is_max[3] = {as_float(r_max), as_float(g_max), as_float(b_max)};
  const Endpoint is_min[3] = {as_float(r_min), as_float(g_min), as_float(b_min)};
  auto weighted = [&](const Endpoint w[3], const Endpoint v[3]) {
    return ctx.Op("AddN", {op("Mul", w[0], v[0]), op("Mul", w[1], v[1]), op("Mul", w[2], v[2])});
  };
  const Endpoint minimum = weighted(is_min, x);
  const Endpoint range = op("Sub", value, minimum);
  const Endpoint zero = ctx.ScalarLike(value, 0), one = ctx.ScalarLike(value, 1);
  // 1 / t where t > 0, else 0 (the op's outputs are constant there).
  auto inverse = [&](Endpoint t) {
    const Endpoint positive = op("Greater", t, zero);
    const Endpoint safe = ctx.Op("SelectV2", {positive, t, one});
    return ctx.Op("SelectV2", {positive, op("RealDiv", one, safe), zero});
  };
  const Endpoint inv_value = inverse(value), inv_range = inverse(range);
  // ds/dmax = min / max^2, ds/dmin = -1 / max.
  const Endpoint ds_dmax = op("Mul", minimum, op("Mul", inv_value, inv_value));
  // 6 dh/dx = (dp/dx - dq/dx) / range - (p - q) / range^2 * (dmax/dx - dmin/dx).
  const Endpoint differences[3] = {op("Sub", x[1], x[2]), op("Sub", x[2], x[0]),
                                   op("Sub", x[0], x[1])};
  const Endpoint slope = op("Mul", weighted(is_max, differences), op("Mul", inv_range, inv_range));
  const Endpoint sixth = ctx.ScalarLike(value, 1.0 / 6.0);
  std::vector<Endpoint> input_grads;
  for (int i = 0; i < 3; ++i) {
    // dp/dx_i - dq/dx_i: +1 where x_i is the p of the largest channel, -1 where it is the q.
    const Endpoint pq = op("Sub", is_max[(i + 2) % 3], is_max[(i + 1) % 3]);
    const Endpoint dh =
        op("Mul", sixth,
           op("Sub", op("Mul", pq, inv_range), op("Mul", slope, op("Sub", is_max[i], is_min[i]))));
    const Endpoint ds = op("Sub", op("Mul", is_max[i], ds_dmax), op("Mul", is_min[i], inv_value));
    input_grads.push_back(
        ctx.Op("AddN", {op("Mul", Endpoint{grads, 0}, dh), op("Mul", Endpoint{grads, 1}, ds),
                        op("Mul", Endpoint{grads, 2}, is_max[i])}));
  }
  AttrMap pack;
  pack.Set("axis", int64_t{-1});
  ctx.SetInputGrad(0, ctx.Op("Pack", input_grads, pack));
  return Status::OK();
}

struct ColorRow {
  const char* name;
  PixelFn fn;
  const char* scalar;  // the scalar input's name, or null
  GradFn grad;         // null: not differentiable
  const char* doc;
};

const ColorRow kColorOps[] = {
    {"RGBToHSV", IgnoringScalar<RgbToHsv>, nullptr, RgbToHsvGrad,
     "RGB pixels in [0, 1] as hue, saturation and value in [0, 1] (tf.image.rgb_to_hsv)."},
    {"HSVToRGB", IgnoringScalar<HsvToRgb>, nullptr, nullptr,
     "Hue, saturation and value pixels as RGB (tf.image.hsv_to_rgb)."},
    {"AdjustHue", AdjustHue, "delta", nullptr,
     "RGB pixels with delta added to their hue, modulo 1 (tf.image.adjust_hue)."},
    {"AdjustSaturation", AdjustSaturation, "scale", nullptr,
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
    builder.Output("output", "T")
        .TypeAttr("T", {DType::kFloat32}, DType::kFloat32)
        .Shape(shape_fns::Unchanged)
        .Kernel("CPU",
                [fn, has_scalar](KernelContext& ctx) { return ColorKernel(ctx, fn, has_scalar); })
        .Doc(row.doc);
    if (row.grad != nullptr) {
      builder.Gradient(row.grad);
    } else {
      builder.NotDifferentiable();
    }
    OpRegistrar registrar(builder);
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
