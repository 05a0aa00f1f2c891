#include "optimizer/plan_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

#include "flowstone/collectives.h"
#include "flowstone/kernel.h"
#include "optimizer/remapper.h"

namespace flowstone {
namespace {

// Constants bigger than this are not compared for common-subexpression elimination: hashing
// them would cost more compile time than merging saves.
constexpr size_t kMaxMergedConstantBytes = 1 << 20;

// The most work (multiply-adds, or elements touched) one folded node may cost: about 0.1 s of one
// core. Bigger products stay in the run, where deadlines and cancellation reach them.
constexpr double kMaxFoldCost = 1e8;

// A folded node whose outputs outgrow its inputs by more than this is not folded (Fill, Tile,
// ZerosLike, OneHot...): writing memory costs a run little, while the folded value would be kept
// for the session's life beside the graph's own constants.
constexpr int64_t kMaxFoldGrowthBytes = 64 << 10;
// What a folded kernel may allocate, outputs and scratch together, in multiples of the limit on
// its outputs.
constexpr int64_t kFoldScratchFactor = 4;

// An estimate of the work of running `n` on `inputs`: elements touched, times the inner dimension
// for products and decompositions. Deterministic, so a plan folds the same nodes on every machine.
double FoldCost(const Node& n, const std::vector<Tensor>& inputs) {
  double elements = 0;
  int64_t largest_dim = 1;
  for (const Tensor& t : inputs) {
    elements += static_cast<double>(t.num_elements());
    for (int d = 0; d < t.rank(); ++d) largest_dim = std::max(largest_dim, t.dim(d));
  }
  for (int o = 0; o < n.num_outputs(); ++o) {
    const int64_t out = n.output_shape(o).num_elements();
    if (out > 0) elements += static_cast<double>(out);
  }
  const std::string& type = n.type();
  const bool product = type == "MatMul" || type.rfind("BatchMatMul", 0) == 0 ||
                       type.rfind("Conv", 0) == 0 || type.rfind("Depthwise", 0) == 0 ||
                       type.rfind("Dilation", 0) == 0 || type.find("Matrix") != std::string::npos ||
                       type == "Cholesky" || type == "Qr" || type == "Svd" ||
                       type.rfind("SelfAdjointEig", 0) == 0 ||
                       type.find("FFT") != std::string::npos;
  return product ? elements * static_cast<double>(largest_dim) : elements;
}

bool IsHandle(DType dtype) { return dtype == DType::kResource || dtype == DType::kVariant; }

// Random ops that keep a state are marked stateful; the name check also keeps any random op
// registered without the mark out of every rewrite (the stateless ones, seeded by an input, are
// deterministic and may be rewritten).
bool LooksRandom(const std::string& type) {
  if (type.rfind("Stateless", 0) == 0) return false;
  return type.find("Random") != std::string::npos ||
         type.find("Multinomial") != std::string::npos ||
         type.find("Shuffle") != std::string::npos || type.find("Dropout") != std::string::npos;
}

// Nodes that keep running as they are, whatever their inputs: placeholders, control flow, function
// calls, effects (stateful ops, collectives), handles (variables, iterators, TensorLists), nodes
// with control inputs (their order is the user's) and nodes without outputs.
bool NeverRewritten(const Node& n) {
  static const std::unordered_set<std::string> kKept = {
      "Placeholder", "PlaceholderWithDefault", "NoOp",     "Switch",        "Merge", "Enter",
      "Exit",        "NextIteration",          "LoopCond", "ControlTrigger"};
  // A Python function is not run at compile time, even when it says it is stateless.
  const bool python = n.type().find("PyFunc") != std::string::npos;
  if (n.is_stateful() || kKept.count(n.type()) || IsCollectiveOpType(n.type()) ||
      LooksRandom(n.type()) || python) {
    return true;
  }
  if (!n.control_inputs().empty() || n.num_outputs() == 0) return true;
  for (int i = 0; i < n.num_inputs(); ++i)
    if (IsHandle(n.input_type(i))) return true;
  for (int i = 0; i < n.num_outputs(); ++i)
    if (IsHandle(n.output_type(i))) return true;
  for (const auto& [name, value] : n.attrs().entries())
    if (std::holds_alternative<FunctionRef>(value)) return true;
  return false;
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  if (a.buffer() == b.buffer()) return true;
  if (HoldsObjects(a.dtype())) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

bool SameAttr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>) {
          return SameTensor(x, y);
        } else if constexpr (std::is_same_v<T, FunctionRef>) {
          return false;
        } else {
          return x == y;
        }
      },
      a);
}

bool SameAttrs(const Node& a, const Node& b) {
  const auto& x = a.attrs().entries();
  const auto& y = b.attrs().entries();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !SameAttr(x[i].second, y[i].second)) return false;
  return true;
}

// Every element of `t` is `value`, as its dtype stores it; for floats `negative_zero` asks for the
// sign bit of a zero as well (x + (-0.0) is exact, x + 0.0 turns -0.0 into 0.0).
bool AllEqual(const Tensor& t, double value, bool negative_zero = false) {
  if (t.num_elements() == 0) return false;
  const DType d = t.dtype();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (IsFloating(d)) {
      double v = t.ElementAsDouble(i);
      if (v != value || (value == 0 && std::signbit(v) != negative_zero)) return false;
    } else if (t.ElementAsInt64(i) != static_cast<int64_t>(value)) {
      return false;
    }
  }
  return true;
}

// Dtypes whose arithmetic with 1 and 0 is exact as rewritten below. Complex numbers are left out:
// (a+bi)*(1+0i) computes b*0, which is NaN for an infinite b.
bool ExactArithmeticType(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 ||
         d == DType::kBFloat16 || d == DType::kInt32 || d == DType::kInt64 || d == DType::kUInt8;
}

class Optimizer {
 public:
  Optimizer(const OptimizerScope& scope, const RewriterConfig& config)
      : scope_(scope),
        config_(config),
        fold_deadline_(std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(config.fold_time_budget_ms)) {}

  PlanRewrites Run() {
    const bool fold = config_.Enabled(config_.constant_folding);
    const bool arithmetic = config_.Enabled(config_.arithmetic_optimization);
    const bool dependency = config_.Enabled(config_.dependency_optimization);
    const bool merge = config_.Enabled(config_.common_subgraph_elimination);
    const bool remap = config_.Enabled(config_.remapping);
    if (!fold && !arithmetic && !dependency && !merge && !remap) return {};
    std::unordered_set<const Node*> targets(scope_.targets.begin(), scope_.targets.end());
    const Graph& graph = *scope_.graph;
    // Node ids are a topological order, so each node sees its inputs' rewrites: one pass reaches
    // what repeating the rewrites would.
    for (int id = 0; id < graph.num_nodes_unlocked(); ++id) {
      if (!(*scope_.needed)[id] || !(*scope_.on_host)[id]) continue;
      const Node* n = graph.node_unlocked(id);
      if (targets.count(n) || NeverRewritten(*n)) continue;
      std::vector<Endpoint> inputs;
      for (const Endpoint& in : n->inputs()) inputs.push_back(Source(in));
      if (fold && TryFold(*n, inputs)) continue;
      if (dependency && TryForwardIdentity(*n, inputs)) continue;
      if (arithmetic && TrySimplify(*n, inputs)) continue;
      if (merge) TryMerge(*n, inputs);
    }
    // After the others, as in TensorFlow: fusion sees the graph that will run.
    if (remap) FuseProducts(scope_, &rewrites_, /*fold_batch_norms=*/arithmetic);
    return std::move(rewrites_);
  }

 private:
  // What the plan reads for `e`: the fed tensor, or the output `e` was forwarded to.
  Endpoint Source(const Endpoint& e) const { return scope_.is_fed(e) ? e : rewrites_.Resolve(e); }

  // The value of `e` (a Source) known at compile time, or nullptr.
  const Tensor* KnownValue(const Endpoint& e) const {
    if (scope_.is_fed(e)) return nullptr;
    if (e.node->type() == "Const" && e.node->control_inputs().empty()) {
      return std::get_if<Tensor>(e.node->attrs().Find("value"));
    }
    const std::vector<Tensor>* folded = rewrites_.Folded(e.node);
    return folded == nullptr ? nullptr : &(*folded)[e.index];
  }

  // Runs `n`'s CPU kernel on its constant inputs and keeps the outputs as constants, when they
  // fit the size limit. Any error leaves the node to run (and fail) at run time.
  bool TryFold(const Node& n, const std::vector<Endpoint>& inputs) {
    if (n.type() == "Const" || n.num_inputs() == 0) return false;
    std::vector<Tensor> values;
    for (const Endpoint& in : inputs) {
      const Tensor* v = KnownValue(in);
      if (v == nullptr) return false;
      values.push_back(*v);
    }
    std::vector<Tensor> cached;
    if (scope_.cache != nullptr && scope_.cache->Find(&n, &cached)) {
      rewrites_.Fold(&n, std::move(cached));
      return true;
    }
    int64_t input_bytes = 0;
    for (const Tensor& v : values) input_bytes += static_cast<int64_t>(v.bytes());
    // Folded outputs may take up to the configured limit, and grow past the inputs by a little.
    const int64_t limit = std::min<int64_t>(config_.max_folded_constant_bytes,
                                            std::max(input_bytes, kMaxFoldGrowthBytes));
    // Static output sizes are checked against what is left of the limit before they are
    // multiplied: a shape such as [2**62] (an attr the kernel will reject) would overflow.
    int64_t static_bytes = 0;
    for (int o = 0; o < n.num_outputs(); ++o) {
      const int64_t elements = n.output_shape(o).num_elements();
      const int64_t size = static_cast<int64_t>(DTypeSize(n.output_type(o)));
      if (elements <= 0 || size <= 0) continue;
      if (elements > (limit - static_bytes) / size) return false;
      static_bytes += elements * size;
    }
    if (FindKernelDef(n, "CPU") == nullptr || FoldCost(n, values) > kMaxFoldCost ||
        std::chrono::steady_clock::now() > fold_deadline_) {
      return false;
    }
    std::unique_ptr<OpKernel> kernel;
    if (!CreateKernel(n, "CPU", &kernel).ok()) return false;
    // The kernel allocates from a budget of a few times the limit: an output whose size the
    // shape function could not know (SegmentSum's, sized by an id of 2**31) would otherwise be
    // allocated in full from the process's memory, only to be dropped as too big. Past the
    // budget the fold fails and the node runs, under the session's own memory limit.
    auto budget = std::make_shared<LimitedAllocator>(
        scope_.cpu->allocator(), kFoldScratchFactor * limit, "constant folding");
    Device device(scope_.cpu->type(), scope_.cpu->id(), budget.get(), scope_.cpu->intra_op_pool());
    std::vector<Tensor> outputs(n.num_outputs());
    std::unique_ptr<bool[]> forwardable(new bool[values.size() + 1]());
    KernelContext::Params params;
    params.node = &n;
    params.device = &device;
    params.resources = scope_.resources;
    params.inputs = values.data();
    params.forwardable = forwardable.get();
    params.outputs = outputs.data();
    KernelContext ctx(params);
    if (!kernel->Compute(ctx).ok()) return false;
    int64_t bytes = 0;
    for (int o = 0; o < n.num_outputs(); ++o) {
      if (!outputs[o].initialized() || outputs[o].dtype() != n.output_type(o)) return false;
      bytes += static_cast<int64_t>(outputs[o].bytes());
    }
    if (bytes > limit) return false;
    if (scope_.cache != nullptr) scope_.cache->Add(&n, outputs);
    rewrites_.Fold(&n, std::move(outputs));
    return true;
  }

  // Identity and StopGradient pass their input on unchanged.
  bool TryForwardIdentity(const Node& n, const std::vector<Endpoint>& inputs) {
    if (n.type() != "Identity" && n.type() != "StopGradient" && n.type() != "Snapshot")
      return false;
    rewrites_.Forward(&n, {inputs[0]});
    return true;
  }

  // Whether `n`'s output has the shape of `x` whatever the run feeds: `c` (the other operand) is
  // a scalar, or both shapes are known and equal.
  static bool KeepsShape(const Node& n, const Endpoint& x, const Tensor& c) {
    if (c.rank() == 0) return true;
    const PartialShape& in = x.node->output_shape(x.index);
    return in.IsFullyDefined() && n.output_shape(0).IsFullyDefined() && in == n.output_shape(0);
  }

  // The operand that `n` returns unchanged, if `n` is x*1, 1*x, x/1, x+(-0.0), x-0, a Cast to
  // x's dtype, a Reshape to x's known shape or a Transpose that is the identity or undoes the one
  // before it.
  bool TrySimplify(const Node& n, const std::vector<Endpoint>& inputs) {
    if (n.num_outputs() != 1) return false;
    const std::string& type = n.type();
    const DType dtype = n.output_type(0);
    Endpoint result;
    if (type == "Cast") {
      if (n.input_type(0) == dtype) result = inputs[0];
    } else if (type == "Reshape") {
      const PartialShape& in = inputs[0].node->output_shape(inputs[0].index);
      if (in.IsFullyDefined() && in == n.output_shape(0)) result = inputs[0];
    } else if (type == "Transpose") {
      result = UndoneTranspose(inputs);
    } else if (ExactArithmeticType(dtype) && n.num_inputs() == 2) {
      const bool floating = IsFloating(dtype);
      // Per operand: the value that makes the op return the other operand.
      auto neutral = [&](int k, double value, bool negative_zero) {
        const Tensor* c = KnownValue(inputs[k]);
        return c != nullptr && AllEqual(*c, value, negative_zero) &&
               KeepsShape(n, inputs[1 - k], *c);
      };
      if (type == "Mul") {
        if (neutral(1, 1, false))
          result = inputs[0];
        else if (neutral(0, 1, false))
          result = inputs[1];
      } else if (type == "RealDiv" || type == "Div") {
        if (neutral(1, 1, false)) result = inputs[0];
      } else if (type == "Add" || type == "AddV2") {
        if (neutral(1, 0, floating))
          result = inputs[0];
        else if (neutral(0, 0, floating))
          result = inputs[1];
      } else if (type == "Sub") {
        if (neutral(1, 0, false)) result = inputs[0];
      }
    }
    if (result.node == nullptr) return false;
    rewrites_.Forward(&n, {result});
    return true;
  }

  // For Transpose(y, perm): y itself when perm is the identity, or x when y = Transpose(x, p)
  // and perm undoes p. Else an empty endpoint.
  Endpoint UndoneTranspose(const std::vector<Endpoint>& inputs) const {
    std::vector<int64_t> perm;
    if (!Permutation(inputs[1], &perm)) return {};
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) return inputs[0];
    const Endpoint& y = inputs[0];
    if (scope_.is_fed(y) || y.node->type() != "Transpose" || rewrites_.Folded(y.node) ||
        NeverRewritten(*y.node)) {
      return {};
    }
    std::vector<int64_t> first;
    if (!Permutation(Source(y.node->input(1)), &first) || first.size() != perm.size()) return {};
    // Transpose(x, p)[i] reads x's dim p[i], so applying `first` then `perm` reads x's dim
    // first[perm[i]]: the identity when that is i for every i.
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(first.size()) ||
          first[perm[i]] != static_cast<int64_t>(i)) {
        return {};
      }
    }
    return Source(y.node->input(0));
  }

  bool Permutation(const Endpoint& e, std::vector<int64_t>* out) const {
    const Tensor* t = KnownValue(e);
    if (t == nullptr || t->rank() != 1 || !IsInteger(t->dtype())) return false;
    for (int64_t i = 0; i < t->num_elements(); ++i) out->push_back(t->ElementAsInt64(i));
    return true;
  }

  // Merges `n` into an earlier identical node: same op, device, attrs and (rewritten) inputs.
  bool TryMerge(const Node& n, const std::vector<Endpoint>& inputs) {
    std::string key = StrCat(n.type(), "|", n.requested_device(), "|");
    for (const Endpoint& in : inputs) key += StrCat(in.node->id(), ":", in.index, ",");
    for (const auto& [name, value] : n.attrs().entries()) {
      key += name + "=";
      if (const Tensor* t = std::get_if<Tensor>(&value)) {
        if (HoldsObjects(t->dtype()) || t->bytes() > kMaxMergedConstantBytes) return false;
        key += StrCat(DTypeName(t->dtype()), t->shape().ToString(), "#",
                      std::hash<std::string_view>()(
                          std::string_view(static_cast<const char*>(t->raw_data()), t->bytes())));
      } else {
        key += AttrValueToString(value);
      }
      key += ";";
    }
    std::vector<const Node*>& bucket = seen_[key];
    for (const Node* earlier : bucket) {
      if (!SameAttrs(n, *earlier)) continue;
      std::vector<Endpoint> outputs;
      for (int o = 0; o < n.num_outputs(); ++o) outputs.push_back({const_cast<Node*>(earlier), o});
      rewrites_.Forward(&n, std::move(outputs));
      return true;
    }
    // A node with a fed output cannot stand for others: their consumers would read the feed.
    for (int o = 0; o < n.num_outputs(); ++o)
      if (scope_.is_fed(Endpoint{const_cast<Node*>(&n), o})) return false;
    bucket.push_back(&n);
    return false;
  }

  const OptimizerScope& scope_;
  const RewriterConfig& config_;
  const std::chrono::steady_clock::time_point fold_deadline_;
  PlanRewrites rewrites_;
  std::unordered_map<std::string, std::vector<const Node*>> seen_;
};

}  // namespace

PlanRewrites OptimizePlan(const OptimizerScope& scope, const RewriterConfig& config) {
  return Optimizer(scope, config).Run();
}

}  // namespace flowstone
