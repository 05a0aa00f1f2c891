// Ops that select parts of a tensor: Slice, StridedSlice (Python's x[...] indexing) and GatherV2,
// with their gradients and the ops those use: StridedSliceGrad (scatters into zeros) and
// UnsortedSegmentSum (sums rows by id). A selection that covers the whole input shares its
// buffer; otherwise elements are copied with the dtype's element size, so every dtype is served.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "array_util.h"
#include "elementwise.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "segment_util.h"
#include "var_memory.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::IndexConst;
using array_util::IndexScalar;
using array_util::IntValues;
using array_util::JoinInts;
using array_util::kIndexTypes;

// How one input dimension is read: elements begin, begin + stride, ... (size of them).
struct DimSelection {
  int64_t begin = 0;
  int64_t stride = 1;
  int64_t size = -1;  // -1: unknown while building the graph
};

bool SelectsWhole(const TensorShape& shape, const std::vector<DimSelection>& sel) {
  for (int d = 0; d < shape.rank(); ++d) {
    if (sel[d].size != shape.dim(d) || (sel[d].begin != 0 && sel[d].size != 0) ||
        (sel[d].stride != 1 && sel[d].size > 1)) {
      return false;
    }
  }
  return true;
}

// A selection as a strided view of a row-major tensor: the selected dims, their element strides
// (negative for reversed dims) and the offset of the first selected element.
struct StridedView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

StridedView ViewOf(const TensorShape& shape, const std::vector<DimSelection>& sel) {
  const int rank = shape.rank();
  StridedView view;
  view.dims.resize(rank);
  view.strides.resize(rank);
  int64_t elem_stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    view.dims[d] = sel[d].size;
    view.strides[d] = sel[d].stride * elem_stride;
    view.offset += sel[d].begin * elem_stride;
    elem_stride *= shape.dim(d);
  }
  return view;
}

// Copies the selection of `in` described by one DimSelection per input dim into `out`, or shares
// the input's buffer when the selection is the whole input.
Status CopySelection(KernelContext& ctx, const Tensor& in, const std::vector<DimSelection>& sel,
                     const TensorShape& out_shape) {
  if (SelectsWhole(in.shape(), sel)) {
    ctx.SetOutput(0, in.Reshaped(out_shape));
    return Status::OK();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  const StridedView view = ViewOf(in.shape(), sel);
  if (in.dtype() == DType::kString) {
    array_util::StridedGather<std::string>(ctx, in.data<std::string>() + view.offset, view.dims,
                                           view.strides, out->data<std::string>());
    return Status::OK();
  }
  return array_util::DispatchElementSize(DTypeSize(in.dtype()), [&]<typename U>() -> Status {
    array_util::StridedGather<U>(ctx, in.data<U>() + view.offset, view.dims, view.strides,
                                 out->data<U>());
    return Status::OK();
  });
}

// --- Slice ----------------------------------------------------------------------------------

// Resolves Slice's begin and size for `dims` (-1: unknown). Either vector may be null (unknown
// values); the result has one entry per dim, size -1 where it is not known.
Status ResolveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>* begin,
                    const std::vector<int64_t>* size, std::vector<DimSelection>* out) {
  out->assign(dims.size(), DimSelection());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    DimSelection& s = (*out)[i];
    if (begin != nullptr) {
      s.begin = (*begin)[i];
      if (s.begin < 0) {
        return errors::InvalidArgument("Expected begin[", i, "] >= 0, but got ", s.begin);
      }
      if (d >= 0 && s.begin > d) {
        return errors::InvalidArgument("Expected begin[", i, "] in [0, ", d, "], but got ",
                                       s.begin);
      }
    }
    if (size == nullptr) continue;
    int64_t n = (*size)[i];
    if (n < -1) {
      return errors::InvalidArgument("Expected size[", i, "] >= -1, but got ", n);
    }
    if (n == -1) {
      s.size = d >= 0 && begin != nullptr ? d - s.begin : -1;
    } else {
      if (d >= 0 && begin != nullptr && n > d - s.begin) {
        return errors::InvalidArgument("Expected size[", i, "] in [0, ", d - s.begin, "], but got ",
                                       n);
      }
      s.size = n;
    }
  }
  return Status::OK();
}

Status SliceShape(InferenceContext& ctx) {
  PartialShape begin_shape, size_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &begin_shape));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 1, &size_shape));
  const PartialShape& in = ctx.input(0);
  int64_t n = std::max(begin_shape.dim(0), size_shape.dim(0));
  if ((begin_shape.dim(0) >= 0 && size_shape.dim(0) >= 0 &&
       begin_shape.dim(0) != size_shape.dim(0)) ||
      (in.known_rank() && n >= 0 && n != in.rank())) {
    return errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ",
                                   in.rank(), ", but got shapes ", begin_shape.ToString(), " and ",
                                   size_shape.ToString(), " instead.");
  }
  if (in.known_rank()) n = in.rank();
  if (n < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.known_rank() ? in.ToVector() : std::vector<int64_t>(n, -1);
  std::vector<int64_t> begin, size;
  const Tensor* begin_t = ctx.input_value(1);
  const Tensor* size_in = ctx.input_value(2);
  if (begin_t) begin = IntValues(*begin_t);
  if (size_in) size = IntValues(*size_in);
  std::vector<DimSelection> sel;
  FS_RETURN_IF_ERROR(
      ResolveSlice(dims, begin_t ? &begin : nullptr, size_in ? &size : nullptr, &sel));
  std::vector<int64_t> out(n);
  for (int i = 0; i < n; ++i) out[i] = sel[i].size;
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

Status SliceKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& begin_t = ctx.input(1);
  const Tensor& size_in = ctx.input(2);
  if (begin_t.rank() != 1 || size_in.rank() != 1 || begin_t.num_elements() != in.rank() ||
      size_in.num_elements() != in.rank()) {
    return errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ",
                                   in.rank(), ", but got shapes ", begin_t.shape().ToString(),
                                   " and ", size_in.shape().ToString(), " instead.");
  }
  std::vector<int64_t> begin = IntValues(begin_t), size = IntValues(size_in);
  std::vector<DimSelection> sel;
  FS_RETURN_IF_ERROR(ResolveSlice(in.shape().ToVector(), &begin, &size, &sel));
  TensorShape out_shape;
  for (const DimSelection& s : sel) out_shape.AddDim(s.size);
  return CopySelection(ctx, in, sel, out_shape);
}

// The gradient padded with zeros back to the input's shape: begin before, the rest after.
Status SliceGrad(GradientContext& ctx) {
  const DType index_type = ctx.input_type(1);
  const Endpoint begin = ctx.input(1);
  Endpoint after = ctx.Op("Sub", {array_util::ShapeAs(ctx, ctx.input(0), index_type),
                                  array_util::ShapeAs(ctx, ctx.output(0), index_type)});
  after = ctx.Op("Sub", {after, begin});
  const Endpoint column = IndexConst(ctx, {-1, 1}, DType::kInt32);
  Endpoint paddings = ctx.Op("ConcatV2", {ctx.Op("Reshape", {begin, column}),
                                          ctx.Op("Reshape", {after, column}), IndexScalar(ctx, 1)});
  ctx.SetInputGrad(0, ctx.Op("Pad", {ctx.output_grad(0), paddings}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Slice")
                   .Input("input", "T")
                   .Input("begin", "Index")
                   .Input("size", "Index")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Index", kIndexTypes)
                   .Shape(SliceShape)
                   .Kernel("CPU", SliceKernel)
                   .Gradient(SliceGrad)
                   .Doc("input[begin[i] : begin[i] + size[i]] in every dimension; size -1 means "
                        "to the end."));

// --- StridedSlice ---------------------------------------------------------------------------

struct SliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};

bool Bit(int64_t mask, int i) { return i < 63 && ((mask >> i) & 1) != 0; }

Status ReadMasks(const AttrMap& attrs, SliceMasks* m) {
  FS_RETURN_IF_ERROR(attrs.Get("begin_mask", &m->begin));
  FS_RETURN_IF_ERROR(attrs.Get("end_mask", &m->end));
  FS_RETURN_IF_ERROR(attrs.Get("ellipsis_mask", &m->ellipsis));
  FS_RETURN_IF_ERROR(attrs.Get("new_axis_mask", &m->new_axis));
  return attrs.Get("shrink_axis_mask", &m->shrink_axis);
}

// The result of applying a strided-slice spec to an input shape.
struct StridedSliceInfo {
  std::vector<DimSelection> dims;   // one per input dim
  std::vector<int64_t> final_dims;  // the output shape (-1: unknown)
};

// Selection of one input dim of size `dim` (-1: unknown) by spec entry i. Follows numpy: negative
// indices count from the end, out-of-range bounds are clamped, and a masked bound means "from the
// start" or "to the end" in the direction of the stride.
Status SelectDim(int64_t dim, int dense_index, int i, const std::vector<int64_t>* begin,
                 const std::vector<int64_t>* end, const std::vector<int64_t>* strides,
                 const SliceMasks& masks, DimSelection* out) {
  const bool shrink = Bit(masks.shrink_axis, i);
  if (strides == nullptr) {
    out->size = shrink ? 1 : -1;
    return Status::OK();
  }
  const int64_t stride = (*strides)[i];
  out->stride = stride;
  if (stride == 0) return errors::InvalidArgument("strides[", i, "] must be non-zero");
  if (shrink) {
    if (stride < 0) {
      return errors::InvalidArgument("only stride 1 allowed on non-range indexing; strides[", i,
                                     "] = ", stride);
    }
    out->size = 1;
    if (begin == nullptr || dim < 0) return Status::OK();
    const int64_t index = (*begin)[i];
    const int64_t forward = index < 0 ? index + dim : index;
    if (forward < 0 || forward >= dim) {
      return errors::InvalidArgument("slice index ", index, " of dimension ", dense_index,
                                     " out of bounds.");
    }
    out->begin = forward;
    return Status::OK();
  }
  const bool begin_masked = Bit(masks.begin, i), end_masked = Bit(masks.end, i);
  if (dim < 0 || (begin == nullptr && !begin_masked) || (end == nullptr && !end_masked)) {
    out->size = -1;
    return Status::OK();
  }
  // Valid positions are [0, dim] going forward and [-1, dim - 1] going backward, where -1 is
  // "before the first element".
  const int64_t lo = stride > 0 ? 0 : -1;
  const int64_t hi = stride > 0 ? dim : dim - 1;
  auto canonical = [&](int64_t x, bool masked, bool is_begin) {
    if (masked) return (stride > 0) == is_begin ? lo : hi;
    int64_t forward = x < 0 ? x + dim : x;
    return std::clamp(forward, lo, hi);
  };
  const int64_t b = canonical(begin_masked ? 0 : (*begin)[i], begin_masked, true);
  const int64_t e = canonical(end_masked ? 0 : (*end)[i], end_masked, false);
  const int64_t span = e - b;
  out->begin = b;
  if (span == 0 || (span < 0) != (stride < 0)) {
    out->size = 0;
  } else {
    out->size = span / stride + (span % stride != 0 ? 1 : 0);
  }
  return Status::OK();
}

// Expands the spec of n entries (begin/end/strides, any of them possibly unknown) against an
// input of known rank: an ellipsis covers the dims no other entry takes (an implicit one is at
// the end), a new-axis entry adds a dim of size 1 and a shrink entry removes its dim.
Status AnalyzeStridedSlice(const PartialShape& input, int n, const std::vector<int64_t>* begin,
                           const std::vector<int64_t>* end, const std::vector<int64_t>* strides,
                           const SliceMasks& masks, StridedSliceInfo* info) {
  int ellipsis = -1;
  for (int i = 0; i < n; ++i) {
    if (!Bit(masks.ellipsis, i)) continue;
    if (ellipsis >= 0)
      return errors::InvalidArgument("Multiple ellipses in slice spec not allowed");
    ellipsis = i;
  }
  const int entries = ellipsis >= 0 ? n : n + 1;
  if (ellipsis < 0) ellipsis = n;
  int regular_after = 0;  // entries after the ellipsis that each take one input dim
  for (int i = ellipsis + 1; i < entries; ++i) regular_after += Bit(masks.new_axis, i) ? 0 : 1;

  const int rank = input.rank();
  info->dims.assign(rank, DimSelection());
  info->final_dims.clear();
  int dense = 0;  // the next input dim
  for (int i = 0; i < entries; ++i) {
    if (i == ellipsis) {
      for (; dense < rank - regular_after; ++dense) {
        info->dims[dense] = DimSelection{0, 1, input.dim(dense)};
        info->final_dims.push_back(input.dim(dense));
      }
    } else if (Bit(masks.new_axis, i)) {
      info->final_dims.push_back(1);
    } else {
      if (dense >= rank) {
        return errors::InvalidArgument("Index out of range using input dim ", dense,
                                       "; input has only ", rank, " dims");
      }
      DimSelection& sel = info->dims[dense];
      FS_RETURN_IF_ERROR(SelectDim(input.dim(dense), dense, i, begin, end, strides, masks, &sel));
      if (!Bit(masks.shrink_axis, i)) info->final_dims.push_back(sel.size);
      ++dense;
    }
  }
  return Status::OK();
}

std::string SpecShapeError(const std::string& b, const std::string& e, const std::string& s) {
  return StrCat("Expected begin, end, and strides to be 1D equal size tensors, but got shapes ", b,
                ", ", e, ", and ", s, " instead.");
}

// The selection that the spec of a StridedSlice-like kernel (its inputs 1, 2 and 3: begin, end
// and strides) makes of a tensor of `shape`.
Status SelectionOfSpec(KernelContext& ctx, const TensorShape& shape, const SliceMasks& masks,
                       StridedSliceInfo* info) {
  const Tensor& b = ctx.input(1);
  const Tensor& e = ctx.input(2);
  const Tensor& s = ctx.input(3);
  if (b.rank() != 1 || e.rank() != 1 || s.rank() != 1 || b.num_elements() != e.num_elements() ||
      b.num_elements() != s.num_elements()) {
    return errors::InvalidArgument(
        SpecShapeError(b.shape().ToString(), e.shape().ToString(), s.shape().ToString()));
  }
  std::vector<int64_t> begin = IntValues(b), end = IntValues(e), strides = IntValues(s);
  return AnalyzeStridedSlice(PartialShape(shape), static_cast<int>(b.num_elements()), &begin, &end,
                             &strides, masks, info);
}

Status StridedSliceShape(InferenceContext& ctx) {
  PartialShape shapes[3];
  int64_t n = -1;
  for (int k = 0; k < 3; ++k) {
    FS_RETURN_IF_ERROR(ctx.WithRank(k + 1, 1, &shapes[k]));
    int64_t len = shapes[k].dim(0);
    if (len >= 0 && n >= 0 && len != n) {
      return errors::InvalidArgument(SpecShapeError(
          ctx.input(1).ToString(), ctx.input(2).ToString(), ctx.input(3).ToString()));
    }
    if (len >= 0) n = len;
  }
  const PartialShape& in = ctx.input(0);
  if (n < 0 || !in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  SliceMasks masks;
  FS_RETURN_IF_ERROR(ReadMasks(ctx.attrs(), &masks));
  std::vector<int64_t> values[3];
  const std::vector<int64_t>* known[3];
  for (int k = 0; k < 3; ++k) {
    const Tensor* t = ctx.input_value(k + 1);
    if (t != nullptr) values[k] = IntValues(*t);
    known[k] = t != nullptr ? &values[k] : nullptr;
  }
  StridedSliceInfo info;
  FS_RETURN_IF_ERROR(
      AnalyzeStridedSlice(in, static_cast<int>(n), known[0], known[1], known[2], masks, &info));
  ctx.set_output(0, PartialShape(info.final_dims));
  return Status::OK();
}

class StridedSliceKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ReadMasks(node().attrs(), &masks_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& in = ctx.input(0);
    StridedSliceInfo info;
    FS_RETURN_IF_ERROR(SelectionOfSpec(ctx, in.shape(), masks_, &info));
    return CopySelection(ctx, in, info.dims, TensorShape(info.final_dims));
  }

 private:
  SliceMasks masks_;
};

Status StridedSliceGradient(GradientContext& ctx) {
  Endpoint shape = array_util::ShapeAs(ctx, ctx.input(0), ctx.input_type(1));
  ctx.SetInputGrad(0, ctx.Op("StridedSliceGrad",
                             {shape, ctx.input(1), ctx.input(2), ctx.input(3), ctx.output_grad(0)},
                             ctx.attrs()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StridedSlice")
                   .Input("input", "T")
                   .Input("begin", "Index")
                   .Input("end", "Index")
                   .Input("strides", "Index")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Index", kIndexTypes)
                   .Attr("begin_mask", 0)
                   .Attr("end_mask", 0)
                   .Attr("ellipsis_mask", 0)
                   .Attr("new_axis_mask", 0)
                   .Attr("shrink_axis_mask", 0)
                   .Shape(StridedSliceShape)
                   .KernelClass<StridedSliceKernel>("CPU")
                   .Gradient(StridedSliceGradient)
                   .Doc("numpy-style basic indexing (x[1:-1:2, ..., None, 0]): begin/end/strides "
                        "per spec entry; bit i of a mask makes entry i full-from-start, "
                        "to-end, an ellipsis, a new axis, or a single index that removes its "
                        "dim."));

// --- StridedSliceGrad -----------------------------------------------------------------------

Status StridedSliceGradShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &unused));
  PartialShape out;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

// Zeros of the input's shape with dy written where StridedSlice read its elements.
class StridedSliceGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ReadMasks(node().attrs(), &masks_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& shape_t = ctx.input(0);
    const Tensor& dy = ctx.input(4);
    if (shape_t.rank() != 1) {
      return errors::InvalidArgument("shape must be a vector, got shape ",
                                     shape_t.shape().ToString());
    }
    const std::vector<int64_t> dims = IntValues(shape_t);
    FS_RETURN_IF_ERROR(ValidateDims(dims));
    const TensorShape shape(dims);
    StridedSliceInfo info;
    FS_RETURN_IF_ERROR(SelectionOfSpec(ctx, shape, masks_, &info));
    const TensorShape sliced(info.final_dims);
    if (dy.shape() != sliced) {
      return errors::InvalidArgument("shape of dy was ", dy.shape().ToString(), " instead of ",
                                     sliced.ToString());
    }
    if (SelectsWhole(shape, info.dims)) {
      ctx.SetOutput(0, dy.Reshaped(shape));
      return Status::OK();
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
    // All-zero bytes are 0 in every dtype.
    std::memset(out->raw_data(), 0, out->bytes());
    if (dy.num_elements() == 0) return Status::OK();
    const StridedView view = ViewOf(shape, info.dims);
    return array_util::DispatchElementSize(DTypeSize(dy.dtype()), [&]<typename U>() -> Status {
      array_util::StridedScatter<U>(ctx, dy.data<U>(), view.dims, view.strides,
                                    out->data<U>() + view.offset);
      return Status::OK();
    });
  }

 private:
  SliceMasks masks_;
};

// StridedSliceGrad is linear in dy; its adjoint slices the same way again.
Status StridedSliceGradGrad(GradientContext& ctx) {
  ctx.SetInputGrad(
      4, ctx.Op("StridedSlice", {ctx.output_grad(0), ctx.input(1), ctx.input(2), ctx.input(3)},
                ctx.attrs()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StridedSliceGrad")
                   .Input("shape", "Index")
                   .Input("begin", "Index")
                   .Input("end", "Index")
                   .Input("strides", "Index")
                   .Input("dy", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Index", kIndexTypes)
                   .Attr("begin_mask", 0)
                   .Attr("end_mask", 0)
                   .Attr("ellipsis_mask", 0)
                   .Attr("new_axis_mask", 0)
                   .Attr("shrink_axis_mask", 0)
                   .Shape(StridedSliceGradShape)
                   .KernelClass<StridedSliceGradKernel>("CPU")
                   .Gradient(StridedSliceGradGrad)
                   .Doc("The gradient of StridedSlice: zeros of `shape` with dy at the elements "
                        "that StridedSlice with the same spec selects."));

// --- ResourceStridedSliceAssign ------------------------------------------------------------

// var[spec] = value in place (Variable's `v[1:3].assign(x)`); value has the slice's shape.
class ResourceStridedSliceAssignKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ReadMasks(node().attrs(), &masks_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& value = ctx.input(4);
    WritableVar var(ctx, /*value_input=*/4);
    FS_RETURN_IF_ERROR(var.status());
    Tensor& target = var.value();
    StridedSliceInfo info;
    FS_RETURN_IF_ERROR(SelectionOfSpec(ctx, target.shape(), masks_, &info));
    const TensorShape sliced(info.final_dims);
    if (value.shape() != sliced) {
      return errors::InvalidArgument("sliced l-value shape ", sliced.ToString(),
                                     " does not match r-value shape ", value.shape().ToString(),
                                     " in assigning to a slice of variable '", var.name(),
                                     "'. Automatic broadcasting is not done, as in TensorFlow.");
    }
    if (value.num_elements() == 0) return Status::OK();
    const StridedView view = ViewOf(target.shape(), info.dims);
    if (value.dtype() == DType::kString) {
      array_util::StridedScatter<std::string>(ctx, value.data<std::string>(), view.dims,
                                              view.strides,
                                              target.data<std::string>() + view.offset);
      return Status::OK();
    }
    return array_util::DispatchElementSize(DTypeSize(value.dtype()), [&]<typename U>() -> Status {
      array_util::StridedScatter<U>(ctx, value.data<U>(), view.dims, view.strides,
                                    target.data<U>() + view.offset);
      return Status::OK();
    });
  }

 private:
  SliceMasks masks_;
};

FS_REGISTER_OP(OpBuilder("ResourceStridedSliceAssign")
                   .Input("ref", "resource")
                   .Input("begin", "Index")
                   .Input("end", "Index")
                   .Input("strides", "Index")
                   .Input("value", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Index", kIndexTypes)
                   .Attr("begin_mask", 0)
                   .Attr("end_mask", 0)
                   .Attr("ellipsis_mask", 0)
                   .Attr("new_axis_mask", 0)
                   .Attr("shrink_axis_mask", 0)
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .KernelClass<ResourceStridedSliceAssignKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("Assigns value to the elements of the resource variable that StridedSlice "
                        "with the same spec selects (v[1:3].assign(x))."));

// --- GatherV2 -------------------------------------------------------------------------------

// Checks batch_dims and axis against the ranks and canonicalizes both.
Status GatherAxes(int64_t axis_arg, int64_t batch_dims_arg, int params_rank, int indices_rank,
                  int* axis, int* batch_dims) {
  if (params_rank == 0) return errors::InvalidArgument("params must be at least 1 dimensional");
  FS_RETURN_IF_ERROR(array_util::CanonicalAxis(axis_arg, params_rank, "axis", axis));
  if (batch_dims_arg < -indices_rank || batch_dims_arg > indices_rank) {
    return errors::InvalidArgument("Expected batch_dims in the range [", -indices_rank, ", ",
                                   indices_rank, "], but got ", batch_dims_arg);
  }
  *batch_dims =
      static_cast<int>(batch_dims_arg < 0 ? batch_dims_arg + indices_rank : batch_dims_arg);
  if (*batch_dims > *axis) {
    return errors::InvalidArgument("batch_dims (", *batch_dims,
                                   ") must be less than or equal to axis (", *axis, ").");
  }
  return Status::OK();
}

std::string BatchDimError(int i, int64_t p, int64_t q) {
  return StrCat("params.shape[", i, "]: ", p, " should be equal to indices.shape[", i, "]: ", q);
}

Status GatherShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  const PartialShape& params = ctx.input(0);
  const PartialShape& indices = ctx.input(1);
  int64_t batch_dims_arg = 0;
  FS_RETURN_IF_ERROR(ctx.GetAttr("batch_dims", &batch_dims_arg));
  if (!params.known_rank() || !indices.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  const Tensor* axis_value = ctx.input_value(2);
  if (axis_value == nullptr) {
    // Whatever the axis, batch_dims must not exceed the last one: checked as if it were the
    // axis, which also keeps the output rank below non-negative.
    int last_axis = 0, b = 0;
    FS_RETURN_IF_ERROR(GatherAxes(params.rank() - 1, batch_dims_arg, params.rank(), indices.rank(),
                                  &last_axis, &b));
    ctx.set_output(0, PartialShape::UnknownOfRank(params.rank() + indices.rank() - 1 - b));
    return Status::OK();
  }
  int axis = 0, batch_dims = 0;
  FS_RETURN_IF_ERROR(GatherAxes(axis_value->ElementAsInt64(0), batch_dims_arg, params.rank(),
                                indices.rank(), &axis, &batch_dims));
  std::vector<int64_t> dims;
  for (int i = 0; i < axis; ++i) {
    int64_t d = params.dim(i);
    if (i < batch_dims) {
      int64_t q = indices.dim(i);
      if (d >= 0 && q >= 0 && d != q) return errors::InvalidArgument(BatchDimError(i, d, q));
      if (d < 0) d = q;
    }
    dims.push_back(d);
  }
  for (int i = batch_dims; i < indices.rank(); ++i) dims.push_back(indices.dim(i));
  for (int i = axis + 1; i < params.rank(); ++i) dims.push_back(params.dim(i));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

class GatherKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return node().attrs().Get("batch_dims", &batch_dims_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& params = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    int64_t axis_arg = 0;
    FS_RETURN_IF_ERROR(array_util::ScalarIndex(ctx.input(2), "axis", &axis_arg));
    int axis = 0, batch_dims = 0;
    FS_RETURN_IF_ERROR(
        GatherAxes(axis_arg, batch_dims_, params.rank(), indices.rank(), &axis, &batch_dims));
    for (int i = 0; i < batch_dims; ++i) {
      if (params.dim(i) != indices.dim(i)) {
        return errors::InvalidArgument(BatchDimError(i, params.dim(i), indices.dim(i)));
      }
    }
    TensorShape out_shape;
    for (int i = 0; i < axis; ++i) out_shape.AddDim(params.dim(i));
    for (int i = batch_dims; i < indices.rank(); ++i) out_shape.AddDim(indices.dim(i));
    for (int i = axis + 1; i < params.rank(); ++i) out_shape.AddDim(params.dim(i));

    // out[batch, outer, m, inner] = params[batch, outer, indices[batch, m], inner].
    const int64_t limit = params.dim(axis);
    const int64_t num_indices = indices.num_elements();
    std::vector<int64_t> idx = IntValues(indices);
    for (int64_t k = 0; k < num_indices; ++k) {
      if (idx[k] < 0 || idx[k] >= limit) return OutOfRange(indices, k, idx[k], limit);
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
    if (out->num_elements() == 0) return Status::OK();
    const int64_t batch = DimProduct(params.shape(), 0, batch_dims);
    const int64_t outer = DimProduct(params.shape(), batch_dims, axis);
    const int64_t per_batch = DimProduct(indices.shape(), batch_dims, indices.rank());
    const int64_t inner_bytes = DimProduct(params.shape(), axis + 1, params.rank()) *
                                static_cast<int64_t>(DTypeSize(params.dtype()));
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    ctx.ParallelFor(batch * outer * per_batch, inner_bytes / 4 + 1,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const int64_t m = r % per_batch;
                        const int64_t bo = r / per_batch;  // batch * outer + o
                        const int64_t b = bo / outer;
                        const int64_t row = bo * limit + idx[b * per_batch + m];
                        CopyElementBytes(params.dtype(), src + row * inner_bytes,
                                         dst + r * inner_bytes, inner_bytes);
                      }
                    });
    return Status::OK();
  }

 private:
  // "indices[1,2] = 7 is not in [0, 5)", naming the position within the indices tensor.
  static Status OutOfRange(const Tensor& indices, int64_t flat, int64_t value, int64_t limit) {
    std::vector<int64_t> position(indices.rank());
    for (int d = indices.rank() - 1; d >= 0; --d) {
      position[d] = flat % indices.dim(d);
      flat /= indices.dim(d);
    }
    std::string where = indices.rank() == 0 ? "" : JoinInts(position);
    return errors::InvalidArgument("indices", where, " = ", value, " is not in [0, ", limit, ")");
  }

  int64_t batch_dims_ = 0;
};

Endpoint Concat(GradientContext& ctx, std::vector<Endpoint> values) {
  values.push_back(IndexScalar(ctx, 0));
  return ctx.Op("ConcatV2", values);
}

// A dense gradient (TensorFlow returns IndexedSlices): the gradient rows are summed into the
// params rows they were gathered from, by UnsortedSegmentSum over the gathered axis. The axis may
// be computed at run time, so the shapes and permutations are built from it there. Batch dims
// are folded into the segment ids: batch b's rows are numbered from b * params.shape[axis].
Status GatherGrad(GradientContext& ctx) {
  int64_t batch_dims = ctx.attrs().GetOr<int64_t>("batch_dims", 0);
  if (batch_dims < 0) {
    const PartialShape& indices_shape = ctx.input(1).node->output_shape(ctx.input(1).index);
    if (!indices_shape.known_rank()) {
      return errors::Unimplemented("The gradient of GatherV2 '", ctx.node().name(),
                                   "' needs indices of known rank for a negative batch_dims");
    }
    batch_dims += indices_shape.rank();
  }
  const DType index_type = ctx.input_type(1);
  const Endpoint params = ctx.input(0);
  const Endpoint shape = ctx.Shape(params);
  const Endpoint rank = ctx.Op("Rank", {params});
  Endpoint axis = ctx.input(2);
  if (ctx.input_type(2) != DType::kInt32) {
    AttrMap cast;
    cast.Set("DstT", DType::kInt32);
    axis = ctx.Op("Cast", {axis}, cast);
  }
  axis = ctx.Op("FloorMod", {axis, rank});  // negative axes count from the end
  // The usual gather (axis 0, or the first axis after the batch dims, given as a constant) needs
  // no transposes.
  const Endpoint axis_in = ctx.input(2);
  const AttrValue* axis_value =
      axis_in.node->type() == "Const" ? axis_in.node->attrs().Find("value") : nullptr;
  const bool moves_axis =
      axis_value == nullptr || std::get<Tensor>(*axis_value).ElementAsInt64(0) != batch_dims;

  const Endpoint after_axis = ctx.Op("AddV2", {axis, IndexScalar(ctx, 1)});
  auto vec = [&](Endpoint scalar) {
    return ctx.Op("Reshape", {scalar, IndexConst(ctx, {1}, DType::kInt32)});
  };
  auto range = [&](Endpoint begin, Endpoint end) {
    return ctx.Op("Range", {begin, end, IndexScalar(ctx, 1)});
  };
  auto slice = [&](Endpoint begin, Endpoint size) { return ctx.Op("Slice", {shape, begin, size}); };
  const Endpoint b = IndexScalar(ctx, batch_dims);
  const Endpoint b_vec = IndexConst(ctx, {batch_dims}, DType::kInt32);
  const Endpoint minus_one = IndexConst(ctx, {-1}, DType::kInt32);
  std::vector<int64_t> batch_axes(batch_dims);
  std::iota(batch_axes.begin(), batch_axes.end(), 0);
  const Endpoint batch_range = IndexConst(ctx, batch_axes, DType::kInt32);

  const Endpoint batch = slice(IndexConst(ctx, {0}, DType::kInt32), b_vec);
  const Endpoint outer = slice(b_vec, vec(ctx.Op("Sub", {axis, b})));
  const Endpoint gathered = slice(vec(axis), IndexConst(ctx, {1}, DType::kInt32));
  const Endpoint inner = slice(vec(after_axis), minus_one);

  // The gradient as [batch..., outer..., m, inner...] with all m gathered rows on one axis,
  // moved next to the batch dims: [batch..., m, outer..., inner...].
  Endpoint values =
      ctx.Op("Reshape", {ctx.output_grad(0), Concat(ctx, {batch, outer, minus_one, inner})});
  if (moves_axis) {
    values = ctx.Op(
        "Transpose",
        {values, Concat(ctx, {batch_range, vec(axis), range(b, axis), range(after_axis, rank)})});
  }
  Endpoint ids = ctx.Op("Reshape", {ctx.input(1), Concat(ctx, {batch, minus_one})});
  Endpoint num_segments =
      ctx.Op("Reshape", {gathered, IndexConst(ctx, {}, DType::kInt32)});  // a scalar
  if (batch_dims > 0) {
    AttrMap keep;
    keep.Set("keep_dims", false);
    Endpoint num_batches = ctx.Op("Prod", {batch, IndexScalar(ctx, 0)}, keep);
    Endpoint batch_number =
        ctx.Op("Reshape", {range(IndexScalar(ctx, 0), num_batches),
                           Concat(ctx, {batch, IndexConst(ctx, {1}, DType::kInt32)})});
    Endpoint first_id = ctx.Op("Mul", {batch_number, num_segments});
    if (index_type != DType::kInt32) {
      AttrMap cast;
      cast.Set("DstT", index_type);
      first_id = ctx.Op("Cast", {first_id}, cast);
    }
    ids = ctx.Op("AddV2", {ids, first_id});
    num_segments = ctx.Op("Mul", {num_batches, num_segments});
  }
  // [batch * gathered, outer..., inner...], then the gathered axis back in its place.
  Endpoint grad = ctx.Op("UnsortedSegmentSum", {values, ids, num_segments});
  if (batch_dims > 0) {
    grad = ctx.Op("Reshape", {grad, Concat(ctx, {batch, gathered, outer, inner})});
  }
  if (moves_axis) {
    grad =
        ctx.Op("Transpose",
               {grad, Concat(ctx, {batch_range, range(IndexScalar(ctx, batch_dims + 1), after_axis),
                                   b_vec, range(after_axis, rank)})});
  }
  // A reshape to params' own shape (no copy) gives the gradient params' static shape, which the
  // run-time shapes above hide from shape inference.
  ctx.SetInputGrad(0, ctx.Op("Reshape", {grad, shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("GatherV2")
                   .Input("params", "Tparams")
                   .Input("indices", "Tindices")
                   .Input("axis", "Taxis")
                   .Output("output", "Tparams")
                   .TypeAttr("Tparams", kAllTypesAndString)
                   .TypeAttr("Tindices", kIndexTypes)
                   .TypeAttr("Taxis", kIndexTypes)
                   .Attr("batch_dims", 0)
                   .Shape(GatherShape)
                   .KernelClass<GatherKernel>("CPU")
                   .Gradient(GatherGrad)
                   .Doc("Slices of params along `axis` at the given indices (tf.gather); an "
                        "index outside [0, params.shape[axis]) is an error."));

// --- UnsortedSegmentSum ---------------------------------------------------------------------

// output[s, ...] = sum of data[k..., ...] over the k with segment_ids[k...] == s. Negative ids
// are dropped, as in TensorFlow.
Status UnsortedSegmentSumKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ids = ctx.input(1);
  int64_t num_segments = 0;
  FS_RETURN_IF_ERROR(
      segment_util::CheckUnsortedSegmentInputs(data, ids, ctx.input(2), &num_segments));
  TensorShape out_shape{num_segments};
  for (int i = ids.rank(); i < data.rank(); ++i) out_shape.AddDim(data.dim(i));
  const std::vector<int64_t> segment = IntValues(ids);
  for (size_t k = 0; k < segment.size(); ++k) {
    if (segment[k] >= num_segments) {
      return errors::InvalidArgument("segment_ids[", k, "] = ", segment[k], " is out of range [0, ",
                                     num_segments, ")");
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  const int64_t inner = DimProduct(data.shape(), ids.rank(), data.rank());
  return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
      data.dtype(), "UnsortedSegmentSum", [&]<typename T>() -> Status {
        T* dst = out->data<T>();
        std::fill_n(dst, out->num_elements(), T(0));
        const T* src = data.data<T>();
        // Threads take disjoint columns of the rows, so no two write one element.
        const int64_t rows = static_cast<int64_t>(segment.size());
        ctx.ParallelFor(inner, rows, [&](int64_t begin, int64_t end) {
          for (int64_t k = 0; k < rows; ++k) {
            if (segment[k] < 0) continue;
            T* o = dst + segment[k] * inner;
            const T* row = src + k * inner;
            // Integers wrap around on overflow, as in TensorFlow.
            for (int64_t c = begin; c < end; ++c) o[c] = WrapAdd(o[c], row[c]);
          }
        });
        return Status::OK();
      });
}

// Each data row gets the gradient of the segment it went to; dropped rows (negative ids) get
// zeros.
Status UnsortedSegmentSumGrad(GradientContext& ctx) {
  const Endpoint ids = ctx.input(1);
  const Endpoint zero = IndexScalar(ctx, 0, ctx.input_type(1));
  Endpoint gathered =
      ctx.Op("GatherV2", {ctx.output_grad(0), ctx.Op("Maximum", {ids, zero}), IndexScalar(ctx, 0)});
  // The mask of kept rows, with trailing dims of size 1 to broadcast over each row.
  Endpoint row_rank = ctx.Op("Sub", {ctx.Op("Rank", {gathered}), ctx.Op("Rank", {ids})});
  Endpoint ones = ctx.Op(
      "Fill",
      {ctx.Op("Reshape", {row_rank, IndexConst(ctx, {1}, DType::kInt32)}), IndexScalar(ctx, 1)});
  Endpoint mask =
      ctx.Op("Reshape", {ctx.Op("GreaterEqual", {ids, zero}), Concat(ctx, {ctx.Shape(ids), ones})});
  ctx.SetInputGrad(0, ctx.Op("SelectV2", {mask, gathered, ctx.Op("ZerosLike", {gathered})}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("UnsortedSegmentSum")
                   .Input("data", "T")
                   .Input("segment_ids", "Tindices")
                   .Input("num_segments", "Tnumsegments")
                   .Output("output", "T")
                   .TypeAttr("T", kRealAndComplexTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .TypeAttr("Tnumsegments", kIndexTypes, DType::kInt32)
                   .Shape(segment_util::UnsortedSegmentShape)
                   .Kernel("CPU", UnsortedSegmentSumKernel)
                   .Gradient(UnsortedSegmentSumGrad)
                   .Doc("Sums the rows of data (the dims after segment_ids' dims) by segment id "
                        "into num_segments rows; rows with a negative id are dropped."));

}  // namespace
}  // namespace flowstone
