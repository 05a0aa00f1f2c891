// Checks shared by the unsorted segment reductions: UnsortedSegmentSum (slice_ops.cc, beside
// GatherV2 whose gradient it is) and UnsortedSegment{Max,Min,Prod} (array/segment_ops.cc). Their
// inputs are (data, segment_ids, num_segments); segment_ids' shape must prefix data's and the
// output is [num_segments] + data.shape[segment_ids.rank:].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flowstone/shape_inference.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "ops/array_util.h"

namespace flowstone {
namespace segment_util {

// TensorFlow's message when segment_ids' shape is not a prefix of data's.
inline Status NotPrefixError(const std::string& data, const std::string& ids) {
  return errors::InvalidArgument("data.shape = ", data,
                                 " does not start with segment_ids.shape = ", ids);
}

// Shape function: [num_segments] + data.shape[ids.rank:], where ids' shape prefixes data's.
// num_segments is -1 (unknown) unless its value is known when the graph is built.
inline Status UnsortedSegmentShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &unused));
  const PartialShape& data = ctx.input(0);
  const PartialShape& ids = ctx.input(1);
  int64_t num_segments = -1;
  if (const Tensor* n = ctx.input_value(2)) {
    num_segments = n->ElementAsInt64(0);
    if (num_segments < 0) {
      return errors::InvalidArgument("num_segments must be non-negative, got ", num_segments);
    }
  }
  if (!data.known_rank() || !ids.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  bool prefix = data.rank() >= ids.rank();
  for (int i = 0; prefix && i < ids.rank(); ++i) {
    prefix = data.dim(i) < 0 || ids.dim(i) < 0 || data.dim(i) == ids.dim(i);
  }
  if (!prefix) return NotPrefixError(data.ToString(), ids.ToString());
  std::vector<int64_t> dims = {num_segments};
  for (int i = ids.rank(); i < data.rank(); ++i) dims.push_back(data.dim(i));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// Kernel-side checks of the same inputs: reads num_segments (non-negative) and checks that ids'
// shape prefixes data's. The range of each id is checked by the caller.
inline Status CheckUnsortedSegmentInputs(const Tensor& data, const Tensor& ids,
                                         const Tensor& num_segments_input, int64_t* num_segments) {
  FS_RETURN_IF_ERROR(array_util::ScalarIndex(num_segments_input, "num_segments", num_segments));
  if (*num_segments < 0) {
    return errors::InvalidArgument("num_segments must be non-negative, got ", *num_segments);
  }
  bool prefix = data.rank() >= ids.rank();
  for (int i = 0; prefix && i < ids.rank(); ++i) prefix = data.dim(i) == ids.dim(i);
  if (!prefix) return NotPrefixError(data.shape().ToString(), ids.shape().ToString());
  return Status::OK();
}

}  // namespace segment_util
}  // namespace flowstone
