// 2-D convolutions: Conv2D and DepthwiseConv2dNative with their input and filter backprops
// (which also implement conv2d_transpose), all differentiable twice.
//
// float32 runs on oneDNN, except 3x3 stride-1 NHWC passes of shapes where Winograd pays off
// (ops/nn/winograd_conv.h, WinogradFor); float64 (and float32 when FLOWSTONE_ONEDNN=0) runs the
// reference loops below, which are also the oracle the oneDNN and Winograd paths are tested
// against.
#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/conv_util.h"
#include "ops/fused_epilogue.h"
#include "ops/nn/winograd_conv.h"
#include "ops/onednn_util.h"

namespace flowstone {
namespace {

using conv::ComputeWindow;
using conv::DataFormat;
using conv::Image;
using conv::ImageStrides;
using conv::InputPos;
using conv::OutputPos;
using conv::Window;
using conv::WindowAttrs;

// ---------------------------------------------------------------------------------------------
// Geometry and checks, shared by the shape functions (where sizes may be unknown, -1) and the
// kernels (where all are known).

// A filter's dimensions: [rows, cols, in_channels, out_channels] for Conv2D, [rows, cols,
// channels, multiplier] for depthwise convolutions.
struct Filter {
  int64_t h = -1, w = -1, in = -1, out = -1;
  static Filter Of(const Dims& d) { return Filter{d[0], d[1], d[2], d[3]}; }
};

bool Known(int64_t d) { return d >= 0; }

// The output image of convolving `in` with `filter`, -1 where unknown.
Status ConvOutput(const WindowAttrs& attrs, bool depthwise, const Image& in, const Filter& filter,
                  Image* out) {
  if ((Known(filter.h) && filter.h < 1) || (Known(filter.w) && filter.w < 1)) {
    return errors::InvalidArgument("Filter rows and columns must be positive, but the filter is ",
                                   filter.h, "x", filter.w);
  }
  if (depthwise) {
    if (Known(in.c) && Known(filter.in) && in.c != filter.in) {
      return errors::InvalidArgument("input and filter must have the same depth: ", in.c, " vs ",
                                     filter.in);
    }
    const int64_t channels = Known(in.c) ? in.c : filter.in;
    out->c = Known(channels) && Known(filter.out) ? channels * filter.out : -1;
  } else {
    if (Known(in.c) && Known(filter.in) && (filter.in == 0 ? in.c != 0 : in.c % filter.in != 0)) {
      return errors::InvalidArgument("Depth of input (", in.c,
                                     ") is not a multiple of input depth of filter (", filter.in,
                                     ")");
    }
    out->c = filter.out;
  }
  out->n = in.n;
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(attrs, 0, in.h, filter.h, &out->h));
  return conv::WindowOutputSize(attrs, 1, in.w, filter.w, &out->w);
}

// Checks that out_backprop has the shape the convolution of `in` with `filter` produces, with
// TensorFlow's messages.
Status CheckBackprop(const std::string& op, const WindowAttrs& attrs, bool depthwise,
                     const Image& in, const Filter& filter, const Image& dy) {
  Image expected;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, depthwise, in, filter, &expected));
  if (Known(in.n) && Known(dy.n) && in.n != dy.n) {
    return errors::InvalidArgument(op,
                                   ": input and out_backprop must have the same batch size, "
                                   "but are ",
                                   in.n, " and ", dy.n);
  }
  if (Known(expected.c) && Known(dy.c) && expected.c != dy.c) {
    return errors::InvalidArgument(op,
                                   ": filter and out_backprop must have the same out_depth, "
                                   "but the filter gives ",
                                   expected.c, " and out_backprop has ", dy.c);
  }
  const conv::Layout layout = conv::Layout::Of(attrs.format);
  const int64_t in_size[2] = {in.h, in.w}, filter_size[2] = {filter.h, filter.w};
  const int64_t actual[2] = {dy.h, dy.w}, computed[2] = {expected.h, expected.w};
  const int tensor_dim[2] = {layout.h, layout.w};
  for (int d = 0; d < 2; ++d) {
    if (Known(actual[d]) && Known(computed[d]) && actual[d] != computed[d]) {
      return errors::InvalidArgument(
          op, ": Size of out_backprop doesn't match computed: actual = ", actual[d],
          ", computed = ", computed[d], " spatial_dim: ", tensor_dim[d], " input: ", in_size[d],
          " filter: ", filter_size[d], " output: ", actual[d], " stride: ", attrs.stride[d],
          " dilation: ", attrs.dilation[d]);
    }
  }
  return Status::OK();
}

// A convolution with every size known.
struct ConvProblem {
  DataFormat format = DataFormat::kNHWC;
  bool depthwise = false;
  Image in, out;
  Filter filter;
  Window rows, cols;
};

Status MakeProblem(const WindowAttrs& attrs, bool depthwise, const Image& in, const Filter& filter,
                   ConvProblem* p) {
  p->format = attrs.format;
  p->depthwise = depthwise;
  p->in = in;
  p->filter = filter;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, depthwise, in, filter, &p->out));
  FS_RETURN_IF_ERROR(ComputeWindow(attrs, 0, in.h, filter.h, &p->rows));
  return ComputeWindow(attrs, 1, in.w, filter.w, &p->cols);
}

// The key a kernel caches its oneDNN primitives under. The row padding is part of it because a
// band of an image's rows (RowsPerBand below) has padding of its own.
std::vector<int64_t> ProblemKey(const ConvProblem& p) {
  return {p.in.n,          p.in.h,       p.in.w,
          p.in.c,          p.filter.h,   p.filter.w,
          p.filter.in,     p.filter.out, p.rows.pad_before,
          p.rows.pad_after};
}

// ---------------------------------------------------------------------------------------------
// Reference implementation: direct loops over any data format, parallel over independent
// output rows (or filter taps for the filter gradient).

// Output channels fed by one input channel: all of them for Conv2D, `multiplier` consecutive
// ones for depthwise convolutions.
struct ChannelMap {
  int64_t fanout;  // filter entries per input channel
  bool depthwise;
  explicit ChannelMap(const ConvProblem& p) : fanout(p.filter.out), depthwise(p.depthwise) {}
  int64_t first_out(int64_t ic) const { return depthwise ? ic * fanout : 0; }
};

template <typename T>
void RefForward(KernelContext& ctx, const ConvProblem& p, const T* x, const T* f, T* y) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const ChannelMap map(p);
  const int64_t taps_cost = p.filter.h * p.filter.w * p.in.c * map.fanout * p.out.w;
  ctx.ParallelFor(p.out.n * p.out.h, taps_cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.out.c);
    for (int64_t row = begin; row < end; ++row) {
      if (ctx.cancelled()) return;  // the run discards y
      const int64_t b = row / p.out.h, oy = row % p.out.h;
      for (int64_t ox = 0; ox < p.out.w; ++ox) {
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t ky = 0; ky < p.filter.h; ++ky) {
          const int64_t iy = InputPos(p.rows, oy, ky);
          if (iy < 0) continue;
          for (int64_t kx = 0; kx < p.filter.w; ++kx) {
            const int64_t ix = InputPos(p.cols, ox, kx);
            if (ix < 0) continue;
            const T* taps = f + (ky * p.filter.w + kx) * p.filter.in * map.fanout;
            for (int64_t ic = 0; ic < p.in.c; ++ic) {
              const T v = x[xs(b, iy, ix, ic)];
              const T* w = taps + ic * map.fanout;
              T* a = acc.data() + map.first_out(ic);
              for (int64_t o = 0; o < map.fanout; ++o) a[o] += v * w[o];
            }
          }
        }
        for (int64_t oc = 0; oc < p.out.c; ++oc) y[ys(b, oy, ox, oc)] = acc[oc];
      }
    }
  });
}

template <typename T>
void RefBackpropInput(KernelContext& ctx, const ConvProblem& p, const T* f, const T* dy, T* dx) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const ChannelMap map(p);
  const int64_t cost = p.filter.h * p.filter.w * p.in.c * map.fanout * p.in.w;
  ctx.ParallelFor(p.in.n * p.in.h, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.in.c);
    for (int64_t row = begin; row < end; ++row) {
      if (ctx.cancelled()) return;  // the run discards dx
      const int64_t b = row / p.in.h, iy = row % p.in.h;
      for (int64_t ix = 0; ix < p.in.w; ++ix) {
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t ky = 0; ky < p.filter.h; ++ky) {
          const int64_t oy = OutputPos(p.rows, iy, ky);
          if (oy < 0) continue;
          for (int64_t kx = 0; kx < p.filter.w; ++kx) {
            const int64_t ox = OutputPos(p.cols, ix, kx);
            if (ox < 0) continue;
            const T* taps = f + (ky * p.filter.w + kx) * p.filter.in * map.fanout;
            const int64_t base = ys(b, oy, ox, 0);
            for (int64_t ic = 0; ic < p.in.c; ++ic) {
              const T* w = taps + ic * map.fanout;
              const int64_t first = map.first_out(ic);
              T sum = 0;
              for (int64_t o = 0; o < map.fanout; ++o) sum += dy[base + (first + o) * ys.c] * w[o];
              acc[ic] += sum;
            }
          }
        }
        for (int64_t ic = 0; ic < p.in.c; ++ic) dx[xs(b, iy, ix, ic)] = acc[ic];
      }
    }
  });
}

template <typename T>
void RefBackpropFilter(KernelContext& ctx, const ConvProblem& p, const T* x, const T* dy, T* df) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const ChannelMap map(p);
  const int64_t tap_size = p.filter.in * map.fanout;
  const int64_t cost = p.out.n * p.out.h * p.out.w * tap_size;
  // Each filter tap (ky, kx) owns its slice of df, so taps run in parallel without races.
  ctx.ParallelFor(p.filter.h * p.filter.w, cost, [&](int64_t begin, int64_t end) {
    for (int64_t tap = begin; tap < end; ++tap) {
      const int64_t ky = tap / p.filter.w, kx = tap % p.filter.w;
      T* slice = df + tap * tap_size;
      std::fill(slice, slice + tap_size, T(0));
      for (int64_t b = 0; b < p.out.n; ++b) {
        if (ctx.cancelled()) return;  // the run discards df
        for (int64_t oy = 0; oy < p.out.h; ++oy) {
          const int64_t iy = InputPos(p.rows, oy, ky);
          if (iy < 0) continue;
          for (int64_t ox = 0; ox < p.out.w; ++ox) {
            const int64_t ix = InputPos(p.cols, ox, kx);
            if (ix < 0) continue;
            const int64_t base = ys(b, oy, ox, 0);
            for (int64_t ic = 0; ic < p.in.c; ++ic) {
              const T v = x[xs(b, iy, ix, ic)];
              T* w = slice + ic * map.fanout;
              const int64_t first = map.first_out(ic);
              for (int64_t o = 0; o < map.fanout; ++o) w[o] += v * dy[base + (first + o) * ys.c];
            }
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// oneDNN implementation (float32).

using dnnl::memory;

memory::desc ImageDesc(const Image& image, DataFormat format, bool any_layout) {
  memory::format_tag tag = any_layout                    ? memory::format_tag::any
                           : format == DataFormat::kNHWC ? memory::format_tag::nhwc
                                                         : memory::format_tag::nchw;
  return memory::desc({image.n, image.c, image.h, image.w}, memory::data_type::f32, tag);
}

// oneDNN's weights are [out, in, rows, cols]; a depthwise filter is a grouped one with one group
// per input channel: [channels, multiplier, 1, rows, cols]. TensorFlow's filter layouts are hwio
// and hwigo.
memory::desc FilterDesc(const ConvProblem& p, bool any_layout) {
  const Filter& f = p.filter;
  if (p.depthwise) {
    return memory::desc({f.in, f.out, 1, f.h, f.w}, memory::data_type::f32,
                        any_layout ? memory::format_tag::any : memory::format_tag::hwigo);
  }
  return memory::desc({f.out, f.in, f.h, f.w}, memory::data_type::f32,
                      any_layout ? memory::format_tag::any : memory::format_tag::hwio);
}

struct ConvDims {
  memory::dims strides, dilates, pad_l, pad_r;
  explicit ConvDims(const ConvProblem& p)
      : strides{p.rows.stride, p.cols.stride},
        // oneDNN counts dilation from 0 (no gaps), TensorFlow from 1.
        dilates{p.rows.dilation - 1, p.cols.dilation - 1},
        pad_l{p.rows.pad_before, p.cols.pad_before},
        // oneDNN wants the padding that makes its floor formula give the output size; for VALID
        // windows that leave input rows unread that is 0, not TensorFlow's negative remainder.
        pad_r{std::max<int64_t>(p.rows.pad_after, 0), std::max<int64_t>(p.cols.pad_after, 0)} {}
};

// The forward descriptor; the activations keep the tensors' layout unless `any_layout`, and the
// weights take whatever layout oneDNN prefers (they are small, so reordering them is cheap).
dnnl::convolution_forward::primitive_desc ForwardPd(const ConvProblem& p, bool any_layout,
                                                    dnnl::prop_kind prop) {
  ConvDims d(p);
  return dnnl::convolution_forward::primitive_desc(
      onednn::Engine(), prop, dnnl::algorithm::convolution_direct,
      ImageDesc(p.in, p.format, any_layout), FilterDesc(p, true), memory::desc(),
      ImageDesc(p.out, p.format, any_layout), d.strides, d.dilates, d.pad_l, d.pad_r,
      onednn::DefaultAttr());
}

// A cached primitive, or nothing when oneDNN cannot run this problem (the kernel then uses the
// reference loops).
struct CachedConv {
  std::optional<onednn::Primitive> primitive;
};

enum class ConvPass { kForward, kBackpropInput, kBackpropFilter };

// The primitive for one pass, with the activations in the tensors' own layout or, when
// `any_layout`, in whatever layout oneDNN prefers. Throws dnnl::error when oneDNN has no
// implementation.
onednn::Primitive MakeConvPrimitive(const ConvProblem& p, ConvPass pass, bool any_layout) {
  const memory::desc src = ImageDesc(p.in, p.format, false);
  const memory::desc weights = FilterDesc(p, false);
  const memory::desc dst = ImageDesc(p.out, p.format, false);
  const ConvDims d(p);
  const memory::desc pd_src = ImageDesc(p.in, p.format, any_layout);
  const memory::desc pd_dst = ImageDesc(p.out, p.format, any_layout);
  switch (pass) {
    case ConvPass::kForward: {
      auto pd = ForwardPd(p, any_layout, dnnl::prop_kind::forward_inference);
      return onednn::Primitive(dnnl::convolution_forward(pd), pd,
                               {{DNNL_ARG_SRC, src, false},
                                {DNNL_ARG_WEIGHTS, weights, false},
                                {DNNL_ARG_DST, dst, true}});
    }
    case ConvPass::kBackpropInput: {
      dnnl::convolution_backward_data::primitive_desc pd(
          onednn::Engine(), dnnl::algorithm::convolution_direct, pd_src, FilterDesc(p, true),
          pd_dst, d.strides, d.dilates, d.pad_l, d.pad_r,
          ForwardPd(p, any_layout, dnnl::prop_kind::forward_training), onednn::DefaultAttr());
      return onednn::Primitive(dnnl::convolution_backward_data(pd), pd,
                               {{DNNL_ARG_WEIGHTS, weights, false},
                                {DNNL_ARG_DIFF_DST, dst, false},
                                {DNNL_ARG_DIFF_SRC, src, true}});
    }
    case ConvPass::kBackpropFilter:
      break;
  }
  dnnl::convolution_backward_weights::primitive_desc pd(
      onednn::Engine(), dnnl::algorithm::convolution_direct, pd_src, FilterDesc(p, true), pd_dst,
      d.strides, d.dilates, d.pad_l, d.pad_r,
      ForwardPd(p, any_layout, dnnl::prop_kind::forward_training), onednn::DefaultAttr());
  return onednn::Primitive(dnnl::convolution_backward_weights(pd), pd,
                           {{DNNL_ARG_SRC, src, false},
                            {DNNL_ARG_DIFF_DST, dst, false},
                            {DNNL_ARG_DIFF_WEIGHTS, weights, true}});
}

// oneDNN 3.2's 1x1 backward-weights kernels write past their scratchpad (and can compute wrong
// filters) when the input is NHWC and the convolution strided: oneDNN issue #6035. Such a
// primitive is never used; the blocked-layout one, or the reference loops, run instead.
bool HasKnownDefect(const ConvProblem& p, ConvPass pass, const onednn::Primitive& prim) {
  if (pass != ConvPass::kBackpropFilter) return false;
  if (p.rows.stride == 1 && p.cols.stride == 1) return false;
  if (prim.implementation().find("1x1") == std::string::npos) return false;
  // Argument 0 of a filter backprop is the input.
  return prim.internal_desc(0) == ImageDesc(p.in, DataFormat::kNHWC, false);
}

// Which candidate runs (PickDirectImplementation), with one exception. An input gradient of fewer
// than 16 channels (LeNet-5's second convolution: 6) gets oneDNN's forward-based implementation
// (`brg_fwd`) in the tensors' layouts, which fills its 16-wide vectors with those few channels:
// (8,14,14,6) from a 5x5x6x16 filter took 129 us, a third of the rate of the same convolution's
// forward pass, against 88 us for the direct kernel in blocked layouts (`jit:avx512_core`).
// LeNet-5's step: that pass 1.03 -> 0.70 ms, plus 0.06 ms of reorders. Chosen by the candidates'
// names, which depend on the shapes and the CPU alone, never on timings.
size_t PickConvImplementation(const ConvProblem& p, ConvPass pass,
                              const std::vector<onednn::Primitive>& candidates) {
  const size_t pick = onednn::PickDirectImplementation(candidates);
  if (pass != ConvPass::kBackpropInput || p.depthwise || p.in.c >= 16 || pick != 0 ||
      candidates.size() < 2 ||
      candidates[0].implementation().find("brg_fwd") == std::string::npos ||
      onednn::IsGeneric(candidates[1].implementation().c_str())) {
    return pick;
  }
  return 1;
}

// Builds the primitive for a new problem: with the tensors' own layouts, or with the blocked
// layouts oneDNN picks when it has only a generic implementation for the tensors' own ones
// (PickDirectImplementation; a choice made by shapes alone, so results are reproducible).
Status BuildConv(const ConvProblem& p, ConvPass pass, CachedConv* out) {
  onednn::OneOpenMpThread one_thread;  // primitives are built for the threads they run on
  std::vector<onednn::Primitive> candidates;
  for (bool any_layout : {false, true}) {
    // oneDNN declines some problems (it throws "could not create a primitive descriptor");
    // the reference loops handle every problem, so that is not an error.
    (void)onednn::Guard("create a convolution", [&] {
      onednn::Primitive prim = MakeConvPrimitive(p, pass, any_layout);
      if (HasKnownDefect(p, pass, prim)) return;
      if (candidates.empty() || !prim.SameLayoutsAs(candidates.front())) {
        candidates.push_back(std::move(prim));
      }
    });
  }
  if (candidates.empty()) return Status::OK();
  out->primitive.emplace(std::move(candidates[PickConvImplementation(p, pass, candidates)]));
  return Status::OK();
}

// Multiply-adds per oneDNN call when a batch is cut into chunks (~0.2 ms on one core), enough
// to make the per-call overhead small: at 2^21 (one image per call for the tutorial CNN's second
// and third convolutions) their forward and input-gradient passes took 3-5% more CPU time.
constexpr int64_t kChunkMacs = int64_t{1} << 23;

// A batch is cut into at least this many chunks when it has that many images and each chunk
// keeps at least kMinChunkMacs, so that a pass still splits evenly over a few threads (the
// filter gradient's floor below may override it).
constexpr int64_t kMinChunks = 8;
constexpr int64_t kMinChunkMacs = int64_t{1} << 19;

int64_t MacsPerImage(const ConvProblem& p) {
  return p.out.h * p.out.w * p.out.c * p.filter.h * p.filter.w * (p.depthwise ? 1 : p.in.c);
}

// The filter gradient's chunks each write a partial filter, summed afterwards: a chunk does at
// least this many multiply-adds per filter element, so that the sum (memory-bound, about one
// element per cycle against ~16 multiply-adds per cycle in oneDNN's kernels) and oneDNN's
// per-call setup of the filter stay a few percent of the work. On the tutorial CNN's third
// convolution, one image per chunk took 1.5x the CPU time of 10 images per chunk.
constexpr int64_t kMacsPerPartialElement = 512;

// How a pass splits the batch: by the shapes alone, never by the number of threads.
onednn::BatchChunks ChunksFor(const ConvProblem& p, ConvPass pass) {
  int64_t chunk_macs = std::clamp(MacsPerImage(p) * p.in.n / kMinChunks, kMinChunkMacs, kChunkMacs);
  if (pass == ConvPass::kBackpropFilter) {
    const int64_t filter_size = p.filter.h * p.filter.w * p.filter.in * p.filter.out;
    chunk_macs = std::max(chunk_macs, kMacsPerPartialElement * filter_size);
  }
  return onednn::BatchChunks(p.in.n, MacsPerImage(p), chunk_macs);
}

ConvProblem WithBatch(ConvProblem p, int64_t batch) {
  p.in.n = p.out.n = batch;
  return p;
}

// The Winograd form of a float32 pass (winograd_conv.h) when it applies and pays off: NHWC, 3x3
// filter, stride 1, dilation 1, and the measured shape rule. The forward and filter-gradient
// passes share the forward geometry; the input gradient at stride 1 is the forward convolution
// of the output gradient with the flipped filter, its padding the window's complement
// (2 - pad_before).
bool WinogradFor(const ConvProblem& p, ConvPass pass, winograd::Conv3x3* w) {
  if (p.depthwise || p.format != DataFormat::kNHWC || p.filter.h != 3 || p.filter.w != 3 ||
      p.in.c != p.filter.in || p.rows.stride != 1 || p.cols.stride != 1 || p.rows.dilation != 1 ||
      p.cols.dilation != 1 || !onednn::Enabled()) {
    return false;
  }
  const bool forward = pass != ConvPass::kBackpropInput;
  const Image& from = forward ? p.in : p.out;
  const Image& to = forward ? p.out : p.in;
  w->batch = p.in.n;
  w->in_h = from.h;
  w->in_w = from.w;
  w->in_c = from.c;
  w->out_h = to.h;
  w->out_w = to.w;
  w->out_c = to.c;
  w->pad_top = forward ? p.rows.pad_before : 2 - p.rows.pad_before;
  w->pad_left = forward ? p.cols.pad_before : 2 - p.cols.pad_before;
  return winograd::Use(*w);
}

// A batch too small to give every core a chunk of its own (at batch 1, one image is one chunk
// and ran on one core) has the forward pass of each image cut into bands of output rows, each a
// oneDNN call of its own. The bands, like the chunks, depend on the shapes alone, so results do
// not change with the number of threads. kBandedBatch bounds the calls a batch is cut into
// (enough for 16 cores); a band does at least kBandMacs multiply-adds (~20 us on one core) over
// at least kMinBandPixels output pixels, so oneDNN's per-call setup and the rows read twice at
// the bands' edges stay small, and its kernels still see a useful number of pixels. Two rows of a
// 7x7 image (MobileNetV2's and ResNet50's last stages): at 32 pixels such an image was cut into
// bands of 5 and 2 rows, and ResNet50's 7x7 convolutions ran 1.2-1.35x faster on two cores than
// on one; in bands of 2 rows, two threads share them 4:3 (ResNet50 at batch 1: 42.8 -> 40.7 ms,
// MobileNetV2 unchanged, medians of 6 alternating processes).
constexpr int64_t kBandedBatch = 16;
constexpr int64_t kBandMacs = int64_t{1} << 20;
constexpr int64_t kMinBandPixels = 14;

// Output rows per band of one image, or out.h when the image is not cut. Only channels-last
// images are cut: a band of rows is then one contiguous block of the image.
int64_t RowsPerBand(const ConvProblem& p, ConvPass pass) {
  if (pass != ConvPass::kForward || p.format != DataFormat::kNHWC) return p.out.h;
  if (p.in.n >= kBandedBatch || ChunksFor(p, pass).size != 1) return p.out.h;
  const int64_t wanted =
      std::min({(kBandedBatch + p.in.n - 1) / p.in.n, MacsPerImage(p) / kBandMacs, p.out.h});
  if (wanted < 2) return p.out.h;
  const int64_t rows = std::max((p.out.h + wanted - 1) / wanted,
                                (kMinBandPixels + p.out.w - 1) / std::max<int64_t>(p.out.w, 1));
  return std::min(rows, p.out.h);
}

// The convolution of one image's output rows [row, row + rows): a problem of its own, over the
// input rows those read (from *in_row on), with the padding that falls inside the band.
ConvProblem BandProblem(const ConvProblem& p, int64_t row, int64_t rows, int64_t* in_row) {
  const Window& w = p.rows;
  const int64_t first = row * w.stride - w.pad_before;
  const int64_t end = (row + rows - 1) * w.stride - w.pad_before + w.effective_kernel();
  ConvProblem band = WithBatch(p, 1);
  *in_row = std::max<int64_t>(first, 0);
  band.in.h = std::min(end, w.in) - *in_row;
  band.out.h = rows;
  band.rows.in = band.in.h;
  band.rows.out = rows;
  band.rows.pad_before = *in_row - first;
  band.rows.pad_after = std::max<int64_t>(end - w.in, 0);
  return band;
}

// One oneDNN call of a pass: output rows [row, row + rows) of images [image, image + images),
// reading input rows from in_row on (all rows, from 0, unless an image is cut into bands).
struct ConvCall {
  int64_t image = 0, images = 0, row = 0, rows = 0, in_row = 0;
  std::shared_ptr<const CachedConv> conv;
  int64_t macs = 0;
};

// Which argument of a pass (in the order the kernels pass them) is the filter.
int FilterArg(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return 1;  // x, filter, y
    case ConvPass::kBackpropInput:
      return 0;  // filter, dy, dx
    case ConvPass::kBackpropFilter:
      break;
  }
  return 2;  // x, dy, df
}

// dst[k] = the sum over rows r of partial[r * size + k], added row by row in order for every k,
// so the result does not depend on how the elements are split over threads. dst may be row 0.
void SumPartials(KernelContext& ctx, const float* partial, int64_t rows, int64_t size, float* dst) {
  ctx.ParallelFor(size, rows, [&](int64_t begin, int64_t end) {
    if (dst != partial) std::copy(partial + begin, partial + end, dst + begin);
    for (int64_t r = 1; r < rows; ++r) {
      const float* row = partial + r * size;
      for (int64_t k = begin; k < end; ++k) dst[k] += row[k];
    }
  });
}

// Applied to a forward pass's output rows [row, row + rows) of images [image, image + images)
// once they are computed (all rows except when an image is cut into bands).
struct OutputPart {
  int64_t image, images, row, rows;
};
using ChunkEpilogue = std::function<void(const OutputPart& part)>;

// A oneDNN argument and the distance in bytes between its images (0 for the filter, which every
// chunk of the batch shares).
struct BatchArg {
  void* data;
  int64_t image_bytes;
};

// ---------------------------------------------------------------------------------------------
// Kernels.

BatchArg Images(const Tensor& t) {
  return BatchArg{t.raw_data(), t.dim(0) > 0 ? static_cast<int64_t>(t.bytes()) / t.dim(0) : 0};
}
BatchArg Shared(const Tensor& t) { return BatchArg{t.raw_data(), 0}; }

std::string Describe(const char* name, const Tensor& t) {
  return StrCat(name, " shape ", t.shape().ToString());
}

// Appends the shapes of the tensors involved to a run-time error.
Status WithShapes(Status s, const std::string& shapes) {
  if (!s.ok()) s.Append(StrCat(" (", shapes, ")"));
  return s;
}

Status CheckRank4(const std::string& op, const char* name, const Tensor& t) {
  if (t.rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional, but got shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

// Reads a shape argument (input_sizes, filter_sizes) of `allowed` lengths.
Status ReadSizes(const std::string& op, const char* name, const Tensor& t, bool allow_spatial,
                 std::vector<int64_t>* out) {
  const bool ok_len =
      t.rank() == 1 && (t.num_elements() == 4 || (allow_spatial && t.num_elements() == 2));
  if (!ok_len) {
    return errors::InvalidArgument(op, ": ", name, " must be a vector of 4",
                                   allow_spatial ? " or 2" : "", " sizes, but has shape ",
                                   t.shape().ToString());
  }
  out->clear();
  for (int64_t i = 0; i < t.num_elements(); ++i) out->push_back(t.ElementAsInt64(i));
  if (!ValidateDims(*out).ok()) {
    std::string values;
    for (int64_t v : *out) values += StrCat(values.empty() ? "" : ",", v);
    return errors::InvalidArgument(op, ": ", name, " must hold non-negative sizes, but is [",
                                   values, "]");
  }
  return Status::OK();
}

void FillZero(Tensor* t) { std::memset(t->raw_data(), 0, t->bytes()); }

class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const Node& node)
      : OpKernel(node),
        depthwise_(node.type().find("Depthwise") != std::string::npos),
        // The graph optimizer marks a fused convolution whose filter the plan holds as a
        // constant (a Const, or a filter with a batch norm folded in); a plain one reads a Const.
        constant_filter_(node.attrs().GetOr<bool>("_constant_filter", false) ||
                         (node.num_inputs() > 1 && node.input(1).node != nullptr &&
                          node.input(1).node->type() == "Const")) {}
  Status Init() override { return conv::ParseConvAttrs(node().attrs(), &attrs_); }

 protected:
  // Grouped convolutions (input depth a multiple of the filter's) pass shape inference, as in
  // TensorFlow, but have no CPU kernel there either.
  Status CheckNotGrouped(const ConvProblem& p) const {
    if (!p.depthwise && p.in.c != p.filter.in) {
      return errors::Unimplemented(
          node().type(), " does not support grouped convolutions on the CPU: the input depth (",
          p.in.c, ") differs from the filter's input depth (", p.filter.in, ")");
    }
    return Status::OK();
  }

  // Runs one pass: through oneDNN for float32, else through `reference`. A forward pass may
  // have an `epilogue` (a fused bias and activation), called on each chunk's output images right
  // after the chunk is computed, while they are in cache, and a `constant_filter` (the filter
  // tensor, when it is a constant of the plan), whose reorder into oneDNN's layout is kept.
  template <typename Reference>
  Status Run(KernelContext& ctx, const ConvProblem& p, ConvPass pass,
             const std::vector<BatchArg>& args, const Reference& reference,
             const ChunkEpilogue* epilogue = nullptr, const Tensor* constant_filter = nullptr) {
    DType dtype = ctx.output_type(0);
    if (dtype == DType::kFloat32 && onednn::Enabled()) {
      bool ran = false;
      FS_RETURN_IF_ERROR(RunOneDnn(ctx, p, pass, args, epilogue, constant_filter, &ran));
      if (ran) return Status::OK();
    }
    return DispatchDType<float, double>(dtype, node().type().c_str(), [&]<typename T>() -> Status {
      reference(T());
      if (epilogue != nullptr) (*epilogue)(OutputPart{0, p.in.n, 0, p.out.h});
      // The reference loops stop between rows once the run is cancelled.
      return ctx.CheckCancelled();
    });
  }

  // The forward convolution of inputs 0 (images) and 1 (filter) into output 0, followed by
  // `tail` when not null (its args are inputs 2...).
  Status Forward(KernelContext& ctx, const FusedEpilogue* tail) {
    const std::string& op = node().type();
    const Tensor& x = ctx.input(0);
    const Tensor& f = ctx.input(1);
    FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
    FS_RETURN_IF_ERROR(CheckRank4(op, "filter", f));
    ConvProblem p;
    FS_RETURN_IF_ERROR(
        WithShapes(MakeProblem(attrs_, depthwise_, conv::ImageOf(x.shape().dims(), attrs_.format),
                               Filter::Of(f.shape().dims()), &p),
                   Describe("input", x) + ", " + Describe("filter", f)));
    FS_RETURN_IF_ERROR(CheckNotGrouped(p));
    // The tail's per-channel coefficients, for the output's dtype.
    std::vector<float> gain32, shift32;
    std::vector<double> gain64, shift64;
    const bool f32 = ctx.output_type(0) == DType::kFloat32;
    if (tail != nullptr) {
      FS_RETURN_IF_ERROR(f32 ? tail->Coefficients(op, ctx, 2, p.out.c, &gain32, &shift32)
                             : tail->Coefficients(op, ctx, 2, p.out.c, &gain64, &shift64));
    }
    Tensor* y;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(p.out, p.format)), &y));
    if (y->num_elements() == 0) return Status::OK();
    // A part of y through the tail; channels-first parts are whole images (see RowsPerBand).
    const bool nchw = p.format == DataFormat::kNCHW;
    const int64_t pixels = p.out.h * p.out.w;
    const ChunkEpilogue apply_tail = [&](const OutputPart& part) {
      const int64_t outer = nchw ? part.images : part.images * part.rows * p.out.w;
      const int64_t inner = nchw ? pixels : 1;
      const int64_t offset = (part.image * p.out.h + part.row) * p.out.w * p.out.c;
      if (f32) {
        tail->Apply(y->data<float>() + offset, outer, p.out.c, inner, gain32, shift32);
      } else {
        tail->Apply(y->data<double>() + offset, outer, p.out.c, inner, gain64, shift64);
      }
    };
    const ChunkEpilogue* epilogue = tail != nullptr ? &apply_tail : nullptr;
    if (x.num_elements() == 0 || f.num_elements() == 0) {
      FillZero(y);
      if (epilogue != nullptr) (*epilogue)(OutputPart{0, p.in.n, 0, p.out.h});
      return Status::OK();
    }
    winograd::Conv3x3 w;
    if (f32 && WinogradFor(p, ConvPass::kForward, &w)) {
      return RunWinograd(ctx, w, x.data<float>(), f, false, y->data<float>(), epilogue);
    }
    return Run(
        ctx, p, ConvPass::kForward, {Images(x), Shared(f), Images(*y)},
        [&]<typename T>(T) { RefForward<T>(ctx, p, x.data<T>(), f.data<T>(), y->data<T>()); },
        epilogue, constant_filter_ ? &f : nullptr);
  }

  // A pass through winograd::Forward: `in` convolved with `f` (flipped for the input
  // gradient) into `out`, with the epilogue on each block's rows. A constant filter's transform
  // is kept, as ConvertedConstant keeps oneDNN's reorder.
  Status RunWinograd(KernelContext& ctx, const winograd::Conv3x3& w, const float* in,
                     const Tensor& f, bool flip, float* out, const ChunkEpilogue* epilogue) {
    Tensor u;
    if (constant_filter_) {
      FS_RETURN_IF_ERROR(WinogradConstant(ctx, w, f, flip, &u));
    } else {
      FS_RETURN_IF_ERROR(ctx.AllocateTemp(
          DType::kFloat32, TensorShape{winograd::TransformedFilterSize(w.in_c, w.out_c)}, &u));
      FS_RETURN_IF_ERROR(winograd::TransformFilter(ctx, f.data<float>(), f.dim(2), f.dim(3), flip,
                                                   u.data<float>()));
    }
    const winograd::RowsDone rows_done = [&](int64_t image, int64_t row, int64_t rows) {
      (*epilogue)(OutputPart{image, 1, row, rows});
    };
    return winograd::Forward(ctx, w, in, u.data<float>(), out,
                             epilogue != nullptr ? &rows_done : nullptr);
  }

  WindowAttrs attrs_;
  const bool depthwise_;
  const bool constant_filter_;

 private:
  // The oneDNN calls of a pass: one per chunk of the batch, or per band of an image's rows
  // (RowsPerBand). Leaves *calls empty when oneDNN has no implementation for one of them.
  Status PlanCalls(const ConvProblem& p, ConvPass pass, std::vector<ConvCall>* calls) {
    calls->clear();
    const int64_t batch = p.in.n;
    const int64_t band_rows = RowsPerBand(p, pass);
    if (band_rows < p.out.h) {
      FS_RETURN_IF_ERROR(PlanBands(p, pass, band_rows, calls));
      if (!calls->empty()) return Status::OK();
    }
    const onednn::BatchChunks chunks = ChunksFor(p, pass);
    // All chunks but the last have the same size, so at most two primitives are needed.
    const int64_t last = chunks.count - 1;
    std::shared_ptr<const CachedConv> full, tail;
    FS_RETURN_IF_ERROR(CachedPrimitive(WithBatch(p, chunks.size), pass, &full));
    tail = full;
    if (chunks.images(last, batch) != chunks.size) {
      FS_RETURN_IF_ERROR(CachedPrimitive(WithBatch(p, chunks.images(last, batch)), pass, &tail));
    }
    if (!full->primitive || !tail->primitive) return Status::OK();
    for (int64_t chunk = 0; chunk < chunks.count; ++chunk) {
      ConvCall call;
      call.image = chunk * chunks.size;
      call.images = chunks.images(chunk, batch);
      call.rows = p.out.h;
      call.conv = chunk == last ? tail : full;
      call.macs = call.images * MacsPerImage(p);
      calls->push_back(std::move(call));
    }
    return Status::OK();
  }

  // The calls of a pass whose images are cut into bands of `band_rows` output rows, image by
  // image. Leaves *calls empty when a band would read no input row (explicit padding larger than
  // the window) or oneDNN has no implementation for one; the pass then runs by chunks.
  Status PlanBands(const ConvProblem& p, ConvPass pass, int64_t band_rows,
                   std::vector<ConvCall>* calls) {
    std::vector<ConvCall> bands;
    std::vector<int64_t> key;
    std::shared_ptr<const CachedConv> conv;
    for (int64_t row = 0; row < p.out.h; row += band_rows) {
      ConvCall call;
      call.row = row;
      call.rows = std::min(band_rows, p.out.h - row);
      call.images = 1;
      const ConvProblem band = BandProblem(p, call.row, call.rows, &call.in_row);
      if (band.in.h < 1) return Status::OK();
      // Middle bands share one problem; only the edges' differ.
      if (!conv || ProblemKey(band) != key) {
        key = ProblemKey(band);
        FS_RETURN_IF_ERROR(CachedPrimitive(band, pass, &conv));
        if (!conv->primitive) return Status::OK();
      }
      call.conv = conv;
      call.macs = MacsPerImage(band);
      bands.push_back(std::move(call));
    }
    for (int64_t image = 0; image < p.in.n; ++image) {
      for (ConvCall call : bands) {
        call.image = image;
        calls->push_back(std::move(call));
      }
    }
    return Status::OK();
  }

  // Runs the pass as oneDNN calls over chunks of the batch or bands of rows; *ran stays false
  // when oneDNN has no implementation for the problem.
  Status RunOneDnn(KernelContext& ctx, const ConvProblem& p, ConvPass pass,
                   const std::vector<BatchArg>& args, const ChunkEpilogue* epilogue,
                   const Tensor* constant_filter, bool* ran) {
    std::vector<ConvCall> calls;
    FS_RETURN_IF_ERROR(PlanCalls(p, pass, &calls));
    if (calls.empty()) return Status::OK();
    const onednn::Primitive& prim = *calls.front().conv->primitive;

    // Every call reads (or, for the filter gradient, writes) the same filter. When oneDNN wants
    // it in the same blocked layout in every call, it is reordered once for the whole batch
    // rather than once per call; reorders only move values, so the results are the same either
    // way.
    const int fi = FilterArg(pass);
    const int64_t filter_size = p.filter.h * p.filter.w * p.filter.in * p.filter.out;
    bool blocked_filter = prim.needs_convert(fi);
    for (const ConvCall& call : calls) {
      blocked_filter = blocked_filter && call.conv->primitive->needs_convert(fi) &&
                       call.conv->primitive->internal_desc(fi) == prim.internal_desc(fi);
    }
    const int64_t filter_elems =
        blocked_filter ? static_cast<int64_t>(prim.internal_desc(fi).get_size() / sizeof(float))
                       : filter_size;
    std::vector<bool> internal(args.size(), false);
    internal[fi] = blocked_filter;
    void* filter = args[fi].data;
    Tensor filter_buffer;
    const int64_t num_calls = static_cast<int64_t>(calls.size());
    if (pass == ConvPass::kBackpropFilter) {
      // The filter gradient sums over the batch: each chunk writes its own partial sum.
      if (num_calls > 1 || blocked_filter) {
        FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat32, TensorShape{num_calls, filter_elems},
                                            &filter_buffer));
        filter = filter_buffer.raw_data();
      }
    } else if (blocked_filter && constant_filter != nullptr) {
      FS_RETURN_IF_ERROR(ConvertedConstant(ctx, prim, fi, *constant_filter, &filter_buffer));
      filter = filter_buffer.raw_data();
    } else if (blocked_filter) {
      FS_RETURN_IF_ERROR(
          ctx.AllocateTemp(DType::kFloat32, TensorShape{filter_elems}, &filter_buffer));
      FS_RETURN_IF_ERROR(prim.Convert(fi, args[fi].data, filter_buffer.raw_data()));
      filter = filter_buffer.raw_data();
    }
    const int64_t filter_stride = pass == ConvPass::kBackpropFilter ? filter_elems : 0;
    // Bytes per image row of the input and the output: bands exist only for the forward pass,
    // whose arguments are (x, filter, y).
    const int64_t row_bytes[3] = {p.in.w * p.in.c * 4, 0, p.out.w * p.out.c * 4};
    auto call_args = [&](int64_t i) {
      const ConvCall& call = calls[i];
      std::vector<void*> data;
      for (const BatchArg& arg : args) {
        data.push_back(static_cast<char*>(arg.data) + call.image * arg.image_bytes);
      }
      if (call.rows < p.out.h) {
        data[0] = static_cast<char*>(data[0]) + call.in_row * row_bytes[0];
        data[2] = static_cast<char*>(data[2]) + call.row * row_bytes[2];
      }
      data[fi] = static_cast<float*>(filter) + i * filter_stride;
      return data;
    };
    std::mutex mu;
    Status status;
    // Rough cycles per call: a single core retires about 8 float multiply-adds per cycle here.
    ctx.ParallelFor(num_calls, calls.front().macs / 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (ctx.cancelled()) return;  // the run discards the outputs
        const ConvCall& call = calls[i];
        Status s = call.conv->primitive->Execute(ctx, call_args(i), internal);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (status.ok()) status = s;
        } else if (epilogue != nullptr) {
          (*epilogue)(OutputPart{call.image, call.images, call.row, call.rows});
        }
      }
    });
    FS_RETURN_IF_ERROR(status);
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
    if (filter_buffer.initialized() && pass == ConvPass::kBackpropFilter) {
      float* sums = filter_buffer.data<float>();
      float* df = static_cast<float*>(args[fi].data);
      // The sum of a blocked filter lands in the first partial, then is reordered into df.
      float* dst = blocked_filter ? sums : df;
      SumPartials(ctx, sums, num_calls, filter_elems, dst);
      if (blocked_filter) FS_RETURN_IF_ERROR(prim.Convert(fi, sums, df));
    }
    *ran = true;
    return Status::OK();
  }

  // A constant filter in the layout that argument `fi` of `prim` wants, reordered on first use and
  // kept. The entry holds a reference to the source's buffer, so the buffer cannot be freed and
  // its address reused while cached, and a constant's buffer is never written: the same address
  // means the same values. (At batch 1, reordering ResNet50's filters on every run took 15% of
  // its time.)
  Status ConvertedConstant(KernelContext& ctx, const onednn::Primitive& prim, int fi,
                           const Tensor& source, Tensor* out) {
    std::lock_guard<std::mutex> lock(converted_mu_);
    const dnnl::memory::desc& layout = prim.internal_desc(fi);
    if (converted_ && converted_->source.raw_data() == source.raw_data() &&
        converted_->layout == layout) {
      *out = converted_->value;
      return Status::OK();
    }
    auto entry = std::make_shared<ConvertedFilter>();
    entry->source = source;
    entry->layout = layout;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(
        DType::kFloat32, TensorShape{static_cast<int64_t>(layout.get_size() / sizeof(float))},
        &entry->value));
    FS_RETURN_IF_ERROR(prim.Convert(fi, source.raw_data(), entry->value.raw_data()));
    converted_ = std::move(entry);
    *out = converted_->value;
    return Status::OK();
  }

  // A constant filter's Winograd transform, computed on first use and kept like
  // ConvertedConstant's reorder (the entry holds the source's buffer).
  Status WinogradConstant(KernelContext& ctx, const winograd::Conv3x3& w, const Tensor& source,
                          bool flip, Tensor* out) {
    std::lock_guard<std::mutex> lock(converted_mu_);
    if (winograd_ && winograd_->source.raw_data() == source.raw_data()) {
      *out = winograd_->value;
      return Status::OK();
    }
    auto entry = std::make_shared<ConvertedFilter>();
    entry->source = source;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(
        DType::kFloat32, TensorShape{winograd::TransformedFilterSize(w.in_c, w.out_c)},
        &entry->value));
    FS_RETURN_IF_ERROR(winograd::TransformFilter(ctx, source.data<float>(), source.dim(2),
                                                 source.dim(3), flip, entry->value.data<float>()));
    winograd_ = std::move(entry);
    *out = winograd_->value;
    return Status::OK();
  }

  // The cached primitive for a (chunk) problem, built on first use.
  Status CachedPrimitive(const ConvProblem& p, ConvPass pass,
                         std::shared_ptr<const CachedConv>* out) {
    return cache_.Get(ProblemKey(p), [&](CachedConv* c) { return BuildConv(p, pass, c); }, out);
  }

  onednn::ShapeCache<CachedConv> cache_;

  struct ConvertedFilter {
    Tensor source;  // held: see ConvertedConstant
    dnnl::memory::desc layout;
    Tensor value;
  };
  std::mutex converted_mu_;
  std::shared_ptr<const ConvertedFilter> converted_;
  std::shared_ptr<const ConvertedFilter> winograd_;
};

class ConvForwardKernel final : public ConvKernel {
 public:
  using ConvKernel::ConvKernel;
  Status Compute(KernelContext& ctx) override { return Forward(ctx, nullptr); }
};

// _FusedConv2D and _FusedDepthwiseConv2dNative: the convolution, then a bias and an activation
// applied to each chunk of images as it is computed (fused_epilogue.h).
class FusedConvKernel final : public ConvKernel {
 public:
  using ConvKernel::ConvKernel;
  Status Init() override {
    FS_RETURN_IF_ERROR(ConvKernel::Init());
    if (node().attrs().GetOr<int64_t>("num_host_args", 0) != 0) {
      return errors::Unimplemented(node().type(), " with host_args is not supported on the CPU");
    }
    return FusedEpilogue::Parse(node().type(), node().attrs(), node().num_inputs() - 2, &tail_);
  }
  Status Compute(KernelContext& ctx) override { return Forward(ctx, &tail_); }

 private:
  FusedEpilogue tail_;
};

class ConvBackpropInputKernel final : public ConvKernel {
 public:
  using ConvKernel::ConvKernel;
  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& f = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    std::vector<int64_t> sizes;
    FS_RETURN_IF_ERROR(ReadSizes(op, "input_sizes", ctx.input(0), true, &sizes));
    FS_RETURN_IF_ERROR(CheckRank4(op, "filter", f));
    FS_RETURN_IF_ERROR(CheckRank4(op, "out_backprop", dy));
    const Filter filter = Filter::Of(f.shape().dims());
    const Image out = conv::ImageOf(dy.shape().dims(), attrs_.format);
    Image in;
    if (sizes.size() == 4) {
      in = conv::ImageOf(Dims(sizes), attrs_.format);
    } else {
      in = Image{out.n, sizes[0], sizes[1], filter.in};
    }
    const std::string shapes = StrCat("input_sizes ", TensorShape(sizes).ToString(), ", ",
                                      Describe("filter", f), ", ", Describe("out_backprop", dy));
    ConvProblem p;
    FS_RETURN_IF_ERROR(WithShapes(CheckBackprop(op, attrs_, depthwise_, in, filter, out), shapes));
    FS_RETURN_IF_ERROR(WithShapes(MakeProblem(attrs_, depthwise_, in, filter, &p), shapes));
    FS_RETURN_IF_ERROR(CheckNotGrouped(p));
    Tensor* dx;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(p.in, p.format)), &dx));
    if (dx->num_elements() == 0) return Status::OK();
    if (dy.num_elements() == 0 || f.num_elements() == 0) {
      FillZero(dx);
      return Status::OK();
    }
    winograd::Conv3x3 w;
    if (ctx.output_type(0) == DType::kFloat32 && WinogradFor(p, ConvPass::kBackpropInput, &w)) {
      return RunWinograd(ctx, w, dy.data<float>(), f, true, dx->data<float>(), nullptr);
    }
    return Run(ctx, p, ConvPass::kBackpropInput, {Shared(f), Images(dy), Images(*dx)},
               [&]<typename T>(T) {
                 RefBackpropInput<T>(ctx, p, f.data<T>(), dy.data<T>(), dx->data<T>());
               });
  }
};

class ConvBackpropFilterKernel final : public ConvKernel {
 public:
  using ConvKernel::ConvKernel;
  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& x = ctx.input(0);
    const Tensor& dy = ctx.input(2);
    std::vector<int64_t> sizes;
    FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
    FS_RETURN_IF_ERROR(ReadSizes(op, "filter_sizes", ctx.input(1), false, &sizes));
    FS_RETURN_IF_ERROR(CheckRank4(op, "out_backprop", dy));
    const Filter filter = Filter::Of(Dims(sizes));
    const Image in = conv::ImageOf(x.shape().dims(), attrs_.format);
    const Image out = conv::ImageOf(dy.shape().dims(), attrs_.format);
    const std::string shapes =
        StrCat(Describe("input", x), ", filter_sizes ", TensorShape(sizes).ToString(), ", ",
               Describe("out_backprop", dy));
    ConvProblem p;
    FS_RETURN_IF_ERROR(WithShapes(CheckBackprop(op, attrs_, depthwise_, in, filter, out), shapes));
    FS_RETURN_IF_ERROR(WithShapes(MakeProblem(attrs_, depthwise_, in, filter, &p), shapes));
    FS_RETURN_IF_ERROR(CheckNotGrouped(p));
    Tensor* df;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(Dims(sizes)), &df));
    if (df->num_elements() == 0) return Status::OK();
    if (x.num_elements() == 0 || dy.num_elements() == 0) {
      FillZero(df);
      return Status::OK();
    }
    winograd::Conv3x3 w;
    if (ctx.output_type(0) == DType::kFloat32 && WinogradFor(p, ConvPass::kBackpropFilter, &w)) {
      return winograd::BackpropFilter(ctx, w, x.data<float>(), dy.data<float>(), df->data<float>());
    }
    return Run(ctx, p, ConvPass::kBackpropFilter, {Images(x), Images(dy), Shared(*df)},
               [&]<typename T>(T) {
                 RefBackpropFilter<T>(ctx, p, x.data<T>(), dy.data<T>(), df->data<T>());
               });
  }
};

// ---------------------------------------------------------------------------------------------
// Shape functions.

Status ConvForwardShape(InferenceContext& ctx, bool depthwise) {
  PartialShape input, filter;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &filter));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  Image out;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, depthwise, conv::ImageOf(input.dims(), attrs.format),
                                Filter::Of(filter.dims()), &out));
  ctx.set_output(0, PartialShape(conv::DimsOf(out, attrs.format)));
  return Status::OK();
}

// Reads a shape argument while building: its known entries, or unknown ones of the right count.
Status SizesShape(InferenceContext& ctx, int i, const char* name, bool allow_spatial,
                  PartialShape* out) {
  PartialShape vec;
  FS_RETURN_IF_ERROR(ctx.WithRank(i, 1, &vec));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(i, out));
  if (!out->known_rank()) {
    *out = PartialShape::UnknownOfRank(4);
  } else if (out->rank() != 4 && !(allow_spatial && out->rank() == 2)) {
    return errors::InvalidArgument(ctx.op_type(), ": ", name, " must be a vector of 4",
                                   allow_spatial ? " or 2" : "", " sizes, but has ", out->rank(),
                                   " entries");
  }
  return Status::OK();
}

Status ConvBackpropInputShape(InferenceContext& ctx, bool depthwise) {
  PartialShape sizes, filter_shape, dy_shape;
  FS_RETURN_IF_ERROR(SizesShape(ctx, 0, "input_sizes", true, &sizes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &filter_shape));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 4, &dy_shape));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  const Filter filter = Filter::Of(filter_shape.dims());
  const Image dy = conv::ImageOf(dy_shape.dims(), attrs.format);
  Image in = sizes.rank() == 4 ? conv::ImageOf(sizes.dims(), attrs.format)
                               : Image{dy.n, sizes.dim(0), sizes.dim(1), filter.in};
  FS_RETURN_IF_ERROR(CheckBackprop(ctx.op_type(), attrs, depthwise, in, filter, dy));
  if (!Known(in.n)) in.n = dy.n;
  ctx.set_output(0, PartialShape(conv::DimsOf(in, attrs.format)));
  return Status::OK();
}

Status ConvBackpropFilterShape(InferenceContext& ctx, bool depthwise) {
  PartialShape input_shape, sizes, dy_shape;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input_shape));
  FS_RETURN_IF_ERROR(SizesShape(ctx, 1, "filter_sizes", false, &sizes));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 4, &dy_shape));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParseConvAttrs(ctx.attrs(), &attrs));
  FS_RETURN_IF_ERROR(CheckBackprop(
      ctx.op_type(), attrs, depthwise, conv::ImageOf(input_shape.dims(), attrs.format),
      Filter::Of(sizes.dims()), conv::ImageOf(dy_shape.dims(), attrs.format)));
  ctx.set_output(0, sizes);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradients. Every pass is linear in each of its two tensor inputs, so each one's gradients are
// the other two passes with the same window attrs.

// The int32 shape of x: a constant when it is known while building, else a Shape op.
Endpoint ShapeOf(GradientContext& ctx, Endpoint x) {
  const PartialShape& shape = x.node->output_shape(x.index);
  if (!shape.IsFullyDefined()) return ctx.Shape(x);
  std::vector<int32_t> dims;
  for (int64_t d : shape.dims()) dims.push_back(static_cast<int32_t>(d));
  return ctx.Const(Tensor::FromVector<int32_t>(dims, TensorShape{shape.rank()}));
}

struct ConvOpNames {
  std::string forward, backprop_input, backprop_filter;
};

ConvOpNames NamesFor(const GradientContext& ctx) {
  if (ctx.node().type().rfind("Depthwise", 0) == 0) {
    return {"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
            "DepthwiseConv2dNativeBackpropFilter"};
  }
  return {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
}

// y = conv(x, f): dx = backprop_input(shape(x), f, dy), df = backprop_filter(x, shape(f), dy).
Status ConvForwardGrad(GradientContext& ctx) {
  const ConvOpNames names = NamesFor(ctx);
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint x = ctx.input(0), f = ctx.input(1), dy = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op(names.backprop_input, {ShapeOf(ctx, x), f, dy}, attrs));
  ctx.SetInputGrad(1, ctx.Op(names.backprop_filter, {x, ShapeOf(ctx, f), dy}, attrs));
  return ctx.status();
}

// dx = backprop_input(sizes, f, dy): the gradient g of dx gives
// df = backprop_filter(g, shape(f), dy) and d(dy) = conv(g, f).
Status ConvBackpropInputGrad(GradientContext& ctx) {
  const ConvOpNames names = NamesFor(ctx);
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint f = ctx.input(1), dy = ctx.input(2), g = ctx.output_grad(0);
  ctx.SetInputGrad(1, ctx.Op(names.backprop_filter, {g, ShapeOf(ctx, f), dy}, attrs));
  ctx.SetInputGrad(2, ctx.Op(names.forward, {g, f}, attrs));
  return ctx.status();
}

// df = backprop_filter(x, sizes, dy): the gradient g of df gives
// dx = backprop_input(shape(x), g, dy) and d(dy) = conv(x, g).
Status ConvBackpropFilterGrad(GradientContext& ctx) {
  const ConvOpNames names = NamesFor(ctx);
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint x = ctx.input(0), dy = ctx.input(2), g = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op(names.backprop_input, {ShapeOf(ctx, x), g, dy}, attrs));
  ctx.SetInputGrad(2, ctx.Op(names.forward, {x, g}, attrs));
  return ctx.status();
}

// ---------------------------------------------------------------------------------------------
// Registration.

OpBuilder& WindowAttrDefs(OpBuilder& b, bool conv2d) {
  b.TypeAttr("T", kFloatTypes)
      .RequiredAttr("strides", AttrType::kIntList)
      .RequiredAttr("padding", AttrType::kString)
      .Attr("explicit_paddings", AttrValue(std::vector<int64_t>{}))
      .Attr("data_format", "NHWC")
      .Attr("dilations", AttrValue(std::vector<int64_t>{1, 1, 1, 1}));
  if (conv2d) b.Attr("use_cudnn_on_gpu", AttrValue(true));
  return b;
}

void RegisterConvFamily(const std::string& prefix, bool conv2d) {
  const bool depthwise = !conv2d;
  OpBuilder forward(prefix);
  forward.Input("input", "T").Input("filter", "T").Output("output", "T");
  WindowAttrDefs(forward, conv2d)
      .Shape([depthwise](InferenceContext& c) { return ConvForwardShape(c, depthwise); })
      .KernelClass<ConvForwardKernel>("CPU")
      .Gradient(ConvForwardGrad)
      .Doc(conv2d ? "2-D convolution of an NHWC or NCHW input with an HWIO filter."
                  : "Depthwise 2-D convolution: each input channel convolved with its own "
                    "[rows, cols, multiplier] filters.");
  OpRegistry::Global().Register(forward.Build());

  OpBuilder input(prefix + "BackpropInput");
  input.Input("input_sizes", "int32")
      .Input("filter", "T")
      .Input("out_backprop", "T")
      .Output("output", "T");
  WindowAttrDefs(input, conv2d)
      .Shape([depthwise](InferenceContext& c) { return ConvBackpropInputShape(c, depthwise); })
      .KernelClass<ConvBackpropInputKernel>("CPU")
      .Gradient(ConvBackpropInputGrad)
      .Doc(
          "Gradient of the convolution with respect to its input; also the transposed "
          "convolution.");
  OpRegistry::Global().Register(input.Build());

  OpBuilder filter(prefix + "BackpropFilter");
  filter.Input("input", "T")
      .Input("filter_sizes", "int32")
      .Input("out_backprop", "T")
      .Output("output", "T");
  WindowAttrDefs(filter, conv2d)
      .Shape([depthwise](InferenceContext& c) { return ConvBackpropFilterShape(c, depthwise); })
      .KernelClass<ConvBackpropFilterKernel>("CPU")
      .Gradient(ConvBackpropFilterGrad)
      .Doc("Gradient of the convolution with respect to its filter.");
  OpRegistry::Global().Register(filter.Build());
}

// TensorFlow's _FusedConv2D, with its signature (the remapper writes it into exported graphs;
// Flowstone's plan optimizer creates it from Conv2D + BiasAdd + activation).
void RegisterFusedConv2D() {
  OpBuilder fused("_FusedConv2D");
  // Host args (TensorFlow's quantized fusions) are optional: none unless given.
  fused.Attr("num_host_args", 0)
      .Input("input", "T")
      .Input("filter", "T")
      .InputTypeList("args", "TArgs")
      .InputList("host_args", "float32", "num_host_args")
      .Output("output", "T");
  WindowAttrDefs(fused, true)
      .Attr("num_args", 0)
      .Attr("filter_format", "HWIO")
      .Attr("fused_ops", AttrValue(std::vector<std::string>{}))
      .Attr("epsilon", 0.0001f)
      .Attr("leakyrelu_alpha", 0.2f)
      .Shape([](InferenceContext& c) { return ConvForwardShape(c, false); })
      .KernelClass<FusedConvKernel>("CPU")
      .NotDifferentiable()
      .Doc(
          "Conv2D followed by the fused_ops (BiasAdd and an activation) in one kernel. Created "
          "by graph optimizers after gradients are built, so it has no gradient of its own.");
  OpRegistry::Global().Register(fused.Build());
}

// TensorFlow's _FusedDepthwiseConv2dNative: DepthwiseConv2dNative and the same tails as
// _FusedConv2D (the plan optimizer creates it from a depthwise convolution + bias or batch norm +
// activation, as MobileNet's blocks are).
void RegisterFusedDepthwiseConv2D() {
  OpBuilder fused("_FusedDepthwiseConv2dNative");
  fused.Input("input", "T").Input("filter", "T").InputList("args", "T", "num_args");
  fused.Output("output", "T");
  WindowAttrDefs(fused, false)
      .Attr("num_args", 0)
      .Attr("fused_ops", AttrValue(std::vector<std::string>{}))
      .Attr("epsilon", 0.0001f)
      .Attr("leakyrelu_alpha", 0.2f)
      .Shape([](InferenceContext& c) { return ConvForwardShape(c, true); })
      .KernelClass<FusedConvKernel>("CPU")
      .NotDifferentiable()
      .Doc(
          "DepthwiseConv2dNative followed by the fused_ops (BiasAdd or FusedBatchNorm, and an "
          "activation) in one kernel. Created by graph optimizers, so it has no gradient.");
  OpRegistry::Global().Register(fused.Build());
}

struct Registrar {
  Registrar() {
    RegisterConvFamily("Conv2D", true);
    RegisterConvFamily("DepthwiseConv2dNative", false);
    RegisterFusedConv2D();
    RegisterFusedDepthwiseConv2D();
  }
} registrar;

}  // namespace
}  // namespace flowstone
