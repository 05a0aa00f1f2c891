// UnsortedSegmentJoin (tf.strings.unsorted_segment_join): the strings of each segment joined
// with `separator`, in input order; a segment no id names is the empty string. Shapes follow the
// unsorted segment reductions (ops/segment_util.h). Not differentiable.
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"
#include "ops/segment_util.h"

namespace flowstone {
namespace {

Status UnsortedSegmentJoinKernel(KernelContext& ctx) {
  const Tensor& inputs = ctx.input(0);
  const Tensor& ids = ctx.input(1);
  int64_t num_segments = 0;
  FS_RETURN_IF_ERROR(
      segment_util::CheckUnsortedSegmentInputs(inputs, ids, ctx.input(2), &num_segments));
  const std::string separator = ctx.attrs().GetOr<std::string>("separator", "");
  TensorShape out_shape{num_segments};
  for (int d = ids.rank(); d < inputs.rank(); ++d) out_shape.AddDim(inputs.dim(d));
  const int64_t count = ids.num_elements();
  const int64_t inner = count == 0 ? 0 : inputs.num_elements() / count;
  std::vector<int64_t> segment(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    segment[i] = ids.ElementAsInt64(i);
    if (segment[i] < 0 || segment[i] >= num_segments) {
      return errors::InvalidArgument(
          "segment_ids are not allowed to exceed num_segments or to have negative values: "
          "segment_ids[",
          i, "] = ", segment[i], ", num_segments = ", num_segments);
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  std::string* joined = out->data<std::string>();
  std::vector<bool> started(static_cast<size_t>(out->num_elements()), false);
  const std::string* strings = inputs.data<std::string>();
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t o = segment[i] * inner + j;
      if (started[o]) joined[o] += separator;
      joined[o] += strings[i * inner + j];
      started[o] = true;
    }
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("UnsortedSegmentJoin")
                   .Input("inputs", "string")
                   .Input("segment_ids", "Tindices")
                   .Input("num_segments", "Tnumsegments")
                   .Output("output", "string")
                   .Attr("separator", "")
                   .TypeAttr("Tindices", array_util::kIndexTypes)
                   .TypeAttr("Tnumsegments", array_util::kIndexTypes, DType::kInt32)
                   .Shape(segment_util::UnsortedSegmentShape)
                   .Kernel("CPU", UnsortedSegmentJoinKernel)
                   .NotDifferentiable()
                   .Doc("The strings of each segment joined with separator, in input order "
                        "(tf.strings.unsorted_segment_join)."));

}  // namespace
}  // namespace flowstone
