// ExtractImagePatches (tf.image.extract_patches, tf.extract_image_patches): each output pixel
// holds the ksizes[1] x ksizes[2] patch of the NHWC input around it (sampled every rates[i]
// pixels, windows every strides[i] pixels, SAME or VALID padding as in convolutions), flattened
// into the depth dimension; padding reads as zeros. The gradient sums each patch entry back into
// the pixel it came from.
#include <cstring>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"
#include "ops/conv_util.h"

namespace flowstone {
namespace {

using array_util::IndexConst;
using array_util::IndexScalar;

// ksizes, strides and rates as a window (4 entries each, batch and depth entries 1) and padding.
Status ReadPatchAttrs(const AttrMap& attrs, conv::WindowAttrs* window) {
  const char* names[] = {"ksizes", "strides", "rates"};
  int64_t* targets[] = {window->ksize, window->stride, window->dilation};
  for (int k = 0; k < 3; ++k) {
    const std::vector<int64_t> values = attrs.GetOr<std::vector<int64_t>>(names[k], {});
    if (values.size() != 4 || values[0] != 1 || values[3] != 1) {
      return errors::InvalidArgument(names[k],
                                     " must be a list of 4 ints [1, rows, cols, 1], "
                                     "got ",
                                     array_util::JoinInts(values));
    }
    if (values[1] < 1 || values[2] < 1) {
      return errors::InvalidArgument(names[k], " must be positive, got ",
                                     array_util::JoinInts(values));
    }
    targets[k][0] = values[1];
    targets[k][1] = values[2];
  }
  const std::string padding = attrs.GetOr<std::string>("padding", "");
  if (padding != "SAME" && padding != "VALID") {
    return errors::InvalidArgument("Value for attr 'padding' of \"", padding,
                                   "\" is not in the list of allowed values: \"SAME\", \"VALID\"");
  }
  window->padding = padding == "SAME" ? conv::Padding::kSame : conv::Padding::kValid;
  return Status::OK();
}

// The output depth: the input's depth times the patch's rows and columns, checked for overflow
// (ksizes are attrs of any size).
Status PatchDepth(int64_t depth, const conv::WindowAttrs& window, int64_t* out) {
  if (__builtin_mul_overflow(depth, window.ksize[0], out) ||
      __builtin_mul_overflow(*out, window.ksize[1], out)) {
    return errors::InvalidArgument("Output depth ", depth, " * ", window.ksize[0], " * ",
                                   window.ksize[1], " overflows int64; use smaller ksizes");
  }
  return Status::OK();
}

Status ExtractPatchesShape(InferenceContext& ctx) {
  conv::WindowAttrs window;
  FS_RETURN_IF_ERROR(ReadPatchAttrs(ctx.attrs(), &window));
  PartialShape images;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &images));
  if (!images.known_rank()) {
    ctx.set_output(0, PartialShape::UnknownOfRank(4));
    return Status::OK();
  }
  int64_t rows = -1, cols = -1;
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(window, 0, images.dim(1), window.ksize[0], &rows));
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(window, 1, images.dim(2), window.ksize[1], &cols));
  int64_t depth = -1;
  if (images.dim(3) >= 0) FS_RETURN_IF_ERROR(PatchDepth(images.dim(3), window, &depth));
  ctx.set_output(0, PartialShape({images.dim(0), rows, cols, depth}));
  return Status::OK();
}

Status ExtractPatchesKernel(KernelContext& ctx) {
  conv::WindowAttrs window;
  FS_RETURN_IF_ERROR(ReadPatchAttrs(ctx.attrs(), &window));
  const Tensor& images = ctx.input(0);
  if (images.rank() != 4) {
    return errors::InvalidArgument(
        "images must be 4-dimensional [batch, rows, cols, depth], "
        "got shape ",
        images.shape().ToString());
  }
  conv::Window rows, cols;
  FS_RETURN_IF_ERROR(conv::ComputeWindow(window, 0, images.dim(1), window.ksize[0], &rows));
  FS_RETURN_IF_ERROR(conv::ComputeWindow(window, 1, images.dim(2), window.ksize[1], &cols));
  const int64_t batch = images.dim(0);
  const int64_t depth = images.dim(3);
  int64_t out_depth;
  FS_RETURN_IF_ERROR(PatchDepth(depth, window, &out_depth));
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{batch, rows.out, cols.out, out_depth}, &out));
  if (out->num_elements() == 0) return Status::OK();
  const int64_t pixel_bytes = depth * static_cast<int64_t>(DTypeSize(images.dtype()));
  const char* src = static_cast<const char*>(images.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  // One unit of work per (b, i, j, ki, kj): a pixel's depth entries, copied or zeroed.
  const int64_t units = batch * rows.out * cols.out * rows.kernel * cols.kernel;
  ctx.ParallelFor(units, pixel_bytes / 4 + 4, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t rest = u;
      const int64_t kj = rest % cols.kernel;
      rest /= cols.kernel;
      const int64_t ki = rest % rows.kernel;
      rest /= rows.kernel;
      const int64_t j = rest % cols.out;
      rest /= cols.out;
      const int64_t i = rest % rows.out;
      const int64_t b = rest / rows.out;
      const int64_t y = i * rows.stride + ki * rows.dilation - rows.pad_before;
      const int64_t x = j * cols.stride + kj * cols.dilation - cols.pad_before;
      char* to = dst + u * pixel_bytes;
      if (y < 0 || y >= rows.in || x < 0 || x >= cols.in) {
        std::memset(to, 0, pixel_bytes);
      } else {
        std::memcpy(to, src + ((b * rows.in + y) * cols.in + x) * pixel_bytes, pixel_bytes);
      }
    }
  });
  return Status::OK();
}

// The patches of an image of pixel numbers 1..rows*cols say where each patch entry came from
// (0: padding); the gradient entries are summed into those pixels by UnsortedSegmentSum, which
// drops the padding's id -1.
Status ExtractPatchesGrad(GradientContext& ctx) {
  const Endpoint images = ctx.input(0);
  const Endpoint shape = ctx.Shape(images);
  auto dim = [&](int64_t d) {
    return ctx.Op("GatherV2", {shape, IndexScalar(ctx, d), IndexScalar(ctx, 0)});
  };
  const Endpoint pixels = ctx.Op("Mul", {dim(1), dim(2)});
  const Endpoint numbers =
      ctx.Op("Reshape",
             {ctx.Op("Range", {IndexScalar(ctx, 1), ctx.Op("AddV2", {pixels, IndexScalar(ctx, 1)}),
                               IndexScalar(ctx, 1)}),
              ctx.Op("Pack", {IndexScalar(ctx, 1), dim(1), dim(2), IndexScalar(ctx, 1)})});
  AttrMap attrs;
  for (const char* name : {"ksizes", "strides", "rates"}) {
    attrs.Set(name, ctx.attrs().GetOr<std::vector<int64_t>>(name, {}));
  }
  attrs.Set("padding", ctx.attrs().GetOr<std::string>("padding", ""));
  const Endpoint sources = ctx.Op("ExtractImagePatches", {numbers}, attrs);
  const Endpoint ids = ctx.Op(
      "Sub",
      {ctx.Op("Reshape", {sources, IndexConst(ctx, {-1}, DType::kInt32)}), IndexScalar(ctx, 1)});
  // [b, out_rows, out_cols, k_rows * k_cols * depth] -> [entries, b, depth].
  const Endpoint grad = ctx.Op(
      "Transpose", {ctx.Op("Reshape", {ctx.output_grad(0),
                                       ctx.Op("Pack", {dim(0), IndexScalar(ctx, -1), dim(3)})}),
                    IndexConst(ctx, {1, 0, 2}, DType::kInt32)});
  const Endpoint summed = ctx.Op("UnsortedSegmentSum", {grad, ids, pixels});
  ctx.SetInputGrad(
      0, ctx.Op("Reshape",
                {ctx.Op("Transpose", {summed, IndexConst(ctx, {1, 0, 2}, DType::kInt32)}), shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ExtractImagePatches")
                   .Input("images", "T")
                   .Output("patches", "T")
                   .RequiredAttr("ksizes", AttrType::kIntList)
                   .RequiredAttr("strides", AttrType::kIntList)
                   .RequiredAttr("rates", AttrType::kIntList)
                   .RequiredAttr("padding", AttrType::kString)
                   .TypeAttr("T", kAllTypes)
                   .Shape(ExtractPatchesShape)
                   .Kernel("CPU", ExtractPatchesKernel)
                   .Gradient(ExtractPatchesGrad)
                   .Doc("The patches around each output pixel of an NHWC image, flattened into "
                        "the depth dimension (tf.image.extract_patches)."));

}  // namespace
}  // namespace flowstone
