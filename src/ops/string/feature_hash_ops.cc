// The hashing ops of feature columns: StringToHashBucketFast (a string's Fingerprint64 modulo a
// bucket count) and SparseCross (the per-row cartesian product of sparse and dense columns, as
// joined strings or as hashes chained with FingerprintCat64). Both match TensorFlow's values
// exactly; neither is differentiable.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/string/fingerprint.h"

namespace flowstone {
namespace {

// --- StringToHashBucketFast -------------------------------------------------------------------

Status StringToHashBucketFastKernel(KernelContext& ctx) {
  const int64_t num_buckets = ctx.attrs().GetOr<int64_t>("num_buckets", 0);
  if (num_buckets <= 0) {
    return errors::InvalidArgument("StringToHashBucketFast: num_buckets must be positive, got ",
                                   num_buckets);
  }
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  const std::string* src = in.data<std::string>();
  int64_t* dst = out->data<int64_t>();
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    dst[i] = static_cast<int64_t>(Fingerprint64(src[i]) % static_cast<uint64_t>(num_buckets));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringToHashBucketFast")
                   .Input("input", "string")
                   .Output("output", "int64")
                   .RequiredAttr("num_buckets", AttrType::kInt)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", StringToHashBucketFastKernel)
                   .NotDifferentiable()
                   .Doc("Each string's FarmHash Fingerprint64 modulo `num_buckets` (TensorFlow's "
                        "values)."));

// --- SparseCross ------------------------------------------------------------------------------

// One input column: for each batch row, the positions of its features in `values`.
struct CrossColumn {
  const Tensor* values = nullptr;
  std::vector<std::vector<int64_t>> rows;  // rows[b] = element positions in `values`

  // The feature as SparseCross hashes it: an int64 as is, a string by its fingerprint.
  uint64_t Hash(int64_t position) const {
    if (values->dtype() == DType::kInt64) {
      return static_cast<uint64_t>(values->data<int64_t>()[position]);
    }
    return Fingerprint64(values->data<std::string>()[position]);
  }

  std::string Text(int64_t position) const {
    if (values->dtype() == DType::kInt64) return std::to_string(values->data<int64_t>()[position]);
    return values->data<std::string>()[position];
  }
};

Status CheckFeatureDType(const Tensor& t, const char* what, int i) {
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kString) {
    return errors::InvalidArgument("SparseCross: ", what, "[", i, "] must be int64 or string, got ",
                                   DTypeName(t.dtype()), "; cast the column first");
  }
  return Status::OK();
}

Status ReadColumns(KernelContext& ctx, int n_sparse, int n_dense, std::vector<CrossColumn>* out,
                   int64_t* batch_size) {
  *batch_size = -1;
  auto agree = [&](int64_t rows, const char* what, int i) -> Status {
    if (*batch_size >= 0 && rows != *batch_size) {
      return errors::InvalidArgument("SparseCross: every input must have the same batch size; ",
                                     what, "[", i, "] has ", rows, " rows, expected ", *batch_size);
    }
    *batch_size = rows;
    return Status::OK();
  };
  for (int i = 0; i < n_sparse; ++i) {
    const Tensor& indices = ctx.input(i);
    const Tensor& values = ctx.input(n_sparse + i);
    const Tensor& shape = ctx.input(2 * n_sparse + i);
    FS_RETURN_IF_ERROR(CheckFeatureDType(values, "values", i));
    if (indices.rank() != 2 || indices.dim(1) != 2 || shape.num_elements() != 2 ||
        values.rank() != 1 || values.dim(0) != indices.dim(0)) {
      return errors::InvalidArgument("SparseCross: sparse input ", i,
                                     " must be a rank-2 SparseTensor (indices [n, 2], "
                                     "values [n], dense_shape [2]); got indices ",
                                     indices.shape().ToString(), ", values ",
                                     values.shape().ToString(), ", dense_shape ",
                                     shape.shape().ToString());
    }
    const int64_t rows = shape.data<int64_t>()[0];
    FS_RETURN_IF_ERROR(agree(rows, "sparse input", i));
    CrossColumn column{&values, std::vector<std::vector<int64_t>>(rows)};
    for (int64_t k = 0; k < indices.dim(0); ++k) {
      const int64_t row = indices.data<int64_t>()[2 * k];
      if (row < 0 || row >= rows) {
        return errors::InvalidArgument("SparseCross: sparse input ", i, " has index ", row,
                                       " outside its batch of ", rows, " rows");
      }
      column.rows[row].push_back(k);
    }
    out->push_back(std::move(column));
  }
  for (int i = 0; i < n_dense; ++i) {
    const Tensor& dense = ctx.input(3 * n_sparse + i);
    FS_RETURN_IF_ERROR(CheckFeatureDType(dense, "dense_inputs", i));
    if (dense.rank() != 2) {
      return errors::InvalidArgument("SparseCross: dense input ", i,
                                     " must be rank 2 [batch, "
                                     "features], got shape ",
                                     dense.shape().ToString());
    }
    FS_RETURN_IF_ERROR(agree(dense.dim(0), "dense input", i));
    CrossColumn column{&dense, std::vector<std::vector<int64_t>>(dense.dim(0))};
    for (int64_t b = 0; b < dense.dim(0); ++b) {
      for (int64_t j = 0; j < dense.dim(1); ++j) column.rows[b].push_back(b * dense.dim(1) + j);
    }
    out->push_back(std::move(column));
  }
  if (*batch_size < 0) *batch_size = 0;
  return Status::OK();
}

Status SparseCrossKernel(KernelContext& ctx) {
  const int n_sparse = static_cast<int>(ctx.attrs().GetOr<int64_t>("N", 0));
  const int n_dense =
      static_cast<int>(ctx.attrs().GetOr<std::vector<DType>>("dense_types", {}).size());
  const bool hashed = ctx.attrs().GetOr<bool>("hashed_output", false);
  const uint64_t num_buckets = static_cast<uint64_t>(ctx.attrs().GetOr<int64_t>("num_buckets", 0));
  const uint64_t hash_key = static_cast<uint64_t>(ctx.attrs().GetOr<int64_t>("hash_key", 0));
  std::vector<CrossColumn> columns;
  int64_t batch_size;
  FS_RETURN_IF_ERROR(ReadColumns(ctx, n_sparse, n_dense, &columns, &batch_size));

  // Every row's crosses in order; the last column varies fastest (TensorFlow's order).
  std::vector<int64_t> row_counts(batch_size, columns.empty() ? 0 : 1);
  for (const CrossColumn& c : columns) {
    for (int64_t b = 0; b < batch_size; ++b) row_counts[b] *= c.rows[b].size();
  }
  int64_t total = 0, width = 0;
  for (int64_t count : row_counts) {
    total += count;
    width = std::max(width, count);
  }
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{total, 2}, &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{total}, &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{2}, &shape));
  shape->data<int64_t>()[0] = batch_size;
  shape->data<int64_t>()[1] = width;
  int64_t k = 0;
  std::vector<size_t> choice(columns.size());
  for (int64_t b = 0; b < batch_size; ++b) {
    std::fill(choice.begin(), choice.end(), 0);
    for (int64_t j = 0; j < row_counts[b]; ++j, ++k) {
      indices->data<int64_t>()[2 * k] = b;
      indices->data<int64_t>()[2 * k + 1] = j;
      if (hashed) {
        uint64_t h = hash_key;
        for (size_t c = 0; c < columns.size(); ++c) {
          h = FingerprintCat64(h, columns[c].Hash(columns[c].rows[b][choice[c]]));
        }
        const uint64_t modulus = num_buckets > 0
                                     ? num_buckets
                                     : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        values->data<int64_t>()[k] = static_cast<int64_t>(h % modulus);
      } else {
        std::string joined;
        for (size_t c = 0; c < columns.size(); ++c) {
          if (c > 0) joined += "_X_";
          joined += columns[c].Text(columns[c].rows[b][choice[c]]);
        }
        values->data<std::string>()[k] = std::move(joined);
      }
      for (size_t c = columns.size(); c-- > 0;) {  // the next combination, odometer-style
        if (++choice[c] < columns[c].rows[b].size()) break;
        choice[c] = 0;
      }
    }
  }
  return Status::OK();
}

Status SparseCrossShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape{PartialShape::kUnknownDim, 2});
  ctx.set_output(1, PartialShape{PartialShape::kUnknownDim});
  ctx.set_output(2, PartialShape{2});
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SparseCross")
                   .InputList("indices", "int64", "N")
                   .InputTypeList("values", "sparse_types")
                   .InputList("shapes", "int64", "N")
                   .InputTypeList("dense_inputs", "dense_types")
                   .Output("output_indices", "int64")
                   .Output("output_values", "out_type")
                   .Output("output_shape", "int64")
                   .RequiredAttr("hashed_output", AttrType::kBool)
                   .RequiredAttr("num_buckets", AttrType::kInt)
                   .RequiredAttr("hash_key", AttrType::kInt)
                   .TypeAttr("out_type", {DType::kInt64, DType::kString})
                   .TypeAttr("internal_type", {DType::kInt64, DType::kString})
                   .Shape(SparseCrossShape)
                   .Kernel("CPU", SparseCrossKernel)
                   .NotDifferentiable()
                   .Doc("The crosses of sparse and dense feature columns, row by row: strings "
                        "joined with \"_X_\", or (hashed_output) FingerprintCat64 hashes modulo "
                        "num_buckets."));

}  // namespace
}  // namespace flowstone
