// What the convolution and pooling ops share: TensorFlow's attr conventions (data_format;
// strides, dilations and ksize given for all four dimensions of the data format; the SAME, VALID
// and EXPLICIT padding schemes) and its rules for output sizes and padding.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "flowstone/attr.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"

namespace flowstone::conv {

enum class DataFormat { kNHWC, kNCHW };
enum class Padding { kSame, kValid, kExplicit };

// Where batch, rows, columns and channels sit in a 4-D tensor of a data format.
struct Layout {
  int n, h, w, c;
  static Layout Of(DataFormat format) {
    return format == DataFormat::kNHWC ? Layout{0, 1, 2, 3} : Layout{0, 2, 3, 1};
  }
};

// The sizes of a 4-D image tensor by meaning; -1 marks a size unknown while building the graph.
struct Image {
  int64_t n = -1, h = -1, w = -1, c = -1;
};
Image ImageOf(const Dims& dims, DataFormat format);
Dims DimsOf(const Image& image, DataFormat format);

// Element strides of a dense image tensor, so loops can walk NHWC and NCHW alike.
struct ImageStrides {
  int64_t n, h, w, c;
  ImageStrides(const Image& image, DataFormat format);
  int64_t operator()(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return b * n + y * h + x * w + ch * c;
  }
};

// The parsed window attrs of one conv or pooling node, per spatial dimension (0 = rows,
// 1 = columns).
struct WindowAttrs {
  DataFormat format = DataFormat::kNHWC;
  Padding padding = Padding::kValid;
  int64_t ksize[2] = {1, 1};  // pooling only; convolutions take it from the filter
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t explicit_pad[2][2] = {{0, 0}, {0, 0}};  // [dimension][before, after]
};

// Reads data_format, strides, padding, explicit_paddings and dilations (when the op has them),
// checking them with TensorFlow's messages.
Status ParseConvAttrs(const AttrMap& attrs, WindowAttrs* out);
// Reads data_format, ksize, strides, padding and explicit_paddings (when the op has them).
Status ParsePoolAttrs(const AttrMap& attrs, WindowAttrs* out);

// The attrs among `names` that `attrs` has.
inline AttrMap SelectAttrs(const AttrMap& attrs, std::initializer_list<const char*> names) {
  AttrMap out;
  for (const char* name : names) {
    if (const AttrValue* v = attrs.Find(name)) out.Set(name, *v);
  }
  return out;
}

// The window attrs that a convolution's (2-D or 3-D) gradient passes take from its node.
inline AttrMap ConvGradAttrs(const AttrMap& attrs) {
  return SelectAttrs(attrs, {"strides", "padding", "explicit_paddings", "data_format", "dilations",
                             "use_cudnn_on_gpu"});
}

// The window attrs that a pooling op's (2-D or 3-D) gradient ops take from its node.
inline AttrMap PoolGradAttrs(const AttrMap& attrs) {
  return SelectAttrs(attrs, {"ksize", "strides", "padding", "explicit_paddings", "data_format"});
}

// One spatial dimension of a sliding window.
struct Window {
  int64_t in = 0, kernel = 0, stride = 1, dilation = 1;
  int64_t out = 0, pad_before = 0, pad_after = 0;
  int64_t effective_kernel() const { return (kernel - 1) * dilation + 1; }
};

// The input position a kernel tap reads for an output position, or -1 in the padding.
inline int64_t InputPos(const Window& w, int64_t out_pos, int64_t tap) {
  const int64_t pos = out_pos * w.stride - w.pad_before + tap * w.dilation;
  return pos >= 0 && pos < w.in ? pos : -1;
}

// The output position that a kernel tap maps onto an input position, or -1 when none does.
inline int64_t OutputPos(const Window& w, int64_t in_pos, int64_t tap) {
  int64_t t = in_pos + w.pad_before - tap * w.dilation;
  if (t < 0 || t % w.stride != 0) return -1;
  t /= w.stride;
  return t < w.out ? t : -1;
}

// TensorFlow's output size and padding for one dimension:
//   SAME:     out = ceil(in / stride), pad_total = max((out - 1) * stride + eff - in, 0),
//             pad_before = pad_total / 2
//   VALID:    out = ceil((in - eff + 1) / stride), no padding
//   EXPLICIT: out = floor((in + before + after - eff) / stride) + 1
// where eff = (kernel - 1) * dilation + 1. Fails when the output size would be negative.
Status ComputeWindow(const WindowAttrs& attrs, int dim, int64_t in, int64_t kernel, Window* out);
// The output size for graph building: -1 when `in` or `kernel` is unknown.
Status WindowOutputSize(const WindowAttrs& attrs, int dim, int64_t in, int64_t kernel,
                        int64_t* out);

}  // namespace flowstone::conv
