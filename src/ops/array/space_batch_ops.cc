// SpaceToBatchND and BatchToSpaceND (tf.space_to_batch_nd, tf.batch_to_space_nd): the spatial
// dims 1..M of the input, padded (or, going back, cropped), are cut into blocks of block_shape
// whose positions move into the batch dimension. Output batch entry k * batch + n holds block
// offset k (row-major over block_shape) of input entry n. Each op is the other's gradient. Rows of
// the trailing dims are copied as bytes, so every dtype is served.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::kIndexTypes;

enum class Direction { kSpaceToBatch, kBatchToSpace };

// block_shape [M] and the paddings or crops [M, 2], checked against an input of rank `rank`.
struct Blocks {
  std::vector<int64_t> block;
  std::vector<int64_t> before, after;  // padding (or crop) at each spatial dim's start and end
  int64_t block_count = 1;
};

Status ReadBlocks(const Tensor& block_shape, const Tensor& amounts, const char* amounts_name,
                  int rank, Blocks* out) {
  if (block_shape.rank() != 1) {
    return errors::InvalidArgument("block_shape must be a vector, got shape ",
                                   block_shape.shape().ToString());
  }
  const int64_t m = block_shape.dim(0);
  if (amounts.rank() != 2 || amounts.dim(0) != m || amounts.dim(1) != 2) {
    return errors::InvalidArgument(amounts_name, " should have shape [", m, ", 2] instead of ",
                                   amounts.shape().ToString());
  }
  if (m < 1 || m >= rank) {
    return errors::InvalidArgument("input rank should be > block_shape size ", m,
                                   " (and block_shape non-empty), got input rank ", rank);
  }
  out->block = array_util::IntValues(block_shape);
  for (int64_t j = 0; j < m; ++j) {
    if (out->block[j] < 1) {
      return errors::InvalidArgument("All values in block_shape must be positive, got value, ",
                                     out->block[j], " at index ", j, ".");
    }
    if (out->block_count > std::numeric_limits<int64_t>::max() / out->block[j]) {
      return errors::InvalidArgument("the product of block_shape ",
                                     array_util::JoinInts(out->block), " does not fit int64");
    }
    out->block_count *= out->block[j];
    out->before.push_back(amounts.ElementAsInt64(2 * j));
    out->after.push_back(amounts.ElementAsInt64(2 * j + 1));
    if (out->before[j] < 0 || out->after[j] < 0) {
      return errors::InvalidArgument("All values in ", amounts_name, " must be non-negative, got ",
                                     array_util::JoinInts(array_util::IntValues(amounts)));
    }
  }
  return Status::OK();
}

// The error for an output dimension past int64 (block sizes and paddings are caller values).
Status Overflow(const char* what, size_t j, const Blocks& blocks) {
  return errors::InvalidArgument(
      "the ", what, " of spatial dimension ", j, " does not fit int64 with block_shape ",
      array_util::JoinInts(blocks.block), ", before ", array_util::JoinInts(blocks.before),
      " and after ", array_util::JoinInts(blocks.after));
}

// The output dims for input dims `in`; fails when sizes do not divide or overflow int64.
Status OutputDims(Direction direction, const std::vector<int64_t>& in, const Blocks& blocks,
                  std::vector<int64_t>* out) {
  *out = in;
  const size_t m = blocks.block.size();
  if (direction == Direction::kSpaceToBatch) {
    if (__builtin_mul_overflow(in[0], blocks.block_count, &(*out)[0])) {
      return errors::InvalidArgument("the output batch, ", in[0],
                                     " times the product of block_shape ",
                                     array_util::JoinInts(blocks.block), ", does not fit int64");
    }
    for (size_t j = 0; j < m; ++j) {
      int64_t padded;
      if (__builtin_add_overflow(in[j + 1], blocks.before[j], &padded) ||
          __builtin_add_overflow(padded, blocks.after[j], &padded)) {
        return Overflow("padded size", j, blocks);
      }
      if (padded % blocks.block[j] != 0) {
        return errors::InvalidArgument("padded_shape[", j, "]=", padded,
                                       " is not divisible by block_shape[", j,
                                       "]=", blocks.block[j]);
      }
      (*out)[j + 1] = padded / blocks.block[j];
    }
  } else {
    if (in[0] % blocks.block_count != 0) {
      return errors::InvalidArgument("Input batch dimension (", in[0],
                                     ") is not divisible by product of block sizes (",
                                     blocks.block_count, ")");
    }
    (*out)[0] = in[0] / blocks.block_count;
    for (size_t j = 0; j < m; ++j) {
      int64_t full;
      if (__builtin_mul_overflow(in[j + 1], blocks.block[j], &full)) {
        return Overflow("size before cropping", j, blocks);
      }
      // Both crops are non-negative (ReadBlocks), so only a negative result can wrap.
      int64_t cropped;
      if (__builtin_sub_overflow(full, blocks.before[j], &cropped) ||
          __builtin_sub_overflow(cropped, blocks.after[j], &cropped) || cropped < 0) {
        return errors::InvalidArgument(
            "crops must not exceed the size of each dimension: "
            "crops[",
            j, "] = [", blocks.before[j], ", ", blocks.after[j], "] but the dimension has ", full,
            " elements");
      }
      (*out)[j + 1] = cropped;
    }
  }
  return Status::OK();
}

template <Direction D>
Status SpaceBatchShape(InferenceContext& ctx) {
  const PartialShape& input = ctx.input(0);
  const Tensor* block_shape = ctx.input_value(1);
  const Tensor* amounts = ctx.input_value(2);
  if (!input.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (block_shape == nullptr || amounts == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(input.rank()));
    return Status::OK();
  }
  Blocks blocks;
  FS_RETURN_IF_ERROR(ReadBlocks(*block_shape, *amounts,
                                D == Direction::kSpaceToBatch ? "paddings" : "crops", input.rank(),
                                &blocks));
  std::vector<int64_t> dims = input.dims().ToVector();
  bool known = true;
  for (size_t j = 0; j <= blocks.block.size(); ++j) known = known && dims[j] >= 0;
  if (!known) {
    for (size_t j = 0; j <= blocks.block.size(); ++j) dims[j] = -1;
    ctx.set_output(0, PartialShape(dims));
    return Status::OK();
  }
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(OutputDims(D, dims, blocks, &out));
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

template <Direction D>
Status SpaceBatchKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const bool to_batch = D == Direction::kSpaceToBatch;
  Blocks blocks;
  FS_RETURN_IF_ERROR(ReadBlocks(ctx.input(1), ctx.input(2), to_batch ? "paddings" : "crops",
                                input.rank(), &blocks));
  const std::vector<int64_t> in = input.shape().ToVector();
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(OutputDims(D, in, blocks, &out));
  TensorShape out_shape;
  FS_RETURN_IF_ERROR(scatter_util::CheckedShape(out, &out_shape));
  Tensor* output;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &output));
  if (output->num_elements() == 0) return Status::OK();
  const int m = static_cast<int>(blocks.block.size());
  // The batch-side tensor is [k * batch + n, i_1..i_M, rest]; the space-side tensor is
  // [n, s_1..s_M, rest] with s_j = i_j * block_j + o_j - before_j (o = block offset k).
  const std::vector<int64_t>& batch_side = to_batch ? out : in;
  const std::vector<int64_t>& space_side = to_batch ? in : out;
  const int64_t row_bytes = DimProduct(input.shape(), m + 1, input.rank()) *
                            static_cast<int64_t>(DTypeSize(input.dtype()));
  const int64_t rows = DimProduct(TensorShape(batch_side), 0, m + 1);
  const int64_t batch = space_side[0];
  const char* src = static_cast<const char*>(input.raw_data());
  char* dst = static_cast<char*>(output->raw_data());
  ctx.ParallelFor(rows, row_bytes / 4 + m + 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(m);
    for (int64_t r = begin; r < end; ++r) {
      int64_t rest = r;
      for (int j = m - 1; j >= 0; --j) {
        index[j] = rest % batch_side[j + 1];
        rest /= batch_side[j + 1];
      }
      const int64_t n = rest % batch;
      int64_t offset = rest / batch;  // the block offset k, decoded from its last dim
      int64_t space_row = 0;
      bool inside = true;
      for (int j = m - 1; j >= 0; --j) {
        const int64_t o = offset % blocks.block[j];
        offset /= blocks.block[j];
        index[j] = index[j] * blocks.block[j] + o - blocks.before[j];
        inside = inside && index[j] >= 0 && index[j] < space_side[j + 1];
      }
      if (inside) {
        space_row = n;
        for (int j = 0; j < m; ++j) space_row = space_row * space_side[j + 1] + index[j];
      }
      if (to_batch && inside) {
        std::memcpy(dst + r * row_bytes, src + space_row * row_bytes, row_bytes);
      } else if (to_batch) {
        std::memset(dst + r * row_bytes, 0, row_bytes);  // padding
      } else if (inside) {
        std::memcpy(dst + space_row * row_bytes, src + r * row_bytes, row_bytes);
      }  // else: a cropped-away row
    }
  });
  return Status::OK();
}

template <Direction D>
Status SpaceBatchGrad(GradientContext& ctx) {
  const char* inverse = D == Direction::kSpaceToBatch ? "BatchToSpaceND" : "SpaceToBatchND";
  ctx.SetInputGrad(0, ctx.Op(inverse, {ctx.output_grad(0), ctx.input(1), ctx.input(2)}));
  return Status::OK();
}

template <Direction D>
OpBuilder SpaceBatchOp(const char* name, const char* amounts, const char* amounts_type,
                       const char* doc) {
  OpBuilder builder(name);
  builder.Input("input", "T")
      .Input("block_shape", "Tblock_shape")
      .Input(amounts, amounts_type)
      .Output("output", "T")
      .TypeAttr("T", kAllTypes)
      .TypeAttr("Tblock_shape", kIndexTypes, DType::kInt32)
      .TypeAttr(amounts_type, kIndexTypes, DType::kInt32)
      .Shape(SpaceBatchShape<D>)
      .Kernel("CPU", SpaceBatchKernel<D>)
      .Gradient(SpaceBatchGrad<D>)
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(SpaceBatchOp<Direction::kSpaceToBatch>(
    "SpaceToBatchND", "paddings", "Tpaddings",
    "Pads spatial dims 1..M and moves blocks of block_shape into the batch dimension "
    "(tf.space_to_batch_nd)."));
FS_REGISTER_OP(SpaceBatchOp<Direction::kBatchToSpace>(
    "BatchToSpaceND", "crops", "Tcrops",
    "Moves batch entries back into blocks of block_shape in spatial dims 1..M and crops them "
    "(tf.batch_to_space_nd)."));

}  // namespace
}  // namespace flowstone
