// Activations beyond the basic elementwise ones (Relu6, Elu, Selu, LeakyRelu) and the gradient
// kernels of all rectifier-like activations, Relu's included.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/activation_util.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"

namespace flowstone {
namespace {

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

// dst[i] = fn(in[i]) for i in [0, n), vectorized with AVX2 where the CPU has it.
template <typename T, typename Fn>
FS_MULTIVERSION void MapRun(const T* in, T* dst, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fn(in[i]);
}

// Applies fn(x) elementwise from input 0 to output 0 (in place when possible).
template <typename Fn>
Status UnaryKernel(KernelContext& ctx, Fn fn) {
  const Tensor& x = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, x.shape(), &out));
  return DispatchDType<float, double>(
      x.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        const T* in = ctx.input(0).data<T>();
        T* dst = out->data<T>();
        ctx.ParallelFor(x.num_elements(), 8,
                        [&](int64_t b, int64_t e) { MapRun(in + b, dst + b, e - b, fn); });
        return Status::OK();
      });
}

// out = grad * fn(x) elementwise, for the *Grad ops (inputs: gradients, then the forward op's
// features or outputs).
template <typename Fn>
Status GradKernel(KernelContext& ctx, Fn fn) {
  const Tensor& g = ctx.input(0);
  const Tensor& v = ctx.input(1);
  if (g.shape() != v.shape()) {
    return errors::InvalidArgument(ctx.node().type(), ": gradients shape ", g.shape().ToString(),
                                   " does not match the activation's shape ", v.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, g.shape(), &out));
  return DispatchDType<float, double>(
      g.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        const T* gp = ctx.input(0).data<T>();
        const T* vp = ctx.input(1).data<T>();
        T* dst = out->data<T>();
        ctx.ParallelFor(g.num_elements(), 8, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) dst[i] = gp[i] * fn(vp[i]);
        });
        return Status::OK();
      });
}

Status SameShapes(InferenceContext& ctx) {
  PartialShape merged;
  if (!ctx.input(0).IsCompatibleWith(ctx.input(1))) {
    return errors::InvalidArgument("gradients shape ", ctx.input(0).ToString(),
                                   " does not match the activation's shape ",
                                   ctx.input(1).ToString());
  }
  FS_RETURN_IF_ERROR(ctx.input(0).Merge(ctx.input(1), &merged));
  ctx.set_output(0, merged);
  return Status::OK();
}

// Registers Name (forward) and NameGrad (its gradient kernel), wiring the gradient. NameGrad's
// second input is grad_input, named grad_input_name as in TensorFlow: the forward op's
// features (its input) or its outputs, whichever the derivative is cheaper to compute from.
#define FS_ACTIVATION(Name, forward, grad_input, grad_input_name, grad_factor, doc)           \
  Status Name##Grad(GradientContext& ctx) {                                                   \
    ctx.SetInputGrad(0, ctx.Op(#Name "Grad", {ctx.output_grad(0), grad_input}, ctx.attrs())); \
    return Status::OK();                                                                      \
  }                                                                                           \
  FS_REGISTER_OP(OpBuilder(#Name)                                                             \
                     .Input("features", "T")                                                  \
                     .Output("activations", "T")                                              \
                     .TypeAttr("T", kFloatTypes)                                              \
                     .Shape(shape_fns::Unchanged)                                             \
                     .Kernel("CPU", forward)                                                  \
                     .Gradient(Name##Grad)                                                    \
                     .Doc(doc));                                                              \
  FS_REGISTER_OP(OpBuilder(#Name "Grad")                                                      \
                     .Input("gradients", "T")                                                 \
                     .Input(grad_input_name, "T")                                             \
                     .Output("backprops", "T")                                                \
                     .TypeAttr("T", kFloatTypes)                                              \
                     .Shape(SameShapes)                                                       \
                     .Kernel("CPU", grad_factor)                                              \
                     .NotDifferentiable()                                                     \
                     .Doc("Gradient of " #Name "."));

Status Relu6Forward(KernelContext& ctx) {
  return UnaryKernel(ctx, [](auto x) {
    return x < 0 ? decltype(x)(0) : x > 6 ? decltype(x)(6) : x;
  });
}
Status Relu6Backward(KernelContext& ctx) {
  return GradKernel(ctx, [](auto x) { return decltype(x)(x > 0 && x < 6 ? 1 : 0); });
}
FS_ACTIVATION(Relu6, Relu6Forward, ctx.input(0), "features", Relu6Backward, "min(max(x, 0), 6)")

// Elu keeps <cmath>'s expm1: the fused Conv2D/MatMul epilogue (fused_epilogue.h) computes Elu
// the same way and must give its bits (vector_math.h's results differ between the AVX2 clone,
// which contracts multiply-adds, and the baseline one).
Status EluForward(KernelContext& ctx) {
  return UnaryKernel(ctx, [](auto x) { return x < 0 ? std::expm1(x) : x; });
}
// In terms of the output y: 1 where y > 0, y + 1 elsewhere.
Status EluBackward(KernelContext& ctx) {
  return GradKernel(ctx, [](auto y) { return y > 0 ? decltype(y)(1) : y + decltype(y)(1); });
}
FS_ACTIVATION(Elu, EluForward, ctx.output(0), "outputs", EluBackward, "x if x > 0 else exp(x) - 1")

// Selu (never fused) computes expm1 for every element and selects, so that its loop vectorizes.
Status SeluForward(KernelContext& ctx) {
  return UnaryKernel(ctx, [](auto x) {
    using T = decltype(x);
    return vecmath::Select(x < 0, T(kSeluScale * kSeluAlpha) * vecmath::Expm1(x),
                           T(kSeluScale) * x);
  });
}
Status SeluBackward(KernelContext& ctx) {
  return GradKernel(ctx, [](auto y) {
    using T = decltype(y);
    return y > 0 ? T(kSeluScale) : y + T(kSeluScale * kSeluAlpha);
  });
}
FS_ACTIVATION(Selu, SeluForward, ctx.output(0), "outputs", SeluBackward,
              "scale * (x if x > 0 else alpha * (exp(x) - 1))")

// gradients * (features > 0), as TensorFlow computes it (so a NaN gradient stays NaN).
Status ReluBackward(KernelContext& ctx) {
  return GradKernel(ctx, [](auto x) { return StepAtZero(x); });
}

FS_REGISTER_OP(OpBuilder("ReluGrad")
                   .Input("gradients", "T")
                   .Input("features", "T")
                   .Output("backprops", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(SameShapes)
                   .Kernel("CPU", ReluBackward)
                   .NotDifferentiable()
                   .Doc("gradients where features > 0, else 0: the gradient of Relu."));

Status LeakyReluForward(KernelContext& ctx) {
  const double alpha = ctx.attrs().GetOr<double>("alpha", 0.2);
  return UnaryKernel(ctx, [alpha](auto x) { return x < 0 ? decltype(x)(alpha) * x : x; });
}

Status LeakyReluBackward(KernelContext& ctx) {
  const double alpha = ctx.attrs().GetOr<double>("alpha", 0.2);
  return GradKernel(ctx, [alpha](auto x) { return x > 0 ? decltype(x)(1) : decltype(x)(alpha); });
}

Status LeakyReluGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("LeakyReluGrad", {ctx.output_grad(0), ctx.input(0)}, ctx.attrs()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("LeakyRelu")
                   .Input("features", "T")
                   .Output("activations", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("alpha", AttrValue(0.2))
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", LeakyReluForward)
                   .Gradient(LeakyReluGradFn)
                   .Doc("x if x > 0 else alpha * x"));

FS_REGISTER_OP(OpBuilder("LeakyReluGrad")
                   .Input("gradients", "T")
                   .Input("features", "T")
                   .Output("backprops", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("alpha", AttrValue(0.2))
                   .Shape(SameShapes)
                   .Kernel("CPU", LeakyReluBackward)
                   .NotDifferentiable()
                   .Doc("Gradient of LeakyRelu."));

}  // namespace
}  // namespace flowstone
