// MaxPoolWithArgmax (2-D max pooling of an NHWC tensor that also returns where each maximum
// was) and its gradient MaxPoolGradWithArgmax, which scatters gradients to those positions.
//
// The argmax of an output is the flattened index of its window's first maximum (in row, column
// order): ((b * height + y) * width + x) * channels + c with include_batch_in_index, else
// (y * width + x) * channels + c.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/conv_util.h"

namespace flowstone {
namespace {

using conv::Image;
using conv::Window;
using conv::WindowAttrs;

struct Problem {
  Image in, out;
  Window rows, cols;
};

Status MakeProblem(const WindowAttrs& attrs, const Image& in, Problem* p) {
  p->in = in;
  p->out.n = in.n;
  p->out.c = in.c;
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 0, in.h, attrs.ksize[0], &p->rows));
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 1, in.w, attrs.ksize[1], &p->cols));
  p->out.h = p->rows.out;
  p->out.w = p->cols.out;
  return Status::OK();
}

Status CheckRank4(const std::string& op, const char* name, const Tensor& t) {
  if (t.rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional, but got shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

template <typename T>
T Lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                              : std::numeric_limits<T>::lowest();
}

template <typename T, typename Index>
void PoolWithArgmax(KernelContext& ctx, const Problem& p, bool batch_in_index, const T* x, T* y,
                    Index* argmax) {
  const int64_t image = p.in.h * p.in.w * p.in.c;
  const int64_t cost = p.rows.kernel * p.cols.kernel * p.in.c * p.out.w;
  ctx.ParallelFor(p.out.n * p.out.h, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> best(p.in.c);
    std::vector<int64_t> where(p.in.c);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / p.out.h, oy = row % p.out.h;
      const int64_t y0 = oy * p.rows.stride - p.rows.pad_before;
      for (int64_t ox = 0; ox < p.out.w; ++ox) {
        const int64_t x0 = ox * p.cols.stride - p.cols.pad_before;
        std::fill(best.begin(), best.end(), Lowest<T>());
        std::fill(where.begin(), where.end(), -1);
        for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y0 + p.rows.kernel, p.in.h);
             ++iy) {
          for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x0 + p.cols.kernel, p.in.w);
               ++ix) {
            const int64_t base = (iy * p.in.w + ix) * p.in.c;
            for (int64_t c = 0; c < p.in.c; ++c) {
              const T v = x[b * image + base + c];
              if (where[c] < 0 || v > best[c]) {
                best[c] = v;
                where[c] = base + c;
              }
            }
          }
        }
        const int64_t out_base = ((b * p.out.h + oy) * p.out.w + ox) * p.out.c;
        for (int64_t c = 0; c < p.in.c; ++c) {
          y[out_base + c] = best[c];
          argmax[out_base + c] = static_cast<Index>(where[c] + (batch_in_index ? b * image : 0));
        }
      }
    }
  });
}

class MaxPoolWithArgmaxKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override {
    batch_in_index_ = node().attrs().GetOr<bool>("include_batch_in_index", false);
    return conv::ParsePoolAttrs(node().attrs(), &attrs_);
  }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& x = ctx.input(0);
    FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
    Problem p;
    Status s = MakeProblem(attrs_, conv::ImageOf(x.shape().dims(), conv::DataFormat::kNHWC), &p);
    if (!s.ok()) s.Append(StrCat(" (input shape ", x.shape().ToString(), ")"));
    FS_RETURN_IF_ERROR(s);
    const TensorShape out_shape(conv::DimsOf(p.out, conv::DataFormat::kNHWC));
    Tensor *y, *argmax;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &y));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, out_shape, &argmax));
    if (y->num_elements() == 0) return Status::OK();
    return DispatchDType<float, double, int32_t, int64_t>(
        x.dtype(), op.c_str(), [&]<typename T>() -> Status {
          if (argmax->dtype() == DType::kInt32) {
            PoolWithArgmax<T, int32_t>(ctx, p, batch_in_index_, x.data<T>(), y->data<T>(),
                                       argmax->data<int32_t>());
          } else {
            PoolWithArgmax<T, int64_t>(ctx, p, batch_in_index_, x.data<T>(), y->data<T>(),
                                       argmax->data<int64_t>());
          }
          return Status::OK();
        });
  }

 private:
  WindowAttrs attrs_;
  bool batch_in_index_ = false;
};

// dx = zeros like input, then dx[argmax[k]] += grad[k] for every output k (in order, so that
// windows sharing a maximum sum their gradients deterministically).
Status MaxPoolGradWithArgmaxKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const bool batch_in_index = ctx.attrs().GetOr<bool>("include_batch_in_index", false);
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), &attrs));
  const Tensor& x = ctx.input(0);
  const Tensor& grad = ctx.input(1);
  const Tensor& argmax = ctx.input(2);
  FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
  Problem p;
  FS_RETURN_IF_ERROR(
      MakeProblem(attrs, conv::ImageOf(x.shape().dims(), conv::DataFormat::kNHWC), &p));
  const TensorShape out_shape(conv::DimsOf(p.out, conv::DataFormat::kNHWC));
  if (grad.shape() != out_shape || argmax.shape() != out_shape) {
    return errors::InvalidArgument(op, ": grad and argmax must have the pooled shape ",
                                   out_shape.ToString(), ", but have shapes ",
                                   grad.shape().ToString(), " and ", argmax.shape().ToString());
  }
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
  std::memset(dx->raw_data(), 0, dx->bytes());
  const int64_t total = x.num_elements();
  const int64_t per_image = p.out.n > 0 ? grad.num_elements() / p.out.n : 0;
  const int64_t image = p.in.h * p.in.w * p.in.c;
  return DispatchDType<float, double, int32_t, int64_t>(
      x.dtype(), op.c_str(), [&]<typename T>() -> Status {
        const T* g = grad.data<T>();
        T* out = dx->data<T>();
        for (int64_t k = 0; k < grad.num_elements(); ++k) {
          int64_t index = argmax.ElementAsInt64(k);
          if (!batch_in_index) index += (k / per_image) * image;
          if (index < 0 || index >= total) {
            return errors::InvalidArgument(op, ": Invalid argmax index ", argmax.ElementAsInt64(k),
                                           " at position ", k, ": it must be in [0, ",
                                           batch_in_index ? total : image, ")");
          }
          out[index] += g[k];
        }
        return Status::OK();
      });
}

Status PooledShape(InferenceContext& ctx, PartialShape* out) {
  PartialShape input;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), &attrs));
  Image in = conv::ImageOf(input.dims(), conv::DataFormat::kNHWC);
  Image pooled = in;
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(attrs, 0, in.h, attrs.ksize[0], &pooled.h));
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(attrs, 1, in.w, attrs.ksize[1], &pooled.w));
  *out = PartialShape(conv::DimsOf(pooled, conv::DataFormat::kNHWC));
  return Status::OK();
}

Status MaxPoolWithArgmaxShape(InferenceContext& ctx) {
  PartialShape pooled;
  FS_RETURN_IF_ERROR(PooledShape(ctx, &pooled));
  ctx.set_output(0, pooled);
  ctx.set_output(1, pooled);
  return Status::OK();
}

Status MaxPoolGradWithArgmaxShape(InferenceContext& ctx) {
  PartialShape pooled, grad, argmax;
  FS_RETURN_IF_ERROR(PooledShape(ctx, &pooled));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &grad));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 4, &argmax));
  if (!pooled.IsCompatibleWith(grad) || !pooled.IsCompatibleWith(argmax)) {
    return errors::InvalidArgument(ctx.op_type(), ": grad and argmax must have the pooled shape ",
                                   pooled.ToString(), ", but have shapes ", grad.ToString(),
                                   " and ", argmax.ToString());
  }
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status MaxPoolWithArgmaxGrad(GradientContext& ctx) {
  AttrMap attrs;
  for (const char* name : {"ksize", "strides", "padding", "include_batch_in_index"}) {
    if (const AttrValue* v = ctx.attrs().Find(name)) attrs.Set(name, *v);
  }
  ctx.SetInputGrad(
      0, ctx.Op("MaxPoolGradWithArgmax", {ctx.input(0), ctx.output_grad(0), ctx.output(1)}, attrs));
  return ctx.status();
}

const std::vector<DType> kPoolTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                       DType::kInt64};

OpBuilder& ArgmaxAttrs(OpBuilder& b) {
  return b.RequiredAttr("ksize", AttrType::kIntList)
      .RequiredAttr("strides", AttrType::kIntList)
      .TypeAttr("Targmax", {DType::kInt32, DType::kInt64}, DType::kInt64)
      .RequiredAttr("padding", AttrType::kString)
      .Attr("include_batch_in_index", false)
      .TypeAttr("T", kPoolTypes);
}

FS_REGISTER_OP(ArgmaxAttrs(OpBuilder("MaxPoolWithArgmax")
                               .Input("input", "T")
                               .Output("output", "T")
                               .Output("argmax", "Targmax"))
                   .Shape(MaxPoolWithArgmaxShape)
                   .KernelClass<MaxPoolWithArgmaxKernel>("CPU")
                   .Gradient(MaxPoolWithArgmaxGrad)
                   .Doc("Max pooling of an NHWC tensor, with the flattened index of each "
                        "maximum."));

FS_REGISTER_OP(ArgmaxAttrs(OpBuilder("MaxPoolGradWithArgmax")
                               .Input("input", "T")
                               .Input("grad", "T")
                               .Input("argmax", "Targmax")
                               .Output("output", "T"))
                   .Shape(MaxPoolGradWithArgmaxShape)
                   .Kernel("CPU", MaxPoolGradWithArgmaxKernel)
                   .NotDifferentiable()
                   .Doc("Gradient of MaxPoolWithArgmax: grad scattered to the argmax "
                        "positions."));

}  // namespace
}  // namespace flowstone
