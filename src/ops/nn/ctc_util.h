// Shared by the CTC op families (ctc_ops.cc: loss and greedy decoder; ctc_beam_search_ops.cc).
#pragma once

#include <cstdint>
#include <string>

#include "flowstone/kernel.h"
#include "flowstone/status.h"

namespace flowstone {
namespace ctc {

// Checks the shapes the CTC ops (loss and decoders) share: inputs [T, B, C] with C > 0 and
// sequence_length [B] with every length in [0, T].
inline Status CheckLogitsAndLengths(KernelContext& ctx, const Tensor& logits,
                                    const Tensor& lengths) {
  const std::string& op = ctx.node().type();
  if (logits.shape().rank() != 3) {
    return errors::InvalidArgument(op, ": inputs is not a 3-Tensor [max_time, batch_size, ",
                                   "num_classes]; got shape ", logits.shape().ToString());
  }
  if (lengths.shape().rank() != 1 || lengths.shape().dim(0) != logits.shape().dim(1)) {
    return errors::InvalidArgument(op, ": len(sequence_length) != batch_size. sequence_length ",
                                   "has shape ", lengths.shape().ToString(), ", inputs ",
                                   logits.shape().ToString());
  }
  if (logits.shape().dim(2) == 0) {
    return errors::InvalidArgument(op, ": num_classes cannot be 0 (the last class is the blank)");
  }
  const int64_t max_time = logits.shape().dim(0);
  for (int64_t b = 0; b < lengths.num_elements(); ++b) {
    const int32_t len = lengths.data<int32_t>()[b];
    if (len < 0 || len > max_time) {
      return errors::InvalidArgument(op, ": sequence_length(", b, ") = ", len,
                                     " is outside [0, max_time = ", max_time, "]");
    }
  }
  return Status::OK();
}

}  // namespace ctc
}  // namespace flowstone
