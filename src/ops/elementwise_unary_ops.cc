// Unary elementwise math: Neg, Abs, Square, Sqrt, Rsqrt, Exp, Log, Log1p, Sign, Floor, Ceil,
// Round, Sigmoid, Tanh, Relu, and LogicalNot; and the gradients of the differentiable ones, with
// TensorFlow's formulas (in terms of the output y where TensorFlow uses it).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "elementwise.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Rough cycles per element, for deciding when to split work across threads.
constexpr int64_t kCheapCost = 1;
constexpr int64_t kSqrtCost = 8;
constexpr int64_t kTranscendentalCost = 40;

// y[i] = fn(x[i]) for i in [0, n), vectorized with AVX2 where the CPU has it.
template <typename Fn, typename T>
FS_MULTIVERSION void UnaryRun(const T* x, T* y, int64_t n) {
  Fn fn;
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
}

// y = fn(x) elementwise, in place when the input buffer may be reused.
template <typename Fn, typename T>
Status ComputeUnary(KernelContext& ctx, int64_t cost_per_element) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  const T* x = in.data<T>();
  T* y = out->data<T>();
  ctx.ParallelFor(in.num_elements(), cost_per_element, [&](int64_t begin, int64_t end) {
    UnaryRun<Fn, T>(x + begin, y + begin, end - begin);
  });
  return Status::OK();
}

template <typename Fn, typename... Ts>
KernelFn UnaryKernel(TypeList<Ts...>, int64_t cost_per_element) {
  return [cost_per_element](KernelContext& ctx) {
    return DispatchDType<Ts...>(ctx.input(0).dtype(), ctx.node().type().c_str(), [&]<typename T>() {
      return ComputeUnary<Fn, T>(ctx, cost_per_element);
    });
  };
}

struct NegFn {
  template <typename T>
  T operator()(T x) const {
    return WrapNeg(x);
  }
};

struct AbsFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return x < 0 ? WrapNeg(x) : x;  // the most negative value stays itself, as in numpy
    } else {
      return std::abs(x);
    }
  }
};

struct SquareFn {
  template <typename T>
  T operator()(T x) const {
    return WrapMul(x, x);
  }
};

struct SqrtFn {
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct RsqrtFn {
  template <typename T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};

struct ExpFn {
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};

struct LogFn {
  template <typename T>
  T operator()(T x) const {
    return std::log(x);
  }
};

struct Log1pFn {
  template <typename T>
  T operator()(T x) const {
    return std::log1p(x);
  }
};

// -1, 0 or 1; zero and NaN map to themselves, as in numpy.
struct SignFn {
  template <typename T>
  T operator()(T x) const {
    return x > 0 ? T(1) : (x < 0 ? T(-1) : x);
  }
};

struct FloorFn {
  template <typename T>
  T operator()(T x) const {
    return std::floor(x);
  }
};

struct CeilFn {
  template <typename T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};

// Halves round to the nearest even integer (banker's rounding), as TensorFlow and numpy round:
// nearbyint uses the default round-to-nearest-even mode. Integers are unchanged.
struct RoundFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return x;
    } else {
      return std::nearbyint(x);
    }
  }
};

struct SigmoidFn {
  template <typename T>
  T operator()(T x) const {
    // exp(-x) overflows to inf for very negative x, giving exactly 0.
    return T(1) / (T(1) + std::exp(-x));
  }
};

struct TanhFn {
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

// max(x, 0); NaN passes through, as with numpy's maximum.
struct ReluFn {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

struct LogicalNotFn {
  bool operator()(bool x) const { return !x; }
};

// The schema and kernel of y = fn(x) with attr T.
template <typename Fn, typename List>
OpBuilder UnaryOp(const char* name, List types, int64_t cost_per_element, const char* input = "x",
                  const char* output = "y") {
  OpBuilder builder(name);
  builder.Input(input, "T")
      .Output(output, "T")
      .TypeAttr("T", List::DTypes())
      .Shape(shape_fns::Unchanged)
      .Kernel("CPU", UnaryKernel<Fn>(types, cost_per_element));
  return builder;
}

// ----------------------------------------------------------------------------------------------
// Gradients, as graph ops (so that they can be differentiated again).

// The gradient of x: the incoming gradient times dy/dx (`derivative`, of x's shape).
Status SetScaledGrad(GradientContext& ctx, Endpoint derivative) {
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.output_grad(0), derivative}));
  return Status::OK();
}

Status NegGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("Neg", {ctx.output_grad(0)}));
  return Status::OK();
}

// d|x|/dx = sign(x), taken as 0 at x = 0.
Status AbsGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.Op("Sign", {ctx.input(0)})); }

Status SquareGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  return SetScaledGrad(ctx, ctx.Op("Mul", {x, ctx.ScalarLike(x, 2)}));
}

// d sqrt(x)/dx = 0.5 / y.
Status SqrtGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint half_grad = ctx.Op("Mul", {grad, ctx.ScalarLike(grad, 0.5)});
  ctx.SetInputGrad(0, ctx.Op("RealDiv", {half_grad, ctx.output(0)}));
  return Status::OK();
}

// d x^(-1/2)/dx = -0.5 * y^3.
Status RsqrtGrad(GradientContext& ctx) {
  const Endpoint y = ctx.output(0);
  const Endpoint y_cubed = ctx.Op("Mul", {ctx.Op("Square", {y}), y});
  return SetScaledGrad(ctx, ctx.Op("Mul", {y_cubed, ctx.ScalarLike(y, -0.5)}));
}

Status ExpGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.output(0)); }

Status LogGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("RealDiv", {ctx.output_grad(0), ctx.input(0)}));
  return Status::OK();
}

Status Log1pGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint one_plus_x = ctx.Op("AddV2", {ctx.ScalarLike(x, 1), x});
  ctx.SetInputGrad(0, ctx.Op("RealDiv", {ctx.output_grad(0), one_plus_x}));
  return Status::OK();
}

// The gradient of Sign is zero wherever it exists; TensorFlow returns zeros rather than no
// gradient.
Status SignGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("ZerosLike", {ctx.input(0)}));
  return Status::OK();
}

// d sigmoid(x)/dx = y * (1 - y).
Status SigmoidGrad(GradientContext& ctx) {
  const Endpoint y = ctx.output(0);
  const Endpoint one_minus_y = ctx.Op("Sub", {ctx.ScalarLike(y, 1), y});
  return SetScaledGrad(ctx, ctx.Op("Mul", {y, one_minus_y}));
}

// d tanh(x)/dx = 1 - y^2.
Status TanhGrad(GradientContext& ctx) {
  const Endpoint y = ctx.output(0);
  return SetScaledGrad(ctx, ctx.Op("Sub", {ctx.ScalarLike(y, 1), ctx.Op("Square", {y})}));
}

// The gradient passes where the output is positive (which is where the input is).
Status ReluGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("ReluGrad", {ctx.output_grad(0), ctx.output(0)}));
  return Status::OK();
}

FS_REGISTER_OP(UnaryOp<NegFn>("Neg", RealTypeList{}, kCheapCost)
                   .Gradient(NegGrad)
                   .Doc("-x elementwise. Integers wrap on overflow."));
FS_REGISTER_OP(
    UnaryOp<AbsFn>("Abs", RealTypeList{}, kCheapCost).Gradient(AbsGrad).Doc("|x| elementwise."));
FS_REGISTER_OP(UnaryOp<SquareFn>("Square", NumericTypeList{}, kCheapCost)
                   .Gradient(SquareGrad)
                   .Doc("x * x elementwise."));
FS_REGISTER_OP(UnaryOp<SqrtFn>("Sqrt", FloatTypeList{}, kSqrtCost)
                   .Gradient(SqrtGrad)
                   .Doc("sqrt(x) elementwise."));
FS_REGISTER_OP(UnaryOp<RsqrtFn>("Rsqrt", FloatTypeList{}, kSqrtCost)
                   .Gradient(RsqrtGrad)
                   .Doc("1 / sqrt(x) elementwise."));
FS_REGISTER_OP(UnaryOp<ExpFn>("Exp", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(ExpGrad)
                   .Doc("e ** x elementwise."));
FS_REGISTER_OP(UnaryOp<LogFn>("Log", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(LogGrad)
                   .Doc("Natural logarithm elementwise."));
FS_REGISTER_OP(UnaryOp<Log1pFn>("Log1p", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(Log1pGrad)
                   .Doc("log(1 + x) elementwise, accurate for small x."));
FS_REGISTER_OP(UnaryOp<SignFn>("Sign", RealTypeList{}, kCheapCost)
                   .Gradient(SignGrad)
                   .Doc("-1, 0 or 1 by the sign of x (NaN stays NaN)."));
FS_REGISTER_OP(UnaryOp<FloorFn>("Floor", FloatTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("The largest integer not greater than x, elementwise."));
FS_REGISTER_OP(UnaryOp<CeilFn>("Ceil", FloatTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("The smallest integer not less than x, elementwise."));
FS_REGISTER_OP(UnaryOp<RoundFn>("Round", RealTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x rounded to the nearest integer, halves to even, elementwise."));
FS_REGISTER_OP(UnaryOp<SigmoidFn>("Sigmoid", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(SigmoidGrad)
                   .Doc("1 / (1 + exp(-x)) elementwise."));
FS_REGISTER_OP(UnaryOp<TanhFn>("Tanh", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(TanhGrad)
                   .Doc("Hyperbolic tangent elementwise."));
FS_REGISTER_OP(UnaryOp<ReluFn>("Relu", NumericTypeList{}, kCheapCost, "features", "activations")
                   .Gradient(ReluGradFn)
                   .Doc("max(features, 0) elementwise."));

FS_REGISTER_OP(OpBuilder("LogicalNot")
                   .Input("x", "bool")
                   .Output("y", "bool")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             return ComputeUnary<LogicalNotFn, bool>(ctx, kCheapCost);
                           })
                   .NotDifferentiable()
                   .Doc("!x elementwise."));

}  // namespace
}  // namespace flowstone
