// Local response normalization (LRN) and its gradient (LRNGrad), as in AlexNet:
//
//   sqr_sum[b, y, x, d] = sum(input[b, y, x, d - depth_radius : d + depth_radius + 1] ** 2)
//   output = input / (bias + alpha * sqr_sum) ** beta
//
// over the last (depth) axis of a 4-D NHWC tensor. The depth window is short (usually 5), so the
// kernels walk it directly per pixel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

struct LrnParams {
  int64_t radius = 5;
  double bias = 1, alpha = 1, beta = 0.5;
};

// Reads and checks the attrs, with TensorFlow's limit on depth_radius (its kernels keep the
// window's squares in an int-sized buffer).
Status ParseLrnAttrs(const std::string& op, const AttrMap& attrs, LrnParams* p) {
  p->radius = attrs.GetOr<int64_t>("depth_radius", 5);
  p->bias = attrs.GetOr<double>("bias", 1.0);
  p->alpha = attrs.GetOr<double>("alpha", 1.0);
  p->beta = attrs.GetOr<double>("beta", 0.5);
  if (p->radius < 0 || p->radius > 0x7fffffff) {
    return errors::InvalidArgument(op, ": depth_radius = ", p->radius,
                                   " larger than int max or negative; use a radius in [0, ",
                                   0x7fffffff, "]");
  }
  return Status::OK();
}

Status CheckImage(const std::string& op, const char* name, const Tensor& t) {
  if (t.shape().rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional [batch, rows, cols, ",
                                   "depth], but has shape ", t.shape().ToString());
  }
  return Status::OK();
}

// The window of depths [first, last) around depth d.
struct DepthWindow {
  int64_t first, last;
  DepthWindow(int64_t d, int64_t radius, int64_t depth)
      : first(std::max<int64_t>(d - radius, 0)), last(std::min<int64_t>(d + radius + 1, depth)) {}
};

Status LrnKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  LrnParams p;
  FS_RETURN_IF_ERROR(ParseLrnAttrs(op, ctx.attrs(), &p));
  const Tensor& x = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckImage(op, "input", x));
  Tensor* y;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &y));
  const int64_t depth = x.shape().dim(3);
  if (depth == 0) return Status::OK();
  const int64_t pixels = x.num_elements() / depth;
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    const T* in = x.data<T>();
    T* out = y->data<T>();
    ctx.ParallelFor(pixels, depth * (2 * p.radius + 4), [&](int64_t begin, int64_t end) {
      for (int64_t px = begin; px < end; ++px) {
        const T* row = in + px * depth;
        for (int64_t d = 0; d < depth; ++d) {
          const DepthWindow w(d, p.radius, depth);
          double sqr_sum = 0;
          for (int64_t k = w.first; k < w.last; ++k) sqr_sum += double(row[k]) * row[k];
          out[px * depth + d] = T(row[d] * std::pow(p.bias + p.alpha * sqr_sum, -p.beta));
        }
      }
    });
    return Status::OK();
  });
}

// With N_d = bias + alpha * sqr_sum_d and y_d = x_d * N_d^-beta:
//   dx_j = g_j * N_j^-beta - 2 * alpha * beta * x_j * sum_{d : |d - j| <= r} g_d * y_d / N_d.
Status LrnGradKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  LrnParams p;
  FS_RETURN_IF_ERROR(ParseLrnAttrs(op, ctx.attrs(), &p));
  const Tensor& g = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  FS_RETURN_IF_ERROR(CheckImage(op, "input_grads", g));
  FS_RETURN_IF_ERROR(CheckImage(op, "input_image", x));
  FS_RETURN_IF_ERROR(CheckImage(op, "output_image", y));
  if (g.shape() != x.shape() || y.shape() != x.shape()) {
    return errors::InvalidArgument(op, ": input_grads, input_image and output_image must have ",
                                   "the same shape, but have shapes ", g.shape().ToString(), ", ",
                                   x.shape().ToString(), " and ", y.shape().ToString());
  }
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
  const int64_t depth = x.shape().dim(3);
  if (depth == 0) return Status::OK();
  const int64_t pixels = x.num_elements() / depth;
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    ctx.ParallelFor(pixels, depth * (4 * p.radius + 8), [&](int64_t begin, int64_t end) {
      std::vector<double> norm(depth), g_y_over_norm(depth);
      for (int64_t px = begin; px < end; ++px) {
        const T* xr = x.data<T>() + px * depth;
        const T* yr = y.data<T>() + px * depth;
        const T* gr = g.data<T>() + px * depth;
        T* out = dx->data<T>() + px * depth;
        for (int64_t d = 0; d < depth; ++d) {
          const DepthWindow w(d, p.radius, depth);
          double sqr_sum = 0;
          for (int64_t k = w.first; k < w.last; ++k) sqr_sum += double(xr[k]) * xr[k];
          norm[d] = p.bias + p.alpha * sqr_sum;
          g_y_over_norm[d] = double(gr[d]) * yr[d] / norm[d];
        }
        for (int64_t j = 0; j < depth; ++j) {
          const DepthWindow w(j, p.radius, depth);
          double cross = 0;
          for (int64_t d = w.first; d < w.last; ++d) cross += g_y_over_norm[d];
          out[j] = T(gr[j] * std::pow(norm[j], -p.beta) - 2 * p.alpha * p.beta * xr[j] * cross);
        }
      }
    });
    return Status::OK();
  });
}

Status LrnShape(InferenceContext& ctx) {
  PartialShape x;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &x));
  ctx.set_output(0, x);
  return Status::OK();
}

Status LrnGradShape(InferenceContext& ctx) {
  PartialShape merged;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &merged));
  for (int i = 1; i < 3; ++i) {
    PartialShape other;
    FS_RETURN_IF_ERROR(ctx.WithRank(i, 4, &other));
    if (!merged.IsCompatibleWith(other)) {
      return errors::InvalidArgument(ctx.op_type(), ": input_grads, input_image and ",
                                     "output_image must have the same shape, but have shapes ",
                                     ctx.input(0).ToString(), ", ", ctx.input(1).ToString(),
                                     " and ", ctx.input(2).ToString());
    }
    FS_RETURN_IF_ERROR(merged.Merge(other, &merged));
  }
  ctx.set_output(0, merged);
  return Status::OK();
}

Status LrnGrad(GradientContext& ctx) {
  ctx.SetInputGrad(
      0, ctx.Op("LRNGrad", {ctx.output_grad(0), ctx.input(0), ctx.output(0)}, ctx.attrs()));
  return ctx.status();
}

OpBuilder& LrnAttrs(OpBuilder& b) {
  return b.TypeAttr("T", kFloatTypes, DType::kFloat32)
      .Attr("depth_radius", 5)
      .Attr("bias", 1.0f)
      .Attr("alpha", 1.0f)
      .Attr("beta", 0.5f);
}

FS_REGISTER_OP(LrnAttrs(OpBuilder("LRN").Input("input", "T").Output("output", "T"))
                   .Shape(LrnShape)
                   .Kernel("CPU", LrnKernel)
                   .Gradient(LrnGrad)
                   .Doc("Local response normalization over the depth (last) axis of a 4-D "
                        "tensor: input / (bias + alpha * sqr_sum) ** beta."));

FS_REGISTER_OP(LrnAttrs(OpBuilder("LRNGrad")
                            .Input("input_grads", "T")
                            .Input("input_image", "T")
                            .Input("output_image", "T")
                            .Output("output", "T"))
                   .Shape(LrnGradShape)
                   .Kernel("CPU", LrnGradKernel)
                   .NotDifferentiable()
                   .Doc("Gradient of LRN with respect to its input."));

}  // namespace
}  // namespace flowstone
