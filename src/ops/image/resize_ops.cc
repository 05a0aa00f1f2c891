// ResizeBilinear and ResizeNearestNeighbor on [batch, height, width, channels] images, with TF1's
// align_corners and half_pixel_centers: rows of one table read by one registration loop. The
// source position of output pixel x is x * scale (legacy) or (x + 0.5) * scale - 0.5 (half-pixel
// centers; nearest neighbour drops the -0.5), where scale is (in - 1) / (out - 1) with aligned
// corners and in / out otherwise.
#include <algorithm>
#include <cmath>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/image/resize_util.h"

namespace flowstone {
namespace {

// One output coordinate's two source indices and the weight of the second.
struct Interpolation {
  int64_t lower, upper;
  float lerp;
};

std::vector<Interpolation> BilinearAxis(int64_t out, int64_t in, float scale, bool half_pixel) {
  std::vector<Interpolation> axis(out);
  for (int64_t i = 0; i < out; ++i) {
    const float source =
        half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    const float floor = std::floor(source);
    axis[i].lower = std::max<int64_t>(static_cast<int64_t>(floor), 0);
    axis[i].upper = std::min<int64_t>(
        half_pixel ? static_cast<int64_t>(std::ceil(source)) : static_cast<int64_t>(floor) + 1,
        in - 1);
    axis[i].lerp = source - floor;
  }
  return axis;
}

template <typename T>
Status BilinearKernel(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.out_height, g.out_width, g.channels}, &out));
  const auto ys = BilinearAxis(g.out_height, g.in_height, g.height_scale, half_pixel);
  const auto xs = BilinearAxis(g.out_width, g.in_width, g.width_scale, half_pixel);
  const T* in = ctx.input(0).data<T>();
  float* dst = out->data<float>();
  const int64_t row = g.in_width * g.channels;
  ctx.ParallelFor(g.batch * g.out_height, g.out_width * g.channels * 8,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t by = begin; by < end; ++by) {
                      const int64_t b = by / g.out_height, y = by % g.out_height;
                      const T* image = in + b * g.in_height * row;
                      const T* top = image + ys[y].lower * row;
                      const T* bottom = image + ys[y].upper * row;
                      float* o = dst + by * g.out_width * g.channels;
                      for (int64_t x = 0; x < g.out_width; ++x) {
                        const int64_t l = xs[x].lower * g.channels, r = xs[x].upper * g.channels;
                        for (int64_t c = 0; c < g.channels; ++c) {
                          const float tl = static_cast<float>(top[l + c]);
                          const float tr = static_cast<float>(top[r + c]);
                          const float bl = static_cast<float>(bottom[l + c]);
                          const float br = static_cast<float>(bottom[r + c]);
                          const float t = tl + (tr - tl) * xs[x].lerp;
                          const float bt = bl + (br - bl) * xs[x].lerp;
                          o[x * g.channels + c] = t + (bt - t) * ys[y].lerp;
                        }
                      }
                    }
                  });
  return Status::OK();
}

std::vector<int64_t> NearestAxis(int64_t out, int64_t in, float scale, bool half_pixel,
                                 bool align_corners) {
  std::vector<int64_t> axis(out);
  for (int64_t i = 0; i < out; ++i) {
    const float source =
        half_pixel ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
    const float picked = align_corners ? std::round(source) : std::floor(source);
    axis[i] = std::clamp<int64_t>(static_cast<int64_t>(picked), 0, in - 1);
  }
  return axis;
}

template <typename T>
Status NearestKernel(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.out_height, g.out_width, g.channels}, &out));
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  const auto ys = NearestAxis(g.out_height, g.in_height, g.height_scale, half_pixel, align_corners);
  const auto xs = NearestAxis(g.out_width, g.in_width, g.width_scale, half_pixel, align_corners);
  const T* in = ctx.input(0).data<T>();
  T* dst = out->data<T>();
  const int64_t row = g.in_width * g.channels;
  for (int64_t by = 0; by < g.batch * g.out_height; ++by) {
    const int64_t b = by / g.out_height, y = by % g.out_height;
    const T* source_row = in + (b * g.in_height + ys[y]) * row;
    T* o = dst + by * g.out_width * g.channels;
    for (int64_t x = 0; x < g.out_width; ++x) {
      std::copy_n(source_row + xs[x] * g.channels, g.channels, o + x * g.channels);
    }
  }
  return Status::OK();
}

template <template <typename> class Kernel>
Status Dispatch(KernelContext& ctx) {
  ResizeGeometry g;
  bool half_pixel = false;
  FS_RETURN_IF_ERROR(ReadResizeGeometry(ctx, &g, &half_pixel));
  switch (ctx.input(0).dtype()) {
    case DType::kUInt8:
      return Kernel<uint8_t>::Run(ctx, g, half_pixel);
    case DType::kInt32:
      return Kernel<int32_t>::Run(ctx, g, half_pixel);
    case DType::kInt64:
      return Kernel<int64_t>::Run(ctx, g, half_pixel);
    case DType::kFloat64:
      return Kernel<double>::Run(ctx, g, half_pixel);
    default:
      return Kernel<float>::Run(ctx, g, half_pixel);
  }
}

template <typename T>
struct Bilinear {
  static Status Run(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
    return BilinearKernel<T>(ctx, g, half_pixel);
  }
};

template <typename T>
struct Nearest {
  static Status Run(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
    return NearestKernel<T>(ctx, g, half_pixel);
  }
};

Status ResizeShape(InferenceContext& ctx) {
  PartialShape images;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &images));
  PartialShape size;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(1, &size));
  std::vector<int64_t> dims = images.ToVector();
  const bool known = size.known_rank() && size.rank() == 2;
  dims[1] = known ? size.dim(0) : -1;
  dims[2] = known ? size.dim(1) : -1;
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// --- Gradients --------------------------------------------------------------------------------
// ResizeBilinearGrad spreads each resized pixel's gradient over the four source pixels it was
// interpolated from, with the same weights; ResizeNearestNeighborGrad adds it to the one pixel
// it was copied from. Accumulated in float64 per image and converted once.

template <typename T>
Status BilinearGradTyped(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.in_height, g.in_width, g.channels}, &out));
  if (ctx.input(0).num_elements() == 0) {
    std::fill_n(out->data<T>(), out->num_elements(), T(0));
    return Status::OK();
  }
  const auto ys = BilinearAxis(g.out_height, g.in_height, g.height_scale, half_pixel);
  const auto xs = BilinearAxis(g.out_width, g.in_width, g.width_scale, half_pixel);
  const float* grads = ctx.input(0).data<float>();
  const int64_t image = g.in_height * g.in_width * g.channels;
  std::vector<double> sums(static_cast<size_t>(image));
  for (int64_t b = 0; b < g.batch; ++b) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t y = 0; y < g.out_height; ++y) {
      const double dy = ys[y].lerp;
      double* top = sums.data() + ys[y].lower * g.in_width * g.channels;
      double* bottom = sums.data() + ys[y].upper * g.in_width * g.channels;
      for (int64_t x = 0; x < g.out_width; ++x) {
        const double dx = xs[x].lerp;
        const int64_t l = xs[x].lower * g.channels, r = xs[x].upper * g.channels;
        const float* grad = grads + ((b * g.out_height + y) * g.out_width + x) * g.channels;
        for (int64_t c = 0; c < g.channels; ++c) {
          top[l + c] += grad[c] * (1 - dy) * (1 - dx);
          top[r + c] += grad[c] * (1 - dy) * dx;
          bottom[l + c] += grad[c] * dy * (1 - dx);
          bottom[r + c] += grad[c] * dy * dx;
        }
      }
    }
    T* dst = out->data<T>() + b * image;
    for (int64_t i = 0; i < image; ++i) dst[i] = static_cast<T>(sums[i]);
  }
  return Status::OK();
}

Status ResizeBilinearGradKernel(KernelContext& ctx) {
  const Tensor& original = ctx.input(1);
  if (original.rank() != 4) {
    return errors::InvalidArgument("ResizeBilinearGrad: original_image must be 4-dimensional, ",
                                   "got shape ", original.shape().ToString());
  }
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  const bool half_pixel = ctx.attrs().GetOr<bool>("half_pixel_centers", false);
  ResizeGeometry g;
  FS_RETURN_IF_ERROR(ReadGradGeometry("ResizeBilinearGrad", ctx.input(0), original.dim(1),
                                      original.dim(2), align_corners, &g));
  if (original.dim(0) != g.batch || original.dim(3) != g.channels) {
    return errors::InvalidArgument("ResizeBilinearGrad: grads ", ctx.input(0).shape().ToString(),
                                   " and original_image ", original.shape().ToString(),
                                   " differ in batch or channels");
  }
  return DispatchDType<Half, float, double>(
      original.dtype(), "ResizeBilinearGrad",
      [&]<typename T>() { return BilinearGradTyped<T>(ctx, g, half_pixel); });
}

template <typename T>
Status NearestGradTyped(KernelContext& ctx, const ResizeGeometry& g, bool half_pixel,
                        bool align_corners) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{g.batch, g.in_height, g.in_width, g.channels}, &out));
  if (ctx.input(0).num_elements() == 0) {
    std::fill_n(out->data<T>(), out->num_elements(), T(0));
    return Status::OK();
  }
  const auto ys = NearestAxis(g.out_height, g.in_height, g.height_scale, half_pixel, align_corners);
  const auto xs = NearestAxis(g.out_width, g.in_width, g.width_scale, half_pixel, align_corners);
  const T* grads = ctx.input(0).data<T>();
  T* dst = out->data<T>();
  std::fill_n(dst, out->num_elements(), T(0));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t y = 0; y < g.out_height; ++y) {
      T* row = dst + (b * g.in_height + ys[y]) * g.in_width * g.channels;
      for (int64_t x = 0; x < g.out_width; ++x) {
        const T* grad = grads + ((b * g.out_height + y) * g.out_width + x) * g.channels;
        // Integer gradients wrap around on overflow, as in TensorFlow (and as BiasAddGrad's).
        for (int64_t c = 0; c < g.channels; ++c) {
          T& sum = row[xs[x] * g.channels + c];
          sum = WrapAdd(sum, grad[c]);
        }
      }
    }
  }
  return Status::OK();
}

Status ResizeNearestNeighborGradKernel(KernelContext& ctx) {
  const Tensor& size = ctx.input(1);
  if (size.rank() != 1 || size.num_elements() != 2) {
    return errors::InvalidArgument("ResizeNearestNeighborGrad: size must be 1-D with 2 ",
                                   "elements, got shape ", size.shape().ToString());
  }
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  const bool half_pixel = ctx.attrs().GetOr<bool>("half_pixel_centers", false);
  ResizeGeometry g;
  FS_RETURN_IF_ERROR(ReadGradGeometry("ResizeNearestNeighborGrad", ctx.input(0),
                                      size.ElementAsInt64(0), size.ElementAsInt64(1), align_corners,
                                      &g));
  return DispatchDType<uint8_t, int32_t, int64_t, float, double>(
      ctx.input(0).dtype(), "ResizeNearestNeighborGrad",
      [&]<typename T>() { return NearestGradTyped<T>(ctx, g, half_pixel, align_corners); });
}

AttrMap ResizeAttrs(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("align_corners", ctx.attrs().GetOr<bool>("align_corners", false));
  attrs.Set("half_pixel_centers", ctx.attrs().GetOr<bool>("half_pixel_centers", false));
  return attrs;
}

// TensorFlow's: a gradient for floating-point images only, none for the size.
Status ResizeBilinearGrad(GradientContext& ctx) {
  const DType type = ctx.input_type(0);
  if (type == DType::kFloat32 || type == DType::kFloat64) {
    ctx.SetInputGrad(
        0, ctx.Op("ResizeBilinearGrad", {ctx.output_grad(0), ctx.input(0)}, ResizeAttrs(ctx)));
  }
  return Status::OK();
}

Status ResizeNearestNeighborGrad(GradientContext& ctx) {
  AttrMap slice;
  const Endpoint size =
      ctx.Op("StridedSlice",
             {ctx.Shape(ctx.input(0)), ctx.Const(Tensor::FromVector<int32_t>({1}, TensorShape{1})),
              ctx.Const(Tensor::FromVector<int32_t>({3}, TensorShape{1})),
              ctx.Const(Tensor::FromVector<int32_t>({1}, TensorShape{1}))},
             slice);
  ctx.SetInputGrad(
      0, ctx.Op("ResizeNearestNeighborGrad", {ctx.output_grad(0), size}, ResizeAttrs(ctx)));
  return Status::OK();
}

Status ResizeGradShape(InferenceContext& ctx) {
  PartialShape grads, original;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &grads));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &original));
  ctx.set_output(0, original);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ResizeBilinearGrad")
                   .Input("grads", "float32")
                   .Input("original_image", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16})
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .Shape(ResizeGradShape)
                   .Kernel("CPU", ResizeBilinearGradKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of ResizeBilinear with respect to its images."));

FS_REGISTER_OP(OpBuilder("ResizeNearestNeighborGrad")
                   .Input("grads", "T")
                   .Input("size", "int32")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                                   DType::kFloat64})
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .Shape(ResizeShape)
                   .Kernel("CPU", ResizeNearestNeighborGradKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of ResizeNearestNeighbor: each pixel's gradient summed "
                        "over the resized pixels copied from it."));

struct ResizeRow {
  const char* name;
  KernelFn kernel;
  const char* output_type;
  GradFn grad;
  const char* doc;
};

const std::vector<DType> kResizeTypes = {DType::kUInt8, DType::kInt32, DType::kInt64,
                                         DType::kFloat32, DType::kFloat64};

const ResizeRow kResizeOps[] = {
    {"ResizeBilinear", Dispatch<Bilinear>, "float32", ResizeBilinearGrad,
     "Images resized by bilinear interpolation (float32 output)."},
    {"ResizeNearestNeighbor", Dispatch<Nearest>, "T", ResizeNearestNeighborGrad,
     "Images resized by picking the nearest source pixel."},
};

const bool kResizeOpsRegistered = [] {
  for (const ResizeRow& row : kResizeOps) {
    OpBuilder builder(row.name);
    OpRegistrar registrar(builder.Input("images", "T")
                              .Input("size", "int32")
                              .Output("resized_images", row.output_type)
                              .TypeAttr("T", kResizeTypes)
                              .Attr("align_corners", false)
                              .Attr("half_pixel_centers", false)
                              .Shape(ResizeShape)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.grad)
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
