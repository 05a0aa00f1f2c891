// tf.custom_gradient while executing eagerly. The decorated function runs with the tapes paused;
// its outputs then pass through one EagerCustomGradient op, which the tapes record, and whose
// gradient calls the function's gradient function in Python: EagerCustomGradientGrad hands the
// incoming gradients to the runner the bindings installed (flowstone/py_func.h) under the token
// the forward op received as its first input. The token is an input rather than an attr, so
// every call shares one cached op and one backward program. (In graph mode custom_gradient uses
// IdentityN with gradient_override_map instead: python/flowstone/ops/custom_gradient_ops.py.)
#include <memory>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/py_func.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Inputs: token, xs (Tin), ys (Tout). Outputs: ys.
Status EagerCustomGradientKernel(KernelContext& ctx) {
  std::vector<DType> xs;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tin", &xs));
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.SetOutput(i, ctx.input(1 + static_cast<int>(xs.size()) + i));
  }
  return Status::OK();
}

Status EagerCustomGradientShape(InferenceContext& ctx) {
  const int first_y = ctx.num_inputs() - ctx.num_outputs();
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input(first_y + i));
  return Status::OK();
}

// The xs' gradients come from the Python gradient function; the token and the ys get none (the
// decorated function's own ops were not recorded).
Status EagerCustomGradientGrad(GradientContext& ctx) {
  std::vector<DType> xs, ys;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tin", &xs));
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tout", &ys));
  // The xs ride along, unused by the kernel, so that a tape watching them records this op and
  // reaches its gradient (an error) rather than finding no path.
  std::vector<Endpoint> inputs{ctx.input(0)};
  for (size_t i = 0; i < xs.size(); ++i) inputs.push_back(ctx.input(1 + static_cast<int>(i)));
  for (int i = 0; i < ctx.num_outputs(); ++i) inputs.push_back(ctx.output_grad(i));
  AttrMap attrs;
  attrs.Set("Tdy", ys);
  attrs.Set("Tdx", xs);
  Node* grad = ctx.AddNode("EagerCustomGradientGrad", inputs, attrs);
  if (grad == nullptr) return ctx.status();
  for (size_t i = 0; i < xs.size(); ++i) {
    ctx.SetInputGrad(1 + static_cast<int>(i), Endpoint{grad, static_cast<int>(i)});
  }
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("EagerCustomGradient")
                   .Input("token", "string")
                   .InputTypeList("xs", "Tin")
                   .InputTypeList("ys", "Tout")
                   .OutputTypeList("outputs", "Tout")
                   .Shape(EagerCustomGradientShape)
                   .Kernel("CPU", EagerCustomGradientKernel)
                   .Gradient(EagerCustomGradientGrad)
                   .Doc("The outputs ys of a tf.custom_gradient function of xs, run eagerly: "
                        "their gradient with respect to xs is the Python gradient function "
                        "registered under token."));

// Inputs: token, xs (Tdx), dys (Tdy). Outputs: dxs (Tdx), from the Python gradient function.
Status EagerCustomGradientGradKernel(KernelContext& ctx) {
  const Tensor& token = ctx.input(0);
  if (token.dtype() != DType::kString || token.num_elements() != 1) {
    return errors::InvalidArgument("EagerCustomGradientGrad's token must be a scalar string, got ",
                                   token.shape().ToString());
  }
  std::shared_ptr<PyFuncRunner> runner = CurrentPyFuncRunner();
  if (runner == nullptr) {
    return errors::FailedPrecondition(
        "EagerCustomGradientGrad needs the Python runtime to call its gradient function; it "
        "cannot run from the C++ API.");
  }
  const int first_dy = 1 + ctx.num_outputs();  // after the token and the xs
  std::vector<Tensor> dys;
  for (int i = first_dy; i < ctx.num_inputs(); ++i) dys.push_back(ctx.input(i));
  std::vector<DType> dx_types(ctx.num_outputs());
  for (int i = 0; i < ctx.num_outputs(); ++i) dx_types[i] = ctx.output_type(i);
  std::vector<Tensor> dxs;
  const std::string& name = token.data<std::string>()[0];
  FS_RETURN_IF_ERROR((*runner)(name, dys, dx_types, &dxs));
  if (dxs.size() != dx_types.size()) {
    return errors::InvalidArgument("The gradient function of custom_gradient ", name, " returned ",
                                   dxs.size(), " gradients for ", dx_types.size(), " inputs");
  }
  for (size_t i = 0; i < dxs.size(); ++i) ctx.SetOutput(static_cast<int>(i), std::move(dxs[i]));
  return Status::OK();
}

// The Python gradient function runs on values copied out of the tapes' reach, so nothing links
// its result to what it computed from: a gradient of it would be silently missing. It fails
// instead (TensorFlow records the gradient function's ops and differentiates them).
Status EagerCustomGradientGradGrad(GradientContext& ctx) {
  return errors::Unimplemented(
      "A second derivative through a tf.custom_gradient function executed eagerly is not "
      "supported (node ",
      ctx.node().name(),
      "): its gradient function's ops are not recorded. Compute it inside a tf.function, "
      "where the gradient function becomes part of the graph.");
}

Status UnknownOutputShapes(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape::Unknown());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("EagerCustomGradientGrad")
                   .Input("token", "string")
                   .InputTypeList("xs", "Tdx")
                   .InputTypeList("dys", "Tdy")
                   .OutputTypeList("dxs", "Tdx")
                   .Stateful()
                   .Shape(UnknownOutputShapes)
                   .Kernel("CPU", EagerCustomGradientGradKernel)
                   .Gradient(EagerCustomGradientGradGrad)
                   .Doc("The gradients of EagerCustomGradient's xs, computed by the Python "
                        "gradient function registered under token from the outputs' dys (the "
                        "xs are not read)."));

}  // namespace
}  // namespace flowstone
