#include "flowstone/gradients.h"

#include <algorithm>
#include <map>
#include <set>

namespace flowstone {
namespace {

// Floating and complex tensors carry gradients, as in TensorFlow; variants too: the gradient of
// a TensorList is a TensorList of gradients.
bool Backpropagatable(DType t) {
  return IsFloating(t) || IsComplex(t) || t == DType::kResource || t == DType::kVariant;
}

using ExternalGradient = decltype(GradientOptions::external_gradient);

// The external gradient functions (tf.RegisterGradient) of the AddGradients call running on this
// thread. The gradient of a While, If or function call differentiates the function's body with
// a nested AddGradients call, which inherits them: a tf.custom_gradient inside a loop body is
// found as it is outside one.
thread_local const ExternalGradient* current_external_gradient = nullptr;

// Makes `fn` the current external gradient functions for one AddGradients call.
class ExternalGradientScope {
 public:
  explicit ExternalGradientScope(const ExternalGradient* fn) : saved_(current_external_gradient) {
    current_external_gradient = fn;
  }
  ~ExternalGradientScope() { current_external_gradient = saved_; }
  ExternalGradientScope(const ExternalGradientScope&) = delete;
  ExternalGradientScope& operator=(const ExternalGradientScope&) = delete;

 private:
  const ExternalGradient* saved_;
};

struct EndpointLess {
  bool operator()(const Endpoint& a, const Endpoint& b) const {
    return a.node->id() != b.node->id() ? a.node->id() < b.node->id() : a.index < b.index;
  }
};

}  // namespace

GradientContext::GradientContext(Graph* graph, const Node& node, std::vector<Endpoint> output_grads,
                                 std::string name_prefix)
    : graph_(graph),
      node_(node),
      output_grads_(std::move(output_grads)),
      input_grads_(node.num_inputs()),
      prefix_(std::move(name_prefix)) {}

Node* GradientContext::AddNode(const std::string& type, const std::vector<Endpoint>& inputs,
                               const AttrMap& attrs) {
  if (!status_.ok()) return nullptr;
  for (const Endpoint& in : inputs) {
    if (in.node == nullptr) {
      status_ = errors::Internal("gradient of ", node_.name(), " used a missing tensor");
      return nullptr;
    }
  }
  NodeSpec spec;
  spec.name = graph_->UniqueName(prefix_ + type);
  spec.op = type;
  spec.inputs = inputs;
  spec.attrs = attrs;
  spec.creation_site = node_.creation_site();
  spec.device = node_.requested_device();
  StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok()) {
    status_ = node.status();
    status_.Append(StrCat(" (while building the gradient of ", node_.name(), ")"));
    return nullptr;
  }
  return *node;
}

Endpoint GradientContext::Op(const std::string& type, const std::vector<Endpoint>& inputs,
                             const AttrMap& attrs, int index) {
  return Endpoint{AddNode(type, inputs, attrs), index};
}

Endpoint GradientContext::Const(const Tensor& value) {
  AttrMap attrs;
  attrs.Set("value", value);
  attrs.Set("dtype", value.dtype());
  return Op("Const", {}, attrs);
}

Endpoint GradientContext::ScalarLike(Endpoint like, double value) {
  DType dtype = like.node ? like.node->output_type(like.index) : DType::kFloat32;
  Tensor t = Tensor::Host(dtype, TensorShape{});
  switch (dtype) {
    case DType::kFloat32:
      *t.data<float>() = static_cast<float>(value);
      break;
    case DType::kFloat64:
      *t.data<double>() = value;
      break;
    case DType::kInt32:
      *t.data<int32_t>() = static_cast<int32_t>(value);
      break;
    case DType::kInt64:
      *t.data<int64_t>() = static_cast<int64_t>(value);
      break;
    case DType::kUInt8:
      *t.data<uint8_t>() = static_cast<uint8_t>(value);
      break;
    case DType::kBool:
      *t.data<bool>() = value != 0;
      break;
    case DType::kFloat16:
      *t.data<Half>() = Half(static_cast<float>(value));
      break;
    case DType::kBFloat16:
      *t.data<BFloat16>() = BFloat16(static_cast<float>(value));
      break;
    case DType::kComplex64:
      *t.data<complex64>() = complex64(static_cast<float>(value), 0.0f);
      break;
    case DType::kComplex128:
      *t.data<complex128>() = complex128(value, 0.0);
      break;
    default:
      if (status_.ok()) {
        status_ = errors::Internal("no scalar of dtype ", DTypeName(dtype), " in the gradient of ",
                                   node_.name());
      }
      return Endpoint{};
  }
  return Const(t);
}

Endpoint GradientContext::Shape(Endpoint x) { return Op("Shape", {x}); }

Endpoint GradientContext::ConjIfComplex(Endpoint x) {
  if (x.node == nullptr || !IsComplex(x.node->output_type(x.index))) return x;
  return Op("Conj", {x});
}

Endpoint GradientContext::output_grad(int i) {
  if (output_grads_[i].node == nullptr) output_grads_[i] = Op("ZerosLike", {output(i)});
  return output_grads_[i];
}

Endpoint GradientContext::ReduceToShapeOf(Endpoint grad, Endpoint x, Endpoint other) {
  if (!status_.ok()) return Endpoint{};
  const PartialShape& xs = x.node->output_shape(x.index);
  const PartialShape& gs = grad.node->output_shape(grad.index);
  if (xs.IsFullyDefined() && xs == gs) return grad;
  Node* args = AddNode("BroadcastGradientArgs", {Shape(x), Shape(other)});
  if (args == nullptr) return Endpoint{};
  AttrMap keep;
  keep.Set("keep_dims", false);
  Endpoint summed = Op("Sum", {grad, Endpoint{args, 0}}, keep);
  return Op("Reshape", {summed, Shape(x)});
}

Status AddGradients(Graph* graph, const std::vector<Endpoint>& ys, const std::vector<Endpoint>& xs,
                    const GradientOptions& options, std::vector<Endpoint>* grads) {
  std::vector<Node*> nodes = graph->nodes();
  const int n = static_cast<int>(nodes.size());
  for (const Endpoint& e : ys) {
    if (e.node == nullptr || graph->node(e.node->id()) != e.node) {
      return errors::InvalidArgument("tf.gradients: a y is not in this graph");
    }
  }
  for (const Endpoint& e : xs) {
    if (e.node == nullptr || graph->node(e.node->id()) != e.node) {
      return errors::InvalidArgument("tf.gradients: an x is not in this graph");
    }
  }

  // Nodes on a data path from some x to some y.
  std::vector<std::vector<Node*>> consumers(n);
  for (Node* node : nodes)
    for (const Endpoint& in : node->inputs()) consumers[in.node->id()].push_back(node);
  std::vector<char> from_x(n, 0), to_y(n, 0);
  std::vector<Node*> stack;
  for (const Endpoint& x : xs) stack.push_back(x.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (from_x[node->id()]) continue;
    from_x[node->id()] = 1;
    for (Node* c : consumers[node->id()]) stack.push_back(c);
  }
  std::set<Endpoint, EndpointLess> stops(options.stop_gradients.begin(),
                                         options.stop_gradients.end());
  for (const Endpoint& y : ys) stack.push_back(y.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (to_y[node->id()]) continue;
    to_y[node->id()] = 1;
    for (const Endpoint& in : node->inputs())
      if (!stops.count(in)) stack.push_back(in.node);
  }

  const ExternalGradient* external_gradient =
      options.external_gradient ? &options.external_gradient : current_external_gradient;
  ExternalGradientScope external_scope(external_gradient);

  std::map<Endpoint, std::vector<Endpoint>, EndpointLess> pending;
  const std::string scope = options.name_scope.empty() ? "gradients" : options.name_scope;
  auto add_node = [&](const std::string& type, const std::vector<Endpoint>& inputs,
                      const AttrMap& attrs) -> StatusOr<Node*> {
    NodeSpec spec;
    spec.name = graph->UniqueName(scope + "/" + type);
    spec.op = type;
    spec.inputs = inputs;
    spec.attrs = attrs;
    spec.creation_site = options.creation_site;
    return graph->AddNode(std::move(spec));
  };
  for (size_t i = 0; i < ys.size(); ++i) {
    Endpoint seed = i < options.grad_ys.size() ? options.grad_ys[i] : Endpoint{};
    if (seed.node == nullptr) {
      StatusOr<Node*> ones = add_node("OnesLike", {ys[i]}, {});
      FS_RETURN_IF_ERROR(ones.status());
      seed = Endpoint{*ones, 0};
    }
    pending[ys[i]].push_back(seed);
  }
  // Sums the contributions to one tensor's gradient.
  auto total = [&](const Endpoint& e) -> StatusOr<Endpoint> {
    auto it = pending.find(e);
    if (it == pending.end() || it->second.empty()) return Endpoint{};
    if (it->second.size() == 1) return it->second[0];
    StatusOr<Node*> sum = add_node("AddN", it->second, {});
    FS_RETURN_IF_ERROR(sum.status());
    it->second = {Endpoint{*sum, 0}};
    return Endpoint{*sum, 0};
  };

  // Node ids are a topological order, so walking them backwards visits each node after all of
  // its consumers.
  for (int id = n - 1; id >= 0; --id) {
    Node* node = nodes[id];
    if (!from_x[id] || !to_y[id]) continue;
    std::vector<Endpoint> out_grads(node->num_outputs());
    bool any = false;
    for (int o = 0; o < node->num_outputs(); ++o) {
      Endpoint e{node, o};
      if (stops.count(e)) continue;
      FS_ASSIGN_OR_RETURN(out_grads[o], total(e));
      any |= out_grads[o].node != nullptr;
    }
    if (!any) continue;
    bool needs_input_grads = false;
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Endpoint& in = node->input(i);
      needs_input_grads |= from_x[in.node->id()] && Backpropagatable(node->input_type(i));
    }
    if (!needs_input_grads) continue;
    const OpDef& op = node->op_def();
    GradientContext ctx(graph, *node, out_grads, scope + "/" + node->name() + "_grad/");
    const std::string override_type = node->attrs().GetOr<std::string>("_gradient_op_type", "");
    if (!override_type.empty()) {
      bool found = false;
      if (external_gradient != nullptr) {
        FS_RETURN_IF_ERROR((*external_gradient)(ctx, override_type, &found));
      }
      if (!found) {
        Status s = errors::InvalidArgument(
            "No gradient defined for operation '", node->name(), "' (op type: ", op.name,
            "): its gradient_override_map names '", override_type,
            "', which is not registered. Register it with @tf.RegisterGradient(\"", override_type,
            "\").");
        s.SetPayload("py_type", "LookupError");
        return s;
      }
    } else if (op.not_differentiable) {
      continue;
    } else if (!op.gradient) {
      Status s = errors::InvalidArgument(
          "No gradient defined for operation '", node->name(), "' (op type: ", op.name,
          "). Wrap the tensor in tf.stop_gradient(...) if no gradient should flow through it.");
      s.SetPayload("py_type", "LookupError");
      return s;
    } else {
      FS_RETURN_IF_ERROR(op.gradient(ctx));
    }
    FS_RETURN_IF_ERROR(ctx.status());
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Endpoint& g = ctx.input_grads()[i];
      const Endpoint& in = node->input(i);
      if (g.node == nullptr || !from_x[in.node->id()] || !Backpropagatable(node->input_type(i))) {
        continue;
      }
      pending[in].push_back(g);
    }
  }

  grads->clear();
  for (const Endpoint& x : xs) {
    FS_ASSIGN_OR_RETURN(Endpoint g, total(x));
    grads->push_back(g);
  }
  return Status::OK();
}

}  // namespace flowstone
