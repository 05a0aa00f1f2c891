// IdentityN: several tensors passed through as one node, as TensorFlow's graphs (Keras models,
// grappler's output) carry it, for imported graphs.
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status IdentityNShape(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
  return Status::OK();
}

Status IdentityNKernel(KernelContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.SetOutput(i, ctx.input(i));
  return Status::OK();
}

// Each output's gradient is its input's.
Status IdentityNGrad(GradientContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_output_grad(i)) ctx.SetInputGrad(i, ctx.output_grad(i));
  }
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("IdentityN")
                   .InputTypeList("input", "T")
                   .OutputTypeList("output", "T")
                   .Shape(IdentityNShape)
                   .Kernel("CPU", IdentityNKernel)
                   .Gradient(IdentityNGrad)
                   .Doc("Returns its inputs unchanged, as one node."));

}  // namespace
}  // namespace flowstone
