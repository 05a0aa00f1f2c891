// Candidate sampling for sampled losses (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
// LogUniformCandidateSampler and UniformCandidateSampler draw `num_sampled` class ids from
// [0, range_max) and report how often each true and sampled class is expected to be drawn;
// ComputeAccidentalHits finds the sampled candidates that equal a row's true classes.
//
// A sampler keeps one generator per kernel (per node per session), seeded from (seed, seed2) as
// TensorFlow's samplers are, so a fresh session with the same seeds replays the same samples and
// each run draws new ones; with seed = seed2 = 0 the generator is seeded at random. Draws are
// sequential (unique sampling rejects repeats), so a run holds the generator's lock.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// A distribution over [0, range): its probabilities and a way to draw from it.
class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual double Probability(int64_t value) const = 0;
  virtual int64_t Sample(std::mt19937_64& rng) const = 0;
};

// P(k) = 1 / range.
class UniformDistribution final : public Distribution {
 public:
  explicit UniformDistribution(int64_t range) : range_(range) {}
  double Probability(int64_t) const override { return 1.0 / double(range_); }
  int64_t Sample(std::mt19937_64& rng) const override {
    return std::uniform_int_distribution<int64_t>(0, range_ - 1)(rng);
  }

 private:
  int64_t range_;
};

// Zipfian: P(k) = (log(k + 2) - log(k + 1)) / log(range + 1), which favours small ids (classes
// sorted by decreasing frequency). Sampled as floor(exp(u * log(range + 1))) - 1.
class LogUniformDistribution final : public Distribution {
 public:
  explicit LogUniformDistribution(int64_t range)
      : range_(range), log_range_(std::log1p(double(range))) {}
  double Probability(int64_t value) const override {
    return (std::log((value + 2.0) / (value + 1.0))) / log_range_;
  }
  int64_t Sample(std::mt19937_64& rng) const override {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const int64_t value = static_cast<int64_t>(std::exp(u * log_range_)) - 1;
    return value % range_;
  }

 private:
  int64_t range_;
  double log_range_;
};

// The expected number of times a class of probability p appears among the samples: p * n for n
// independent draws, or 1 - (1 - p)^tries for unique sampling that took `tries` draws.
double ExpectedCount(double p, int64_t num_sampled, int64_t tries) {
  if (tries == num_sampled) return p * double(num_sampled);
  return -std::expm1(double(tries) * std::log1p(-p));
}

Status CheckTrueClasses(const std::string& op, const Tensor& t, int64_t num_true) {
  if (t.shape().rank() != 2 || t.shape().dim(1) != num_true) {
    return errors::InvalidArgument(op, ": true_classes must be a matrix [batch_size, num_true = ",
                                   num_true, "], but has shape ", t.shape().ToString());
  }
  return Status::OK();
}

class CandidateSamplerKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    const std::string& op = node().type();
    const AttrMap& attrs = node().attrs();
    num_true_ = attrs.GetOr<int64_t>("num_true", 1);
    num_sampled_ = attrs.GetOr<int64_t>("num_sampled", 1);
    unique_ = attrs.GetOr<bool>("unique", false);
    const int64_t range = attrs.GetOr<int64_t>("range_max", 1);
    if (num_true_ < 1 || num_sampled_ < 1 || range < 1) {
      return errors::InvalidArgument(op, ": num_true (", num_true_, "), num_sampled (",
                                     num_sampled_, ") and range_max (", range,
                                     ") must all be at least 1");
    }
    if (unique_ && num_sampled_ > range) {
      return errors::InvalidArgument(op, ": Sampler's range is too small: range_max = ", range,
                                     " but num_sampled = ", num_sampled_,
                                     " unique candidates were requested; lower num_sampled or "
                                     "set unique=False");
    }
    if (op == "LogUniformCandidateSampler") {
      dist_ = std::make_unique<LogUniformDistribution>(range);
    } else {
      dist_ = std::make_unique<UniformDistribution>(range);
    }
    const uint64_t seed = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed", 0));
    const uint64_t seed2 = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed2", 0));
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      rng_.seed((uint64_t{device()} << 32) | device());
    } else {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
      rng_.seed(seq);
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& true_classes = ctx.input(0);
    FS_RETURN_IF_ERROR(CheckTrueClasses(node().type(), true_classes, num_true_));
    Tensor *sampled, *true_expected, *sampled_expected;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{num_sampled_}, &sampled));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, true_classes.shape(), &true_expected));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{num_sampled_}, &sampled_expected));
    int64_t* ids = sampled->data<int64_t>();
    int64_t tries = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (unique_) {
        std::unordered_set<int64_t> seen;
        for (int64_t i = 0; i < num_sampled_;) {
          const int64_t value = dist_->Sample(rng_);
          ++tries;
          if (seen.insert(value).second) ids[i++] = value;
        }
      } else {
        for (int64_t i = 0; i < num_sampled_; ++i) ids[i] = dist_->Sample(rng_);
        tries = num_sampled_;
      }
    }
    const int64_t* classes = true_classes.data<int64_t>();
    float* te = true_expected->data<float>();
    for (int64_t i = 0; i < true_classes.num_elements(); ++i) {
      te[i] = float(ExpectedCount(dist_->Probability(classes[i]), num_sampled_, tries));
    }
    float* se = sampled_expected->data<float>();
    for (int64_t i = 0; i < num_sampled_; ++i) {
      se[i] = float(ExpectedCount(dist_->Probability(ids[i]), num_sampled_, tries));
    }
    return Status::OK();
  }

 private:
  int64_t num_true_ = 1, num_sampled_ = 1;
  bool unique_ = false;
  std::unique_ptr<Distribution> dist_;
  std::mutex mu_;
  std::mt19937_64 rng_;
};

Status CandidateSamplerShape(InferenceContext& ctx) {
  PartialShape true_classes;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &true_classes));
  const int64_t num_true = ctx.attrs().GetOr<int64_t>("num_true", 1);
  const int64_t num_sampled = ctx.attrs().GetOr<int64_t>("num_sampled", 1);
  int64_t true_dim = true_classes.known_rank() ? true_classes.dim(1) : -1;
  FS_RETURN_IF_ERROR(ctx.MergeDim(true_dim, num_true, &true_dim));
  ctx.set_output(0, PartialShape({num_sampled}));
  ctx.set_output(1, PartialShape({true_classes.known_rank() ? true_classes.dim(0) : -1, num_true}));
  ctx.set_output(2, PartialShape({num_sampled}));
  return Status::OK();
}

void RegisterSampler(const char* name, const char* doc) {
  OpRegistry::Global().Register(OpBuilder(name)
                                    .Input("true_classes", "int64")
                                    .Output("sampled_candidates", "int64")
                                    .Output("true_expected_count", "float32")
                                    .Output("sampled_expected_count", "float32")
                                    .RequiredAttr("num_true", AttrType::kInt)
                                    .RequiredAttr("num_sampled", AttrType::kInt)
                                    .RequiredAttr("unique", AttrType::kBool)
                                    .RequiredAttr("range_max", AttrType::kInt)
                                    .Attr("seed", 0)
                                    .Attr("seed2", 0)
                                    .Stateful()
                                    .Shape(CandidateSamplerShape)
                                    .KernelClass<CandidateSamplerKernel>("CPU")
                                    .NotDifferentiable()
                                    .Doc(doc)
                                    .Build());
}

struct SamplerRegistrar {
  SamplerRegistrar() {
    RegisterSampler("LogUniformCandidateSampler",
                    "Samples class ids from [0, range_max) with P(k) = log((k + 2) / (k + 1)) / "
                    "log(range_max + 1).");
    RegisterSampler("UniformCandidateSampler", "Samples class ids uniformly from [0, range_max).");
  }
} sampler_registrar;

// AllCandidateSampler: the classes [0, num_sampled) themselves, each expected once. There is
// nothing random about it; the seeds are accepted for TensorFlow's signature.
Status AllCandidateSamplerKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const int64_t num_true = ctx.attrs().GetOr<int64_t>("num_true", 1);
  const int64_t num_sampled = ctx.attrs().GetOr<int64_t>("num_sampled", 1);
  if (num_true < 1 || num_sampled < 1) {
    return errors::InvalidArgument(op, ": num_true (", num_true, ") and num_sampled (", num_sampled,
                                   ") must be at least 1");
  }
  const Tensor& true_classes = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckTrueClasses(op, true_classes, num_true));
  Tensor *sampled, *true_expected, *sampled_expected;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{num_sampled}, &sampled));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, true_classes.shape(), &true_expected));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{num_sampled}, &sampled_expected));
  for (int64_t i = 0; i < num_sampled; ++i) {
    sampled->data<int64_t>()[i] = i;
    sampled_expected->data<float>()[i] = 1.0f;
  }
  std::fill_n(true_expected->data<float>(), true_expected->num_elements(), 1.0f);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("AllCandidateSampler")
                   .Input("true_classes", "int64")
                   .Output("sampled_candidates", "int64")
                   .Output("true_expected_count", "float32")
                   .Output("sampled_expected_count", "float32")
                   .RequiredAttr("num_true", AttrType::kInt)
                   .RequiredAttr("num_sampled", AttrType::kInt)
                   .RequiredAttr("unique", AttrType::kBool)
                   .Attr("seed", 0)
                   .Attr("seed2", 0)
                   .Shape(CandidateSamplerShape)
                   .Kernel("CPU", AllCandidateSamplerKernel)
                   .NotDifferentiable()
                   .Doc("Samples the classes [0, num_sampled), each with expected count 1."));

// For each row i and each of its true classes that was also sampled, at position j of
// sampled_candidates (the last such position when a candidate repeats): (i, j, -FLT_MAX), the
// weight that removes the hit from the sampled logits.
Status ComputeAccidentalHitsKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const int64_t num_true = ctx.attrs().GetOr<int64_t>("num_true", 1);
  const Tensor& true_classes = ctx.input(0);
  const Tensor& sampled = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckTrueClasses(op, true_classes, num_true));
  if (sampled.shape().rank() != 1) {
    return errors::InvalidArgument(op, ": sampled_candidates must be a vector, but has shape ",
                                   sampled.shape().ToString());
  }
  std::unordered_map<int64_t, int64_t> position;
  const int64_t* ids = sampled.data<int64_t>();
  for (int64_t j = 0; j < sampled.num_elements(); ++j) position[ids[j]] = j;
  std::vector<int32_t> rows;
  std::vector<int64_t> hits;
  const int64_t* classes = true_classes.data<int64_t>();
  const int64_t batch = true_classes.shape().dim(0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t t = 0; t < num_true; ++t) {
      auto found = position.find(classes[i * num_true + t]);
      if (found != position.end()) {
        rows.push_back(static_cast<int32_t>(i));
        hits.push_back(found->second);
      }
    }
  }
  const int64_t count = static_cast<int64_t>(rows.size());
  Tensor *indices, *out_ids, *weights;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{count}, &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{count}, &out_ids));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{count}, &weights));
  for (int64_t k = 0; k < count; ++k) {
    indices->data<int32_t>()[k] = rows[k];
    out_ids->data<int64_t>()[k] = hits[k];
    weights->data<float>()[k] = -FLT_MAX;
  }
  return Status::OK();
}

Status ComputeAccidentalHitsShape(InferenceContext& ctx) {
  PartialShape true_classes, sampled;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 2, &true_classes));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &sampled));
  for (int i = 0; i < 3; ++i) ctx.set_output(i, PartialShape({-1}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ComputeAccidentalHits")
                   .Input("true_classes", "int64")
                   .Input("sampled_candidates", "int64")
                   .Output("indices", "int32")
                   .Output("ids", "int64")
                   .Output("weights", "float32")
                   .RequiredAttr("num_true", AttrType::kInt)
                   .Attr("seed", 0)
                   .Attr("seed2", 0)
                   .Shape(ComputeAccidentalHitsShape)
                   .Kernel("CPU", ComputeAccidentalHitsKernel)
                   .NotDifferentiable()
                   .Doc("The (row, sampled position) pairs where a sampled candidate equals one "
                        "of the row's true classes, with weight -FLT_MAX."));

}  // namespace
}  // namespace flowstone
