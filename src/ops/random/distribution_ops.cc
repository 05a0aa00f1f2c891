// Samplers of parameterized distributions: RandomGamma and RandomPoissonV2 (seeded by attrs, a
// new draw each run) and their stateless forms StatelessRandomGammaV2, StatelessRandomPoisson,
// StatelessRandomBinomial and StatelessParameterizedTruncatedNormal (a pure function of the
// `seed` input); and StatelessRandomUniformFullInt, whose words are the stream itself.
//
// Every sampler is a rejection method that consumes a variable number of random words. Output
// element i reads its words from its own range of kBlocksPerSample Philox blocks, so elements
// are drawn in parallel and in any order and the values never depend on the thread count. A
// sample needing more words than its range (probability far below 1e-12 for every method here)
// continues into the next element's range, which only costs independence in that case.
//
// The algorithms are the standard ones: Marsaglia and Tsang's squeeze method for the gamma
// distribution, Knuth's product of uniforms (rate < 10) and Hormann's transformed rejection
// PTRS for Poisson, waiting times (n p < 10) and Hormann's BTRS for the binomial, and Robert's
// exponential or uniform proposals (1995) for the truncated normal's tails. All run in double
// and are cast to the output type. TensorFlow uses the same families of methods but not the
// same streams, so values differ from TensorFlow's for equal seeds (docs/COMPAT.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/random/random_util.h"

namespace flowstone {
namespace {

using random::PhiloxStream;
using random::RandomKernel;
using random::ReadShape;
using random::ReadStatelessSeed;
using random::WordReader;

constexpr uint64_t kBlocksPerSample = 64;  // 256 words
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Each method accepts a proposal with probability well above 1/2 for every valid parameter; a
// sampler that still finds nothing after this many (parameters at the limits of double) gives
// NaN rather than looping on.
constexpr int kMaxAttempts = 1 << 16;

// ---------------------------------------------------------------------------------------------
// Samplers (one value from a reader and the element's parameters)

// Gamma(alpha, 1). For alpha < 1, Gamma(alpha) = Gamma(alpha + 1) * U^(1 / alpha).
double SampleGamma(WordReader& r, double alpha) {
  if (!(alpha > 0) || std::isinf(alpha)) return alpha == 0 ? 0.0 : kNaN;
  double log_boost = 0;
  if (alpha < 1) {
    log_boost = std::log(1 - r.Uniform()) / alpha;
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1 / std::sqrt(9 * d);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const double x = r.Normal();
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = r.Uniform();
    const double x2 = x * x;
    if (u < 1 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1 - v + std::log(v))) {
      return d * v * std::exp(log_boost);
    }
  }
  return kNaN;
}

double SamplePoisson(WordReader& r, double rate) {
  if (std::isnan(rate)) return kNaN;
  if (rate <= 0) return 0;
  if (std::isinf(rate)) return rate;
  if (rate < 10) {
    // Count uniforms until their product drops below exp(-rate).
    const double limit = std::exp(-rate);
    double product = 1;
    for (double k = 0;; ++k) {
      product *= 1 - r.Uniform();
      if (product <= limit) return k;
    }
  }
  const double log_rate = std::log(rate);
  const double b = 0.931 + 2.53 * std::sqrt(rate);
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double v_r = 0.9277 - 3.6224 / (b - 2);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const double u = r.Uniform() - 0.5;
    const double v = r.Uniform();
    const double us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -rate + k * log_rate - std::lgamma(k + 1)) {
      return k;
    }
  }
  return kNaN;
}

double SampleBinomial(WordReader& r, double n, double p) {
  if (std::isnan(n) || std::isnan(p) || n < 0 || p < 0 || p > 1 || std::isinf(n)) return kNaN;
  n = std::floor(n);
  if (n == 0 || p == 0) return 0;
  if (p == 1) return n;
  if (p > 0.5) return n - SampleBinomial(r, n, 1 - p);
  if (n * p < 10) {
    // Successes are the geometric waiting times that fit in n trials.
    const double log_q = std::log1p(-p);
    double trials = 0;
    for (double successes = 0;; ++successes) {
      trials += std::max(1.0, std::ceil(std::log(1 - r.Uniform()) / log_q));
      if (trials > n) return successes;
    }
  }
  const double q = 1 - p;
  const double spq = std::sqrt(n * p * q);
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = n * p + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double alpha = (2.83 + 5.1 / b) * spq;
  const double log_odds = std::log(p / q);
  const double m = std::floor((n + 1) * p);
  const double log_f_m = std::lgamma(m + 1) + std::lgamma(n - m + 1);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const double u = r.Uniform() - 0.5;
    double v = r.Uniform();
    const double us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > n) continue;
    if (us >= 0.07 && v <= v_r) return k;
    v = std::log(v * alpha / (a / (us * us) + b));
    // log(pmf(k) / pmf(m)), exactly.
    if (v <= log_f_m - std::lgamma(k + 1) - std::lgamma(n - k + 1) + (k - m) * log_odds) {
      return k;
    }
  }
  return kNaN;
}

// A standard normal restricted to [lo, hi] with lo >= 0 (the caller mirrors the other side).
double SampleNormalTail(WordReader& r, double lo, double hi) {
  // Written to stay finite for lo up to the largest double: hypot(lo, 2) = sqrt(lo^2 + 4), and
  // lo^2 - lo sqrt(lo^2 + 4) = -4 lo / (lo + sqrt(lo^2 + 4)).
  const double root = std::hypot(lo, 2.0);
  const double lambda = (lo + root) / 2;
  // Robert's rule: a uniform proposal when the interval is shorter than the exponential's reach.
  const bool uniform = hi - lo < 2 / (lo + root) * std::exp(0.5 - lo / (lo + root));
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (uniform) {
      const double z = lo + (hi - lo) * r.Uniform();
      if (std::log(r.Uniform()) <= (lo - z) * (lo + z) / 2) return z;
    } else {
      const double z = lo - std::log(1 - r.Uniform()) / lambda;
      if (z > hi) continue;
      if (std::log(r.Uniform()) <= -(z - lambda) * (z - lambda) / 2) return z;
    }
  }
  return kNaN;
}

double SampleTruncatedNormal(WordReader& r, double mean, double stddev, double lo, double hi) {
  const double a = (lo - mean) / stddev;
  const double b = (hi - mean) / stddev;
  double z;
  if (a >= 0) {
    z = SampleNormalTail(r, a, b);
  } else if (b <= 0) {
    z = -SampleNormalTail(r, -b, -a);
  } else if (b - a < std::sqrt(2 * std::numbers::pi)) {
    // A short interval around 0: uniform proposals accepted with the normal's density.
    do {
      z = a + (b - a) * r.Uniform();
    } while (std::log(r.Uniform()) > -z * z / 2);
  } else {
    do {
      z = r.Normal();
    } while (z < a || z > b);
  }
  return mean + stddev * z;
}

// ---------------------------------------------------------------------------------------------
// Parameters broadcast to the output

// A parameter tensor read as doubles, indexed by the flat output index under numpy broadcasting.
class Param {
 public:
  Status Init(const char* name, const Tensor& value, const TensorShape& out) {
    const int rank = out.rank();
    if (value.rank() > rank) {
      return BroadcastError(name, value, out);
    }
    values_.resize(value.num_elements());
    for (int64_t i = 0; i < value.num_elements(); ++i) values_[i] = value.ElementAsDouble(i);
    dims_.assign(rank, 1);
    strides_.assign(rank, 0);
    int64_t stride = 1;
    for (int k = rank - 1, j = value.rank() - 1; k >= 0; --k, --j) {
      dims_[k] = out.dim(k);
      const int64_t d = j >= 0 ? value.dim(j) : 1;
      if (d != 1 && d != out.dim(k)) return BroadcastError(name, value, out);
      strides_[k] = d == 1 ? 0 : stride;
      stride *= d;
    }
    return Status::OK();
  }

  double operator()(int64_t flat) const {
    if (values_.size() == 1) return values_[0];
    int64_t offset = 0;
    for (int k = static_cast<int>(dims_.size()) - 1; k >= 0 && flat > 0; --k) {
      offset += (flat % dims_[k]) * strides_[k];
      flat /= dims_[k];
    }
    return values_[offset];
  }

 private:
  static Status BroadcastError(const char* name, const Tensor& value, const TensorShape& out) {
    return errors::InvalidArgument(name, " of shape ", value.shape().ToString(),
                                   " does not broadcast to the output shape ", out.ToString(),
                                   ": its dimensions must match the output's last ones or be 1");
  }

  std::vector<double> values_;
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
};

// Writes a double sample into an output of type T; integer outputs take NaN as 0 and clamp
// infinities (a NaN or infinite parameter has no integer sample).
template <typename T>
T ToOutput(double x) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(x);
  } else {
    if (std::isnan(x)) return 0;
    if (x >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(x);
  }
}

// Fills the output (already allocated) with sample(reader, flat index) for every element, element
// i reading from block base + i * kBlocksPerSample on.
template <typename Sample>
Status FillSamples(KernelContext& ctx, const PhiloxStream& stream, uint64_t base, Tensor* out,
                   int64_t cost, Sample sample) {
  return DispatchDType<float, double, int32_t, int64_t>(
      out->dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        T* data = out->data<T>();
        ctx.ParallelFor(out->num_elements(), cost, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            WordReader reader(stream, base + static_cast<uint64_t>(i) * kBlocksPerSample);
            data[i] = ToOutput<T>(sample(reader, i));
          }
        });
        return Status::OK();
      });
}

constexpr int64_t kSampleCost = 300;

// ---------------------------------------------------------------------------------------------
// Stateful ops: output shape is `shape` followed by the parameter's shape.

enum class Family { kGamma, kPoisson };

template <Family kFamily>
class ParamSamplerKernel final : public RandomKernel {
 public:
  using RandomKernel::RandomKernel;

  Status Compute(KernelContext& ctx) override {
    TensorShape shape;
    FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
    const Tensor& param = ctx.input(1);
    std::vector<int64_t> dims = shape.ToVector();
    for (int i = 0; i < param.rank(); ++i) dims.push_back(param.dim(i));
    FS_RETURN_IF_ERROR(ValidateDims(dims));
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
    Param p;
    FS_RETURN_IF_ERROR(p.Init(kFamily == Family::kGamma ? "alpha" : "rate", param, out->shape()));
    const uint64_t base = Reserve(static_cast<uint64_t>(out->num_elements()) * kBlocksPerSample);
    return FillSamples(ctx, stream(), base, out, kSampleCost, [&](WordReader& r, int64_t i) {
      return kFamily == Family::kGamma ? SampleGamma(r, p(i)) : SamplePoisson(r, p(i));
    });
  }
};

// The output shape `shape` ++ shape(param) of RandomGamma and RandomPoissonV2.
Status ShapeThenParamShape(InferenceContext& ctx) {
  PartialShape vector;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &vector));
  PartialShape shape;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &shape));
  const PartialShape& param = ctx.input(1);
  if (!shape.known_rank() || !param.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = shape.ToVector();
  for (int64_t d : param.ToVector()) dims.push_back(d);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// The sample's derivative with respect to alpha (implicit reparameterization, computed by
// RandomGammaGrad), summed over the sample dimensions: the sample has shape
// shape ++ shape(alpha), so it is seen as [-1] ++ shape(alpha) and reduced over axis 0.
Status RandomGammaGradFn(GradientContext& ctx) {
  const Endpoint alpha = ctx.input(ctx.num_inputs() - 1);
  const Endpoint sample = ctx.output(0);
  const Endpoint flat_shape =
      ctx.Op("ConcatV2", {ctx.Const(Tensor::FromVector<int32_t>({-1}, TensorShape({1}))),
                          ctx.Shape(alpha), ctx.Const(Tensor::Scalar<int32_t>(0))});
  const Endpoint flat_sample = ctx.Op("Reshape", {sample, flat_shape});
  const Endpoint flat_grad = ctx.Op("Reshape", {ctx.output_grad(0), flat_shape});
  const Endpoint partial = ctx.Op("RandomGammaGrad", {alpha, flat_sample});
  ctx.SetInputGrad(ctx.num_inputs() - 1, ctx.Op("Sum", {ctx.Op("Mul", {flat_grad, partial}),
                                                        ctx.Const(Tensor::Scalar<int32_t>(0))}));
  return Status::OK();
}

// Shape and seed types, and the types of parameters and samples.
const std::vector<DType> kIndexDTypes = {DType::kInt32, DType::kInt64};
const std::vector<DType> kParamTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                        DType::kInt64};

FS_REGISTER_OP(OpBuilder("RandomGamma")
                   .Input("shape", "S")
                   .Input("alpha", "T")
                   .Output("output", "T")
                   .Attr("seed", 0)
                   .Attr("seed2", 0)
                   .TypeAttr("S", kIndexDTypes)
                   .TypeAttr("T", kFloatTypes)
                   .Stateful()
                   .Shape(ShapeThenParamShape)
                   .KernelClass<ParamSamplerKernel<Family::kGamma>>("CPU")
                   .Gradient(RandomGammaGradFn)
                   .Doc("Gamma(alpha, 1) samples, `shape` of them for each alpha."));

FS_REGISTER_OP(OpBuilder("RandomPoissonV2")
                   .Input("shape", "S")
                   .Input("rate", "R")
                   .Output("output", "dtype")
                   .Attr("seed", 0)
                   .Attr("seed2", 0)
                   .TypeAttr("S", kIndexDTypes)
                   .TypeAttr("R", kParamTypes, DType::kFloat64)
                   .TypeAttr("dtype", kParamTypes, DType::kInt64)
                   .Stateful()
                   .Shape(ShapeThenParamShape)
                   .KernelClass<ParamSamplerKernel<Family::kPoisson>>("CPU")
                   .NotDifferentiable()
                   .Doc("Poisson(rate) samples, `shape` of them for each rate."));

// ---------------------------------------------------------------------------------------------
// Stateless ops: output shape is `shape`; the parameters broadcast to it.

Status StatelessSetup(KernelContext& ctx, PhiloxStream* stream, Tensor** out) {
  TensorShape shape;
  FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
  FS_RETURN_IF_ERROR(ReadStatelessSeed(ctx.input(1), stream));
  return ctx.AllocateOutput(0, shape, out);
}

Status StatelessGammaKernel(KernelContext& ctx) {
  PhiloxStream stream(0, 0);
  Tensor* out;
  FS_RETURN_IF_ERROR(StatelessSetup(ctx, &stream, &out));
  Param alpha;
  FS_RETURN_IF_ERROR(alpha.Init("alpha", ctx.input(2), out->shape()));
  return FillSamples(ctx, stream, 0, out, kSampleCost,
                     [&](WordReader& r, int64_t i) { return SampleGamma(r, alpha(i)); });
}

Status StatelessPoissonKernel(KernelContext& ctx) {
  PhiloxStream stream(0, 0);
  Tensor* out;
  FS_RETURN_IF_ERROR(StatelessSetup(ctx, &stream, &out));
  Param lam;
  FS_RETURN_IF_ERROR(lam.Init("lam", ctx.input(2), out->shape()));
  return FillSamples(ctx, stream, 0, out, kSampleCost,
                     [&](WordReader& r, int64_t i) { return SamplePoisson(r, lam(i)); });
}

Status StatelessBinomialKernel(KernelContext& ctx) {
  PhiloxStream stream(0, 0);
  Tensor* out;
  FS_RETURN_IF_ERROR(StatelessSetup(ctx, &stream, &out));
  Param counts, probs;
  FS_RETURN_IF_ERROR(counts.Init("counts", ctx.input(2), out->shape()));
  FS_RETURN_IF_ERROR(probs.Init("probs", ctx.input(3), out->shape()));
  return FillSamples(ctx, stream, 0, out, kSampleCost, [&](WordReader& r, int64_t i) {
    return SampleBinomial(r, counts(i), probs(i));
  });
}

Status StatelessTruncatedNormalKernel(KernelContext& ctx) {
  PhiloxStream stream(0, 0);
  Tensor* out;
  FS_RETURN_IF_ERROR(StatelessSetup(ctx, &stream, &out));
  Param means, stddevs, minvals, maxvals;
  FS_RETURN_IF_ERROR(means.Init("means", ctx.input(2), out->shape()));
  FS_RETURN_IF_ERROR(stddevs.Init("stddevs", ctx.input(3), out->shape()));
  FS_RETURN_IF_ERROR(minvals.Init("minvals", ctx.input(4), out->shape()));
  FS_RETURN_IF_ERROR(maxvals.Init("maxvals", ctx.input(5), out->shape()));
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    if (!(stddevs(i) > 0) || !(minvals(i) < maxvals(i))) {
      return errors::InvalidArgument("Invalid parameters for a truncated normal at element ", i,
                                     ": stddev ", stddevs(i), ", minval ", minvals(i), ", maxval ",
                                     maxvals(i), " (need stddev > 0 and minval < maxval)");
    }
  }
  return FillSamples(ctx, stream, 0, out, kSampleCost, [&](WordReader& r, int64_t i) {
    return SampleTruncatedNormal(r, means(i), stddevs(i), minvals(i), maxvals(i));
  });
}

// TensorFlow's stateless ops name their shape type T or S and their seed type Tseed.
Status StatelessOutputShape(InferenceContext& ctx) {
  PartialShape seed;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &seed));
  if (seed.dim(0) >= 0 && seed.dim(0) != 2) {
    return errors::InvalidArgument("seed must have shape [2], not ", seed.ToString());
  }
  PartialShape vector;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &vector));
  PartialShape out;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StatelessRandomGammaV2")
                   .Input("shape", "T")
                   .Input("seed", "Tseed")
                   .Input("alpha", "dtype")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", kFloatTypes)
                   .TypeAttr("T", kIndexDTypes)
                   .TypeAttr("Tseed", kIndexDTypes, DType::kInt64)
                   .Shape(StatelessOutputShape)
                   .Kernel("CPU", StatelessGammaKernel)
                   .Gradient(RandomGammaGradFn)
                   .Doc("Gamma(alpha, 1) samples of shape `shape` (alpha broadcast to it), a pure "
                        "function of shape, seed and alpha."));

FS_REGISTER_OP(OpBuilder("StatelessRandomPoisson")
                   .Input("shape", "T")
                   .Input("seed", "Tseed")
                   .Input("lam", "Rtype")
                   .Output("output", "dtype")
                   .TypeAttr("Rtype", kParamTypes)
                   .TypeAttr("dtype", kParamTypes)
                   .TypeAttr("T", kIndexDTypes)
                   .TypeAttr("Tseed", kIndexDTypes, DType::kInt64)
                   .Shape(StatelessOutputShape)
                   .Kernel("CPU", StatelessPoissonKernel)
                   .NotDifferentiable()
                   .Doc("Poisson(lam) samples of shape `shape` (lam broadcast to it), a pure "
                        "function of shape, seed and lam."));

FS_REGISTER_OP(OpBuilder("StatelessRandomBinomial")
                   .Input("shape", "S")
                   .Input("seed", "Tseed")
                   .Input("counts", "T")
                   .Input("probs", "T")
                   .Output("output", "dtype")
                   .TypeAttr("S", kIndexDTypes)
                   .TypeAttr("Tseed", kIndexDTypes, DType::kInt64)
                   .TypeAttr("T", kParamTypes, DType::kFloat64)
                   .TypeAttr("dtype", kParamTypes, DType::kInt64)
                   .Shape(StatelessOutputShape)
                   .Kernel("CPU", StatelessBinomialKernel)
                   .NotDifferentiable()
                   .Doc("Binomial(counts, probs) samples of shape `shape` (the parameters "
                        "broadcast to it), a pure function of shape, seed and parameters."));

FS_REGISTER_OP(OpBuilder("StatelessParameterizedTruncatedNormal")
                   .Input("shape", "S")
                   .Input("seed", "Tseed")
                   .Input("means", "dtype")
                   .Input("stddevs", "dtype")
                   .Input("minvals", "dtype")
                   .Input("maxvals", "dtype")
                   .Output("output", "dtype")
                   .TypeAttr("S", kIndexDTypes)
                   .TypeAttr("Tseed", kIndexDTypes, DType::kInt64)
                   .TypeAttr("dtype", kFloatTypes)
                   .Shape(StatelessOutputShape)
                   .Kernel("CPU", StatelessTruncatedNormalKernel)
                   .NotDifferentiable()
                   .Doc("Normal(means, stddevs) samples restricted to [minvals, maxvals], of shape "
                        "`shape` (the parameters broadcast to it), a pure function of the "
                        "inputs."));

// Every bit of the output random: the stream's words in order (two per int64).
Status StatelessFullIntKernel(KernelContext& ctx) {
  PhiloxStream stream(0, 0);
  Tensor* out;
  FS_RETURN_IF_ERROR(StatelessSetup(ctx, &stream, &out));
  return DispatchDType<int32_t, int64_t>(
      out->dtype(), "StatelessRandomUniformFullInt", [&]<typename T>() -> Status {
        constexpr int64_t kPer = 16 / sizeof(T);
        const int64_t n = out->num_elements();
        T* data = out->data<T>();
        ctx.ParallelFor((n + kPer - 1) / kPer, 30, [&](int64_t begin, int64_t end) {
          for (int64_t g = begin; g < end; ++g) {
            const random::PhiloxBlock w = stream.Block(static_cast<uint64_t>(g));
            for (int64_t j = 0; j < kPer && g * kPer + j < n; ++j) {
              uint64_t bits = w[j];
              if constexpr (sizeof(T) == 8) bits = (uint64_t{w[2 * j]} << 32) | w[2 * j + 1];
              data[g * kPer + j] = static_cast<T>(bits);
            }
          }
        });
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("StatelessRandomUniformFullInt")
                   .Input("shape", "T")
                   .Input("seed", "Tseed")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", kIndexDTypes, DType::kInt64)
                   .TypeAttr("T", kIndexDTypes)
                   .TypeAttr("Tseed", kIndexDTypes, DType::kInt64)
                   .Shape(StatelessOutputShape)
                   .Kernel("CPU", StatelessFullIntKernel)
                   .NotDifferentiable()
                   .Doc("Integers over the dtype's whole range, a pure function of shape and "
                        "seed."));

}  // namespace
}  // namespace flowstone
