// Binary arithmetic with numpy broadcasting: AddV2, Sub, Mul, RealDiv, Div, FloorDiv, FloorMod,
// Pow, Maximum, Minimum, SquaredDifference.
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
struct DivFn {
  template <typename T>
  static Status Check(const Tensor& y) {
    return CheckNonZeroDivisor<T>(y);
  }
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return TruncDivInt(a, b);
    } else {
      return a / b;
    }
  }
};

struct FloorDivFn {
  template <typename T>
  static Status Check(const Tensor& y) {
    return CheckNonZeroDivisor<T>(y);
  }
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return FloorDivInt(a, b);
    } else {
      return FloorDivFloat(a, b);
    }
  }
};

struct FloorModFn {
  template <typename T>
  static Status Check(const Tensor& y) {
    return CheckNonZeroDivisor<T>(y);
  }
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

struct SquaredDifferenceFn {
  template <typename T>
  T operator()(T a, T b) const {
    const T d = WrapSub(a, b);
    return WrapMul(d, d);
  }
};

// The schema and kernel every op here shares: z = fn(x, y) with attr T.
template <typename Fn, typename List>
OpBuilder BinaryOp(const char* name, List types, int64_t cost_per_element) {
  OpBuilder builder(name);
  builder.Input("x", "T")
      .Input("y", "T")
      .Output("z", "T")
      .TypeAttr("T", List::DTypes())
      .Shape(shape_fns::Broadcast)
      .Kernel("CPU", BroadcastBinaryKernel<Fn>(types, cost_per_element));
  return builder;
}

FS_REGISTER_OP(BinaryOp<AddFn>("AddV2", NumericTypeList{}, kCheapCost)
                   .Doc("x + y elementwise, with numpy broadcasting. Integers wrap on overflow."));
FS_REGISTER_OP(BinaryOp<SubFn>("Sub", NumericTypeList{}, kCheapCost)
                   .Doc("x - y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<MulFn>("Mul", NumericTypeList{}, kCheapCost)
                   .Doc("x * y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<DivFn>("RealDiv", FloatTypeList{}, kDivCost)
                   .Doc("x / y elementwise for floating types, with numpy broadcasting."));
FS_REGISTER_OP(BinaryOp<DivFn>("Div", NumericTypeList{}, kDivCost)
                   .Doc("x / y elementwise; integer division truncates toward zero and fails on "
                        "a zero divisor."));
// TensorFlow defines no gradient for FloorDiv (its result is piecewise constant).
FS_REGISTER_OP(BinaryOp<FloorDivFn>("FloorDiv", NumericTypeList{}, kFloorDivCost)
                   .NotDifferentiable()
                   .Doc("floor(x / y) elementwise, like Python's //; integer division fails on a "
                        "zero divisor."));
FS_REGISTER_OP(BinaryOp<FloorModFn>("FloorMod", NumericTypeList{}, kFloorDivCost)
                   .Doc("x - floor(x / y) * y elementwise, like Python's % (the result has the "
                        "sign of y); integer division fails on a zero divisor."));
FS_REGISTER_OP(BinaryOp<PowFn>("Pow", RealTypeList{}, kPowCost)
                   .Doc("x ** y elementwise; negative integer exponents of integers fail."));
FS_REGISTER_OP(BinaryOp<MaximumFn>("Maximum", NumericTypeList{}, kCheapCost)
                   .Doc("max(x, y) elementwise, propagating NaN."));
FS_REGISTER_OP(BinaryOp<MinimumFn>("Minimum", NumericTypeList{}, kCheapCost)
                   .Doc("min(x, y) elementwise, propagating NaN."));
FS_REGISTER_OP(BinaryOp<SquaredDifferenceFn>("SquaredDifference", RealTypeList{}, kCheapCost)
                   .Doc("(x - y) * (x - y) elementwise, with numpy broadcasting."));

}  // namespace
}  // namespace flowstone
