// GradientTape: records eager ops and computes gradients with the graph GradFns. See
// flowstone/eager.h.
#include <unordered_map>

#include "flowstone/eager.h"
#include "flowstone/gradients.h"
#include "flowstone/graph.h"

namespace flowstone {

void GradientTape::Watch(const TensorHandle& tensor) {
  if (watched_.insert(tensor.id()).second) watch_order_.push_back(tensor.id());
}

void GradientTape::Record(const std::string& op_type, const AttrMap& attrs,
                          const std::vector<const TensorHandle*>& inputs,
                          const std::vector<TensorHandle>& outputs) {
  Entry entry;
  entry.op_type = op_type;
  entry.attrs = attrs;
  entry.inputs.reserve(inputs.size());
  for (const TensorHandle* in : inputs) entry.inputs.push_back(*in);
  entry.outputs = outputs;
  for (const TensorHandle& out : outputs) watched_.insert(out.id());
  entries_.push_back(std::move(entry));
}

void GradientTape::Reset() {
  watched_.clear();
  watch_order_.clear();
  entries_.clear();
}

namespace {

// The scratch graph the backward pass is built in, with the value of each of its tensors.
class ReplayGraph {
 public:
  ReplayGraph() : graph_(std::make_shared<Graph>()) {}
  Graph* graph() { return graph_.get(); }

  // The endpoint standing for `handle`: the replayed op output that produced it, or a
  // Placeholder of its dtype and exact shape holding its value.
  StatusOr<Endpoint> EndpointOf(const TensorHandle& handle) {
    auto it = endpoints_.find(handle.id());
    if (it != endpoints_.end()) return it->second;
    NodeSpec spec;
    spec.name = graph_->UniqueName("leaf");
    spec.op = "Placeholder";
    spec.attrs.Set("dtype", handle.tensor().dtype());
    spec.attrs.Set("shape", PartialShape(handle.tensor().shape()));
    FS_ASSIGN_OR_RETURN(Node * node, graph_->AddNode(std::move(spec)));
    Endpoint e{node, 0};
    Bind(e, handle);
    return e;
  }
  bool Has(int64_t id) const { return endpoints_.count(id) != 0; }
  const TensorHandle* ValueOf(const Endpoint& e) const {
    if (e.node->id() >= static_cast<int>(values_.size())) return nullptr;
    const auto& outs = values_[e.node->id()];
    return e.index < static_cast<int>(outs.size()) && outs[e.index] ? &*outs[e.index] : nullptr;
  }
  void Bind(const Endpoint& e, const TensorHandle& handle) {
    endpoints_.emplace(handle.id(), e);
    SetValue(e, handle);
  }
  void SetValue(const Endpoint& e, const TensorHandle& handle) {
    if (e.node->id() >= static_cast<int>(values_.size())) values_.resize(e.node->id() + 1);
    auto& outs = values_[e.node->id()];
    if (e.index >= static_cast<int>(outs.size())) outs.resize(e.index + 1);
    outs[e.index] = handle;
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::unordered_map<int64_t, Endpoint> endpoints_;
  std::vector<std::vector<std::optional<TensorHandle>>> values_;
};

// Pauses a tape's recording for a scope: the backward pass is not recorded by the tape that
// computes it.
class PauseRecording {
 public:
  explicit PauseRecording(GradientTape* tape) : tape_(tape), was_(tape->recording()) {
    tape_->set_recording(false);
  }
  ~PauseRecording() { tape_->set_recording(was_); }

 private:
  GradientTape* tape_;
  bool was_;
};

}  // namespace

Status GradientTape::Gradient(EagerContext& ctx, const std::vector<const TensorHandle*>& targets,
                              const std::vector<const TensorHandle*>& sources,
                              const std::vector<const TensorHandle*>& output_gradients,
                              std::vector<std::optional<TensorHandle>>* out) {
  PauseRecording pause(this);
  ReplayGraph replay;
  // The recorded ops reachable from a source, replayed in order.
  std::unordered_set<int64_t> reachable;
  for (const TensorHandle* s : sources) reachable.insert(s->id());
  for (const Entry& entry : entries_) {
    bool reached = false;
    for (const TensorHandle& in : entry.inputs) reached |= reachable.count(in.id()) != 0;
    if (!reached) continue;
    NodeSpec spec;
    spec.name = replay.graph()->UniqueName(entry.op_type);
    spec.op = entry.op_type;
    spec.attrs = entry.attrs;
    for (const TensorHandle& in : entry.inputs) {
      FS_ASSIGN_OR_RETURN(Endpoint e, replay.EndpointOf(in));
      spec.inputs.push_back(e);
    }
    FS_ASSIGN_OR_RETURN(Node * node, replay.graph()->AddNode(std::move(spec)));
    for (size_t o = 0; o < entry.outputs.size(); ++o) {
      reachable.insert(entry.outputs[o].id());
      replay.Bind(Endpoint{node, static_cast<int>(o)}, entry.outputs[o]);
    }
  }

  std::vector<Endpoint> ys, xs;
  GradientOptions options;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!reachable.count(targets[i]->id())) continue;  // no source reaches this target
    FS_ASSIGN_OR_RETURN(Endpoint y, replay.EndpointOf(*targets[i]));
    ys.push_back(y);
    Endpoint seed;
    if (i < output_gradients.size() && output_gradients[i] != nullptr) {
      FS_ASSIGN_OR_RETURN(seed, replay.EndpointOf(*output_gradients[i]));
    }
    options.grad_ys.push_back(seed);
  }
  std::vector<int> source_slot(sources.size(), -1);
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!replay.Has(sources[i]->id()) && ys.empty()) continue;
    FS_ASSIGN_OR_RETURN(Endpoint x, replay.EndpointOf(*sources[i]));
    source_slot[i] = static_cast<int>(xs.size());
    xs.push_back(x);
  }
  out->assign(sources.size(), std::nullopt);
  if (ys.empty() || xs.empty()) return Status::OK();

  const int first_new = replay.graph()->num_nodes();
  std::vector<Endpoint> grads;
  FS_RETURN_IF_ERROR(AddGradients(replay.graph(), ys, xs, options, &grads));

  // The gradient ops, run eagerly in creation order (a topological order).
  const int end = replay.graph()->num_nodes();
  std::vector<TensorHandle> results;
  std::vector<const TensorHandle*> inputs;
  for (int id = first_new; id < end; ++id) {
    Node* node = replay.graph()->node(id);
    if (node->type() == "Const") {
      Tensor value;
      FS_RETURN_IF_ERROR(node->attrs().Get("value", &value));
      std::unique_ptr<TensorHandle> handle;
      FS_RETURN_IF_ERROR(ctx.MakeHandle(value, "", &handle));
      replay.SetValue(Endpoint{node, 0}, *handle);
      continue;
    }
    inputs.clear();
    for (const Endpoint& in : node->inputs()) {
      const TensorHandle* value = replay.ValueOf(in);
      if (value == nullptr) {
        return errors::Internal("gradient op ", node->name(), " reads ", in.ToString(),
                                ", which has no value");
      }
      inputs.push_back(value);
    }
    FS_RETURN_IF_ERROR(ctx.Execute(node->type(), inputs, node->attrs(), "", "", &results));
    for (size_t o = 0; o < results.size(); ++o) {
      replay.SetValue(Endpoint{node, static_cast<int>(o)}, results[o]);
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (source_slot[i] < 0) continue;
    const Endpoint& g = grads[source_slot[i]];
    if (g.node == nullptr) continue;
    const TensorHandle* value = replay.ValueOf(g);
    if (value == nullptr) return errors::Internal("gradient ", g.ToString(), " has no value");
    (*out)[i] = *value;
  }
  return Status::OK();
}

}  // namespace flowstone
