// Set operations over the last dimension (tf.sets): each tensor of rank n holds sets of values
// in its last dimension, one set per index of its first n - 1 dimensions (its groups); dense
// tensors hold every group, sparse ones (indices, values, shape) the groups their indices name.
// SetSize counts the distinct values of each group; the three *SetOperation ops compute the
// intersection, union or difference of the two inputs' sets group by group and return a
// SparseTensor of rank n whose rows hold each result set in ascending order. None is
// differentiable, as in TensorFlow.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::JoinInts;

const std::vector<DType> kSetTypes = {DType::kInt32, DType::kInt64, DType::kUInt8, DType::kString};

// A group's position: its indices in all dimensions but the last.
using GroupKey = std::vector<int64_t>;
template <typename T>
using Groups = std::map<GroupKey, std::set<T>>;

// The shape of a set input: at least a matrix, since the last dimension holds the sets.
Status CheckSetRank(const std::vector<int64_t>& shape, const char* name) {
  if (shape.size() < 2) {
    return errors::InvalidArgument(name, " must have rank 2 or more (its last dimension holds ",
                                   "the sets), got shape ", JoinInts(shape));
  }
  return Status::OK();
}

// Both inputs must have the same groups: the same rank and the same dimensions but the last.
Status CheckSameGroups(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size() || !std::equal(a.begin(), a.end() - 1, b.begin())) {
    return errors::InvalidArgument("set1 has shape ", JoinInts(a), " and set2 ", JoinInts(b),
                                   ": their ranks and all dimensions but the last (the groups) ",
                                   "must match");
  }
  return Status::OK();
}

std::vector<int64_t> DimsOf(const Tensor& t) {
  std::vector<int64_t> dims(t.rank());
  for (int i = 0; i < t.rank(); ++i) dims[i] = t.dim(i);
  return dims;
}

// Every group of a dense tensor, empty ones included.
template <typename T>
Groups<T> DenseGroups(const Tensor& t) {
  Groups<T> groups;
  const int64_t set_size = t.dim(t.rank() - 1);
  int64_t num_groups = 1;
  for (int d = 0; d + 1 < t.rank(); ++d) num_groups *= t.dim(d);
  const T* values = t.data<T>();
  GroupKey key(t.rank() - 1, 0);
  for (int64_t g = 0; g < num_groups; ++g) {
    std::set<T>& set = groups[key];
    for (int64_t j = 0; j < set_size; ++j) set.insert(values[g * set_size + j]);
    for (int d = static_cast<int>(key.size()) - 1; d >= 0; --d) {  // the next key, row-major
      if (++key[d] < t.dim(d)) break;
      key[d] = 0;
    }
  }
  return groups;
}

// A sparse input (indices [N, rank], values [N], shape [rank]), checked, as its shape.
Status ReadSparseShape(const Tensor& indices, const Tensor& values, const Tensor& shape,
                       const std::string& name, std::vector<int64_t>* dims) {
  if (shape.rank() != 1) {
    return errors::InvalidArgument(name, "_shape must be a vector, got shape ",
                                   shape.shape().ToString());
  }
  dims->assign(shape.data<int64_t>(), shape.data<int64_t>() + shape.num_elements());
  FS_RETURN_IF_ERROR(CheckSetRank(*dims, (name + "_shape").c_str()));
  for (int64_t d : *dims) {
    if (d < 0) return errors::InvalidArgument(name, "_shape ", JoinInts(*dims), " is negative");
  }
  if (indices.rank() != 2 || indices.dim(1) != static_cast<int64_t>(dims->size())) {
    return errors::InvalidArgument(name, "_indices must be a matrix [N, ", dims->size(),
                                   "] for a shape of rank ", dims->size(), ", got shape ",
                                   indices.shape().ToString());
  }
  if (values.rank() != 1 || values.dim(0) != indices.dim(0)) {
    return errors::InvalidArgument(name, "_values must be a vector of ", indices.dim(0),
                                   " values (one per index), got shape ",
                                   values.shape().ToString());
  }
  return Status::OK();
}

// The groups of a sparse input. Each index must lie in the shape and, with validate_indices,
// come after the previous one in row-major order, as TensorFlow requires.
template <typename T>
Status SparseGroups(const Tensor& indices, const Tensor& values, const std::vector<int64_t>& dims,
                    const std::string& name, bool validate, Groups<T>* groups) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t* idx = indices.data<int64_t>();
  const T* vals = values.data<T>();
  for (int64_t i = 0; i < indices.dim(0); ++i) {
    const int64_t* row = idx + i * rank;
    for (int64_t d = 0; d < rank; ++d) {
      if (row[d] < 0 || row[d] >= dims[d]) {
        return errors::InvalidArgument(name, "_indices[", i,
                                       "] = ", JoinInts(std::vector<int64_t>(row, row + rank)),
                                       " is out of bounds for shape ", JoinInts(dims));
      }
    }
    if (validate && i > 0 && !std::lexicographical_compare(row - rank, row, row, row + rank)) {
      return errors::InvalidArgument(
          name, "_indices[", i, "] = ", JoinInts(std::vector<int64_t>(row, row + rank)),
          " does not come after the previous index ",
          JoinInts(std::vector<int64_t>(row - rank, row)),
          ": indices must be in row-major order without repeats (or pass validate_indices=False)");
    }
    (*groups)[GroupKey(row, row + rank - 1)].insert(vals[i]);
  }
  return Status::OK();
}

enum class SetOperation { kAMinusB, kBMinusA, kIntersection, kUnion };

Status ParseSetOperation(const std::string& text, SetOperation* out) {
  if (text == "a-b") {
    *out = SetOperation::kAMinusB;
  } else if (text == "b-a") {
    *out = SetOperation::kBMinusA;
  } else if (text == "intersection") {
    *out = SetOperation::kIntersection;
  } else if (text == "union") {
    *out = SetOperation::kUnion;
  } else {
    return errors::InvalidArgument("Invalid set_operation \"", text,
                                   "\": expected \"a-b\", \"b-a\", \"intersection\" or \"union\"");
  }
  return Status::OK();
}

template <typename T>
std::vector<T> Combine(const std::set<T>& a, const std::set<T>& b, SetOperation op) {
  std::vector<T> out;
  auto sink = std::back_inserter(out);
  switch (op) {
    case SetOperation::kAMinusB:
      std::set_difference(a.begin(), a.end(), b.begin(), b.end(), sink);
      break;
    case SetOperation::kBMinusA:
      std::set_difference(b.begin(), b.end(), a.begin(), a.end(), sink);
      break;
    case SetOperation::kIntersection:
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), sink);
      break;
    case SetOperation::kUnion:
      std::set_union(a.begin(), a.end(), b.begin(), b.end(), sink);
      break;
  }
  return out;
}

// Combines the groups of both inputs (in row-major order of their keys) and writes the result
// SparseTensor: indices [M, rank], values [M], shape = group dims + [largest result set].
template <typename T>
Status WriteSetOperation(KernelContext& ctx, const Groups<T>& a, const Groups<T>& b,
                         const std::vector<int64_t>& dims, SetOperation op) {
  const std::set<T> empty;
  std::set<GroupKey> keys;
  for (const auto& [key, unused] : a) keys.insert(key);
  for (const auto& [key, unused] : b) keys.insert(key);
  std::vector<std::pair<const GroupKey*, std::vector<T>>> results;
  int64_t total = 0;
  int64_t widest = 0;
  for (const GroupKey& key : keys) {
    auto in_a = a.find(key);
    auto in_b = b.find(key);
    std::vector<T> result =
        Combine(in_a == a.end() ? empty : in_a->second, in_b == b.end() ? empty : in_b->second, op);
    if (result.empty()) continue;
    total += static_cast<int64_t>(result.size());
    widest = std::max(widest, static_cast<int64_t>(result.size()));
    results.emplace_back(&key, std::move(result));
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{total, rank}, &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{total}, &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{rank}, &shape));
  int64_t* idx = indices->data<int64_t>();
  T* vals = values->data<T>();
  int64_t n = 0;
  for (const auto& [key, result] : results) {
    for (size_t j = 0; j < result.size(); ++j, ++n) {
      std::copy(key->begin(), key->end(), idx + n * rank);
      idx[n * rank + rank - 1] = static_cast<int64_t>(j);
      vals[n] = result[j];
    }
  }
  std::copy(dims.begin(), dims.end() - 1, shape->data<int64_t>());
  shape->data<int64_t>()[rank - 1] = widest;
  return Status::OK();
}

// The three set operations differ only in how each input's groups are read.
enum class InputKind { kDense, kSparse };

template <InputKind kFirst, InputKind kSecond>
Status SetOperationKernel(KernelContext& ctx) {
  const bool validate = ctx.node().attrs().GetOr<bool>("validate_indices", true);
  SetOperation op;
  FS_RETURN_IF_ERROR(
      ParseSetOperation(ctx.node().attrs().GetOr<std::string>("set_operation", ""), &op));
  const int second = kFirst == InputKind::kDense ? 1 : 3;  // where set2's inputs start
  const DType dtype = ctx.input(kFirst == InputKind::kDense ? 0 : 1).dtype();
  return DispatchDType<int32_t, int64_t, uint8_t, std::string>(
      dtype, ctx.node().type().c_str(), [&]<typename T>() -> Status {
        Groups<T> a, b;
        std::vector<int64_t> dims_a, dims_b;
        if constexpr (kFirst == InputKind::kDense) {
          dims_a = DimsOf(ctx.input(0));
          FS_RETURN_IF_ERROR(CheckSetRank(dims_a, "set1"));
          a = DenseGroups<T>(ctx.input(0));
        } else {
          FS_RETURN_IF_ERROR(
              ReadSparseShape(ctx.input(0), ctx.input(1), ctx.input(2), "set1", &dims_a));
          FS_RETURN_IF_ERROR(
              SparseGroups<T>(ctx.input(0), ctx.input(1), dims_a, "set1", validate, &a));
        }
        if constexpr (kSecond == InputKind::kDense) {
          dims_b = DimsOf(ctx.input(second));
          FS_RETURN_IF_ERROR(CheckSetRank(dims_b, "set2"));
          FS_RETURN_IF_ERROR(CheckSameGroups(dims_a, dims_b));
          b = DenseGroups<T>(ctx.input(second));
        } else {
          FS_RETURN_IF_ERROR(ReadSparseShape(ctx.input(second), ctx.input(second + 1),
                                             ctx.input(second + 2), "set2", &dims_b));
          FS_RETURN_IF_ERROR(CheckSameGroups(dims_a, dims_b));
          FS_RETURN_IF_ERROR(SparseGroups<T>(ctx.input(second), ctx.input(second + 1), dims_b,
                                             "set2", validate, &b));
        }
        return WriteSetOperation<T>(ctx, a, b, dims_a, op);
      });
}

// result_indices [?, rank], result_values [?], result_shape [rank]; rank from set1.
Status SetOperationShape(InferenceContext& ctx) {
  int64_t rank = -1;
  if (ctx.op_type() == "SparseToSparseSetOperation") {
    if (ctx.input(2).known_rank() && ctx.input(2).rank() == 1) rank = ctx.input(2).dim(0);
  } else if (ctx.input(0).known_rank()) {
    rank = ctx.input(0).rank();
    if (rank < 2) {
      return errors::InvalidArgument("set1 must have rank 2 or more (its last dimension holds ",
                                     "the sets), got shape ", ctx.input(0).ToString());
    }
  }
  ctx.set_output(0, PartialShape({-1, rank}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({rank}));
  return Status::OK();
}

OpBuilder SetOperationOp(const char* name, bool sparse_first, bool sparse_second) {
  OpBuilder builder(name);
  if (sparse_first) {
    builder.Input("set1_indices", "int64").Input("set1_values", "T").Input("set1_shape", "int64");
  } else {
    builder.Input("set1", "T");
  }
  if (sparse_second) {
    builder.Input("set2_indices", "int64").Input("set2_values", "T").Input("set2_shape", "int64");
  } else {
    builder.Input("set2", "T");
  }
  builder.Output("result_indices", "int64")
      .Output("result_values", "T")
      .Output("result_shape", "int64")
      .TypeAttr("T", kSetTypes)
      .RequiredAttr("set_operation", AttrType::kString)
      .Attr("validate_indices", true)
      .Shape(SetOperationShape)
      .NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(SetOperationOp("DenseToDenseSetOperation", false, false)
                   .Kernel("CPU", SetOperationKernel<InputKind::kDense, InputKind::kDense>)
                   .Doc("The set operation (a-b, b-a, intersection, union) of two dense "
                        "tensors' sets, group by group, as a SparseTensor (tf.sets)."));

FS_REGISTER_OP(SetOperationOp("DenseToSparseSetOperation", false, true)
                   .Kernel("CPU", SetOperationKernel<InputKind::kDense, InputKind::kSparse>)
                   .Doc("DenseToDenseSetOperation with a SparseTensor as set2."));

FS_REGISTER_OP(SetOperationOp("SparseToSparseSetOperation", true, true)
                   .Kernel("CPU", SetOperationKernel<InputKind::kSparse, InputKind::kSparse>)
                   .Doc("DenseToDenseSetOperation of two SparseTensors."));

// --- SetSize ---------------------------------------------------------------------------------

Status SetSizeShape(InferenceContext& ctx) {
  PartialShape shape;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(2, &shape));
  if (!shape.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (shape.rank() < 2) {
    return errors::InvalidArgument("set_shape must have 2 or more elements (the last dimension ",
                                   "holds the sets), got ", shape.ToString());
  }
  std::vector<int64_t> dims;
  for (int i = 0; i + 1 < shape.rank(); ++i) dims.push_back(shape.dim(i));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status SetSizeKernel(KernelContext& ctx) {
  const bool validate = ctx.node().attrs().GetOr<bool>("validate_indices", true);
  std::vector<int64_t> dims;
  FS_RETURN_IF_ERROR(ReadSparseShape(ctx.input(0), ctx.input(1), ctx.input(2), "set", &dims));
  TensorShape out_shape;
  for (size_t d = 0; d + 1 < dims.size(); ++d) out_shape.AddDim(dims[d]);
  return DispatchDType<int32_t, int64_t, uint8_t, std::string>(
      ctx.input(1).dtype(), "SetSize", [&]<typename T>() -> Status {
        Groups<T> groups;
        FS_RETURN_IF_ERROR(
            SparseGroups<T>(ctx.input(0), ctx.input(1), dims, "set", validate, &groups));
        Tensor* sizes;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &sizes));
        int32_t* out = sizes->data<int32_t>();
        std::fill(out, out + sizes->num_elements(), 0);
        for (const auto& [key, set] : groups) {
          int64_t flat = 0;
          for (size_t d = 0; d < key.size(); ++d) flat = flat * dims[d] + key[d];
          out[flat] = static_cast<int32_t>(set.size());
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("SetSize")
                   .Input("set_indices", "int64")
                   .Input("set_values", "T")
                   .Input("set_shape", "int64")
                   .Output("size", "int32")
                   .TypeAttr("T", kSetTypes)
                   .Attr("validate_indices", true)
                   .Shape(SetSizeShape)
                   .Kernel("CPU", SetSizeKernel)
                   .NotDifferentiable()
                   .Doc("The number of distinct values in each set (group) of a SparseTensor, "
                        "in a tensor of its dimensions but the last (tf.sets.size)."));

}  // namespace
}  // namespace flowstone
