// BiasAdd (adding a per-channel bias) and its gradient BiasAddGrad (summing over everything but
// the channels). The channels are the last dimension for NHWC data and dimension 1 for NCHW.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/activation_util.h"
#include "ops/bias_util.h"

namespace flowstone {
namespace {

// Integers are added as the unsigned type of their width: a sum that overflows wraps around, as
// in TensorFlow, where signed arithmetic would be undefined behaviour.
template <typename T>
using WrappingType = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                                 std::type_identity<T>>::type;

Status BiasAddShape(InferenceContext& ctx) {
  bool nchw;
  FS_RETURN_IF_ERROR(ParseBiasFormat(ctx.attrs(), &nchw));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 2));
  PartialShape bias;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &bias));
  const PartialShape& value = ctx.input(0);
  if (!value.known_rank()) {
    ctx.set_output(0, value);
    return Status::OK();
  }
  const int channel_dim = ChannelDim(nchw, value.rank());
  int64_t merged;
  FS_RETURN_IF_ERROR(ctx.MergeDim(value.dim(channel_dim), bias.dim(0), &merged));
  Dims dims = value.dims();
  dims[channel_dim] = merged;
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

class BiasAddKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return ParseBiasFormat(node().attrs(), &nchw_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& value = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    if (value.rank() < 2) {
      return errors::InvalidArgument("Input tensor must be at least 2D: ",
                                     value.shape().ToString());
    }
    if (bias.rank() != 1) {
      return errors::InvalidArgument("Biases must be 1D: ", bias.shape().ToString());
    }
    const int channel_dim = ChannelDim(nchw_, value.rank());
    if (bias.dim(0) != value.dim(channel_dim)) {
      return errors::InvalidArgument(
          "Must provide as many biases as the ", nchw_ ? "channel dimension (1)" : "last dimension",
          " of the input tensor: ", bias.shape().ToString(), " vs. ", value.shape().ToString());
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, value.shape(), &out));
    const ChannelView view(value.shape(), channel_dim);
    return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
        value.dtype(), "BiasAdd", [&]<typename T>() -> Status {
          using A = WrappingType<T>;
          const A* x = reinterpret_cast<const A*>(value.data<T>());
          const A* b = reinterpret_cast<const A*>(bias.data<T>());
          A* y = reinterpret_cast<A*>(out->data<T>());
          // One unit is a run of `inner` elements sharing a bias (NCHW planes), or one row of
          // channels (NHWC, inner = 1).
          const int64_t rows = view.outer * (view.inner == 1 ? 1 : view.channels);
          const int64_t row_len = view.inner == 1 ? view.channels : view.inner;
          ctx.ParallelFor(rows, row_len, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const A* src = x + r * row_len;
              A* dst = y + r * row_len;
              if (view.inner == 1) {
                for (int64_t c = 0; c < row_len; ++c) dst[c] = src[c] + b[c];
              } else {
                const A add = b[r % view.channels];
                for (int64_t k = 0; k < row_len; ++k) dst[k] = src[k] + add;
              }
            }
          });
          return Status::OK();
        });
  }

 private:
  bool nchw_ = false;
};

Status BiasAddGradShape(InferenceContext& ctx) {
  bool nchw;
  FS_RETURN_IF_ERROR(ParseBiasFormat(ctx.attrs(), &nchw));
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 2));
  const PartialShape& grad = ctx.input(0);
  ctx.set_output(0, grad.known_rank() ? PartialShape{grad.dim(ChannelDim(nchw, grad.rank()))}
                                      : PartialShape::UnknownOfRank(1));
  return Status::OK();
}

class BiasAddGradKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return ParseBiasFormat(node().attrs(), &nchw_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& grad = ctx.input(0);
    if (grad.rank() < 2) {
      return errors::InvalidArgument("Input tensor must be at least 2D: ", grad.shape().ToString());
    }
    const ChannelView view(grad.shape(), ChannelDim(nchw_, grad.rank()));
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{view.channels}, &out));
    return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
        grad.dtype(), "BiasAddGrad", [&]<typename T>() -> Status {
          using A = WrappingType<T>;
          const A* g = reinterpret_cast<const A*>(grad.data<T>());
          ChannelSum<A>(
              ctx, view, [g](int64_t i) { return g[i]; }, reinterpret_cast<A*>(out->data<T>()));
          return Status::OK();
        });
  }

 private:
  bool nchw_ = false;
};

// Sums the values read(i) of a [outer, channels, inner] tensor (i its flat index) over outer and
// inner. Blocks of `outer` are summed in parallel into partial sums, which also keeps float
// rounding error growing with the block size rather than the whole tensor. Each index is read
// once; the order of the additions depends on the shape alone.
template <typename T, typename Read>
void ChannelSum(KernelContext& ctx, const ChannelView& view, const Read& read, T* out) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (view.outer + kBlock - 1) / kBlock;
  const int64_t c = view.channels;
  // No channels, no sums: the output is empty (and `kWide / c` below would divide by zero).
  if (c == 0) return;
  std::vector<T> partial(std::max<int64_t>(blocks, 1) * c, T(0));
  // Channels last with few channels (a LeNet layer has 6): a row is too short to vectorize, so
  // `rows` consecutive rows are summed at once into a wide accumulator of `rows * c` (one
  // contiguous run), which is folded into the channels at the end of the block.
  constexpr int64_t kWide = 64;
  const bool wide = view.inner == 1 && c < kWide;
  const int64_t rows = wide ? kWide / c : 1;
  ctx.ParallelFor(blocks, kBlock * c * view.inner, [&](int64_t begin, int64_t end) {
    std::vector<T> sums(wide ? rows * c : 0);
    for (int64_t blk = begin; blk < end; ++blk) {
      T* acc = partial.data() + blk * c;
      const int64_t last = std::min(view.outer, (blk + 1) * kBlock);
      if (wide) {
        std::fill(sums.begin(), sums.end(), T(0));
        const int64_t base = blk * kBlock * c, count = (last - blk * kBlock) * c;
        const int64_t width = rows * c;
        for (int64_t g = 0; g < count; g += width) {
          const int64_t n = std::min(width, count - g);
          for (int64_t j = 0; j < n; ++j) sums[j] += read(base + g + j);
        }
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += sums[r * c + ch];
        }
        continue;
      }
      for (int64_t o = blk * kBlock; o < last; ++o) {
        const int64_t slab = o * c * view.inner;
        if (view.inner == 1) {  // NHWC: a row of channels, summed elementwise (vectorizes)
          for (int64_t ch = 0; ch < c; ++ch) acc[ch] += read(slab + ch);
          continue;
        }
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t run = slab + ch * view.inner;
          T s = 0;
          for (int64_t k = 0; k < view.inner; ++k) s += read(run + k);
          acc[ch] += s;
        }
      }
    }
  });
  std::fill(out, out + c, T(0));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    for (int64_t ch = 0; ch < c; ++ch) out[ch] += partial[blk * c + ch];
  }
}

// _ReluGradBiasAddGrad: ReluGrad and the BiasAddGrad of its result in one pass, for a layer with
// a bias and a ReLU in training (the graph optimizer fuses the pair; see
// src/optimizer/remapper.cc). Output 0 is ReluGrad's gradients * (features > 0), output 1 the
// bias gradient, each computed exactly as the separate kernels compute it.
class ReluGradBiasAddGradKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return ParseBiasFormat(node().attrs(), &nchw_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& g = ctx.input(0);
    const Tensor& features = ctx.input(1);
    if (g.shape() != features.shape()) {
      return errors::InvalidArgument(node().type(), ": gradients shape ", g.shape().ToString(),
                                     " does not match the activation's shape ",
                                     features.shape().ToString());
    }
    if (g.rank() < 2) {
      return errors::InvalidArgument("Input tensor must be at least 2D: ", g.shape().ToString());
    }
    const ChannelView view(g.shape(), ChannelDim(nchw_, g.rank()));
    Tensor* backprops;
    Tensor* bias_backprop;
    FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, g.shape(), &backprops));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{view.channels}, &bias_backprop));
    return DispatchDType<float, double>(g.dtype(), "_ReluGradBiasAddGrad",
                                        [&]<typename T>() -> Status {
                                          const T* gp = ctx.input(0).data<T>();
                                          const T* fp = ctx.input(1).data<T>();
                                          T* dst = backprops->data<T>();
                                          ChannelSum<T>(
                                              ctx, view,
                                              [&](int64_t i) {
                                                const T v = gp[i] * StepAtZero(fp[i]);
                                                dst[i] = v;
                                                return v;
                                              },
                                              bias_backprop->data<T>());
                                          return Status::OK();
                                        });
  }

 private:
  bool nchw_ = false;
};

Status ReluGradBiasAddGradShape(InferenceContext& ctx) {
  bool nchw;
  FS_RETURN_IF_ERROR(ParseBiasFormat(ctx.attrs(), &nchw));
  PartialShape merged;
  if (!ctx.input(0).IsCompatibleWith(ctx.input(1))) {
    return errors::InvalidArgument("gradients shape ", ctx.input(0).ToString(),
                                   " does not match the activation's shape ",
                                   ctx.input(1).ToString());
  }
  FS_RETURN_IF_ERROR(ctx.input(0).Merge(ctx.input(1), &merged));
  ctx.set_output(0, merged);
  ctx.set_output(1, merged.known_rank() ? PartialShape{merged.dim(ChannelDim(nchw, merged.rank()))}
                                        : PartialShape::UnknownOfRank(1));
  return Status::OK();
}

AttrMap FormatAttr(const GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("data_format", ctx.attrs().GetOr<std::string>("data_format", "NHWC"));
  return attrs;
}

Status BiasAddGrad(GradientContext& ctx) {
  Endpoint dy = ctx.output_grad(0);
  ctx.SetInputGrad(0, dy);
  ctx.SetInputGrad(1, ctx.Op("BiasAddGrad", {dy}, FormatAttr(ctx)));
  return ctx.status();
}

// BiasAddGrad sums over all but the channels; its adjoint broadcasts a per-channel gradient back
// over the summed dimensions, which is adding it as a bias to zeros.
Status BiasAddGradGrad(GradientContext& ctx) {
  Endpoint zeros = ctx.Op("ZerosLike", {ctx.input(0)});
  ctx.SetInputGrad(0, ctx.Op("BiasAdd", {zeros, ctx.output_grad(0)}, FormatAttr(ctx)));
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("BiasAdd")
                   .Input("value", "T")
                   .Input("bias", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumericAndComplexTypes)
                   .Attr("data_format", "NHWC")
                   .Shape(BiasAddShape)
                   .KernelClass<BiasAddKernel>("CPU")
                   .Gradient(BiasAddGrad)
                   .Doc("Adds a 1-D bias along the channel dimension."));

FS_REGISTER_OP(OpBuilder("BiasAddGrad")
                   .Input("out_backprop", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumericAndComplexTypes)
                   .Attr("data_format", "NHWC")
                   .Shape(BiasAddGradShape)
                   .KernelClass<BiasAddGradKernel>("CPU")
                   .Gradient(BiasAddGradGrad)
                   .Doc("Sums a gradient over all but the channel dimension."));

FS_REGISTER_OP(OpBuilder("_ReluGradBiasAddGrad")
                   .Input("gradients", "T")
                   .Input("features", "T")
                   .Output("backprops", "T")
                   .Output("bias_backprop", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64})
                   .Attr("data_format", "NHWC")
                   .Shape(ReluGradBiasAddGradShape)
                   .KernelClass<ReluGradBiasAddGradKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("ReluGrad(gradients, features) and the BiasAddGrad of it in one pass "
                        "(Flowstone's own fused op, created by the graph optimizer after "
                        "gradients are built)."));

}  // namespace
}  // namespace flowstone
