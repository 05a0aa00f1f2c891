// What the 3-D convolution and pooling ops share: the NDHWC / NCDHW layouts, their attrs
// (strides, dilations and ksize given for all five dimensions; SAME or VALID padding) and the
// windows of each spatial dimension, by the same rules as the 2-D ops (conv::ComputeWindow).
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "flowstone/attr.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"
#include "ops/conv_util.h"

namespace flowstone::volume {

// The sizes of a 5-D volume tensor by meaning; -1 marks a size unknown while building.
struct Volume {
  int64_t n = -1, c = -1;
  int64_t spatial[3] = {-1, -1, -1};  // depth (planes), rows, columns
};

// Element strides of a dense volume tensor, so loops can walk NDHWC and NCDHW alike.
struct VolumeStrides {
  int64_t n, c, spatial[3];
  VolumeStrides(const Volume& v, bool channels_first);
  int64_t operator()(int64_t b, int64_t z, int64_t y, int64_t x, int64_t ch) const {
    return b * n + z * spatial[0] + y * spatial[1] + x * spatial[2] + ch * c;
  }
};

// The parsed attrs of one 3-D convolution or pooling node.
struct VolumeAttrs {
  bool channels_first = false;  // NCDHW
  conv::Padding padding = conv::Padding::kValid;
  int64_t ksize[3] = {1, 1, 1};  // pooling only; convolutions take it from the filter
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
};

Volume VolumeOf(const Dims& dims, bool channels_first);
Dims DimsOf(const Volume& v, bool channels_first);

// Reads data_format, strides, padding and (for convolutions) dilations or (for pooling) ksize,
// with TensorFlow's messages.
Status ParseVolumeAttrs(const AttrMap& attrs, bool pooling, VolumeAttrs* out);

// The window of spatial dimension `dim` (0..2) over an input of size `in` with a kernel of size
// `kernel`, and its output size while building (-1 when in or kernel is unknown).
Status ComputeWindow(const VolumeAttrs& attrs, int dim, int64_t in, int64_t kernel,
                     conv::Window* out);
Status WindowOutputSize(const VolumeAttrs& attrs, int dim, int64_t in, int64_t kernel,
                        int64_t* out);

// The oneDNN float32 descriptor of a dense volume tensor in its own layout (ndhwc or ncdhw).
dnnl::memory::desc OneDnnDesc(const Volume& v, bool channels_first);

// Checks that a 5-D tensor argument has rank 5.
Status CheckRank5(const std::string& op, const char* name, const TensorShape& shape);

}  // namespace flowstone::volume
