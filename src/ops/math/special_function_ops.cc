// Special functions of two arguments, with numpy broadcasting: Zeta (the Hurwitz zeta function)
// and Polygamma, whose order-1 case is the gradient of Digamma. Both are computed in double.
#include <cmath>
#include <cstdint>
#include <limits>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/math/special_functions.h"

namespace flowstone {
namespace {

constexpr int64_t kSpecialFunctionCost = 400;

struct ZetaFn {
  template <typename T>
  T operator()(T x, T q) const {
    return static_cast<T>(special::HurwitzZeta(x, q));
  }
};

// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for a whole order n >= 1, digamma for n = 0, NaN for
// other orders.
struct PolygammaFn {
  template <typename T>
  T operator()(T a, T x) const {
    const double n = a;
    if (n < 0 || n != std::floor(n)) return std::numeric_limits<T>::quiet_NaN();
    if (n == 0) return static_cast<T>(special::Digamma(x));
    const double sign = std::fmod(n, 2) == 0 ? -1.0 : 1.0;
    return static_cast<T>(sign * std::exp(std::lgamma(n + 1)) * special::HurwitzZeta(n + 1, x));
  }
};

// d zeta(x, q)/dq = -x zeta(x + 1, q); TensorFlow defines no gradient for x.
Status ZetaGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint q = ctx.input(1);
  const Endpoint x_plus_1 = ctx.Op("AddV2", {x, ctx.ScalarLike(x, 1)});
  const Endpoint partial_q = ctx.Op("Neg", {ctx.Op("Mul", {x, ctx.Op("Zeta", {x_plus_1, q})})});
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(ctx.Op("Mul", {ctx.output_grad(0), partial_q}), q, x));
  return Status::OK();
}

// d psi^(n)(x)/dx = psi^(n+1)(x); TensorFlow defines no gradient for the order.
Status PolygammaGrad(GradientContext& ctx) {
  const Endpoint a = ctx.input(0);
  const Endpoint x = ctx.input(1);
  const Endpoint a_plus_1 = ctx.Op("AddV2", {a, ctx.ScalarLike(a, 1)});
  const Endpoint partial_x = ctx.Op("Polygamma", {a_plus_1, x});
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(ctx.Op("Mul", {ctx.output_grad(0), partial_x}), x, a));
  return Status::OK();
}

template <typename Fn>
OpBuilder SpecialFunctionOp(const char* name, const char* first, const char* second) {
  OpBuilder builder(name);
  builder.Input(first, "T")
      .Input(second, "T")
      .Output("z", "T")
      .TypeAttr("T", FloatTypeList::DTypes())
      .Shape(shape_fns::Broadcast)
      .Kernel("CPU", BroadcastBinaryKernel<Fn>(FloatTypeList{}, kSpecialFunctionCost));
  return builder;
}

FS_REGISTER_OP(SpecialFunctionOp<ZetaFn>("Zeta", "x", "q")
                   .Gradient(ZetaGrad)
                   .Doc("The Hurwitz zeta function: the sum over k >= 0 of (q + k)^-x."));
FS_REGISTER_OP(SpecialFunctionOp<PolygammaFn>("Polygamma", "a", "x")
                   .Gradient(PolygammaGrad)
                   .Doc("The polygamma function psi^(a)(x), the a-th derivative of digamma."));

}  // namespace
}  // namespace flowstone
