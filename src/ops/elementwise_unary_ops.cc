// Unary elementwise math: Neg, Abs, Square, Sqrt, Rsqrt, Exp, Log, Log1p, Sign, Floor, Ceil,
// Round, Sigmoid, Tanh, Relu, and LogicalNot.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "elementwise.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Rough cycles per element, for deciding when to split work across threads.
constexpr int64_t kCheapCost = 1;
constexpr int64_t kSqrtCost = 8;
constexpr int64_t kTranscendentalCost = 40;

// y = fn(x) elementwise, in place when the input buffer may be reused.
template <typename Fn, typename T>
Status ComputeUnary(KernelContext& ctx, int64_t cost_per_element) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  const T* x = in.data<T>();
  T* y = out->data<T>();
  ctx.ParallelFor(in.num_elements(), cost_per_element, [&](int64_t begin, int64_t end) {
    Fn fn;
    for (int64_t i = begin; i < end; ++i) y[i] = fn(x[i]);
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

FS_REGISTER_OP(UnaryOp<NegFn>("Neg", RealTypeList{}, kCheapCost)
                   .Doc("-x elementwise. Integers wrap on overflow."));
FS_REGISTER_OP(UnaryOp<AbsFn>("Abs", RealTypeList{}, kCheapCost).Doc("|x| elementwise."));
FS_REGISTER_OP(
    UnaryOp<SquareFn>("Square", NumericTypeList{}, kCheapCost).Doc("x * x elementwise."));
FS_REGISTER_OP(UnaryOp<SqrtFn>("Sqrt", FloatTypeList{}, kSqrtCost).Doc("sqrt(x) elementwise."));
FS_REGISTER_OP(
    UnaryOp<RsqrtFn>("Rsqrt", FloatTypeList{}, kSqrtCost).Doc("1 / sqrt(x) elementwise."));
FS_REGISTER_OP(
    UnaryOp<ExpFn>("Exp", FloatTypeList{}, kTranscendentalCost).Doc("e ** x elementwise."));
FS_REGISTER_OP(UnaryOp<LogFn>("Log", FloatTypeList{}, kTranscendentalCost)
                   .Doc("Natural logarithm elementwise."));
FS_REGISTER_OP(UnaryOp<Log1pFn>("Log1p", FloatTypeList{}, kTranscendentalCost)
                   .Doc("log(1 + x) elementwise, accurate for small x."));
FS_REGISTER_OP(UnaryOp<SignFn>("Sign", RealTypeList{}, kCheapCost)
                   .NotDifferentiable()
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
                   .Doc("1 / (1 + exp(-x)) elementwise."));
FS_REGISTER_OP(UnaryOp<TanhFn>("Tanh", FloatTypeList{}, kTranscendentalCost)
                   .Doc("Hyperbolic tangent elementwise."));
FS_REGISTER_OP(UnaryOp<ReluFn>("Relu", NumericTypeList{}, kCheapCost, "features", "activations")
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
