// TensorFlow's gradient ops of the unary math family: TanhGrad, SigmoidGrad, SqrtGrad, RsqrtGrad,
// ReciprocalGrad and its old name InvGrad, which take the forward op's output y and the incoming
// gradient dy; and SoftplusGrad and SoftsignGrad, which take the gradients and the forward op's
// features. Imported TensorFlow training graphs contain them, and the gradients of Tanh, Sigmoid,
// Sqrt, Rsqrt, Reciprocal, Softplus and Softsign (elementwise_unary_ops.cc) emit them: one pass
// instead of a chain of Mul/Sub nodes.
//
// The element formulas are TensorFlow's, in the same order of operations. As in TensorFlow, the
// Sqrt, Rsqrt and Reciprocal ones conjugate a complex y themselves, while the Tanh and Sigmoid
// ones take y already conjugated (their callers conjugate). Each op's own gradient is
// TensorFlow's, so second derivatives work.
#include <cmath>
#include <cstdint>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/math/vector_math.h"

namespace flowstone {
namespace {

template <typename T>
T Conj(T x) {
  if constexpr (kIsComplex<T>) {
    return std::conj(x);
  } else {
    return x;
  }
}

// z = dy * (1 - y * y).
struct TanhGradFn {
  template <typename T>
  T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};

// z = dy * y * (1 - y).
struct SigmoidGradFn {
  template <typename T>
  T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};

// z = 0.5 * dy / conj(y).
struct SqrtGradFn {
  template <typename T>
  T operator()(T y, T dy) const {
    return T(0.5) * dy / Conj(y);
  }
};

// z = -0.5 * (dy * conj(y)) * (conj(y) * conj(y)).
struct RsqrtGradFn {
  template <typename T>
  T operator()(T y, T dy) const {
    const T c = Conj(y);
    return T(-0.5) * (dy * c) * (c * c);
  }
};

// z = -dy * conj(y) * conj(y).
struct ReciprocalGradFn {
  template <typename T>
  T operator()(T y, T dy) const {
    const T c = Conj(y);
    return -dy * c * c;
  }
};

// backprops = gradients / (exp(-features) + 1).
struct SoftplusGradFn {
  template <typename T>
  T operator()(T gradients, T features) const {
    return gradients / (vecmath::Exp(-features) + T(1));
  }
};

// backprops = gradients / (|features| + 1)^2.
struct SoftsignGradFn {
  template <typename T>
  T operator()(T gradients, T features) const {
    const T d = std::abs(features) + T(1);
    return gradients / (d * d);
  }
};

// Both inputs must have one shape (TensorFlow requires equal sizes; its graphs always have equal
// shapes); the output has it.
Status MergeBothInputs(InferenceContext& ctx) {
  PartialShape merged;
  Status s = ctx.input(0).Merge(ctx.input(1), &merged);
  if (!s.ok()) {
    return errors::InvalidArgument("both inputs must have the same shape, got ",
                                   ctx.input(0).ToString(), " and ", ctx.input(1).ToString());
  }
  ctx.set_output(0, merged);
  return Status::OK();
}

template <typename Fn, typename... Ts>
KernelFn SameShapeBinaryKernel(TypeList<Ts...> types, int64_t cost_per_element) {
  const KernelFn run = BroadcastBinaryKernel<Fn>(types, cost_per_element);
  return [run](KernelContext& ctx) -> Status {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.shape() != b.shape()) {
      return errors::InvalidArgument(
          ctx.node().type(),
          ": both inputs must have the same shape (the forward op's and its "
          "gradient's), got ",
          a.shape().ToString(), " and ", b.shape().ToString());
    }
    return run(ctx);
  };
}

// ----------------------------------------------------------------------------------------------
// Second derivatives, as TensorFlow's math_grad.py and nn_grad.py write them. Inputs of the
// (y, dy) ops: a = y, b = dy; the incoming gradient is g.

Endpoint Scaled(GradientContext& ctx, Endpoint x, double factor) {
  return ctx.Op("Mul", {x, ctx.ScalarLike(x, factor)});
}

// d/da = g * -2 * conj(b) * conj(a); d/db = TanhGrad(conj(a), g).
Status TanhGradGrad(GradientContext& ctx) {
  const Endpoint a = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint b = ctx.ConjIfComplex(ctx.input(1));
  const Endpoint g = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.Op("Mul", {Scaled(ctx, g, -2.0), b}), a}));
  ctx.SetInputGrad(1, ctx.Op("TanhGrad", {a, g}));
  return Status::OK();
}

// d/da = g conj(b) - 2 g conj(b) conj(a); d/db = SigmoidGrad(conj(a), g).
Status SigmoidGradGrad(GradientContext& ctx) {
  const Endpoint a = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint b = ctx.ConjIfComplex(ctx.input(1));
  const Endpoint g = ctx.output_grad(0);
  const Endpoint gb = ctx.Op("Mul", {g, b});
  ctx.SetInputGrad(0, ctx.Op("Sub", {gb, ctx.Op("Mul", {Scaled(ctx, gb, 2.0), a})}));
  ctx.SetInputGrad(1, ctx.Op("SigmoidGrad", {a, g}));
  return Status::OK();
}

// With z = 0.5 b / conj(a) and ga = g / a: d/da = -conj(ga) z, d/db = 0.5 conj(ga).
Status SqrtGradGrad(GradientContext& ctx) {
  const Endpoint ga = ctx.ConjIfComplex(ctx.Op("RealDiv", {ctx.output_grad(0), ctx.input(0)}));
  ctx.SetInputGrad(0, ctx.Op("Neg", {ctx.Op("Mul", {ga, ctx.output(0)})}));
  ctx.SetInputGrad(1, Scaled(ctx, ga, 0.5));
  return Status::OK();
}

// d/da = -1.5 conj(g) b conj(a)^2; d/db = RsqrtGrad(conj(a), g).
Status RsqrtGradGrad(GradientContext& ctx) {
  const Endpoint ca = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint cg = ctx.ConjIfComplex(ctx.output_grad(0));
  const Endpoint cg_b = ctx.Op("Mul", {Scaled(ctx, cg, -1.5), ctx.input(1)});
  ctx.SetInputGrad(0, ctx.Op("Mul", {cg_b, ctx.Op("Square", {ca})}));
  ctx.SetInputGrad(1, ctx.Op("RsqrtGrad", {ca, ctx.output_grad(0)}));
  return Status::OK();
}

// d/da = conj(g) * -2 * b * conj(a); d/db = the op itself at (conj(a), g).
Status ReciprocalGradGradOf(GradientContext& ctx, const char* op) {
  const Endpoint ca = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint cg = ctx.ConjIfComplex(ctx.output_grad(0));
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.Op("Mul", {Scaled(ctx, cg, -2.0), ctx.input(1)}), ca}));
  ctx.SetInputGrad(1, ctx.Op(op, {ca, ctx.output_grad(0)}));
  return Status::OK();
}
Status ReciprocalGradGrad(GradientContext& ctx) {
  return ReciprocalGradGradOf(ctx, "ReciprocalGrad");
}
Status InvGradGrad(GradientContext& ctx) { return ReciprocalGradGradOf(ctx, "InvGrad"); }

// Inputs (dy, x): d/d(dy) = SoftplusGrad(g, x); d/dx = g dy / (exp(-x) + 2 + exp(x)).
Status SoftplusGradGrad(GradientContext& ctx) {
  const Endpoint dy = ctx.input(0);
  const Endpoint x = ctx.input(1);
  const Endpoint g = ctx.output_grad(0);
  const Endpoint cosh_sum = ctx.Op(
      "AddV2", {ctx.Op("AddV2", {ctx.Op("Exp", {ctx.Op("Neg", {x})}), ctx.ScalarLike(x, 2.0)}),
                ctx.Op("Exp", {x})});
  ctx.SetInputGrad(0, ctx.Op("SoftplusGrad", {g, x}));
  ctx.SetInputGrad(1, ctx.Op("RealDiv", {ctx.Op("Mul", {g, dy}), cosh_sum}));
  return Status::OK();
}

// TensorFlow has no gradient for SoftsignGrad; with z = dy / (1 + |x|)^2:
// d/d(dy) = SoftsignGrad(g, x); d/dx = -2 g dy sign(x) / (1 + |x|)^3.
Status SoftsignGradGrad(GradientContext& ctx) {
  const Endpoint dy = ctx.input(0);
  const Endpoint x = ctx.input(1);
  const Endpoint g = ctx.output_grad(0);
  const Endpoint d = ctx.Op("AddV2", {ctx.Op("Abs", {x}), ctx.ScalarLike(x, 1.0)});
  const Endpoint d_cubed = ctx.Op("Mul", {ctx.Op("Square", {d}), d});
  const Endpoint numerator =
      ctx.Op("Mul", {Scaled(ctx, ctx.Op("Mul", {g, dy}), -2.0), ctx.Op("Sign", {x})});
  ctx.SetInputGrad(0, ctx.Op("SoftsignGrad", {g, x}));
  ctx.SetInputGrad(1, ctx.Op("RealDiv", {numerator, d_cubed}));
  return Status::OK();
}

// ----------------------------------------------------------------------------------------------

constexpr int64_t kCheapCost = 2;
constexpr int64_t kDivideCost = 8;
constexpr int64_t kExpCost = 20;

// One row of the family: an op named `name` with inputs (first, second) and output `output`.
struct GradOpRow {
  const char* name;
  const char* first;
  const char* second;
  const char* output;
  KernelFn kernel;
  std::vector<DType> types;
  GradFn gradient;
  const char* doc;
};

template <typename Fn, typename List>
GradOpRow YGradRow(const char* name, List types, int64_t cost, GradFn gradient, const char* doc) {
  return {name,           "y",      "dy", "z", SameShapeBinaryKernel<Fn>(types, cost),
          List::DTypes(), gradient, doc};
}

template <typename Fn>
GradOpRow FeatureGradRow(const char* name, int64_t cost, GradFn gradient, const char* doc) {
  return {name,
          "gradients",
          "features",
          "backprops",
          SameShapeBinaryKernel<Fn>(FloatTypeList{}, cost),
          FloatTypeList::DTypes(),
          gradient,
          doc};
}

std::vector<GradOpRow> Rows() {
  const FloatAndComplexTypeList types;
  return {
      YGradRow<TanhGradFn>("TanhGrad", types, kCheapCost, TanhGradGrad,
                           "dy * (1 - y * y): the gradient of Tanh from its output y."),
      YGradRow<SigmoidGradFn>("SigmoidGrad", types, kCheapCost, SigmoidGradGrad,
                              "dy * y * (1 - y): the gradient of Sigmoid from its output y."),
      YGradRow<SqrtGradFn>("SqrtGrad", types, kDivideCost, SqrtGradGrad,
                           "0.5 * dy / conj(y): the gradient of Sqrt from its output y."),
      YGradRow<RsqrtGradFn>("RsqrtGrad", types, kCheapCost, RsqrtGradGrad,
                            "-0.5 * dy * conj(y)^3: the gradient of Rsqrt from its output y."),
      YGradRow<ReciprocalGradFn>("ReciprocalGrad", types, kCheapCost, ReciprocalGradGrad,
                                 "-dy * conj(y)^2: the gradient of Reciprocal from its output y."),
      YGradRow<ReciprocalGradFn>("InvGrad", types, kCheapCost, InvGradGrad,
                                 "ReciprocalGrad under its old name."),
      FeatureGradRow<SoftplusGradFn>("SoftplusGrad", kExpCost, SoftplusGradGrad,
                                     "gradients / (exp(-features) + 1): the gradient of Softplus."),
      FeatureGradRow<SoftsignGradFn>("SoftsignGrad", kDivideCost, SoftsignGradGrad,
                                     "gradients / (|features| + 1)^2: the gradient of Softsign."),
  };
}

const bool kRegistered = [] {
  for (GradOpRow& row : Rows()) {
    OpRegistrar registrar(OpBuilder(row.name)
                              .Input(row.first, "T")
                              .Input(row.second, "T")
                              .Output(row.output, "T")
                              .TypeAttr("T", row.types)
                              .Shape(MergeBothInputs)
                              .Kernel("CPU", row.kernel)
                              .Gradient(row.gradient)
                              .Doc(row.doc));
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
