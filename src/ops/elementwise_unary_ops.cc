// Unary elementwise math: Neg, Abs, Square, Sqrt, Rsqrt, Exp, Expm1, Log, Log1p, Sign, Floor,
// Ceil, Round, Rint, Reciprocal (and its old name Inv), Sigmoid, Tanh, Relu, Softplus, Softsign,
// the trigonometric and hyperbolic functions and their inverses, Erf, Erfc, Erfinv, Ndtri, Lgamma,
// Digamma, the modified Bessel functions I0 and I1 (plain and scaled), the IsNan/IsInf/IsFinite
// tests, LogicalNot and Invert; and the gradients of the differentiable ones, with TensorFlow's
// formulas (in terms of the output y where TensorFlow uses it).
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "elementwise.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/math/special_functions.h"
#include "ops/math/vector_math.h"

namespace flowstone {
namespace {

// Rough cycles per element, for deciding when to split work across threads.
constexpr int64_t kCheapCost = 1;
constexpr int64_t kSqrtCost = 8;
constexpr int64_t kTranscendentalCost = 40;

// y[i] = fn(x[i]) for i in [0, n), vectorized with AVX2 where the CPU has it.
template <typename Fn, typename T, typename Out>
FS_MULTIVERSION void UnaryRun(const T* x, Out* y, int64_t n) {
  Fn fn;
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
}

// y = fn(x) elementwise, in place when the input buffer may be reused (and y has x's type).
template <typename Fn, typename T>
Status ComputeUnary(KernelContext& ctx, int64_t cost_per_element) {
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
    UnaryRun<Fn, T, Out>(x + begin, y + begin, end - begin);
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

// Real types use vector_math.h's functions, which vectorize for float (its accuracy bounds are
// there); complex types use <complex>'s.
struct ExpFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return std::exp(x);
    } else {
      return vecmath::Exp(x);
    }
  }
};

struct LogFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return std::log(x);
    } else {
      return vecmath::Log(x);
    }
  }
};

struct Log1pFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return std::log(T(1) + x);  // <complex> has no log1p
    } else {
      return vecmath::Log1p(x);
    }
  }
};

// -1, 0 or 1; zero and NaN map to themselves, as in numpy. A complex x gives x / |x| (0 at 0),
// as in TensorFlow.
struct SignFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return x == T(0) ? x : x / std::abs(x);
    } else {
      return x > 0 ? T(1) : (x < 0 ? T(-1) : x);
    }
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
    if constexpr (kIsComplex<T>) {
      return T(1) / (T(1) + std::exp(-x));
    } else {
      return vecmath::Sigmoid(x);
    }
  }
};

struct TanhFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return std::tanh(x);
    } else {
      return vecmath::Tanh(x);
    }
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

// Functors that apply one <cmath> function.
#define FS_STD_UNARY(Name, fn) \
  struct Name {                \
    template <typename T>      \
    T operator()(T x) const {  \
      return std::fn(x);       \
    }                          \
  }
FS_STD_UNARY(SinFn, sin);
FS_STD_UNARY(CosFn, cos);
FS_STD_UNARY(TanFn, tan);
FS_STD_UNARY(AsinFn, asin);
FS_STD_UNARY(AcosFn, acos);
FS_STD_UNARY(AtanFn, atan);
FS_STD_UNARY(SinhFn, sinh);
FS_STD_UNARY(CoshFn, cosh);
FS_STD_UNARY(AsinhFn, asinh);
FS_STD_UNARY(AcoshFn, acosh);
FS_STD_UNARY(AtanhFn, atanh);
// Halves to even, like Round: nearbyint in the default rounding mode.
FS_STD_UNARY(RintFn, nearbyint);
#undef FS_STD_UNARY

struct ErfFn {
  template <typename T>
  T operator()(T x) const {
    return vecmath::Erf(x);
  }
};

struct ErfcFn {
  template <typename T>
  T operator()(T x) const {
    return vecmath::Erfc(x);
  }
};

struct Expm1Fn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsComplex<T>) {
      return std::exp(x) - T(1);  // <complex> has no expm1
    } else {
      return vecmath::Expm1(x);
    }
  }
};

// log|Gamma(x)|. lgamma_r, unlike lgamma, does not write the global signgam, so threads may run
// it at once.
struct LgammaFn {
  template <typename T>
  T operator()(T x) const {
    int sign;
    return static_cast<T>(lgamma_r(static_cast<double>(x), &sign));
  }
};

// The digamma function psi(x) = d/dx log Gamma(x); poles (0, -1, -2, ...) give NaN, as in
// TensorFlow.
struct DigammaFn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(special::Digamma(static_cast<double>(x)));
  }
};

// The modified Bessel functions of the first kind of orders 0 and 1, plain and exponentially
// scaled (exp(-|x|) I(x), which stays finite for large |x|). <cmath>'s cyl_bessel_i takes x >= 0;
// I0 is even and I1 odd.
// Large |x| overflows I(x) itself, so the scaled forms use the asymptotic expansion
// exp(-x) I_n(x) ~ (1 - (4n^2 - 1) / (8x) + (4n^2 - 1)(4n^2 - 9) / (2 (8x)^2) - ...) / sqrt(2 pi x)
// beyond x = 700, where it has converged to double precision.
inline double ScaledBesselI(int order, double x) {
  if (x < 700) return std::exp(-x) * std::cyl_bessel_i(static_cast<double>(order), x);
  const double mu = 4.0 * order * order;
  double term = 1, sum = 1;
  for (int k = 1; k < 8; ++k) {
    term *= -(mu - (2 * k - 1) * (2 * k - 1)) / (k * 8 * x);
    sum += term;
  }
  return sum / std::sqrt(2 * std::numbers::pi * x);
}

// libstdc++'s cyl_bessel_i throws for large x (1e10 and +inf do: "Argument x too large in
// __bessel_ik"), and an exception must not leave a kernel. Past 700 the scaled expansion times
// exp(x), taken in two halves so that I(x) stays finite up to where it overflows (about 713.9).
inline double BesselIOfAbs(int order, double abs_x) {
  if (abs_x < 700) return std::cyl_bessel_i(static_cast<double>(order), abs_x);
  if (std::isinf(abs_x)) return abs_x;  // the expansion would give inf * 0
  const double half = std::exp(abs_x / 2);
  return half * ScaledBesselI(order, abs_x) * half;
}

struct BesselI0Fn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(BesselIOfAbs(0, std::abs(static_cast<double>(x))));
  }
};

struct BesselI1Fn {
  template <typename T>
  T operator()(T x) const {
    const double value = BesselIOfAbs(1, std::abs(static_cast<double>(x)));
    return static_cast<T>(x < 0 ? -value : value);
  }
};

struct BesselI0eFn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(ScaledBesselI(0, std::abs(static_cast<double>(x))));
  }
};

struct BesselI1eFn {
  template <typename T>
  T operator()(T x) const {
    const double value = ScaledBesselI(1, std::abs(static_cast<double>(x)));
    return static_cast<T>(x < 0 ? -value : value);
  }
};

struct ErfinvFn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(special::InverseErf(static_cast<double>(x)));
  }
};

struct NdtriFn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(special::Ndtri(static_cast<double>(x)));
  }
};

struct ReciprocalFn {
  template <typename T>
  T operator()(T x) const {
    return T(1) / x;
  }
};

// log(1 + exp(x)) without overflow, with TensorFlow's thresholds: x itself where exp(x) would
// swamp the 1, exp(x) where log1p would round to it. Computed without branches (all three, then
// selects), so that the float loop vectorizes.
struct SoftplusFn {
  template <typename T>
  T operator()(T x) const {
    const T threshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);
    const T e = vecmath::Exp(x);
    return vecmath::Select(x > -threshold, x, vecmath::Select(x < threshold, e, vecmath::Log1p(e)));
  }
};

struct SoftsignFn {
  template <typename T>
  T operator()(T x) const {
    return x / (T(1) + std::abs(x));
  }
};

struct IsNanFn {
  template <typename T>
  bool operator()(T x) const {
    return std::isnan(x);
  }
};

struct IsInfFn {
  template <typename T>
  bool operator()(T x) const {
    return std::isinf(x);
  }
};

struct IsFiniteFn {
  template <typename T>
  bool operator()(T x) const {
    return std::isfinite(x);
  }
};

struct InvertFn {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(~x);
  }
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

// The schema and kernel of a test y = fn(x) with a bool result.
template <typename Fn, typename List>
OpBuilder UnaryPredicateOp(const char* name, List types) {
  OpBuilder builder(name);
  builder.Input("x", "T")
      .Output("y", "bool")
      .TypeAttr("T", List::DTypes())
      .Shape(shape_fns::Unchanged)
      .Kernel("CPU", UnaryKernel<Fn>(types, kCheapCost))
      .NotDifferentiable();
  return builder;
}

// ----------------------------------------------------------------------------------------------
// Gradients, as graph ops (so that they can be differentiated again).

// The gradient of x: the incoming gradient times dy/dx (`derivative`, of x's shape), conjugated
// for complex x as TensorFlow's complex gradients are.
Status SetScaledGrad(GradientContext& ctx, Endpoint derivative) {
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.output_grad(0), ctx.ConjIfComplex(derivative)}));
  return Status::OK();
}

// The gradient of x: the incoming gradient divided by `denominator` (of x's shape), conjugated
// for complex x.
Status SetDividedGrad(GradientContext& ctx, Endpoint denominator) {
  ctx.SetInputGrad(0, ctx.Op("RealDiv", {ctx.output_grad(0), ctx.ConjIfComplex(denominator)}));
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

// The gradient as TensorFlow's one-pass gradient op `op`(y, dy) of the output y
// (unary_grad_ops.cc), with y conjugated first when `conj_y` (the ops that do not conjugate
// it themselves).
Status SetOutputGradOp(GradientContext& ctx, const char* op, bool conj_y) {
  const Endpoint y = conj_y ? ctx.ConjIfComplex(ctx.output(0)) : ctx.output(0);
  ctx.SetInputGrad(0, ctx.Op(op, {y, ctx.output_grad(0)}));
  return Status::OK();
}

// d sqrt(x)/dx = 0.5 / y.
Status SqrtGrad(GradientContext& ctx) { return SetOutputGradOp(ctx, "SqrtGrad", false); }

// d x^(-1/2)/dx = -0.5 * y^3.
Status RsqrtGrad(GradientContext& ctx) { return SetOutputGradOp(ctx, "RsqrtGrad", false); }

Status ExpGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.output(0)); }

Status LogGrad(GradientContext& ctx) { return SetDividedGrad(ctx, ctx.input(0)); }

Status Log1pGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  return SetDividedGrad(ctx, ctx.Op("AddV2", {ctx.ScalarLike(x, 1), x}));
}

// The gradient of Sign is zero wherever it exists; TensorFlow returns zeros rather than no
// gradient.
Status SignGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("ZerosLike", {ctx.input(0)}));
  return Status::OK();
}

// d sigmoid(x)/dx = y * (1 - y).
Status SigmoidGrad(GradientContext& ctx) { return SetOutputGradOp(ctx, "SigmoidGrad", true); }

// d tanh(x)/dx = 1 - y^2.
Status TanhGrad(GradientContext& ctx) { return SetOutputGradOp(ctx, "TanhGrad", true); }

// The gradient passes where the output is positive (which is where the input is).
Status ReluGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("ReluGrad", {ctx.output_grad(0), ctx.output(0)}));
  return Status::OK();
}

// 1 - x^2, for the inverse sine, cosine and hyperbolic tangent.
Endpoint OneMinusSquare(GradientContext& ctx, Endpoint x) {
  return ctx.Op("Sub", {ctx.ScalarLike(x, 1), ctx.Op("Square", {x})});
}

Status SinGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.Op("Cos", {ctx.input(0)})); }

Status CosGrad(GradientContext& ctx) {
  return SetScaledGrad(ctx, ctx.Op("Neg", {ctx.Op("Sin", {ctx.input(0)})}));
}

// d tan(x)/dx = sec(x)^2.
Status TanGrad(GradientContext& ctx) {
  const Endpoint sec = ctx.Op("Reciprocal", {ctx.Op("Cos", {ctx.input(0)})});
  return SetScaledGrad(ctx, ctx.Op("Square", {sec}));
}

// d asin(x)/dx = 1 / sqrt(1 - x^2); acos is its negation.
Status AsinGrad(GradientContext& ctx) {
  return SetDividedGrad(ctx, ctx.Op("Sqrt", {OneMinusSquare(ctx, ctx.input(0))}));
}

Status AcosGrad(GradientContext& ctx) {
  const Endpoint root = ctx.Op("Sqrt", {OneMinusSquare(ctx, ctx.input(0))});
  ctx.SetInputGrad(
      0, ctx.Op("Neg", {ctx.Op("RealDiv", {ctx.output_grad(0), ctx.ConjIfComplex(root)})}));
  return Status::OK();
}

Status AtanGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  return SetDividedGrad(ctx, ctx.Op("AddV2", {ctx.ScalarLike(x, 1), ctx.Op("Square", {x})}));
}

Status SinhGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.Op("Cosh", {ctx.input(0)})); }

Status CoshGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.Op("Sinh", {ctx.input(0)})); }

// d asinh(x)/dx = 1 / cosh(y) and d acosh(x)/dx = 1 / sinh(y).
Status AsinhGrad(GradientContext& ctx) {
  return SetDividedGrad(ctx, ctx.Op("Cosh", {ctx.output(0)}));
}

Status AcoshGrad(GradientContext& ctx) {
  return SetDividedGrad(ctx, ctx.Op("Sinh", {ctx.output(0)}));
}

Status AtanhGrad(GradientContext& ctx) {
  return SetDividedGrad(ctx, OneMinusSquare(ctx, ctx.input(0)));
}

// d erf(x)/dx = 2 / sqrt(pi) * exp(-x^2); erfc's is its negation.
Endpoint ErfDerivative(GradientContext& ctx, double scale) {
  const Endpoint x = ctx.input(0);
  const Endpoint gauss = ctx.Op("Exp", {ctx.Op("Neg", {ctx.Op("Square", {x})})});
  return ctx.Op("Mul", {ctx.ScalarLike(x, scale * 2 / std::sqrt(std::numbers::pi)), gauss});
}

Status ErfGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ErfDerivative(ctx, 1)); }
Status ErfcGrad(GradientContext& ctx) { return SetScaledGrad(ctx, ErfDerivative(ctx, -1)); }

Status LgammaGrad(GradientContext& ctx) {
  return SetScaledGrad(ctx, ctx.Op("Digamma", {ctx.input(0)}));
}

// d psi(x)/dx = psi^(1)(x), the trigamma function.
Status DigammaGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  return SetScaledGrad(ctx, ctx.Op("Polygamma", {ctx.ScalarLike(x, 1), x}));
}

// I0' = I1, and for the scaled form (exp(-|x|) I0)' = I1e - sign(x) I0e.
Status BesselI0Grad(GradientContext& ctx) {
  return SetScaledGrad(ctx, ctx.Op("BesselI1", {ctx.input(0)}));
}

Status BesselI0eGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint sign_y = ctx.Op("Mul", {ctx.Op("Sign", {x}), ctx.output(0)});
  return SetScaledGrad(ctx, ctx.Op("Sub", {ctx.Op("BesselI1e", {x}), sign_y}));
}

// I1' = I0 - I1 / x and (exp(-|x|) I1)' = I0e - I1e (sign(x) + 1 / x), both 1/2 at x = 0
// (where x is replaced by 1 so that nothing divides by zero).
Status BesselI1GradOf(GradientContext& ctx, const char* order0, bool scaled) {
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.output(0);
  const Endpoint at_zero = ctx.Op("Equal", {x, ctx.ScalarLike(x, 0)});
  const Endpoint safe_x = ctx.Op("SelectV2", {at_zero, ctx.ScalarLike(x, 1), x});
  Endpoint factor = ctx.Op("Reciprocal", {safe_x});
  if (scaled) factor = ctx.Op("AddV2", {ctx.Op("Sign", {x}), factor});
  const Endpoint derivative = ctx.Op("Sub", {ctx.Op(order0, {x}), ctx.Op("Mul", {y, factor})});
  return SetScaledGrad(ctx, ctx.Op("SelectV2", {at_zero, ctx.ScalarLike(x, 0.5), derivative}));
}

Status BesselI1Grad(GradientContext& ctx) { return BesselI1GradOf(ctx, "BesselI0", false); }
Status BesselI1eGrad(GradientContext& ctx) { return BesselI1GradOf(ctx, "BesselI0e", true); }

// d erfinv(x)/dx = sqrt(pi) / 2 * exp(y^2) and d ndtri(x)/dx = sqrt(2 pi) * exp(y^2 / 2).
Status ErfinvGrad(GradientContext& ctx) {
  const Endpoint y = ctx.output(0);
  const Endpoint growth = ctx.Op("Exp", {ctx.Op("Square", {y})});
  return SetScaledGrad(ctx,
                       ctx.Op("Mul", {ctx.ScalarLike(y, std::sqrt(std::numbers::pi) / 2), growth}));
}

Status NdtriGrad(GradientContext& ctx) {
  const Endpoint y = ctx.output(0);
  const Endpoint growth =
      ctx.Op("Exp", {ctx.Op("Mul", {ctx.ScalarLike(y, 0.5), ctx.Op("Square", {y})})});
  return SetScaledGrad(ctx,
                       ctx.Op("Mul", {ctx.ScalarLike(y, std::sqrt(2 * std::numbers::pi)), growth}));
}

// d(1/x)/dx = -y^2 (for Inv too, as in TensorFlow).
Status ReciprocalGrad(GradientContext& ctx) {
  return SetOutputGradOp(ctx, "ReciprocalGrad", false);
}

Status Expm1Grad(GradientContext& ctx) { return SetScaledGrad(ctx, ctx.Op("Exp", {ctx.input(0)})); }

// d softplus(x)/dx = sigmoid(x) and d softsign(x)/dx = 1 / (1 + |x|)^2, as TensorFlow's
// gradient ops of the features.
Status SetFeatureGradOp(GradientContext& ctx, const char* op) {
  ctx.SetInputGrad(0, ctx.Op(op, {ctx.output_grad(0), ctx.input(0)}));
  return Status::OK();
}
Status SoftplusGrad(GradientContext& ctx) { return SetFeatureGradOp(ctx, "SoftplusGrad"); }
Status SoftsignGrad(GradientContext& ctx) { return SetFeatureGradOp(ctx, "SoftsignGrad"); }

FS_REGISTER_OP(UnaryOp<NegFn>("Neg", RealAndComplexTypeList{}, kCheapCost)
                   .Gradient(NegGrad)
                   .Doc("-x elementwise. Integers wrap on overflow."));
FS_REGISTER_OP(
    UnaryOp<AbsFn>("Abs", RealTypeList{}, kCheapCost).Gradient(AbsGrad).Doc("|x| elementwise."));
FS_REGISTER_OP(UnaryOp<SquareFn>("Square", NumericAndComplexTypeList{}, kCheapCost)
                   .Gradient(SquareGrad)
                   .Doc("x * x elementwise."));
FS_REGISTER_OP(UnaryOp<SqrtFn>("Sqrt", FloatAndComplexTypeList{}, kSqrtCost)
                   .Gradient(SqrtGrad)
                   .Doc("sqrt(x) elementwise."));
FS_REGISTER_OP(UnaryOp<RsqrtFn>("Rsqrt", FloatAndComplexTypeList{}, kSqrtCost)
                   .Gradient(RsqrtGrad)
                   .Doc("1 / sqrt(x) elementwise."));
FS_REGISTER_OP(UnaryOp<ExpFn>("Exp", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(ExpGrad)
                   .Doc("e ** x elementwise."));
FS_REGISTER_OP(UnaryOp<LogFn>("Log", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(LogGrad)
                   .Doc("Natural logarithm elementwise."));
FS_REGISTER_OP(UnaryOp<Log1pFn>("Log1p", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(Log1pGrad)
                   .Doc("log(1 + x) elementwise, accurate for small x."));
FS_REGISTER_OP(UnaryOp<SignFn>("Sign", RealAndComplexTypeList{}, kCheapCost)
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
FS_REGISTER_OP(UnaryOp<SigmoidFn>("Sigmoid", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(SigmoidGrad)
                   .Doc("1 / (1 + exp(-x)) elementwise."));
FS_REGISTER_OP(UnaryOp<TanhFn>("Tanh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(TanhGrad)
                   .Doc("Hyperbolic tangent elementwise."));
FS_REGISTER_OP(UnaryOp<ReluFn>("Relu", NumericTypeList{}, kCheapCost, "features", "activations")
                   .Gradient(ReluGradFn)
                   .Doc("max(features, 0) elementwise."));

// Trigonometric and hyperbolic functions and their inverses.
FS_REGISTER_OP(UnaryOp<SinFn>("Sin", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(SinGrad)
                   .Doc("sin(x) elementwise."));
FS_REGISTER_OP(UnaryOp<CosFn>("Cos", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(CosGrad)
                   .Doc("cos(x) elementwise."));
FS_REGISTER_OP(UnaryOp<TanFn>("Tan", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(TanGrad)
                   .Doc("tan(x) elementwise."));
FS_REGISTER_OP(UnaryOp<AsinFn>("Asin", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AsinGrad)
                   .Doc("The inverse sine elementwise, in [-pi/2, pi/2]."));
FS_REGISTER_OP(UnaryOp<AcosFn>("Acos", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AcosGrad)
                   .Doc("The inverse cosine elementwise, in [0, pi]."));
FS_REGISTER_OP(UnaryOp<AtanFn>("Atan", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AtanGrad)
                   .Doc("The inverse tangent elementwise, in (-pi/2, pi/2)."));
FS_REGISTER_OP(UnaryOp<SinhFn>("Sinh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(SinhGrad)
                   .Doc("Hyperbolic sine elementwise."));
FS_REGISTER_OP(UnaryOp<CoshFn>("Cosh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(CoshGrad)
                   .Doc("Hyperbolic cosine elementwise."));
FS_REGISTER_OP(UnaryOp<AsinhFn>("Asinh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AsinhGrad)
                   .Doc("Inverse hyperbolic sine elementwise."));
FS_REGISTER_OP(UnaryOp<AcoshFn>("Acosh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AcoshGrad)
                   .Doc("Inverse hyperbolic cosine elementwise (NaN below 1)."));
FS_REGISTER_OP(UnaryOp<AtanhFn>("Atanh", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(AtanhGrad)
                   .Doc("Inverse hyperbolic tangent elementwise."));

// Special functions.
FS_REGISTER_OP(UnaryOp<ErfFn>("Erf", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(ErfGrad)
                   .Doc("The Gauss error function elementwise."));
FS_REGISTER_OP(UnaryOp<ErfcFn>("Erfc", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(ErfcGrad)
                   .Doc("1 - erf(x) elementwise, accurate for large x."));
FS_REGISTER_OP(UnaryOp<LgammaFn>("Lgamma", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(LgammaGrad)
                   .Doc("log |Gamma(x)| elementwise."));
FS_REGISTER_OP(UnaryOp<DigammaFn>("Digamma", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(DigammaGrad)
                   .Doc("psi(x) = d/dx log Gamma(x) elementwise."));
FS_REGISTER_OP(UnaryOp<BesselI0Fn>("BesselI0", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(BesselI0Grad)
                   .Doc("The modified Bessel function of the first kind of order 0."));
FS_REGISTER_OP(UnaryOp<BesselI0eFn>("BesselI0e", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(BesselI0eGrad)
                   .Doc("exp(-|x|) times the modified Bessel function I0."));
FS_REGISTER_OP(UnaryOp<BesselI1Fn>("BesselI1", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(BesselI1Grad)
                   .Doc("The modified Bessel function of the first kind of order 1."));
FS_REGISTER_OP(UnaryOp<BesselI1eFn>("BesselI1e", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(BesselI1eGrad)
                   .Doc("exp(-|x|) times the modified Bessel function I1."));
FS_REGISTER_OP(UnaryOp<ErfinvFn>("Erfinv", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(ErfinvGrad)
                   .Doc("The inverse of erf elementwise (NaN outside [-1, 1])."));
FS_REGISTER_OP(UnaryOp<NdtriFn>("Ndtri", FloatTypeList{}, kTranscendentalCost)
                   .Gradient(NdtriGrad)
                   .Doc("The standard normal quantile function elementwise (NaN outside [0, 1])."));
FS_REGISTER_OP(UnaryOp<Expm1Fn>("Expm1", FloatAndComplexTypeList{}, kTranscendentalCost)
                   .Gradient(Expm1Grad)
                   .Doc("exp(x) - 1 elementwise, accurate for small x."));
FS_REGISTER_OP(UnaryOp<ReciprocalFn>("Reciprocal", FloatAndComplexTypeList{}, kSqrtCost)
                   .Gradient(ReciprocalGrad)
                   .Doc("1 / x elementwise."));
FS_REGISTER_OP(UnaryOp<ReciprocalFn>("Inv", FloatAndComplexTypeList{}, kSqrtCost)
                   .Gradient(ReciprocalGrad)
                   .Doc("1 / x elementwise (Reciprocal's old name)."));
FS_REGISTER_OP(UnaryOp<RintFn>("Rint", FloatTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("The nearest integer elementwise, halves to even."));
FS_REGISTER_OP(UnaryOp<SoftplusFn>("Softplus", FloatTypeList{}, kTranscendentalCost, "features",
                                   "activations")
                   .Gradient(SoftplusGrad)
                   .Doc("log(exp(features) + 1) elementwise."));
FS_REGISTER_OP(UnaryOp<SoftsignFn>("Softsign", FloatTypeList{}, kSqrtCost, "features",
                                   "activations")
                   .Gradient(SoftsignGrad)
                   .Doc("features / (abs(features) + 1) elementwise."));

// Tests with bool results.
FS_REGISTER_OP(
    UnaryPredicateOp<IsNanFn>("IsNan", FloatTypeList{}).Doc("Whether each element is NaN."));
FS_REGISTER_OP(UnaryPredicateOp<IsInfFn>("IsInf", FloatTypeList{})
                   .Doc("Whether each element is +inf or -inf."));
FS_REGISTER_OP(UnaryPredicateOp<IsFiniteFn>("IsFinite", FloatTypeList{})
                   .Doc("Whether each element is finite (not NaN or infinite)."));

FS_REGISTER_OP(UnaryOp<InvertFn>("Invert", TypeList<int32_t, int64_t, uint8_t>{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("Bitwise NOT elementwise."));

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
