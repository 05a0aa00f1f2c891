// Type conversion and selection: Cast, SelectV2 (tf.where with three arguments), Select (TF1's)
// and Where (tf.where with one argument), with the gradients of Cast, SelectV2 and Select.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "elementwise.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// ----------------------------------------------------------------------------------------------
// Cast

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Floating to integer conversion of a value out of the target's range is undefined in C++ (x86
// gives the most negative value, which TensorFlow and numpy then report). Here it is defined:
// values saturate to the target's range and NaN becomes 0.
template <typename To, typename From>
To SaturatingFloatToInt(From v) {
  if (std::isnan(v)) return 0;
  // The bounds converted to From may round outward (2^31 - 1 becomes 2^31 as a float), so the
  // comparisons are inclusive and whatever passes them converts exactly.
  constexpr From kLow = static_cast<From>(std::numeric_limits<To>::min());
  constexpr From kHigh = static_cast<From>(std::numeric_limits<To>::max());
  if (v <= kLow) return std::numeric_limits<To>::min();
  if (v >= kHigh) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// Truncate=true makes float -> half/bfloat16 drop the low mantissa bits instead of rounding:
// clearing the bits the narrow type cannot hold leaves nothing to round (in its normal range).
template <typename To>
float ClearDroppedMantissaBits(float v) {
  constexpr uint32_t kDroppedBits = std::is_same_v<To, Half> ? 13 : 16;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  // A NaN stays a NaN even if its payload sits in the dropped bits. Branch-free on purpose:
  // with an early `if (isnan) return v;` GCC 12 (at -O1 and -O2) dropped the masking after
  // inlining, and Truncate=true rounded in those builds.
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return std::bit_cast<float>(nan ? bits : bits & ~((uint32_t{1} << kDroppedBits) - 1));
}

// One element. Half and bfloat16 convert through float32; anything to bool is `!= 0`; integers
// narrow modulo 2^bits (as in numpy and TensorFlow). Complex to real keeps the real part and
// drops the imaginary one; real to complex gets a zero imaginary part (TensorFlow's casts).
template <typename To, typename From, bool kTruncate>
To CastValue(From v) {
  if constexpr (kIsComplex<From> && !kIsComplex<To>) {
    if constexpr (std::is_same_v<To, bool>) {
      return v != From(0);
    } else {
      return CastValue<To, typename From::value_type, kTruncate>(v.real());
    }
  } else if constexpr (kIsComplex<To>) {
    using R = typename To::value_type;
    if constexpr (kIsComplex<From>) {
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    } else {
      return To(CastValue<R, From, kTruncate>(v), R(0));
    }
  } else if constexpr (kIsHalfLike<From>) {
    return CastValue<To, float, kTruncate>(static_cast<float>(v));
  } else if constexpr (kIsHalfLike<To>) {
    const float f = static_cast<float>(v);
    if constexpr (kTruncate) {
      return To(ClearDroppedMantissaBits<To>(f));
    } else {
      return To(f);
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return SaturatingFloatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename To, typename From, bool kTruncate>
void CastRange(const void* in, void* out, int64_t begin, int64_t end) {
  const From* src = static_cast<const From*>(in);
  To* dst = static_cast<To*>(out);
  for (int64_t i = begin; i < end; ++i) dst[i] = CastValue<To, From, kTruncate>(src[i]);
}

#define FS_ALL_CAST_TYPES \
  float, double, int32_t, int64_t, uint8_t, bool, Half, BFloat16, complex64, complex128

// Picks the conversion loop once per node from SrcT, DstT and Truncate.
class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const Node& node) : OpKernel(node) {}

  Status Init() override {
    DType src = DType::kInvalid;
    DType dst = DType::kInvalid;
    FS_RETURN_IF_ERROR(node().attrs().Get("SrcT", &src));
    FS_RETURN_IF_ERROR(node().attrs().Get("DstT", &dst));
    const bool truncate = node().attrs().GetOr<bool>("Truncate", false);
    if (src == dst) return Status::OK();  // Compute forwards the input
    return DispatchDType<FS_ALL_CAST_TYPES>(src, "Cast", [&]<typename From>() {
      return DispatchDType<FS_ALL_CAST_TYPES>(dst, "Cast", [&]<typename To>() {
        if constexpr (kIsHalfLike<To> && std::is_floating_point_v<From>) {
          convert_ = truncate ? &CastRange<To, From, true> : &CastRange<To, From, false>;
        } else {
          convert_ = &CastRange<To, From, false>;
        }
        return Status::OK();
      });
    });
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& in = ctx.input(0);
    if (convert_ == nullptr) {
      ctx.SetOutput(0, in);
      return Status::OK();
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
    const void* src = in.raw_data();
    void* dst = out->raw_data();
    ctx.ParallelFor(in.num_elements(), /*cost_per_unit=*/2,
                    [&](int64_t begin, int64_t end) { convert_(src, dst, begin, end); });
    return Status::OK();
  }

 private:
  void (*convert_)(const void* in, void* out, int64_t begin, int64_t end) = nullptr;
};

#undef FS_ALL_CAST_TYPES

// Between floating and complex types the gradient is the incoming one cast back to SrcT (a
// complex gradient of a real input keeps its real part, dL/dx). Casts from or to other types
// have none: integers and bools are not differentiable, as in TensorFlow.
Status CastGrad(GradientContext& ctx) {
  DType src = DType::kInvalid;
  DType dst = DType::kInvalid;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("SrcT", &src));
  FS_RETURN_IF_ERROR(ctx.attrs().Get("DstT", &dst));
  auto differentiable = [](DType t) { return IsFloating(t) || IsComplex(t); };
  if (!differentiable(src) || !differentiable(dst)) return Status::OK();
  AttrMap attrs;
  attrs.Set("SrcT", dst);
  attrs.Set("DstT", src);
  ctx.SetInputGrad(0, ctx.Op("Cast", {ctx.output_grad(0)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Cast")
                   .Input("x", "SrcT")
                   .Output("y", "DstT")
                   .TypeAttr("SrcT", kAllTypes)
                   .TypeAttr("DstT", kAllTypes)
                   .Attr("Truncate", false)
                   .Shape(shape_fns::Unchanged)
                   .KernelClass<CastKernel>("CPU")
                   .Gradient(CastGrad)
                   .Doc("x converted to DstT. Floats to integers truncate toward zero and saturate "
                        "(NaN gives 0); integers narrow modulo 2^bits; nonzero is true. With "
                        "Truncate, floats to half/bfloat16 truncate instead of rounding."));

// ----------------------------------------------------------------------------------------------
// SelectV2

Status SelectV2Shape(InferenceContext& ctx) {
  PartialShape then_else;
  FS_RETURN_IF_ERROR(BroadcastShapes(ctx.input(1), ctx.input(2), &then_else));
  PartialShape out;
  FS_RETURN_IF_ERROR(BroadcastShapes(ctx.input(0), then_else, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

// o[j] = c[j] ? then : else, where each side is an array (when its pointer is given) or one
// value. Both sides are read unconditionally, so the loop has no branch and vectorizes: a
// dropout mask's condition is random, and a branch per element mispredicted about half the time
// (SelectV2 in dropout's gradient was 6% of the tutorial CNN's step).
template <typename E>
void SelectRun(const bool* c, const E* t, E t_scalar, const E* e, E e_scalar, E* o, int64_t n) {
  // bool is one byte holding 0 or 1; as uint8_t the vectorizer can widen it into a mask.
  const uint8_t* cond = reinterpret_cast<const uint8_t*>(c);
  auto run = [&](auto then_at, auto else_at) {
    for (int64_t j = 0; j < n; ++j) {
      const E tv = then_at(j), ev = else_at(j);
      o[j] = cond[j] ? tv : ev;
    }
  };
  auto array = [](const E* p) { return [p](int64_t j) { return p[j]; }; };
  auto value = [](E v) { return [v](int64_t) { return v; }; };
  if (t != nullptr && e != nullptr) {
    run(array(t), array(e));
  } else if (t != nullptr) {
    run(array(t), value(e_scalar));
  } else if (e != nullptr) {
    run(value(t_scalar), array(e));
  } else {
    run(value(t_scalar), value(e_scalar));
  }
}

// Selection only moves elements, so it runs on unsigned integers of the element's width (or on
// the strings themselves).
template <typename E>
Status ComputeSelect(KernelContext& ctx, const Broadcaster<3>& bcast) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ForwardMatchingInputOrAllocate(ctx, bcast.output_shape(), &out));
  const bool* cond = ctx.input(0).data<bool>();
  const E* then_data = ctx.input(1).data<E>();
  const E* else_data = ctx.input(2).data<E>();
  E* dst = out->data<E>();
  const int64_t cs = bcast.inner_stride(0);
  const int64_t ts = bcast.inner_stride(1);
  const int64_t es = bcast.inner_stride(2);
  bcast.Run(ctx, /*cost_per_element=*/1, [&](int64_t pos, int64_t count, const int64_t* offsets) {
    const bool* c = cond + offsets[0];
    const E* t = then_data + offsets[1];
    const E* e = else_data + offsets[2];
    E* o = dst + pos;
    if constexpr (std::is_integral_v<E>) {
      if (cs == 1 && ts <= 1 && es <= 1) {
        SelectRun(c, ts == 1 ? t : nullptr, ts == 0 ? *t : E(), es == 1 ? e : nullptr,
                  es == 0 ? *e : E(), o, count);
        return;
      }
    }
    if (cs == 1 && ts == 1 && es == 1) {
      for (int64_t j = 0; j < count; ++j) o[j] = c[j] ? t[j] : e[j];
    } else if (cs == 0) {  // one condition for the whole run: copy one side
      const E* src = *c ? t : e;
      const int64_t stride = *c ? ts : es;
      for (int64_t j = 0; j < count; ++j) o[j] = src[j * stride];
    } else {
      for (int64_t j = 0; j < count; ++j) o[j] = c[j] ? t[j * ts] : e[j * es];
    }
  });
  return Status::OK();
}

// Runs ComputeSelect for the element type of `dtype`.
Status DispatchSelect(KernelContext& ctx, const Broadcaster<3>& bcast, DType dtype) {
  if (dtype == DType::kString) return ComputeSelect<std::string>(ctx, bcast);
  switch (DTypeSize(dtype)) {
    case 1:
      return ComputeSelect<uint8_t>(ctx, bcast);
    case 2:
      return ComputeSelect<uint16_t>(ctx, bcast);
    case 4:
      return ComputeSelect<uint32_t>(ctx, bcast);
    case 8:
      return ComputeSelect<uint64_t>(ctx, bcast);
    case 16:
      return ComputeSelect<complex128>(ctx, bcast);
    default:
      return errors::InvalidArgument(ctx.node().type(), " has no kernel for dtype ",
                                     DTypeName(dtype));
  }
}

Status SelectV2Kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& then_value = ctx.input(1);
  const Tensor& else_value = ctx.input(2);
  Broadcaster<3> bcast;
  if (!bcast.Init({&cond.shape(), &then_value.shape(), &else_value.shape()}).ok()) {
    return errors::InvalidArgument(
        "condition ", cond.shape().ToString(), ", then ", then_value.shape().ToString(),
        ", and else ", else_value.shape().ToString(),
        " must be broadcastable: aligned from the last dimension, each dimension must be equal "
        "or 1 across the three.");
  }
  return DispatchSelect(ctx, bcast, then_value.dtype());
}

// A scalar zero of any dtype (all of whose zeros are all-zero bits), cheaper than ZerosLike of
// a whole gradient.
Endpoint ZeroScalar(GradientContext& ctx, DType dtype) {
  Tensor zero = Tensor::Host(dtype, TensorShape{});
  std::memset(zero.raw_data(), 0, DTypeSize(dtype));
  return ctx.Const(zero);
}

// The gradient goes to t where the condition held and to e elsewhere, each summed over the
// axes along which that input was broadcast; the condition gets none.
Status SelectV2Grad(GradientContext& ctx) {
  const Endpoint cond = ctx.input(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint out = ctx.output(0);
  const Endpoint zero = ZeroScalar(ctx, ctx.input_type(1));
  const Endpoint gt = ctx.Op("SelectV2", {cond, grad, zero});
  const Endpoint ge = ctx.Op("SelectV2", {cond, zero, grad});
  ctx.SetInputGrad(1, ctx.ReduceToShapeOf(gt, ctx.input(1), out));
  ctx.SetInputGrad(2, ctx.ReduceToShapeOf(ge, ctx.input(2), out));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SelectV2")
                   .Input("condition", "bool")
                   .Input("t", "T")
                   .Input("e", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(SelectV2Shape)
                   .Kernel("CPU", SelectV2Kernel)
                   .Gradient(SelectV2Grad)
                   .Doc("condition ? t : e elementwise, the three broadcast together like numpy."));

// ----------------------------------------------------------------------------------------------
// Select: TF1's tf.where with three arguments, which imported graphs carry (dynamic_rnn with
// sequence_length). t and e have one shape; the condition has that shape, is a scalar, or is a
// vector that picks whole rows (t's first dimension). It runs as SelectV2 with a vector condition
// seen as [n, 1, ..., 1].

Status SelectShape(InferenceContext& ctx) {
  PartialShape value;
  if (!ctx.input(1).Merge(ctx.input(2), &value).ok()) {
    return errors::InvalidArgument("Select: 'then' and 'else' must have the same shape, got ",
                                   ctx.input(1).ToString(), " and ", ctx.input(2).ToString());
  }
  const PartialShape& cond = ctx.input(0);
  const bool row_wise = cond.rank() == 1 && value.rank() > 1;
  if (cond.known_rank() && value.known_rank() && cond.rank() != 0 && !row_wise &&
      !cond.IsCompatibleWith(value)) {
    return errors::InvalidArgument("Select: the condition of shape ", cond.ToString(),
                                   " must be a scalar, a vector over the first dimension, or "
                                   "have the values' shape ",
                                   value.ToString());
  }
  ctx.set_output(0, value);
  return Status::OK();
}

Status SelectKernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const TensorShape& shape = ctx.input(1).shape();
  if (shape != ctx.input(2).shape()) {
    return errors::InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                                   shape.ToString(), " vs. ", ctx.input(2).shape().ToString());
  }
  TensorShape cond_shape = cond.shape();
  if (cond_shape.rank() == 1 && shape.rank() > 1) {
    if (cond_shape.dim(0) != shape.dim(0)) {
      return errors::InvalidArgument(
          "Number of batches of 'then' must match size of 'cond', but "
          "saw: ",
          shape.dim(0), " vs. ", cond_shape.dim(0));
    }
    std::vector<int64_t> rows(shape.rank(), 1);
    rows[0] = cond_shape.dim(0);
    cond_shape = TensorShape(rows);
  } else if (cond_shape.rank() != 0 && cond_shape != shape) {
    return errors::InvalidArgument(
        "'cond' and 'then' must have the same shape (or 'cond' a "
        "scalar or a vector over the first dimension), got ",
        cond_shape.ToString(), " and ", shape.ToString());
  }
  Broadcaster<3> bcast;
  FS_RETURN_IF_ERROR(bcast.Init({&cond_shape, &shape, &shape}));
  return DispatchSelect(ctx, bcast, ctx.input(1).dtype());
}

// As SelectV2's, with zeros of the gradient's shape (no broadcasting to undo).
Status SelectGrad(GradientContext& ctx) {
  const Endpoint cond = ctx.input(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint zeros = ctx.Op("ZerosLike", {grad});
  ctx.SetInputGrad(1, ctx.Op("Select", {cond, grad, zeros}));
  ctx.SetInputGrad(2, ctx.Op("Select", {cond, zeros, grad}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Select")
                   .Input("condition", "bool")
                   .Input("t", "T")
                   .Input("e", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(SelectShape)
                   .Kernel("CPU", SelectKernel)
                   .Gradient(SelectGrad)
                   .Doc("condition ? t : e elementwise (TF1's tf.where); a vector condition "
                        "picks rows."));

// ----------------------------------------------------------------------------------------------
// Where

template <typename T>
bool IsNonZero(T v) {
  if constexpr (kIsHalfLike<T>) {
    return (v.bits & 0x7fffu) != 0;  // either sign of zero is false
  } else {
    return v != T(0);
  }
}

Status WhereShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  ctx.set_output(0, PartialShape({PartialShape::kUnknownDim,
                                  in.known_rank() ? in.rank() : PartialShape::kUnknownDim}));
  return Status::OK();
}

template <typename T>
Status ComputeWhere(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const T* data = in.data<T>();
  const int64_t n = in.num_elements();
  const int rank = in.rank();
  int64_t num_true = 0;
  for (int64_t i = 0; i < n; ++i) num_true += IsNonZero(data[i]) ? 1 : 0;
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{num_true, rank}, &out));
  int64_t* dst = out->data<int64_t>();
  // Walk the coordinates in row-major order alongside the flat index.
  Dims coord;
  coord.resize(rank);
  for (int64_t i = 0; i < n; ++i) {
    if (IsNonZero(data[i])) {
      for (int d = 0; d < rank; ++d) *dst++ = coord[d];
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++coord[d] < in.dim(d)) break;
      coord[d] = 0;
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Where")
                   .Input("input", "T")
                   .Output("index", "int64")
                   .TypeAttr("T", kAllTypes, DType::kBool)
                   .Shape(WhereShape)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             return DispatchDType<float, double, int32_t, int64_t, uint8_t, bool,
                                                  Half, BFloat16, complex64, complex128>(
                                 ctx.input(0).dtype(), "Where",
                                 [&]<typename T>() { return ComputeWhere<T>(ctx); });
                           })
                   .NotDifferentiable()
                   .Doc("The coordinates of the true (nonzero) elements of input, one row each, "
                        "in row-major order: an int64 tensor [num_true, rank(input)]."));

}  // namespace
}  // namespace flowstone
