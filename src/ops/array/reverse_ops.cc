// Reversals: ReverseV2 (tf.reverse: flips the given axes) and ReverseSequence
// (tf.reverse_sequence: flips the first seq_lengths[b] elements along seq_dim of each batch entry
// b). Both move elements without looking at them, so every dtype is served by element size.
#include <algorithm>
#include <cstring>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::DimProduct;
using array_util::kIndexTypes;

// --- ReverseV2 -------------------------------------------------------------------------------

Status ReverseShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status ReverseKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& axis = ctx.input(1);
  if (axis.rank() != 1) {
    return errors::InvalidArgument("axis must be a vector, got shape ", axis.shape().ToString());
  }
  const int rank = input.rank();
  std::vector<bool> flipped(rank, false);
  for (int64_t k = 0; k < axis.num_elements(); ++k) {
    int d = 0;
    FS_RETURN_IF_ERROR(array_util::CanonicalAxis(axis.ElementAsInt64(k), rank, "axis", &d));
    if (flipped[d]) {
      return errors::InvalidArgument("axis ", d, " specified more than once");
    }
    flipped[d] = true;
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &out));
  if (input.num_elements() == 0) return Status::OK();
  if (std::find(flipped.begin(), flipped.end(), true) == flipped.end() || rank == 0) {
    std::memcpy(out->raw_data(), input.raw_data(), input.bytes());
    return Status::OK();
  }
  // The output as a strided view of the input: flipped dims run backwards from their end.
  std::vector<int64_t> dims(rank), strides(rank);
  int64_t stride = 1;
  int64_t start = 0;
  for (int d = rank - 1; d >= 0; --d) {
    dims[d] = input.dim(d);
    strides[d] = flipped[d] ? -stride : stride;
    if (flipped[d]) start += (input.dim(d) - 1) * stride;
    stride *= input.dim(d);
  }
  return array_util::DispatchElementSize(DTypeSize(input.dtype()), [&]<typename U>() -> Status {
    array_util::StridedGather(ctx, input.data<U>() + start, dims, strides, out->data<U>());
    return Status::OK();
  });
}

Status ReverseGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("ReverseV2", {ctx.output_grad(0), ctx.input(1)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReverseV2")
                   .Input("tensor", "T")
                   .Input("axis", "Tidx")
                   .Output("output", "T")
                   .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                   .TypeAttr("T", kAllTypes)
                   .Shape(ReverseShape)
                   .Kernel("CPU", ReverseKernel)
                   .Gradient(ReverseGrad)
                   .Doc("tensor with the dimensions in axis reversed (tf.reverse)."));

// --- ReverseSequence -------------------------------------------------------------------------

// seq_dim and batch_dim in [0, rank) and different.
Status CheckSequenceDims(int64_t seq_dim, int64_t batch_dim, int rank) {
  if (seq_dim == batch_dim) {
    return errors::InvalidArgument("seq_dim == batch_dim == ", seq_dim,
                                   "; they must name different dimensions");
  }
  if (seq_dim < 0 || seq_dim >= rank) {
    return errors::InvalidArgument("seq_dim must be in [0, ", rank, "), got ", seq_dim);
  }
  if (batch_dim < 0 || batch_dim >= rank) {
    return errors::InvalidArgument("batch_dim must be in [0, ", rank, "), got ", batch_dim);
  }
  return Status::OK();
}

Status ReverseSequenceShape(InferenceContext& ctx) {
  PartialShape lengths;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &lengths));
  const PartialShape& input = ctx.input(0);
  if (input.known_rank()) {
    const int64_t seq_dim = ctx.attrs().GetOr<int64_t>("seq_dim", 0);
    const int64_t batch_dim = ctx.attrs().GetOr<int64_t>("batch_dim", 0);
    FS_RETURN_IF_ERROR(CheckSequenceDims(seq_dim, batch_dim, input.rank()));
    int64_t batch;
    FS_RETURN_IF_ERROR(
        ctx.MergeDim(input.dim(static_cast<int>(batch_dim)), lengths.dim(0), &batch));
  }
  ctx.set_output(0, input);
  return Status::OK();
}

Status ReverseSequenceKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& lengths = ctx.input(1);
  const int64_t seq_dim = ctx.attrs().GetOr<int64_t>("seq_dim", 0);
  const int64_t batch_dim = ctx.attrs().GetOr<int64_t>("batch_dim", 0);
  FS_RETURN_IF_ERROR(CheckSequenceDims(seq_dim, batch_dim, input.rank()));
  const int s_dim = static_cast<int>(seq_dim);
  const int b_dim = static_cast<int>(batch_dim);
  if (lengths.rank() != 1 || lengths.dim(0) != input.dim(b_dim)) {
    return errors::InvalidArgument("seq_lengths must be a vector of length input.dims(", batch_dim,
                                   ") = ", input.dim(b_dim), ", got shape ",
                                   lengths.shape().ToString());
  }
  std::vector<int64_t> len = array_util::IntValues(lengths);
  for (size_t b = 0; b < len.size(); ++b) {
    if (len[b] < 0 || len[b] > input.dim(s_dim)) {
      return errors::InvalidArgument("seq_lengths[", b, "] = ", len[b], " is not in [0, ",
                                     input.dim(s_dim),
                                     "], the size of dimension seq_dim = ", seq_dim);
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &out));
  const int64_t seq_stride = DimProduct(input.shape(), s_dim + 1, input.rank());
  const int64_t batch_stride = DimProduct(input.shape(), b_dim + 1, input.rank());
  const int64_t seq_size = input.dim(s_dim);
  const int64_t batch_size = input.dim(b_dim);
  return array_util::DispatchElementSize(DTypeSize(input.dtype()), [&]<typename U>() -> Status {
    const U* src = input.data<U>();
    U* dst = out->data<U>();
    ctx.ParallelFor(input.num_elements(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t s = (i / seq_stride) % seq_size;
        const int64_t n = len[(i / batch_stride) % batch_size];
        dst[i] = s < n ? src[i + (n - 1 - 2 * s) * seq_stride] : src[i];
      }
    });
    return Status::OK();
  });
}

Status ReverseSequenceGrad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("seq_dim", ctx.attrs().GetOr<int64_t>("seq_dim", 0));
  attrs.Set("batch_dim", ctx.attrs().GetOr<int64_t>("batch_dim", 0));
  ctx.SetInputGrad(0, ctx.Op("ReverseSequence", {ctx.output_grad(0), ctx.input(1)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReverseSequence")
                   .Input("input", "T")
                   .Input("seq_lengths", "Tlen")
                   .Output("output", "T")
                   .RequiredAttr("seq_dim", AttrType::kInt)
                   .Attr("batch_dim", 0)
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tlen", kIndexTypes, DType::kInt64)
                   .Shape(ReverseSequenceShape)
                   .Kernel("CPU", ReverseSequenceKernel)
                   .Gradient(ReverseSequenceGrad)
                   .Doc("Reverses the first seq_lengths[b] elements along seq_dim of each slice b "
                        "along batch_dim (tf.reverse_sequence)."));

}  // namespace
}  // namespace flowstone
