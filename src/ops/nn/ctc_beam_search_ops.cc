// CTCBeamSearchDecoder: prefix beam search over time-major logits [max_time, batch, num_classes]
// (the last class is the blank), keeping the beam_width most likely label prefixes and returning
// the top_paths best of them as sparse [batch, max_decoded_length] tensors with their log
// probabilities. With a beam as wide as the number of prefixes, the paths are the most likely
// label sequences and their probabilities exact sums over every frame-level path.
//
// The prefixes form a tree (a prefix's children append one label). Each prefix carries the log
// probability of the frames so far ending in a blank and ending in its last label; one frame
// updates the prefixes in the beam and then proposes their children. The details follow
// TensorFlow's decoder so that the same beams come out: each frame is log-softmax normalized; a
// repeated label (a child with its parent's label) extends only the parent's paths ending in a
// blank; a prefix that drops out of the beam stops feeding its children; and a child enters a
// full beam only when it beats the beam's worst prefix, which then leaves.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/nn/ctc_util.h"

namespace flowstone {
namespace {

constexpr double kLogZero = -std::numeric_limits<double>::infinity();
// The most prefixes one entry's search may create: a beam far wider than its inputs need (the
// prefixes grow as num_classes ** time) fails with ResourceExhausted instead of exhausting memory.
constexpr int64_t kMaxPrefixes = int64_t{1} << 24;

double LogSumExp(double a, double b) {
  if (a == kLogZero) return b;
  if (b == kLogZero) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

struct Probability {
  double total = kLogZero;
  double blank = kLogZero;  // paths ending in a blank
  double label = kLogZero;  // paths ending in the prefix's last label
  void Reset() { total = blank = label = kLogZero; }
};

struct Prefix {
  Prefix* parent = nullptr;
  int label = -1;  // the root has none
  Probability old_p, new_p;
  std::vector<std::unique_ptr<Prefix>> children;  // created when first expanded
  // In the beam (a prefix that drops out is reset).
  bool Active() const { return new_p.total != kLogZero; }
};

// One batch entry's search.
class BeamSearch {
 public:
  BeamSearch(int num_classes, int64_t beam_width)
      : num_classes_(num_classes), beam_width_(static_cast<size_t>(beam_width)) {
    root_.new_p.total = 0.0;
    root_.new_p.blank = 0.0;
    beam_.push_back(&root_);
  }

  // One frame of log probabilities (num_classes of them, normalized).
  Status Step(const std::string& op, const std::vector<double>& frame) {
    const int blank = num_classes_ - 1;
    std::vector<Prefix*> prefixes = SortedBeam();
    beam_.clear();
    for (Prefix* p : prefixes) p->old_p = p->new_p;
    // Extend each prefix in the beam by the frame without adding a label.
    for (Prefix* p : prefixes) {
      if (p->parent != nullptr) {
        if (p->parent->Active()) {
          const double from_parent =
              p->label == p->parent->label ? p->parent->old_p.blank : p->parent->old_p.total;
          p->new_p.label = LogSumExp(p->new_p.label, from_parent);
        }
        p->new_p.label += frame[p->label];
      }
      p->new_p.blank = p->old_p.total + frame[blank];
      p->new_p.total = LogSumExp(p->new_p.blank, p->new_p.label);
      beam_.push_back(p);
    }
    // Propose one more label after each prefix good enough to still be in the beam.
    auto is_candidate = [&](const Probability& prob) {
      return prob.total > kLogZero &&
             (beam_.size() < beam_width_ || prob.total > Bottom()->new_p.total);
    };
    for (Prefix* p : prefixes) {
      if (!is_candidate(p->old_p)) continue;
      if (p->children.empty()) {
        prefixes_made_ += num_classes_ - 1;
        if (prefixes_made_ > kMaxPrefixes) {
          return errors::ResourceExhausted(
              op, ": the beam search made more than ", kMaxPrefixes,
              " label prefixes for one batch entry; lower beam_width (", beam_width_, ")");
        }
        for (int label = 0; label < num_classes_ - 1; ++label) {
          p->children.push_back(std::make_unique<Prefix>());
          p->children.back()->parent = p;
          p->children.back()->label = label;
        }
      }
      for (auto& child : p->children) {
        Prefix* c = child.get();
        if (c->Active()) continue;  // in the beam already: extended above
        c->new_p.blank = kLogZero;
        const double from_parent = c->label == p->label ? p->old_p.blank : p->old_p.total;
        c->new_p.label = frame[c->label] + from_parent;
        if (frame[c->label] == kLogZero) continue;  // an impossible label
        c->new_p.total = c->new_p.label;
        if (is_candidate(c->new_p)) {
          if (beam_.size() == beam_width_) {
            auto bottom = BottomIt();
            (*bottom)->new_p.Reset();
            beam_.erase(bottom);
          }
          beam_.push_back(c);
        } else {
          c->old_p.Reset();
          c->new_p.Reset();
        }
      }
    }
    return Status::OK();
  }

  // The best `n` prefixes' labels (runs of one label merged when merge_repeated) and log
  // probabilities, best first.
  Status TopPaths(const std::string& op, int64_t n, bool merge_repeated,
                  std::vector<std::vector<int64_t>>* paths, std::vector<double>* log_probs) const {
    if (static_cast<size_t>(n) > beam_width_) {
      return errors::InvalidArgument(op, ": requested more paths than the beam width (top_paths ",
                                     n, " > beam_width ", beam_width_, ").");
    }
    if (static_cast<size_t>(n) > beam_.size()) {
      return errors::InvalidArgument(
          op, ": Less leaves in the beam search than requested: top_paths is ", n, " but only ",
          beam_.size(), " prefixes survived; ask for fewer paths or widen the beam.");
    }
    const std::vector<Prefix*> sorted = SortedBeam();
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> labels;
      int previous = -1;
      for (const Prefix* p = sorted[i]; p->parent != nullptr; p = p->parent) {
        if (!merge_repeated || p->label != previous) labels.push_back(p->label);
        previous = p->label;
      }
      std::reverse(labels.begin(), labels.end());
      paths->push_back(std::move(labels));
      log_probs->push_back(sorted[i]->new_p.total);
    }
    return Status::OK();
  }

 private:
  // A prefix's rank in the beam: its probability, NaN (from non-finite logits) lowest.
  static double Rank(const Prefix* p) {
    return std::isnan(p->new_p.total) ? kLogZero : p->new_p.total;
  }
  std::vector<Prefix*> SortedBeam() const {
    std::vector<Prefix*> sorted = beam_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Prefix* a, const Prefix* b) { return Rank(a) > Rank(b); });
    return sorted;
  }
  std::vector<Prefix*>::iterator BottomIt() {
    return std::min_element(beam_.begin(), beam_.end(),
                            [](const Prefix* a, const Prefix* b) { return Rank(a) < Rank(b); });
  }
  const Prefix* Bottom() { return *BottomIt(); }

  const int num_classes_;
  const size_t beam_width_;
  int64_t prefixes_made_ = 0;
  Prefix root_;
  std::vector<Prefix*> beam_;
};

Status BeamSearchDecoderKernel(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& logits = ctx.input(0);
  const Tensor& lengths = ctx.input(1);
  FS_RETURN_IF_ERROR(ctc::CheckLogitsAndLengths(ctx, logits, lengths));
  const int64_t batch = logits.shape().dim(1);
  const int num_classes = static_cast<int>(logits.shape().dim(2));
  const int64_t beam_width = ctx.attrs().GetOr<int64_t>("beam_width", 1);
  const int64_t top_paths = ctx.attrs().GetOr<int64_t>("top_paths", 1);
  const bool merge_repeated = ctx.attrs().GetOr<bool>("merge_repeated", true);
  if (beam_width < 1 || top_paths < 1) {
    return errors::InvalidArgument(op, ": beam_width (", beam_width, ") and top_paths (", top_paths,
                                   ") must be at least 1");
  }
  // paths[p][b]: the labels of entry b's p-th best path.
  std::vector<std::vector<std::vector<int64_t>>> paths(top_paths,
                                                       std::vector<std::vector<int64_t>>(batch));
  Tensor* log_probability;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(3 * top_paths, TensorShape({batch, top_paths}), &log_probability));
  const Status searched =
      DispatchDType<float, double>(logits.dtype(), op.c_str(), [&]<typename T>() -> Status {
        std::vector<double> frame(num_classes);
        for (int64_t b = 0; b < batch; ++b) {
          BeamSearch search(num_classes, beam_width);
          for (int64_t t = 0; t < lengths.data<int32_t>()[b]; ++t) {
            const T* row = logits.data<T>() + (t * batch + b) * num_classes;
            const double max = *std::max_element(row, row + num_classes);
            double sum = 0;
            for (int c = 0; c < num_classes; ++c) sum += std::exp(double(row[c]) - max);
            const double log_norm = max + std::log(sum);
            for (int c = 0; c < num_classes; ++c) frame[c] = double(row[c]) - log_norm;
            FS_RETURN_IF_ERROR(search.Step(op, frame));
          }
          std::vector<std::vector<int64_t>> best;
          std::vector<double> log_probs;
          FS_RETURN_IF_ERROR(search.TopPaths(op, top_paths, merge_repeated, &best, &log_probs));
          for (int64_t p = 0; p < top_paths; ++p) {
            paths[p][b] = std::move(best[p]);
            log_probability->data<T>()[b * top_paths + p] = T(log_probs[p]);
          }
        }
        return Status::OK();
      });
  FS_RETURN_IF_ERROR(searched);
  // Path p's sparse tensor: outputs p (indices), top_paths + p (values), 2 * top_paths + p.
  for (int64_t p = 0; p < top_paths; ++p) {
    int64_t total = 0, longest = 0;
    for (const auto& labels : paths[p]) {
      total += static_cast<int64_t>(labels.size());
      longest = std::max<int64_t>(longest, static_cast<int64_t>(labels.size()));
    }
    Tensor *indices, *values, *shape;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(p, TensorShape({total, 2}), &indices));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(top_paths + p, TensorShape({total}), &values));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(2 * top_paths + p, TensorShape({2}), &shape));
    int64_t k = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (size_t i = 0; i < paths[p][b].size(); ++i, ++k) {
        indices->data<int64_t>()[2 * k] = b;
        indices->data<int64_t>()[2 * k + 1] = static_cast<int64_t>(i);
        values->data<int64_t>()[k] = paths[p][b][i];
      }
    }
    shape->data<int64_t>()[0] = batch;
    shape->data<int64_t>()[1] = longest;
  }
  return Status::OK();
}

Status BeamSearchDecoderShape(InferenceContext& ctx) {
  PartialShape logits;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 3, &logits));
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  const int top_paths = (ctx.num_outputs() - 1) / 3;
  for (int p = 0; p < top_paths; ++p) {
    ctx.set_output(p, PartialShape({-1, 2}));
    ctx.set_output(top_paths + p, PartialShape({-1}));
    ctx.set_output(2 * top_paths + p, PartialShape({2}));
  }
  ctx.set_output(3 * top_paths, PartialShape({logits.dim(1), top_paths}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("CTCBeamSearchDecoder")
                   .Input("inputs", "T")
                   .Input("sequence_length", "int32")
                   .OutputList("decoded_indices", "int64", "top_paths")
                   .OutputList("decoded_values", "int64", "top_paths")
                   .OutputList("decoded_shape", "int64", "top_paths")
                   .Output("log_probability", "T")
                   .TypeAttr("T", kFloatTypes, DType::kFloat32)
                   .RequiredAttr("beam_width", AttrType::kInt)
                   .RequiredAttr("top_paths", AttrType::kInt)
                   .Attr("merge_repeated", true)
                   .Shape(BeamSearchDecoderShape)
                   .Kernel("CPU", BeamSearchDecoderKernel)
                   .NotDifferentiable()
                   .Doc("Prefix beam search CTC decoding of logits [max_time, batch, num_classes]: "
                        "the top_paths best label sequences as sparse [batch, max_decoded_length] "
                        "tensors and their log probabilities [batch, top_paths]."));

}  // namespace
}  // namespace flowstone
