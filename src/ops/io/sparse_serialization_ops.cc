// SparseTensors as strings, so that they fit through queues and TFRecords as TensorFlow 1's
// pipelines send them: SerializeSparse (one SparseTensor as 3 serialized TensorProtos: indices,
// values, shape), SerializeManySparse (one such row per entry of the first dimension) and
// DeserializeManySparse / DeserializeSparse (rows back into one SparseTensor whose first
// dimensions are the rows', the others the largest of the rows' shapes). Not differentiable.
// With out_type=variant a row holds the 3 tensors themselves (no serialization): that is how
// tf.data carries a SparseTensor element as one ordinary tensor, which batching stacks
// ([N, 3]) and DeserializeSparse turns back into a SparseTensor of one more dimension.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/graph_def.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"

namespace flowstone {
namespace {

// The three tensors of a SparseTensor input, checked against each other.
Status CheckSparse(const Tensor& indices, const Tensor& values, const Tensor& shape) {
  if (indices.rank() != 2 || shape.rank() != 1 || indices.dim(1) != shape.dim(0)) {
    return errors::InvalidArgument(
        "sparse_indices must be a matrix [N, rank] and sparse_shape a "
        "vector [rank], got shapes ",
        indices.shape().ToString(), " and ", shape.shape().ToString());
  }
  if (values.rank() != 1 || values.dim(0) != indices.dim(0)) {
    return errors::InvalidArgument("sparse_values must be a vector of ", indices.dim(0),
                                   " values, got shape ", values.shape().ToString());
  }
  return Status::OK();
}

// One tensor of a SparseTensor row of dtype variant.
class TensorVariant final : public VariantValue {
 public:
  explicit TensorVariant(Tensor tensor) : tensor_(std::move(tensor)) {}
  std::string TypeName() const override { return "tensorflow::Tensor"; }
  std::string DebugString() const override { return tensor_.DebugString(); }
  // The tensor is never changed once wrapped, so sharing its buffer is a copy.
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<TensorVariant>(tensor_);
  }
  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

// Writes one row (indices, values, shape) at element `row` of `out` (string or variant).
Status WriteRow(const Tensor& indices, const Tensor& values, const Tensor& shape, Tensor* out,
                int64_t row) {
  const Tensor* parts[3] = {&indices, &values, &shape};
  for (int i = 0; i < 3; ++i) {
    if (out->dtype() == DType::kVariant) {
      out->data<Variant>()[row * 3 + i] = Variant(std::make_shared<TensorVariant>(*parts[i]));
    } else {
      FS_RETURN_IF_ERROR(SerializeTensorProto(*parts[i], &out->data<std::string>()[row * 3 + i]));
    }
  }
  return Status::OK();
}

// Element `i` of a serialized row tensor (string or variant) as a Tensor.
Status ReadRowPart(const Tensor& serialized, int64_t i, const std::string& what, Tensor* out) {
  if (serialized.dtype() == DType::kString) {
    return ParseTensorProto(serialized.data<std::string>()[i], what, out);
  }
  const auto* held = serialized.data<Variant>()[i].get<TensorVariant>();
  if (held == nullptr) {
    return errors::InvalidArgument(what,
                                   " must be a variant holding a Tensor (from "
                                   "SerializeSparse with out_type=variant)");
  }
  *out = held->tensor();
  return Status::OK();
}

Status SerializeSparseKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(CheckSparse(ctx.input(0), ctx.input(1), ctx.input(2)));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{3}, &out));
  return WriteRow(ctx.input(0), ctx.input(1), ctx.input(2), out, 0);
}

// Row r of a minibatch: the entries whose first index is r, without that index.
Status SerializeManySparseKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(1);
  const Tensor& shape = ctx.input(2);
  FS_RETURN_IF_ERROR(CheckSparse(indices, values, shape));
  const int64_t rank = shape.dim(0);
  if (rank < 2) {
    return errors::InvalidArgument(
        "SerializeManySparse needs a SparseTensor of rank 2 or more "
        "(its first dimension is the minibatch), got rank ",
        rank);
  }
  const int64_t rows = shape.data<int64_t>()[0];
  if (rows < 0) {
    return errors::InvalidArgument("sparse_shape[0] must be non-negative, got ", rows);
  }
  // The output first: its allocation is checked against the memory limits before any
  // bookkeeping sized by a shape the caller chose.
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{rows, 3}, &out));
  const int64_t n = indices.dim(0);
  const int64_t* idx = indices.data<int64_t>();
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(rows));
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i * rank] < 0 || idx[i * rank] >= rows) {
      return errors::InvalidArgument("sparse_indices[", i, ", 0] = ", idx[i * rank],
                                     " is not in [0, ", rows, ")");
    }
    members[idx[i * rank]].push_back(i);
  }
  const size_t element = DTypeSize(values.dtype());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t m = static_cast<int64_t>(members[r].size());
    Tensor row_indices = Tensor::Host(DType::kInt64, TensorShape{m, rank - 1});
    Tensor row_values = Tensor::Host(values.dtype(), TensorShape{m});
    Tensor row_shape = Tensor::Host(DType::kInt64, TensorShape{rank - 1});
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = members[r][j];
      std::copy(idx + i * rank + 1, idx + (i + 1) * rank,
                row_indices.data<int64_t>() + j * (rank - 1));
      CopyElementBytes(values.dtype(), static_cast<const char*>(values.raw_data()) + i * element,
                       static_cast<char*>(row_values.raw_data()) + j * element, element);
    }
    std::copy(shape.data<int64_t>() + 1, shape.data<int64_t>() + rank, row_shape.data<int64_t>());
    FS_RETURN_IF_ERROR(WriteRow(row_indices, row_values, row_shape, out, r));
  }
  return Status::OK();
}

// Rows [d0, ..., dk-1, 3] (one row [3]: k = 0) back into one SparseTensor of rank k + the
// rows' rank: an entry's first k indices are its row's position.
Status DeserializeKernel(KernelContext& ctx) {
  const Tensor& serialized = ctx.input(0);
  const bool many = ctx.node().op_def().name == "DeserializeManySparse";
  if (serialized.rank() < 1 || serialized.dim(serialized.rank() - 1) != 3 ||
      (many && serialized.rank() > 2)) {
    return errors::InvalidArgument("serialized_sparse must be a [3] or [", many ? "" : "..., ",
                                   "N, 3] ", DTypeName(serialized.dtype()), " tensor, got shape ",
                                   serialized.shape().ToString());
  }
  const int outer = serialized.rank() - 1;
  const int64_t rows = serialized.num_elements() / 3;
  const DType dtype = ctx.output_type(1);
  std::vector<Tensor> indices(rows), values(rows), shapes(rows);
  int64_t rank = -1, total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const std::string where = "serialized_sparse[" + std::to_string(r) + "]";
    FS_RETURN_IF_ERROR(ReadRowPart(serialized, r * 3, where + "'s indices", &indices[r]));
    FS_RETURN_IF_ERROR(ReadRowPart(serialized, r * 3 + 1, where + "'s values", &values[r]));
    FS_RETURN_IF_ERROR(ReadRowPart(serialized, r * 3 + 2, where + "'s shape", &shapes[r]));
    if (indices[r].dtype() != DType::kInt64 || shapes[r].dtype() != DType::kInt64) {
      return errors::InvalidArgument(where, ": indices and shape must be int64");
    }
    if (values[r].dtype() != dtype) {
      return errors::InvalidArgument("Requested SparseTensor of type ", DTypeName(dtype),
                                     " but SparseTensor[", r,
                                     "].values.dtype() == ", DTypeName(values[r].dtype()));
    }
    FS_RETURN_IF_ERROR(CheckSparse(indices[r], values[r], shapes[r]));
    if (rank >= 0 && shapes[r].dim(0) != rank) {
      return errors::InvalidArgument(
          "Inconsistent rank across SparseTensors: rank prior to "
          "SparseTensor[",
          r, "] was: ", rank,
          " but rank of "
          "SparseTensor[",
          r, "] is: ", shapes[r].dim(0));
    }
    rank = shapes[r].dim(0);
    total += indices[r].dim(0);
  }
  if (rank < 0) rank = 0;
  const int64_t out_rank = outer + rank;
  Tensor *out_indices, *out_values, *out_shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{total, out_rank}, &out_indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{total}, &out_values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{out_rank}, &out_shape));
  int64_t* shape = out_shape->data<int64_t>();
  std::fill(shape, shape + out_rank, 0);
  for (int d = 0; d < outer; ++d) shape[d] = serialized.dim(d);
  const size_t element = DTypeSize(dtype);
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t d = 0; d < rank; ++d) {
      shape[outer + d] = std::max(shape[outer + d], shapes[r].data<int64_t>()[d]);
    }
    for (int64_t i = 0; i < indices[r].dim(0); ++i, ++n) {
      int64_t* dst = out_indices->data<int64_t>() + n * out_rank;
      // The row's position, row-major over the leading dimensions.
      for (int64_t d = outer - 1, rest = r; d >= 0; --d) {
        dst[d] = rest % serialized.dim(d);
        rest /= serialized.dim(d);
      }
      std::copy(indices[r].data<int64_t>() + i * rank, indices[r].data<int64_t>() + (i + 1) * rank,
                dst + outer);
      CopyElementBytes(dtype, static_cast<const char*>(values[r].raw_data()) + i * element,
                       static_cast<char*>(out_values->raw_data()) + n * element, element);
    }
  }
  return Status::OK();
}

Status SerializeShape(InferenceContext& ctx) {
  const bool many = ctx.op_type() == "SerializeManySparse";
  ctx.set_output(0, many ? PartialShape({-1, 3}) : PartialShape({3}));
  return Status::OK();
}

Status DeserializeShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape({-1, -1}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({-1}));
  return Status::OK();
}

OpBuilder SerializeOp(const char* name) {
  OpBuilder builder(name);
  builder.Input("sparse_indices", "int64")
      .Input("sparse_values", "T")
      .Input("sparse_shape", "int64")
      .Output("serialized_sparse", "out_type")
      .TypeAttr("T", kAllTypesAndString)
      .TypeAttr("out_type", {DType::kString, DType::kVariant}, DType::kString)
      .Shape(SerializeShape)
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(SerializeOp("SerializeSparse")
                   .Kernel("CPU", SerializeSparseKernel)
                   .Doc("A SparseTensor as its 3 serialized TensorProtos (indices, values, "
                        "shape)."));

FS_REGISTER_OP(SerializeOp("SerializeManySparse")
                   .Kernel("CPU", SerializeManySparseKernel)
                   .Doc("Each entry of a SparseTensor's first dimension serialized as "
                        "SerializeSparse does, one row of 3 strings each."));

// DeserializeSparse reads strings or variants (Tserialized); DeserializeManySparse strings.
OpBuilder DeserializeOp(const char* name, bool any_serialized) {
  OpBuilder builder(name);
  builder.Input("serialized_sparse", any_serialized ? "Tserialized" : "string");
  if (any_serialized) {
    builder.TypeAttr("Tserialized", {DType::kString, DType::kVariant}, DType::kString);
  }
  builder.Output("sparse_indices", "int64")
      .Output("sparse_values", "dtype")
      .Output("sparse_shape", "int64")
      .TypeAttr("dtype", kAllTypesAndString)
      .Shape(DeserializeShape)
      .Kernel("CPU", DeserializeKernel)
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(DeserializeOp("DeserializeManySparse", false)
                   .Doc("Rows of serialized SparseTensors [N, 3] as one SparseTensor whose first "
                        "dimension is the row."));

FS_REGISTER_OP(DeserializeOp("DeserializeSparse", true)
                   .Doc("Rows [..., 3] of serialized SparseTensors (strings or variants) as one "
                        "SparseTensor whose first dimensions are the rows'; a single row [3] "
                        "gives its SparseTensor as it is."));

}  // namespace
}  // namespace flowstone
