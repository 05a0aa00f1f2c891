// If and StatelessIf: run one of two library functions on the inputs (TF's op defs: Tcond, Tin,
// Tout, then_branch, else_branch, output_shapes). Only the branch taken runs, so the other
// branch's failures (an uninitialized variable, an integer division by zero) never happen.
#include "flowstone/op_registry.h"
#include "function_call.h"
#include "function_gradient.h"

namespace flowstone {
namespace {

Status IfShape(InferenceContext& ctx) {
  std::vector<DType> tin, tout;
  FS_RETURN_IF_ERROR(ctx.GetAttr("Tin", &tin));
  FS_RETURN_IF_ERROR(ctx.GetAttr("Tout", &tout));
  const FunctionDef* then_branch;
  const FunctionDef* else_branch;
  FS_RETURN_IF_ERROR(CheckCallSignature(ctx, "then_branch", tin, &tout, &then_branch));
  FS_RETURN_IF_ERROR(CheckCallSignature(ctx, "else_branch", tin, &tout, &else_branch));
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("output_shapes", &shapes));
  if (shapes.size() == tout.size()) {
    ctx.outputs() = shapes;
    return Status::OK();
  }
  std::vector<PartialShape> then_shapes = ReturnShapes(*then_branch);
  std::vector<PartialShape> else_shapes = ReturnShapes(*else_branch);
  for (size_t i = 0; i < tout.size(); ++i) {
    ctx.set_output(static_cast<int>(i),
                   MostSpecificCompatibleShape(then_shapes[i], else_shapes[i]));
  }
  return Status::OK();
}

class IfKernel final : public OpKernel {
 public:
  explicit IfKernel(const Node& node)
      : OpKernel(node),
        then_(node.attrs().GetOr<FunctionRef>("then_branch", {}).name),
        else_(node.attrs().GetOr<FunctionRef>("else_branch", {}).name) {}

  Status Compute(KernelContext& ctx) override {
    bool pred;
    FS_RETURN_IF_ERROR(ToBool(ctx.input(0), &pred));
    std::vector<Tensor> args(ctx.num_inputs() - 1);
    for (int i = 1; i < ctx.num_inputs(); ++i) args[i - 1] = ctx.input(i);
    std::vector<Tensor> rets;
    FS_RETURN_IF_ERROR((pred ? then_ : else_).Call(ctx, args, &rets));
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(rets[i]));
    return Status::OK();
  }

 private:
  FunctionCaller then_;
  FunctionCaller else_;
};

// An If over the branches' gradient functions. Both must return the same signature, so an input
// with a gradient in one branch only gets zeros from the other.
Status IfGradient(GradientContext& ctx) {
  const FunctionLibrary& library = ctx.graph()->library();
  const FunctionDef* branches[2];
  GradientBody bodies[2];
  const char* attrs[2] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    std::string name;
    FS_RETURN_IF_ERROR(FunctionAttr(ctx.node(), attrs[b], &name));
    branches[b] = library.Find(name);
    if (branches[b] == nullptr) {
      return errors::NotFound("Function '", name, "' is not in the library");
    }
    FS_RETURN_IF_ERROR(BuildGradientBody(*branches[b], &bodies[b]));
  }
  std::vector<int> inputs;
  std::vector<DType> types;
  for (int k = 0; k < static_cast<int>(bodies[0].grads.size()); ++k) {
    const Endpoint& g = bodies[0].grads[k].node ? bodies[0].grads[k] : bodies[1].grads[k];
    if (g.node == nullptr) continue;
    inputs.push_back(k);
    types.push_back(g.node->output_type(g.index));
  }
  if (inputs.empty()) return Status::OK();
  AttrMap grad_attrs;
  for (int b = 0; b < 2; ++b) {
    FS_ASSIGN_OR_RETURN(std::string name,
                        AddGradientFunction(*branches[b], bodies[b], inputs, types));
    grad_attrs.Set(attrs[b], FunctionRef{name});
  }
  grad_attrs.Set("Tout", types);
  std::vector<Endpoint> grad_inputs = ctx.node().inputs();
  for (int o : bodies[0].dy_outputs) grad_inputs.push_back(ctx.output_grad(o));
  Node* grad_if = ctx.AddNode(ctx.node().type(), grad_inputs, grad_attrs);
  if (grad_if == nullptr) return ctx.status();
  // Input 0 is the condition; branch input k is the op's input k + 1.
  for (size_t j = 0; j < inputs.size(); ++j) {
    ctx.SetInputGrad(inputs[j] + 1, Endpoint{grad_if, static_cast<int>(j)});
  }
  return Status::OK();
}

bool RegisterIfOps() {
  for (const char* name : {"If", "StatelessIf"}) {
    OpBuilder b(name);
    b.Input("cond", "Tcond")
        .InputTypeList("input", "Tin")
        .OutputTypeList("output", "Tout")
        .TypeAttr("Tcond")
        .RequiredAttr("then_branch", AttrType::kFunc)
        .RequiredAttr("else_branch", AttrType::kFunc)
        .Attr("output_shapes", AttrValue(std::vector<PartialShape>{}))
        .Shape(IfShape)
        .KernelClass<IfKernel>("CPU")
        .Gradient(IfGradient);
    // TF marks If stateful (its branches may be) and StatelessIf not.
    if (std::string(name) == "If") b.Stateful();
    OpRegistrar registrar(b);
  }
  return true;
}
const bool kIfOpsRegistered = RegisterIfOps();

}  // namespace
}  // namespace flowstone
