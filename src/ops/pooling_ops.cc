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
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/conv_util.h"
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
