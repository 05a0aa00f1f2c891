// GatherTree (tf.contrib.seq2seq.gather_tree): the full sequences of a beam search, read back
// from each step's chosen ids and the beams they extended. For every batch entry and final beam,
// the ids are collected from the last step of the entry's max_sequence_length back to the first,
// following parent_ids; steps past that length, and every step after the first end_token of a
// sequence, hold end_token. As TensorFlow's kernel, a parent id outside [0, beam_width) is an
// error rather than a read out of bounds.
#include <algorithm>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status GatherTreeShape(InferenceContext& ctx) {
  PartialShape step_ids, parent_ids, lengths, end_token;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 3, &step_ids));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 3, &parent_ids));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 1, &lengths));
  FS_RETURN_IF_ERROR(ctx.WithRank(3, 0, &end_token));
  if (!step_ids.IsCompatibleWith(parent_ids)) {
    return errors::InvalidArgument("GatherTree: step_ids ", step_ids.ToString(), " and parent_ids ",
                                   parent_ids.ToString(), " must have one shape");
  }
  ctx.set_output(0, step_ids);
  return Status::OK();
}

template <typename T>
Status Gather(KernelContext& ctx) {
  const Tensor& step_ids = ctx.input(0);
  const Tensor& parent_ids = ctx.input(1);
  const Tensor& lengths = ctx.input(2);
  const int64_t max_time = step_ids.dim(0), batch = step_ids.dim(1), beams = step_ids.dim(2);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, step_ids.shape(), &out));
  const T* ids = step_ids.data<T>();
  const T* parents = parent_ids.data<T>();
  const int32_t* max_lengths = lengths.data<int32_t>();
  const T end_token = ctx.input(3).data<T>()[0];
  T* beams_out = out->data<T>();
  auto at = [&](int64_t t, int64_t b, int64_t k) { return (t * batch + b) * beams + k; };
  for (int64_t i = 0; i < out->num_elements(); ++i) beams_out[i] = end_token;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = std::min<int64_t>(max_time, std::max<int64_t>(0, max_lengths[b]));
    for (int64_t k = 0; k < beams; ++k) {
      if (length == 0) continue;
      beams_out[at(length - 1, b, k)] = ids[at(length - 1, b, k)];
      int64_t parent = parents[at(length - 1, b, k)];
      for (int64_t t = length - 2; t >= 0; --t) {
        if (parent < 0 || parent >= beams) {
          return errors::InvalidArgument("GatherTree: saw invalid parent id ", parent,
                                         " at (batch, beam, time) = (", b, ", ", k, ", ", t + 1,
                                         "); parents must be in [0, ", beams, ")");
        }
        beams_out[at(t, b, k)] = ids[at(t, b, parent)];
        parent = parents[at(t, b, parent)];
      }
      // Everything after the first end_token is end_token.
      bool finished = false;
      for (int64_t t = 0; t < length; ++t) {
        if (finished) beams_out[at(t, b, k)] = end_token;
        finished = finished || beams_out[at(t, b, k)] == end_token;
      }
    }
  }
  return Status::OK();
}

Status GatherTreeKernel(KernelContext& ctx) {
  const Tensor& step_ids = ctx.input(0);
  if (step_ids.shape() != ctx.input(1).shape()) {
    return errors::InvalidArgument("GatherTree: step_ids ", step_ids.shape().ToString(),
                                   " and parent_ids ", ctx.input(1).shape().ToString(),
                                   " must have one shape");
  }
  if (step_ids.rank() != 3 || ctx.input(2).rank() != 1 || ctx.input(2).dim(0) != step_ids.dim(1) ||
      ctx.input(3).rank() != 0) {
    return errors::InvalidArgument(
        "GatherTree: expected step_ids [max_time, batch, beam_width], max_sequence_lengths "
        "[batch] and a scalar end_token, got ",
        step_ids.shape().ToString(), ", ", ctx.input(2).shape().ToString(), " and ",
        ctx.input(3).shape().ToString());
  }
  return DispatchDType<int32_t, int64_t>(step_ids.dtype(), "GatherTree",
                                         [&]<typename T>() { return Gather<T>(ctx); });
}

FS_REGISTER_OP(OpBuilder("GatherTree")
                   .Input("step_ids", "T")
                   .Input("parent_ids", "T")
                   .Input("max_sequence_lengths", "int32")
                   .Input("end_token", "T")
                   .Output("beams", "T")
                   .TypeAttr("T", {DType::kInt32, DType::kInt64})
                   .Shape(GatherTreeShape)
                   .Kernel("CPU", GatherTreeKernel)
                   .NotDifferentiable()
                   .Doc("The full beams of a beam search, followed back through parent_ids."));

}  // namespace
}  // namespace flowstone
