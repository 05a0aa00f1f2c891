// The data layout of BiasAdd and BiasAddGrad, shared by the CPU kernels (bias_ops.cc) and the
// GPU kernels (src/cuda/bias_kernels.cu): which dimension holds the channels, and a tensor
// viewed as [outer, channels, inner] around it.
#pragma once

#include <cstdint>
#include <string>

#include "flowstone/attr.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"

namespace flowstone {

// Reads the data_format attr: "NHWC" (channels last) or "NCHW" (channels first).
inline Status ParseBiasFormat(const AttrMap& attrs, bool* nchw) {
  const std::string format = attrs.GetOr<std::string>("data_format", "NHWC");
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument("Value for attr 'data_format' of \"", format,
                                   "\" is not in the list of allowed values: \"NHWC\", \"NCHW\"");
  }
  *nchw = format == "NCHW";
  return Status::OK();
}

inline int ChannelDim(bool nchw, int rank) { return nchw ? 1 : rank - 1; }

// A tensor viewed as [outer, channels, inner]: the channel dimension with the products of the
// dimensions before and after it.
struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
  ChannelView(const TensorShape& shape, int channel_dim) {
    for (int i = 0; i < shape.rank(); ++i) {
      if (i < channel_dim) outer *= shape.dim(i);
      if (i == channel_dim) channels = shape.dim(i);
      if (i > channel_dim) inner *= shape.dim(i);
    }
  }
};

}  // namespace flowstone
