// Fractional pooling (Graham, 2014): FractionalMaxPool and FractionalAvgPool shrink the rows and
// columns of an NHWC image by a non-integer pooling_ratio, pooling over regions of k or k + 1
// rows (and columns) where k = floor(ratio). The forward ops return the region boundaries they
// drew (row_pooling_sequence, col_pooling_sequence: output_size + 1 cumulative offsets from 0 to
// the input size), and the gradient ops FractionalMaxPoolGrad and FractionalAvgPoolGrad take them
// back, so a gradient pools over the regions its forward pass used.
//
// Region i spans rows [seq[i], seq[i + 1]), or [seq[i], seq[i + 1]] when `overlapping` (the last
// region clamped to the image). With pseudo_random the boundaries are ceil(alpha * (i + u)) for
// one uniform u (alpha = input / output); otherwise the region sizes k and k + 1 are shuffled.
// When the ratio divides the size, every region has k rows and no randomness is involved.
//
// Randomness: a generator per kernel (per node per session), seeded from (seed, seed2) when
// `deterministic` (then every run draws the same regions), at random otherwise (each run draws
// new ones). TensorFlow's generator is another one, so seeded regions differ from TensorFlow's
// (docs/COMPAT.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

enum class PoolKind { kMax, kAvg };

// A pooling sequence's region i: rows [start, end] inclusive.
struct Region {
  int64_t start, end;
};

Region RegionOf(const std::vector<int64_t>& seq, size_t i, int64_t size, bool overlapping) {
  const int64_t end = overlapping ? seq[i + 1] : seq[i + 1] - 1;
  return {seq[i], std::min(end, size - 1)};
}

// The cumulative offsets of `output` regions over `input` rows.
std::vector<int64_t> PoolingSequence(int64_t input, int64_t output, bool pseudo_random,
                                     std::mt19937_64& rng) {
  const int64_t k = input / output;
  std::vector<int64_t> diff(output, k);
  if (input % output != 0) {
    if (pseudo_random) {
      // a_i = ceil(alpha * (i + u)) with u in [0, u_max): u_max keeps the first region at most
      // k + 1 rows and the last at least k.
      const double alpha = static_cast<double>(input) / output;
      const double u_max = std::min((k + 2) / alpha - 1, (input + 1 - k) / alpha - (output - 1));
      const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * u_max;
      std::vector<int64_t> boundary(output + 1);
      boundary[0] = 1;
      boundary[output] = input + 1;
      for (int64_t i = 1; i < output; ++i) {
        boundary[i] = static_cast<int64_t>(std::ceil(alpha * (i + u)));
      }
      for (int64_t i = 0; i < output; ++i) diff[i] = boundary[i + 1] - boundary[i];
    } else {
      for (int64_t i = 0; i < input % output; ++i) diff[i] += 1;
      std::shuffle(diff.begin(), diff.end(), rng);
    }
  }
  std::vector<int64_t> seq(output + 1, 0);
  for (int64_t i = 0; i < output; ++i) seq[i + 1] = seq[i] + diff[i];
  return seq;
}

// The pooled size of each of the 4 dimensions, checked as TensorFlow checks it.
Status PooledDims(const std::string& op, const std::vector<double>& ratio, const Dims& in,
                  Dims* out) {
  if (ratio.size() != 4) {
    return errors::InvalidArgument(op, ": pooling_ratio must have 4 elements (one per NHWC ",
                                   "dimension), got ", ratio.size());
  }
  if (ratio[0] != 1.0 || ratio[3] != 1.0) {
    return errors::Unimplemented(
        op,
        ": Fractional max pooling is not yet supported on the batch nor channel dimension. "
        "pooling_ratio[0] and pooling_ratio[3] must be 1.0");
  }
  out->resize(4);
  for (int d = 0; d < 4; ++d) {
    if (!(ratio[d] >= 1.0)) {  // NaN too
      return errors::InvalidArgument(op,
                                     ": pooling_ratio cannot be smaller than 1, got: ", ratio[d]);
    }
    if (in[d] < 0) {
      (*out)[d] = -1;
      continue;
    }
    (*out)[d] = static_cast<int64_t>(std::floor(in[d] / ratio[d]));
    if ((*out)[d] <= 0) {
      return errors::InvalidArgument(
          op, ": Pooling ratio is higher than input dimension size for dimension ", d,
          ". Input dim size: ", in[d], " pooling ratio: ", ratio[d]);
    }
  }
  return Status::OK();
}

// Pools `in` [N, H, W, C] over the regions of `rows` and `cols` into `out`.
template <typename T>
void PoolForward(PoolKind kind, const Tensor& in, const std::vector<int64_t>& rows,
                 const std::vector<int64_t>& cols, bool overlapping, Tensor* out) {
  const Dims& d = in.shape().dims();
  const int64_t h = d[1], w = d[2], c = d[3];
  const int64_t out_h = static_cast<int64_t>(rows.size()) - 1;
  const int64_t out_w = static_cast<int64_t>(cols.size()) - 1;
  const T* x = in.data<T>();
  T* y = out->data<T>();
  for (int64_t n = 0; n < d[0]; ++n) {
    for (int64_t i = 0; i < out_h; ++i) {
      const Region r = RegionOf(rows, i, h, overlapping);
      for (int64_t j = 0; j < out_w; ++j) {
        const Region s = RegionOf(cols, j, w, overlapping);
        T* cell = y + ((n * out_h + i) * out_w + j) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          double sum = 0;
          T best = std::numeric_limits<T>::lowest();
          for (int64_t a = r.start; a <= r.end; ++a) {
            for (int64_t b = s.start; b <= s.end; ++b) {
              const T v = x[((n * h + a) * w + b) * c + ch];
              best = std::max(best, v);
              sum += double(v);
            }
          }
          const int64_t count = (r.end - r.start + 1) * (s.end - s.start + 1);
          cell[ch] = kind == PoolKind::kMax ? best : T(sum / double(count));
        }
      }
    }
  }
}

class FractionalPoolKernel final : public OpKernel {
 public:
  FractionalPoolKernel(const Node& node, PoolKind kind) : OpKernel(node), kind_(kind) {}

  Status Init() override {
    const AttrMap& attrs = node().attrs();
    ratio_ = attrs.GetOr<std::vector<double>>("pooling_ratio", {});
    pseudo_random_ = attrs.GetOr<bool>("pseudo_random", false);
    overlapping_ = attrs.GetOr<bool>("overlapping", false);
    deterministic_ = attrs.GetOr<bool>("deterministic", false);
    uint64_t seed = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed", 0));
    uint64_t seed2 = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed2", 0));
    if (!deterministic_ && (seed != 0 || seed2 != 0)) {
      return errors::InvalidArgument(node().type(),
                                     ": Both seed and seed2 should be 0 if deterministic is "
                                     "false. Set deterministic=True to pool over seeded regions.");
    }
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      seed = (uint64_t{device()} << 32) | device();
      seed2 = (uint64_t{device()} << 32) | device();
    }
    seed_ = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
             static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
    std::seed_seq seq(seed_.begin(), seed_.end());
    rng_.seed(seq);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const std::string& op = node().type();
    const Tensor& in = ctx.input(0);
    if (in.shape().rank() != 4) {
      return errors::InvalidArgument(op, ": tensor_in must be 4-dimensional [batch, height, ",
                                     "width, channels], got shape ", in.shape().ToString());
    }
    Dims out_dims;
    FS_RETURN_IF_ERROR(PooledDims(op, ratio_, in.shape().dims(), &out_dims));
    std::vector<int64_t> rows, cols;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deterministic_) {
        std::seed_seq seq(seed_.begin(), seed_.end());
        rng_.seed(seq);
      }
      rows = PoolingSequence(in.shape().dim(1), out_dims[1], pseudo_random_, rng_);
      cols = PoolingSequence(in.shape().dim(2), out_dims[2], pseudo_random_, rng_);
    }
    Tensor *out, *row_seq, *col_seq;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(out_dims), &out));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape({out_dims[1] + 1}), &row_seq));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape({out_dims[2] + 1}), &col_seq));
    std::copy(rows.begin(), rows.end(), row_seq->data<int64_t>());
    std::copy(cols.begin(), cols.end(), col_seq->data<int64_t>());
    return DispatchDType<float, double, int32_t, int64_t>(
        in.dtype(), op.c_str(), [&]<typename T>() -> Status {
          PoolForward<T>(kind_, in, rows, cols, overlapping_, out);
          return Status::OK();
        });
  }

 private:
  const PoolKind kind_;
  std::vector<double> ratio_;
  bool pseudo_random_ = false, overlapping_ = false, deterministic_ = false;
  std::vector<uint32_t> seed_;
  std::mutex mu_;
  std::mt19937_64 rng_;
};

Status FractionalPoolShape(InferenceContext& ctx) {
  PartialShape in;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &in));
  if (!in.known_rank()) {
    for (int i = 0; i < 3; ++i) ctx.set_output(i, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<double> ratio;
  FS_RETURN_IF_ERROR(ctx.GetAttr("pooling_ratio", &ratio));
  Dims out;
  FS_RETURN_IF_ERROR(PooledDims(ctx.op_type(), ratio, in.dims(), &out));
  ctx.set_output(0, PartialShape(out));
  ctx.set_output(1, PartialShape({out[1] < 0 ? -1 : out[1] + 1}));
  ctx.set_output(2, PartialShape({out[2] < 0 ? -1 : out[2] + 1}));
  return Status::OK();
}

// Reads and checks a gradient's pooling sequences against the input's rows and columns.
Status ReadSequences(const std::string& op, const Tensor& row_t, const Tensor& col_t,
                     const Dims& in, const Dims& grad, std::vector<int64_t>* rows,
                     std::vector<int64_t>* cols) {
  const Tensor* seqs[2] = {&row_t, &col_t};
  std::vector<int64_t>* outs[2] = {rows, cols};
  for (int k = 0; k < 2; ++k) {
    const Tensor& s = *seqs[k];
    const char* name = k == 0 ? "row_pooling_sequence" : "col_pooling_sequence";
    if (s.shape().rank() != 1 || s.num_elements() != grad[k + 1] + 1) {
      return errors::InvalidArgument(op, ": ", name, " must be a vector of ", grad[k + 1] + 1,
                                     " offsets (the gradient's dimension ", k + 1,
                                     " plus one), got shape ", s.shape().ToString());
    }
    outs[k]->assign(s.data<int64_t>(), s.data<int64_t>() + s.num_elements());
    for (size_t i = 0; i + 1 < outs[k]->size(); ++i) {
      const int64_t a = (*outs[k])[i], b = (*outs[k])[i + 1];
      if (a < 0 || b <= a || a >= in[k + 1]) {
        return errors::InvalidArgument(op, ": ", name, " must increase from 0 within the ",
                                       "input's size ", in[k + 1], "; got ", a, " then ", b,
                                       " at position ", i);
      }
    }
  }
  return Status::OK();
}

Status CheckGradShapes(const std::string& op, const Dims& in, const Tensor& grad) {
  if (in.size() != 4 || grad.shape().rank() != 4 || grad.shape().dim(0) != in[0] ||
      grad.shape().dim(3) != in[3]) {
    return errors::InvalidArgument(op, ": the input ", TensorShape(in).ToString(),
                                   " and out_backprop ", grad.shape().ToString(),
                                   " must be 4-D with the same batch and channels");
  }
  return Status::OK();
}

// Sends each output's gradient to the first input of its region (row-major) equal to the
// forward output, as TensorFlow does.
Status FractionalMaxPoolGradKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& in = ctx.input(0);
  const Tensor& out = ctx.input(1);
  const Tensor& grad = ctx.input(2);
  const bool overlapping = ctx.attrs().GetOr<bool>("overlapping", false);
  FS_RETURN_IF_ERROR(CheckGradShapes(op, in.shape().dims(), grad));
  if (out.shape() != grad.shape()) {
    return errors::InvalidArgument(op, ": orig_output ", out.shape().ToString(),
                                   " and out_backprop ", grad.shape().ToString(),
                                   " must have the same shape");
  }
  std::vector<int64_t> rows, cols;
  FS_RETURN_IF_ERROR(ReadSequences(op, ctx.input(3), ctx.input(4), in.shape().dims(),
                                   grad.shape().dims(), &rows, &cols));
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &dx));
  return DispatchDType<float, double, int32_t, int64_t>(
      in.dtype(), op.c_str(), [&]<typename T>() -> Status {
        const Dims& d = in.shape().dims();
        const int64_t h = d[1], w = d[2], c = d[3];
        const int64_t out_h = grad.shape().dim(1), out_w = grad.shape().dim(2);
        T* g = dx->data<T>();
        std::fill(g, g + dx->num_elements(), T(0));
        for (int64_t n = 0; n < d[0]; ++n) {
          for (int64_t i = 0; i < out_h; ++i) {
            const Region r = RegionOf(rows, i, h, overlapping);
            for (int64_t j = 0; j < out_w; ++j) {
              const Region s = RegionOf(cols, j, w, overlapping);
              for (int64_t ch = 0; ch < c; ++ch) {
                const int64_t o = ((n * out_h + i) * out_w + j) * c + ch;
                int64_t found = -1;
                for (int64_t a = r.start; a <= r.end && found < 0; ++a) {
                  for (int64_t b = s.start; b <= s.end && found < 0; ++b) {
                    const int64_t x = ((n * h + a) * w + b) * c + ch;
                    if (in.data<T>()[x] == out.data<T>()[o]) found = x;
                  }
                }
                if (found < 0) {
                  return errors::InvalidArgument(
                      op, ": orig_output[", o, "] is not the maximum of any input in its ",
                      "pooling region: pass the forward op's own input, output and sequences");
                }
                g[found] += grad.data<T>()[o];
              }
            }
          }
        }
        return Status::OK();
      });
}

// Spreads each output's gradient evenly over its region.
Status FractionalAvgPoolGradKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& shape = ctx.input(0);
  const Tensor& grad = ctx.input(1);
  const bool overlapping = ctx.attrs().GetOr<bool>("overlapping", false);
  if (shape.shape().rank() != 1 || shape.num_elements() != 4) {
    return errors::InvalidArgument(op, ": orig_input_tensor_shape must be a vector of 4 ",
                                   "elements, got shape ", shape.shape().ToString());
  }
  const Dims in(shape.data<int64_t>(), 4);
  for (int64_t dim : in) {
    if (dim < 0) {
      return errors::InvalidArgument(op,
                                     ": orig_input_tensor_shape has a negative dimension: ", dim);
    }
  }
  FS_RETURN_IF_ERROR(CheckGradShapes(op, in, grad));
  std::vector<int64_t> rows, cols;
  FS_RETURN_IF_ERROR(
      ReadSequences(op, ctx.input(2), ctx.input(3), in, grad.shape().dims(), &rows, &cols));
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(in), &dx));
  return DispatchDType<float, double, int32_t, int64_t>(
      grad.dtype(), op.c_str(), [&]<typename T>() -> Status {
        const int64_t h = in[1], w = in[2], c = in[3];
        const int64_t out_h = grad.shape().dim(1), out_w = grad.shape().dim(2);
        std::vector<double> acc(dx->num_elements(), 0.0);
        for (int64_t n = 0; n < in[0]; ++n) {
          for (int64_t i = 0; i < out_h; ++i) {
            const Region r = RegionOf(rows, i, h, overlapping);
            for (int64_t j = 0; j < out_w; ++j) {
              const Region s = RegionOf(cols, j, w, overlapping);
              const double count = double((r.end - r.start + 1) * (s.end - s.start + 1));
              for (int64_t ch = 0; ch < c; ++ch) {
                const double share =
                    double(grad.data<T>()[((n * out_h + i) * out_w + j) * c + ch]) / count;
                for (int64_t a = r.start; a <= r.end; ++a) {
                  for (int64_t b = s.start; b <= s.end; ++b) {
                    acc[((n * h + a) * w + b) * c + ch] += share;
                  }
                }
              }
            }
          }
        }
        for (size_t k = 0; k < acc.size(); ++k) dx->data<T>()[k] = T(acc[k]);
        return Status::OK();
      });
}

Status FractionalMaxPoolGrad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("overlapping", ctx.node().attrs().GetOr<bool>("overlapping", false));
  ctx.SetInputGrad(
      0, ctx.Op("FractionalMaxPoolGrad",
                {ctx.input(0), ctx.output(0), ctx.output_grad(0), ctx.output(1), ctx.output(2)},
                attrs));
  return ctx.status();
}

Status FractionalAvgPoolGrad(GradientContext& ctx) {
  AttrMap shape_attrs;
  shape_attrs.Set("out_type", DType::kInt64);
  const Endpoint shape = ctx.Op("Shape", {ctx.input(0)}, shape_attrs);
  AttrMap attrs;
  attrs.Set("overlapping", ctx.node().attrs().GetOr<bool>("overlapping", false));
  ctx.SetInputGrad(0, ctx.Op("FractionalAvgPoolGrad",
                             {shape, ctx.output_grad(0), ctx.output(1), ctx.output(2)}, attrs));
  return ctx.status();
}

Status AvgPoolGradShape(InferenceContext& ctx) {
  PartialShape shape;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &shape));
  ctx.set_output(0, shape);
  return Status::OK();
}

OpBuilder FractionalPoolOp(const char* name, PoolKind kind, GradFn grad) {
  OpBuilder b(name);
  b.Input("value", "T")
      .Output("output", "T")
      .Output("row_pooling_sequence", "int64")
      .Output("col_pooling_sequence", "int64")
      .TypeAttr("T", kRealTypes)
      .RequiredAttr("pooling_ratio", AttrType::kFloatList)
      .Attr("pseudo_random", false)
      .Attr("overlapping", false)
      .Attr("deterministic", false)
      .Attr("seed", 0)
      .Attr("seed2", 0)
      .Stateful()
      .Shape(FractionalPoolShape)
      .KernelFactory("CPU",
                     [kind](const Node& node, std::unique_ptr<OpKernel>* out) {
                       auto kernel = std::make_unique<FractionalPoolKernel>(node, kind);
                       FS_RETURN_IF_ERROR(kernel->Init());
                       *out = std::move(kernel);
                       return Status::OK();
                     })
      .Gradient(std::move(grad));
  return b;
}

FS_REGISTER_OP(FractionalPoolOp("FractionalMaxPool", PoolKind::kMax, FractionalMaxPoolGrad)
                   .Doc("Max pooling of NHWC rows and columns by a fractional pooling_ratio, "
                        "with the row and column region boundaries it drew."));
FS_REGISTER_OP(FractionalPoolOp("FractionalAvgPool", PoolKind::kAvg, FractionalAvgPoolGrad)
                   .Doc("Average pooling of NHWC rows and columns by a fractional "
                        "pooling_ratio, with the row and column region boundaries it drew."));

FS_REGISTER_OP(OpBuilder("FractionalMaxPoolGrad")
                   .Input("orig_input", "T")
                   .Input("orig_output", "T")
                   .Input("out_backprop", "T")
                   .Input("row_pooling_sequence", "int64")
                   .Input("col_pooling_sequence", "int64")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .Attr("overlapping", false)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", FractionalMaxPoolGradKernel)
                   .NotDifferentiable()
                   .Doc("FractionalMaxPool's gradient: each output's gradient to the first input "
                        "of its region equal to that output."));

FS_REGISTER_OP(OpBuilder("FractionalAvgPoolGrad")
                   .Input("orig_input_tensor_shape", "int64")
                   .Input("out_backprop", "T")
                   .Input("row_pooling_sequence", "int64")
                   .Input("col_pooling_sequence", "int64")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .Attr("overlapping", false)
                   .Shape(AvgPoolGradShape)
                   .Kernel("CPU", FractionalAvgPoolGradKernel)
                   .NotDifferentiable()
                   .Doc("FractionalAvgPool's gradient: each output's gradient spread evenly over "
                        "its region."));

}  // namespace
}  // namespace flowstone
