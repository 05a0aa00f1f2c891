// The graph optimizer: rewrites found once, when a session compiles a plan for a (feeds, fetches,
// targets) signature, which the plan then reads instead of the user's nodes. Constant folding,
// common-subexpression elimination, exact arithmetic simplification and fusion (TensorFlow's
// remapper); see docs/architecture/graph-optimizer.md.
//
// The user's Graph is never changed. A rewrite is a folded node (its outputs computed now, with
// its CPU kernel), a forwarded node (each of its outputs replaced by an equal output of another
// node) or a replaced node (run as a fused node that computes the same outputs from other
// inputs), keyed by the node it replaces, so names, placement, errors and traces keep referring
// to the user's nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flowstone/device.h"
#include "flowstone/graph.h"
#include "flowstone/resource.h"
#include "flowstone/session.h"
#include "flowstone/tensor.h"

namespace flowstone {

// A user's node that a plan runs as another node: `node`, a fused op owned by a FusionCache
// (with the user's node's name, device and outputs) or the user's node itself, reading `inputs`
// from the user's graph, then `constants`: values computed once, when the plan is built (a
// convolution's filter with a batch norm folded in), which the plan holds like a Const's.
struct Replacement {
  const Node* node = nullptr;
  std::vector<Endpoint> inputs;
  std::vector<Tensor> constants;
};

class PlanRewrites {
 public:
  // The output that a consumer of `e` reads: an equal output of another node, or `e` itself.
  // Callers check whether `e` is fed first: a fed tensor is read as fed, whatever its node.
  Endpoint Resolve(const Endpoint& e) const {
    auto it = forwarded_.find(e.node);
    return it == forwarded_.end() ? e : it->second[e.index];
  }
  bool IsForwarded(const Node* node) const { return forwarded_.count(node) > 0; }
  // The values of a folded node's outputs, or nullptr when `node` is not folded.
  const std::vector<Tensor>* Folded(const Node* node) const {
    auto it = folded_.find(node);
    return it == folded_.end() ? nullptr : &it->second;
  }
  // The node that runs in place of `node`, or nullptr.
  const Replacement* Replaced(const Node* node) const {
    auto it = replaced_.find(node);
    return it == replaced_.end() ? nullptr : &it->second;
  }
  // The inputs the plan reads for `node`: its replacement's, or its own.
  const std::vector<Endpoint>& Inputs(const Node* node) const {
    const Replacement* r = Replaced(node);
    return r == nullptr ? node->inputs() : r->inputs;
  }
  bool empty() const { return folded_.empty() && forwarded_.empty() && replaced_.empty(); }

  void Fold(const Node* node, std::vector<Tensor> values) { folded_[node] = std::move(values); }
  void Forward(const Node* node, std::vector<Endpoint> replacements) {
    forwarded_[node] = std::move(replacements);
  }
  void Replace(const Node* node, Replacement replacement) {
    replaced_[node] = std::move(replacement);
  }

 private:
  std::unordered_map<const Node*, std::vector<Tensor>> folded_;
  std::unordered_map<const Node*, std::vector<Endpoint>> forwarded_;
  std::unordered_map<const Node*, Replacement> replaced_;
};

// The fused nodes of a session's plans. Each lives in a small graph of its own (placeholders for
// its inputs, then the node), so it has the user's node's name without clashing with anything,
// and lives as long as the session: kernels are cached per node.
class FusionCache {
 public:
  // The fused node made for `node` with `signature` (its op and attrs), made by `make` (which
  // adds it to the empty graph it is given) on first use; nullptr when `make` fails.
  const Node* Get(const Node* node, const std::string& signature,
                  const std::function<const Node*(Graph*)>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_pair(node, signature);
    auto it = nodes_.find(key);
    if (it != nodes_.end()) return it->second;
    auto graph = std::make_shared<Graph>();
    const Node* made = make(graph.get());
    if (made != nullptr) graphs_.push_back(std::move(graph));
    nodes_[key] = made;
    return made;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Graph>> graphs_;
  std::map<std::pair<const Node*, std::string>, const Node*> nodes_;
};

// The values of folded nodes, shared by a session's plans: a node folds to the same values in
// every plan that folds it (its inputs are constants), so it is computed and stored once.
class FoldCache {
 public:
  // The stored values of `node`, or false.
  bool Find(const Node* node, std::vector<Tensor>* values) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(node);
    if (it == values_.end()) return false;
    *values = it->second;
    return true;
  }
  void Add(const Node* node, const std::vector<Tensor>& values) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.emplace(node, values);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    values_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<const Node*, std::vector<Tensor>> values_;
};

// The part of a graph one plan runs, as the optimizer sees it.
struct OptimizerScope {
  // Read under its shared lock, which the caller holds.
  const Graph* graph = nullptr;
  // Per node id: whether the plan needs the node.
  const std::vector<char>* needed = nullptr;
  // Per node id: whether the node is placed on a host device. Nodes on a device with memory of
  // its own (a GPU) are never rewritten: their kernels, with their own numerics, run.
  const std::vector<char>* on_host = nullptr;
  // Whether the plan feeds a tensor: a fed tensor is never folded or forwarded.
  std::function<bool(const Endpoint&)> is_fed;
  // Nodes the plan runs for their effects (its targets): never folded, merged or forwarded.
  std::vector<const Node*> targets;
  // The tensors the plan returns: never fused away.
  std::vector<Endpoint> fetches;
  // The host device whose kernels compute folded nodes. Its allocator should be the process's,
  // not a session's limited one: folded values are constants, like the graph's own.
  Device* cpu = nullptr;
  ResourceMgr* resources = nullptr;
  // Where folded values are kept across plans; may be null.
  FoldCache* cache = nullptr;
  // Where fused nodes are kept; null turns fusion off.
  FusionCache* fusions = nullptr;
};

// Finds the rewrites that `config` allows on the needed nodes of `scope`. Every rewrite keeps the
// plan's results bit-identical; a node whose folding fails (its kernel returns an error) is left
// to run, so that the error comes at run time, attributed to the node as before.
PlanRewrites OptimizePlan(const OptimizerScope& scope, const RewriterConfig& config);

}  // namespace flowstone
