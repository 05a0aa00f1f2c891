// ExtractGlimpse and ExtractGlimpseV2 (tf.image.extract_glimpse): a [height, width] window of
// each image at its offset (y, x), pixels outside the image filled with noise. The offset is the
// window's centre, in pixels or normalized to [0, 1] (or to [-1, 1] about the image centre when
// `centered`), truncated toward zero to a pixel. The two ops differ where TensorFlow's do: V1
// scales by `normalized` and shifts by `centered` independently and always moves back half a
// window; V2 (the older behaviour, kept under the new name) halves and moves back only when both
// are set, and shifts an unnormalized centred offset by half the image alone.
//
// Noise: "uniform" (or uniform_noise) draws from [min, max) of the whole image, "gaussian" from
// each channel's mean and deviation clipped to its range, "zero" is 0. Noise comes from a
// per-kernel generator seeded from the system, as TensorFlow's is unseeded.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

enum class Noise { kUniform, kGaussian, kZero };

class ExtractGlimpseKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    const std::string& op = node().type();
    const AttrMap& attrs = node().attrs();
    v1_ = op == "ExtractGlimpse";
    centered_ = attrs.GetOr<bool>("centered", true);
    normalized_ = attrs.GetOr<bool>("normalized", true);
    const bool uniform = attrs.GetOr<bool>("uniform_noise", true);
    const std::string noise = attrs.GetOr<std::string>("noise", "uniform");
    if (uniform && !noise.empty() && noise != "uniform") {
      return errors::InvalidArgument(op, ": uniform_noise and noise = '", noise,
                                     "' cannot be given together; set uniform_noise=False");
    }
    if (uniform || noise == "uniform") {
      noise_ = Noise::kUniform;
    } else if (noise.empty() || noise == "gaussian") {
      noise_ = Noise::kGaussian;
    } else if (noise == "zero") {
      noise_ = Noise::kZero;
    } else {
      return errors::InvalidArgument(op, ": noise must be 'uniform', 'gaussian' or 'zero', got '",
                                     noise, "'");
    }
    std::random_device device;
    rng_.seed((uint64_t{device()} << 32) | device());
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& input = ctx.input(0);
    const Tensor& size = ctx.input(1);
    const Tensor& offsets = ctx.input(2);
    if (input.rank() != 4) {
      return errors::InvalidArgument(op, ": input must be 4-D [batch, height, width, channels], ",
                                     "got shape ", input.shape().ToString());
    }
    if (size.rank() != 1 || size.num_elements() != 2) {
      return errors::InvalidArgument(op, ": size must be a vector of 2 (height, width), got shape ",
                                     size.shape().ToString());
    }
    const int64_t batch = input.dim(0), height = input.dim(1), width = input.dim(2);
    const int64_t channels = input.dim(3);
    if (offsets.rank() != 2 || offsets.dim(0) != batch || offsets.dim(1) != 2) {
      return errors::InvalidArgument(op, ": offsets must be [batch = ", batch, ", 2] (y, x), got ",
                                     offsets.shape().ToString());
    }
    const int64_t glimpse_height = size.ElementAsInt64(0), glimpse_width = size.ElementAsInt64(1);
    if (glimpse_height < 0 || glimpse_width < 0) {
      return errors::InvalidArgument(op, ": size must be non-negative, got ", glimpse_height, " x ",
                                     glimpse_width);
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(
        ctx.AllocateOutput(0, TensorShape{batch, glimpse_height, glimpse_width, channels}, &out));
    if (out->num_elements() == 0) return Status::OK();
    if (height == 0 || width == 0) {
      return errors::InvalidArgument(op, ": input images must not be empty, got shape ",
                                     input.shape().ToString());
    }
    const float* in = input.data<float>();
    const float* offset = offsets.data<float>();
    float* dst = out->data<float>();
    const int64_t image_size = height * width * channels;
    const int64_t glimpse_size = glimpse_height * glimpse_width * channels;
    for (int64_t b = 0; b < batch; ++b) {
      const float* image = in + b * image_size;
      float* glimpse = dst + b * glimpse_size;
      const int64_t top = Corner(offset[2 * b], height, glimpse_height);
      const int64_t left = Corner(offset[2 * b + 1], width, glimpse_width);
      const bool partial =
          top < 0 || left < 0 || top + glimpse_height >= height || left + glimpse_width >= width;
      if (partial) Fill(image, height * width, channels, glimpse, glimpse_height * glimpse_width);
      for (int64_t y = 0; y < glimpse_height; ++y) {
        const int64_t source_y = top + y;
        if (source_y < 0 || source_y >= height) continue;
        for (int64_t x = 0; x < glimpse_width; ++x) {
          const int64_t source_x = left + x;
          if (source_x < 0 || source_x >= width) continue;
          std::copy_n(image + (source_y * width + source_x) * channels, channels,
                      glimpse + (y * glimpse_width + x) * channels);
        }
      }
    }
    return Status::OK();
  }

 private:
  // The window's first row (or column) for an offset along an axis of `extent` pixels.
  int64_t Corner(float position, int64_t extent, int64_t window) const {
    const auto size = static_cast<float>(extent);
    const float half_window = static_cast<float>(window) / 2.0f;
    if (normalized_) position *= size;
    if (v1_) {
      if (centered_) position = position / 2.0f + size / 2.0f;
      position -= half_window;
    } else if (normalized_ && centered_) {
      position = position / 2.0f + size / 2.0f - half_window;
    } else if (centered_) {
      position += size / 2.0f;
    }
    // Truncated toward zero like TensorFlow's cast; far-off (or NaN) offsets land outside.
    if (std::isnan(position)) return -window - 1;
    return static_cast<int64_t>(std::clamp(position, -0x1p40f, 0x1p40f));
  }

  void Fill(const float* image, int64_t pixels, int64_t channels, float* glimpse, int64_t count) {
    if (noise_ == Noise::kZero) {
      std::fill_n(glimpse, count * channels, 0.0f);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (noise_ == Noise::kUniform) {
      const auto [lo, hi] = std::minmax_element(image, image + pixels * channels);
      std::uniform_real_distribution<float> draw(0.0f, 1.0f);
      for (int64_t i = 0; i < count * channels; ++i) glimpse[i] = *lo + draw(rng_) * (*hi - *lo);
      return;
    }
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      float lo = image[c], hi = image[c];
      for (int64_t p = 0; p < pixels; ++p) {
        const float v = image[p * channels + c];
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      const double mean = sum / static_cast<double>(pixels);
      for (int64_t p = 0; p < pixels; ++p) {
        const double d = image[p * channels + c] - mean;
        squares += d * d;
      }
      std::normal_distribution<float> draw(static_cast<float>(mean),
                                           static_cast<float>(std::sqrt(squares / pixels)));
      for (int64_t i = 0; i < count; ++i) {
        glimpse[i * channels + c] = std::clamp(draw(rng_), lo, hi);
      }
    }
  }

  bool v1_ = true, centered_ = true, normalized_ = true;
  Noise noise_ = Noise::kUniform;
  std::mutex mu_;  // the generator, shared by concurrent runs
  std::mt19937_64 rng_;
};

Status GlimpseShape(InferenceContext& ctx) {
  PartialShape input;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  const Tensor* size = ctx.input_value(1);
  const bool known = size != nullptr && size->num_elements() == 2;
  ctx.set_output(0, PartialShape({input.dim(0), known ? size->ElementAsInt64(0) : -1,
                                  known ? size->ElementAsInt64(1) : -1, input.dim(3)}));
  return Status::OK();
}

const bool kGlimpseOpsRegistered = [] {
  for (const char* name : {"ExtractGlimpse", "ExtractGlimpseV2"}) {
    OpBuilder builder(name);
    OpRegistrar registrar(
        builder.Input("input", "float32")
            .Input("size", "int32")
            .Input("offsets", "float32")
            .Output("glimpse", "float32")
            .Attr("centered", true)
            .Attr("normalized", true)
            .Attr("uniform_noise", true)
            .Attr("noise", "uniform")
            .Stateful()
            .Shape(GlimpseShape)
            .KernelClass<ExtractGlimpseKernel>("CPU")
            .NotDifferentiable()
            .Doc("Windows of the images at the given offsets, noise outside the images "
                 "(tf.image.extract_glimpse)."));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
