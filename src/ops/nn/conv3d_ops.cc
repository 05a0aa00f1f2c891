// 3-D convolutions: Conv3D with its input and filter backprops Conv3DBackpropInputV2 and
// Conv3DBackpropFilterV2 (which also implement conv3d_transpose), all differentiable twice.
//
// float32 runs on oneDNN, one image of the batch per call with the images spread over the
// intra-op pool (the filter gradient sums per-image partial filters in image order, so results
// do not depend on the thread count). float64, and problems oneDNN declines, run the reference
// loops below, which are also the oracle the oneDNN path is tested against.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/nn/volume_util.h"
#include "ops/onednn_util.h"

namespace flowstone {
namespace {

using conv::InputPos;
using conv::OutputPos;
using conv::Window;
using volume::Volume;
using volume::VolumeAttrs;
using volume::VolumeStrides;

bool Known(int64_t d) { return d >= 0; }

// A filter's dimensions: [planes, rows, cols, in_channels, out_channels].
struct Filter {
  int64_t spatial[3] = {-1, -1, -1};
  int64_t in = -1, out = -1;
  static Filter Of(const Dims& d) { return Filter{{d[0], d[1], d[2]}, d[3], d[4]}; }
  int64_t taps() const { return spatial[0] * spatial[1] * spatial[2]; }
};

// The output volume of convolving `in` with `filter`, -1 where unknown.
Status ConvOutput(const VolumeAttrs& attrs, const Volume& in, const Filter& filter, Volume* out) {
  if (Known(in.c) && Known(filter.in) && in.c != filter.in) {
    return errors::InvalidArgument("Input depth must be equal to filter's in_depth: ", in.c, " vs ",
                                   filter.in,
                                   " (grouped 3-D convolutions are not "
                                   "supported)");
  }
  out->n = in.n;
  out->c = filter.out;
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(
        volume::WindowOutputSize(attrs, d, in.spatial[d], filter.spatial[d], &out->spatial[d]));
  }
  return Status::OK();
}

// Checks out_backprop against the output of convolving `in` with `filter`.
Status CheckBackprop(const std::string& op, const VolumeAttrs& attrs, const Volume& in,
                     const Filter& filter, const Volume& dy) {
  Volume expected;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, in, filter, &expected));
  const int64_t e[5] = {expected.n, expected.spatial[0], expected.spatial[1], expected.spatial[2],
                        expected.c};
  const int64_t g[5] = {dy.n, dy.spatial[0], dy.spatial[1], dy.spatial[2], dy.c};
  for (int i = 0; i < 5; ++i) {
    if (Known(e[i]) && Known(g[i]) && e[i] != g[i]) {
      return errors::InvalidArgument(
          op, ": out_backprop must have the shape of the convolution's output, ",
          PartialShape(volume::DimsOf(expected, attrs.channels_first)).ToString(),
          ", but has shape ", PartialShape(volume::DimsOf(dy, attrs.channels_first)).ToString());
    }
  }
  return Status::OK();
}

// A convolution with every size known.
struct Problem {
  bool channels_first = false;
  Volume in, out;
  Filter filter;
  Window win[3];
};

Status MakeProblem(const VolumeAttrs& attrs, const Volume& in, const Filter& filter, Problem* p) {
  p->channels_first = attrs.channels_first;
  p->in = in;
  p->filter = filter;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, in, filter, &p->out));
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(
        volume::ComputeWindow(attrs, d, in.spatial[d], filter.spatial[d], &p->win[d]));
  }
  return Status::OK();
}

Problem OneImage(Problem p) {
  p.in.n = p.out.n = 1;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Reference implementation.

// Calls fn(tap index, in position per dim) for each filter tap whose input position is inside
// the input, for output position (oz, oy, ox).
template <typename Fn>
void ForEachTap(const Problem& p, const int64_t o[3], Fn fn) {
  const Filter& f = p.filter;
  for (int64_t kz = 0; kz < f.spatial[0]; ++kz) {
    const int64_t iz = InputPos(p.win[0], o[0], kz);
    if (iz < 0) continue;
    for (int64_t ky = 0; ky < f.spatial[1]; ++ky) {
      const int64_t iy = InputPos(p.win[1], o[1], ky);
      if (iy < 0) continue;
      for (int64_t kx = 0; kx < f.spatial[2]; ++kx) {
        const int64_t ix = InputPos(p.win[2], o[2], kx);
        if (ix < 0) continue;
        fn((kz * f.spatial[1] + ky) * f.spatial[2] + kx, iz, iy, ix);
      }
    }
  }
}

template <typename T>
void RefForward(KernelContext& ctx, const Problem& p, const T* x, const T* f, T* y) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  const int64_t tap_size = p.filter.in * p.filter.out;
  const int64_t cost = p.filter.taps() * tap_size * p.out.spatial[1] * p.out.spatial[2];
  ctx.ParallelFor(p.out.n * p.out.spatial[0], cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.out.c);
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / p.out.spatial[0];
      int64_t o[3] = {plane % p.out.spatial[0], 0, 0};
      for (o[1] = 0; o[1] < p.out.spatial[1]; ++o[1]) {
        for (o[2] = 0; o[2] < p.out.spatial[2]; ++o[2]) {
          std::fill(acc.begin(), acc.end(), T(0));
          ForEachTap(p, o, [&](int64_t tap, int64_t iz, int64_t iy, int64_t ix) {
            const T* taps = f + tap * tap_size;
            for (int64_t ic = 0; ic < p.in.c; ++ic) {
              const T v = x[xs(b, iz, iy, ix, ic)];
              const T* w = taps + ic * p.filter.out;
              for (int64_t oc = 0; oc < p.out.c; ++oc) acc[oc] += v * w[oc];
            }
          });
          for (int64_t oc = 0; oc < p.out.c; ++oc) y[ys(b, o[0], o[1], o[2], oc)] = acc[oc];
        }
      }
    }
  });
}

template <typename T>
void RefBackpropInput(KernelContext& ctx, const Problem& p, const T* f, const T* dy, T* dx) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  const Filter& fl = p.filter;
  const int64_t tap_size = fl.in * fl.out;
  const int64_t cost = fl.taps() * tap_size * p.in.spatial[1] * p.in.spatial[2];
  ctx.ParallelFor(p.in.n * p.in.spatial[0], cost, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(p.in.c);
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / p.in.spatial[0], iz = plane % p.in.spatial[0];
      for (int64_t iy = 0; iy < p.in.spatial[1]; ++iy) {
        for (int64_t ix = 0; ix < p.in.spatial[2]; ++ix) {
          std::fill(acc.begin(), acc.end(), T(0));
          for (int64_t kz = 0; kz < fl.spatial[0]; ++kz) {
            const int64_t oz = OutputPos(p.win[0], iz, kz);
            if (oz < 0) continue;
            for (int64_t ky = 0; ky < fl.spatial[1]; ++ky) {
              const int64_t oy = OutputPos(p.win[1], iy, ky);
              if (oy < 0) continue;
              for (int64_t kx = 0; kx < fl.spatial[2]; ++kx) {
                const int64_t ox = OutputPos(p.win[2], ix, kx);
                if (ox < 0) continue;
                const T* taps = f + ((kz * fl.spatial[1] + ky) * fl.spatial[2] + kx) * tap_size;
                const int64_t base = ys(b, oz, oy, ox, 0);
                for (int64_t ic = 0; ic < p.in.c; ++ic) {
                  const T* w = taps + ic * fl.out;
                  T sum = 0;
                  for (int64_t oc = 0; oc < fl.out; ++oc) sum += dy[base + oc * ys.c] * w[oc];
                  acc[ic] += sum;
                }
              }
            }
          }
          for (int64_t ic = 0; ic < p.in.c; ++ic) dx[xs(b, iz, iy, ix, ic)] = acc[ic];
        }
      }
    }
  });
}

template <typename T>
void RefBackpropFilter(KernelContext& ctx, const Problem& p, const T* x, const T* dy, T* df) {
  const VolumeStrides xs(p.in, p.channels_first), ys(p.out, p.channels_first);
  const Filter& fl = p.filter;
  const int64_t tap_size = fl.in * fl.out;
  const int64_t cost = p.out.n * p.out.spatial[0] * p.out.spatial[1] * p.out.spatial[2] * tap_size;
  // Each filter tap owns its slice of df, so taps run in parallel without races.
  ctx.ParallelFor(fl.taps(), cost, [&](int64_t begin, int64_t end) {
    for (int64_t tap = begin; tap < end; ++tap) {
      const int64_t k[3] = {tap / (fl.spatial[1] * fl.spatial[2]),
                            (tap / fl.spatial[2]) % fl.spatial[1], tap % fl.spatial[2]};
      T* slice = df + tap * tap_size;
      std::fill(slice, slice + tap_size, T(0));
      for (int64_t b = 0; b < p.out.n; ++b) {
        for (int64_t oz = 0; oz < p.out.spatial[0]; ++oz) {
          const int64_t iz = InputPos(p.win[0], oz, k[0]);
          if (iz < 0) continue;
          for (int64_t oy = 0; oy < p.out.spatial[1]; ++oy) {
            const int64_t iy = InputPos(p.win[1], oy, k[1]);
            if (iy < 0) continue;
            for (int64_t ox = 0; ox < p.out.spatial[2]; ++ox) {
              const int64_t ix = InputPos(p.win[2], ox, k[2]);
              if (ix < 0) continue;
              const int64_t base = ys(b, oz, oy, ox, 0);
              for (int64_t ic = 0; ic < p.in.c; ++ic) {
                const T v = x[xs(b, iz, iy, ix, ic)];
                T* w = slice + ic * fl.out;
                for (int64_t oc = 0; oc < fl.out; ++oc) w[oc] += v * dy[base + oc * ys.c];
              }
            }
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// oneDNN (float32), one image per call.

using dnnl::memory;

enum class Pass { kForward, kBackpropInput, kBackpropFilter };

// oneDNN's weights are [out, in, planes, rows, cols]; TensorFlow's layout is dhwio.
memory::desc FilterDesc(const Filter& f, bool any_layout) {
  return memory::desc({f.out, f.in, f.spatial[0], f.spatial[1], f.spatial[2]},
                      memory::data_type::f32,
                      any_layout ? memory::format_tag::any : memory::format_tag::dhwio);
}

struct Geometry {
  memory::dims strides, dilates, pad_l, pad_r;
  explicit Geometry(const Problem& p) {
    for (const Window& w : p.win) {
      strides.push_back(w.stride);
      dilates.push_back(w.dilation - 1);  // oneDNN counts dilation from 0, TensorFlow from 1
      pad_l.push_back(w.pad_before);
      pad_r.push_back(std::max<int64_t>(w.pad_after, 0));
    }
  }
};

dnnl::convolution_forward::primitive_desc ForwardPd(const Problem& p, dnnl::prop_kind prop) {
  const Geometry g(p);
  return dnnl::convolution_forward::primitive_desc(
      onednn::Engine(), prop, dnnl::algorithm::convolution_direct,
      volume::OneDnnDesc(p.in, p.channels_first), FilterDesc(p.filter, true), memory::desc(),
      volume::OneDnnDesc(p.out, p.channels_first), g.strides, g.dilates, g.pad_l, g.pad_r,
      onednn::DefaultAttr());
}

// The primitive for one pass over one image. Throws dnnl::error when oneDNN has none.
onednn::Primitive MakePrimitive(const Problem& p, Pass pass) {
  const memory::desc src = volume::OneDnnDesc(p.in, p.channels_first);
  const memory::desc dst = volume::OneDnnDesc(p.out, p.channels_first);
  const memory::desc weights = FilterDesc(p.filter, false);
  const Geometry g(p);
  switch (pass) {
    case Pass::kForward: {
      auto pd = ForwardPd(p, dnnl::prop_kind::forward_inference);
      return onednn::Primitive(dnnl::convolution_forward(pd), pd,
                               {{DNNL_ARG_SRC, src, false},
                                {DNNL_ARG_WEIGHTS, weights, false},
                                {DNNL_ARG_DST, dst, true}});
    }
    case Pass::kBackpropInput: {
      dnnl::convolution_backward_data::primitive_desc pd(
          onednn::Engine(), dnnl::algorithm::convolution_direct, src, FilterDesc(p.filter, true),
          dst, g.strides, g.dilates, g.pad_l, g.pad_r,
          ForwardPd(p, dnnl::prop_kind::forward_training), onednn::DefaultAttr());
      return onednn::Primitive(dnnl::convolution_backward_data(pd), pd,
                               {{DNNL_ARG_WEIGHTS, weights, false},
                                {DNNL_ARG_DIFF_DST, dst, false},
                                {DNNL_ARG_DIFF_SRC, src, true}});
    }
    case Pass::kBackpropFilter:
      break;
  }
  dnnl::convolution_backward_weights::primitive_desc pd(
      onednn::Engine(), dnnl::algorithm::convolution_direct, src, FilterDesc(p.filter, true), dst,
      g.strides, g.dilates, g.pad_l, g.pad_r, ForwardPd(p, dnnl::prop_kind::forward_training),
      onednn::DefaultAttr());
  return onednn::Primitive(dnnl::convolution_backward_weights(pd), pd,
                           {{DNNL_ARG_SRC, src, false},
                            {DNNL_ARG_DIFF_DST, dst, false},
                            {DNNL_ARG_DIFF_WEIGHTS, weights, true}});
}

// A cached primitive, or nothing when oneDNN declined the problem.
struct CachedConv {
  std::optional<onednn::Primitive> primitive;
};

std::vector<int64_t> ProblemKey(const Problem& p) {
  return {p.in.spatial[0],     p.in.spatial[1],     p.in.spatial[2],     p.in.c,
          p.filter.spatial[0], p.filter.spatial[1], p.filter.spatial[2], p.filter.out};
}

// Bytes between consecutive images of a tensor whose first dimension is the batch.
int64_t ImageBytes(const Tensor& t) {
  return t.dim(0) > 0 ? static_cast<int64_t>(t.bytes()) / t.dim(0) : 0;
}

// ---------------------------------------------------------------------------------------------
// Kernels.

Status ReadSizes(const std::string& op, const char* name, const Tensor& t,
                 std::vector<int64_t>* out) {
  if (t.rank() != 1 || t.num_elements() != 5) {
    return errors::InvalidArgument(op, ": ", name, " must be a vector of 5 sizes, but has shape ",
                                   t.shape().ToString());
  }
  out->clear();
  for (int64_t i = 0; i < 5; ++i) out->push_back(t.ElementAsInt64(i));
  if (!ValidateDims(*out).ok()) {
    return errors::InvalidArgument(op, ": ", name, " must hold non-negative sizes, but is ",
                                   TensorShape(*out).ToString());
  }
  return Status::OK();
}

void FillZero(Tensor* t) { std::memset(t->raw_data(), 0, t->bytes()); }

Status WithShapes(Status s, const std::string& shapes) {
  if (!s.ok()) s.Append(StrCat(" (", shapes, ")"));
  return s;
}

class Conv3DKernel final : public OpKernel {
 public:
  explicit Conv3DKernel(const Node& node)
      : OpKernel(node),
        pass_(node.type() == "Conv3D"                  ? Pass::kForward
              : node.type() == "Conv3DBackpropInputV2" ? Pass::kBackpropInput
                                                       : Pass::kBackpropFilter) {}
  Status Init() override { return volume::ParseVolumeAttrs(node().attrs(), false, &attrs_); }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    Volume in, dy_volume;
    Filter filter;
    std::string shapes;
    std::vector<int64_t> sizes;
    const int dy_input = 2;
    if (pass_ == Pass::kForward) {
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "input", ctx.input(0).shape()));
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "filter", ctx.input(1).shape()));
      in = volume::VolumeOf(ctx.input(0).shape().dims(), attrs_.channels_first);
      filter = Filter::Of(ctx.input(1).shape().dims());
      shapes = StrCat("input shape ", ctx.input(0).shape().ToString(), ", filter shape ",
                      ctx.input(1).shape().ToString());
    } else {
      FS_RETURN_IF_ERROR(volume::CheckRank5(op, "out_backprop", ctx.input(dy_input).shape()));
      dy_volume = volume::VolumeOf(ctx.input(dy_input).shape().dims(), attrs_.channels_first);
      if (pass_ == Pass::kBackpropInput) {
        FS_RETURN_IF_ERROR(ReadSizes(op, "input_sizes", ctx.input(0), &sizes));
        FS_RETURN_IF_ERROR(volume::CheckRank5(op, "filter", ctx.input(1).shape()));
        in = volume::VolumeOf(Dims(sizes), attrs_.channels_first);
        filter = Filter::Of(ctx.input(1).shape().dims());
      } else {
        FS_RETURN_IF_ERROR(volume::CheckRank5(op, "input", ctx.input(0).shape()));
        FS_RETURN_IF_ERROR(ReadSizes(op, "filter_sizes", ctx.input(1), &sizes));
        in = volume::VolumeOf(ctx.input(0).shape().dims(), attrs_.channels_first);
        filter = Filter::Of(Dims(sizes));
      }
      shapes = StrCat("input ", TensorShape(volume::DimsOf(in, attrs_.channels_first)).ToString(),
                      ", filter ",
                      TensorShape({filter.spatial[0], filter.spatial[1], filter.spatial[2],
                                   filter.in, filter.out})
                          .ToString(),
                      ", out_backprop ", ctx.input(dy_input).shape().ToString());
      FS_RETURN_IF_ERROR(WithShapes(CheckBackprop(op, attrs_, in, filter, dy_volume), shapes));
    }
    Problem p;
    FS_RETURN_IF_ERROR(WithShapes(MakeProblem(attrs_, in, filter, &p), shapes));
    Tensor* out;
    switch (pass_) {
      case Pass::kForward:
        FS_RETURN_IF_ERROR(
            ctx.AllocateOutput(0, TensorShape(volume::DimsOf(p.out, attrs_.channels_first)), &out));
        break;
      case Pass::kBackpropInput:
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(sizes), &out));
        break;
      case Pass::kBackpropFilter:
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(sizes), &out));
        break;
    }
    if (out->num_elements() == 0) return Status::OK();
    // An empty tensor input (the sizes vectors never are) contributes nothing.
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.input(i).num_elements() == 0) {
        FillZero(out);
        return Status::OK();
      }
    }
    const DType dtype = ctx.output_type(0);
    if (dtype == DType::kFloat32 && onednn::Enabled()) {
      bool ran = false;
      FS_RETURN_IF_ERROR(RunOneDnn(ctx, p, out, &ran));
      if (ran) return Status::OK();
    }
    return DispatchDType<float, double>(dtype, op.c_str(), [&]<typename T>() -> Status {
      const Tensor& a = ctx.input(0);
      const Tensor& b = ctx.input(1);
      switch (pass_) {
        case Pass::kForward:
          RefForward<T>(ctx, p, a.data<T>(), b.data<T>(), out->data<T>());
          break;
        case Pass::kBackpropInput:
          RefBackpropInput<T>(ctx, p, b.data<T>(), ctx.input(2).data<T>(), out->data<T>());
          break;
        case Pass::kBackpropFilter:
          RefBackpropFilter<T>(ctx, p, a.data<T>(), ctx.input(2).data<T>(), out->data<T>());
          break;
      }
      return Status::OK();
    });
  }

 private:
  // Runs the pass as one oneDNN call per image; *ran stays false when oneDNN declines it.
  Status RunOneDnn(KernelContext& ctx, const Problem& p, Tensor* out, bool* ran) {
    std::shared_ptr<const CachedConv> cached;
    const Problem image = OneImage(p);
    FS_RETURN_IF_ERROR(cache_.Get(
        ProblemKey(image),
        [&](CachedConv* c) {
          onednn::OneOpenMpThread one_thread;
          // oneDNN declines some problems; the reference loops handle every one.
          (void)onednn::Guard("create a 3-D convolution",
                              [&] { c->primitive.emplace(MakePrimitive(image, pass_)); });
          return Status::OK();
        },
        &cached));
    if (!cached->primitive) return Status::OK();
    const int64_t batch = p.in.n;
    const int64_t filter_size = p.filter.taps() * p.filter.in * p.filter.out;
    Tensor partial;
    if (pass_ == Pass::kBackpropFilter) {
      FS_RETURN_IF_ERROR(
          ctx.AllocateTemp(DType::kFloat32, TensorShape{batch, filter_size}, &partial));
    }
    // Pointers to image b of each argument, in the primitive's argument order.
    auto image_args = [&](int64_t b) -> std::vector<void*> {
      auto at = [b](const Tensor& t) {
        return static_cast<void*>(static_cast<char*>(t.raw_data()) + b * ImageBytes(t));
      };
      switch (pass_) {
        case Pass::kForward:
          return {at(ctx.input(0)), ctx.input(1).raw_data(), at(*out)};
        case Pass::kBackpropInput:
          return {ctx.input(1).raw_data(), at(ctx.input(2)), at(*out)};
        case Pass::kBackpropFilter:
          break;
      }
      return {at(ctx.input(0)), at(ctx.input(2)), partial.data<float>() + b * filter_size};
    };
    const int64_t macs = p.out.spatial[0] * p.out.spatial[1] * p.out.spatial[2] * filter_size;
    std::mutex mu;
    Status status;
    ctx.ParallelFor(batch, macs / 8, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        Status s = cached->primitive->Execute(ctx, image_args(b));
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (status.ok()) status = s;
        }
      }
    });
    FS_RETURN_IF_ERROR(status);
    if (pass_ == Pass::kBackpropFilter) {
      // Image by image, in order, so the sum does not depend on the threads.
      float* df = out->data<float>();
      const float* sums = partial.data<float>();
      std::copy(sums, sums + filter_size, df);
      for (int64_t b = 1; b < batch; ++b) {
        for (int64_t k = 0; k < filter_size; ++k) df[k] += sums[b * filter_size + k];
      }
    }
    *ran = true;
    return Status::OK();
  }

  const Pass pass_;
  VolumeAttrs attrs_;
  onednn::ShapeCache<CachedConv> cache_;
};

// ---------------------------------------------------------------------------------------------
// Shape functions.

Status ForwardShape(InferenceContext& ctx) {
  PartialShape input, filter;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 5, &input));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 5, &filter));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), false, &attrs));
  Volume out;
  FS_RETURN_IF_ERROR(ConvOutput(attrs, volume::VolumeOf(input.dims(), attrs.channels_first),
                                Filter::Of(filter.dims()), &out));
  ctx.set_output(0, PartialShape(volume::DimsOf(out, attrs.channels_first)));
  return Status::OK();
}

// Reads a 5-entry shape argument while building: its known entries, or unknown ones.
Status SizesShape(InferenceContext& ctx, int i, const char* name, PartialShape* out) {
  PartialShape vec;
  FS_RETURN_IF_ERROR(ctx.WithRank(i, 1, &vec));
  FS_RETURN_IF_ERROR(ctx.InputAsShape(i, out));
  if (!out->known_rank()) {
    *out = PartialShape::UnknownOfRank(5);
  } else if (out->rank() != 5) {
    return errors::InvalidArgument(ctx.op_type(), ": ", name,
                                   " must be a vector of 5 sizes, but has ", out->rank(),
                                   " entries");
  }
  return Status::OK();
}

Status BackpropInputShape(InferenceContext& ctx) {
  PartialShape sizes, filter, dy;
  FS_RETURN_IF_ERROR(SizesShape(ctx, 0, "input_sizes", &sizes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 5, &filter));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 5, &dy));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), false, &attrs));
  FS_RETURN_IF_ERROR(
      CheckBackprop(ctx.op_type(), attrs, volume::VolumeOf(sizes.dims(), attrs.channels_first),
                    Filter::Of(filter.dims()), volume::VolumeOf(dy.dims(), attrs.channels_first)));
  ctx.set_output(0, sizes);
  return Status::OK();
}

Status BackpropFilterShape(InferenceContext& ctx) {
  PartialShape input, sizes, dy;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 5, &input));
  FS_RETURN_IF_ERROR(SizesShape(ctx, 1, "filter_sizes", &sizes));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 5, &dy));
  VolumeAttrs attrs;
  FS_RETURN_IF_ERROR(volume::ParseVolumeAttrs(ctx.attrs(), false, &attrs));
  FS_RETURN_IF_ERROR(
      CheckBackprop(ctx.op_type(), attrs, volume::VolumeOf(input.dims(), attrs.channels_first),
                    Filter::Of(sizes.dims()), volume::VolumeOf(dy.dims(), attrs.channels_first)));
  ctx.set_output(0, sizes);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Gradients: every pass is linear in each of its two tensor inputs, so each one's gradients are
// the other two passes with the same attrs (as for the 2-D convolutions).

Status ForwardGrad(GradientContext& ctx) {
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint x = ctx.input(0), f = ctx.input(1), dy = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Conv3DBackpropInputV2", {ctx.Shape(x), f, dy}, attrs));
  ctx.SetInputGrad(1, ctx.Op("Conv3DBackpropFilterV2", {x, ctx.Shape(f), dy}, attrs));
  return ctx.status();
}

Status BackpropInputGrad(GradientContext& ctx) {
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint f = ctx.input(1), dy = ctx.input(2), g = ctx.output_grad(0);
  ctx.SetInputGrad(1, ctx.Op("Conv3DBackpropFilterV2", {g, ctx.Shape(f), dy}, attrs));
  ctx.SetInputGrad(2, ctx.Op("Conv3D", {g, f}, attrs));
  return ctx.status();
}

Status BackpropFilterGrad(GradientContext& ctx) {
  const AttrMap attrs = conv::ConvGradAttrs(ctx.attrs());
  const Endpoint x = ctx.input(0), dy = ctx.input(2), g = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Conv3DBackpropInputV2", {ctx.Shape(x), g, dy}, attrs));
  ctx.SetInputGrad(2, ctx.Op("Conv3D", {x, g}, attrs));
  return ctx.status();
}

OpBuilder& Conv3DAttrs(OpBuilder& b) {
  return b.TypeAttr("T", kFloatTypes)
      .RequiredAttr("strides", AttrType::kIntList)
      .RequiredAttr("padding", AttrType::kString)
      .Attr("data_format", "NDHWC")
      .Attr("dilations", AttrValue(std::vector<int64_t>{1, 1, 1, 1, 1}));
}

FS_REGISTER_OP(
    Conv3DAttrs(OpBuilder("Conv3D").Input("input", "T").Input("filter", "T").Output("output", "T"))
        .Shape(ForwardShape)
        .KernelClass<Conv3DKernel>("CPU")
        .Gradient(ForwardGrad)
        .Doc("3-D convolution of an NDHWC or NCDHW input with a DHWIO filter."));

FS_REGISTER_OP(Conv3DAttrs(OpBuilder("Conv3DBackpropInputV2")
                               .Input("input_sizes", "Tshape")
                               .Input("filter", "T")
                               .Input("out_backprop", "T")
                               .Output("output", "T"))
                   .TypeAttr("Tshape", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .Shape(BackpropInputShape)
                   .KernelClass<Conv3DKernel>("CPU")
                   .Gradient(BackpropInputGrad)
                   .Doc("Gradient of Conv3D with respect to its input; also the transposed 3-D "
                        "convolution."));

FS_REGISTER_OP(Conv3DAttrs(OpBuilder("Conv3DBackpropFilterV2")
                               .Input("input", "T")
                               .Input("filter_sizes", "int32")
                               .Input("out_backprop", "T")
                               .Output("output", "T"))
                   .Shape(BackpropFilterShape)
                   .KernelClass<Conv3DKernel>("CPU")
                   .Gradient(BackpropFilterGrad)
                   .Doc("Gradient of Conv3D with respect to its filter."));

}  // namespace
}  // namespace flowstone
