// Grayscale morphological dilation: Dilation2D and its gradients Dilation2DBackpropInput and
// Dilation2DBackpropFilter (tf.nn.dilation2d; tf.nn.erosion2d is built on it in Python).
//
//   output[b, y, x, c] = max over (i, j) of input[b, y * stride_rows + i * rate_rows - pad_top,
//                                               x * stride_cols + j * rate_cols - pad_left, c]
//                                          + filter[i, j, c]
//
// over the taps that land inside the input (padding never wins). The gradients send each
// output's gradient to the input position and the filter tap of its first maximum, in tap
// order, as TensorFlow does.
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

using conv::Window;

// The strides, rates and padding of a node, as 2-D window attrs.
Status ParseDilationAttrs(const std::string& op, const AttrMap& attrs, conv::WindowAttrs* out) {
  for (const char* name : {"strides", "rates"}) {
    const std::vector<int64_t> values = attrs.GetOr<std::vector<int64_t>>(name, {});
    if (values.size() != 4 || values[0] != 1 || values[3] != 1 || values[1] < 1 || values[2] < 1) {
      return errors::InvalidArgument(op, ": ", name, " must be [1, rows, cols, 1] with rows and ",
                                     "cols at least 1, but has ", values.size(), " entries");
    }
    for (int d = 0; d < 2; ++d) {
      (name[0] == 's' ? out->stride : out->dilation)[d] = values[1 + d];
    }
  }
  const std::string padding = attrs.GetOr<std::string>("padding", "");
  if (padding != "SAME" && padding != "VALID") {
    return errors::InvalidArgument("Value for attr 'padding' of \"", padding,
                                   "\" is not in the list of allowed values: \"SAME\", \"VALID\"");
  }
  out->padding = padding == "SAME" ? conv::Padding::kSame : conv::Padding::kValid;
  return Status::OK();
}

// A dilation with every size known.
struct Problem {
  int64_t batch = 0, depth = 0;
  Window rows, cols;
  int64_t filter_rows = 0, filter_cols = 0;
};

Status MakeProblem(const std::string& op, const conv::WindowAttrs& attrs, const Tensor& input,
                   const Tensor& filter, Problem* p) {
  if (input.rank() != 4) {
    return errors::InvalidArgument(op, ": input must be 4-dimensional, but has shape ",
                                   input.shape().ToString());
  }
  if (filter.rank() != 3) {
    return errors::InvalidArgument(op, ": filter must be 3-dimensional, but has shape ",
                                   filter.shape().ToString());
  }
  if (input.dim(3) != filter.dim(2)) {
    return errors::InvalidArgument(
        op, ": input and filter must have the same depth: ", input.dim(3), " vs ", filter.dim(2));
  }
  p->batch = input.dim(0);
  p->depth = input.dim(3);
  p->filter_rows = filter.dim(0);
  p->filter_cols = filter.dim(1);
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 0, input.dim(1), filter.dim(0), &p->rows));
  return conv::ComputeWindow(attrs, 1, input.dim(2), filter.dim(1), &p->cols);
}

// Visits every output position with the input offset and filter offset of its maximum (-1 when
// no tap lands inside the input).
template <typename T, typename Fn>
void ForEachMaximum(KernelContext& ctx, const Problem& p, const T* x, const T* f, Fn fn) {
  const int64_t in_w = p.cols.in, in_h = p.rows.in;
  const int64_t cost = p.filter_rows * p.filter_cols * p.depth * p.cols.out;
  ctx.ParallelFor(p.batch * p.rows.out, cost, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / p.rows.out, oy = row % p.rows.out;
      for (int64_t ox = 0; ox < p.cols.out; ++ox) {
        for (int64_t c = 0; c < p.depth; ++c) {
          T best = std::numeric_limits<T>::lowest();
          int64_t best_in = -1, best_tap = -1;
          for (int64_t i = 0; i < p.filter_rows; ++i) {
            const int64_t iy = oy * p.rows.stride + i * p.rows.dilation - p.rows.pad_before;
            if (iy < 0 || iy >= in_h) continue;
            for (int64_t j = 0; j < p.filter_cols; ++j) {
              const int64_t ix = ox * p.cols.stride + j * p.cols.dilation - p.cols.pad_before;
              if (ix < 0 || ix >= in_w) continue;
              const int64_t in_index = ((b * in_h + iy) * in_w + ix) * p.depth + c;
              const int64_t tap = (i * p.filter_cols + j) * p.depth + c;
              const T v = x[in_index] + f[tap];
              if (best_in < 0 || v > best) {
                best = v;
                best_in = in_index;
                best_tap = tap;
              }
            }
          }
          fn(((b * p.rows.out + oy) * p.cols.out + ox) * p.depth + c, best, best_in, best_tap);
        }
      }
    }
  });
}

enum class Pass { kForward, kInput, kFilter };

template <Pass pass>
Status DilationKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  conv::WindowAttrs attrs;
  FS_RETURN_IF_ERROR(ParseDilationAttrs(op, ctx.attrs(), &attrs));
  const Tensor& x = ctx.input(0);
  const Tensor& f = ctx.input(1);
  Problem p;
  FS_RETURN_IF_ERROR(MakeProblem(op, attrs, x, f, &p));
  const TensorShape out_shape({p.batch, p.rows.out, p.cols.out, p.depth});
  if (pass != Pass::kForward && ctx.input(2).shape() != out_shape) {
    return errors::InvalidArgument(op, ": out_backprop must have the output's shape ",
                                   out_shape.ToString(), ", but has shape ",
                                   ctx.input(2).shape().ToString());
  }
  Tensor* out;
  const TensorShape& shape = pass == Pass::kForward ? out_shape
                             : pass == Pass::kInput ? x.shape()
                                                    : f.shape();
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  return DispatchDType<float, double, int32_t, int64_t>(
      x.dtype(), op.c_str(), [&]<typename T>() -> Status {
        T* o = out->data<T>();
        if (pass == Pass::kForward) {
          ForEachMaximum<T>(ctx, p, x.data<T>(), f.data<T>(),
                            [&](int64_t k, T best, int64_t, int64_t) { o[k] = best; });
          return Status::OK();
        }
        // Gradients from many outputs meet at one place: find the maxima in parallel, then add
        // the gradients in output order, so the sums do not depend on the threads.
        std::vector<int64_t> where(out_shape.num_elements());
        ForEachMaximum<T>(ctx, p, x.data<T>(), f.data<T>(),
                          [&](int64_t k, T, int64_t in_index, int64_t tap) {
                            where[k] = pass == Pass::kInput ? in_index : tap;
                          });
        std::fill(o, o + out->num_elements(), T(0));
        const T* dy = ctx.input(2).data<T>();
        for (size_t k = 0; k < where.size(); ++k) {
          if (where[k] >= 0) o[where[k]] += dy[k];
        }
        return Status::OK();
      });
}

Status DilationShape(InferenceContext& ctx) {
  PartialShape input, filter;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 3, &filter));
  conv::WindowAttrs attrs;
  FS_RETURN_IF_ERROR(ParseDilationAttrs(ctx.op_type(), ctx.attrs(), &attrs));
  int64_t depth = input.known_rank() ? input.dim(3) : -1;
  if (filter.known_rank()) FS_RETURN_IF_ERROR(ctx.MergeDim(depth, filter.dim(2), &depth));
  const int64_t in_h = input.known_rank() ? input.dim(1) : -1;
  const int64_t in_w = input.known_rank() ? input.dim(2) : -1;
  int64_t out_h, out_w;
  FS_RETURN_IF_ERROR(
      conv::WindowOutputSize(attrs, 0, in_h, filter.known_rank() ? filter.dim(0) : -1, &out_h));
  FS_RETURN_IF_ERROR(
      conv::WindowOutputSize(attrs, 1, in_w, filter.known_rank() ? filter.dim(1) : -1, &out_w));
  const int64_t batch = input.known_rank() ? input.dim(0) : -1;
  if (ctx.op_type() == "Dilation2D") {
    ctx.set_output(0, PartialShape({batch, out_h, out_w, depth}));
  } else {
    ctx.set_output(0, ctx.op_type() == "Dilation2DBackpropInput" ? input : filter);
  }
  return Status::OK();
}

Status DilationGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0), f = ctx.input(1), dy = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Dilation2DBackpropInput", {x, f, dy}, ctx.attrs()));
  ctx.SetInputGrad(1, ctx.Op("Dilation2DBackpropFilter", {x, f, dy}, ctx.attrs()));
  return ctx.status();
}

OpBuilder& DilationAttrs(OpBuilder&& b) {
  return b.Input("input", "T")
      .Input("filter", "T")
      .TypeAttr("T", kRealTypes)
      .RequiredAttr("strides", AttrType::kIntList)
      .RequiredAttr("rates", AttrType::kIntList)
      .RequiredAttr("padding", AttrType::kString)
      .Shape(DilationShape);
}

FS_REGISTER_OP(DilationAttrs(OpBuilder("Dilation2D"))
                   .Output("output", "T")
                   .Kernel("CPU", DilationKernel<Pass::kForward>)
                   .Gradient(DilationGrad)
                   .Doc("Grayscale morphological dilation of a 4-D NHWC input by a 3-D filter."));

FS_REGISTER_OP(DilationAttrs(OpBuilder("Dilation2DBackpropInput"))
                   .Input("out_backprop", "T")
                   .Output("in_backprop", "T")
                   .Kernel("CPU", DilationKernel<Pass::kInput>)
                   .NotDifferentiable()
                   .Doc("Gradient of Dilation2D with respect to its input."));

FS_REGISTER_OP(DilationAttrs(OpBuilder("Dilation2DBackpropFilter"))
                   .Input("out_backprop", "T")
                   .Output("filter_backprop", "T")
                   .Kernel("CPU", DilationKernel<Pass::kFilter>)
                   .NotDifferentiable()
                   .Doc("Gradient of Dilation2D with respect to its filter."));

}  // namespace
}  // namespace flowstone
