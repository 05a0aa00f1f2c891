// ResizeBilinear and ResizeNearestNeighbor on [batch, height, width, channels] images, with TF1's
// align_corners and half_pixel_centers: rows of one table read by one registration loop. The
// source position of output pixel x is x * scale (legacy) or (x + 0.5) * scale - 0.5 (half-pixel
// centers; nearest neighbour drops the -0.5), where scale is (in - 1) / (out - 1) with aligned
// corners and in / out otherwise.
#include <algorithm>
#include <cmath>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

struct ResizeGeometry {
  int64_t batch, in_height, in_width, channels, out_height, out_width;
  // float, as TensorFlow computes them, so that positions round as TF's do.
  float height_scale, width_scale;
};

float Scale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

Status ReadGeometry(KernelContext& ctx, ResizeGeometry* g, bool* half_pixel) {
  const Tensor& images = ctx.input(0);
  const Tensor& size = ctx.input(1);
  if (images.rank() != 4) {
    return errors::InvalidArgument("input must be 4-dimensional, got shape ",
                                   images.shape().ToString());
  }
  if (size.rank() != 1 || size.num_elements() != 2) {
    return errors::InvalidArgument("shape_t must be 1-dimensional and have 2 elements, got shape ",
                                   size.shape().ToString());
  }
  const bool align_corners = ctx.attrs().GetOr<bool>("align_corners", false);
  *half_pixel = ctx.attrs().GetOr<bool>("half_pixel_centers", false);
  if (align_corners && *half_pixel) {
    return errors::InvalidArgument("If half_pixel_centers is True, align_corners must be False.");
  }
  g->batch = images.dim(0);
  g->in_height = images.dim(1);
  g->in_width = images.dim(2);
  g->channels = images.dim(3);
  g->out_height = size.ElementAsInt64(0);
  g->out_width = size.ElementAsInt64(1);
  if (g->out_height <= 0 || g->out_width <= 0) {
    return errors::InvalidArgument("output dimensions must be positive, got ", g->out_height,
                                   " and ", g->out_width);
  }
  if (g->out_height > (1 << 24) || g->out_width > (1 << 24)) {
    return errors::InvalidArgument("output dimensions are too large: ", g->out_height, " x ",
                                   g->out_width);
  }
  if (g->in_height == 0 || g->in_width == 0) {
    return errors::InvalidArgument("input image must be of non-zero size, got shape ",
                                   images.shape().ToString());
  }
  g->height_scale = Scale(g->in_height, g->out_height, align_corners);
  g->width_scale = Scale(g->in_width, g->out_width, align_corners);
  return Status::OK();
}

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
  FS_RETURN_IF_ERROR(ReadGeometry(ctx, &g, &half_pixel));
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

struct ResizeRow {
  const char* name;
  KernelFn kernel;
  const char* output_type;
  const char* doc;
};

const std::vector<DType> kResizeTypes = {DType::kUInt8, DType::kInt32, DType::kInt64,
                                         DType::kFloat32, DType::kFloat64};

const ResizeRow kResizeOps[] = {
    {"ResizeBilinear", Dispatch<Bilinear>, "float32",
     "Images resized by bilinear interpolation (float32 output)."},
    {"ResizeNearestNeighbor", Dispatch<Nearest>, "T",
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
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
