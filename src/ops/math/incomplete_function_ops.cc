// The incomplete gamma and beta functions: Igamma (P(a, x)), Igammac (Q(a, x)), IgammaGradA
// (dP/da), RandomGammaGrad (the derivative of a Gamma(alpha) sample with respect to alpha, for
// RandomGamma's gradient) and Betainc (I_x(a, b)). The binary ones broadcast like numpy; Betainc
// takes operands of one shape or scalars, as TensorFlow's kernel does. All compute in double
// (incomplete_functions.h).
#include <cmath>
#include <cstdint>
#include <string>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/math/incomplete_functions.h"

namespace flowstone {
namespace {

constexpr int64_t kIncompleteCost = 2000;

struct IgammaFn {
  template <typename T>
  T operator()(T a, T x) const {
    return static_cast<T>(special::IncompleteGamma(a, x, true));
  }
};

struct IgammacFn {
  template <typename T>
  T operator()(T a, T x) const {
    return static_cast<T>(special::IncompleteGamma(a, x, false));
  }
};

struct IgammaGradAFn {
  template <typename T>
  T operator()(T a, T x) const {
    return static_cast<T>(special::IncompleteGammaDerivativeA(a, x));
  }
};

// A Gamma(alpha, 1) sample x is P(alpha, .)^-1 of a uniform u that does not depend on alpha, so
// dx/dalpha = -(dP/dalpha) / (dP/dx) at (alpha, x) (implicit reparameterization).
struct RandomGammaGradFn {
  template <typename T>
  T operator()(T alpha, T sample) const {
    if (sample == 0) return 0;
    return static_cast<T>(-special::IncompleteGammaDerivativeA(alpha, sample) /
                          special::IncompleteGammaDerivativeX(alpha, sample));
  }
};

// d/dx P(a, x) = x^(a-1) e^-x / Gamma(a), as a graph.
Endpoint GammaDensity(GradientContext& ctx, Endpoint a, Endpoint x) {
  const Endpoint log_density = ctx.Op(
      "Sub", {ctx.Op("Sub", {ctx.Op("Xlogy", {ctx.Op("Sub", {a, ctx.ScalarLike(a, 1)}), x}), x}),
              ctx.Op("Lgamma", {a})});
  return ctx.Op("Exp", {log_density});
}

// Igamma (sign 1) and Igammac (sign -1): d/da = sign IgammaGradA, d/dx = sign density.
template <int kSign>
Status IgammaGrad(GradientContext& ctx) {
  const Endpoint a = ctx.input(0);
  const Endpoint x = ctx.input(1);
  Endpoint grad = ctx.output_grad(0);
  if (kSign < 0) grad = ctx.Op("Neg", {grad});
  ctx.SetInputGrad(0,
                   ctx.ReduceToShapeOf(ctx.Op("Mul", {grad, ctx.Op("IgammaGradA", {a, x})}), a, x));
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(ctx.Op("Mul", {grad, GammaDensity(ctx, a, x)}), x, a));
  return Status::OK();
}

template <typename Fn>
OpBuilder BinaryFunctionOp(const char* name, const char* first, const char* second) {
  OpBuilder builder(name);
  builder.Input(first, "T")
      .Input(second, "T")
      .Output("z", "T")
      .TypeAttr("T", FloatTypeList::DTypes())
      .Shape(shape_fns::Broadcast)
      .Kernel("CPU", BroadcastBinaryKernel<Fn>(FloatTypeList{}, kIncompleteCost));
  return builder;
}

FS_REGISTER_OP(BinaryFunctionOp<IgammaFn>("Igamma", "a", "x")
                   .Gradient(IgammaGrad<1>)
                   .Doc("The regularized lower incomplete gamma function P(a, x)."));
FS_REGISTER_OP(BinaryFunctionOp<IgammacFn>("Igammac", "a", "x")
                   .Gradient(IgammaGrad<-1>)
                   .Doc("The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."));
FS_REGISTER_OP(BinaryFunctionOp<IgammaGradAFn>("IgammaGradA", "a", "x")
                   .NotDifferentiable()
                   .Doc("dP(a, x)/da, the gradient of Igamma with respect to a."));

FS_REGISTER_OP(OpBuilder("RandomGammaGrad")
                   .Input("alpha", "T")
                   .Input("sample", "T")
                   .Output("output", "T")
                   .TypeAttr("T", FloatTypeList::DTypes())
                   .Shape(shape_fns::Broadcast)
                   .Kernel("CPU", BroadcastBinaryKernel<RandomGammaGradFn>(FloatTypeList{},
                                                                           kIncompleteCost))
                   .NotDifferentiable()
                   .Doc("The derivative of Gamma(alpha) samples with respect to alpha."));

// ---------------------------------------------------------------------------------------------
// Betainc

// The shape of Betainc's output: that of its non-scalar operands, which must agree.
Status BetaincOutputShape(const TensorShape* const (&shapes)[3], TensorShape* out) {
  static const char* const kNames[] = {"a", "b", "x"};
  int chosen = -1;
  for (int k = 0; k < 3; ++k) {
    if (shapes[k]->rank() == 0) continue;
    if (chosen < 0) {
      chosen = k;
    } else if (!(*shapes[k] == *shapes[chosen])) {
      return errors::InvalidArgument("Shapes of ", kNames[chosen], " and ", kNames[k],
                                     " are inconsistent: ", shapes[chosen]->ToString(), " vs. ",
                                     shapes[k]->ToString(),
                                     " (Betainc takes operands of one shape, or scalars)");
    }
  }
  *out = chosen < 0 ? TensorShape{} : *shapes[chosen];
  return Status::OK();
}

Status BetaincKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& x = ctx.input(2);
  TensorShape shape;
  FS_RETURN_IF_ERROR(BetaincOutputShape({&a.shape(), &b.shape(), &x.shape()}, &shape));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  return DispatchDType<float, double>(a.dtype(), "Betainc", [&]<typename T>() -> Status {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* px = x.data<T>();
    const int64_t sa = a.rank() > 0, sb = b.rank() > 0, sx = x.rank() > 0;
    T* z = out->data<T>();
    ctx.ParallelFor(out->num_elements(), kIncompleteCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        z[i] = static_cast<T>(special::IncompleteBeta(pa[i * sa], pb[i * sb], px[i * sx]));
      }
    });
    return Status::OK();
  });
}

Status BetaincShape(InferenceContext& ctx) {
  PartialShape out = PartialShape({});
  bool have = false;
  for (int k = 0; k < 3; ++k) {
    const PartialShape& s = ctx.input(k);
    if (s.known_rank() && s.rank() == 0) continue;
    if (!have) {
      out = s;
      have = true;
      continue;
    }
    PartialShape merged;
    Status status = out.Merge(s, &merged);
    if (!status.ok()) {
      return errors::InvalidArgument("Betainc's operands must have one shape or be scalars: ",
                                     out.ToString(), " vs. ", s.ToString());
    }
    out = merged;
  }
  ctx.set_output(0, out);
  return Status::OK();
}

// TensorFlow differentiates Betainc with respect to x only:
// dI_x(a, b)/dx = x^(a-1) (1 - x)^(b-1) / B(a, b).
Status BetaincGrad(GradientContext& ctx) {
  const Endpoint a = ctx.input(0);
  const Endpoint b = ctx.input(1);
  const Endpoint x = ctx.input(2);
  const Endpoint one = ctx.ScalarLike(x, 1);
  const Endpoint log_beta =
      ctx.Op("Sub", {ctx.Op("AddV2", {ctx.Op("Lgamma", {a}), ctx.Op("Lgamma", {b})}),
                     ctx.Op("Lgamma", {ctx.Op("AddV2", {a, b})})});
  const Endpoint log_density = ctx.Op(
      "Sub", {ctx.Op("AddV2", {ctx.Op("Xlog1py", {ctx.Op("Sub", {b, one}), ctx.Op("Neg", {x})}),
                               ctx.Op("Xlogy", {ctx.Op("Sub", {a, one}), x})}),
              log_beta});
  const Endpoint grad = ctx.Op("Mul", {ctx.output_grad(0), ctx.Op("Exp", {log_density})});
  ctx.SetInputGrad(2, ctx.ReduceToShapeOf(grad, x, ctx.output(0)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Betainc")
                   .Input("a", "T")
                   .Input("b", "T")
                   .Input("x", "T")
                   .Output("z", "T")
                   .TypeAttr("T", FloatTypeList::DTypes())
                   .Shape(BetaincShape)
                   .Kernel("CPU", BetaincKernel)
                   .Gradient(BetaincGrad)
                   .Doc("The regularized incomplete beta function I_x(a, b)."));

// ---------------------------------------------------------------------------------------------
// Nextafter

struct NextafterFn {
  template <typename T>
  T operator()(T x1, T x2) const {
    return std::nextafter(x1, x2);
  }
};

FS_REGISTER_OP(OpBuilder("NextAfter")
                   .Input("x1", "T")
                   .Input("x2", "T")
                   .Output("output", "T")
                   .TypeAttr("T", FloatTypeList::DTypes(), DType::kFloat32)
                   .Shape(shape_fns::Broadcast)
                   .Kernel("CPU", BroadcastBinaryKernel<NextafterFn>(FloatTypeList{}, 5))
                   .NotDifferentiable()
                   .Doc("The next representable value after x1 in the direction of x2."));

}  // namespace
}  // namespace flowstone
