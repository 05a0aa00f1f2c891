// Input checks of the softmax cross-entropy ops, shared by the CPU kernels (loss_ops.cc) and the
// GPU kernels (src/cuda/softmax_kernels.cu), so both fail with the same messages.
#pragma once

#include "flowstone/tensor.h"

namespace flowstone {

// logits must be [batch, classes]; labels are [batch] class ids (sparse) or logits-shaped
// probabilities (dense).
inline Status CheckXentInputs(const Tensor& logits, const Tensor& labels, bool sparse) {
  if (logits.rank() != 2) {
    return errors::InvalidArgument("logits must be 2-D [batch, classes], got shape ",
                                   logits.shape().ToString());
  }
  const int64_t batch = logits.dim(0);
  if (sparse && (labels.rank() != 1 || labels.dim(0) != batch)) {
    return errors::InvalidArgument(
        "logits and labels must have the same first dimension, got logits shape ",
        logits.shape().ToString(), " and labels shape ", labels.shape().ToString());
  }
  if (!sparse && labels.shape() != logits.shape()) {
    return errors::InvalidArgument(
        "logits and labels must be same size: logits_size=", logits.shape().ToString(),
        " labels_size=", labels.shape().ToString());
  }
  if (sparse && batch > 0 && logits.dim(1) == 0) {
    return errors::InvalidArgument("Must have at least one class, but got logits shape ",
                                   logits.shape().ToString());
  }
  return Status::OK();
}

}  // namespace flowstone
