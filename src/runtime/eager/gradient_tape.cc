// GradientTape: records eager ops and computes gradients with the graph GradFns. See
// flowstone/eager.h.
#include <mutex>
#include <string>
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

// Where a tensor of a backward pass comes from: output `index` of the recorded op `entry` (an
// index into the ops the pass replays), or, with entry < 0, leaf `index` (a value no replayed op
// produced: a source, a constant, a seed gradient).
struct Ref {
  int entry;
  int index;
};

// A backward pass built once per structure (the replayed ops with their attrs, and the dtypes
// and shapes of the leaves): the scratch graph holding the replayed ops and the gradient ops
// AddGradients added after them, which each pass runs on new values.
struct BackwardProgram {
  std::shared_ptr<Graph> graph;
  std::vector<Endpoint> leaves;
  std::vector<Node*> entries;
  int first_gradient_node = 0;
  std::vector<int> source_slot;  // per source: its index in `grads`, or -1
  std::vector<Endpoint> grads;

  Endpoint Resolve(const Ref& r) const {
    return r.entry < 0 ? leaves[r.index] : Endpoint{entries[r.entry], r.index};
  }
};

// Programs by structure key. Training loops repeat one structure, so few are ever made; the
// cache is emptied when it grows past kMaxPrograms (a program per step would be a bug elsewhere).
constexpr size_t kMaxPrograms = 256;
std::mutex programs_mu;
std::unordered_map<std::string, std::shared_ptr<const BackwardProgram>>& Programs() {
  static auto* programs =
      new std::unordered_map<std::string, std::shared_ptr<const BackwardProgram>>();
  return *programs;
}

// The value of each tensor of a program's graph during one pass.
class Values {
 public:
  const TensorHandle* Get(const Endpoint& e) const {
    if (e.node->id() >= static_cast<int>(values_.size())) return nullptr;
    const auto& outs = values_[e.node->id()];
    return e.index < static_cast<int>(outs.size()) && outs[e.index] ? &*outs[e.index] : nullptr;
  }
  void Set(const Endpoint& e, const TensorHandle& handle) {
    if (e.node->id() >= static_cast<int>(values_.size())) values_.resize(e.node->id() + 1);
    auto& outs = values_[e.node->id()];
    if (e.index >= static_cast<int>(outs.size())) outs.resize(e.index + 1);
    outs[e.index] = handle;
  }

 private:
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

void AppendShape(const Tensor& t, std::string* key) {
  *key += static_cast<char>('A' + static_cast<int>(t.dtype()));
  for (int i = 0; i < t.rank(); ++i) {
    *key += std::to_string(t.dim(i));
    *key += ',';
  }
}

}  // namespace

Status GradientTape::Gradient(EagerContext& ctx, const std::vector<const TensorHandle*>& targets,
                              const std::vector<const TensorHandle*>& sources,
                              const std::vector<const TensorHandle*>& output_gradients,
                              std::vector<std::optional<TensorHandle>>* out) {
  PauseRecording pause(this);
  out->assign(sources.size(), std::nullopt);
  // Only watched tensors (and the outputs of recorded ops) have gradients, as in TensorFlow.
  std::vector<size_t> watched_positions;
  std::vector<const TensorHandle*> watched_sources;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!IsWatched(sources[i]->id())) continue;
    watched_positions.push_back(i);
    watched_sources.push_back(sources[i]);
  }
  if (watched_sources.empty()) return Status::OK();

  // The structure of this pass, as a key: the recorded ops reachable from a source (in order,
  // with their attrs and where their inputs come from), then the targets, seeds and sources.
  std::string key;
  std::unordered_map<int64_t, Ref> producer;
  std::vector<const TensorHandle*> leaves;
  auto ref = [&](const TensorHandle& h) -> Ref {
    auto it = producer.find(h.id());
    if (it != producer.end()) return it->second;
    Ref r{-1, static_cast<int>(leaves.size())};
    leaves.push_back(&h);
    producer.emplace(h.id(), r);
    key += 'L';
    AppendShape(h.tensor(), &key);
    return r;
  };
  auto append_ref = [&](const Ref& r) {
    key += r.entry < 0 ? 'l' : 'e';
    key += std::to_string(r.entry < 0 ? r.index : r.entry);
    key += ':';
    key += std::to_string(r.index);
    key += ' ';
  };
  std::unordered_set<int64_t> reachable;
  for (const TensorHandle* s : watched_sources) reachable.insert(s->id());
  std::vector<const Entry*> replayed;
  std::vector<std::vector<Ref>> replayed_inputs;
  for (const Entry& entry : entries_) {
    bool reached = false;
    for (const TensorHandle& in : entry.inputs) reached |= reachable.count(in.id()) != 0;
    if (!reached) continue;
    std::vector<Ref> inputs;
    for (const TensorHandle& in : entry.inputs) inputs.push_back(ref(in));
    const int k = static_cast<int>(replayed.size());
    key += '\n';
    key += entry.op_type;
    for (const auto& [name, value] : entry.attrs.entries()) {
      key += StrCat(" ", name, "=", AttrValueToString(value));
    }
    key += " <- ";
    for (const Ref& r : inputs) append_ref(r);
    for (size_t o = 0; o < entry.outputs.size(); ++o) {
      reachable.insert(entry.outputs[o].id());
      producer[entry.outputs[o].id()] = Ref{k, static_cast<int>(o)};
    }
    replayed.push_back(&entry);
    replayed_inputs.push_back(std::move(inputs));
  }
  std::vector<Ref> ys;
  std::vector<std::optional<Ref>> seeds;
  key += "\ny";
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!reachable.count(targets[i]->id())) continue;  // no source reaches this target
    ys.push_back(ref(*targets[i]));
    append_ref(ys.back());
    std::optional<Ref> seed;
    if (i < output_gradients.size() && output_gradients[i] != nullptr) {
      seed = ref(*output_gradients[i]);
      append_ref(*seed);
    } else {
      key += "1 ";
    }
    seeds.push_back(seed);
  }
  if (ys.empty()) return Status::OK();
  key += "\nx";
  std::vector<Ref> xs;
  for (const TensorHandle* s : watched_sources) {
    xs.push_back(ref(*s));
    append_ref(xs.back());
  }

  std::shared_ptr<const BackwardProgram> program;
  {
    std::lock_guard<std::mutex> lock(programs_mu);
    auto it = Programs().find(key);
    if (it != Programs().end()) program = it->second;
  }
  if (program == nullptr) {
    auto built = std::make_shared<BackwardProgram>();
    built->graph = std::make_shared<Graph>();
    Graph* graph = built->graph.get();
    for (const TensorHandle* leaf : leaves) {
      NodeSpec spec;
      spec.name = graph->UniqueName("leaf");
      spec.op = "Placeholder";
      spec.attrs.Set("dtype", leaf->tensor().dtype());
      spec.attrs.Set("shape", PartialShape(leaf->tensor().shape()));
      FS_ASSIGN_OR_RETURN(Node * node, graph->AddNode(std::move(spec)));
      built->leaves.push_back(Endpoint{node, 0});
    }
    for (size_t k = 0; k < replayed.size(); ++k) {
      NodeSpec spec;
      spec.name = graph->UniqueName(replayed[k]->op_type);
      spec.op = replayed[k]->op_type;
      spec.attrs = replayed[k]->attrs;
      for (const Ref& r : replayed_inputs[k]) spec.inputs.push_back(built->Resolve(r));
      FS_ASSIGN_OR_RETURN(Node * node, graph->AddNode(std::move(spec)));
      built->entries.push_back(node);
    }
    std::vector<Endpoint> y_endpoints, x_endpoints;
    GradientOptions options;
    for (size_t i = 0; i < ys.size(); ++i) {
      y_endpoints.push_back(built->Resolve(ys[i]));
      options.grad_ys.push_back(seeds[i] ? built->Resolve(*seeds[i]) : Endpoint{});
    }
    for (const Ref& x : xs) {
      built->source_slot.push_back(static_cast<int>(x_endpoints.size()));
      x_endpoints.push_back(built->Resolve(x));
    }
    built->first_gradient_node = graph->num_nodes();
    FS_RETURN_IF_ERROR(AddGradients(graph, y_endpoints, x_endpoints, options, &built->grads));
    program = built;
    std::lock_guard<std::mutex> lock(programs_mu);
    if (Programs().size() >= kMaxPrograms) Programs().clear();
    Programs().emplace(std::move(key), program);
  }

  // This pass's values: the leaves and the recorded outputs, then each gradient op run eagerly
  // in creation order (a topological order).
  Values values;
  for (size_t i = 0; i < leaves.size(); ++i) values.Set(program->leaves[i], *leaves[i]);
  for (size_t k = 0; k < replayed.size(); ++k) {
    for (size_t o = 0; o < replayed[k]->outputs.size(); ++o) {
      values.Set(Endpoint{program->entries[k], static_cast<int>(o)}, replayed[k]->outputs[o]);
    }
  }
  const Graph& graph = *program->graph;
  const int end = graph.num_nodes();
  std::vector<TensorHandle> results;
  std::vector<const TensorHandle*> inputs;
  for (int id = program->first_gradient_node; id < end; ++id) {
    Node* node = graph.node(id);
    if (node->type() == "Const") {
      Tensor value;
      FS_RETURN_IF_ERROR(node->attrs().Get("value", &value));
      std::unique_ptr<TensorHandle> handle;
      FS_RETURN_IF_ERROR(ctx.MakeHandle(value, "", &handle));
      values.Set(Endpoint{node, 0}, *handle);
      continue;
    }
    inputs.clear();
    for (const Endpoint& in : node->inputs()) {
      const TensorHandle* value = values.Get(in);
      if (value == nullptr) {
        return errors::Internal("gradient op ", node->name(), " reads ", in.ToString(),
                                ", which has no value");
      }
      inputs.push_back(value);
    }
    FS_RETURN_IF_ERROR(ctx.Execute(node->type(), inputs, node->attrs(), "", "", &results));
    for (size_t o = 0; o < results.size(); ++o) {
      values.Set(Endpoint{node, static_cast<int>(o)}, results[o]);
    }
  }
  for (size_t i = 0; i < watched_sources.size(); ++i) {
    const Endpoint& g = program->grads[program->source_slot[i]];
    if (g.node == nullptr) continue;
    const TensorHandle* value = values.Get(g);
    if (value == nullptr) return errors::Internal("gradient ", g.ToString(), " has no value");
    (*out)[watched_positions[i]] = *value;
  }
  return Status::OK();
}

}  // namespace flowstone
