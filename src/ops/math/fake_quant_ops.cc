// Fake quantization (quantization-aware training): FakeQuantWithMinMaxArgs (range in attrs),
// FakeQuantWithMinMaxVars (range in scalar inputs) and FakeQuantWithMinMaxVarsPerChannel (one
// range per channel of the last dimension), and their gradient ops, which pass the gradient
// through inside the quantized range (straight-through estimator) and, for the Vars forms, sum
// the rest into the gradients of min and max.
//
// The range is first nudged so that 0 is exactly representable, as TensorFlow does: with
// levels quant_min..quant_max (0 or 1 .. 2^num_bits - 1), scale = (max - min) / (quant_max -
// quant_min) and the zero point quant_min - min / scale rounded and clamped to the levels; the
// nudged range is (quant_min - zero_point) * scale .. (quant_max - zero_point) * scale. Values
// are clamped to it and rounded to the nearest level. TensorFlow computes in float32 and so do
// these kernels (the ops are float32 only).
#include <cmath>
#include <cstdint>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

struct Nudged {
  float min;
  float max;
  float scale;
};

Status CheckRange(const char* op, float min, float max, int64_t num_bits) {
  if (num_bits < 2 || num_bits > 16) {
    return errors::InvalidArgument(op,
                                   ": num_bits is out of range, expected between 2 and 16, "
                                   "was: ",
                                   num_bits);
  }
  if (!(min < max)) {
    return errors::InvalidArgument(op, ": min has to be smaller than max, was: min = ", min,
                                   ", max = ", max);
  }
  return Status::OK();
}

Nudged Nudge(float min, float max, int64_t num_bits, bool narrow_range) {
  const float quant_min = narrow_range ? 1.0f : 0.0f;
  const float quant_max = static_cast<float>((int64_t{1} << num_bits) - 1);
  const float scale = (max - min) / (quant_max - quant_min);
  const float zero_point_from_min = quant_min - min / scale;
  float zero_point;
  if (zero_point_from_min < quant_min) {
    zero_point = quant_min;
  } else if (zero_point_from_min > quant_max) {
    zero_point = quant_max;
  } else {
    zero_point = std::round(zero_point_from_min);
  }
  return {(quant_min - zero_point) * scale, (quant_max - zero_point) * scale, scale};
}

float Quantize(float x, const Nudged& n) {
  const float clamped = std::fmin(std::fmax(x, n.min), n.max);
  return std::floor((clamped - n.min) * (1.0f / n.scale) + 0.5f) * n.scale + n.min;
}

struct QuantAttrs {
  int64_t num_bits;
  bool narrow_range;
};

QuantAttrs ReadAttrs(const AttrMap& attrs) {
  return {attrs.GetOr<int64_t>("num_bits", 8), attrs.GetOr<bool>("narrow_range", false)};
}

// The range of channel c: the attrs' (Args), the scalar inputs' (Vars) or element c of the
// vector inputs (PerChannel).
enum class Range { kArgs, kVars, kPerChannel };

// Reads and checks the ranges of an op whose min and max inputs (if any) are inputs
// first_range_input and first_range_input + 1; `channels` is the size of the last dimension.
template <Range kRange>
Status ReadRanges(KernelContext& ctx, int first_range_input, int64_t channels,
                  std::vector<Nudged>* out) {
  const char* op = ctx.node().type().c_str();
  const QuantAttrs q = ReadAttrs(ctx.attrs());
  if constexpr (kRange == Range::kArgs) {
    const float min = static_cast<float>(ctx.attrs().GetOr<double>("min", -6.0));
    const float max = static_cast<float>(ctx.attrs().GetOr<double>("max", 6.0));
    FS_RETURN_IF_ERROR(CheckRange(op, min, max, q.num_bits));
    out->assign(1, Nudge(min, max, q.num_bits, q.narrow_range));
  } else {
    const Tensor& min = ctx.input(first_range_input);
    const Tensor& max = ctx.input(first_range_input + 1);
    const int64_t want = kRange == Range::kVars ? 1 : channels;
    const int want_rank = kRange == Range::kVars ? 0 : 1;
    if (min.rank() != want_rank || max.rank() != want_rank || min.num_elements() != want ||
        max.num_elements() != want) {
      return errors::InvalidArgument(
          op, ": min and max must be ",
          kRange == Range::kVars ? "scalars"
                                 : "vectors of the "
                                   "size of the input's last dimension (",
          want, ")", ", but have shapes ", min.shape().ToString(), " and ", max.shape().ToString());
    }
    out->clear();
    for (int64_t c = 0; c < want; ++c) {
      const float lo = min.data<float>()[c];
      const float hi = max.data<float>()[c];
      FS_RETURN_IF_ERROR(CheckRange(op, lo, hi, q.num_bits));
      out->push_back(Nudge(lo, hi, q.num_bits, q.narrow_range));
    }
  }
  return Status::OK();
}

int64_t Channels(const Tensor& x) { return x.rank() == 0 ? 1 : x.dim(x.rank() - 1); }

template <Range kRange>
Status FakeQuantKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (kRange == Range::kPerChannel && x.rank() < 1) {
    return errors::InvalidArgument(
        "FakeQuantWithMinMaxVarsPerChannel needs inputs of rank 1 "
        "or more, got a scalar");
  }
  std::vector<Nudged> ranges;
  FS_RETURN_IF_ERROR(ReadRanges<kRange>(ctx, 1, Channels(x), &ranges));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &out));
  const float* in = x.data<float>();
  float* dst = out->data<float>();
  const int64_t channels = static_cast<int64_t>(ranges.size());
  ctx.ParallelFor(x.num_elements(), 10, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = Quantize(in[i], ranges[i % channels]);
  });
  return Status::OK();
}

// Gradient ops: inputs (gradients, inputs[, min, max]); outputs the input's gradient and, for
// the Vars forms, min's and max's.
template <Range kRange>
Status FakeQuantGradientKernel(KernelContext& ctx) {
  const Tensor& grad = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (grad.shape() != x.shape()) {
    return errors::InvalidArgument(ctx.node().type(),
                                   ": gradients and inputs must have one "
                                   "shape, but have ",
                                   grad.shape().ToString(), " and ", x.shape().ToString());
  }
  std::vector<Nudged> ranges;
  FS_RETURN_IF_ERROR(ReadRanges<kRange>(ctx, 2, Channels(x), &ranges));
  const int64_t channels = static_cast<int64_t>(ranges.size());
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
  std::vector<double> dmin(channels, 0.0), dmax(channels, 0.0);
  const float* g = grad.data<float>();
  const float* in = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = i % channels;
    const bool below = in[i] < ranges[c].min;
    const bool above = in[i] > ranges[c].max;
    dx->data<float>()[i] = below || above ? 0.0f : g[i];
    if (below) dmin[c] += g[i];
    if (above) dmax[c] += g[i];
  }
  if constexpr (kRange != Range::kArgs) {
    const TensorShape range_shape =
        kRange == Range::kVars ? TensorShape{} : TensorShape({channels});
    Tensor* out_min;
    Tensor* out_max;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, range_shape, &out_min));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, range_shape, &out_max));
    for (int64_t c = 0; c < channels; ++c) {
      out_min->data<float>()[c] = static_cast<float>(dmin[c]);
      out_max->data<float>()[c] = static_cast<float>(dmax[c]);
    }
  }
  return Status::OK();
}

// The attrs a gradient op takes from its forward op.
AttrMap QuantAttrsOf(const GradientContext& ctx, bool with_range) {
  AttrMap attrs;
  const QuantAttrs q = ReadAttrs(ctx.attrs());
  attrs.Set("num_bits", q.num_bits);
  attrs.Set("narrow_range", q.narrow_range);
  if (with_range) {
    attrs.Set("min", ctx.attrs().GetOr<double>("min", -6.0));
    attrs.Set("max", ctx.attrs().GetOr<double>("max", 6.0));
  }
  return attrs;
}

Status FakeQuantArgsGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("FakeQuantWithMinMaxArgsGradient", {ctx.output_grad(0), ctx.input(0)},
                             QuantAttrsOf(ctx, true)));
  return Status::OK();
}

template <bool kPerChannel>
Status FakeQuantVarsGrad(GradientContext& ctx) {
  Node* node = ctx.AddNode(
      kPerChannel ? "FakeQuantWithMinMaxVarsPerChannelGradient" : "FakeQuantWithMinMaxVarsGradient",
      {ctx.output_grad(0), ctx.input(0), ctx.input(1), ctx.input(2)}, QuantAttrsOf(ctx, false));
  if (node == nullptr) return ctx.status();
  for (int i = 0; i < 3; ++i) ctx.SetInputGrad(i, Endpoint{node, i});
  return Status::OK();
}

Status SameAsInput(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status VarsGradientShape(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input(1));
  ctx.set_output(1, ctx.input(2));
  ctx.set_output(2, ctx.input(3));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("FakeQuantWithMinMaxArgs")
                   .Input("inputs", "float")
                   .Output("outputs", "float")
                   .Attr("min", -6.0f)
                   .Attr("max", 6.0f)
                   .Attr("num_bits", 8)
                   .Attr("narrow_range", false)
                   .Shape(SameAsInput)
                   .Kernel("CPU", FakeQuantKernel<Range::kArgs>)
                   .Gradient(FakeQuantArgsGrad)
                   .Doc("Quantizes inputs to num_bits levels over [min, max] and back."));

FS_REGISTER_OP(OpBuilder("FakeQuantWithMinMaxArgsGradient")
                   .Input("gradients", "float")
                   .Input("inputs", "float")
                   .Output("backprops", "float")
                   .Attr("min", -6.0f)
                   .Attr("max", 6.0f)
                   .Attr("num_bits", 8)
                   .Attr("narrow_range", false)
                   .Shape(SameAsInput)
                   .Kernel("CPU", FakeQuantGradientKernel<Range::kArgs>)
                   .NotDifferentiable()
                   .Doc("The gradient of FakeQuantWithMinMaxArgs: gradients inside the range, 0 "
                        "outside."));

// The Vars ops and their gradients: the same schema whether min and max are scalars or one per
// channel of the last dimension.
OpBuilder VarsOp(const char* name) {
  OpBuilder b(name);
  b.Input("inputs", "float")
      .Input("min", "float")
      .Input("max", "float")
      .Output("outputs", "float")
      .Attr("num_bits", 8)
      .Attr("narrow_range", false)
      .Shape(SameAsInput);
  return b;
}

OpBuilder VarsGradientOp(const char* name) {
  OpBuilder b(name);
  b.Input("gradients", "float")
      .Input("inputs", "float")
      .Input("min", "float")
      .Input("max", "float")
      .Output("backprops_wrt_input", "float")
      .Output("backprop_wrt_min", "float")
      .Output("backprop_wrt_max", "float")
      .Attr("num_bits", 8)
      .Attr("narrow_range", false)
      .Shape(VarsGradientShape)
      .NotDifferentiable();
  return b;
}

FS_REGISTER_OP(VarsOp("FakeQuantWithMinMaxVars")
                   .Kernel("CPU", FakeQuantKernel<Range::kVars>)
                   .Gradient(FakeQuantVarsGrad<false>)
                   .Doc("Quantizes inputs to num_bits levels over [min, max] (scalar tensors) "
                        "and back."));

FS_REGISTER_OP(VarsGradientOp("FakeQuantWithMinMaxVarsGradient")
                   .Kernel("CPU", FakeQuantGradientKernel<Range::kVars>)
                   .Doc("The gradients of FakeQuantWithMinMaxVars for inputs, min and max."));

FS_REGISTER_OP(VarsOp("FakeQuantWithMinMaxVarsPerChannel")
                   .Kernel("CPU", FakeQuantKernel<Range::kPerChannel>)
                   .Gradient(FakeQuantVarsGrad<true>)
                   .Doc("Quantizes inputs to num_bits levels over one [min, max] per channel of "
                        "the last dimension, and back."));

FS_REGISTER_OP(VarsGradientOp("FakeQuantWithMinMaxVarsPerChannelGradient")
                   .Kernel("CPU", FakeQuantGradientKernel<Range::kPerChannel>)
                   .Doc("The gradients of FakeQuantWithMinMaxVarsPerChannel for inputs, min and "
                        "max."));

}  // namespace
}  // namespace flowstone
