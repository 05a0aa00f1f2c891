// 3-D pooling: MaxPool3D and AvgPool3D with their gradients MaxPool3DGrad and AvgPool3DGrad,
// over NDHWC or NCDHW volumes.
//
// float32 pooling runs on oneDNN, one image per call with the images spread over the intra-op
// pool; float64, the gradients, and problems oneDNN declines run the loops below (which the
// oneDNN path is tested against).
//
// Average pooling divides by the number of input elements in each window, never counting
// padding; max pooling sends each output's gradient to the first maximum of its window (in
// plane, row, column order), as the 2-D ops do. The loops run in parallel over output planes
// (or input planes for the gradients, so that each thread owns what it writes).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/nn/volume_util.h"
#include "ops/onednn_util.h"

namespace flowstone {
namespace {

using conv::Window;
using volume::Volume;
using volume::VolumeAttrs;
using volume::VolumeStrides;

enum class PoolKind { kMax, kAvg };

bool Known(int64_t d) { return d >= 0; }

Status PoolOutput(const VolumeAttrs& attrs, const Volume& in, Volume* out) {
  out->n = in.n;
  out->c = in.c;
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(
        volume::WindowOutputSize(attrs, d, in.spatial[d], attrs.ksize[d], &out->spatial[d]));
  }
  return Status::OK();
}

// Checks a gradient (or original output) against the pooled shape of `in`.
Status CheckPooledShape(const std::string& op, const char* name, const VolumeAttrs& attrs,
                        const Volume& in, const Volume& got) {
  Volume expected;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, in, &expected));
  const Dims e = volume::DimsOf(expected, attrs.channels_first);
  const Dims g = volume::DimsOf(got, attrs.channels_first);
  for (int i = 0; i < 5; ++i) {
    if (Known(e[i]) && Known(g[i]) && e[i] != g[i]) {
      return errors::InvalidArgument(op, ": ", name, " must have the shape of the pooled input, ",
                                     PartialShape(e).ToString(), ", but has shape ",
                                     PartialShape(g).ToString());
    }
  }
  return Status::OK();
}

struct Problem {
  bool channels_first = false;
  Volume in, out;
  Window win[3];
};

Status MakeProblem(const VolumeAttrs& attrs, const Volume& in, Problem* p) {
  p->channels_first = attrs.channels_first;
  p->in = in;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, in, &p->out));
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(volume::ComputeWindow(attrs, d, in.spatial[d], attrs.ksize[d], &p->win[d]));
  }
  return Status::OK();
}

// The [begin, end) input positions a window covers, clipped to the input.
struct Span {
  int64_t begin, end;
};
inline Span WindowSpan(const Window& w, int64_t out_pos) {
  const int64_t start = out_pos * w.stride - w.pad_before;
  return Span{std::max<int64_t>(start, 0), std::min<int64_t>(start + w.kernel, w.in)};
}

// The output positions whose windows cover input position `in_pos`.
inline Span CoveringOutputs(const Window& w, int64_t in_pos) {
  // Output o covers in_pos when o * stride - pad <= in_pos < o * stride - pad + kernel.
  const int64_t shifted = in_pos + w.pad_before;
  const int64_t first = shifted - w.kernel + 1 <= 0 ? 0 : (shifted - w.kernel) / w.stride + 1;
  const int64_t last = std::min<int64_t>(shifted / w.stride + 1, w.out);
  return Span{first, std::max(first, last)};
}

// Calls fn(b, o[3], span[3]) for every output position of planes [begin, end) of the output.
template <typename Fn>
void ForEachOutput(const Problem& p, int64_t begin, int64_t end, Fn fn) {
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t b = plane / p.out.spatial[0];
    int64_t o[3] = {plane % p.out.spatial[0], 0, 0};
    const Span sz = WindowSpan(p.win[0], o[0]);
    for (o[1] = 0; o[1] < p.out.spatial[1]; ++o[1]) {
      const Span sy = WindowSpan(p.win[1], o[1]);
      for (o[2] = 0; o[2] < p.out.spatial[2]; ++o[2]) {
        const Span spans[3] = {sz, sy, WindowSpan(p.win[2], o[2])};
        fn(b, o, spans);
      }
    }
  }
}

int64_t WindowCost(const Problem& p) {
  return p.win[0].kernel * p.win[1].kernel * p.win[2].kernel * p.in.c * p.out.spatial[1] *
         p.out.spatial[2];
}

template <typename T>
T Lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                              : std::numeric_limits<T>::lowest();
}

// Visits the window of an output position in plane, row, column order.
template <typename Fn>
void ForEachInWindow(const Span spans[3], Fn fn) {
  for (int64_t z = spans[0].begin; z < spans[0].end; ++z) {
    for (int64_t y = spans[1].begin; y < spans[1].end; ++y) {
      for (int64_t x = spans[2].begin; x < spans[2].end; ++x) fn(z, y, x);
    }
  }
}

template <typename T>
void Pool(KernelContext& ctx, PoolKind kind, const Problem& p, const T* x, T* y) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  ctx.ParallelFor(p.out.n * p.out.spatial[0], WindowCost(p), [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.in.c);
    ForEachOutput(p, begin, end, [&](int64_t b, const int64_t o[3], const Span spans[3]) {
      std::fill(acc.begin(), acc.end(), kind == PoolKind::kMax ? Lowest<T>() : T(0));
      ForEachInWindow(spans, [&](int64_t z, int64_t yy, int64_t xx) {
        const int64_t base = xs(b, z, yy, xx, 0);
        for (int64_t c = 0; c < p.in.c; ++c) {
          const T v = x[base + c * xs.c];
          if (kind == PoolKind::kAvg) {
            acc[c] += v;
          } else if (v > acc[c]) {
            acc[c] = v;
          }
        }
      });
      const int64_t count = (spans[0].end - spans[0].begin) * (spans[1].end - spans[1].begin) *
                            (spans[2].end - spans[2].begin);
      const int64_t out_base = ys(b, o[0], o[1], o[2], 0);
      for (int64_t c = 0; c < p.in.c; ++c) {
        y[out_base + c * ys.c] = kind == PoolKind::kAvg ? acc[c] / T(count) : acc[c];
      }
    });
  });
}

// dx: each output's gradient added to its window's first maximum. Runs over batch images in
// parallel (an image's windows overlap, its outputs do not touch other images).
template <typename T>
void MaxPoolGrad(KernelContext& ctx, const Problem& p, const T* x, const T* dy, T* dx) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  std::memset(dx, 0, sizeof(T) * p.in.n * xs.n);
  ctx.ParallelFor(p.in.n, WindowCost(p) * p.out.spatial[0], [&](int64_t begin, int64_t end) {
    std::vector<T> best(p.in.c);
    std::vector<int64_t> where(p.in.c);
    ForEachOutput(p, begin * p.out.spatial[0], end * p.out.spatial[0],
                  [&](int64_t b, const int64_t o[3], const Span spans[3]) {
                    std::fill(best.begin(), best.end(), Lowest<T>());
                    std::fill(where.begin(), where.end(), -1);
                    ForEachInWindow(spans, [&](int64_t z, int64_t yy, int64_t xx) {
                      const int64_t base = xs(b, z, yy, xx, 0);
                      for (int64_t c = 0; c < p.in.c; ++c) {
                        const int64_t k = base + c * xs.c;
                        if (where[c] < 0 || x[k] > best[c]) {
                          best[c] = x[k];
                          where[c] = k;
                        }
                      }
                    });
                    const int64_t out_base = ys(b, o[0], o[1], o[2], 0);
                    for (int64_t c = 0; c < p.in.c; ++c) {
                      if (where[c] >= 0) dx[where[c]] += dy[out_base + c * ys.c];
                    }
                  });
  });
}

// dx: each input position gathers the averaged gradients of the windows covering it.
template <typename T>
void AvgPoolGrad(KernelContext& ctx, const Problem& p, const T* dy, T* dx) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  const int64_t cost = WindowCost(p);
  ctx.ParallelFor(p.in.n * p.in.spatial[0], cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.in.c);
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / p.in.spatial[0];
      const int64_t i[3] = {plane % p.in.spatial[0], 0, 0};
      const Span oz = CoveringOutputs(p.win[0], i[0]);
      for (int64_t iy = 0; iy < p.in.spatial[1]; ++iy) {
        const Span oy = CoveringOutputs(p.win[1], iy);
        for (int64_t ix = 0; ix < p.in.spatial[2]; ++ix) {
          const Span ox = CoveringOutputs(p.win[2], ix);
          std::fill(acc.begin(), acc.end(), T(0));
          for (int64_t z = oz.begin; z < oz.end; ++z) {
            const Span wz = WindowSpan(p.win[0], z);
            for (int64_t y = oy.begin; y < oy.end; ++y) {
              const Span wy = WindowSpan(p.win[1], y);
              for (int64_t x = ox.begin; x < ox.end; ++x) {
                const Span wx = WindowSpan(p.win[2], x);
                const T count = T((wz.end - wz.begin) * (wy.end - wy.begin) * (wx.end - wx.begin));
                const int64_t base = ys(b, z, y, x, 0);
                for (int64_t c = 0; c < p.in.c; ++c) acc[c] += dy[base + c * ys.c] / count;
              }
            }
          }
          const int64_t out_base = xs(b, i[0], iy, ix, 0);
          for (int64_t c = 0; c < p.in.c; ++c) dx[out_base + c * xs.c] = acc[c];
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// oneDNN (float32 forward pooling), one image per call.

struct CachedPool {
  std::optional<onednn::Primitive> primitive;  // empty when oneDNN declined the problem
};

// The forward primitive for one image; throws dnnl::error when oneDNN has none.
onednn::Primitive MakePoolPrimitive(PoolKind kind, const Problem& image) {
  dnnl::memory::dims strides, kernel, dilation, pad_l, pad_r;
  for (const Window& w : image.win) {
    strides.push_back(w.stride);
    kernel.push_back(w.kernel);
    dilation.push_back(0);
    pad_l.push_back(w.pad_before);
    // The right padding that makes oneDNN's floor formula give the output size; 0 for VALID
    // windows that leave input planes unread.
    pad_r.push_back(std::max<int64_t>(w.pad_after, 0));
  }
  const dnnl::memory::desc src = volume::OneDnnDesc(image.in, image.channels_first);
  const dnnl::memory::desc dst = volume::OneDnnDesc(image.out, image.channels_first);
  dnnl::pooling_forward::primitive_desc pd(
      onednn::Engine(), dnnl::prop_kind::forward_inference,
      kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                             : dnnl::algorithm::pooling_avg_exclude_padding,
      src, dst, strides, kernel, dilation, pad_l, pad_r, onednn::DefaultAttr());
  return onednn::Primitive(dnnl::pooling_forward(pd), pd,
                           {{DNNL_ARG_SRC, src, false}, {DNNL_ARG_DST, dst, true}});
}

// ---------------------------------------------------------------------------------------------
// Kernels.

class Pool3DKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Init() override { return volume::ParseVolumeAttrs(node().attrs(), true, &attrs_); }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const bool is_grad = op == "MaxPool3DGrad" || op == "AvgPool3DGrad";
    const bool is_max = op.rfind("Max", 0) == 0;
    TensorShape in_shape;
    if (op == "AvgPool3DGrad") {
      FS_RETURN_IF_ERROR(ReadInputShape(op, ctx.input(0), &in_shape));
    } else {
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "input", ctx.input(0).shape()));
      in_shape = ctx.input(0).shape();
    }
    const Volume in = volume::VolumeOf(in_shape.dims(), attrs_.channels_first);
    Problem p;
    Status s = MakeProblem(attrs_, in, &p);
    if (!s.ok()) s.Append(StrCat(" (input shape ", in_shape.ToString(), ")"));
    FS_RETURN_IF_ERROR(s);
    const Tensor* dy = nullptr;
    if (is_grad) {
      dy = &ctx.input(ctx.num_inputs() - 1);
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "grad", dy->shape()));
      FS_RETURN_IF_ERROR(CheckPooledShape(
          op, "grad", attrs_, in, volume::VolumeOf(dy->shape().dims(), attrs_.channels_first)));
    }
    if (op == "MaxPool3DGrad") {
      if (ctx.input(0).dtype() != dy->dtype()) {
        return errors::Unimplemented(op, ": orig_input (", DTypeName(ctx.input(0).dtype()),
                                     ") and grad (", DTypeName(dy->dtype()),
                                     ") must have the same dtype on the CPU");
      }
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "orig_output", ctx.input(1).shape()));
      FS_RETURN_IF_ERROR(
          CheckPooledShape(op, "orig_output", attrs_, in,
                           volume::VolumeOf(ctx.input(1).shape().dims(), attrs_.channels_first)));
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(
        0, is_grad ? in_shape : TensorShape(volume::DimsOf(p.out, attrs_.channels_first)), &out));
    if (out->num_elements() == 0) return Status::OK();
    return DispatchDType<float, double>(
        ctx.output_type(0), op.c_str(), [&]<typename T>() -> Status {
          if (!is_grad) {
            const PoolKind kind = is_max ? PoolKind::kMax : PoolKind::kAvg;
            if constexpr (std::is_same_v<T, float>) {
              bool ran = false;
              FS_RETURN_IF_ERROR(RunOneDnn(ctx, kind, p, ctx.input(0), out, &ran));
              if (ran) return Status::OK();
            }
            Pool<T>(ctx, kind, p, ctx.input(0).data<T>(), out->data<T>());
          } else if (is_max) {
            MaxPoolGrad<T>(ctx, p, ctx.input(0).data<T>(), dy->data<T>(), out->data<T>());
          } else {
            AvgPoolGrad<T>(ctx, p, dy->data<T>(), out->data<T>());
          }
          return Status::OK();
        });
  }

 private:
  static Status ReadInputShape(const std::string& op, const Tensor& t, TensorShape* out) {
    if (t.rank() != 1 || t.num_elements() != 5) {
      return errors::InvalidArgument(op,
                                     ": orig_input_shape must be a vector of 5 sizes, but "
                                     "has shape ",
                                     t.shape().ToString());
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < 5; ++i) dims.push_back(t.ElementAsInt64(i));
    if (!ValidateDims(dims).ok()) {
      return errors::InvalidArgument(op,
                                     ": orig_input_shape must hold non-negative sizes, but "
                                     "is ",
                                     TensorShape(dims).ToString());
    }
    *out = TensorShape(dims);
    return Status::OK();
  }

  // Pools image by image through oneDNN; *ran stays false when it is disabled or declines.
  Status RunOneDnn(KernelContext& ctx, PoolKind kind, const Problem& p, const Tensor& x, Tensor* y,
                   bool* ran) {
    if (!onednn::Enabled() || x.num_elements() == 0) return Status::OK();
    Problem image = p;
    image.in.n = image.out.n = 1;
    std::shared_ptr<const CachedPool> cached;
    FS_RETURN_IF_ERROR(cache_.Get(
        {image.in.spatial[0], image.in.spatial[1], image.in.spatial[2], image.in.c},
        [&](CachedPool* c) {
          onednn::OneOpenMpThread one_thread;
          // oneDNN declines some problems; the reference loops handle every one.
          (void)onednn::Guard("create a 3-D pooling primitive",
                              [&] { c->primitive.emplace(MakePoolPrimitive(kind, image)); });
          return Status::OK();
        },
        &cached));
    if (!cached->primitive) return Status::OK();
    const int64_t in_bytes = static_cast<int64_t>(x.bytes()) / p.in.n;
    const int64_t out_bytes = static_cast<int64_t>(y->bytes()) / p.in.n;
    std::mutex mu;
    Status status;
    ctx.ParallelFor(p.in.n, WindowCost(p) * p.out.spatial[0], [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        Status s =
            cached->primitive->Execute(ctx, {static_cast<char*>(x.raw_data()) + b * in_bytes,
                                             static_cast<char*>(y->raw_data()) + b * out_bytes});
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (status.ok()) status = s;
        }
      }
    });
    FS_RETURN_IF_ERROR(status);
    *ran = true;
    return Status::OK();
  }

  VolumeAttrs attrs_;
  onednn::ShapeCache<CachedPool> cache_;
};

// ---------------------------------------------------------------------------------------------
// Shape functions.

Status PoolShape(InferenceContext& ctx) {
  PartialShape input;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 5, &input));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), true, &attrs));
  Volume out;
  FS_RETURN_IF_ERROR(PoolOutput(attrs, volume::VolumeOf(input.dims(), attrs.channels_first), &out));
  ctx.set_output(0, PartialShape(volume::DimsOf(out, attrs.channels_first)));
  return Status::OK();
}

Status MaxPoolGradShape(InferenceContext& ctx) {
  PartialShape input, pooled, grad;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 5, &input));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 5, &pooled));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 5, &grad));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), true, &attrs));
  const Volume in = volume::VolumeOf(input.dims(), attrs.channels_first);
  FS_RETURN_IF_ERROR(CheckPooledShape(ctx.op_type(), "orig_output", attrs, in,
                                      volume::VolumeOf(pooled.dims(), attrs.channels_first)));
  FS_RETURN_IF_ERROR(CheckPooledShape(ctx.op_type(), "grad", attrs, in,
                                      volume::VolumeOf(grad.dims(), attrs.channels_first)));
  ctx.set_output(0, input);
  return Status::OK();
}

Status AvgPoolGradShape(InferenceContext& ctx) {
  PartialShape vec, sizes, grad;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &vec));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &sizes));
  if (!sizes.known_rank()) sizes = PartialShape::UnknownOfRank(5);
  if (sizes.rank() != 5) {
    return errors::InvalidArgument(ctx.op_type(),
                                   ": orig_input_shape must be a vector of 5 sizes, but has ",
                                   sizes.rank(), " entries");
  }
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 5, &grad));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), true, &attrs));
  FS_RETURN_IF_ERROR(CheckPooledShape(ctx.op_type(), "grad", attrs,
                                      volume::VolumeOf(sizes.dims(), attrs.channels_first),
                                      volume::VolumeOf(grad.dims(), attrs.channels_first)));
  ctx.set_output(0, sizes);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradients.

Status MaxPool3DGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MaxPool3DGrad", {ctx.input(0), ctx.output(0), ctx.output_grad(0)},
                             conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

Status AvgPool3DGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("AvgPool3DGrad", {ctx.Shape(ctx.input(0)), ctx.output_grad(0)},
                             conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

// AvgPool3DGrad is linear in its gradient input, and its adjoint is average pooling itself.
Status AvgPool3DGradGradFn(GradientContext& ctx) {
  ctx.SetInputGrad(1, ctx.Op("AvgPool3D", {ctx.output_grad(0)}, conv::PoolGradAttrs(ctx.attrs())));
  return ctx.status();
}

OpBuilder& PoolAttrs(OpBuilder& b) {
  return b.TypeAttr("T", kFloatTypes)
      .RequiredAttr("ksize", AttrType::kIntList)
      .RequiredAttr("strides", AttrType::kIntList)
      .RequiredAttr("padding", AttrType::kString)
      .Attr("data_format", "NDHWC")
      .KernelClass<Pool3DKernel>("CPU");
}

FS_REGISTER_OP(PoolAttrs(OpBuilder("MaxPool3D").Input("input", "T").Output("output", "T"))
                   .Shape(PoolShape)
                   .Gradient(MaxPool3DGradFn)
                   .Doc("Max pooling over 3-D windows."));

FS_REGISTER_OP(PoolAttrs(OpBuilder("AvgPool3D").Input("input", "T").Output("output", "T"))
                   .Shape(PoolShape)
                   .Gradient(AvgPool3DGradFn)
                   .Doc("Average pooling over 3-D windows; padding is not counted."));

FS_REGISTER_OP(PoolAttrs(OpBuilder("MaxPool3DGrad")
                             .Input("orig_input", "TInput")
                             .Input("orig_output", "TInput")
                             .Input("grad", "T")
                             .Output("output", "T"))
                   .TypeAttr("TInput", kFloatTypes, DType::kFloat32)
                   .Shape(MaxPoolGradShape)
                   .NotDifferentiable()
                   .Doc("Gradient of MaxPool3D: each output's gradient goes to its window's "
                        "first maximum."));

FS_REGISTER_OP(PoolAttrs(OpBuilder("AvgPool3DGrad")
                             .Input("orig_input_shape", "int32")
                             .Input("grad", "T")
                             .Output("output", "T"))
                   .Shape(AvgPoolGradShape)
                   .Gradient(AvgPool3DGradGradFn)
                   .Doc("Gradient of AvgPool3D: each output's gradient spread evenly over its "
                        "window."));

}  // namespace
}  // namespace flowstone
