// GradientTape: records eager ops and computes gradients with the graph GradFns. See
// flowstone/eager.h.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "flowstone/eager.h"
#include "flowstone/gradients.h"
#include "flowstone/graph.h"

namespace flowstone {

namespace {

// Ops that read only the shape (and dtype) of their input. A gradient op of this kind does not
// make the tape keep the value it reads: the backward pass computes it from the shape the tape
// kept (ShapeOnlyValue).
bool ReadsOnlyShape(const std::string& op_type) {
  return op_type == "Shape" || op_type == "Size" || op_type == "Rank" || op_type == "ZerosLike" ||
         op_type == "OnesLike";
}

}  // namespace

void GradientTape::Watch(const TensorHandle& tensor) {
  if (watched_.insert(tensor.id()).second) watch_order_.push_back(tensor.id());
}

void GradientTape::Record(const Node& node, const std::vector<const TensorHandle*>& inputs,
                          const std::vector<TensorHandle>& outputs,
                          const std::vector<bool>& keep_inputs,
                          const std::vector<bool>& keep_outputs) {
  Entry entry;
  entry.node = &node;
  entry.inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorHandle& in = *inputs[i];
    entry.inputs.push_back({in.id(), in.tensor().dtype(), in.tensor().shape(), std::nullopt});
    if (i < keep_inputs.size() && keep_inputs[i]) entry.inputs.back().value = in;
  }
  entry.outputs.reserve(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    const TensorHandle& out = outputs[o];
    entry.outputs.push_back({out.id(), out.tensor().dtype(), out.tensor().shape(), std::nullopt});
    if (o < keep_outputs.size() && keep_outputs[o]) entry.outputs.back().value = out;
    watched_.insert(out.id());
  }
  entries_.push_back(std::move(entry));
}

void GradientTape::Reset() {
  watched_.clear();
  watch_order_.clear();
  entries_.clear();
}

std::vector<int64_t> GradientTape::HeldIds() const {
  std::vector<int64_t> ids;
  for (const Entry& entry : entries_) {
    for (const TapeTensor& t : entry.inputs)
      if (t.value) ids.push_back(t.id);
    for (const TapeTensor& t : entry.outputs)
      if (t.value) ids.push_back(t.id);
  }
  return ids;
}

// Builds the op alone (Placeholders of its input dtypes, of unknown shapes, so that a gradient
// function takes its dynamic path, which reads at least what its static one does) with a given
// gradient for every output, adds its gradient and looks at what the gradient ops read.
void GradientTape::GradientReads(const Node& forward, std::vector<bool>* inputs,
                                 std::vector<bool>* outputs) {
  const int n_in = forward.num_inputs();
  const int n_out = forward.num_outputs();
  inputs->assign(n_in, true);
  outputs->assign(n_out, true);
  Graph graph;
  auto placeholder = [&graph](const char* prefix, DType dtype) -> StatusOr<Node*> {
    NodeSpec spec;
    spec.name = graph.UniqueName(prefix);
    spec.op = "Placeholder";
    spec.attrs.Set("dtype", dtype);
    return graph.AddNode(std::move(spec));
  };
  NodeSpec spec;
  spec.name = "forward";
  spec.op = forward.type();
  spec.attrs = forward.attrs();
  std::vector<Endpoint> xs;
  for (int i = 0; i < n_in; ++i) {
    StatusOr<Node*> x = placeholder("x", forward.input_type(i));
    if (!x.ok()) return;
    xs.push_back({*x, 0});
    spec.inputs.push_back(xs.back());
  }
  StatusOr<Node*> node = graph.AddNode(std::move(spec));
  if (!node.ok()) return;
  std::vector<Endpoint> ys;
  GradientOptions options;
  for (int o = 0; o < n_out; ++o) {
    StatusOr<Node*> seed = placeholder("dy", forward.output_type(o));
    if (!seed.ok()) return;
    ys.push_back({*node, o});
    options.grad_ys.push_back({*seed, 0});
  }
  const int first_gradient_node = graph.num_nodes();
  std::vector<Endpoint> grads;
  if (!AddGradients(&graph, ys, xs, options, &grads).ok()) return;
  inputs->assign(n_in, false);
  outputs->assign(n_out, false);
  for (int id = first_gradient_node; id < graph.num_nodes(); ++id) {
    const Node* grad_op = graph.node(id);
    if (ReadsOnlyShape(grad_op->type())) continue;
    for (const Endpoint& e : grad_op->inputs()) {
      if (e.node == *node) (*outputs)[e.index] = true;
      for (int i = 0; i < n_in; ++i) {
        if (e.node == xs[i].node) (*inputs)[i] = true;
      }
    }
  }
}

namespace {

// Where a tensor of a backward pass comes from: output `index` of the recorded op `entry` (an
// index into the ops the pass replays), or, with entry < 0, leaf `index` (a value no replayed op
// produced: a source, a constant, a seed gradient).
struct Ref {
  int entry;
  int index;
};

// One op of a backward pass's gradient part, resolved when the pass is built: a constant's
// value, or the op prepared for its input dtypes.
struct Step {
  Node* node = nullptr;
  // The outputs, when they are the same in every pass: a constant, or an op folded when the
  // pass was built (see FoldStep).
  std::vector<TensorHandle> constants;
  EagerContext::CachedOp* op = nullptr;
};

// A backward pass built once per structure (the replayed ops with their attrs, and the dtypes
// and shapes of the leaves): the scratch graph holding the replayed ops and the gradient ops
// AddGradients added after them, each prepared, which each pass runs on new values.
struct BackwardProgram {
  std::shared_ptr<Graph> graph;
  std::vector<Endpoint> leaves;
  std::vector<Node*> entries;
  std::vector<Step> steps;
  std::vector<Step> constant_leaves;  // the leaves held as constants, with their values
  std::vector<int> source_slot;       // per source: its index in `grads`, or -1
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

// How many programs were made per structure with different values of its small integer leaves
// (guarded by programs_mu). Past kMaxValueVariants, the structure gets one program that reads
// those leaves as Placeholders.
constexpr int kMaxValueVariants = 4;
std::unordered_map<std::string, int>& ValueVariants() {
  static auto* variants = new std::unordered_map<std::string, int>();
  return *variants;
}

// What each tensor of a program's graph holds during one pass: its value, or only its dtype and
// shape when the tape did not keep the value.
class Values {
 public:
  const TensorHandle* Get(const Endpoint& e) const {
    const Slot* slot = Find(e);
    return slot != nullptr && slot->value ? &*slot->value : nullptr;
  }
  const TensorShape* Shape(const Endpoint& e, DType* dtype) const {
    const Slot* slot = Find(e);
    if (slot == nullptr || slot->shape == nullptr) return nullptr;
    *dtype = slot->dtype;
    return slot->shape;
  }
  void Set(const Endpoint& e, const TensorHandle& handle) { At(e).value = handle; }
  void SetShape(const Endpoint& e, DType dtype, const TensorShape* shape) {
    Slot& slot = At(e);
    slot.dtype = dtype;
    slot.shape = shape;
  }

 private:
  struct Slot {
    std::optional<TensorHandle> value;
    DType dtype = DType::kInvalid;
    const TensorShape* shape = nullptr;
  };
  const Slot* Find(const Endpoint& e) const {
    if (e.node->id() >= static_cast<int>(slots_.size())) return nullptr;
    const auto& outs = slots_[e.node->id()];
    return e.index < static_cast<int>(outs.size()) ? &outs[e.index] : nullptr;
  }
  Slot& At(const Endpoint& e) {
    if (e.node->id() >= static_cast<int>(slots_.size())) slots_.resize(e.node->id() + 1);
    auto& outs = slots_[e.node->id()];
    if (e.index >= static_cast<int>(outs.size())) outs.resize(e.index + 1);
    return outs[e.index];
  }
  std::vector<std::vector<Slot>> slots_;
};

// The output of a shape-reading gradient op (ReadsOnlyShape) on a tensor the tape kept only the
// dtype and shape of.
Status ShapeOnlyValue(EagerContext& ctx, const Node& node, DType dtype, const TensorShape& shape,
                      TensorHandle* out) {
  auto host = [&ctx](Tensor value, std::unique_ptr<TensorHandle>* handle) {
    return ctx.MakeHandle(std::move(value), "", handle);
  };
  const std::string& type = node.type();
  std::unique_ptr<TensorHandle> result;
  if (type == "Rank") {
    FS_RETURN_IF_ERROR(host(Tensor::Scalar<int32_t>(shape.rank()), &result));
  } else if (type == "Shape" || type == "Size") {
    const DType out_type = node.output_type(0);
    const bool size = type == "Size";
    Tensor value = Tensor::Host(out_type, size ? TensorShape{} : TensorShape{shape.rank()});
    int64_t elements = 1;
    for (int i = 0; i < shape.rank(); ++i) elements *= shape.dim(i);
    for (int i = 0; i < (size ? 1 : shape.rank()); ++i) {
      const int64_t v = size ? elements : shape.dim(i);
      if (out_type == DType::kInt64) {
        value.data<int64_t>()[i] = v;
      } else {
        value.data<int32_t>()[i] = static_cast<int32_t>(v);
      }
    }
    FS_RETURN_IF_ERROR(host(std::move(value), &result));
  } else {  // ZerosLike, OnesLike: Fill(shape, Cast(0 or 1))
    std::unique_ptr<TensorHandle> dims, scalar;
    std::vector<int32_t> dim_values;
    for (int i = 0; i < shape.rank(); ++i) dim_values.push_back(static_cast<int32_t>(shape.dim(i)));
    FS_RETURN_IF_ERROR(host(Tensor::FromVector(dim_values, TensorShape{shape.rank()}), &dims));
    FS_RETURN_IF_ERROR(host(Tensor::Scalar<int32_t>(type == "OnesLike" ? 1 : 0), &scalar));
    std::vector<TensorHandle> cast, filled;
    AttrMap cast_attrs;
    cast_attrs.Set("SrcT", DType::kInt32);
    cast_attrs.Set("DstT", dtype);
    FS_RETURN_IF_ERROR(ctx.Execute("Cast", {scalar.get()}, cast_attrs, "", "", &cast));
    FS_RETURN_IF_ERROR(ctx.Execute("Fill", {dims.get(), &cast[0]}, {}, "", "", &filled));
    *out = filled[0];
    return Status::OK();
  }
  *out = *result;
  return Status::OK();
}

// Computes a gradient op while its pass is built when its outputs are the same in every pass:
// a shape-reading op (ReadsOnlyShape) of a tensor whose static shape is fully known (the leaves'
// shapes are part of the pass's structure), or a stateless op all of whose inputs are such
// values or constants (the Reshape and Tile that spread a reduction's gradient). Sets *done and
// fills step->constants when it did; an error leaves the op to run in each pass.
Status FoldStep(EagerContext& ctx, const Node& node,
                const std::unordered_map<const Node*, const Step*>& folded, Step* step,
                bool* done) {
  *done = false;
  if (node.is_stateful() || node.num_inputs() == 0 || !node.control_inputs().empty()) {
    return Status::OK();
  }
  if (ReadsOnlyShape(node.type()) && node.num_inputs() == 1) {
    const Endpoint& in = node.input(0);
    const PartialShape& shape = in.node->output_shape(in.index);
    if (!shape.IsFullyDefined()) return Status::OK();
    TensorHandle value(Tensor(), nullptr);
    FS_RETURN_IF_ERROR(
        ShapeOnlyValue(ctx, node, in.node->output_type(in.index), shape.ToTensorShape(), &value));
    step->constants.push_back(std::move(value));
    *done = true;
    return Status::OK();
  }
  std::vector<const TensorHandle*> inputs;
  std::vector<DType> input_types;
  for (const Endpoint& in : node.inputs()) {
    auto it = folded.find(in.node);
    if (it == folded.end() || in.index >= static_cast<int>(it->second->constants.size())) {
      return Status::OK();
    }
    inputs.push_back(&it->second->constants[in.index]);
    input_types.push_back(inputs.back()->tensor().dtype());
  }
  EagerContext::CachedOp* op = nullptr;
  FS_RETURN_IF_ERROR(ctx.Prepare(node.type(), input_types, node.attrs(), "", &op));
  FS_RETURN_IF_ERROR(ctx.Run(*op, inputs, "", &step->constants));
  *done = true;
  return Status::OK();
}

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

void AppendShape(DType dtype, const TensorShape& shape, std::string* key) {
  *key += static_cast<char>('A' + static_cast<int>(dtype));
  for (int i = 0; i < shape.rank(); ++i) {
    *key += std::to_string(shape.dim(i));
    *key += ',';
  }
}

// A leaf of one pass: a value no replayed op produced, by dtype and shape, and its value when
// the tape or the caller has it.
struct Leaf {
  DType dtype;
  const TensorShape* shape;
  const TensorHandle* value;
};

// Whether a leaf is a small integer tensor in host memory whose value is at hand.
bool IsSmallIndexValue(const Leaf& leaf) {
  constexpr int64_t kMaxElements = 16;
  if (leaf.value == nullptr || (leaf.dtype != DType::kInt32 && leaf.dtype != DType::kInt64)) {
    return false;
  }
  const Device* device = leaf.value->device();
  return (device == nullptr || device->host_memory()) &&
         leaf.value->tensor().num_elements() <= kMaxElements;
}

// Appends "<leaf>=<values> " to a structure key.
void AppendValues(size_t leaf, const Tensor& value, std::string* key) {
  *key += std::to_string(leaf);
  *key += '=';
  for (int64_t i = 0; i < value.num_elements(); ++i) {
    *key += std::to_string(value.ElementAsInt64(i));
    *key += ',';
  }
  *key += ' ';
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
  std::vector<Leaf> leaves;
  auto ref = [&](int64_t id, DType dtype, const TensorShape& shape,
                 const TensorHandle* value) -> Ref {
    auto it = producer.find(id);
    if (it != producer.end()) {
      if (it->second.entry < 0 && leaves[it->second.index].value == nullptr) {
        leaves[it->second.index].value = value;
      }
      return it->second;
    }
    Ref r{-1, static_cast<int>(leaves.size())};
    leaves.push_back({dtype, &shape, value});
    producer.emplace(id, r);
    key += 'L';
    AppendShape(dtype, shape, &key);
    return r;
  };
  auto ref_handle = [&](const TensorHandle& h) {
    return ref(h.id(), h.tensor().dtype(), h.tensor().shape(), &h);
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
    for (const TapeTensor& in : entry.inputs) reached |= reachable.count(in.id) != 0;
    if (!reached) continue;
    std::vector<Ref> inputs;
    for (const TapeTensor& in : entry.inputs) {
      inputs.push_back(ref(in.id, in.dtype, in.shape, in.value ? &*in.value : nullptr));
    }
    const int k = static_cast<int>(replayed.size());
    // The op by its node in the eager cache, which stands for one op type, input dtypes and
    // attrs for the life of the process.
    key += '\n';
    const uintptr_t node_address = reinterpret_cast<uintptr_t>(entry.node);
    key.append(reinterpret_cast<const char*>(&node_address), sizeof(node_address));
    key += " <- ";
    for (const Ref& r : inputs) append_ref(r);
    for (size_t o = 0; o < entry.outputs.size(); ++o) {
      reachable.insert(entry.outputs[o].id);
      producer[entry.outputs[o].id] = Ref{k, static_cast<int>(o)};
    }
    replayed.push_back(&entry);
    replayed_inputs.push_back(std::move(inputs));
  }
  std::vector<Ref> ys;
  std::vector<const TensorHandle*> y_values;
  std::vector<std::optional<Ref>> seeds;
  key += "\ny";
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!reachable.count(targets[i]->id())) continue;  // no source reaches this target
    ys.push_back(ref_handle(*targets[i]));
    y_values.push_back(targets[i]);
    append_ref(ys.back());
    std::optional<Ref> seed;
    if (i < output_gradients.size() && output_gradients[i] != nullptr) {
      seed = ref_handle(*output_gradients[i]);
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
    xs.push_back(ref_handle(*s));
    append_ref(xs.back());
  }
  // Small integer leaves (reduction axes, shapes, permutations) other than targets, seeds and
  // sources: their values are part of the structure and the program holds them as constants,
  // so gradient functions take their static paths and what they compute from them is folded.
  std::vector<bool> constant_leaf(leaves.size(), false);
  for (size_t i = 0; i < leaves.size(); ++i) constant_leaf[i] = IsSmallIndexValue(leaves[i]);
  for (const Ref& r : ys) constant_leaf[r.index] = constant_leaf[r.index] && r.entry >= 0;
  for (const Ref& r : xs) constant_leaf[r.index] = constant_leaf[r.index] && r.entry >= 0;
  for (const auto& r : seeds) {
    if (r && r->entry < 0) constant_leaf[r->index] = false;
  }
  const std::string structure = key;
  key += "\nc";
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (constant_leaf[i]) AppendValues(i, leaves[i].value->tensor(), &key);
  }

  std::shared_ptr<const BackwardProgram> program;
  {
    std::lock_guard<std::mutex> lock(programs_mu);
    auto it = Programs().find(key);
    if (it != Programs().end()) {
      program = it->second;
    } else if (++ValueVariants()[structure] > kMaxValueVariants) {
      // The integer leaves take new values pass after pass (gather indices, not axes): one
      // program with them as Placeholders serves every pass.
      constant_leaf.assign(leaves.size(), false);
      key = structure + "\nc*";
      it = Programs().find(key);
      if (it != Programs().end()) program = it->second;
    }
  }
  if (program == nullptr) {
    auto built = std::make_shared<BackwardProgram>();
    built->constant_leaves.reserve(leaves.size());  // `folded` points into it
    built->graph = std::make_shared<Graph>();
    Graph* graph = built->graph.get();
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Leaf& leaf = leaves[i];
      NodeSpec spec;
      spec.name = graph->UniqueName("leaf");
      spec.attrs.Set("dtype", leaf.dtype);
      if (constant_leaf[i]) {
        spec.op = "Const";
        spec.attrs.Set("value", leaf.value->tensor().Copy());
      } else {
        spec.op = "Placeholder";
        spec.attrs.Set("shape", PartialShape(*leaf.shape));
      }
      FS_ASSIGN_OR_RETURN(Node * node, graph->AddNode(std::move(spec)));
      built->leaves.push_back(Endpoint{node, 0});
      if (constant_leaf[i]) {
        Step constant;
        constant.node = node;
        constant.constants.push_back(*leaf.value);
        built->constant_leaves.push_back(std::move(constant));
      }
    }
    for (size_t k = 0; k < replayed.size(); ++k) {
      NodeSpec spec;
      spec.name = graph->UniqueName(replayed[k]->node->type());
      spec.op = replayed[k]->node->type();
      spec.attrs = replayed[k]->node->attrs();
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
    const int first_gradient_node = graph->num_nodes();
    FS_RETURN_IF_ERROR(AddGradients(graph, y_endpoints, x_endpoints, options, &built->grads));
    // Each gradient op resolved to its kernel now, so that a pass runs them with no lookups;
    // what depends only on constants and shapes is computed now, once.
    std::unordered_map<const Node*, const Step*> folded;
    for (const Step& constant : built->constant_leaves) folded[constant.node] = &constant;
    built->steps.reserve(graph->num_nodes() - first_gradient_node);
    for (int id = first_gradient_node; id < graph->num_nodes(); ++id) {
      Step step;
      step.node = graph->node(id);
      if (step.node->type() == "Const") {
        Tensor value;
        FS_RETURN_IF_ERROR(step.node->attrs().Get("value", &value));
        std::unique_ptr<TensorHandle> handle;
        FS_RETURN_IF_ERROR(ctx.MakeHandle(value, "", &handle));
        step.constants.push_back(*handle);
      } else {
        bool done = false;
        // A fold that fails leaves the op to run (and report its error) in each pass.
        if (!FoldStep(ctx, *step.node, folded, &step, &done).ok() || !done) {
          step.constants.clear();
          std::vector<DType> input_types;
          for (int i = 0; i < step.node->num_inputs(); ++i) {
            input_types.push_back(step.node->input_type(i));
          }
          FS_RETURN_IF_ERROR(
              ctx.Prepare(step.node->type(), input_types, step.node->attrs(), "", &step.op));
        }
      }
      built->steps.push_back(std::move(step));
      if (!built->steps.back().constants.empty()) folded[step.node] = &built->steps.back();
    }
    program = built;
    std::lock_guard<std::mutex> lock(programs_mu);
    if (Programs().size() >= kMaxPrograms) {
      Programs().clear();
      ValueVariants().clear();
    }
    Programs().emplace(std::move(key), program);
  }

  // This pass's values: the leaves and the recorded outputs (or, where the tape did not keep a
  // value, its shape), the targets, then each gradient op in creation order (a topological
  // order).
  Values values;
  for (size_t i = 0; i < leaves.size(); ++i) {
    values.SetShape(program->leaves[i], leaves[i].dtype, leaves[i].shape);
    if (leaves[i].value != nullptr) values.Set(program->leaves[i], *leaves[i].value);
  }
  for (size_t k = 0; k < replayed.size(); ++k) {
    for (size_t o = 0; o < replayed[k]->outputs.size(); ++o) {
      const TapeTensor& t = replayed[k]->outputs[o];
      const Endpoint e{program->entries[k], static_cast<int>(o)};
      values.SetShape(e, t.dtype, &t.shape);
      if (t.value) values.Set(e, *t.value);
    }
    // A value its producer's gradient does not read may be kept by a consumer's.
    for (size_t i = 0; i < replayed[k]->inputs.size(); ++i) {
      const TapeTensor& t = replayed[k]->inputs[i];
      if (t.value) values.Set(program->Resolve(replayed_inputs[k][i]), *t.value);
    }
  }
  for (size_t i = 0; i < ys.size(); ++i) values.Set(program->Resolve(ys[i]), *y_values[i]);
  std::vector<TensorHandle> results;
  std::vector<const TensorHandle*> inputs;
  for (const Step& step : program->steps) {
    const Node& node = *step.node;
    if (!step.constants.empty()) {
      for (size_t o = 0; o < step.constants.size(); ++o) {
        values.Set(Endpoint{step.node, static_cast<int>(o)}, step.constants[o]);
      }
      continue;
    }
    inputs.clear();
    for (const Endpoint& in : node.inputs()) {
      const TensorHandle* value = values.Get(in);
      DType dtype;
      const TensorShape* shape = nullptr;
      if (value == nullptr && ReadsOnlyShape(node.type()) &&
          (shape = values.Shape(in, &dtype)) != nullptr) {
        TensorHandle computed(Tensor(), nullptr);
        FS_RETURN_IF_ERROR(ShapeOnlyValue(ctx, node, dtype, *shape, &computed));
        values.Set(Endpoint{step.node, 0}, computed);
        break;
      }
      if (value == nullptr) {
        return errors::Internal("gradient op ", node.name(), " reads ", in.ToString(),
                                ", whose value the tape did not keep");
      }
      inputs.push_back(value);
    }
    if (inputs.size() != node.inputs().size()) continue;  // computed from a shape above
    FS_RETURN_IF_ERROR(ctx.Run(*step.op, inputs, "", &results));
    for (size_t o = 0; o < results.size(); ++o) {
      values.Set(Endpoint{step.node, static_cast<int>(o)}, results[o]);
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
