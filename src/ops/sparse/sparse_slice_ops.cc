// SparseTensor ops that select or group entries, on the (indices [N, R] int64, values [N],
// dense_shape [R] int64) triple: SparseSlice (and SparseSliceGrad, its values' gradient),
// SparseSplit, and the reductions with sparse outputs SparseReduceSumSparse and
// SparseReduceMaxSparse. Entries keep their input order in SparseSlice and SparseSplit (as in
// TensorFlow); the reductions emit their groups in row-major order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// The checked parts of a SparseTensor given as three inputs from `first` on.
struct SparseInput {
  const int64_t* indices = nullptr;
  const Tensor* values = nullptr;
  std::vector<int64_t> shape;
  int64_t n = 0;
  int rank = 0;
  int64_t index(int64_t entry, int dim) const { return indices[entry * rank + dim]; }
};

Status ReadSparse(KernelContext& ctx, int first, SparseInput* out) {
  const Tensor& indices = ctx.input(first);
  const Tensor& values = ctx.input(first + 1);
  const Tensor& shape = ctx.input(first + 2);
  const char* op = ctx.node().type().c_str();
  if (indices.rank() != 2 || values.rank() != 1 || shape.rank() != 1) {
    return errors::InvalidArgument(op,
                                   ": indices, values and shape must be a matrix and two "
                                   "vectors, but have shapes ",
                                   indices.shape().ToString(), ", ", values.shape().ToString(),
                                   " and ", shape.shape().ToString());
  }
  if (indices.dim(0) != values.dim(0) || indices.dim(1) != shape.dim(0)) {
    return errors::InvalidArgument(op, ": indices ", indices.shape().ToString(),
                                   " must be [number of values (", values.dim(0), "), rank (",
                                   shape.dim(0), ")]");
  }
  out->indices = indices.data<int64_t>();
  out->values = &values;
  out->n = values.dim(0);
  out->rank = static_cast<int>(shape.dim(0));
  out->shape.assign(shape.data<int64_t>(), shape.data<int64_t>() + out->rank);
  return Status::OK();
}

// Copies the selected entries' values (bytes) into a new output.
Status GatherValues(KernelContext& ctx, int output, const Tensor& values,
                    const std::vector<int64_t>& entries) {
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(output, TensorShape({static_cast<int64_t>(entries.size())}), &out));
  if (values.dtype() == DType::kString) {
    for (size_t i = 0; i < entries.size(); ++i) {
      out->data<std::string>()[i] = values.data<std::string>()[entries[i]];
    }
    return Status::OK();
  }
  const size_t size = DTypeSize(values.dtype());
  const char* src = static_cast<const char*>(values.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(dst + i * size, src + entries[i] * size, size);
  }
  return Status::OK();
}

Tensor Int64Vector(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(v, TensorShape({static_cast<int64_t>(v.size())}));
}

// --- SparseSlice ------------------------------------------------------------------------------

// The entries inside [start, start + size) (clipped to the shape), shifted by -start.
Status SparseSliceKernel(KernelContext& ctx) {
  SparseInput sp;
  FS_RETURN_IF_ERROR(ReadSparse(ctx, 0, &sp));
  const Tensor& start = ctx.input(3);
  const Tensor& size = ctx.input(4);
  if (start.rank() != 1 || size.rank() != 1 || start.dim(0) != sp.rank || size.dim(0) != sp.rank) {
    return errors::InvalidArgument("SparseSlice: start and size must be vectors of the rank (",
                                   sp.rank, "), but have shapes ", start.shape().ToString(),
                                   " and ", size.shape().ToString());
  }
  std::vector<int64_t> lo(sp.rank), hi(sp.rank), out_shape(sp.rank);
  for (int d = 0; d < sp.rank; ++d) {
    lo[d] = start.data<int64_t>()[d];
    if (lo[d] < 0 || size.data<int64_t>()[d] < 0) {
      return errors::InvalidArgument("SparseSlice: start and size must be non-negative, got ",
                                     lo[d], " and ", size.data<int64_t>()[d], " in dimension ", d);
    }
    // min(shape, start + size) without overflowing start + size.
    const int64_t room = sp.shape[d] - std::min(lo[d], sp.shape[d]);
    hi[d] = lo[d] + std::min(room, size.data<int64_t>()[d]);
    out_shape[d] = std::max<int64_t>(0, hi[d] - lo[d]);
  }
  std::vector<int64_t> kept;
  for (int64_t e = 0; e < sp.n; ++e) {
    bool inside = true;
    for (int d = 0; d < sp.rank && inside; ++d) {
      inside = sp.index(e, d) >= lo[d] && sp.index(e, d) < hi[d];
    }
    if (inside) kept.push_back(e);
  }
  Tensor* indices;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape({static_cast<int64_t>(kept.size()), sp.rank}), &indices));
  for (size_t i = 0; i < kept.size(); ++i) {
    for (int d = 0; d < sp.rank; ++d) {
      indices->data<int64_t>()[i * sp.rank + d] = sp.index(kept[i], d) - lo[d];
    }
  }
  FS_RETURN_IF_ERROR(GatherValues(ctx, 1, *sp.values, kept));
  ctx.SetOutput(2, Int64Vector(out_shape));
  return Status::OK();
}

// The gradient of the input values: each output value's gradient goes back to the input entry
// it came from (found by its index, shifted back by start), 0 elsewhere.
Status SparseSliceGradKernel(KernelContext& ctx) {
  const Tensor& grad = ctx.input(0);
  const Tensor& in_indices = ctx.input(1);
  const Tensor& start = ctx.input(2);
  const Tensor& out_indices = ctx.input(3);
  if (in_indices.rank() != 2 || out_indices.rank() != 2 || grad.rank() != 1 ||
      out_indices.dim(0) != grad.dim(0) || in_indices.dim(1) != out_indices.dim(1) ||
      start.num_elements() != in_indices.dim(1)) {
    return errors::InvalidArgument(
        "SparseSliceGrad: inconsistent shapes: backprop_val_grad ", grad.shape().ToString(),
        ", input_indices ", in_indices.shape().ToString(), ", input_start ",
        start.shape().ToString(), ", output_indices ", out_indices.shape().ToString());
  }
  const int64_t rank = in_indices.dim(1);
  std::map<std::vector<int64_t>, int64_t> position;
  for (int64_t e = 0; e < in_indices.dim(0); ++e) {
    const int64_t* row = in_indices.data<int64_t>() + e * rank;
    position.emplace(std::vector<int64_t>(row, row + rank), e);
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape({in_indices.dim(0)}), &out));
  return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
      grad.dtype(), "SparseSliceGrad", [&]<typename T>() -> Status {
        std::fill(out->data<T>(), out->data<T>() + out->num_elements(), T{});
        for (int64_t i = 0; i < grad.dim(0); ++i) {
          std::vector<int64_t> key(rank);
          for (int64_t d = 0; d < rank; ++d) {
            // Wrapping addition: a bad index must not overflow, it just finds no entry.
            key[d] = static_cast<int64_t>(
                static_cast<uint64_t>(out_indices.data<int64_t>()[i * rank + d]) +
                static_cast<uint64_t>(start.data<int64_t>()[d]));
          }
          auto it = position.find(key);
          if (it == position.end()) {
            return errors::InvalidArgument("SparseSliceGrad: output entry ", i,
                                           " is not an entry of the input");
          }
          out->data<T>()[it->second] = grad.data<T>()[i];
        }
        return Status::OK();
      });
}

Status SparseSliceShape(InferenceContext& ctx) {
  const PartialShape& indices = ctx.input(0);
  const int64_t rank = indices.known_rank() && indices.rank() == 2 ? indices.dim(1) : -1;
  ctx.set_output(0, PartialShape({-1, rank}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({rank}));
  return Status::OK();
}

Status SparseSliceGrad(GradientContext& ctx) {
  ctx.SetInputGrad(1, ctx.Op("SparseSliceGrad",
                             {ctx.output_grad(1), ctx.input(0), ctx.input(3), ctx.output(0)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SparseSlice")
                   .Input("indices", "int64")
                   .Input("values", "T")
                   .Input("shape", "int64")
                   .Input("start", "int64")
                   .Input("size", "int64")
                   .Output("output_indices", "int64")
                   .Output("output_values", "T")
                   .Output("output_shape", "int64")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(SparseSliceShape)
                   .Kernel("CPU", SparseSliceKernel)
                   .Gradient(SparseSliceGrad)
                   .Doc("The entries of a SparseTensor inside [start, start + size), shifted to "
                        "start at 0."));

FS_REGISTER_OP(OpBuilder("SparseSliceGrad")
                   .Input("backprop_val_grad", "T")
                   .Input("input_indices", "int64")
                   .Input("input_start", "int64")
                   .Input("output_indices", "int64")
                   .Output("val_grad", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                   DType::kComplex64, DType::kComplex128})
                   .Shape([](InferenceContext& ctx) {
                     const PartialShape& in = ctx.input(1);
                     ctx.set_output(0, PartialShape({in.known_rank() ? in.dim(0) : -1}));
                     return Status::OK();
                   })
                   .Kernel("CPU", SparseSliceGradKernel)
                   .NotDifferentiable()
                   .Doc("The gradient of SparseSlice's values."));

// --- SparseSplit ------------------------------------------------------------------------------

// Piece k of a dimension of size `dim` split `num` ways: the first dim % num pieces are one
// longer, as TensorFlow splits.
int64_t PieceStart(int64_t dim, int64_t num, int64_t k) {
  const int64_t base = dim / num;
  const int64_t extra = dim % num;
  return k * base + std::min(k, extra);
}

// TensorFlow's op def gives num_split a minimum of 1; 0 pieces would divide by zero.
Status CheckNumSplit(int num) {
  if (num < 1) {
    return errors::InvalidArgument("Attr 'num_split' of 'SparseSplit' Op passed ", num,
                                   " less than minimum 1.");
  }
  return Status::OK();
}

Status SparseSplitKernel(KernelContext& ctx) {
  const int num = ctx.num_outputs() / 3;
  FS_RETURN_IF_ERROR(CheckNumSplit(num));
  SparseInput sp;
  FS_RETURN_IF_ERROR(ReadSparse(ctx, 1, &sp));
  if (ctx.input(0).num_elements() != 1) {
    return errors::InvalidArgument("SparseSplit: split_dim must be a scalar, got shape ",
                                   ctx.input(0).shape().ToString());
  }
  int64_t axis = ctx.input(0).ElementAsInt64(0);
  if (axis < -sp.rank || axis >= sp.rank) {
    return errors::InvalidArgument("SparseSplit: split_dim ", axis, " is out of range for rank ",
                                   sp.rank, " (expected -", sp.rank, " <= split_dim < ", sp.rank,
                                   ")");
  }
  if (axis < 0) axis += sp.rank;
  const int64_t dim = sp.shape[axis];
  if (num > dim) {
    return errors::InvalidArgument("SparseSplit: num_split (", num,
                                   ") must not exceed the size of the split dimension (", dim, ")");
  }
  std::vector<std::vector<int64_t>> members(num);
  for (int64_t e = 0; e < sp.n; ++e) {
    const int64_t i = sp.index(e, static_cast<int>(axis));
    if (i < 0 || i >= dim) {
      return errors::InvalidArgument("SparseSplit: index ", i, " of entry ", e,
                                     " is out of bounds for dimension ", axis, " of size ", dim);
    }
    // The first dim % num pieces hold base + 1 indices each, the others base.
    const int64_t base = dim / num;
    const int64_t long_end = (dim % num) * (base + 1);
    const int64_t k = i < long_end ? i / (base + 1) : dim % num + (i - long_end) / base;
    members[k].push_back(e);
  }
  for (int k = 0; k < num; ++k) {
    const int64_t begin = PieceStart(dim, num, k);
    Tensor* indices;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(
        k, TensorShape({static_cast<int64_t>(members[k].size()), sp.rank}), &indices));
    for (size_t i = 0; i < members[k].size(); ++i) {
      for (int d = 0; d < sp.rank; ++d) {
        indices->data<int64_t>()[i * sp.rank + d] =
            sp.index(members[k][i], d) - (d == axis ? begin : 0);
      }
    }
    FS_RETURN_IF_ERROR(GatherValues(ctx, num + k, *sp.values, members[k]));
    std::vector<int64_t> shape = sp.shape;
    shape[axis] = PieceStart(dim, num, k + 1) - begin;
    ctx.SetOutput(2 * num + k, Int64Vector(shape));
  }
  return Status::OK();
}

Status SparseSplitShape(InferenceContext& ctx) {
  const int num = ctx.num_outputs() / 3;
  FS_RETURN_IF_ERROR(CheckNumSplit(num));
  const PartialShape& shape = ctx.input(3);
  const int64_t rank = shape.known_rank() && shape.rank() == 1 ? shape.dim(0) : -1;
  for (int k = 0; k < num; ++k) {
    ctx.set_output(k, PartialShape({-1, rank}));
    ctx.set_output(num + k, PartialShape({-1}));
    ctx.set_output(2 * num + k, PartialShape({rank}));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SparseSplit")
                   .Input("split_dim", "int64")
                   .Input("indices", "int64")
                   .Input("values", "T")
                   .Input("shape", "int64")
                   .OutputList("output_indices", "int64", "num_split")
                   .OutputList("output_values", "T", "num_split")
                   .OutputList("output_shape", "int64", "num_split")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(SparseSplitShape)
                   .Kernel("CPU", SparseSplitKernel)
                   .NotDifferentiable()
                   .Doc("Splits a SparseTensor into num_split along split_dim (the first "
                        "size % num_split pieces one longer)."));

// --- SparseReduceSumSparse, SparseReduceMaxSparse ---------------------------------------------

enum class Reduce { kSum, kMax };

template <Reduce kReduce>
Status SparseReduceSparseKernel(KernelContext& ctx) {
  SparseInput sp;
  FS_RETURN_IF_ERROR(ReadSparse(ctx, 0, &sp));
  const bool keep_dims = ctx.attrs().GetOr<bool>("keep_dims", false);
  const Tensor& axes = ctx.input(3);
  std::vector<bool> reduced(sp.rank, false);
  for (int64_t i = 0; i < axes.num_elements(); ++i) {
    int64_t a = axes.ElementAsInt64(i);
    if (a < -sp.rank || a >= sp.rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", a, ", for input with ",
                                     sp.rank, " dimensions.");
    }
    reduced[a < 0 ? a + sp.rank : a] = true;
  }
  std::vector<int64_t> out_shape;
  for (int d = 0; d < sp.rank; ++d) {
    if (!reduced[d]) {
      out_shape.push_back(sp.shape[d]);
    } else if (keep_dims) {
      out_shape.push_back(1);
    }
  }
  // Groups keyed by the output index, in row-major order.
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups;
  for (int64_t e = 0; e < sp.n; ++e) {
    std::vector<int64_t> key;
    for (int d = 0; d < sp.rank; ++d) {
      if (!reduced[d]) {
        key.push_back(sp.index(e, d));
      } else if (keep_dims) {
        key.push_back(0);
      }
    }
    groups[key].push_back(e);
  }
  const int64_t out_rank = static_cast<int64_t>(out_shape.size());
  Tensor* indices;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(
      0, TensorShape({static_cast<int64_t>(groups.size()), out_rank}), &indices));
  Tensor* values;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(1, TensorShape({static_cast<int64_t>(groups.size())}), &values));
  ctx.SetOutput(2, Int64Vector(out_shape));
  auto reduce = [&]<typename T>() -> Status {
    const T* in = sp.values->data<T>();
    int64_t row = 0;
    for (const auto& [key, members] : groups) {
      std::copy(key.begin(), key.end(), indices->data<int64_t>() + row * out_rank);
      T acc = in[members[0]];
      for (size_t i = 1; i < members.size(); ++i) {
        if constexpr (kReduce == Reduce::kSum) {
          acc += in[members[i]];
        } else {
          acc = std::max(acc, in[members[i]]);
        }
      }
      values->data<T>()[row++] = acc;
    }
    return Status::OK();
  };
  if constexpr (kReduce == Reduce::kSum) {
    return DispatchDType<float, double, int32_t, int64_t, uint8_t, complex64, complex128>(
        sp.values->dtype(), ctx.node().type().c_str(), reduce);
  } else {
    return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
        sp.values->dtype(), ctx.node().type().c_str(), reduce);
  }
}

Status SparseReduceSparseShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape({-1, -1}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({-1}));
  return Status::OK();
}

template <Reduce kReduce>
OpBuilder SparseReduceSparseOp(const char* name, std::vector<DType> types, const char* doc) {
  OpBuilder builder(name);
  builder.Input("input_indices", "int64")
      .Input("input_values", "T")
      .Input("input_shape", "int64")
      .Input("reduction_axes", "int32")
      .Output("output_indices", "int64")
      .Output("output_values", "T")
      .Output("output_shape", "int64")
      .Attr("keep_dims", false)
      .TypeAttr("T", types)
      .Shape(SparseReduceSparseShape)
      .Kernel("CPU", SparseReduceSparseKernel<kReduce>)
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(SparseReduceSparseOp<Reduce::kSum>(
    "SparseReduceSumSparse",
    {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUInt8,
     DType::kComplex64, DType::kComplex128},
    "The sums of a SparseTensor's entries over reduction_axes, as a SparseTensor of the "
    "groups that have entries."));
FS_REGISTER_OP(SparseReduceSparseOp<Reduce::kMax>(
    "SparseReduceMaxSparse",
    {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUInt8},
    "The largest of a SparseTensor's entries over reduction_axes, as a SparseTensor of the "
    "groups that have entries."));

}  // namespace
}  // namespace flowstone
