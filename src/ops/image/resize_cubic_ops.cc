// ResizeBicubic (with its gradient op ResizeBicubicGrad) and ResizeArea, TF1's kernels.
//
// Bicubic: Keys' cubic convolution over the 4x4 source pixels around each sample, its weights
// read from a table of 1025 offsets as TensorFlow does (a = -0.75 with legacy sampling; with
// half_pixel_centers a = -0.5 and weights of samples outside the image dropped and the rest
// renormalized). Area: each output pixel the mean of the source area it covers, partly covered
// pixels weighted by the fraction covered.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/image/resize_util.h"

namespace flowstone {
namespace {

constexpr int64_t kTableSize = 1024;

std::vector<float> CubicTable(double a) {
  std::vector<float> table((kTableSize + 1) * 2);
  for (int64_t i = 0; i <= kTableSize; ++i) {
    float x = static_cast<float>(static_cast<double>(i) / kTableSize);
    table[i * 2] = ((a + 2) * x - (a + 3)) * x * x + 1;
    x += 1.0f;
    table[i * 2 + 1] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  }
  return table;
}

const std::vector<float>& Table(bool keys) {
  static const std::vector<float> keys_table = CubicTable(-0.5);
  static const std::vector<float> legacy_table = CubicTable(-0.75);
  return keys ? keys_table : legacy_table;
}

// The four source indices of one output coordinate and their weights.
struct Taps {
  std::array<int64_t, 4> index;
  std::array<float, 4> weight;
};

std::vector<Taps> CubicAxis(int64_t out, int64_t in, float scale, bool half_pixel) {
  const std::vector<float>& table = Table(half_pixel);
  std::vector<Taps> axis(out);
  for (int64_t i = 0; i < out; ++i) {
    const float source =
        half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    const auto base = static_cast<int64_t>(std::floor(source));
    const int64_t offset = std::lrint((source - static_cast<float>(base)) * kTableSize);
    const float w[4] = {table[offset * 2 + 1], table[offset * 2], table[(kTableSize - offset) * 2],
                        table[(kTableSize - offset) * 2 + 1]};
    Taps& t = axis[i];
    float sum = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t wanted = base - 1 + k;
      t.index[k] = std::clamp<int64_t>(wanted, 0, in - 1);
      t.weight[k] = !half_pixel || t.index[k] == wanted ? w[k] : 0.0f;
      sum += t.weight[k];
    }
    if (half_pixel && std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
      for (float& weight : t.weight) weight *= 1.0f / sum;
    }
  }
  return axis;
}

template <typename T>
Status BicubicTyped(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.out_height, g.out_width, g.channels}, &out));
  const auto ys = CubicAxis(g.out_height, g.in_height, g.height_scale, half_pixel);
  const auto xs = CubicAxis(g.out_width, g.in_width, g.width_scale, half_pixel);
  const T* in = ctx.input(0).data<T>();
  float* dst = out->data<float>();
  const int64_t row = g.in_width * g.channels;
  ctx.ParallelFor(
      g.batch * g.out_height, g.out_width * g.channels * 40, [&](int64_t begin, int64_t end) {
        for (int64_t by = begin; by < end; ++by) {
          const int64_t b = by / g.out_height;
          const Taps& y = ys[by % g.out_height];
          const T* image = in + b * g.in_height * row;
          float* o = dst + by * g.out_width * g.channels;
          for (int64_t x = 0; x < g.out_width; ++x) {
            const Taps& xt = xs[x];
            for (int64_t c = 0; c < g.channels; ++c) {
              // Down each of the four columns first, then across, as TF sums.
              float value = 0;
              for (int i = 0; i < 4; ++i) {
                float column = 0;
                for (int j = 0; j < 4; ++j) {
                  column +=
                      static_cast<float>(image[y.index[j] * row + xt.index[i] * g.channels + c]) *
                      y.weight[j];
                }
                value += column * xt.weight[i];
              }
              o[x * g.channels + c] = value;
            }
          }
        }
      });
  return Status::OK();
}

Status ResizeBicubicKernel(KernelContext& ctx) {
  ResizeGeometry g;
  bool half_pixel = false;
  FS_RETURN_IF_ERROR(ReadResizeGeometry(ctx, &g, &half_pixel));
  return DispatchDType<uint8_t, int32_t, int64_t, Half, float, double>(
      ctx.input(0).dtype(), "ResizeBicubic",
      [&]<typename T>() { return BicubicTyped<T>(ctx, g, half_pixel); });
}

template <typename T>
Status BicubicGradTyped(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.in_height, g.in_width, g.channels}, &out));
  if (ctx.input(0).num_elements() == 0) {
    std::fill_n(out->data<T>(), out->num_elements(), T(0));
    return Status::OK();
  }
  const auto ys = CubicAxis(g.out_height, g.in_height, g.height_scale, half_pixel);
  const auto xs = CubicAxis(g.out_width, g.in_width, g.width_scale, half_pixel);
  const float* grads = ctx.input(0).data<float>();
  const int64_t row = g.in_width * g.channels, image = g.in_height * row;
  std::vector<double> sums(static_cast<size_t>(image));
  for (int64_t b = 0; b < g.batch; ++b) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t y = 0; y < g.out_height; ++y) {
      for (int64_t x = 0; x < g.out_width; ++x) {
        const float* grad = grads + ((b * g.out_height + y) * g.out_width + x) * g.channels;
        for (int j = 0; j < 4; ++j) {
          for (int i = 0; i < 4; ++i) {
            const double w = static_cast<double>(ys[y].weight[j]) * xs[x].weight[i];
            double* p = sums.data() + ys[y].index[j] * row + xs[x].index[i] * g.channels;
            for (int64_t c = 0; c < g.channels; ++c) p[c] += grad[c] * w;
          }
        }
      }
    }
    T* dst = out->data<T>() + b * image;
    for (int64_t i = 0; i < image; ++i) dst[i] = static_cast<T>(sums[i]);
  }
  return Status::OK();
}

Status ResizeBicubicGradKernel(KernelContext& ctx) {
  const Tensor& original = ctx.input(1);
  if (original.rank() != 4) {
    return errors::InvalidArgument("ResizeBicubicGrad: original_image must be 4-dimensional, ",
                                   "got shape ", original.shape().ToString());
  }
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  const bool half_pixel = ctx.attrs().GetOr<bool>("half_pixel_centers", false);
  if (align_corners && half_pixel) {
    return errors::InvalidArgument("If half_pixel_centers is True, align_corners must be False.");
  }
  ResizeGeometry g;
  FS_RETURN_IF_ERROR(ReadGradGeometry("ResizeBicubicGrad", ctx.input(0), original.dim(1),
                                      original.dim(2), align_corners, &g));
  if (original.dim(0) != g.batch || original.dim(3) != g.channels) {
    return errors::InvalidArgument("ResizeBicubicGrad: grads ", ctx.input(0).shape().ToString(),
                                   " and original_image ", original.shape().ToString(),
                                   " differ in batch or channels");
  }
  return DispatchDType<float, double>(original.dtype(), "ResizeBicubicGrad", [&]<typename T>() {
    return BicubicGradTyped<T>(ctx, g, half_pixel);
  });
}

// The source cells [start, end) under one output pixel along an axis, and the covered fraction
// of the first and last.
struct Span {
  int64_t start, end;
  float start_scale, end_scale;
};

float Covered(int64_t cell, float lo, float hi, float scale) {
  const auto c = static_cast<float>(cell);
  if (c < lo) return c + 1 > hi ? scale : c + 1 - lo;
  return c + 1 > hi ? hi - c : 1.0f;
}

std::vector<Span> AreaAxis(int64_t out, float scale) {
  std::vector<Span> axis(out);
  for (int64_t i = 0; i < out; ++i) {
    const float lo = static_cast<float>(i) * scale, hi = static_cast<float>(i + 1) * scale;
    Span& s = axis[i];
    s.start = static_cast<int64_t>(std::floor(lo));
    s.end = static_cast<int64_t>(std::ceil(hi));
    s.start_scale = Covered(s.start, lo, hi, scale);
    s.end_scale = Covered(s.end - 1, lo, hi, scale);
  }
  return axis;
}

template <typename T>
Status AreaTyped(KernelContext& ctx, const ResizeGeometry& g) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.out_height, g.out_width, g.channels}, &out));
  const auto ys = AreaAxis(g.out_height, g.height_scale);
  const auto xs = AreaAxis(g.out_width, g.width_scale);
  const T* in = ctx.input(0).data<T>();
  float* dst = out->data<float>();
  const int64_t row = g.in_width * g.channels;
  const float scale = 1.0f / (g.height_scale * g.width_scale);
  auto bound = [](int64_t v, int64_t limit) { return std::clamp<int64_t>(v, 0, limit - 1); };
  for (int64_t by = 0; by < g.batch * g.out_height; ++by) {
    const int64_t b = by / g.out_height;
    const Span& y = ys[by % g.out_height];
    const float lo = static_cast<float>(by % g.out_height) * g.height_scale;
    const float hi = static_cast<float>(by % g.out_height + 1) * g.height_scale;
    for (int64_t x = 0; x < g.out_width; ++x) {
      const Span& xs_ = xs[x];
      for (int64_t c = 0; c < g.channels; ++c) {
        float sum = 0;
        for (int64_t i = y.start; i < y.end; ++i) {
          const T* p = in + (b * g.in_height + bound(i, g.in_height)) * row + c;
          float across =
              static_cast<float>(p[bound(xs_.start, g.in_width) * g.channels]) * xs_.start_scale;
          if (xs_.start + 1 != xs_.end) {
            for (int64_t j = xs_.start + 1; j < xs_.end - 1; ++j) {
              across += static_cast<float>(p[bound(j, g.in_width) * g.channels]);
            }
            across +=
                static_cast<float>(p[bound(xs_.end - 1, g.in_width) * g.channels]) * xs_.end_scale;
          }
          sum += across * Covered(i, lo, hi, g.height_scale);
        }
        dst[(by * g.out_width + x) * g.channels + c] = sum * scale;
      }
    }
  }
  return Status::OK();
}

Status ResizeAreaKernel(KernelContext& ctx) {
  ResizeGeometry g;
  bool half_pixel = false;
  FS_RETURN_IF_ERROR(ReadResizeGeometry(ctx, &g, &half_pixel));
  return DispatchDType<uint8_t, int32_t, int64_t, Half, float, double>(
      ctx.input(0).dtype(), "ResizeArea", [&]<typename T>() { return AreaTyped<T>(ctx, g); });
}

Status ResizeShape(InferenceContext& ctx) {
  PartialShape images, size;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &images));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(1, &size));
  const bool known = size.known_rank() && size.rank() == 2;
  ctx.set_output(0, PartialShape({images.dim(0), known ? size.dim(0) : -1, known ? size.dim(1) : -1,
                                  images.dim(3)}));
  return Status::OK();
}

Status ResizeGradShape(InferenceContext& ctx) {
  PartialShape grads, original;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &grads));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &original));
  ctx.set_output(0, original);
  return Status::OK();
}

// TensorFlow's: a gradient for floating-point images, none for the size.
Status ResizeBicubicGradFn(GradientContext& ctx) {
  const DType type = ctx.input_type(0);
  if (type == DType::kFloat32 || type == DType::kFloat64) {
    AttrMap attrs;
    attrs.Set("align_corners", ctx.attrs().GetOr<bool>("align_corners", false));
    attrs.Set("half_pixel_centers", ctx.attrs().GetOr<bool>("half_pixel_centers", false));
    ctx.SetInputGrad(0, ctx.Op("ResizeBicubicGrad", {ctx.output_grad(0), ctx.input(0)}, attrs));
  }
  return Status::OK();
}

const std::vector<DType> kTypes = {DType::kUInt8,   DType::kInt32,   DType::kInt64,
                                   DType::kFloat16, DType::kFloat32, DType::kFloat64};

FS_REGISTER_OP(OpBuilder("ResizeBicubic")
                   .Input("images", "T")
                   .Input("size", "int32")
                   .Output("resized_images", "float32")
                   .TypeAttr("T", kTypes)
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .Shape(ResizeShape)
                   .Kernel("CPU", ResizeBicubicKernel)
                   .Gradient(ResizeBicubicGradFn)
                   .Doc("Images resized by bicubic interpolation (float32 output)."));

FS_REGISTER_OP(OpBuilder("ResizeBicubicGrad")
                   .Input("grads", "float32")
                   .Input("original_image", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64})
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .Shape(ResizeGradShape)
                   .Kernel("CPU", ResizeBicubicGradKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of ResizeBicubic with respect to its images."));

// TensorFlow registers no gradient for ResizeArea.
FS_REGISTER_OP(OpBuilder("ResizeArea")
                   .Input("images", "T")
                   .Input("size", "int32")
                   .Output("resized_images", "float32")
                   .TypeAttr("T", kTypes)
                   .Attr("align_corners", false)
                   .Shape(ResizeShape)
                   .Kernel("CPU", ResizeAreaKernel)
                   .NotDifferentiable()
                   .Doc("Images resized by averaging the source area under each output pixel "
                        "(float32 output)."));

}  // namespace
}  // namespace flowstone
