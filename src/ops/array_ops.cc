// Array ops that rearrange elements: Transpose (and ConjugateTranspose, which also conjugates
// complex elements), ConcatV2, Pack, Unpack, Split, SplitV, Tile and
// the padding ops Pad, PadV2 and MirrorPad, with their gradients and the ops only gradients use
// (InvertPermutation, ConcatOffset, MirrorPadGrad). Kernels move bytes (or elements of the
// dtype's size) and so serve every dtype; ConcatV2, Pack, Unpack, Split, SplitV and Tile also
// serve strings, whose rows they copy with CopyElementBytes.
#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>

#include "array_util.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::IndexConst;
using array_util::IndexScalar;
using array_util::IntValues;
using array_util::JoinInts;
using array_util::kIndexTypes;
using array_util::KnownProduct;

// Each output row is assembled from one row of each input, in order: concatenation when the rows
// are the trailing dims from the axis on. `row_bytes[i]` is input i's row size; rows = outer.
void ConcatRows(KernelContext& ctx, DType dtype, const std::vector<const char*>& inputs,
                const std::vector<int64_t>& row_bytes, int64_t rows, char* out) {
  const int64_t out_row = std::accumulate(row_bytes.begin(), row_bytes.end(), int64_t{0});
  if (out_row == 0) return;
  ctx.ParallelFor(rows, out_row / 4 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      char* dst = out + r * out_row;
      for (size_t i = 0; i < inputs.size(); ++i) {
        CopyElementBytes(dtype, inputs[i] + r * row_bytes[i], dst, row_bytes[i]);
        dst += row_bytes[i];
      }
    }
  });
}

// The inverse of ConcatRows: each input row is cut into consecutive pieces, one per output.
void SplitRows(KernelContext& ctx, DType dtype, const char* in, int64_t rows,
               const std::vector<int64_t>& row_bytes, const std::vector<char*>& outputs) {
  const int64_t in_row = std::accumulate(row_bytes.begin(), row_bytes.end(), int64_t{0});
  if (in_row == 0) return;
  ctx.ParallelFor(rows, in_row / 4 + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const char* src = in + r * in_row;
      for (size_t i = 0; i < outputs.size(); ++i) {
        CopyElementBytes(dtype, src, outputs[i] + r * row_bytes[i], row_bytes[i]);
        src += row_bytes[i];
      }
    }
  });
}

// --- Transpose ------------------------------------------------------------------------------

// Checks that `perm` is a permutation of [0, rank).
Status ValidatePerm(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int64_t>(perm.size()) != rank) {
    return errors::InvalidArgument("transpose expects a vector of size ", rank,
                                   ". But input(1) is a vector of size ", perm.size());
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank) {
      return errors::InvalidArgument(p, " is out of range [0 .. ", rank, ")");
    }
    seen[p] = true;
  }
  for (int i = 0; i < rank; ++i) {
    if (!seen[i]) return errors::InvalidArgument(i, " is missing from ", JoinInts(perm), ".");
  }
  return Status::OK();
}

Status TransposeShape(InferenceContext& ctx) {
  PartialShape perm_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &perm_shape));
  const PartialShape& in = ctx.input(0);
  int rank = in.rank();
  if (rank < 0) rank = static_cast<int>(perm_shape.dim(0));
  if (rank < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (perm_shape.dim(0) >= 0 && perm_shape.dim(0) != rank) {
    return errors::InvalidArgument("Dimension must be ", rank, " but is ", perm_shape.dim(0));
  }
  const Tensor* perm_value = ctx.input_value(1);
  if (perm_value == nullptr || !in.known_rank()) {
    ctx.set_output(0, PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  std::vector<int64_t> perm = IntValues(*perm_value);
  FS_RETURN_IF_ERROR(ValidatePerm(perm, rank));
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) dims[i] = in.dim(static_cast<int>(perm[i]));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status TransposeKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& perm_t = ctx.input(1);
  if (perm_t.rank() != 1) {
    return errors::InvalidArgument("perm must be a vector, not ", perm_t.shape().ToString());
  }
  const int rank = in.rank();
  std::vector<int64_t> perm = IntValues(perm_t);
  FS_RETURN_IF_ERROR(ValidatePerm(perm, rank));
  TensorShape out_shape;
  for (int i = 0; i < rank; ++i) out_shape.AddDim(in.dim(static_cast<int>(perm[i])));

  // Size-1 dims do not affect the memory order, and input dims that stay adjacent and in order
  // move as one: merge both away. An identity permutation is left is a reshape (no copy).
  std::vector<int> kept_new_index(rank, -1);
  std::vector<int64_t> kept_dims;
  for (int k = 0; k < rank; ++k) {
    if (in.dim(k) != 1) {
      kept_new_index[k] = static_cast<int>(kept_dims.size());
      kept_dims.push_back(in.dim(k));
    }
  }
  std::vector<int> order;  // the output's order of the kept input dims
  for (int64_t p : perm) {
    if (kept_new_index[p] >= 0) order.push_back(kept_new_index[p]);
  }
  // Merge runs k, k+1 that appear consecutively in `order`.
  std::vector<int64_t> merged_dims;  // indexed by merged input dim
  std::vector<int> group_of(kept_dims.size());
  for (size_t k = 0; k < kept_dims.size(); ++k) {
    auto pos = std::find(order.begin(), order.end(), static_cast<int>(k));
    bool joins_previous = k > 0 && pos != order.begin() && *(pos - 1) == static_cast<int>(k) - 1;
    if (joins_previous) {
      merged_dims.back() *= kept_dims[k];
    } else {
      merged_dims.push_back(kept_dims[k]);
    }
    group_of[k] = static_cast<int>(merged_dims.size()) - 1;
  }
  std::vector<int> merged_order;
  for (int k : order) {
    if (merged_order.empty() || merged_order.back() != group_of[k]) {
      merged_order.push_back(group_of[k]);
    }
  }
  bool identity = true;
  for (size_t i = 0; i < merged_order.size(); ++i) {
    identity = identity && merged_order[i] == static_cast<int>(i);
  }
  if (identity) {
    ctx.SetOutput(0, in.Reshaped(out_shape));
    return Status::OK();
  }

  const int m = static_cast<int>(merged_dims.size());
  std::vector<int64_t> in_strides(m, 1);
  for (int k = m - 2; k >= 0; --k) in_strides[k] = in_strides[k + 1] * merged_dims[k + 1];
  std::vector<int64_t> out_dims(m), out_in_strides(m);
  for (int i = 0; i < m; ++i) {
    out_dims[i] = merged_dims[merged_order[i]];
    out_in_strides[i] = in_strides[merged_order[i]];
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  return array_util::DispatchElementSize(DTypeSize(in.dtype()), [&]<typename U>() -> Status {
    array_util::StridedGather<U>(ctx, in.data<U>(), out_dims, out_in_strides, out->data<U>());
    return Status::OK();
  });
}

// ConjugateTranspose (tf.linalg.adjoint): Transpose, then complex elements conjugated; other
// dtypes are only moved, as in TensorFlow. The transposed tensor may share the input's buffer,
// so the conjugates go to a new output.
Status ConjugateTransposeKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(TransposeKernel(ctx));
  const DType dtype = ctx.input(0).dtype();
  if (!IsComplex(dtype)) return Status::OK();
  const Tensor transposed = ctx.output(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, transposed.shape(), &out));
  auto conjugate = [&]<typename C>() {
    const C* src = transposed.data<C>();
    C* dst = out->data<C>();
    ctx.ParallelFor(out->num_elements(), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) dst[i] = std::conj(src[i]);
    });
  };
  if (dtype == DType::kComplex64) {
    conjugate.template operator()<complex64>();
  } else {
    conjugate.template operator()<complex128>();
  }
  return Status::OK();
}

// The inverse permutation moves the gradient's dims back (with `op`, Transpose or
// ConjugateTranspose, whose conjugate undoes itself); a constant perm gets a constant inverse,
// so the gradient keeps a static shape.
Status InversePermutationGrad(GradientContext& ctx, const char* op) {
  const Endpoint perm = ctx.input(1);
  Endpoint inverse;
  const AttrValue* value =
      perm.node->type() == "Const" ? perm.node->attrs().Find("value") : nullptr;
  std::vector<int64_t> p;
  if (value != nullptr) p = IntValues(std::get<Tensor>(*value));
  if (value != nullptr && ValidatePerm(p, static_cast<int>(p.size())).ok()) {
    std::vector<int64_t> inv(p.size());
    for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
    inverse = IndexConst(ctx, inv, ctx.input_type(1));
  } else {
    inverse = ctx.Op("InvertPermutation", {perm});
  }
  ctx.SetInputGrad(0, ctx.Op(op, {ctx.output_grad(0), inverse}));
  return Status::OK();
}

Status TransposeGrad(GradientContext& ctx) { return InversePermutationGrad(ctx, "Transpose"); }
Status ConjugateTransposeGrad(GradientContext& ctx) {
  return InversePermutationGrad(ctx, "ConjugateTranspose");
}

FS_REGISTER_OP(OpBuilder("Transpose")
                   .Input("x", "T")
                   .Input("perm", "Tperm")
                   .Output("y", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tperm", kIndexTypes, DType::kInt32)
                   .Shape(TransposeShape)
                   .Kernel("CPU", TransposeKernel)
                   .Gradient(TransposeGrad)
                   .Doc("Permutes dimensions: y.shape[i] = x.shape[perm[i]]. A permutation that "
                        "keeps the memory order (e.g. moving size-1 dims) shares the buffer."));

FS_REGISTER_OP(OpBuilder("ConjugateTranspose")
                   .Input("x", "T")
                   .Input("perm", "Tperm")
                   .Output("y", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tperm", kIndexTypes, DType::kInt32)
                   .Shape(TransposeShape)
                   .Kernel("CPU", ConjugateTransposeKernel)
                   .Gradient(ConjugateTransposeGrad)
                   .Doc("Transpose with complex elements conjugated (the adjoint)."));

// --- InvertPermutation ----------------------------------------------------------------------

Status InvertPermutationShape(InferenceContext& ctx) {
  PartialShape x;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &x));
  ctx.set_output(0, x);
  return Status::OK();
}

Status InvertPermutationKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1) {
    return errors::InvalidArgument("invert_permutation expects a 1D vector, got shape ",
                                   x.shape().ToString());
  }
  const int64_t n = x.num_elements();
  const std::vector<int64_t> perm = IntValues(x);
  std::vector<int64_t> inverse(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = perm[i];
    if (d < 0 || d >= n) return errors::InvalidArgument(d, " is not between 0 and ", n);
    if (inverse[d] != -1) return errors::InvalidArgument(d, " is duplicated in the input.");
    inverse[d] = i;
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &out));
  for (int64_t i = 0; i < n; ++i) {
    if (out->dtype() == DType::kInt32) {
      out->data<int32_t>()[i] = static_cast<int32_t>(inverse[i]);
    } else {
      out->data<int64_t>()[i] = inverse[i];
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("InvertPermutation")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", kIndexTypes, DType::kInt32)
                   .Shape(InvertPermutationShape)
                   .Kernel("CPU", InvertPermutationKernel)
                   .NotDifferentiable()
                   .Doc("The inverse of a permutation of [0, n): y[x[i]] = i."));

// --- ConcatV2 -------------------------------------------------------------------------------

std::string ConcatAxisError(int64_t axis, int rank) {
  return StrCat("ConcatOp : Expected concatenating dimensions in the range [", -rank, ", ", rank,
                "), but got ", axis);
}

Status ConcatShape(InferenceContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  PartialShape axis_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(n, 0, &axis_shape));
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = ctx.input(i);
    if (!s.known_rank()) continue;
    if (rank < 0) {
      rank = s.rank();
    } else if (s.rank() != rank) {
      return errors::InvalidArgument("Shape must be rank ", rank, " but is rank ", s.rank());
    }
  }
  if (rank == 0) {
    return errors::InvalidArgument("Can't concatenate scalars (use tf.stack instead)");
  }
  const Tensor* axis_value = ctx.input_value(n);
  if (rank < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (axis_value == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  int64_t axis_arg = axis_value->ElementAsInt64(0);
  if (axis_arg < -rank || axis_arg >= rank) {
    return errors::InvalidArgument(ConcatAxisError(axis_arg, rank));
  }
  const int axis = static_cast<int>(axis_arg < 0 ? axis_arg + rank : axis_arg);
  std::vector<int64_t> dims(rank, -1);
  std::vector<int> source(rank, -1);  // the input that fixed each dim, for messages
  int64_t axis_size = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = ctx.input(i);
    if (!s.known_rank()) {
      axis_size = -1;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis || s.dim(d) < 0) continue;
      if (dims[d] >= 0 && dims[d] != s.dim(d)) {
        return errors::InvalidArgument("Dimension ", d, " in both shapes must be equal, but are ",
                                       dims[d], " and ", s.dim(d), ". Shapes are ",
                                       ctx.input(source[d]).ToString(), " and ", s.ToString(), ".");
      }
      dims[d] = s.dim(d);
      source[d] = i;
    }
    if (axis_size >= 0) axis_size = s.dim(axis) >= 0 ? axis_size + s.dim(axis) : -1;
  }
  dims[axis] = axis_size;
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ConcatKernel(KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  int64_t axis_arg = 0;
  FS_RETURN_IF_ERROR(array_util::ScalarIndex(ctx.input(n), "axis", &axis_arg));
  const TensorShape& first = ctx.input(0).shape();
  const int rank = first.rank();
  if (rank == 0) {
    return errors::InvalidArgument("Can't concatenate scalars (use tf.stack instead)");
  }
  if (axis_arg < -rank || axis_arg >= rank) {
    return errors::InvalidArgument(ConcatAxisError(axis_arg, rank));
  }
  const int axis = static_cast<int>(axis_arg < 0 ? axis_arg + rank : axis_arg);
  TensorShape out_shape = first;
  int64_t axis_size = 0;
  for (int i = 0; i < n; ++i) {
    const TensorShape& s = ctx.input(i).shape();
    if (s.rank() != rank) {
      return errors::InvalidArgument(
          "ConcatOp : Ranks of all input tensors should match: "
          "shape[0] = ",
          first.ToString(), " vs. shape[", i, "] = ", s.ToString());
    }
    for (int d = 0; d < rank; ++d) {
      if (d != axis && s.dim(d) != first.dim(d)) {
        return errors::InvalidArgument("ConcatOp : Dimensions of inputs should match: shape[0] = ",
                                       first.ToString(), " vs. shape[", i, "] = ", s.ToString());
      }
    }
    axis_size += s.dim(axis);
  }
  out_shape.set_dim(axis, axis_size);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  const size_t elem = DTypeSize(out->dtype());
  std::vector<const char*> inputs;
  std::vector<int64_t> row_bytes;
  for (int i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    inputs.push_back(static_cast<const char*>(t.raw_data()));
    row_bytes.push_back(DimProduct(t.shape(), axis, rank) * static_cast<int64_t>(elem));
  }
  ConcatRows(ctx, out->dtype(), inputs, row_bytes, DimProduct(out_shape, 0, axis),
             static_cast<char*>(out->raw_data()));
  return Status::OK();
}

// Each input gets the slice of the gradient it filled, found from the inputs' run-time shapes.
Status ConcatGrad(GradientContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  Endpoint axis = ctx.input(n);
  if (ctx.input_type(n) != DType::kInt32) {
    AttrMap cast;
    cast.Set("DstT", DType::kInt32);
    axis = ctx.Op("Cast", {axis}, cast);
  }
  std::vector<Endpoint> offset_inputs = {axis};
  for (int i = 0; i < n; ++i) offset_inputs.push_back(ctx.Shape(ctx.input(i)));
  Node* offsets = ctx.AddNode("ConcatOffset", offset_inputs);
  if (offsets == nullptr) return Status::OK();  // ctx.status() holds the error
  for (int i = 0; i < n; ++i) {
    ctx.SetInputGrad(
        i, ctx.Op("Slice", {ctx.output_grad(0), Endpoint{offsets, i}, offset_inputs[i + 1]}));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ConcatV2")
                   .InputList("values", "T", "N")
                   .Input("axis", "Tidx")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                   .Shape(ConcatShape)
                   .Kernel("CPU", ConcatKernel)
                   .Gradient(ConcatGrad)
                   .Doc("Joins N tensors of one rank along `axis` (negative counts from the "
                        "end); the other dimensions must agree."));

// --- ConcatOffset ---------------------------------------------------------------------------

Status ConcatOffsetShape(InferenceContext& ctx) {
  // The kernel reads the first shape for the rank. TensorFlow asks for N >= 2; one shape is
  // allowed here because the gradient of a one-input ConcatV2 asks for its offset.
  if (ctx.num_inputs() < 2) {
    return errors::InvalidArgument("ConcatOffset needs at least one shape (N >= 1), got N = ",
                                   ctx.num_inputs() - 1);
  }
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 0, &unused));
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    PartialShape shape;
    FS_RETURN_IF_ERROR(ctx.WithRank(i, 1, &shape));
    ctx.set_output(i - 1, shape);
  }
  return Status::OK();
}

// Where each of the N shapes starts in their concatenation along concat_dim.
Status ConcatOffsetKernel(KernelContext& ctx) {
  int64_t concat_dim = 0;
  FS_RETURN_IF_ERROR(array_util::ScalarIndex(ctx.input(0), "concat_dim", &concat_dim));
  const Tensor& first = ctx.input(1);
  if (first.rank() != 1) {
    return errors::InvalidArgument("input 0 should be a vector, but got shape ",
                                   first.shape().ToString());
  }
  const int rank = static_cast<int>(first.num_elements());
  if (concat_dim < -rank || concat_dim >= rank) {
    return errors::InvalidArgument("Concat dim is out of range: ", concat_dim, " vs. ", rank);
  }
  const int axis = static_cast<int>(concat_dim < 0 ? concat_dim + rank : concat_dim);
  const std::vector<int64_t> first_dims = IntValues(first);
  int64_t offset = 0;
  for (int i = 0; i + 1 < ctx.num_inputs(); ++i) {
    const Tensor& shape = ctx.input(i + 1);
    if (shape.rank() != 1 || shape.num_elements() != rank) {
      return errors::InvalidArgument("input ", i, " should contain ", rank, " elements, but got ",
                                     shape.num_elements());
    }
    const std::vector<int64_t> dims = IntValues(shape);
    for (int d = 0; d < rank; ++d) {
      if (d != axis && dims[d] != first_dims[d]) {
        return errors::InvalidArgument(
            "All dimensions except ", axis, " must match. Input ", i, " has shape ", JoinInts(dims),
            " and doesn't match input 0 with shape ", JoinInts(first_dims), ".");
      }
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(i, TensorShape{rank}, &out));
    std::fill_n(out->data<int32_t>(), rank, 0);
    out->data<int32_t>()[axis] = static_cast<int32_t>(offset);
    offset += dims[axis];
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ConcatOffset")
                   .Input("concat_dim", "int32")
                   .InputList("shape", "int32", "N")
                   .OutputList("offset", "int32", "N")
                   .Shape(ConcatOffsetShape)
                   .Kernel("CPU", ConcatOffsetKernel)
                   .NotDifferentiable()
                   .Doc("For N shapes concatenated along concat_dim, where each one starts (the "
                        "gradient of ConcatV2 slices with these)."));

// --- Pack / Unpack --------------------------------------------------------------------------

// Maps Pack's axis into [0, rank]: the output has one more dimension than each value.
Status PackAxis(int64_t axis, int value_rank, int* out) {
  const int expanded = value_rank + 1;
  if (axis < -expanded || axis >= expanded) {
    return errors::InvalidArgument("axis = ", axis, " not in [", -expanded, ", ", expanded, ")");
  }
  *out = static_cast<int>(axis < 0 ? axis + expanded : axis);
  return Status::OK();
}

Status PackShape(InferenceContext& ctx) {
  if (ctx.num_inputs() == 0) {
    return errors::InvalidArgument("Attr 'N' of 'Pack' Op passed 0 less than minimum 1.");
  }
  PartialShape merged = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    PartialShape next;
    if (!merged.Merge(ctx.input(i), &next).ok()) {
      return errors::InvalidArgument(
          "Shapes of all inputs must match: values[0].shape = ", ctx.input(0).ToString(),
          " != values[", i, "].shape = ", ctx.input(i).ToString());
    }
    merged = next;
  }
  int64_t axis_arg = 0;
  FS_RETURN_IF_ERROR(ctx.GetAttr("axis", &axis_arg));
  if (!merged.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  int axis = 0;
  FS_RETURN_IF_ERROR(PackAxis(axis_arg, merged.rank(), &axis));
  Dims dims = merged.dims();
  dims.insert(axis, ctx.num_inputs());
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

class PackKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return node().attrs().Get("axis", &axis_); }

  Status Compute(KernelContext& ctx) override {
    const TensorShape& first = ctx.input(0).shape();
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      if (ctx.input(i).shape() != first) {
        return errors::InvalidArgument(
            "Shapes of all inputs must match: values[0].shape = ", first.ToString(), " != values[",
            i, "].shape = ", ctx.input(i).shape().ToString());
      }
    }
    int axis = 0;
    FS_RETURN_IF_ERROR(PackAxis(axis_, first.rank(), &axis));
    TensorShape out_shape = first;
    out_shape.mutable_dims().insert(axis, ctx.num_inputs());
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
    const int64_t row =
        DimProduct(first, axis, first.rank()) * static_cast<int64_t>(DTypeSize(out->dtype()));
    std::vector<const char*> inputs;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      inputs.push_back(static_cast<const char*>(ctx.input(i).raw_data()));
    }
    ConcatRows(ctx, out->dtype(), inputs, std::vector<int64_t>(inputs.size(), row),
               DimProduct(first, 0, axis), static_cast<char*>(out->raw_data()));
    return Status::OK();
  }

 private:
  int64_t axis_ = 0;
};

Status PackGrad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("num", static_cast<int64_t>(ctx.num_inputs()));
  attrs.Set("axis", ctx.attrs().GetOr<int64_t>("axis", 0));
  Node* pieces = ctx.AddNode("Unpack", {ctx.output_grad(0)}, attrs);
  if (pieces == nullptr) return Status::OK();  // ctx.status() holds the error
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.SetInputGrad(i, Endpoint{pieces, i});
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Pack")
                   .InputList("values", "T", "N")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .Attr("axis", 0)
                   .Shape(PackShape)
                   .KernelClass<PackKernel>("CPU")
                   .Gradient(PackGrad)
                   .Doc("Stacks N tensors of one shape along a new dimension `axis` (tf.stack)."));

Status UnpackAxis(int64_t axis, int rank, int* out) {
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("axis = ", axis, " not in [", -rank, ", ", rank, ")");
  }
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return Status::OK();
}

Status UnpackShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  int64_t num = 0, axis_arg = 0;
  FS_RETURN_IF_ERROR(ctx.GetAttr("num", &num));
  FS_RETURN_IF_ERROR(ctx.GetAttr("axis", &axis_arg));
  PartialShape piece = PartialShape::Unknown();
  if (in.known_rank()) {
    int axis = 0;
    FS_RETURN_IF_ERROR(UnpackAxis(axis_arg, in.rank(), &axis));
    if (in.dim(axis) >= 0 && in.dim(axis) != num) {
      return errors::InvalidArgument("Dimension must be ", num, " but is ", in.dim(axis));
    }
    Dims dims = in.dims();
    dims.erase(axis);
    piece = PartialShape(dims);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, piece);
  return Status::OK();
}

class UnpackKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return node().attrs().Get("axis", &axis_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& in = ctx.input(0);
    const int num = ctx.num_outputs();
    int axis = 0;
    FS_RETURN_IF_ERROR(UnpackAxis(axis_, in.rank(), &axis));
    if (in.dim(axis) != num) {
      return errors::InvalidArgument("Input shape axis ", axis, " must equal ", num, ", got shape ",
                                     in.shape().ToString());
    }
    TensorShape piece = in.shape();
    piece.mutable_dims().erase(axis);
    std::vector<char*> outputs;
    for (int i = 0; i < num; ++i) {
      Tensor* out;
      FS_RETURN_IF_ERROR(ctx.AllocateOutput(i, piece, &out));
      outputs.push_back(static_cast<char*>(out->raw_data()));
    }
    const int64_t row =
        DimProduct(in.shape(), axis + 1, in.rank()) * static_cast<int64_t>(DTypeSize(in.dtype()));
    SplitRows(ctx, in.dtype(), static_cast<const char*>(in.raw_data()),
              DimProduct(in.shape(), 0, axis), std::vector<int64_t>(num, row), outputs);
    return Status::OK();
  }

 private:
  int64_t axis_ = 0;
};

// Outputs without a gradient contribute zeros.
Status UnpackGrad(GradientContext& ctx) {
  std::vector<Endpoint> grads;
  for (int i = 0; i < ctx.num_outputs(); ++i) grads.push_back(ctx.output_grad(i));
  AttrMap attrs;
  attrs.Set("axis", ctx.attrs().GetOr<int64_t>("axis", 0));
  ctx.SetInputGrad(0, ctx.Op("Pack", grads, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Unpack")
                   .Input("value", "T")
                   .OutputList("output", "T", "num")
                   .TypeAttr("T", kAllTypesAndString)
                   .Attr("axis", 0)
                   .Shape(UnpackShape)
                   .KernelClass<UnpackKernel>("CPU")
                   .Gradient(UnpackGrad)
                   .Doc("Splits a tensor into `num` tensors along `axis`, removing it "
                        "(tf.unstack)."));

// --- Split / SplitV -------------------------------------------------------------------------

Status SplitAxis(int64_t split_dim, int rank, int* out) {
  if (split_dim < -rank || split_dim >= rank) {
    return errors::InvalidArgument("-input rank(-", rank, ") <= split_dim < input rank (", rank,
                                   "), but got ", split_dim);
  }
  *out = static_cast<int>(split_dim < 0 ? split_dim + rank : split_dim);
  return Status::OK();
}

// Resolves SplitV's size_splits against the split dimension's size (`dim` < 0: unknown, and a -1
// entry then stays unknown).
Status ResolveSplitSizes(const std::vector<int64_t>& sizes, int64_t num_split, int64_t dim,
                         std::vector<int64_t>* out) {
  if (static_cast<int64_t>(sizes.size()) != num_split) {
    return errors::InvalidArgument("Length of size_splits (", sizes.size(),
                                   ") should be equal to num_split (", num_split, ")");
  }
  int infer = -1;
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer >= 0) {
        return errors::InvalidArgument(
            "size_splits may contain only one -1, but has -1 at "
            "indices ",
            infer, " and ", i);
      }
      infer = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      return errors::InvalidArgument("Split size at index ", i, " must be >= 0. Got: ", sizes[i]);
    } else {
      total += sizes[i];
    }
  }
  *out = sizes;
  if (dim < 0) return Status::OK();
  if ((infer < 0 && total != dim) || (infer >= 0 && total > dim)) {
    return errors::InvalidArgument(
        "Determined shape must either match input shape along split_dim exactly if fully "
        "specified, or be less than the size of the input along split_dim if not fully "
        "specified. Got: ",
        total, " (size_splits ", JoinInts(sizes), " for a dimension of size ", dim, ")");
  }
  if (infer >= 0) (*out)[infer] = dim - total;
  return Status::OK();
}

// Splits `in` along `axis` into pieces of the given sizes (all known).
Status SplitKernelCommon(KernelContext& ctx, const Tensor& in, int axis,
                         const std::vector<int64_t>& sizes) {
  std::vector<char*> outputs;
  std::vector<int64_t> row_bytes;
  const int64_t inner =
      DimProduct(in.shape(), axis + 1, in.rank()) * static_cast<int64_t>(DTypeSize(in.dtype()));
  if (sizes.size() == 1) {
    ctx.SetOutput(0, in);  // one piece: the input itself
    return Status::OK();
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    TensorShape piece = in.shape();
    piece.set_dim(axis, sizes[i]);
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(static_cast<int>(i), piece, &out));
    outputs.push_back(static_cast<char*>(out->raw_data()));
    row_bytes.push_back(sizes[i] * inner);
  }
  SplitRows(ctx, in.dtype(), static_cast<const char*>(in.raw_data()),
            DimProduct(in.shape(), 0, axis), row_bytes, outputs);
  return Status::OK();
}

Status SplitShape(InferenceContext& ctx) {
  PartialShape dim_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 0, &dim_shape));
  const PartialShape& in = ctx.input(1);
  const int num_split = ctx.num_outputs();
  if (num_split < 1) {
    return errors::InvalidArgument("num_split must be at least 1, got ", num_split);
  }
  PartialShape piece = PartialShape::Unknown();
  const Tensor* dim_value = ctx.input_value(0);
  if (in.known_rank() && dim_value == nullptr) {
    piece = PartialShape::UnknownOfRank(in.rank());
  } else if (in.known_rank()) {
    int axis = 0;
    FS_RETURN_IF_ERROR(SplitAxis(dim_value->ElementAsInt64(0), in.rank(), &axis));
    std::vector<int64_t> dims = in.ToVector();
    if (dims[axis] >= 0) {
      if (dims[axis] % num_split != 0) {
        return errors::InvalidArgument("Dimension size must be evenly divisible by ", num_split,
                                       " but is ", dims[axis]);
      }
      dims[axis] /= num_split;
    }
    piece = PartialShape(dims);
  }
  for (int i = 0; i < num_split; ++i) ctx.set_output(i, piece);
  return Status::OK();
}

Status SplitKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(1);
  const int num_split = ctx.num_outputs();
  int64_t split_dim = 0;
  FS_RETURN_IF_ERROR(array_util::ScalarIndex(ctx.input(0), "split_dim", &split_dim));
  int axis = 0;
  FS_RETURN_IF_ERROR(SplitAxis(split_dim, in.rank(), &axis));
  if (in.dim(axis) % num_split != 0) {
    return errors::InvalidArgument(
        "Number of ways to split should evenly divide the split dimension, but got split_dim ",
        split_dim, " (size = ", in.dim(axis), ") and num_split ", num_split);
  }
  return SplitKernelCommon(ctx, in, axis,
                           std::vector<int64_t>(num_split, in.dim(axis) / num_split));
}

// The pieces' gradients joined again along the split axis; pieces without one give zeros.
Endpoint JoinPieceGrads(GradientContext& ctx, Endpoint axis) {
  std::vector<Endpoint> inputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) inputs.push_back(ctx.output_grad(i));
  inputs.push_back(axis);
  return ctx.Op("ConcatV2", inputs);
}

Status SplitGrad(GradientContext& ctx) {
  ctx.SetInputGrad(1, JoinPieceGrads(ctx, ctx.input(0)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Split")
                   .Input("split_dim", "int32")
                   .Input("value", "T")
                   .OutputList("output", "T", "num_split")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(SplitShape)
                   .Kernel("CPU", SplitKernel)
                   .Gradient(SplitGrad)
                   .Doc("Splits `value` along `split_dim` into num_split equal pieces."));

Status SplitVShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  const PartialShape& in = ctx.input(0);
  const int num_split = ctx.num_outputs();
  if (num_split < 1) {
    return errors::InvalidArgument("num_split must be at least 1, got ", num_split);
  }
  const Tensor* sizes_value = ctx.input_value(1);
  const Tensor* dim_value = ctx.input_value(2);
  int axis = -1;
  if (in.known_rank() && dim_value != nullptr) {
    FS_RETURN_IF_ERROR(SplitAxis(dim_value->ElementAsInt64(0), in.rank(), &axis));
  }
  std::vector<int64_t> sizes(num_split, -1);
  if (sizes_value != nullptr) {
    FS_RETURN_IF_ERROR(ResolveSplitSizes(IntValues(*sizes_value), num_split,
                                         axis >= 0 ? in.dim(axis) : -1, &sizes));
  }
  for (int i = 0; i < num_split; ++i) {
    if (!in.known_rank()) {
      ctx.set_output(i, PartialShape::Unknown());
    } else if (axis < 0) {
      ctx.set_output(i, PartialShape::UnknownOfRank(in.rank()));
    } else {
      std::vector<int64_t> dims = in.ToVector();
      dims[axis] = sizes[i];
      ctx.set_output(i, PartialShape(dims));
    }
  }
  return Status::OK();
}

Status SplitVKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& sizes_t = ctx.input(1);
  if (sizes_t.rank() != 1) {
    return errors::InvalidArgument("size_splits must be a vector, not ",
                                   sizes_t.shape().ToString());
  }
  int64_t split_dim = 0;
  FS_RETURN_IF_ERROR(array_util::ScalarIndex(ctx.input(2), "split_dim", &split_dim));
  int axis = 0;
  FS_RETURN_IF_ERROR(SplitAxis(split_dim, in.rank(), &axis));
  std::vector<int64_t> sizes;
  FS_RETURN_IF_ERROR(
      ResolveSplitSizes(IntValues(sizes_t), ctx.num_outputs(), in.dim(axis), &sizes));
  return SplitKernelCommon(ctx, in, axis, sizes);
}

Status SplitVGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, JoinPieceGrads(ctx, ctx.input(2)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SplitV")
                   .Input("value", "T")
                   .Input("size_splits", "Tlen")
                   .Input("split_dim", "int32")
                   .OutputList("output", "T", "num_split")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Tlen", kIndexTypes, DType::kInt64)
                   .Shape(SplitVShape)
                   .Kernel("CPU", SplitVKernel)
                   .Gradient(SplitVGrad)
                   .Doc("Splits `value` along `split_dim` into pieces of size_splits sizes (one "
                        "may be -1: the rest)."));

// --- Tile -----------------------------------------------------------------------------------

Status CheckMultiples(const std::vector<int64_t>& multiples, int rank) {
  if (static_cast<int64_t>(multiples.size()) != rank) {
    return errors::InvalidArgument("Expected multiples argument to be a vector of length ", rank,
                                   " but got length ", multiples.size());
  }
  for (size_t i = 0; i < multiples.size(); ++i) {
    if (multiples[i] < 0) {
      return errors::InvalidArgument("Expected multiples[", i, "] >= 0, but got ", multiples[i]);
    }
  }
  return Status::OK();
}

Status TileOverflow(int i, int64_t dim, int64_t multiple) {
  return errors::InvalidArgument("Tile: output dimension ", i, " (input dimension ", dim,
                                 " times multiples[", i, "] = ", multiple,
                                 ") overflows int64; use smaller multiples");
}

Status TileShape(InferenceContext& ctx) {
  PartialShape multiples_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &multiples_shape));
  const PartialShape& in = ctx.input(0);
  int rank = in.known_rank() ? in.rank() : static_cast<int>(multiples_shape.dim(0));
  if (rank < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (multiples_shape.dim(0) >= 0 && multiples_shape.dim(0) != rank) {
    return errors::InvalidArgument("Expected multiples argument to be a vector of length ", rank,
                                   " but got length ", multiples_shape.dim(0));
  }
  const Tensor* multiples_value = ctx.input_value(1);
  std::vector<int64_t> dims(rank, -1);
  if (multiples_value != nullptr) {
    std::vector<int64_t> multiples = IntValues(*multiples_value);
    FS_RETURN_IF_ERROR(CheckMultiples(multiples, rank));
    for (int i = 0; i < rank; ++i) {
      int64_t d = in.known_rank() ? in.dim(i) : -1;
      if (d > 0 && __builtin_mul_overflow(d, multiples[i], &dims[i])) {
        return TileOverflow(i, d, multiples[i]);
      }
      dims[i] = multiples[i] == 0 ? 0 : (d < 0 ? -1 : d * multiples[i]);
    }
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status TileKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& multiples_t = ctx.input(1);
  if (multiples_t.rank() != 1) {
    return errors::InvalidArgument("Expected multiples argument to be a vector, but got shape ",
                                   multiples_t.shape().ToString());
  }
  const int rank = in.rank();
  std::vector<int64_t> multiples = IntValues(multiples_t);
  FS_RETURN_IF_ERROR(CheckMultiples(multiples, rank));
  TensorShape out_shape;
  bool unchanged = true;
  for (int i = 0; i < rank; ++i) {
    int64_t dim;
    if (__builtin_mul_overflow(in.dim(i), multiples[i], &dim)) {
      return TileOverflow(i, in.dim(i), multiples[i]);
    }
    out_shape.AddDim(dim);
    unchanged = unchanged && multiples[i] == 1;
  }
  if (unchanged) {
    ctx.SetOutput(0, in);
    return Status::OK();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  // Each output row (all dims but the last) is its input row, repeated multiples[last] times.
  const size_t elem = DTypeSize(in.dtype());
  const int64_t in_row = in.dim(rank - 1);
  const int64_t out_row = out_shape.dim(rank - 1);
  const int64_t rows = DimProduct(out_shape, 0, rank - 1);
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  ctx.ParallelFor(rows, out_row, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t in_r = 0, rest = r, scale = 1;
      for (int d = rank - 2; d >= 0; --d) {
        in_r += (rest % out_shape.dim(d)) % in.dim(d) * scale;
        rest /= out_shape.dim(d);
        scale *= in.dim(d);
      }
      char* row = dst + r * out_row * elem;
      for (int64_t m = 0; m < multiples[rank - 1]; ++m) {
        CopyElementBytes(in.dtype(), src + in_r * in_row * elem, row + m * in_row * elem,
                         in_row * elem);
      }
    }
  });
  return Status::OK();
}

// Viewing the gradient with each tiled dim i split into (multiples[i], input dim i), the input's
// gradient sums over the copies: the even axes of that view.
Status TileGrad(GradientContext& ctx) {
  const DType index_type = ctx.input_type(1);
  AttrMap pack;
  pack.Set("axis", int64_t{1});
  const Endpoint input_shape = array_util::ShapeAs(ctx, ctx.input(0), index_type);
  Endpoint pairs = ctx.Op("Pack", {ctx.input(1), input_shape}, pack);
  Endpoint split_shape = ctx.Op("Reshape", {pairs, IndexConst(ctx, {-1}, DType::kInt32)});
  Endpoint copy_axes =
      ctx.Op("Range", {IndexScalar(ctx, 0), ctx.Op("Size", {split_shape}), IndexScalar(ctx, 2)});
  AttrMap sum;
  sum.Set("keep_dims", false);
  Endpoint summed =
      ctx.Op("Sum", {ctx.Op("Reshape", {ctx.output_grad(0), split_shape}), copy_axes}, sum);
  // Already of the input's shape; the reshape (no copy) gives it the input's static shape too.
  ctx.SetInputGrad(0, ctx.Op("Reshape", {summed, input_shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Tile")
                   .Input("input", "T")
                   .Input("multiples", "Tmultiples")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypesAndString)
                   .TypeAttr("Tmultiples", kIndexTypes, DType::kInt32)
                   .Shape(TileShape)
                   .Kernel("CPU", TileKernel)
                   .Gradient(TileGrad)
                   .Doc("Repeats the input multiples[i] times along dimension i."));

// --- Pad, PadV2, MirrorPad ------------------------------------------------------------------

enum class PadMode { kConstant, kReflect, kSymmetric };

// Validates paddings (a [rank, 2] matrix of before/after counts) for an input of `dims` (-1:
// unknown), and computes the padded dims.
Status PaddedDims(const std::vector<int64_t>& dims, const std::vector<int64_t>& paddings,
                  PadMode mode, std::vector<int64_t>* out) {
  out->resize(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
    if (before < 0 || after < 0) {
      return errors::InvalidArgument("Paddings must be non-negative: ", before, " ", after);
    }
    if (dims[i] >= 0 && mode == PadMode::kReflect && (before >= dims[i] || after >= dims[i])) {
      return errors::InvalidArgument("paddings must be less than the dimension size: ", before,
                                     ", ", after, " not less than ", dims[i],
                                     " (REFLECT mode mirrors without repeating the edge)");
    }
    if (dims[i] >= 0 && mode == PadMode::kSymmetric && (before > dims[i] || after > dims[i])) {
      return errors::InvalidArgument("paddings must be no greater than the dimension size: ",
                                     before, ", ", after, " greater than ", dims[i]);
    }
    int64_t padded = -1;
    if (dims[i] >= 0 && (__builtin_add_overflow(dims[i], before, &padded) ||
                         __builtin_add_overflow(padded, after, &padded))) {
      return errors::InvalidArgument("Padded dimension ", i, " (", dims[i], " + ", before, " + ",
                                     after, ") overflows int64; use smaller paddings");
    }
    (*out)[i] = padded;
  }
  return Status::OK();
}

Status PadShapeCommon(InferenceContext& ctx, PadMode mode) {
  PartialShape paddings_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &paddings_shape));
  if (paddings_shape.dim(1) >= 0 && paddings_shape.dim(1) != 2) {
    return errors::InvalidArgument("Dimension must be 2 but is ", paddings_shape.dim(1));
  }
  const PartialShape& in = ctx.input(0);
  int rank = in.known_rank() ? in.rank() : static_cast<int>(paddings_shape.dim(0));
  if (rank < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (paddings_shape.dim(0) >= 0 && paddings_shape.dim(0) != rank) {
    return errors::InvalidArgument(
        "The first dimension of paddings must be the rank of inputs: "
        "paddings have shape ",
        paddings_shape.ToString(), " for an input of rank ", rank);
  }
  const Tensor* paddings = ctx.input_value(1);
  if (paddings == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  std::vector<int64_t> dims = in.known_rank() ? in.ToVector() : std::vector<int64_t>(rank, -1);
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(PaddedDims(dims, IntValues(*paddings), mode, &out));
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

Status PadShape(InferenceContext& ctx) { return PadShapeCommon(ctx, PadMode::kConstant); }

Status PadV2Shape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  return PadShapeCommon(ctx, PadMode::kConstant);
}

// Reads and checks paddings for `in`, computing the output shape.
Status ReadPaddings(const Tensor& in, const Tensor& paddings_t, PadMode mode,
                    std::vector<int64_t>* paddings, TensorShape* out_shape) {
  const TensorShape& ps = paddings_t.shape();
  if (ps.rank() != 2 || ps.dim(0) != in.rank() || ps.dim(1) != 2) {
    return errors::InvalidArgument(
        "The first dimension of paddings must be the rank of inputs"
        " and the second 2: paddings have shape ",
        ps.ToString(), ", input has shape ", in.shape().ToString());
  }
  *paddings = IntValues(paddings_t);
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(PaddedDims(in.shape().ToVector(), *paddings, mode, &out));
  *out_shape = TensorShape(out);
  return Status::OK();
}

// Writes the padded output, row by row: a row over the input is its leading padding, a copy of
// the input row and its trailing padding; the other rows are all padding. Each element is
// written once.
template <typename U>
void PadRows(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& paddings, U value,
             Tensor* out) {
  // Trailing dimensions without padding are one contiguous block in both tensors: they merge into
  // the last padded dimension, so each copy moves whole blocks (an NHWC image padded in rows and
  // columns copies rows of W x C elements, not C at a time).
  int last = in.rank() - 1;
  int64_t block = 1;
  while (last > 0 && paddings[2 * last] == 0 && paddings[2 * last + 1] == 0) {
    block *= in.dim(last);
    --last;
  }
  std::vector<int64_t> in_dims(last + 1), out_dims(last + 1), before(last + 1);
  for (int d = 0; d <= last; ++d) {
    in_dims[d] = in.dim(d);
    out_dims[d] = out->dim(d);
    before[d] = paddings[2 * d];
  }
  in_dims[last] *= block;
  out_dims[last] *= block;
  before[last] *= block;
  const int64_t row = in_dims[last], out_row = out_dims[last];
  const int64_t out_rows = out_row == 0 ? 0 : out->num_elements() / out_row;
  const U* src = in.data<U>();
  U* dst = out->data<U>();
  ctx.ParallelFor(out_rows, out_row, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      U* out_start = dst + r * out_row;
      // The input row under output row r, or none when an index falls in the padding.
      int64_t in_r = 0, scale = 1, rest = r;
      bool inside = row > 0;
      for (int d = last - 1; d >= 0 && inside; --d) {
        const int64_t i = rest % out_dims[d] - before[d];
        rest /= out_dims[d];
        inside = i >= 0 && i < in_dims[d];
        in_r += i * scale;
        scale *= in_dims[d];
      }
      if (!inside) {
        std::fill_n(out_start, out_row, value);
        continue;
      }
      std::fill_n(out_start, before[last], value);
      std::memcpy(out_start + before[last], src + in_r * row, row * sizeof(U));
      std::fill(out_start + before[last] + row, out_start + out_row, value);
    }
  });
}

// Pad fills with zeros, PadV2 with its constant_values input.
Status ConstantPadKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const bool has_value = ctx.num_inputs() == 3;
  if (has_value && ctx.input(2).rank() != 0) {
    return errors::InvalidArgument("constant_values must be a scalar. Shape of constant_values: ",
                                   ctx.input(2).shape().ToString());
  }
  std::vector<int64_t> paddings;
  TensorShape out_shape;
  FS_RETURN_IF_ERROR(ReadPaddings(in, ctx.input(1), PadMode::kConstant, &paddings, &out_shape));
  if (out_shape == in.shape()) {
    ctx.SetOutput(0, in);
    return Status::OK();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  return array_util::DispatchElementSize(DTypeSize(in.dtype()), [&]<typename U>() -> Status {
    U value{};  // all-zero bits: 0 (or false) in every dtype
    if (has_value) std::memcpy(&value, ctx.input(2).raw_data(), sizeof(U));
    PadRows<U>(ctx, in, paddings, value, out);
    return Status::OK();
  });
}

// The part of the gradient that lies over the input, without the padding.
Endpoint UnpaddedGrad(GradientContext& ctx) {
  const DType index_type = ctx.input_type(1);
  Endpoint before = ctx.Op("Slice", {ctx.input(1), IndexConst(ctx, {0, 0}, index_type),
                                     IndexConst(ctx, {-1, 1}, index_type)});
  Endpoint begin = ctx.Op("Reshape", {before, IndexConst(ctx, {-1}, DType::kInt32)});
  return ctx.Op("Slice",
                {ctx.output_grad(0), begin, array_util::ShapeAs(ctx, ctx.input(0), index_type)});
}

Status PadGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, UnpaddedGrad(ctx));
  return Status::OK();
}

// TensorFlow gives constant_values no gradient; its exact one, the gradient summed over the
// padding, costs two sums, so it gets it.
Status PadV2Grad(GradientContext& ctx) {
  Endpoint unpadded = UnpaddedGrad(ctx);
  ctx.SetInputGrad(0, unpadded);
  ctx.SetInputGrad(2, ctx.Op("Sub", {array_util::SumAll(ctx, ctx.output_grad(0)),
                                     array_util::SumAll(ctx, unpadded)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Pad")
                   .Input("input", "T")
                   .Input("paddings", "Tpaddings")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DType::kInt32)
                   .Shape(PadShape)
                   .Kernel("CPU", ConstantPadKernel)
                   .Gradient(PadGrad)
                   .Doc("Pads with zeros: paddings[i] = [before, after] for dimension i."));

FS_REGISTER_OP(OpBuilder("PadV2")
                   .Input("input", "T")
                   .Input("paddings", "Tpaddings")
                   .Input("constant_values", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DType::kInt32)
                   .Shape(PadV2Shape)
                   .Kernel("CPU", ConstantPadKernel)
                   .Gradient(PadV2Grad)
                   .Doc("Pads with a scalar constant_values."));

Status ParsePadMode(const AttrMap& attrs, PadMode* mode) {
  std::string text;
  FS_RETURN_IF_ERROR(attrs.Get("mode", &text));
  if (text == "REFLECT") {
    *mode = PadMode::kReflect;
  } else if (text == "SYMMETRIC") {
    *mode = PadMode::kSymmetric;
  } else {
    return errors::InvalidArgument("MirrorPad mode must be REFLECT or SYMMETRIC, got '", text, "'");
  }
  return Status::OK();
}

Status MirrorPadShape(InferenceContext& ctx) {
  PadMode mode;
  FS_RETURN_IF_ERROR(ParsePadMode(ctx.attrs(), &mode));
  return PadShapeCommon(ctx, mode);
}

// The input index (in a dimension of size n padded by `before` in front) that MirrorPad copies to
// padded index j: the mirror image at the edges.
int64_t MirrorSource(PadMode mode, int64_t j, int64_t before, int64_t n) {
  const int64_t edge = mode == PadMode::kReflect ? 0 : 1;
  const int64_t k = j - before;
  if (k < 0) return -k - edge;
  if (k >= n) return 2 * n - 2 + edge - k;
  return k;
}

class MirrorPadKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ParsePadMode(node().attrs(), &mode_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& in = ctx.input(0);
    std::vector<int64_t> paddings;
    TensorShape out_shape;
    FS_RETURN_IF_ERROR(ReadPaddings(in, ctx.input(1), mode_, &paddings, &out_shape));
    if (out_shape == in.shape()) {
      ctx.SetOutput(0, in);
      return Status::OK();
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
    if (out->num_elements() == 0) return Status::OK();
    // Padding is not empty, so rank >= 1 from here on.
    const int rank = in.rank();
    auto source = [&](int d, int64_t j) {
      return MirrorSource(mode_, j, paddings[2 * d], in.dim(d));
    };
    return array_util::DispatchElementSize(DTypeSize(in.dtype()), [&]<typename U>() -> Status {
      const U* src = in.data<U>();
      U* dst = out->data<U>();
      const int64_t out_row = out_shape.dim(rank - 1);
      const int64_t rows = out->num_elements() / out_row;
      ctx.ParallelFor(rows, out_row, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t in_row = 0, rest = r, scale = 1;
          for (int d = rank - 2; d >= 0; --d) {
            in_row += source(d, rest % out_shape.dim(d)) * scale;
            rest /= out_shape.dim(d);
            scale *= in.dim(d);
          }
          const U* s = src + in_row * in.dim(rank - 1);
          U* o = dst + r * out_row;
          for (int64_t j = 0; j < out_row; ++j) o[j] = s[source(rank - 1, j)];
        }
      });
      return Status::OK();
    });
  }

 private:
  PadMode mode_ = PadMode::kReflect;
};

Status MirrorPadGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MirrorPadGrad", {ctx.output_grad(0), ctx.input(1)}, ctx.attrs()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MirrorPad")
                   .Input("input", "T")
                   .Input("paddings", "Tpaddings")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DType::kInt32)
                   .RequiredAttr("mode", AttrType::kString)
                   .Shape(MirrorPadShape)
                   .KernelClass<MirrorPadKernel>("CPU")
                   .Gradient(MirrorPadGrad)
                   .Doc("Pads by mirroring the input at its edges: REFLECT excludes the edge "
                        "element, SYMMETRIC repeats it."));

// --- MirrorPadGrad ---------------------------------------------------------------------------

// The unpadded dims of a MirrorPad output of `dims` (-1: unknown), checking that `paddings` could
// have produced it.
Status UnpaddedDims(const std::vector<int64_t>& dims, const std::vector<int64_t>& paddings,
                    PadMode mode, std::vector<int64_t>* out) {
  out->resize(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (paddings[2 * i] < 0 || paddings[2 * i + 1] < 0) {
      return errors::InvalidArgument("Paddings must be non-negative: ", paddings[2 * i], " ",
                                     paddings[2 * i + 1]);
    }
    int64_t pad;
    if (__builtin_add_overflow(paddings[2 * i], paddings[2 * i + 1], &pad) ||
        (dims[i] >= 0 && pad > dims[i])) {
      return errors::InvalidArgument("paddings [", paddings[2 * i], ", ", paddings[2 * i + 1],
                                     "] of dimension ", i, " exceed its size ", dims[i]);
    }
    (*out)[i] = dims[i] < 0 ? -1 : dims[i] - pad;
  }
  std::vector<int64_t> padded;
  return PaddedDims(*out, paddings, mode, &padded);
}

Status MirrorPadGradShape(InferenceContext& ctx) {
  PadMode mode;
  FS_RETURN_IF_ERROR(ParsePadMode(ctx.attrs(), &mode));
  PartialShape paddings_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 2, &paddings_shape));
  const PartialShape& in = ctx.input(0);
  const int rank = in.known_rank() ? in.rank() : static_cast<int>(paddings_shape.dim(0));
  if (rank < 0) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if ((paddings_shape.dim(0) >= 0 && paddings_shape.dim(0) != rank) ||
      (paddings_shape.dim(1) >= 0 && paddings_shape.dim(1) != 2)) {
    return errors::InvalidArgument("paddings must have shape [", rank, ", 2], got ",
                                   paddings_shape.ToString());
  }
  const Tensor* paddings = ctx.input_value(1);
  if (paddings == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  std::vector<int64_t> dims = in.known_rank() ? in.ToVector() : std::vector<int64_t>(rank, -1);
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(UnpaddedDims(dims, IntValues(*paddings), mode, &out));
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

// Sums each element of the padded gradient into the input element MirrorPad copied it from.
class MirrorPadGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ParsePadMode(node().attrs(), &mode_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& grad = ctx.input(0);
    const TensorShape& ps = ctx.input(1).shape();
    const int rank = grad.rank();
    if (ps.rank() != 2 || ps.dim(0) != rank || ps.dim(1) != 2) {
      return errors::InvalidArgument("paddings must have shape [", rank, ", 2], got ",
                                     ps.ToString());
    }
    const std::vector<int64_t> paddings = IntValues(ctx.input(1));
    std::vector<int64_t> dims;
    FS_RETURN_IF_ERROR(UnpaddedDims(grad.shape().ToVector(), paddings, mode_, &dims));
    const TensorShape out_shape(dims);
    if (out_shape == grad.shape()) {
      ctx.SetOutput(0, grad);
      return Status::OK();
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
    return DispatchDType<float, double, int32_t, int64_t>(
        grad.dtype(), "MirrorPadGrad", [&]<typename T>() -> Status {
          T* dst = out->data<T>();
          std::fill_n(dst, out->num_elements(), T(0));
          if (grad.num_elements() == 0) return Status::OK();
          // Several gradient rows land on one input row, so the accumulation is sequential.
          const T* g = grad.data<T>();
          const int64_t row = grad.dim(rank - 1);
          const int64_t rows = grad.num_elements() / row;
          for (int64_t r = 0; r < rows; ++r) {
            int64_t out_row = 0, rest = r, scale = 1;
            for (int d = rank - 2; d >= 0; --d) {
              out_row += MirrorSource(mode_, rest % grad.dim(d), paddings[2 * d], dims[d]) * scale;
              rest /= grad.dim(d);
              scale *= dims[d];
            }
            T* o = dst + out_row * dims[rank - 1];
            const T* src = g + r * row;
            for (int64_t j = 0; j < row; ++j) {
              o[MirrorSource(mode_, j, paddings[2 * (rank - 1)], dims[rank - 1])] += src[j];
            }
          }
          return Status::OK();
        });
  }

 private:
  PadMode mode_ = PadMode::kReflect;
};

Status MirrorPadGradGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MirrorPad", {ctx.output_grad(0), ctx.input(1)}, ctx.attrs()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MirrorPadGrad")
                   .Input("input", "T")
                   .Input("paddings", "Tpaddings")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DType::kInt32)
                   .RequiredAttr("mode", AttrType::kString)
                   .Shape(MirrorPadGradShape)
                   .KernelClass<MirrorPadGradKernel>("CPU")
                   .Gradient(MirrorPadGradGrad)
                   .Doc("The gradient of MirrorPad: each element of the padded gradient `input` "
                        "summed into the input element it was copied from."));

}  // namespace
}  // namespace flowstone
