// Binary arithmetic with numpy broadcasting: AddV2, Sub, Mul, RealDiv, Div, FloorDiv, FloorMod,
// TruncateDiv, TruncateMod, Pow, Maximum, Minimum, SquaredDifference, Atan2, Xlogy, Xdivy,
// Xlog1py and the bitwise ops, and their gradients (TensorFlow's formulas).
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
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
constexpr int64_t kDivCost = 8;
constexpr int64_t kFloorDivCost = 20;
constexpr int64_t kPowCost = 50;

// Integer division by zero traps (SIGFPE) in C++; TensorFlow reports it as an error instead.
template <typename T>
Status CheckNonZeroDivisor(const Tensor& y) {
  if constexpr (std::is_integral_v<T>) {
    const T* data = y.data<T>();
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      if (data[i] == 0) {
        return errors::InvalidArgument(
            "Integer division by zero: the divisor (second operand) has a zero at flat index ", i,
            ". Guard it, e.g. tf.where(tf.equal(y, 0), tf.ones_like(y), y), or divide in floating "
            "point.");
      }
    }
  }
  return Status::OK();
}

// The division-like functors derive from this: BroadcastBinaryKernel calls their Check on the
// divisor before computing.
struct FailsOnZeroDivisor {
  template <typename T>
  static Status Check(const Tensor& y) {
    return CheckNonZeroDivisor<T>(y);
  }
};

// The most negative integer divided by -1 overflows (and traps on x86); numpy and TensorFlow give
// the wrapped result, which is the wrapping negation. Its remainder is 0.
template <typename T>
T TruncDivInt(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return WrapNeg(a);
  }
  return a / b;
}

template <typename T>
T FloorDivInt(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return WrapNeg(a);
    const T q = a / b;
    // C++ truncates toward zero; floor differs when the signs differ and there is a remainder.
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  } else {
    return a / b;
  }
}

template <typename T>
T FloorModInt(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
    const T r = a % b;
    // The result takes the divisor's sign, as in Python.
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    return a % b;
  }
}

// Python's float divmod: a == floor_div * b + floor_mod exactly where possible, the remainder
// taking the sign of b. Division by zero gives inf or nan as a / b does.
template <typename T>
T FloorModFloat(T a, T b) {
  const T r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <typename T>
T FloorDivFloat(T a, T b) {
  if (b == 0) return a / b;
  const T r = std::fmod(a, b);
  T q = (a - r) / b;  // exact up to rounding: a - r is a multiple of b
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1;
  if (q == 0) return std::copysign(T(0), a / b);
  // (a - r) / b is within rounding of an integer; snap to it.
  const T f = std::floor(q);
  return q - f > T(0.5) ? f + 1 : f;
}

struct AddFn {
  template <typename T>
  T operator()(T a, T b) const {
    return WrapAdd(a, b);
  }
};

struct SubFn {
  template <typename T>
  T operator()(T a, T b) const {
    return WrapSub(a, b);
  }
};

struct MulFn {
  template <typename T>
  T operator()(T a, T b) const {
    return WrapMul(a, b);
  }
};

// RealDiv (floats only) and Div: integer Div truncates toward zero, as C++ does.
struct DivFn : FailsOnZeroDivisor {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return TruncDivInt(a, b);
    } else {
      return a / b;
    }
  }
};

struct FloorDivFn : FailsOnZeroDivisor {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return FloorDivInt(a, b);
    } else {
      return FloorDivFloat(a, b);
    }
  }
};

struct FloorModFn : FailsOnZeroDivisor {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return FloorModInt(a, b);
    } else {
      return FloorModFloat(a, b);
    }
  }
};

struct PowFn {
  template <typename T>
  static Status Check(const Tensor& y) {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      const T* data = y.data<T>();
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        if (data[i] < 0) {
          return errors::InvalidArgument(
              "Integers to negative integer powers are not allowed: the exponent has ",
              static_cast<int64_t>(data[i]), " at flat index ", i,
              ". Cast the base to a floating type first, e.g. tf.pow(tf.cast(x, tf.float32), y).");
        }
      }
    }
    return Status::OK();
  }
  template <typename T>
  T operator()(T base, T exponent) const {
    if constexpr (std::is_integral_v<T>) {
      // Square-and-multiply with wrapping products; Check ruled out negative exponents.
      T result = 1;
      while (exponent != 0) {
        if (exponent & 1) result = WrapMul(result, base);
        base = WrapMul(base, base);
        exponent = static_cast<T>(exponent >> 1);
      }
      return result;
    } else {
      return std::pow(base, exponent);
    }
  }
};

// Maximum and Minimum propagate NaN, as numpy's maximum and minimum do.
struct MaximumFn {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};

struct MinimumFn {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};

// A complex difference d gives d * conj(d) = |d|^2, as in TensorFlow.
struct SquaredDifferenceFn {
  template <typename T>
  T operator()(T a, T b) const {
    const T d = WrapSub(a, b);
    if constexpr (kIsComplex<T>) {
      return d * std::conj(d);
    } else {
      return WrapMul(d, d);
    }
  }
};

// C's division and remainder: the quotient truncated toward zero, the remainder with the sign of
// the dividend.
struct TruncateDivFn : FailsOnZeroDivisor {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return TruncDivInt(a, b);
    } else {
      return std::trunc(a / b);
    }
  }
};

struct TruncateModFn : FailsOnZeroDivisor {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
      }
      return a % b;
    } else {
      return std::fmod(a, b);
    }
  }
};

struct Atan2Fn {
  template <typename T>
  T operator()(T y, T x) const {
    return std::atan2(y, x);
  }
};

// x * log(y), x / y and x * log1p(y), each 0 where x is 0 (even where y makes the product NaN).
struct XlogyFn {
  template <typename T>
  T operator()(T x, T y) const {
    return x == T(0) ? T(0) : x * std::log(y);
  }
};

struct XdivyFn {
  template <typename T>
  T operator()(T x, T y) const {
    return x == T(0) ? T(0) : x / y;
  }
};

struct Xlog1pyFn {
  template <typename T>
  T operator()(T x, T y) const {
    return x == T(0) ? T(0) : x * std::log1p(y);
  }
};

// x op y for an op of <functional> (std::bit_and<>...), back in T: the op promotes small types to
// int.
template <typename Op>
struct InTypeFn {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(Op{}(a, b));
  }
};

// Shift counts outside [0, bits) are undefined in C++; like TensorFlow's kernel, the count is
// clamped into that range. Left shifts are done unsigned so that shifting into the sign bit is
// defined; right shifts of negative numbers are arithmetic.
template <typename T>
T ClampShift(T count) {
  constexpr T kMaxShift = static_cast<T>(sizeof(T) * CHAR_BIT - 1);
  return count < T(0) ? T(0) : (count > kMaxShift ? kMaxShift : count);
}

struct LeftShiftFn {
  template <typename T>
  T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) << ClampShift(b));
  }
};

struct RightShiftFn {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a >> ClampShift(b));
  }
};

// The schema and kernel every op here shares: z = fn(x, y) with attr T.
template <typename Fn, typename List>
OpBuilder BinaryOp(const char* name, List types, int64_t cost_per_element, const char* x = "x",
                   const char* y = "y") {
  OpBuilder builder(name);
  builder.Input(x, "T")
      .Input(y, "T")
      .Output("z", "T")
      .TypeAttr("T", List::DTypes())
      .Shape(shape_fns::Broadcast)
      .Kernel("CPU", BroadcastBinaryKernel<Fn>(types, cost_per_element));
  return builder;
}

// ----------------------------------------------------------------------------------------------
// Gradients. The output has the broadcast shape of x and y, so each input's gradient is summed
// over the axes along which that input was broadcast (ReduceToShapeOf), at run time when the
// shapes are not known while building the graph.

// The gradient of x from gx, and of y from gy, both of the output's shape.
void SetReducedInputGrads(GradientContext& ctx, Endpoint gx, Endpoint gy) {
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  ctx.SetInputGrad(0, ctx.ReduceToShapeOf(gx, x, y));
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(gy, y, x));
}

Status AddGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  SetReducedInputGrads(ctx, grad, grad);
  return Status::OK();
}

Status SubGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  ctx.SetInputGrad(0, ctx.ReduceToShapeOf(grad, x, y));
  // Negating after the reduction touches fewer elements when y was broadcast.
  ctx.SetInputGrad(1, ctx.Op("Neg", {ctx.ReduceToShapeOf(grad, y, x)}));
  return Status::OK();
}

// Complex inputs get grad * conj(y) and conj(x) * grad (TensorFlow's convention: the gradient
// of a real loss is dL/dRe + i dL/dIm).
Status MulGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  SetReducedInputGrads(ctx, ctx.Op("Mul", {grad, ctx.ConjIfComplex(ctx.input(1))}),
                       ctx.Op("Mul", {ctx.ConjIfComplex(ctx.input(0)), grad}));
  return Status::OK();
}

// RealDiv and Div (whose gradient only floating inputs receive): d(x/y)/dx = 1/y and
// d(x/y)/dy = -x/y^2, computed as (-x / y) / y so that y*y cannot overflow; both conjugated for
// complex inputs.
Status DivGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  const Endpoint neg_x_over_y2 = ctx.Op("RealDiv", {ctx.Op("RealDiv", {ctx.Op("Neg", {x}), y}), y});
  SetReducedInputGrads(ctx, ctx.Op("RealDiv", {grad, ctx.ConjIfComplex(y)}),
                       ctx.Op("Mul", {grad, ctx.ConjIfComplex(neg_x_over_y2)}));
  return Status::OK();
}

// d(x mod y)/dx = 1 and d(x mod y)/dy = -floor(x / y), away from the jumps.
Status FloorModGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint floor_xy = ctx.Op("FloorDiv", {ctx.input(0), ctx.input(1)});
  SetReducedInputGrads(ctx, grad, ctx.Op("Mul", {grad, ctx.Op("Neg", {floor_xy})}));
  return Status::OK();
}

// z = x^y: dz/dx = y * x^(y-1) and dz/dy = z * log(x). log(x) is only taken where x > 0 and
// counts as 0 elsewhere, as TensorFlow does: at x = 0 the exponent's gradient is 0 instead of
// the NaN that 0 * log(0) would give, and negative bases (real only for integral y) get 0 too.
// Complex inputs use the conjugates of x, y and z, and take log(x) wherever x != 0.
Status PowGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint x = ctx.ConjIfComplex(ctx.input(0));
  const Endpoint y = ctx.ConjIfComplex(ctx.input(1));
  const Endpoint z = ctx.ConjIfComplex(ctx.output(0));
  const Endpoint y_minus_1 = ctx.Op("Sub", {y, ctx.ScalarLike(y, 1)});
  const Endpoint gx = ctx.Op("Mul", {ctx.Op("Mul", {grad, y}), ctx.Op("Pow", {x, y_minus_1})});
  const char* has_log = IsComplex(ctx.input_type(0)) ? "NotEqual" : "Greater";
  const Endpoint positive = ctx.Op(has_log, {x, ctx.ScalarLike(x, 0)});
  const Endpoint safe_x = ctx.Op("SelectV2", {positive, x, ctx.ScalarLike(x, 1)});
  const Endpoint log_x =
      ctx.Op("SelectV2", {positive, ctx.Op("Log", {safe_x}), ctx.ScalarLike(x, 0)});
  const Endpoint gy = ctx.Op("Mul", {ctx.Op("Mul", {grad, z}), log_x});
  SetReducedInputGrads(ctx, gx, gy);
  return Status::OK();
}

// Maximum and Minimum pass the gradient to the input they selected. `selector` (GreaterEqual
// for Maximum, LessEqual for Minimum) is true where x was selected, ties included, so on a tie
// x gets the whole gradient and y none, as in TensorFlow.
Status SelectedInputGrad(GradientContext& ctx, const char* selector) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint x_selected = ctx.Op(selector, {ctx.input(0), ctx.input(1)});
  const Endpoint zero = ctx.ScalarLike(grad, 0);
  SetReducedInputGrads(ctx, ctx.Op("SelectV2", {x_selected, grad, zero}),
                       ctx.Op("SelectV2", {x_selected, zero, grad}));
  return Status::OK();
}

Status MaximumGrad(GradientContext& ctx) { return SelectedInputGrad(ctx, "GreaterEqual"); }
Status MinimumGrad(GradientContext& ctx) { return SelectedInputGrad(ctx, "LessEqual"); }

// d(x-y)^2/dx = 2(x-y) = -d(x-y)^2/dy.
Status SquaredDifferenceGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  const Endpoint gx =
      ctx.Op("Mul", {ctx.ScalarLike(grad, 2), ctx.Op("Mul", {grad, ctx.Op("Sub", {x, y})})});
  ctx.SetInputGrad(0, ctx.ReduceToShapeOf(gx, x, y));
  ctx.SetInputGrad(1, ctx.Op("Neg", {ctx.ReduceToShapeOf(gx, y, x)}));
  return Status::OK();
}

// atan2(y, x): d/dy = x / (x^2 + y^2) and d/dx = -y / (x^2 + y^2).
Status Atan2Grad(GradientContext& ctx) {
  const Endpoint y = ctx.input(0);
  const Endpoint x = ctx.input(1);
  const Endpoint grad_inv =
      ctx.Op("RealDiv",
             {ctx.output_grad(0), ctx.Op("AddV2", {ctx.Op("Square", {x}), ctx.Op("Square", {y})})});
  SetReducedInputGrads(ctx, ctx.Op("Mul", {x, grad_inv}),
                       ctx.Op("Neg", {ctx.Op("Mul", {y, grad_inv})}));
  return Status::OK();
}

// 1 where x is not 0, else 0, in x's dtype: where Xlogy and friends are not forced to 0.
Endpoint NonZeroMask(GradientContext& ctx, Endpoint x) {
  AttrMap cast;
  cast.Set("DstT", ctx.input_type(0));
  return ctx.Op("Cast", {ctx.Op("NotEqual", {x, ctx.ScalarLike(x, 0)})}, cast);
}

// d xlogy/dx = log(y) and d xlogy/dy = x / y where x != 0 (0 elsewhere), as
// xlogy(mask, y) and xdivy(x, y).
Status XlogyGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  const Endpoint grad = ctx.output_grad(0);
  SetReducedInputGrads(ctx, ctx.Op("Mul", {ctx.Op("Xlogy", {NonZeroMask(ctx, x), y}), grad}),
                       ctx.Op("Mul", {ctx.Op("Xdivy", {x, y}), grad}));
  return Status::OK();
}

// d xdivy/dx = 1 / y and d xdivy/dy = -x / y^2 where x != 0.
Status XdivyGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint gy = ctx.Op("Xdivy", {ctx.Op("Neg", {x}), ctx.Op("Square", {y})});
  SetReducedInputGrads(ctx, ctx.Op("Mul", {ctx.Op("Xdivy", {NonZeroMask(ctx, x), y}), grad}),
                       ctx.Op("Mul", {gy, grad}));
  return Status::OK();
}

// d xlog1py/dx = log1p(y) and d xlog1py/dy = x / (1 + y) where x != 0.
Status Xlog1pyGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  const Endpoint y = ctx.input(1);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint gy = ctx.Op("Xdivy", {x, ctx.Op("AddV2", {y, ctx.ScalarLike(y, 1)})});
  SetReducedInputGrads(ctx, ctx.Op("Mul", {ctx.Op("Xlog1py", {NonZeroMask(ctx, x), y}), grad}),
                       ctx.Op("Mul", {gy, grad}));
  return Status::OK();
}

FS_REGISTER_OP(BinaryOp<AddFn>("AddV2", NumericAndComplexTypeList{}, kCheapCost)
                   .Gradient(AddGrad)
                   .Doc("x + y elementwise, with numpy broadcasting. Integers wrap on overflow."));
FS_REGISTER_OP(BinaryOp<SubFn>("Sub", NumericAndComplexTypeList{}, kCheapCost)
                   .Gradient(SubGrad)
                   .Doc("x - y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<MulFn>("Mul", NumericAndComplexTypeList{}, kCheapCost)
                   .Gradient(MulGrad)
                   .Doc("x * y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<DivFn>("RealDiv", FloatAndComplexTypeList{}, kDivCost)
                   .Gradient(DivGrad)
                   .Doc("x / y elementwise for floating types, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<DivFn>("Div", NumericAndComplexTypeList{}, kDivCost)
                   .Gradient(DivGrad)
                   .Doc("x / y elementwise; integer division truncates toward zero and fails on "
                        "a zero divisor."));
// TensorFlow defines no gradient for FloorDiv (its result is piecewise constant).
FS_REGISTER_OP(BinaryOp<FloorDivFn>("FloorDiv", NumericTypeList{}, kFloorDivCost)
                   .NotDifferentiable()
                   .Doc("floor(x / y) elementwise, like Python's //; integer division fails on a "
                        "zero divisor."));
FS_REGISTER_OP(BinaryOp<FloorModFn>("FloorMod", NumericTypeList{}, kFloorDivCost)
                   .Gradient(FloorModGrad)
                   .Doc("x - floor(x / y) * y elementwise, like Python's % (the result has the "
                        "sign of y); integer division fails on a zero divisor."));
FS_REGISTER_OP(BinaryOp<PowFn>("Pow", RealAndComplexTypeList{}, kPowCost)
                   .Gradient(PowGrad)
                   .Doc("x ** y elementwise; negative integer exponents of integers fail."));
FS_REGISTER_OP(BinaryOp<MaximumFn>("Maximum", NumericTypeList{}, kCheapCost)
                   .Gradient(MaximumGrad)
                   .Doc("max(x, y) elementwise, propagating NaN."));
FS_REGISTER_OP(BinaryOp<MinimumFn>("Minimum", NumericTypeList{}, kCheapCost)
                   .Gradient(MinimumGrad)
                   .Doc("min(x, y) elementwise, propagating NaN."));
FS_REGISTER_OP(BinaryOp<SquaredDifferenceFn>("SquaredDifference", RealAndComplexTypeList{},
                                             kCheapCost)
                   .Gradient(SquaredDifferenceGrad)
                   .Doc("(x - y) * (x - y) elementwise, with numpy broadcasting."));

// TensorFlow gives TruncateDiv no gradient and TruncateMod none either.
FS_REGISTER_OP(BinaryOp<TruncateDivFn>("TruncateDiv", NumericTypeList{}, kFloorDivCost)
                   .NotDifferentiable()
                   .Doc("x / y rounded toward zero, like C; integer division fails on a zero "
                        "divisor."));
FS_REGISTER_OP(BinaryOp<TruncateModFn>("TruncateMod", RealTypeList{}, kFloorDivCost)
                   .NotDifferentiable()
                   .Doc("The remainder of TruncateDiv (the sign of x), like C's % and fmod."));
FS_REGISTER_OP(BinaryOp<Atan2Fn>("Atan2", FloatTypeList{}, kPowCost, "y", "x")
                   .Gradient(Atan2Grad)
                   .Doc("The angle of the point (x, y), atan(y / x) in the right quadrant."));
FS_REGISTER_OP(BinaryOp<XlogyFn>("Xlogy", FloatTypeList{}, kPowCost)
                   .Gradient(XlogyGrad)
                   .Doc("x * log(y) elementwise, 0 where x is 0."));
FS_REGISTER_OP(BinaryOp<XdivyFn>("Xdivy", FloatTypeList{}, kDivCost)
                   .Gradient(XdivyGrad)
                   .Doc("x / y elementwise, 0 where x is 0."));
FS_REGISTER_OP(BinaryOp<Xlog1pyFn>("Xlog1py", FloatTypeList{}, kPowCost)
                   .Gradient(Xlog1pyGrad)
                   .Doc("x * log1p(y) elementwise, 0 where x is 0."));

// Bitwise ops on the integer types.
using BitTypeList = TypeList<int32_t, int64_t, uint8_t>;
FS_REGISTER_OP(BinaryOp<InTypeFn<std::bit_and<>>>("BitwiseAnd", BitTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x & y elementwise."));
FS_REGISTER_OP(BinaryOp<InTypeFn<std::bit_or<>>>("BitwiseOr", BitTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x | y elementwise."));
FS_REGISTER_OP(BinaryOp<InTypeFn<std::bit_xor<>>>("BitwiseXor", BitTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x ^ y elementwise."));
FS_REGISTER_OP(BinaryOp<LeftShiftFn>("LeftShift", BitTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x << y elementwise; shift counts are clamped to [0, bits - 1]."));
FS_REGISTER_OP(BinaryOp<RightShiftFn>("RightShift", BitTypeList{}, kCheapCost)
                   .NotDifferentiable()
                   .Doc("x >> y elementwise (arithmetic for signed types); shift counts are "
                        "clamped to [0, bits - 1]."));

}  // namespace
}  // namespace flowstone
