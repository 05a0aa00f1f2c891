// Comparisons and binary logic with numpy broadcasting, all producing bool: Equal, NotEqual
// (also of strings, as feature-column vocabularies compare them), Less, LessEqual, Greater,
// GreaterEqual, LogicalAnd, LogicalOr.
#include <cstdint>
#include <string>

#include "elementwise.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

constexpr int64_t kCompareCost = 1;

struct EqualFn {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a == b;
  }
};
struct NotEqualFn {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a != b;
  }
};
struct LessFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualFn {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LogicalAndFn {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOrFn {
  bool operator()(bool a, bool b) const { return a || b; }
};

using EqualityTypeList = TypeList<float, double, int32_t, int64_t, uint8_t, bool, complex64,
                                  complex128, std::string>;

// With incompatible_shape_error=false, Equal and NotEqual of shapes that do not broadcast give a
// scalar (false for Equal, true for NotEqual) instead of failing; the static shape is then
// unknown unless both input shapes are fully known and broadcast.
Status EqualityShape(InferenceContext& ctx) {
  bool error_on_mismatch = true;
  FS_RETURN_IF_ERROR(ctx.GetAttr("incompatible_shape_error", &error_on_mismatch));
  PartialShape out;
  Status s = BroadcastShapes(ctx.input(0), ctx.input(1), &out);
  if (!s.ok()) {
    if (error_on_mismatch) return s;
    out = PartialShape::Unknown();
  } else if (!error_on_mismatch &&
             !(ctx.input(0).IsFullyDefined() && ctx.input(1).IsFullyDefined())) {
    out = PartialShape::Unknown();
  }
  ctx.set_output(0, out);
  return Status::OK();
}

template <typename Fn>
KernelFn EqualityKernel(bool value_on_mismatch) {
  KernelFn compare = BroadcastBinaryKernel<Fn>(EqualityTypeList{}, kCompareCost);
  return [compare, value_on_mismatch](KernelContext& ctx) -> Status {
    if (!ctx.attrs().GetOr<bool>("incompatible_shape_error", true)) {
      TensorShape unused;
      if (!BroadcastShapes(ctx.input(0).shape(), ctx.input(1).shape(), &unused).ok()) {
        Tensor* out;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
        *out->data<bool>() = value_on_mismatch;
        return Status::OK();
      }
    }
    return compare(ctx);
  };
}

template <typename Fn>
OpBuilder EqualityOp(const char* name, bool value_on_mismatch) {
  OpBuilder builder(name);
  builder.Input("x", "T")
      .Input("y", "T")
      .Output("z", "bool")
      .TypeAttr("T", EqualityTypeList::DTypes())
      .Attr("incompatible_shape_error", true)
      .Shape(EqualityShape)
      .Kernel("CPU", EqualityKernel<Fn>(value_on_mismatch))
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(
    EqualityOp<EqualFn>("Equal", false).Doc("x == y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(
    EqualityOp<NotEqualFn>("NotEqual", true).Doc("x != y elementwise, with numpy broadcasting."));

template <typename Fn>
OpBuilder OrderingOp(const char* name) {
  OpBuilder builder(name);
  builder.Input("x", "T")
      .Input("y", "T")
      .Output("z", "bool")
      .TypeAttr("T", NumericTypeList::DTypes())
      .Shape(shape_fns::Broadcast)
      .Kernel("CPU", BroadcastBinaryKernel<Fn>(NumericTypeList{}, kCompareCost))
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(OrderingOp<LessFn>("Less").Doc("x < y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(
    OrderingOp<LessEqualFn>("LessEqual").Doc("x <= y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(OrderingOp<GreaterFn>("Greater").Doc("x > y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(
    OrderingOp<GreaterEqualFn>("GreaterEqual").Doc("x >= y elementwise, with numpy broadcasting."));

template <typename Fn>
OpBuilder LogicalOp(const char* name) {
  OpBuilder builder(name);
  builder.Input("x", "bool")
      .Input("y", "bool")
      .Output("z", "bool")
      .Shape(shape_fns::Broadcast)
      .Kernel(
          "CPU",
          [](KernelContext& ctx) { return ComputeBroadcastBinary<Fn, bool>(ctx, kCompareCost); })
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(
    LogicalOp<LogicalAndFn>("LogicalAnd").Doc("x AND y elementwise, with numpy broadcasting."));
FS_REGISTER_OP(
    LogicalOp<LogicalOrFn>("LogicalOr").Doc("x OR y elementwise, with numpy broadcasting."));

}  // namespace
}  // namespace flowstone
