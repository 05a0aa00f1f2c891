// AdjustContrastv2 (tf.image.adjust_contrast): each channel of each image moved away from (or
// towards) its mean over the image's height and width, (x - mean) * contrast_factor + mean.
// Float32 images, as TensorFlow's Python hands it (it converts other dtypes around the op).
// Not differentiable, as in TensorFlow.
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status AdjustContrastKernel(KernelContext& ctx) {
  const Tensor& images = ctx.input(0);
  const Tensor& factor = ctx.input(1);
  if (images.rank() < 3) {
    return errors::InvalidArgument(
        "AdjustContrastv2: images must be at least 3-D "
        "[..., height, width, channels], got shape ",
        images.shape().ToString());
  }
  if (factor.rank() != 0) {
    return errors::InvalidArgument(
        "AdjustContrastv2: contrast_factor must be a scalar, got "
        "shape ",
        factor.shape().ToString());
  }
  const int rank = images.rank();
  const int64_t channels = images.dim(rank - 1);
  const int64_t pixels = images.dim(rank - 2) * images.dim(rank - 3);
  const int64_t count = pixels * channels;
  const int64_t batch = count == 0 ? 0 : images.num_elements() / count;
  const float f = *factor.data<float>();
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, images.shape(), &out));
  const float* in = images.data<float>();
  float* dst = out->data<float>();
  std::vector<double> sums(channels);
  for (int64_t b = 0; b < batch; ++b) {
    const float* image = in + b * count;
    float* result = dst + b * count;
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t c = 0; c < channels; ++c) sums[c] += image[p * channels + c];
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float mean = static_cast<float>(sums[c] / static_cast<double>(pixels));
      for (int64_t p = 0; p < pixels; ++p) {
        const int64_t i = p * channels + c;
        result[i] = (image[i] - mean) * f + mean;
      }
    }
  }
  return Status::OK();
}

Status AdjustContrastShape(InferenceContext& ctx) {
  const PartialShape& images = ctx.input(0);
  if (images.known_rank() && images.rank() < 3) {
    return errors::InvalidArgument("AdjustContrastv2: images must be at least 3-D, got shape ",
                                   images.ToString());
  }
  ctx.set_output(0, images);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("AdjustContrastv2")
                   .Input("images", "T")
                   .Input("contrast_factor", "float32")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kFloat32}, DType::kFloat32)
                   .Shape(AdjustContrastShape)
                   .Kernel("CPU", AdjustContrastKernel)
                   .NotDifferentiable()
                   .Doc("(x - mean) * contrast_factor + mean for each channel of each image, the "
                        "mean over the image's height and width (tf.image.adjust_contrast)."));

}  // namespace
}  // namespace flowstone
