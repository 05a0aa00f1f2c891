// Candidate sampling for sampled losses (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
// LogUniformCandidateSampler, UniformCandidateSampler, LearnedUnigramCandidateSampler and
// FixedUnigramCandidateSampler draw `num_sampled` class ids from [0, range_max) and report how
// often each true and sampled class is expected to be drawn (AllCandidateSampler returns every
// class); ComputeAccidentalHits finds the sampled candidates that equal a row's true classes.
//
// A sampler keeps one generator per kernel (per node per session), seeded from (seed, seed2) as
// TensorFlow's samplers are, so a fresh session with the same seeds replays the same samples and
// each run draws new ones; with seed = seed2 = 0 the generator is seeded at random. Draws are
// sequential (unique sampling rejects repeats), so a run holds the generator's lock.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
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
  // The number of values with a positive probability (what unique sampling can draw).
  virtual int64_t support() const = 0;
  // Learns from the true classes of a batch (the learned unigram distribution only).
  virtual void Update(const int64_t* values, int64_t count) {}
};

// P(k) = 1 / range.
class UniformDistribution final : public Distribution {
 public:
  explicit UniformDistribution(int64_t range) : range_(range) {}
  double Probability(int64_t) const override { return 1.0 / double(range_); }
  int64_t Sample(std::mt19937_64& rng) const override {
    return std::uniform_int_distribution<int64_t>(0, range_ - 1)(rng);
  }
  int64_t support() const override { return range_; }

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
  int64_t support() const override { return range_; }

 private:
  int64_t range_;
  double log_range_;
};

// P(k) = weight[k] / sum(weights): the fixed unigram distribution (weights from counts raised to
// `distortion`), or the learned one (every weight starts at 1 and grows by 1 each time its class
// is a true class). Sampled by binary search over the cumulative weights, rebuilt after updates.
class WeightedDistribution final : public Distribution {
 public:
  explicit WeightedDistribution(std::vector<double> weights) : weights_(std::move(weights)) {
    Rebuild();
  }
  double Probability(int64_t value) const override {
    if (value < 0 || value >= static_cast<int64_t>(weights_.size())) return 0.0;
    return weights_[value] / cumulative_.back();
  }
  int64_t Sample(std::mt19937_64& rng) const override {
    const double u = std::uniform_real_distribution<double>(0.0, cumulative_.back())(rng);
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return std::min<int64_t>(it - cumulative_.begin(), weights_.size() - 1);
  }
  int64_t support() const override { return support_; }
  void Update(const int64_t* values, int64_t count) override {
    for (int64_t i = 0; i < count; ++i) weights_[values[i]] += 1.0;
    Rebuild();
  }

 private:
  void Rebuild() {
    cumulative_.resize(weights_.size());
    double total = 0;
    support_ = 0;
    for (size_t i = 0; i < weights_.size(); ++i) {
      total += weights_[i];
      cumulative_[i] = total;
      if (weights_[i] > 0) ++support_;
    }
  }

  std::vector<double> weights_;
  std::vector<double> cumulative_;
  int64_t support_ = 0;
};

// The weights of FixedUnigramCandidateSampler: 0 for the reserved ids, then count^distortion
// for each unigram (from `unigrams` or the last comma-separated field of each line of
// `vocab_file`), keeping the ids of this shard (id % num_shards == shard).
Status FixedUnigramWeights(const std::string& op, const AttrMap& attrs, int64_t range,
                           std::vector<double>* weights) {
  const std::string vocab_file = attrs.GetOr<std::string>("vocab_file", "");
  const double distortion = attrs.GetOr<double>("distortion", 1.0);
  const int64_t reserved = attrs.GetOr<int64_t>("num_reserved_ids", 0);
  const int64_t num_shards = attrs.GetOr<int64_t>("num_shards", 1);
  const int64_t shard = attrs.GetOr<int64_t>("shard", 0);
  if (num_shards < 1 || shard < 0 || shard >= num_shards || reserved < 0) {
    return errors::InvalidArgument(op, ": need num_shards >= 1, 0 <= shard < num_shards and ",
                                   "num_reserved_ids >= 0, but num_shards = ", num_shards,
                                   ", shard = ", shard, ", num_reserved_ids = ", reserved);
  }
  std::vector<double> counts;
  if (!vocab_file.empty()) {
    std::ifstream in(vocab_file);
    if (!in) {
      return errors::NotFound(op, ": cannot open vocab_file '", vocab_file, "'");
    }
    std::string line;
    for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
      const std::string field = line.substr(line.rfind(',') + 1);
      char* end = nullptr;
      const double count = std::strtod(field.c_str(), &end);
      if (field.empty() || end == field.c_str() || count < 0) {
        return errors::InvalidArgument(op, ": Wrong vocabulary format at line ", line_number,
                                       " of '", vocab_file, "': \"", line,
                                       "\" (expected a non-negative count after the last comma)");
      }
      counts.push_back(count);
    }
  } else {
    for (double count : attrs.GetOr<std::vector<double>>("unigrams", {})) {
      if (count < 0) {
        return errors::InvalidArgument(op, ": unigrams must be non-negative, but one is ", count);
      }
      counts.push_back(count);
    }
  }
  weights->clear();
  int64_t id = 0;
  for (; id < reserved; ++id) {
    if (id % num_shards == shard) weights->push_back(0.0);
  }
  for (double count : counts) {
    if (id % num_shards == shard) weights->push_back(std::pow(count, distortion));
    ++id;
  }
  if (static_cast<int64_t>(weights->size()) != range) {
    return errors::InvalidArgument(
        op, ": range_max (", range, ") must equal the number of ids in shard ", shard, " of ",
        num_shards, ": ", weights->size(), " from ", reserved, " reserved ids and ", counts.size(),
        vocab_file.empty() ? " unigrams" : " vocabulary entries");
  }
  double total = 0;
  for (double w : *weights) total += w;
  if (!(total > 0)) {
    return errors::InvalidArgument(op, ": the unigram weights sum to ", total,
                                   "; at least one class needs a positive count");
  }
  return Status::OK();
}

// The expected number of times a class of probability p appears among the samples: p * n for n
// independent draws, or 1 - (1 - p)^tries for unique sampling that took `tries` draws.
double ExpectedCount(double p, int64_t num_sampled, int64_t tries) {
  if (tries == num_sampled) return p * double(num_sampled);
  return -std::expm1(double(tries) * std::log1p(-p));
}

// true_classes is [batch_size, num_true] and, for a sampler (range >= 0), holds classes of
// [0, range), as TensorFlow checks before it looks up their probabilities.
Status CheckTrueClasses(const std::string& op, const Tensor& t, int64_t num_true,
                        int64_t range = -1) {
  if (t.shape().rank() != 2 || t.shape().dim(1) != num_true) {
    return errors::InvalidArgument(op, ": true_classes must be a matrix [batch_size, num_true = ",
                                   num_true, "], but has shape ", t.shape().ToString());
  }
  const int64_t* classes = t.data<int64_t>();
  for (int64_t i = 0; range >= 0 && i < t.num_elements(); ++i) {
    if (classes[i] < 0 || classes[i] >= range) {
      return errors::InvalidArgument(op, ": `true_candidate` out of range [0, ", range,
                                     "), received ", classes[i]);
    }
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
    range_ = range;
    if (op == "LogUniformCandidateSampler") {
      dist_ = std::make_unique<LogUniformDistribution>(range);
    } else if (op == "UniformCandidateSampler") {
      dist_ = std::make_unique<UniformDistribution>(range);
    } else if (op == "LearnedUnigramCandidateSampler") {
      dist_ = std::make_unique<WeightedDistribution>(std::vector<double>(range, 1.0));
    } else {
      std::vector<double> weights;
      FS_RETURN_IF_ERROR(FixedUnigramWeights(op, attrs, range, &weights));
      dist_ = std::make_unique<WeightedDistribution>(std::move(weights));
    }
    // Unique sampling draws until it has num_sampled distinct classes, so it needs that many
    // classes it can draw.
    if (unique_ && num_sampled_ > dist_->support()) {
      return errors::InvalidArgument(
          op, ": Sampler's range is too small: range_max = ", range, " with ", dist_->support(),
          " classes of positive probability, but num_sampled = ", num_sampled_,
          " unique candidates were requested; lower num_sampled or "
          "set unique=False");
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
    FS_RETURN_IF_ERROR(CheckTrueClasses(node().type(), true_classes, num_true_, range_));
    Tensor *sampled, *true_expected, *sampled_expected;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{num_sampled_}, &sampled));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, true_classes.shape(), &true_expected));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{num_sampled_}, &sampled_expected));
    const int64_t* classes = true_classes.data<int64_t>();
    int64_t* ids = sampled->data<int64_t>();
    int64_t tries = 0;
    // Sampling, the expected counts and the learned distribution's update see one state.
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
    float* te = true_expected->data<float>();
    for (int64_t i = 0; i < true_classes.num_elements(); ++i) {
      te[i] = float(ExpectedCount(dist_->Probability(classes[i]), num_sampled_, tries));
    }
    float* se = sampled_expected->data<float>();
    for (int64_t i = 0; i < num_sampled_; ++i) {
      se[i] = float(ExpectedCount(dist_->Probability(ids[i]), num_sampled_, tries));
    }
    dist_->Update(classes, true_classes.num_elements());
    return Status::OK();
  }

 private:
  int64_t num_true_ = 1, num_sampled_ = 1;
  int64_t range_ = 1;  // range_max: true classes must be in [0, range_)
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

OpBuilder SamplerOp(const char* name, const char* doc) {
  OpBuilder b(name);
  b.Input("true_classes", "int64")
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
      .Doc(doc);
  return b;
}

struct SamplerRegistrar {
  SamplerRegistrar() {
    OpRegistry::Global().Register(
        SamplerOp("LogUniformCandidateSampler",
                  "Samples class ids from [0, range_max) with P(k) = log((k + 2) / (k + 1)) / "
                  "log(range_max + 1).")
            .Build());
    OpRegistry::Global().Register(
        SamplerOp("UniformCandidateSampler", "Samples class ids uniformly from [0, range_max).")
            .Build());
    OpRegistry::Global().Register(
        SamplerOp("LearnedUnigramCandidateSampler",
                  "Samples class ids with probabilities proportional to 1 + the number of times "
                  "each was a true class in earlier runs.")
            .Build());
    OpRegistry::Global().Register(
        SamplerOp("FixedUnigramCandidateSampler",
                  "Samples class ids with probabilities proportional to count ** distortion, "
                  "counts from `unigrams` or `vocab_file`.")
            .Attr("vocab_file", "")
            .Attr("distortion", 1.0f)
            .Attr("num_reserved_ids", 0)
            .Attr("num_shards", 1)
            .Attr("shard", 0)
            .Attr("unigrams", AttrValue(std::vector<double>{}))
            .Build());
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
  FS_RETURN_IF_ERROR(CheckTrueClasses(op, true_classes, num_true, num_sampled));
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
