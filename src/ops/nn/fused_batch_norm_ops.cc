// Fused batch normalization: FusedBatchNormV3 (training and inference) and its gradient
// FusedBatchNormGradV3, over the channel axis of NHWC/NCHW (4-D) or NDHWC/NCDHW (5-D) tensors.
//
// Training normalizes with the batch's mean and biased variance and returns the unbiased
// variance (for the moving averages), blended with the given mean and variance when
// exponential_avg_factor != 1; reserve_space_1/2 keep the batch's mean and biased variance for
// the gradient. Inference normalizes with the given mean and variance. Sums are taken in double,
// two passes (mean, then squared deviations), in a fixed order, so results do not depend on
// the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Where the channels are: a tensor viewed as [outer, channels, inner].
struct ChannelLayout {
  int rank = 4;
  bool channels_first = false;
  int channel_axis() const { return channels_first ? 1 : rank - 1; }
};

Status ParseFormat(const std::string& op, const AttrMap& attrs, ChannelLayout* out) {
  const std::string format = attrs.GetOr<std::string>("data_format", "NHWC");
  if (format == "NHWC" || format == "NCHW") {
    out->rank = 4;
  } else if (format == "NDHWC" || format == "NCDHW") {
    out->rank = 5;
  } else {
    return errors::InvalidArgument(op, ": Value for attr 'data_format' of \"", format,
                                   "\" is not in the list of allowed values: \"NHWC\", \"NCHW\", "
                                   "\"NDHWC\", \"NCDHW\"");
  }
  out->channels_first = format[1] == 'C';
  return Status::OK();
}

// The sizes of one problem, with every size known.
struct Extent {
  int64_t outer = 0, channels = 0, inner = 0;
  int64_t per_channel() const { return outer * inner; }
  int64_t index(int64_t o, int64_t c, int64_t i) const { return (o * channels + c) * inner + i; }
};

Status ExtentOf(const std::string& op, const char* name, const ChannelLayout& layout,
                const Tensor& x, Extent* e) {
  if (x.shape().rank() != layout.rank) {
    return errors::InvalidArgument(op, ": ", name, " must be ", layout.rank,
                                   "-dimensional for its data_format, but has shape ",
                                   x.shape().ToString());
  }
  const int axis = layout.channel_axis();
  e->channels = x.shape().dim(axis);
  e->outer = 1;
  e->inner = 1;
  for (int d = 0; d < layout.rank; ++d) {
    if (d < axis) e->outer *= x.shape().dim(d);
    if (d > axis) e->inner *= x.shape().dim(d);
  }
  return Status::OK();
}

Status CheckChannelVector(const std::string& op, const char* name, const Tensor& v,
                          int64_t channels, const char* when = "") {
  if (v.shape().rank() != 1 || v.num_elements() != channels) {
    return errors::InvalidArgument(op, ": ", when, name,
                                   " must have the same number of elements as the channels of x, "
                                   "got ",
                                   v.num_elements(), " and ", channels, " (", name, " has shape ",
                                   v.shape().ToString(), ")");
  }
  return Status::OK();
}

// Per-channel sums of f(k, c) over every element k of channel c. The outer range is cut into
// blocks fixed by the shape (not the thread count); each block accumulates its partial sums
// walking the tensor in memory order, and the partial sums are added in block order, so the
// result does not depend on the threads.
template <typename F>
void ChannelSums(KernelContext& ctx, const Extent& e, F f, std::vector<double>* sums) {
  constexpr int64_t kMaxBlocks = 64;
  const int64_t blocks = std::max<int64_t>(std::min(e.outer, kMaxBlocks), 1);
  std::vector<double> partial(blocks * e.channels, 0.0);
  const int64_t block_cost = (e.outer / blocks + 1) * e.channels * e.inner * 2;
  ctx.ParallelFor(blocks, block_cost, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      double* acc = partial.data() + block * e.channels;
      for (int64_t o = e.outer * block / blocks; o < e.outer * (block + 1) / blocks; ++o) {
        const int64_t row = o * e.channels * e.inner;
        if (e.inner == 1) {  // channels last: one element per channel per row
          for (int64_t c = 0; c < e.channels; ++c) acc[c] += f(row + c, c);
          continue;
        }
        for (int64_t c = 0; c < e.channels; ++c) {
          double s = 0;
          for (int64_t k = row + c * e.inner; k < row + (c + 1) * e.inner; ++k) s += f(k, c);
          acc[c] += s;
        }
      }
    }
  });
  sums->assign(e.channels, 0.0);
  for (int64_t block = 0; block < blocks; ++block) {
    for (int64_t c = 0; c < e.channels; ++c) (*sums)[c] += partial[block * e.channels + c];
  }
}

// Calls fn(k, c) for every element k (of channel c), in memory order, in parallel over rows.
template <typename Fn>
void ForEachElement(KernelContext& ctx, const Extent& e, int64_t cost_per_element, Fn fn) {
  ctx.ParallelFor(e.outer, e.channels * e.inner * cost_per_element,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t o = begin; o < end; ++o) {
                      int64_t k = o * e.channels * e.inner;
                      if (e.inner == 1) {  // channels last: a loop the compiler vectorizes
                        for (int64_t c = 0; c < e.channels; ++c) fn(k + c, c);
                        continue;
                      }
                      for (int64_t c = 0; c < e.channels; ++c) {
                        for (int64_t i = 0; i < e.inner; ++i) fn(k++, c);
                      }
                    }
                  });
}

template <typename T, typename U>
Status BatchNormForward(KernelContext& ctx, const Extent& e, bool training, double epsilon,
                        double avg_factor) {
  const T* x = ctx.input(0).data<T>();
  const U* scale = ctx.input(1).data<U>();
  const U* offset = ctx.input(2).data<U>();
  const U* mean_in = ctx.input(3).data<U>();
  const U* var_in = ctx.input(4).data<U>();
  Tensor* outs[6];
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(0).shape(), &outs[0]));
  for (int i = 1; i < 5; ++i) {
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(i, TensorShape{e.channels}, &outs[i]));
  }
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(5, TensorShape{0}, &outs[5]));

  std::vector<double> mean(e.channels), var(e.channels);
  const int64_t n = e.per_channel();
  if (training) {
    ChannelSums(ctx, e, [&](int64_t k, int64_t) { return double(x[k]); }, &mean);
    for (double& m : mean) m = n > 0 ? m / n : std::numeric_limits<double>::quiet_NaN();
    ChannelSums(
        ctx, e,
        [&](int64_t k, int64_t c) {
          const double d = x[k] - mean[c];
          return d * d;
        },
        &var);
    for (double& v : var) v = n > 0 ? v / n : std::numeric_limits<double>::quiet_NaN();
  } else {
    for (int64_t c = 0; c < e.channels; ++c) {
      mean[c] = mean_in[c];
      var[c] = var_in[c];
    }
  }
  // y = x * gain + shift per channel, with the coefficients computed in double.
  std::vector<T> gain(e.channels), shift(e.channels);
  for (int64_t c = 0; c < e.channels; ++c) {
    const double g = scale[c] / std::sqrt(var[c] + epsilon);
    gain[c] = T(g);
    shift[c] = T(offset[c] - mean[c] * g);
  }
  T* y = outs[0]->data<T>();
  ForEachElement(ctx, e, 2, [&](int64_t k, int64_t c) { y[k] = x[k] * gain[c] + shift[c]; });

  U* batch_mean = outs[1]->data<U>();
  U* batch_var = outs[2]->data<U>();
  U* saved_mean = outs[3]->data<U>();
  U* saved_var = outs[4]->data<U>();
  // The unbiased variance for the moving averages; one element has no spread to correct.
  const double unbias = n > 1 ? double(n) / double(n - 1) : 1.0;
  for (int64_t c = 0; c < e.channels; ++c) {
    saved_mean[c] = U(mean[c]);
    saved_var[c] = U(var[c]);
    if (!training) {
      batch_mean[c] = U(mean[c]);
      batch_var[c] = U(var[c]);
    } else if (avg_factor == 1.0) {
      batch_mean[c] = U(mean[c]);
      batch_var[c] = U(var[c] * unbias);
    } else {
      batch_mean[c] = U((1 - avg_factor) * mean_in[c] + avg_factor * mean[c]);
      batch_var[c] = U((1 - avg_factor) * var_in[c] + avg_factor * var[c] * unbias);
    }
  }
  return Status::OK();
}

Status FusedBatchNormKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  ChannelLayout layout;
  FS_RETURN_IF_ERROR(ParseFormat(op, ctx.attrs(), &layout));
  const bool training = ctx.attrs().GetOr<bool>("is_training", true);
  const double epsilon = ctx.attrs().GetOr<double>("epsilon", 1e-4);
  const double avg_factor = ctx.attrs().GetOr<double>("exponential_avg_factor", 1.0);
  const Tensor& x = ctx.input(0);
  Extent e;
  FS_RETURN_IF_ERROR(ExtentOf(op, "x", layout, x, &e));
  FS_RETURN_IF_ERROR(CheckChannelVector(op, "scale", ctx.input(1), e.channels));
  FS_RETURN_IF_ERROR(CheckChannelVector(op, "offset", ctx.input(2), e.channels));
  if (!training || avg_factor != 1.0) {
    const char* when = training ? "When exponential_avg_factor != 1, " : "When is_training=false, ";
    FS_RETURN_IF_ERROR(CheckChannelVector(op, "mean", ctx.input(3), e.channels, when));
    FS_RETURN_IF_ERROR(CheckChannelVector(op, "variance", ctx.input(4), e.channels, when));
  }
  const DType u = ctx.input(1).dtype();
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    return DispatchDType<float, double>(u, op.c_str(), [&]<typename U>() -> Status {
      return BatchNormForward<T, U>(ctx, e, training, epsilon, avg_factor);
    });
  });
}

// With xhat = (x - mean) / sqrt(var + eps), per channel:
//   offset_backprop = sum(dy), scale_backprop = sum(dy * xhat),
//   training:  dx = scale / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat))
//   inference: dx = scale / sqrt(var + eps) * dy   (mean and var are constants)
// Both are dx = a * dy + b * x + c per channel, with a, b, c computed in double.
template <typename T, typename U>
Status BatchNormBackward(KernelContext& ctx, const Extent& e, bool training, double epsilon) {
  const T* dy = ctx.input(0).data<T>();
  const T* x = ctx.input(1).data<T>();
  const U* scale = ctx.input(2).data<U>();
  const U* mean = ctx.input(3).data<U>();
  const U* var = ctx.input(4).data<U>();
  Tensor *dx, *dscale, *doffset, *r4, *r5;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(1).shape(), &dx));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{e.channels}, &dscale));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{e.channels}, &doffset));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(3, TensorShape{0}, &r4));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(4, TensorShape{0}, &r5));
  std::vector<double> rstd(e.channels);
  for (int64_t c = 0; c < e.channels; ++c) rstd[c] = 1.0 / std::sqrt(double(var[c]) + epsilon);
  std::vector<double> sum_dy, sum_dy_xhat;
  ChannelSums(ctx, e, [&](int64_t k, int64_t) { return double(dy[k]); }, &sum_dy);
  ChannelSums(
      ctx, e, [&](int64_t k, int64_t c) { return double(dy[k]) * (double(x[k]) - mean[c]); },
      &sum_dy_xhat);
  for (int64_t c = 0; c < e.channels; ++c) sum_dy_xhat[c] *= rstd[c];
  const double n = double(e.per_channel());
  std::vector<T> a(e.channels), b(e.channels), shift(e.channels);
  for (int64_t c = 0; c < e.channels; ++c) {
    const double gain = scale[c] * rstd[c];
    const double slope = training ? gain * rstd[c] * sum_dy_xhat[c] / n : 0.0;
    a[c] = T(gain);
    b[c] = T(-slope);
    shift[c] = T(training ? slope * mean[c] - gain * sum_dy[c] / n : 0.0);
  }
  T* out = dx->data<T>();
  ForEachElement(ctx, e, 3,
                 [&](int64_t k, int64_t c) { out[k] = dy[k] * a[c] + x[k] * b[c] + shift[c]; });
  for (int64_t c = 0; c < e.channels; ++c) {
    dscale->data<U>()[c] = U(sum_dy_xhat[c]);
    doffset->data<U>()[c] = U(sum_dy[c]);
  }
  return Status::OK();
}

Status FusedBatchNormGradKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  ChannelLayout layout;
  FS_RETURN_IF_ERROR(ParseFormat(op, ctx.attrs(), &layout));
  const bool training = ctx.attrs().GetOr<bool>("is_training", true);
  const double epsilon = ctx.attrs().GetOr<double>("epsilon", 1e-4);
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  Extent e;
  FS_RETURN_IF_ERROR(ExtentOf(op, "x", layout, x, &e));
  if (dy.shape() != x.shape()) {
    return errors::InvalidArgument(op, ": x and y_backprop must have same shape, but x has shape ",
                                   x.shape().ToString(), " and y_backprop has shape ",
                                   dy.shape().ToString());
  }
  FS_RETURN_IF_ERROR(CheckChannelVector(op, "scale", ctx.input(2), e.channels));
  FS_RETURN_IF_ERROR(CheckChannelVector(op, "reserve_space_1", ctx.input(3), e.channels));
  FS_RETURN_IF_ERROR(CheckChannelVector(op, "reserve_space_2", ctx.input(4), e.channels));
  const DType u = ctx.input(2).dtype();
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    return DispatchDType<float, double>(u, op.c_str(), [&]<typename U>() -> Status {
      return BatchNormBackward<T, U>(ctx, e, training, epsilon);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Shape functions: x keeps its shape; the channel vectors must agree with x's channels.

Status MergeChannels(InferenceContext& ctx, const ChannelLayout& layout, int x_input,
                     const std::vector<int>& vector_inputs, PartialShape* x, int64_t* channels) {
  FS_RETURN_IF_ERROR(ctx.WithRank(x_input, layout.rank, x));
  *channels = x->known_rank() ? x->dim(layout.channel_axis()) : -1;
  for (int i : vector_inputs) {
    PartialShape v;
    FS_RETURN_IF_ERROR(ctx.WithRank(i, 1, &v));
    if (v.known_rank()) FS_RETURN_IF_ERROR(ctx.MergeDim(*channels, v.dim(0), channels));
  }
  return Status::OK();
}

// x's shape with its channel dimension set to what the channel vectors say.
void WithChannels(const ChannelLayout& layout, int64_t channels, PartialShape* x) {
  if (!x->known_rank()) return;
  Dims dims = x->dims();
  dims[layout.channel_axis()] = channels;
  *x = PartialShape(dims);
}

Status FusedBatchNormShape(InferenceContext& ctx) {
  ChannelLayout layout;
  FS_RETURN_IF_ERROR(ParseFormat(ctx.op_type(), ctx.attrs(), &layout));
  const bool training = ctx.attrs().GetOr<bool>("is_training", true);
  const double avg_factor = ctx.attrs().GetOr<double>("exponential_avg_factor", 1.0);
  std::vector<int> vectors = {1, 2};
  if (!training || avg_factor != 1.0) vectors = {1, 2, 3, 4};
  PartialShape x;
  int64_t channels;
  FS_RETURN_IF_ERROR(MergeChannels(ctx, layout, 0, vectors, &x, &channels));
  WithChannels(layout, channels, &x);
  ctx.set_output(0, x);
  for (int i = 1; i < 5; ++i) ctx.set_output(i, PartialShape({channels}));
  ctx.set_output(5, PartialShape({0}));
  return Status::OK();
}

Status FusedBatchNormGradShape(InferenceContext& ctx) {
  ChannelLayout layout;
  FS_RETURN_IF_ERROR(ParseFormat(ctx.op_type(), ctx.attrs(), &layout));
  PartialShape x, dy;
  int64_t channels;
  FS_RETURN_IF_ERROR(MergeChannels(ctx, layout, 1, {2, 3, 4}, &x, &channels));
  FS_RETURN_IF_ERROR(ctx.WithRank(0, layout.rank, &dy));
  if (!x.IsCompatibleWith(dy)) {
    return errors::InvalidArgument(ctx.op_type(), ": x and y_backprop must have same shape, ",
                                   "but x has shape ", x.ToString(), " and y_backprop has shape ",
                                   dy.ToString());
  }
  FS_RETURN_IF_ERROR(x.Merge(dy, &x));
  WithChannels(layout, channels, &x);
  ctx.set_output(0, x);
  ctx.set_output(1, PartialShape({channels}));
  ctx.set_output(2, PartialShape({channels}));
  ctx.set_output(3, PartialShape({0}));
  ctx.set_output(4, PartialShape({0}));
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradient, as TensorFlow defines it: only y's gradient flows back, to x, scale and offset.
// Training differentiates through the batch statistics (saved in reserve_space_1/2); inference
// treats the given mean and variance as constants and gives them no gradient.
Status FusedBatchNormGrad(GradientContext& ctx) {
  const bool training = ctx.attrs().GetOr<bool>("is_training", true);
  AttrMap attrs;
  for (const char* name : {"T", "U", "epsilon", "data_format", "is_training"}) {
    if (const AttrValue* v = ctx.attrs().Find(name)) attrs.Set(name, *v);
  }
  const Endpoint mean = training ? ctx.output(3) : ctx.input(3);
  const Endpoint var = training ? ctx.output(4) : ctx.input(4);
  Node* grad = ctx.AddNode(
      "FusedBatchNormGradV3",
      {ctx.output_grad(0), ctx.input(0), ctx.input(1), mean, var, ctx.output(5)}, attrs);
  if (grad == nullptr) return ctx.status();
  for (int i = 0; i < 3; ++i) ctx.SetInputGrad(i, Endpoint{grad, i});
  return ctx.status();
}

OpBuilder& BatchNormAttrs(OpBuilder& b) {
  return b.TypeAttr("T", kFloatTypes)
      .TypeAttr("U", kFloatTypes)
      .Attr("epsilon", 1e-4f)
      .Attr("data_format", "NHWC")
      .Attr("is_training", true);
}

FS_REGISTER_OP(BatchNormAttrs(OpBuilder("FusedBatchNormV3")
                                  .Input("x", "T")
                                  .Input("scale", "U")
                                  .Input("offset", "U")
                                  .Input("mean", "U")
                                  .Input("variance", "U")
                                  .Output("y", "T")
                                  .Output("batch_mean", "U")
                                  .Output("batch_variance", "U")
                                  .Output("reserve_space_1", "U")
                                  .Output("reserve_space_2", "U")
                                  .Output("reserve_space_3", "U"))
                   .Attr("exponential_avg_factor", 1.0f)
                   .Shape(FusedBatchNormShape)
                   .Kernel("CPU", FusedBatchNormKernel)
                   .Gradient(FusedBatchNormGrad)
                   .Doc("Batch normalization over the channel axis, with the batch's statistics "
                        "(is_training) or the given mean and variance."));

FS_REGISTER_OP(BatchNormAttrs(OpBuilder("FusedBatchNormGradV3")
                                  .Input("y_backprop", "T")
                                  .Input("x", "T")
                                  .Input("scale", "U")
                                  .Input("reserve_space_1", "U")
                                  .Input("reserve_space_2", "U")
                                  .Input("reserve_space_3", "U")
                                  .Output("x_backprop", "T")
                                  .Output("scale_backprop", "U")
                                  .Output("offset_backprop", "U")
                                  .Output("reserve_space_4", "U")
                                  .Output("reserve_space_5", "U"))
                   .Shape(FusedBatchNormGradShape)
                   .Kernel("CPU", FusedBatchNormGradKernel)
                   .NotDifferentiable()
                   .Doc("Gradient of FusedBatchNormV3 with respect to x, scale and offset."));

}  // namespace
}  // namespace flowstone
