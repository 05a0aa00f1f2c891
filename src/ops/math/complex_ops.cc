// Complex numbers: Complex (from real and imaginary parts, with numpy broadcasting), Real, Imag,
// Conj, Angle and ComplexAbs, and their gradients with TensorFlow's convention: the gradient of a
// real loss L with respect to a complex z = x + iy is dL/dx + i dL/dy.
#include <cmath>
#include <complex>
#include <type_traits>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"

namespace flowstone {
namespace {

constexpr int64_t kCheapCost = 1;
constexpr int64_t kTranscendentalCost = 40;

// A complex dtype pairs with the real dtype of its precision only (complex64 with float32,
// complex128 with float64), as TensorFlow registers these kernels; a mismatch fails while the
// graph is built.
Status SamePrecision(InferenceContext& ctx, DType complex_type, DType real_type) {
  if (RealPartType(complex_type) == real_type) return Status::OK();
  return errors::TypeError(ctx.op_type(), " '", ctx.node_name(), "': ", DTypeName(complex_type),
                           " goes with ", DTypeName(RealPartType(complex_type)), ", not ",
                           DTypeName(real_type),
                           "; cast the real values or choose the matching complex dtype");
}

// Complex: inputs real and imag of T, output Tout.
Status ComplexShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(SamePrecision(ctx, ctx.output_type(0), ctx.input_type(0)));
  return shape_fns::Broadcast(ctx);
}

// Real, Imag, Angle, ComplexAbs: input of complex T, output of real Tout.
Status ToRealShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(SamePrecision(ctx, ctx.input_type(0), ctx.output_type(0)));
  return shape_fns::Unchanged(ctx);
}

struct ComplexFn {
  template <typename T>
  std::complex<T> operator()(T re, T im) const {
    return std::complex<T>(re, im);
  }
};

struct RealFn {
  template <typename T>
  T operator()(std::complex<T> z) const {
    return z.real();
  }
};

struct ImagFn {
  template <typename T>
  T operator()(std::complex<T> z) const {
    return z.imag();
  }
};

struct ConjFn {
  template <typename T>
  std::complex<T> operator()(std::complex<T> z) const {
    return std::conj(z);
  }
};

struct AngleFn {
  template <typename T>
  T operator()(std::complex<T> z) const {
    return std::arg(z);
  }
};

// |z| without overflow or underflow in the squares (std::abs is hypot).
struct ComplexAbsFn {
  template <typename T>
  T operator()(std::complex<T> z) const {
    return std::abs(z);
  }
};

// y = fn(x) elementwise over a complex input; y is complex (in place when possible) or real.
template <typename Fn, typename T>
Status ComputeComplexUnary(KernelContext& ctx, int64_t cost_per_element) {
  using Out = decltype(Fn{}(T{}));
  const Tensor& in = ctx.input(0);
  Tensor* out;
  if constexpr (std::is_same_v<Out, T>) {
    FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  } else {
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  }
  const T* x = in.data<T>();
  Out* y = out->data<Out>();
  ctx.ParallelFor(in.num_elements(), cost_per_element, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = Fn{}(x[i]);
  });
  return Status::OK();
}

template <typename Fn>
KernelFn ComplexUnaryKernel(int64_t cost_per_element) {
  return [cost_per_element](KernelContext& ctx) {
    return DispatchDType<complex64, complex128>(
        ctx.input(0).dtype(), ctx.node().type().c_str(),
        [&]<typename T>() { return ComputeComplexUnary<Fn, T>(ctx, cost_per_element); });
  };
}

// ----------------------------------------------------------------------------------------------
// Gradients

AttrMap ToutAttr(DType dtype) {
  AttrMap attrs;
  attrs.Set("Tout", dtype);
  return attrs;
}

// complex(re, im) in the complex dtype of the forward op's input.
Endpoint MakeComplex(GradientContext& ctx, Endpoint re, Endpoint im) {
  return ctx.Op("Complex", {re, im}, ToutAttr(ctx.input_type(0)));
}

// The real and imaginary parts of the gradient go to real and imag, each summed over the axes
// along which it was broadcast.
Status ComplexGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const DType real_type = ctx.input_type(0);
  const Endpoint re = ctx.input(0), im = ctx.input(1);
  ctx.SetInputGrad(0, ctx.ReduceToShapeOf(ctx.Op("Real", {grad}, ToutAttr(real_type)), re, im));
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(ctx.Op("Imag", {grad}, ToutAttr(real_type)), im, re));
  return Status::OK();
}

// dL/dRe z = g for Real and dL/dIm z = g for Imag.
Status RealGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, MakeComplex(ctx, grad, ctx.Op("ZerosLike", {grad})));
  return Status::OK();
}

Status ImagGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, MakeComplex(ctx, ctx.Op("ZerosLike", {grad}), grad));
  return Status::OK();
}

Status ConjGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("Conj", {ctx.output_grad(0)}));
  return Status::OK();
}

// angle(x + iy) = atan2(y, x): d/dx = -y / r^2 and d/dy = x / r^2, which is g * -1 / (y + ix).
Status AngleGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint z = ctx.input(0);
  const AttrMap real = ToutAttr(ctx.node().output_type(0));
  const Endpoint swapped = MakeComplex(ctx, ctx.Op("Imag", {z}, real), ctx.Op("Real", {z}, real));
  const Endpoint complex_grad = MakeComplex(ctx, grad, ctx.Op("ZerosLike", {grad}));
  ctx.SetInputGrad(0, ctx.Op("Neg", {ctx.Op("RealDiv", {complex_grad, swapped})}));
  return Status::OK();
}

// |z| has gradient g * z / |z|, taken as 0 at z = 0 (TensorFlow's div_no_nan).
Status ComplexAbsGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint z = ctx.input(0);
  const Endpoint r = ctx.output(0);
  const Endpoint zero = ctx.ScalarLike(r, 0);
  const Endpoint at_zero = ctx.Op("Equal", {r, zero});
  const Endpoint safe_r = ctx.Op("SelectV2", {at_zero, ctx.ScalarLike(r, 1), r});
  const Endpoint scale = ctx.Op("SelectV2", {at_zero, zero, ctx.Op("RealDiv", {grad, safe_r})});
  ctx.SetInputGrad(0, ctx.Op("Mul", {MakeComplex(ctx, scale, ctx.Op("ZerosLike", {scale})), z}));
  return Status::OK();
}

// ----------------------------------------------------------------------------------------------
// Registrations

FS_REGISTER_OP(OpBuilder("Complex")
                   .Input("real", "T")
                   .Input("imag", "T")
                   .Output("out", "Tout")
                   .TypeAttr("T", kFloatTypes, DType::kFloat32)
                   .TypeAttr("Tout", kComplexTypes, DType::kComplex64)
                   .Shape(ComplexShape)
                   .Kernel("CPU", BroadcastBinaryKernel<ComplexFn>(FloatTypeList{}, kCheapCost))
                   .Gradient(ComplexGrad)
                   .Doc("real + i * imag elementwise, with numpy broadcasting."));

// The ops from a complex input to a real output share one schema.
template <typename Fn>
OpBuilder ToRealOp(const char* name, const char* input, const char* output, int64_t cost) {
  OpBuilder builder(name);
  builder.Input(input, "T")
      .Output(output, "Tout")
      .TypeAttr("T", kComplexTypes, DType::kComplex64)
      .TypeAttr("Tout", kFloatTypes, DType::kFloat32)
      .Shape(ToRealShape)
      .Kernel("CPU", ComplexUnaryKernel<Fn>(cost));
  return builder;
}

FS_REGISTER_OP(ToRealOp<RealFn>("Real", "input", "output", kCheapCost)
                   .Gradient(RealGrad)
                   .Doc("The real part of each element."));
FS_REGISTER_OP(ToRealOp<ImagFn>("Imag", "input", "output", kCheapCost)
                   .Gradient(ImagGrad)
                   .Doc("The imaginary part of each element."));
FS_REGISTER_OP(ToRealOp<AngleFn>("Angle", "input", "output", kTranscendentalCost)
                   .Gradient(AngleGrad)
                   .Doc("The argument of each element, atan2(imag, real), in [-pi, pi]."));
FS_REGISTER_OP(ToRealOp<ComplexAbsFn>("ComplexAbs", "x", "y", kTranscendentalCost)
                   .Gradient(ComplexAbsGrad)
                   .Doc("The magnitude |x| of each element, computed without overflow."));

FS_REGISTER_OP(OpBuilder("Conj")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kComplexTypes, DType::kComplex64)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", ComplexUnaryKernel<ConjFn>(kCheapCost))
                   .Gradient(ConjGrad)
                   .Doc("The complex conjugate of each element."));

}  // namespace
}  // namespace flowstone
