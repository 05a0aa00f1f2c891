// 2-D pooling: MaxPool and AvgPool with their gradients MaxPoolGrad and AvgPoolGrad.
//
// float32 runs on oneDNN; other types (and float32 when FLOWSTONE_ONEDNN=0) run the reference
// loops below. Average pooling divides by the number of input elements in each window, never
// counting padding; max pooling sends each output's gradient to the first maximum of its window
// (in row-major window order), as TensorFlow does.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/conv_util.h"
#include "ops/math/vector_math.h"
#include "ops/multiversion.h"
#include "ops/onednn_util.h"

namespace flowstone {
namespace {

using conv::DataFormat;
using conv::Image;
using conv::ImageStrides;
using conv::Window;
using conv::WindowAttrs;

enum class PoolKind { kMax, kAvg };

// A pooling problem with every size known.
struct PoolProblem {
  DataFormat format = DataFormat::kNHWC;
  Image in, out;
  Window rows, cols;
};

// The pooled image of `in`, -1 where unknown.
Status PoolOutput(const WindowAttrs& attrs, const Image& in, Image* out) {
  out->n = in.n;
  out->c = in.c;
  FS_RETURN_IF_ERROR(conv::WindowOutputSize(attrs, 0, in.h, attrs.ksize[0], &out->h));
  return conv::WindowOutputSize(attrs, 1, in.w, attrs.ksize[1], &out->w);
}

Status MakeProblem(const WindowAttrs& attrs, const Image& in, PoolProblem* p) {
  p->format = attrs.format;
  p->in = in;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, in, &p->out));
  FS_RETURN_IF_ERROR(conv::ComputeWindow(attrs, 0, in.h, attrs.ksize[0], &p->rows));
  return conv::ComputeWindow(attrs, 1, in.w, attrs.ksize[1], &p->cols);
}

bool Known(int64_t d) { return d >= 0; }

// Checks a gradient (or original output) image against the pooled shape of `in`.
Status CheckPooledShape(const std::string& op, const char* name, const WindowAttrs& attrs,
                        const Image& in, const Image& got) {
  Image expected;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, in, &expected));
  const int64_t e[4] = {expected.n, expected.h, expected.w, expected.c};
  const int64_t g[4] = {got.n, got.h, got.w, got.c};
  for (int i = 0; i < 4; ++i) {
    if (Known(e[i]) && Known(g[i]) && e[i] != g[i]) {
      return errors::InvalidArgument(op, ": ", name, " must have the shape of the pooled input, ",
                                     PartialShape(conv::DimsOf(expected, attrs.format)).ToString(),
                                     ", but has shape ",
                                     PartialShape(conv::DimsOf(got, attrs.format)).ToString());
    }
  }
  return Status::OK();
}

// The [first, last) range of input positions a window covers, clipped to the input.
struct Span {
  int64_t begin, end;
};
inline Span WindowSpan(const Window& w, int64_t out_pos) {
  const int64_t start = out_pos * w.stride - w.pad_before;
  return Span{std::max<int64_t>(start, 0), std::min<int64_t>(start + w.kernel, w.in)};
}

// ---------------------------------------------------------------------------------------------
// Reference implementation.

template <typename T>
T Lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                              : std::numeric_limits<T>::lowest();
}

template <typename T>
void RefPool(KernelContext& ctx, PoolKind kind, const PoolProblem& p, const T* x, T* y) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const int64_t cost = p.rows.kernel * p.cols.kernel * p.in.c * p.out.w;
  ctx.ParallelFor(p.out.n * p.out.h, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.in.c);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / p.out.h, oy = row % p.out.h;
      const Span ry = WindowSpan(p.rows, oy);
      for (int64_t ox = 0; ox < p.out.w; ++ox) {
        const Span rx = WindowSpan(p.cols, ox);
        std::fill(acc.begin(), acc.end(), kind == PoolKind::kMax ? Lowest<T>() : T(0));
        for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
          for (int64_t ix = rx.begin; ix < rx.end; ++ix) {
            const int64_t base = xs(b, iy, ix, 0);
            for (int64_t c = 0; c < p.in.c; ++c) {
              const T v = x[base + c * xs.c];
              if (kind == PoolKind::kAvg) {
                acc[c] += v;
              } else if (v > acc[c]) {
                acc[c] = v;
              }
            }
          }
        }
        const int64_t count = (ry.end - ry.begin) * (rx.end - rx.begin);
        for (int64_t c = 0; c < p.in.c; ++c) {
          y[ys(b, oy, ox, c)] = kind == PoolKind::kAvg ? acc[c] / static_cast<T>(count) : acc[c];
        }
      }
    }
  });
}

// Each (batch, channel) plane is independent, so planes run in parallel and scatter freely.
template <typename T>
void RefMaxPoolGrad(KernelContext& ctx, const PoolProblem& p, const T* x, const T* dy, T* dx) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const int64_t cost = p.out.h * p.out.w * p.rows.kernel * p.cols.kernel;
  ctx.ParallelFor(p.in.n * p.in.c, cost, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / p.in.c, c = plane % p.in.c;
      for (int64_t iy = 0; iy < p.in.h; ++iy) {
        for (int64_t ix = 0; ix < p.in.w; ++ix) dx[xs(b, iy, ix, c)] = T(0);
      }
      for (int64_t oy = 0; oy < p.out.h; ++oy) {
        const Span ry = WindowSpan(p.rows, oy);
        for (int64_t ox = 0; ox < p.out.w; ++ox) {
          const Span rx = WindowSpan(p.cols, ox);
          int64_t arg = -1;
          T best = Lowest<T>();
          for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
            for (int64_t ix = rx.begin; ix < rx.end; ++ix) {
              const int64_t at = xs(b, iy, ix, c);
              if (arg < 0 || x[at] > best) {
                best = x[at];
                arg = at;
              }
            }
          }
          if (arg >= 0) dx[arg] += dy[ys(b, oy, ox, c)];
        }
      }
    }
  });
}

template <typename T>
void RefAvgPoolGrad(KernelContext& ctx, const PoolProblem& p, const T* dy, T* dx) {
  const ImageStrides xs(p.in, p.format), ys(p.out, p.format);
  const int64_t cost = p.out.h * p.out.w * p.rows.kernel * p.cols.kernel;
  ctx.ParallelFor(p.in.n * p.in.c, cost, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / p.in.c, c = plane % p.in.c;
      for (int64_t iy = 0; iy < p.in.h; ++iy) {
        for (int64_t ix = 0; ix < p.in.w; ++ix) dx[xs(b, iy, ix, c)] = T(0);
      }
      for (int64_t oy = 0; oy < p.out.h; ++oy) {
        const Span ry = WindowSpan(p.rows, oy);
        for (int64_t ox = 0; ox < p.out.w; ++ox) {
          const Span rx = WindowSpan(p.cols, ox);
          const T share =
              dy[ys(b, oy, ox, c)] / static_cast<T>((ry.end - ry.begin) * (rx.end - rx.begin));
          for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
            for (int64_t ix = rx.begin; ix < rx.end; ++ix) dx[xs(b, iy, ix, c)] += share;
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// MaxPoolGrad of channels-last images, vectorized over channels.
//
// TensorFlow's CPU kernel finds each window's maximum again in orig_input (orig_output only has
// to have the pooled shape) by one rule: the window's first element, replaced by each later
// element that is strictly greater. So of equal maxima the first wins, a NaN first element keeps
// the gradient and a later NaN never takes it. In NHWC the channels of a pixel are contiguous, so
// each window is walked once per block of channels, with the running maximum and its position in
// the window kept per channel and replaced through masks, and the gradient written through a mask
// too: one read of the input and one write of the output, with no branch on the data. Reading the
// input again is what TensorFlow's oneDNN route (a workspace written by MaxPool) avoids; in
// training graphs the pair below does the same, and this kernel runs where it does not apply
// (rewrites off, a gradient of another tensor than the MaxPool's, float64).

// Channels per block, so that the running maxima and positions stay in L1.
constexpr int64_t kChannelBlock = 256;

// One window whose kh x kw taps (row-major, all inside the image) start at tap[0..kh*kw); g is the
// window's gradient per channel. Used for the common 2x2 and 3x3 windows, where the taps are
// compile-time constants: each channel's maximum then stays in a register over the taps, which
// made the pass cost about two thirds of what the general loop below does.
template <typename T, typename Pos, int kTaps, bool kAccumulate>
inline void FixedWindow(const T* const* tap, T* const* grad, const T* __restrict g,
                        int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    T best = tap[0][c];
    Pos arg = 0;
#pragma GCC unroll 9
    for (int k = 1; k < kTaps; ++k) {
      const T v = tap[k][c];
      const bool greater = v > best;
      best = vecmath::Select(greater, v, best);
      arg = greater ? Pos(k) : arg;
    }
#pragma GCC unroll 9
    for (int k = 0; k < kTaps; ++k) {
      const T share = vecmath::Select(arg == Pos(k), g[c], T(0));
      grad[k][c] = kAccumulate ? grad[k][c] + share : share;
    }
  }
}

// The gradient of one image: x and dx are [h, w, c], dy [out_h, out_w, c]. With kAccumulate each
// window adds its gradient into dx, which the caller has zeroed (windows overlap); otherwise each
// window writes its elements. kKernel > 0 says the windows are kKernel x kKernel: whole windows
// then take FixedWindow, and windows cut by the padding the general loop.
template <typename T, typename Pos, bool kAccumulate, int kKernel>
FS_MULTIVERSION void MaxPoolGradImage(const PoolProblem& p, const T* __restrict x,
                                      const T* __restrict dy, T* __restrict dx) {
  const int64_t channels = p.in.c, row = p.in.w * channels;
  T best[kChannelBlock];
  Pos arg[kChannelBlock];
  for (int64_t oy = 0; oy < p.out.h; ++oy) {
    const Span ry = WindowSpan(p.rows, oy);
    for (int64_t ox = 0; ox < p.out.w; ++ox) {
      const Span rx = WindowSpan(p.cols, ox);
      if (ry.begin >= ry.end || rx.begin >= rx.end) continue;  // all padding: no input gets it
      const T* g = dy + (oy * p.out.w + ox) * channels;
      if constexpr (kKernel > 0) {
        if (ry.end - ry.begin == kKernel && rx.end - rx.begin == kKernel) {
          const T* tap[kKernel * kKernel];
          T* grad[kKernel * kKernel];
          for (int ky = 0; ky < kKernel; ++ky) {
            for (int kx = 0; kx < kKernel; ++kx) {
              const int64_t at = (ry.begin + ky) * row + (rx.begin + kx) * channels;
              tap[ky * kKernel + kx] = x + at;
              grad[ky * kKernel + kx] = dx + at;
            }
          }
          FixedWindow<T, Pos, kKernel * kKernel, kAccumulate>(tap, grad, g, channels);
          continue;
        }
      }
      for (int64_t c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int64_t n = std::min(kChannelBlock, channels - c0);
        const T* first = x + ry.begin * row + rx.begin * channels + c0;
        for (int64_t c = 0; c < n; ++c) {
          best[c] = first[c];
          arg[c] = 0;
        }
        Pos k = 0;
        for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
          for (int64_t ix = rx.begin; ix < rx.end; ++ix, ++k) {
            const T* v = x + iy * row + ix * channels + c0;
            for (int64_t c = 0; c < n; ++c) {
              const bool greater = v[c] > best[c];
              best[c] = vecmath::Select(greater, v[c], best[c]);
              arg[c] = greater ? k : arg[c];
            }
          }
        }
        k = 0;
        for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
          for (int64_t ix = rx.begin; ix < rx.end; ++ix, ++k) {
            T* d = dx + iy * row + ix * channels + c0;
            for (int64_t c = 0; c < n; ++c) {
              const T share = vecmath::Select(arg[c] == k, g[c0 + c], T(0));
              d[c] = kAccumulate ? d[c] + share : share;
            }
          }
        }
      }
    }
  }
}

// Calls fn(std::integral_constant<int, kKernel>) with the window size as a constant where it is
// 2x2 or 3x3, else 0.
template <typename Fn>
void WithKernelConstant(const PoolProblem& p, Fn&& fn) {
  const int64_t kh = p.rows.kernel, kw = p.cols.kernel;
  if (kh == 2 && kw == 2) {
    fn(std::integral_constant<int, 2>());
  } else if (kh == 3 && kw == 3) {
    fn(std::integral_constant<int, 3>());
  } else {
    fn(std::integral_constant<int, 0>());
  }
}

// Whether the windows of one dimension read every input position.
bool CoversInput(const Window& w) {
  int64_t next = 0;  // the first position no earlier window has read
  for (int64_t o = 0; o < w.out; ++o) {
    const Span s = WindowSpan(w, o);
    if (s.begin > next) return false;
    next = std::max(next, s.end);
  }
  return next >= w.in;
}

// Images are independent, so they run in parallel and the result does not depend on the threads;
// overlapping windows add into an image in output order, as the reference loops do.
template <typename T>
void MaxPoolGradNhwc(KernelContext& ctx, const PoolProblem& p, const T* x, const T* dy, T* dx) {
  using Pos = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;  // a mask of T's width
  const bool overlap = p.rows.stride < p.rows.kernel || p.cols.stride < p.cols.kernel;
  const bool zero_first = overlap || !CoversInput(p.rows) || !CoversInput(p.cols);
  const int64_t in_image = p.in.h * p.in.w * p.in.c, out_image = p.out.h * p.out.w * p.out.c;
  const int64_t cost = in_image + out_image * p.rows.kernel * p.cols.kernel;
  ctx.ParallelFor(p.in.n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* xb = x + b * in_image;
      const T* dyb = dy + b * out_image;
      T* dxb = dx + b * in_image;
      if (zero_first) std::fill(dxb, dxb + in_image, T(0));
      WithKernelConstant(p, [&](auto kernel) {
        if (overlap) {
          MaxPoolGradImage<T, Pos, true, decltype(kernel)::value>(p, xb, dyb, dxb);
        } else {
          MaxPoolGradImage<T, Pos, false, decltype(kernel)::value>(p, xb, dyb, dxb);
        }
      });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// MaxPool and MaxPoolGrad paired through a workspace (float32, NHWC).
//
// In a training graph the remapper (optimizer/remapper.cc) runs a MaxPool whose output a
// MaxPoolGrad of the same input reads as _MaxPoolWithWorkspace, which also writes where each
// window's gradient goes (the tap, row-major in the window, in a byte) by the rule above, and the
// MaxPoolGrad as _MaxPoolGradWithWorkspace, which routes the gradient through those bytes without
// reading the input again: the input is the pair's biggest tensor, and by the time the gradient
// runs it has left the caches (TensorFlow's oneDNN rewrite does the same). The pooled values are
// MaxPool's float32 kernel's (oneDNN's) bit for bit: the window's maximum counted up from the
// lowest float, a NaN never taken, the first of equal values (+0 and -0) kept. So the rewrite
// changes no result.

// The most taps a window may have for its tap to fit the workspace's byte.
constexpr int64_t kMaxWorkspaceTaps = 256;

// Few channels (fewer than kFlatRowChannels) leave the per-pixel loop below mostly scalar work
// on a handful of lanes: LeNet's first pooling (6 channels, 2x2) took 0.77 ms per step where
// oneDNN's MaxPool takes 0.23. For those, the whole windows of an output row run as one loop over
// (column, channel) pairs, each tap's element found through a table of offsets into the row, so
// the loop is vectorized with gathers whatever the channel count. Same comparisons, same order
// of taps: the same outputs and workspace bytes.
constexpr int64_t kFlatRowChannels = 16;

// The output columns [first, end) whose windows lie inside the input.
struct WholeColumns {
  int64_t first = 0, end = 0;
};

WholeColumns WholeWindowColumns(const PoolProblem& p) {
  auto whole = [&](int64_t ox) {
    const Span span = WindowSpan(p.cols, ox);
    return span.end - span.begin == p.cols.kernel;
  };
  WholeColumns cols;
  while (cols.first < p.out.w && !whole(cols.first)) ++cols.first;
  cols.end = cols.first;
  while (cols.end < p.out.w && whole(cols.end)) ++cols.end;
  return cols;
}

// The whole windows' columns, and for each (column, channel) pair of them, counted from
// cols.first, the offset of its window's first element in an input row.
struct FlatRow {
  WholeColumns cols;
  std::vector<int32_t> offset;
};

FlatRow MakeFlatRow(const PoolProblem& p) {
  FlatRow flat;
  flat.cols = WholeWindowColumns(p);
  for (int64_t ox = flat.cols.first; ox < flat.cols.end; ++ox) {
    const int64_t begin = WindowSpan(p.cols, ox).begin * p.in.c;
    for (int64_t c = 0; c < p.in.c; ++c) flat.offset.push_back(static_cast<int32_t>(begin + c));
  }
  return flat;
}

// One output row's whole windows: `rows` is the input at the windows' first row, `out` and
// `where` the row's outputs from flat.cols.first on; first and at hold n values of scratch.
template <int kKernel>
FS_MULTIVERSION void MaxPoolWorkspaceFlatRow(const float* __restrict rows, int64_t row,
                                             int64_t channels, const int32_t* __restrict offset,
                                             int64_t n, float* __restrict out,
                                             uint8_t* __restrict where, float* __restrict first,
                                             int32_t* __restrict at) {
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  for (int64_t j = 0; j < n; ++j) {
    const float v = rows[offset[j]];
    out[j] = vecmath::Select(v > kLowest, v, kLowest);
    first[j] = v;
    at[j] = 0;
  }
  for (int k = 1; k < kKernel * kKernel; ++k) {
    const float* tap = rows + (k / kKernel) * row + (k % kKernel) * channels;
    for (int64_t j = 0; j < n; ++j) {
      const float v = tap[offset[j]];
      out[j] = vecmath::Select(v > out[j], v, out[j]);
      const bool greater = v > first[j];
      first[j] = vecmath::Select(greater, v, first[j]);
      at[j] = greater ? k : at[j];
    }
  }
  for (int64_t j = 0; j < n; ++j) where[j] = static_cast<uint8_t>(at[j]);
}

template <int kKernel>
FS_MULTIVERSION void MaxPoolWorkspaceImage(const PoolProblem& p, const float* __restrict x,
                                           float* __restrict y, uint8_t* __restrict ws,
                                           const FlatRow* flat, float* flat_first,
                                           int32_t* flat_at) {
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  const int64_t channels = p.in.c, row = p.in.w * channels;
  float top[kChannelBlock], best[kChannelBlock];
  int32_t arg[kChannelBlock];
  for (int64_t oy = 0; oy < p.out.h; ++oy) {
    const Span ry = WindowSpan(p.rows, oy);
    const bool flat_row = flat != nullptr && ry.end - ry.begin == kKernel;
    if (flat_row) {
      const int64_t at = (oy * p.out.w + flat->cols.first) * channels;
      MaxPoolWorkspaceFlatRow<kKernel>(x + ry.begin * row, row, channels, flat->offset.data(),
                                       static_cast<int64_t>(flat->offset.size()), y + at, ws + at,
                                       flat_first, flat_at);
    }
    for (int64_t ox = 0; ox < p.out.w; ++ox) {
      if (flat_row && ox == flat->cols.first) ox = flat->cols.end;
      if (ox >= p.out.w) break;
      const Span rx = WindowSpan(p.cols, ox);
      float* out = y + (oy * p.out.w + ox) * channels;
      uint8_t* where = ws + (oy * p.out.w + ox) * channels;
      if (ry.begin >= ry.end || rx.begin >= rx.end) {  // all padding
        std::fill(out, out + channels, kLowest);
        std::fill(where, where + channels, uint8_t{0});
        continue;
      }
      if constexpr (kKernel > 0) {
        if (ry.end - ry.begin == kKernel && rx.end - rx.begin == kKernel) {
          const float* tap[kKernel * kKernel];
          for (int ky = 0; ky < kKernel; ++ky) {
            for (int kx = 0; kx < kKernel; ++kx) {
              tap[ky * kKernel + kx] = x + (ry.begin + ky) * row + (rx.begin + kx) * channels;
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            float max = vecmath::Select(tap[0][c] > kLowest, tap[0][c], kLowest);
            float first_max = tap[0][c];
            int32_t at = 0;
#pragma GCC unroll 9
            for (int k = 1; k < kKernel * kKernel; ++k) {
              const float v = tap[k][c];
              max = vecmath::Select(v > max, v, max);
              const bool greater = v > first_max;
              first_max = vecmath::Select(greater, v, first_max);
              at = greater ? k : at;
            }
            out[c] = max;
            where[c] = static_cast<uint8_t>(at);
          }
          continue;
        }
      }
      for (int64_t c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int64_t n = std::min(kChannelBlock, channels - c0);
        const float* first = x + ry.begin * row + rx.begin * channels + c0;
        for (int64_t c = 0; c < n; ++c) {
          top[c] = kLowest;
          best[c] = first[c];
          arg[c] = 0;
        }
        int32_t k = 0;
        for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
          for (int64_t ix = rx.begin; ix < rx.end; ++ix, ++k) {
            const float* v = x + iy * row + ix * channels + c0;
            for (int64_t c = 0; c < n; ++c) {
              top[c] = vecmath::Select(v[c] > top[c], v[c], top[c]);
              const bool greater = v[c] > best[c];
              best[c] = vecmath::Select(greater, v[c], best[c]);
              arg[c] = greater ? k : arg[c];
            }
          }
        }
        for (int64_t c = 0; c < n; ++c) {
          out[c0 + c] = top[c];
          where[c0 + c] = static_cast<uint8_t>(arg[c]);
        }
      }
    }
  }
}

// The gradient's flat rows, for few channels and windows that tile the columns (stride equal to
// the window's width, as in 2x2 pooling with stride 2): then every input element of a whole
// window's columns takes its gradient from one output, so each input row of an output row's
// windows is one loop over its (column, channel) pairs, with that output found through a table.
struct FlatGradRow {
  WholeColumns cols;
  int64_t outputs = 0;         // (column, channel) pairs of the whole windows
  int64_t input_begin = 0;     // the first input element (in a row) of the first whole window
  std::vector<int32_t> from;   // per input element from input_begin: its output, from cols.first
  std::vector<int32_t> tap_x;  // and its column in the window
};

FlatGradRow MakeFlatGradRow(const PoolProblem& p, int kernel) {
  FlatGradRow flat;
  flat.cols = WholeWindowColumns(p);
  const int64_t channels = p.in.c, cols = flat.cols.end - flat.cols.first;
  if (cols <= 0) return flat;
  flat.outputs = cols * channels;
  flat.input_begin = WindowSpan(p.cols, flat.cols.first).begin * channels;
  for (int64_t i = 0; i < cols * kernel * channels; ++i) {
    flat.from.push_back(static_cast<int32_t>(i / (kernel * channels) * channels + i % channels));
    flat.tap_x.push_back(static_cast<int32_t>(i / channels % kernel));
  }
  return flat;
}

// The input rows of one output row's whole windows: `grad_rows` is dx at the windows' first row;
// `where` and `g` the row's workspace and gradient from flat.cols.first on; at is scratch.
template <bool kAccumulate, int kKernel>
FS_MULTIVERSION void MaxPoolGradWorkspaceFlatRow(const FlatGradRow& flat, int64_t row,
                                                 const uint8_t* __restrict where,
                                                 const float* __restrict g,
                                                 float* __restrict grad_rows,
                                                 int32_t* __restrict at) {
  const int64_t n = static_cast<int64_t>(flat.from.size());
  for (int64_t j = 0; j < flat.outputs; ++j) at[j] = where[j];
  const int32_t* __restrict from = flat.from.data();
  const int32_t* __restrict tap_x = flat.tap_x.data();
  for (int ky = 0; ky < kKernel; ++ky) {
    float* __restrict d = grad_rows + ky * row + flat.input_begin;
    for (int64_t i = 0; i < n; ++i) {
      const float share = vecmath::Select(at[from[i]] == ky * kKernel + tap_x[i], g[from[i]], 0.0f);
      d[i] = kAccumulate ? d[i] + share : share;
    }
  }
}

template <bool kAccumulate, int kKernel>
FS_MULTIVERSION void MaxPoolGradWorkspaceImage(const PoolProblem& p, const uint8_t* __restrict ws,
                                               const float* __restrict dy, float* __restrict dx,
                                               const FlatGradRow* flat, int32_t* flat_at) {
  const int64_t channels = p.in.c, row = p.in.w * channels;
  for (int64_t oy = 0; oy < p.out.h; ++oy) {
    const Span ry = WindowSpan(p.rows, oy);
    const bool flat_row = flat != nullptr && ry.end - ry.begin == kKernel;
    if (flat_row) {
      const int64_t at = (oy * p.out.w + flat->cols.first) * channels;
      MaxPoolGradWorkspaceFlatRow<kAccumulate, kKernel>(*flat, row, ws + at, dy + at,
                                                        dx + ry.begin * row, flat_at);
    }
    for (int64_t ox = 0; ox < p.out.w; ++ox) {
      if (flat_row && ox == flat->cols.first) ox = flat->cols.end;
      if (ox >= p.out.w) break;
      const Span rx = WindowSpan(p.cols, ox);
      if (ry.begin >= ry.end || rx.begin >= rx.end) continue;
      const uint8_t* where = ws + (oy * p.out.w + ox) * channels;
      const float* g = dy + (oy * p.out.w + ox) * channels;
      if constexpr (kKernel > 0) {
        if (ry.end - ry.begin == kKernel && rx.end - rx.begin == kKernel) {
          float* grad[kKernel * kKernel];
          for (int ky = 0; ky < kKernel; ++ky) {
            for (int kx = 0; kx < kKernel; ++kx) {
              grad[ky * kKernel + kx] = dx + (ry.begin + ky) * row + (rx.begin + kx) * channels;
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            const int32_t at = where[c];
#pragma GCC unroll 9
            for (int k = 0; k < kKernel * kKernel; ++k) {
              const float share = vecmath::Select(at == k, g[c], 0.0f);
              grad[k][c] = kAccumulate ? grad[k][c] + share : share;
            }
          }
          continue;
        }
      }
      int32_t k = 0;
      for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
        for (int64_t ix = rx.begin; ix < rx.end; ++ix, ++k) {
          float* d = dx + iy * row + ix * channels;
          for (int64_t c = 0; c < channels; ++c) {
            const float share = vecmath::Select(int32_t{where[c]} == k, g[c], 0.0f);
            d[c] = kAccumulate ? d[c] + share : share;
          }
        }
      }
    }
  }
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

dnnl::algorithm Algorithm(PoolKind kind) {
  return kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_forward::primitive_desc ForwardPd(PoolKind kind, const PoolProblem& p,
                                                bool any_layout, dnnl::prop_kind prop) {
  return dnnl::pooling_forward::primitive_desc(
      onednn::Engine(), prop, Algorithm(kind), ImageDesc(p.in, p.format, any_layout),
      ImageDesc(p.out, p.format, any_layout), {p.rows.stride, p.cols.stride},
      {p.rows.kernel, p.cols.kernel}, {0, 0}, {p.rows.pad_before, p.cols.pad_before},
      // oneDNN wants the right padding that makes its floor formula give the output size, which
      // for VALID windows leaving input rows unread is 0.
      {std::max<int64_t>(p.rows.pad_after, 0), std::max<int64_t>(p.cols.pad_after, 0)},
      onednn::DefaultAttr());
}

enum class PoolPass { kForward, kBackward };

// Forward pooling needs one primitive. The backward pass of average pooling needs one too; that
// of max pooling first reruns the forward pass to record where each maximum is (oneDNN's
// workspace), then routes the gradient there.
struct CachedPool {
  std::optional<onednn::Primitive> forward;
  std::optional<onednn::Primitive> backward;
  memory::desc workspace;
  // Whether oneDNN built what the pass needs.
  bool usable(PoolPass pass) const { return pass == PoolPass::kForward ? !!forward : !!backward; }
};

Status BuildPool(PoolKind kind, PoolPass pass, const PoolProblem& p, CachedPool* out) {
  onednn::OneOpenMpThread one_thread;  // primitives are built for the threads they run on
  const memory::desc src = ImageDesc(p.in, p.format, false);
  const memory::desc dst = ImageDesc(p.out, p.format, false);
  Status s = onednn::Guard("create a pooling primitive", [&] {
    if (pass == PoolPass::kForward) {
      auto pd = onednn::ChoosePd(
          [&](bool any) { return ForwardPd(kind, p, any, dnnl::prop_kind::forward_inference); });
      out->forward.emplace(
          dnnl::pooling_forward(pd), pd,
          std::vector<onednn::ArgSpec>{{DNNL_ARG_SRC, src, false}, {DNNL_ARG_DST, dst, true}});
      return;
    }
    auto fwd = onednn::ChoosePd(
        [&](bool any) { return ForwardPd(kind, p, any, dnnl::prop_kind::forward_training); });
    const bool any = fwd.src_desc() != src;
    dnnl::pooling_backward::primitive_desc bwd(
        onednn::Engine(), Algorithm(kind), ImageDesc(p.in, p.format, any),
        ImageDesc(p.out, p.format, any), {p.rows.stride, p.cols.stride},
        {p.rows.kernel, p.cols.kernel}, {0, 0}, {p.rows.pad_before, p.cols.pad_before},
        {std::max<int64_t>(p.rows.pad_after, 0), std::max<int64_t>(p.cols.pad_after, 0)}, fwd,
        onednn::DefaultAttr());
    if (kind == PoolKind::kMax) {
      out->workspace = fwd.workspace_desc();
      out->forward.emplace(
          dnnl::pooling_forward(fwd), fwd,
          std::vector<onednn::ArgSpec>{{DNNL_ARG_SRC, src, false},
                                       {DNNL_ARG_DST, dst, true},
                                       {DNNL_ARG_WORKSPACE, out->workspace, true}});
      out->backward.emplace(
          dnnl::pooling_backward(bwd), bwd,
          std::vector<onednn::ArgSpec>{{DNNL_ARG_DIFF_DST, dst, false},
                                       {DNNL_ARG_WORKSPACE, out->workspace, false},
                                       {DNNL_ARG_DIFF_SRC, src, true}});
    } else {
      out->backward.emplace(dnnl::pooling_backward(bwd), bwd,
                            std::vector<onednn::ArgSpec>{{DNNL_ARG_DIFF_DST, dst, false},
                                                         {DNNL_ARG_DIFF_SRC, src, true}});
    }
  });
  // oneDNN declines some problems; the reference loops handle every one.
  if (!s.ok()) {
    out->forward.reset();
    out->backward.reset();
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Kernels.

Status CheckRank4(const std::string& op, const char* name, const Tensor& t) {
  if (t.rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional, but got shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

PoolProblem WithBatch(PoolProblem p, int64_t batch) {
  p.in.n = p.out.n = batch;
  return p;
}

// Image `first` of a batch tensor, as oneDNN's data pointer.
void* ImageAt(const Tensor& t, int64_t first) {
  return static_cast<char*>(t.raw_data()) + first * (static_cast<int64_t>(t.bytes()) / t.dim(0));
}

std::vector<int64_t> ProblemKey(const PoolProblem& p) { return {p.in.n, p.in.h, p.in.w, p.in.c}; }

class PoolKernel : public OpKernel {
 public:
  PoolKernel(const Node& node, PoolKind kind, PoolPass pass)
      : OpKernel(node), kind_(kind), pass_(pass) {}
  Status Init() override { return conv::ParsePoolAttrs(node().attrs(), &attrs_); }

 protected:
  // Runs run(primitives, first_image, images) for chunks of the batch in parallel, each with the
  // cached oneDNN primitives for its size. *ran stays false (and nothing runs) when the dtype is
  // not float32 or oneDNN has no primitives for the problem: the reference loops then run.
  using ChunkFn = std::function<Status(const CachedPool&, int64_t first, int64_t images)>;
  Status RunOneDnn(KernelContext& ctx, const PoolProblem& p, DType dtype, const ChunkFn& run,
                   bool* ran) {
    if (dtype != DType::kFloat32 || !onednn::Enabled()) return Status::OK();
    // Window reads per image; a chunk gets ~0.05 ms of them on one core.
    const int64_t work = p.out.h * p.out.w * p.out.c * p.rows.kernel * p.cols.kernel;
    const int64_t batch = p.in.n;
    const onednn::BatchChunks chunks(batch, work, int64_t{1} << 18);
    const int64_t last = chunks.count - 1;
    std::shared_ptr<const CachedPool> full, tail;
    FS_RETURN_IF_ERROR(Cached(WithBatch(p, chunks.size), &full));
    tail = full;
    if (chunks.images(last, batch) != chunks.size) {
      FS_RETURN_IF_ERROR(Cached(WithBatch(p, chunks.images(last, batch)), &tail));
    }
    if (!full->usable(pass_) || !tail->usable(pass_)) return Status::OK();
    std::mutex mu;
    Status status;
    ctx.ParallelFor(chunks.count, chunks.size * work, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        Status s =
            run(chunk == last ? *tail : *full, chunk * chunks.size, chunks.images(chunk, batch));
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (status.ok()) status = s;
        }
      }
    });
    *ran = true;
    return status;
  }

  Status Problem(const Tensor& in_shape_of, const Image& in, PoolProblem* p) const {
    Status s = MakeProblem(attrs_, in, p);
    if (!s.ok()) s.Append(StrCat(" (input shape ", in_shape_of.shape().ToString(), ")"));
    return s;
  }

  const PoolKind kind_;
  const PoolPass pass_;
  WindowAttrs attrs_;

 private:
  Status Cached(const PoolProblem& p, std::shared_ptr<const CachedPool>* out) {
    return cache_.Get(
        ProblemKey(p), [&](CachedPool* c) { return BuildPool(kind_, pass_, p, c); }, out);
  }

  onednn::ShapeCache<CachedPool> cache_;
};

template <PoolKind kKind>
class PoolForwardKernel final : public PoolKernel {
 public:
  explicit PoolForwardKernel(const Node& node) : PoolKernel(node, kKind, PoolPass::kForward) {}
  Status Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    FS_RETURN_IF_ERROR(CheckRank4(node().type(), "input", x));
    PoolProblem p;
    FS_RETURN_IF_ERROR(Problem(x, conv::ImageOf(x.shape().dims(), attrs_.format), &p));
    Tensor* y;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(p.out, p.format)), &y));
    if (y->num_elements() == 0) return Status::OK();
    bool ran = false;
    FS_RETURN_IF_ERROR(RunOneDnn(
        ctx, p, x.dtype(),
        [&](const CachedPool& c, int64_t first, int64_t) {
          return c.forward->Execute(ctx, {ImageAt(x, first), ImageAt(*y, first)});
        },
        &ran));
    if (ran) return Status::OK();
    return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
        x.dtype(), node().type().c_str(), [&]<typename T>() -> Status {
          RefPool<T>(ctx, kKind, p, x.data<T>(), y->data<T>());
          return Status::OK();
        });
  }
};

class MaxPoolGradKernel final : public PoolKernel {
 public:
  explicit MaxPoolGradKernel(const Node& node)
      : PoolKernel(node, PoolKind::kMax, PoolPass::kBackward) {}
  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    FS_RETURN_IF_ERROR(CheckRank4(op, "orig_input", x));
    FS_RETURN_IF_ERROR(CheckRank4(op, "orig_output", y));
    FS_RETURN_IF_ERROR(CheckRank4(op, "grad", dy));
    const Image in = conv::ImageOf(x.shape().dims(), attrs_.format);
    PoolProblem p;
    FS_RETURN_IF_ERROR(Problem(x, in, &p));
    FS_RETURN_IF_ERROR(CheckPooledShape(op, "orig_output", attrs_, in,
                                        conv::ImageOf(y.shape().dims(), attrs_.format)));
    FS_RETURN_IF_ERROR(
        CheckPooledShape(op, "grad", attrs_, in, conv::ImageOf(dy.shape().dims(), attrs_.format)));
    Tensor* dx;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
    if (dx->num_elements() == 0) return Status::OK();
    if (dy.num_elements() == 0) {
      std::memset(dx->raw_data(), 0, dx->bytes());
      return Status::OK();
    }
    if (p.format == DataFormat::kNHWC) {
      return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
        MaxPoolGradNhwc<T>(ctx, p, x.data<T>(), dy.data<T>(), dx->data<T>());
        return Status::OK();
      });
    }
    bool ran = false;
    FS_RETURN_IF_ERROR(RunOneDnn(
        ctx, p, x.dtype(),
        [&](const CachedPool& c, int64_t first, int64_t images) {
          // The forward pass records where each window's maximum is (the workspace).
          Tensor pooled, workspace;
          FS_RETURN_IF_ERROR(ctx.AllocateTemp(
              DType::kFloat32, TensorShape(conv::DimsOf(WithBatch(p, images).out, p.format)),
              &pooled));
          FS_RETURN_IF_ERROR(ctx.AllocateTemp(
              DType::kUInt8, TensorShape{static_cast<int64_t>(c.workspace.get_size())},
              &workspace));
          FS_RETURN_IF_ERROR(c.forward->Execute(
              ctx, {ImageAt(x, first), pooled.raw_data(), workspace.raw_data()}));
          return c.backward->Execute(
              ctx, {ImageAt(dy, first), workspace.raw_data(), ImageAt(*dx, first)});
        },
        &ran));
    if (ran) return Status::OK();
    return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
      RefMaxPoolGrad<T>(ctx, p, x.data<T>(), dy.data<T>(), dx->data<T>());
      return Status::OK();
    });
  }
};

// _MaxPoolWithWorkspace: MaxPool's output and where each window's gradient goes.
class MaxPoolWithWorkspaceKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return conv::ParsePoolAttrs(node().attrs(), &attrs_); }
  Status Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    FS_RETURN_IF_ERROR(CheckRank4(node().type(), "input", x));
    PoolProblem p;
    Status s = MakeProblem(attrs_, conv::ImageOf(x.shape().dims(), attrs_.format), &p);
    if (!s.ok()) s.Append(StrCat(" (input shape ", x.shape().ToString(), ")"));
    FS_RETURN_IF_ERROR(s);
    FS_RETURN_IF_ERROR(CheckWorkspaceProblem(node().type(), p));
    const TensorShape pooled(conv::DimsOf(p.out, p.format));
    Tensor *y, *ws;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, pooled, &y));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, pooled, &ws));
    if (y->num_elements() == 0) return Status::OK();
    const int64_t in_image = p.in.h * p.in.w * p.in.c, out_image = p.out.h * p.out.w * p.out.c;
    const float* xd = x.data<float>();
    float* yd = y->data<float>();
    uint8_t* wd = ws->data<uint8_t>();
    WithKernelConstant(p, [&](auto kernel) {
      constexpr int kKernel = decltype(kernel)::value;
      FlatRow flat;
      if (kKernel > 0 && p.in.c < kFlatRowChannels &&
          p.in.w * p.in.c <= std::numeric_limits<int32_t>::max()) {
        flat = MakeFlatRow(p);
      }
      const FlatRow* flat_or_null = flat.offset.empty() ? nullptr : &flat;
      ctx.ParallelFor(p.in.n, in_image + out_image, [&](int64_t begin, int64_t end) {
        // The flat rows' scratch, one per shard.
        std::vector<float> first(flat.offset.size());
        std::vector<int32_t> at(flat.offset.size());
        for (int64_t b = begin; b < end; ++b) {
          MaxPoolWorkspaceImage<kKernel>(p, xd + b * in_image, yd + b * out_image,
                                         wd + b * out_image, flat_or_null, first.data(), at.data());
        }
      });
    });
    return Status::OK();
  }

  // The problems the pair handles: NHWC, and windows whose taps fit a byte. The remapper only
  // pairs those; these checks keep a hand-made node from misreading its attrs.
  static Status CheckWorkspaceProblem(const std::string& op, const PoolProblem& p) {
    if (p.format != DataFormat::kNHWC) {
      return errors::InvalidArgument(op, ": only data_format NHWC is supported");
    }
    if (p.rows.kernel * p.cols.kernel > kMaxWorkspaceTaps) {
      return errors::InvalidArgument(op, ": a window may have at most ", kMaxWorkspaceTaps,
                                     " elements, but ksize gives ", p.rows.kernel * p.cols.kernel);
    }
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
};

// _MaxPoolGradWithWorkspace: MaxPoolGrad with the windows' taps read from the workspace.
class MaxPoolGradWithWorkspaceKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return conv::ParsePoolAttrs(node().attrs(), &attrs_); }
  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& x = ctx.input(0);
    const Tensor& ws = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    FS_RETURN_IF_ERROR(CheckRank4(op, "orig_input", x));
    FS_RETURN_IF_ERROR(CheckRank4(op, "workspace", ws));
    FS_RETURN_IF_ERROR(CheckRank4(op, "grad", dy));
    const Image in = conv::ImageOf(x.shape().dims(), attrs_.format);
    PoolProblem p;
    Status s = MakeProblem(attrs_, in, &p);
    if (!s.ok()) s.Append(StrCat(" (input shape ", x.shape().ToString(), ")"));
    FS_RETURN_IF_ERROR(s);
    FS_RETURN_IF_ERROR(MaxPoolWithWorkspaceKernel::CheckWorkspaceProblem(op, p));
    FS_RETURN_IF_ERROR(CheckPooledShape(op, "workspace", attrs_, in,
                                        conv::ImageOf(ws.shape().dims(), attrs_.format)));
    FS_RETURN_IF_ERROR(
        CheckPooledShape(op, "grad", attrs_, in, conv::ImageOf(dy.shape().dims(), attrs_.format)));
    Tensor* dx;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
    if (dx->num_elements() == 0) return Status::OK();
    // A tap past the window (a workspace not made by _MaxPoolWithWorkspace) matches no element:
    // the taps are compared, never used as an index.
    const bool overlap = p.rows.stride < p.rows.kernel || p.cols.stride < p.cols.kernel;
    const bool zero_first = overlap || !CoversInput(p.rows) || !CoversInput(p.cols);
    const int64_t in_image = p.in.h * p.in.w * p.in.c, out_image = p.out.h * p.out.w * p.out.c;
    const uint8_t* wd = ws.data<uint8_t>();
    const float* g = dy.data<float>();
    float* d = dx->data<float>();
    WithKernelConstant(p, [&](auto kernel) {
      constexpr int kKernel = decltype(kernel)::value;
      FlatGradRow flat;
      if (kKernel > 0 && p.in.c < kFlatRowChannels && p.cols.stride == kKernel &&
          p.in.w * p.in.c <= std::numeric_limits<int32_t>::max()) {
        flat = MakeFlatGradRow(p, kKernel);
      }
      const FlatGradRow* flat_or_null = flat.from.empty() ? nullptr : &flat;
      ctx.ParallelFor(p.in.n, in_image + out_image, [&](int64_t begin, int64_t end) {
        // The flat rows' scratch (one output row's taps), one per shard.
        std::vector<int32_t> at(flat.outputs);
        for (int64_t b = begin; b < end; ++b) {
          float* dxb = d + b * in_image;
          if (zero_first) std::fill(dxb, dxb + in_image, 0.0f);
          if (overlap) {
            MaxPoolGradWorkspaceImage<true, kKernel>(p, wd + b * out_image, g + b * out_image, dxb,
                                                     flat_or_null, at.data());
          } else {
            MaxPoolGradWorkspaceImage<false, kKernel>(p, wd + b * out_image, g + b * out_image, dxb,
                                                      flat_or_null, at.data());
          }
        }
      });
    });
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
};

class AvgPoolGradKernel final : public PoolKernel {
 public:
  explicit AvgPoolGradKernel(const Node& node)
      : PoolKernel(node, PoolKind::kAvg, PoolPass::kBackward) {}
  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& sizes = ctx.input(0);
    const Tensor& dy = ctx.input(1);
    if (sizes.rank() != 1 || sizes.num_elements() != 4) {
      return errors::InvalidArgument(op,
                                     ": orig_input_shape must be a vector of 4 sizes, but "
                                     "has shape ",
                                     sizes.shape().ToString());
    }
    FS_RETURN_IF_ERROR(CheckRank4(op, "grad", dy));
    std::vector<int64_t> dims;
    for (int i = 0; i < 4; ++i) dims.push_back(sizes.ElementAsInt64(i));
    if (!ValidateDims(dims).ok()) {
      return errors::InvalidArgument(op,
                                     ": orig_input_shape must hold non-negative sizes, but "
                                     "is [",
                                     dims[0], ",", dims[1], ",", dims[2], ",", dims[3], "]");
    }
    const TensorShape in_shape(dims);
    const Image in = conv::ImageOf(in_shape.dims(), attrs_.format);
    PoolProblem p;
    Status s = MakeProblem(attrs_, in, &p);
    if (!s.ok()) s.Append(StrCat(" (orig_input_shape ", in_shape.ToString(), ")"));
    FS_RETURN_IF_ERROR(s);
    FS_RETURN_IF_ERROR(
        CheckPooledShape(op, "grad", attrs_, in, conv::ImageOf(dy.shape().dims(), attrs_.format)));
    Tensor* dx;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in_shape, &dx));
    if (dx->num_elements() == 0) return Status::OK();
    if (dy.num_elements() == 0) {
      std::memset(dx->raw_data(), 0, dx->bytes());
      return Status::OK();
    }
    bool ran = false;
    FS_RETURN_IF_ERROR(RunOneDnn(
        ctx, p, dy.dtype(),
        [&](const CachedPool& c, int64_t first, int64_t) {
          return c.backward->Execute(ctx, {ImageAt(dy, first), ImageAt(*dx, first)});
        },
        &ran));
    if (ran) return Status::OK();
    return DispatchDType<float, double>(dy.dtype(), op.c_str(), [&]<typename T>() -> Status {
      RefAvgPoolGrad<T>(ctx, p, dy.data<T>(), dx->data<T>());
      return Status::OK();
    });
  }
};

// ---------------------------------------------------------------------------------------------
// Shape functions.

Status PoolShape(InferenceContext& ctx) {
  PartialShape input;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), &attrs));
  Image out;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, conv::ImageOf(input.dims(), attrs.format), &out));
  ctx.set_output(0, PartialShape(conv::DimsOf(out, attrs.format)));
  return Status::OK();
}

Status MaxPoolGradShape(InferenceContext& ctx) {
  PartialShape input, pooled, grad;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &pooled));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 4, &grad));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), &attrs));
  const Image in = conv::ImageOf(input.dims(), attrs.format);
  FS_RETURN_IF_ERROR(CheckPooledShape(ctx.op_type(), "orig_output", attrs, in,
                                      conv::ImageOf(pooled.dims(), attrs.format)));
  FS_RETURN_IF_ERROR(
      CheckPooledShape(ctx.op_type(), "grad", attrs, in, conv::ImageOf(grad.dims(), attrs.format)));
  ctx.set_output(0, input);
  return Status::OK();
}

Status MaxPoolWithWorkspaceShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(PoolShape(ctx));
  ctx.set_output(1, ctx.output(0));
  return Status::OK();
}

Status AvgPoolGradShape(InferenceContext& ctx) {
  PartialShape vec, sizes, grad;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &vec));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &sizes));
  if (!sizes.known_rank()) sizes = PartialShape::UnknownOfRank(4);
  if (sizes.rank() != 4) {
    return errors::InvalidArgument(
        "AvgPoolGrad: orig_input_shape must be a vector of 4 sizes, "
        "but has ",
        sizes.rank(), " entries");
  }
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 4, &grad));
  WindowAttrs attrs;
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), &attrs));
  FS_RETURN_IF_ERROR(CheckPooledShape(ctx.op_type(), "grad", attrs,
                                      conv::ImageOf(sizes.dims(), attrs.format),
                                      conv::ImageOf(grad.dims(), attrs.format)));
  ctx.set_output(0, sizes);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradients.

Status MaxPoolGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MaxPoolGrad", {ctx.input(0), ctx.output(0), ctx.output_grad(0)},
                             conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

// The int32 shape of x: a constant when it is known while building, else a Shape op.
Endpoint ShapeOf(GradientContext& ctx, Endpoint x) {
  const PartialShape& shape = x.node->output_shape(x.index);
  if (!shape.IsFullyDefined()) return ctx.Shape(x);
  std::vector<int32_t> dims;
  for (int64_t d : shape.dims()) dims.push_back(static_cast<int32_t>(d));
  return ctx.Const(Tensor::FromVector<int32_t>(dims, TensorShape{shape.rank()}));
}

Status AvgPoolGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("AvgPoolGrad", {ShapeOf(ctx, ctx.input(0)), ctx.output_grad(0)},
                             conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

// AvgPoolGrad is linear in its gradient input, and its adjoint is average pooling itself.
Status AvgPoolGradGrad(GradientContext& ctx) {
  ctx.SetInputGrad(1, ctx.Op("AvgPool", {ctx.output_grad(0)}, conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

// ---------------------------------------------------------------------------------------------
// Registration.

OpBuilder& PoolAttrDefs(OpBuilder& b, const std::vector<DType>& types, bool explicit_padding) {
  b.TypeAttr("T", types, DType::kFloat32)
      .RequiredAttr("ksize", AttrType::kIntList)
      .RequiredAttr("strides", AttrType::kIntList)
      .RequiredAttr("padding", AttrType::kString);
  if (explicit_padding) b.Attr("explicit_paddings", AttrValue(std::vector<int64_t>{}));
  b.Attr("data_format", "NHWC");
  return b;
}

template <typename K>
void Register(OpBuilder& b, const std::vector<DType>& types, bool explicit_padding) {
  PoolAttrDefs(b, types, explicit_padding).template KernelClass<K>("CPU");
  OpRegistry::Global().Register(b.Build());
}

struct Registrar {
  Registrar() {
    OpBuilder max_pool("MaxPool");
    max_pool.Input("input", "T")
        .Output("output", "T")
        .Shape(PoolShape)
        .Gradient(MaxPoolGrad)
        .Doc("Max pooling over 2-D windows.");
    Register<PoolForwardKernel<PoolKind::kMax>>(max_pool, kNumericTypes, true);

    OpBuilder max_pool_grad("MaxPoolGrad");
    max_pool_grad.Input("orig_input", "T")
        .Input("orig_output", "T")
        .Input("grad", "T")
        .Output("output", "T")
        .Shape(MaxPoolGradShape)
        .NotDifferentiable()
        .Doc("Gradient of MaxPool: each output's gradient goes to its window's first maximum.");
    Register<MaxPoolGradKernel>(max_pool_grad, kFloatTypes, true);

    // Flowstone's own pair, made by the remapper in training graphs (see above).
    OpBuilder pool_ws("_MaxPoolWithWorkspace");
    pool_ws.Input("input", "T")
        .Output("output", "T")
        .Output("workspace", "uint8")
        .Shape(MaxPoolWithWorkspaceShape)
        .NotDifferentiable()
        .Doc(
            "MaxPool, and each window's argmax as its tap in the window, for "
            "_MaxPoolGradWithWorkspace (created by the graph optimizer after gradients are "
            "built).");
    Register<MaxPoolWithWorkspaceKernel>(pool_ws, {DType::kFloat32}, true);

    OpBuilder pool_grad_ws("_MaxPoolGradWithWorkspace");
    pool_grad_ws.Input("orig_input", "T")
        .Input("workspace", "uint8")
        .Input("grad", "T")
        .Output("output", "T")
        .Shape(MaxPoolGradShape)
        .NotDifferentiable()
        .Doc(
            "MaxPoolGrad with each window's argmax read from _MaxPoolWithWorkspace's workspace "
            "(created by the graph optimizer after gradients are built).");
    Register<MaxPoolGradWithWorkspaceKernel>(pool_grad_ws, {DType::kFloat32}, true);

    OpBuilder avg_pool("AvgPool");
    avg_pool.Input("value", "T")
        .Output("output", "T")
        .Shape(PoolShape)
        .Gradient(AvgPoolGrad)
        .Doc("Average pooling over 2-D windows; padding is not counted.");
    Register<PoolForwardKernel<PoolKind::kAvg>>(avg_pool, kFloatTypes, false);

    OpBuilder avg_pool_grad("AvgPoolGrad");
    avg_pool_grad.Input("orig_input_shape", "int32")
        .Input("grad", "T")
        .Output("output", "T")
        .Shape(AvgPoolGradShape)
        .Gradient(AvgPoolGradGrad)
        .Doc("Gradient of AvgPool: each output's gradient spread evenly over its window.");
    Register<AvgPoolGradKernel>(avg_pool_grad, kFloatTypes, false);
  }
} registrar;

}  // namespace
}  // namespace flowstone
