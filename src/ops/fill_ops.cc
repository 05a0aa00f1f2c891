// Ops that make new tensors from a shape and values: Fill, ZerosLike, OnesLike, Range, OneHot.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "array_util.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/data_structures/tensor_list.h"

namespace flowstone {
namespace {

using array_util::IntValues;
using array_util::JoinInts;
using array_util::kIndexTypes;

// Fills `out` with copies of the element at `value` (bytes of the output's dtype).
Status FillWith(KernelContext& ctx, const void* value, Tensor* out) {
  if (out->dtype() == DType::kString) {
    const std::string& v = *static_cast<const std::string*>(value);
    std::string* dst = out->data<std::string>();
    ctx.ParallelFor(out->num_elements(), 1,
                    [&](int64_t begin, int64_t end) { std::fill(dst + begin, dst + end, v); });
    return Status::OK();
  }
  return array_util::DispatchElementSize(DTypeSize(out->dtype()), [&]<typename U>() -> Status {
    U v;
    std::memcpy(&v, value, sizeof(U));
    U* dst = out->data<U>();
    ctx.ParallelFor(out->num_elements(), 1,
                    [&](int64_t begin, int64_t end) { std::fill(dst + begin, dst + end, v); });
    return Status::OK();
  });
}

// --- Fill -----------------------------------------------------------------------------------

Status FillShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  if (const Tensor* dims = ctx.input_value(0)) {
    std::vector<int64_t> values = IntValues(*dims);
    if (std::any_of(values.begin(), values.end(), [](int64_t d) { return d < 0; })) {
      return errors::InvalidArgument("Fill dimensions must be >= 0, got ", JoinInts(values));
    }
  }
  PartialShape out;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

Status FillKernel(KernelContext& ctx) {
  const Tensor& dims_t = ctx.input(0);
  const Tensor& value = ctx.input(1);
  if (dims_t.rank() != 1) {
    return errors::InvalidArgument("dims must be a vector, got shape ", dims_t.shape().ToString());
  }
  if (value.rank() != 0) {
    return errors::InvalidArgument("value must be a scalar, got shape ", value.shape().ToString());
  }
  std::vector<int64_t> dims = IntValues(dims_t);
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
    return errors::InvalidArgument("Fill dimensions must be >= 0, got ", JoinInts(dims));
  }
  FS_RETURN_IF_ERROR(ValidateDims(dims));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  return FillWith(ctx, value.raw_data(), out);
}

// Every output element is the value: it gets the whole gradient's sum (dims get none).
Status FillGrad(GradientContext& ctx) {
  ctx.SetInputGrad(1, array_util::SumAll(ctx, ctx.output_grad(0)));
  return Status::OK();
}

FS_REGISTER_OP(
    OpBuilder("Fill")
        .Input("dims", "index_type")
        .Input("value", "T")
        .Output("output", "T")
        .TypeAttr("T", kAllTypesAndString)
        .TypeAttr("index_type", kIndexTypes, DType::kInt32)
        .Shape(FillShape)
        .Kernel("CPU", FillKernel)
        .Gradient(FillGrad)
        .Doc("A tensor of shape `dims` with every element equal to the scalar `value`."));

// --- ZerosLike, OnesLike --------------------------------------------------------------------

Status ZerosLikeKernel(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(0).shape(), &out));
  // All-zero bytes are 0 (or false) in every dtype.
  std::memset(out->raw_data(), 0, out->bytes());
  return Status::OK();
}

// Every dtype, and variants holding TensorLists (a list of zeros shaped like the list).
std::vector<DType> ZerosLikeTypes() {
  std::vector<DType> types = kAllTypes;
  types.push_back(DType::kVariant);
  return types;
}

FS_REGISTER_OP(OpBuilder("ZerosLike")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", ZerosLikeTypes())
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", ZerosLikeTensorList, {DType::kVariant})
                   .Kernel("CPU", ZerosLikeKernel)
                   .NotDifferentiable()
                   .Doc("Zeros with the shape and dtype of x."));

// The value 1 (true for bool) of a dtype, as a one-element host tensor.
Tensor OneOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return Tensor::Scalar<float>(1.0f);
    case DType::kFloat64:
      return Tensor::Scalar<double>(1.0);
    case DType::kInt32:
      return Tensor::Scalar<int32_t>(1);
    case DType::kInt64:
      return Tensor::Scalar<int64_t>(1);
    case DType::kUInt8:
      return Tensor::Scalar<uint8_t>(1);
    case DType::kBool:
      return Tensor::Scalar<bool>(true);
    case DType::kFloat16:
      return Tensor::Scalar<Half>(Half(1.0f));
    case DType::kBFloat16:
      return Tensor::Scalar<BFloat16>(BFloat16(1.0f));
    case DType::kComplex64:
      return Tensor::Scalar<complex64>(complex64(1.0f, 0.0f));
    case DType::kComplex128:
      return Tensor::Scalar<complex128>(complex128(1.0, 0.0));
    default:
      return Tensor();
  }
}

class OnesLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    one_ = OneOf(node().output_type(0));
    if (!one_.initialized()) {
      return errors::InvalidArgument("OnesLike has no kernel for dtype ",
                                     DTypeName(node().output_type(0)));
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(0).shape(), &out));
    return FillWith(ctx, one_.raw_data(), out);
  }

 private:
  Tensor one_;
};

FS_REGISTER_OP(OpBuilder("OnesLike")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", kAllTypes)
                   .Shape(shape_fns::Unchanged)
                   .KernelClass<OnesLikeKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("Ones with the shape and dtype of x."));

// --- Range ----------------------------------------------------------------------------------

// The number of elements of range(start, limit, delta), with TensorFlow's checks.
template <typename T>
Status RangeSize(T start, T limit, T delta, int64_t* size) {
  if (delta == 0) return errors::InvalidArgument("Requires delta != 0: ", delta);
  if (delta > 0 && start > limit) {
    return errors::InvalidArgument("Requires start <= limit when delta > 0: ", start, "/", limit);
  }
  if (delta < 0 && start < limit) {
    return errors::InvalidArgument("Requires start >= limit when delta < 0: ", start, "/", limit);
  }
  if constexpr (std::is_integral_v<T>) {
    // Exact, in 128 bits: limit - start may not fit in T.
    const __int128 span = static_cast<__int128>(limit) - start;
    const __int128 step = delta;
    const __int128 count = span / step + (span % step != 0 ? 1 : 0);
    *size = static_cast<int64_t>(count);
  } else {
    const double count =
        std::ceil(std::fabs((static_cast<double>(limit) - start) / static_cast<double>(delta)));
    if (!(count < 9.2e18)) {  // also rejects NaN and infinite bounds
      return errors::InvalidArgument(
          "Requires ((limit - start) / delta) <= ", std::numeric_limits<int64_t>::max(),
          ", got range(", start, ", ", limit, ", ", delta, ")");
    }
    *size = static_cast<int64_t>(count);
  }
  return Status::OK();
}

// RangeSize for three scalar tensors of `dtype`.
Status RangeSizeOf(DType dtype, const Tensor& start, const Tensor& limit, const Tensor& delta,
                   int64_t* size) {
  return DispatchDType<float, double, int32_t, int64_t>(
      dtype, "Range", [&]<typename T>() -> Status {
        return RangeSize<T>(*start.data<T>(), *limit.data<T>(), *delta.data<T>(), size);
      });
}

Status ScalarArg(const PartialShape& shape, const char* name) {
  if (shape.known_rank() && shape.rank() != 0) {
    return errors::InvalidArgument(name, " must be a scalar, not shape ", shape.ToString());
  }
  return Status::OK();
}

Status RangeShape(InferenceContext& ctx) {
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) FS_RETURN_IF_ERROR(ScalarArg(ctx.input(i), names[i]));
  const Tensor* v[3] = {ctx.input_value(0), ctx.input_value(1), ctx.input_value(2)};
  if (v[0] == nullptr || v[1] == nullptr || v[2] == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(1));
    return Status::OK();
  }
  int64_t size = 0;
  FS_RETURN_IF_ERROR(RangeSizeOf(ctx.input_type(0), *v[0], *v[1], *v[2], &size));
  ctx.set_output(0, PartialShape{size});
  return Status::OK();
}

Status RangeKernel(KernelContext& ctx) {
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).rank() != 0) {
      return errors::InvalidArgument(names[i], " must be a scalar, not shape ",
                                     ctx.input(i).shape().ToString());
    }
  }
  const DType dtype = ctx.input(0).dtype();
  int64_t size = 0;
  FS_RETURN_IF_ERROR(RangeSizeOf(dtype, ctx.input(0), ctx.input(1), ctx.input(2), &size));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{size}, &out));
  return DispatchDType<float, double, int32_t, int64_t>(
      dtype, "Range", [&]<typename T>() -> Status {
        // start + i * delta in a wider type: no overflow in i * delta for integers, and no drift
        // (as repeated addition would have) for floats.
        using Wide = std::conditional_t<std::is_integral_v<T>, __int128, double>;
        const Wide start = *ctx.input(0).data<T>();
        const Wide delta = *ctx.input(2).data<T>();
        T* dst = out->data<T>();
        for (int64_t i = 0; i < size; ++i) dst[i] = static_cast<T>(start + i * delta);
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("Range")
                   .Input("start", "Tidx")
                   .Input("limit", "Tidx")
                   .Input("delta", "Tidx")
                   .Output("output", "Tidx")
                   .TypeAttr("Tidx", kRealTypes, DType::kInt32)
                   .Shape(RangeShape)
                   .Kernel("CPU", RangeKernel)
                   .NotDifferentiable()
                   .Doc("start, start + delta, ... up to but excluding limit."));

// --- OneHot ---------------------------------------------------------------------------------

// Where the depth dimension goes among rank + 1 output dims.
Status OneHotAxis(int64_t axis, int indices_rank, int* out) {
  if (axis != -1 && (axis < 0 || axis > indices_rank)) {
    return errors::InvalidArgument("Expected axis to be -1 or between [0, ", indices_rank + 1,
                                   ").  But received: ", axis);
  }
  *out = axis == -1 ? indices_rank : static_cast<int>(axis);
  return Status::OK();
}

Status OneHotShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(3, 0, &unused));
  int64_t axis_arg = 0;
  FS_RETURN_IF_ERROR(ctx.GetAttr("axis", &axis_arg));
  if (axis_arg < -1) {
    return errors::InvalidArgument("Expected axis to be -1 or between [0, rank]. But received: ",
                                   axis_arg);
  }
  int64_t depth = -1;
  if (const Tensor* d = ctx.input_value(1)) {
    depth = d->ElementAsInt64(0);
    if (depth < 0) return errors::InvalidArgument("depth must be non-negative, got: ", depth);
  }
  const PartialShape& indices = ctx.input(0);
  if (!indices.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  int axis = 0;
  FS_RETURN_IF_ERROR(OneHotAxis(axis_arg, indices.rank(), &axis));
  Dims dims = indices.dims();
  dims.insert(axis, depth);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

class OneHotKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return node().attrs().Get("axis", &axis_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& indices = ctx.input(0);
    const char* names[3] = {"depth", "on_value", "off_value"};
    for (int i = 1; i < 4; ++i) {
      if (ctx.input(i).rank() != 0) {
        return errors::InvalidArgument(
            names[i - 1], " must be a scalar, but got: ", ctx.input(i).shape().ToString());
      }
    }
    const int64_t depth = ctx.input(1).ElementAsInt64(0);
    if (depth < 0) return errors::InvalidArgument("depth must be non-negative, got: ", depth);
    int axis = 0;
    FS_RETURN_IF_ERROR(OneHotAxis(axis_, indices.rank(), &axis));
    TensorShape out_shape = indices.shape();
    out_shape.mutable_dims().insert(axis, depth);
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
    if (out->num_elements() == 0) return Status::OK();
    FS_RETURN_IF_ERROR(FillWith(ctx, ctx.input(3).raw_data(), out));
    // out[prefix, d, suffix] = on_value where indices[prefix, suffix] == d; indices outside
    // [0, depth) leave the whole slice off.
    const int64_t suffix = array_util::DimProduct(indices.shape(), axis, indices.rank());
    const std::vector<int64_t> idx = IntValues(indices);
    const void* on = ctx.input(2).raw_data();
    return array_util::DispatchElementSize(DTypeSize(out->dtype()), [&]<typename U>() -> Status {
      U on_value;
      std::memcpy(&on_value, on, sizeof(U));
      U* dst = out->data<U>();
      for (int64_t k = 0; k < static_cast<int64_t>(idx.size()); ++k) {
        if (idx[k] < 0 || idx[k] >= depth) continue;
        const int64_t p = k / suffix, s = k % suffix;
        dst[(p * depth + idx[k]) * suffix + s] = on_value;
      }
      return Status::OK();
    });
  }

 private:
  int64_t axis_ = -1;
};

FS_REGISTER_OP(OpBuilder("OneHot")
                   .Input("indices", "TI")
                   .Input("depth", "int32")
                   .Input("on_value", "T")
                   .Input("off_value", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("TI", {DType::kUInt8, DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Attr("axis", -1)
                   .Shape(OneHotShape)
                   .KernelClass<OneHotKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("A one-hot encoding: a new dimension of size depth at `axis` holding "
                        "on_value at each index and off_value elsewhere."));

}  // namespace
}  // namespace flowstone
