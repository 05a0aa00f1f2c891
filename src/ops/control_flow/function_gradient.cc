#include "function_gradient.h"

#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "function_call.h"
#include "graph/loop_stand_in.h"

namespace flowstone {
namespace {

StatusOr<Endpoint> AddBodyNode(Graph& body, const std::string& name, const std::string& op,
                               std::vector<Endpoint> inputs, AttrMap attrs) {
  NodeSpec spec;
  spec.name = body.UniqueName(name);
  spec.op = op;
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  FS_ASSIGN_OR_RETURN(Node * node, body.AddNode(std::move(spec)));
  return Endpoint{node, 0};
}

// Zeros shaped like input `arg` of the function (like the variable's value for a handle).
StatusOr<Endpoint> ZerosLikeArg(Graph& body, const std::string& prefix, Endpoint arg, DType type) {
  if (arg.node->output_type(arg.index) == DType::kResource) {
    AttrMap read;
    read.Set("dtype", type);
    FS_ASSIGN_OR_RETURN(
        arg, AddBodyNode(body, prefix + "/ReadVariableOp", "ReadVariableOp", {arg}, read));
  }
  return AddBodyNode(body, prefix + "/ZerosLike", "ZerosLike", {arg}, {});
}

}  // namespace

Status BuildGradientBody(const FunctionDef& function, GradientBody* out) {
  Graph& body = *function.body;
  const std::string prefix = function.name + "_grad";
  out->first_gradient_node = body.num_nodes();
  std::vector<Endpoint> ys;
  for (int o = 0; o < static_cast<int>(function.rets.size()); ++o) {
    const Endpoint& ret = function.rets[o];
    // Gradients flow into floating and complex outputs and variants (TensorLists, whose
    // gradients are lists).
    const DType type = ret.node->output_type(ret.index);
    if (!IsFloating(type) && !IsComplex(type) && type != DType::kVariant) continue;
    AttrMap attrs;
    attrs.Set("dtype", ret.node->output_type(ret.index));
    attrs.Set("shape", ret.node->output_shape(ret.index));
    FS_ASSIGN_OR_RETURN(Endpoint dy, AddBodyNode(body, prefix + "/dy", "Placeholder", {}, attrs));
    out->dy_outputs.push_back(o);
    out->dys.push_back(dy);
    ys.push_back(ret);
  }
  GradientOptions options;
  options.grad_ys = out->dys;
  options.name_scope = prefix;
  if (ys.empty()) {
    out->grads.assign(function.args.size(), Endpoint{});
    return Status::OK();
  }
  return AddGradients(&body, ys, function.args, options, &out->grads);
}

StatusOr<std::string> AddGradientFunction(const FunctionDef& function, const GradientBody& body,
                                          const std::vector<int>& inputs,
                                          const std::vector<DType>& types) {
  FunctionLibrary& library = function.body->library();
  FunctionDef grad;
  grad.name = library.UniqueName(function.name + "_grad");
  grad.body = function.body;
  grad.args = function.args;
  grad.args.insert(grad.args.end(), body.dys.begin(), body.dys.end());
  for (size_t j = 0; j < inputs.size(); ++j) {
    Endpoint g = body.grads[inputs[j]];
    if (g.node == nullptr) {
      FS_ASSIGN_OR_RETURN(
          g, ZerosLikeArg(*function.body, grad.name, function.args[inputs[j]], types[j]));
    }
    grad.rets.push_back(g);
  }
  std::string name = grad.name;
  FS_RETURN_IF_ERROR(library.Add(std::move(grad)));
  return name;
}

namespace {

// Copies the gradient ops of a function body into a body of their own (SplitGradientFunction).
// Walking back from the gradients, a node is
//  - an argument of the backward function when it is an input of the function or an incoming
//    gradient;
//  - copied when it is a gradient op, or a forward constant (cheaper to copy than to record);
//  - an intermediate (an argument, recorded by the forward pass) when it is a forward node, or a
//    recording loop that a nested loop's gradient added: such a loop runs the forward loop
//    itself (it stands in for it), so it belongs to the forward pass.
class BackwardCopy {
 public:
  BackwardCopy(const FunctionDef& function, const GradientBody& body)
      : function_(function),
        body_(body),
        out_(std::make_shared<Graph>(function.body->shared_library())) {}

  StatusOr<SplitGradient> Build(const std::vector<int>& inputs, const std::vector<DType>& types) {
    const std::string name = function_.body->library().UniqueName(function_.name + "_backward");
    std::vector<Endpoint> grads;
    for (int j : inputs) grads.push_back(body_.grads[j]);
    Mark(grads);
    for (Node* node : function_.body->nodes()) {
      if (!copied_.count(node)) continue;
      FS_ASSIGN_OR_RETURN(copied_[node], Copy(*node));
    }
    FunctionDef backward;
    backward.name = name;
    backward.body = out_;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (grads[k].node != nullptr) {
        FS_ASSIGN_OR_RETURN(Endpoint g, Map(grads[k]));
        backward.rets.push_back(g);
      } else {
        // No gradient flows to this input: zeros like it.
        FS_ASSIGN_OR_RETURN(Endpoint x, Argument(function_.args[inputs[k]]));
        FS_ASSIGN_OR_RETURN(Endpoint zeros, ZerosLikeArg(*out_, name, x, types[k]));
        backward.rets.push_back(zeros);
      }
    }
    SplitGradient split;
    for (int j = 0; j < static_cast<int>(function_.args.size()); ++j) {
      auto it = arguments_.find(Key(function_.args[j]));
      if (it == arguments_.end()) continue;
      split.reads_inputs.push_back(j);
      backward.args.push_back(it->second);
    }
    for (const Endpoint& e : intermediates_) backward.args.push_back(arguments_.at(Key(e)));
    split.intermediates = intermediates_;
    for (const Endpoint& dy : body_.dys) {
      FS_ASSIGN_OR_RETURN(Endpoint arg, Argument(dy));
      backward.args.push_back(arg);
    }
    split.backward = name;
    FS_RETURN_IF_ERROR(out_->library().Add(std::move(backward)));

    FunctionDef forward;
    forward.name = function_.body->library().UniqueName(function_.name + "_forward");
    forward.body = function_.body;
    forward.args = function_.args;
    forward.rets = function_.rets;
    forward.rets.insert(forward.rets.end(), intermediates_.begin(), intermediates_.end());
    split.forward = forward.name;
    FS_RETURN_IF_ERROR(out_->library().Add(std::move(forward)));
    return split;
  }

 private:
  using EndpointKey = std::pair<const Node*, int>;
  static EndpointKey Key(const Endpoint& e) { return {e.node, e.index}; }

  bool IsArgument(const Node* node) const {
    for (const Endpoint& e : function_.args)
      if (e.node == node) return true;
    for (const Endpoint& e : body_.dys)
      if (e.node == node) return true;
    return false;
  }

  bool IsForward(const Node* node) const {
    if (node->id() < body_.first_gradient_node) {
      return !(node->type() == "Const" && node->control_inputs().empty());
    }
    return node->attrs().Find(kRecordsLoopAttr) != nullptr;
  }

  // Marks the nodes to copy (copied_ gets a null entry each) and lists the intermediates, in the
  // order first met.
  void Mark(const std::vector<Endpoint>& from) {
    std::vector<Endpoint> stack;
    for (const Endpoint& e : from)
      if (e.node != nullptr) stack.push_back(e);
    std::set<EndpointKey> seen;
    while (!stack.empty()) {
      const Endpoint e = stack.back();
      stack.pop_back();
      if (IsArgument(e.node)) continue;
      if (IsForward(e.node)) {
        if (seen.insert(Key(e)).second) intermediates_.push_back(e);
        continue;
      }
      if (!copied_.emplace(e.node, nullptr).second) continue;
      for (const Endpoint& in : e.node->inputs()) stack.push_back(in);
      // A control input on the forward side already ran when the backward function runs.
      for (Node* dep : e.node->control_inputs())
        if (!IsArgument(dep) && !IsForward(dep)) stack.push_back(Endpoint{dep, 0});
    }
  }

  // The backward function's Placeholder standing for `e` (created on first use).
  StatusOr<Endpoint> Argument(const Endpoint& e) {
    auto it = arguments_.find(Key(e));
    if (it != arguments_.end()) return it->second;
    NodeSpec spec;
    spec.name = out_->UniqueName(e.node->name());
    spec.op = "Placeholder";
    spec.attrs.Set("dtype", e.node->output_type(e.index));
    spec.attrs.Set("shape", e.node->output_shape(e.index));
    FS_ASSIGN_OR_RETURN(Node * node, out_->AddNode(std::move(spec)));
    return arguments_[Key(e)] = Endpoint{node, 0};
  }

  StatusOr<Endpoint> Map(const Endpoint& e) {
    auto it = copied_.find(e.node);
    if (it != copied_.end()) return Endpoint{it->second, e.index};
    return Argument(e);
  }

  StatusOr<Node*> Copy(const Node& node) {
    NodeSpec spec;
    spec.name = out_->UniqueName(node.name());
    spec.op = node.type();
    for (const Endpoint& in : node.inputs()) {
      FS_ASSIGN_OR_RETURN(Endpoint mapped, Map(in));
      spec.inputs.push_back(mapped);
    }
    for (Node* dep : node.control_inputs()) {
      auto it = copied_.find(dep);
      if (it != copied_.end()) spec.control_inputs.push_back(it->second);
    }
    spec.attrs = node.attrs();
    spec.device = node.requested_device();
    spec.creation_site = node.creation_site();
    return out_->AddNode(std::move(spec));
  }

  const FunctionDef& function_;
  const GradientBody& body_;
  std::shared_ptr<Graph> out_;
  std::unordered_map<const Node*, Node*> copied_;
  std::map<EndpointKey, Endpoint> arguments_;
  std::vector<Endpoint> intermediates_;
};

}  // namespace

StatusOr<SplitGradient> SplitGradientFunction(const FunctionDef& function, const GradientBody& body,
                                              const std::vector<int>& inputs,
                                              const std::vector<DType>& types) {
  return BackwardCopy(function, body).Build(inputs, types);
}

Status CallGradient(GradientContext& ctx, const std::string& function_attr) {
  std::string name;
  FS_RETURN_IF_ERROR(FunctionAttr(ctx.node(), function_attr, &name));
  const FunctionDef* function = ctx.graph()->library().Find(name);
  if (function == nullptr) return errors::NotFound("Function '", name, "' is not in the library");
  GradientBody body;
  FS_RETURN_IF_ERROR(BuildGradientBody(*function, &body));
  std::vector<int> inputs;
  std::vector<DType> types;
  for (int k = 0; k < static_cast<int>(body.grads.size()); ++k) {
    const Endpoint& g = body.grads[k];
    if (g.node == nullptr) continue;
    inputs.push_back(k);
    types.push_back(g.node->output_type(g.index));
  }
  if (inputs.empty()) return Status::OK();
  FS_ASSIGN_OR_RETURN(std::string grad_name, AddGradientFunction(*function, body, inputs, types));
  std::vector<Endpoint> call_inputs = ctx.node().inputs();
  for (int o : body.dy_outputs) call_inputs.push_back(ctx.output_grad(o));
  AttrMap attrs;
  attrs.Set(function_attr, FunctionRef{grad_name});
  attrs.Set("Tout", types);
  Node* call = ctx.AddNode(ctx.node().type(), call_inputs, attrs);
  if (call == nullptr) return ctx.status();
  for (size_t j = 0; j < inputs.size(); ++j)
    ctx.SetInputGrad(inputs[j], Endpoint{call, static_cast<int>(j)});
  return Status::OK();
}

}  // namespace flowstone
