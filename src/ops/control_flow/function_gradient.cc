#include "function_gradient.h"

#include "function_call.h"

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
