// Graph plumbing ops: constants, placeholders, identity and no-op.
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status ConstShape(InferenceContext& ctx) {
  Tensor value;
  FS_RETURN_IF_ERROR(ctx.GetAttr("value", &value));
  DType dtype = DType::kInvalid;
  FS_RETURN_IF_ERROR(ctx.GetAttr("dtype", &dtype));
  if (value.dtype() != dtype) {
    return errors::InvalidArgument("Const value has dtype ", DTypeName(value.dtype()),
                                   " but dtype attr is ", DTypeName(dtype));
  }
  ctx.set_output(0, PartialShape(value.shape()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Const")
                   .Output("output", "dtype")
                   .RequiredAttr("value", AttrType::kTensor)
                   .TypeAttr("dtype", kAllTypesAndString)
                   .Shape(ConstShape)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             ctx.SetOutput(0, std::get<Tensor>(*ctx.attrs().Find("value")));
                             return Status::OK();
                           })
                   .NotDifferentiable()
                   .Doc("A constant tensor held in the graph."));

Status PlaceholderShape(InferenceContext& ctx) {
  ctx.set_output(0, ctx.attrs().GetOr<PartialShape>("shape", PartialShape::Unknown()));
  return Status::OK();
}

Status MissingFeed(KernelContext& ctx) {
  DType dtype = ctx.output_type(0);
  PartialShape shape = ctx.attrs().GetOr<PartialShape>("shape", PartialShape::Unknown());
  std::string shape_text = shape.known_rank() ? StrCat(" and shape ", shape.ToString()) : "";
  return errors::InvalidArgument("You must feed a value for placeholder tensor '",
                                 ctx.node().name(), "' with dtype ", DTypeShortName(dtype),
                                 shape_text,
                                 ". Pass it in feed_dict, e.g. sess.run(fetches, "
                                 "feed_dict={",
                                 ctx.node().name(), ": value}).");
}

// kAllTypes, strings, resource handles and variants, which function bodies take as arguments
// (captured variables, TensorArrays, datasets). Spelled out: kAllTypes lives in another file,
// whose static initialization may come later.
const std::vector<DType> kPlaceholderTypes = {
    DType::kFloat32,  DType::kFloat64, DType::kInt32,    DType::kInt64,     DType::kUInt8,
    DType::kBool,     DType::kFloat16, DType::kBFloat16, DType::kComplex64, DType::kComplex128,
    DType::kResource, DType::kVariant, DType::kString};

FS_REGISTER_OP(OpBuilder("Placeholder")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", kPlaceholderTypes)
                   .Attr("shape", AttrValue(PartialShape::Unknown()))
                   .Shape(PlaceholderShape)
                   .Kernel("CPU", MissingFeed)
                   .NotDifferentiable()
                   .Doc("A value that must be fed at run time."));

Status PlaceholderWithDefaultShape(InferenceContext& ctx) {
  PartialShape declared = ctx.attrs().GetOr<PartialShape>("shape", PartialShape::Unknown());
  if (!declared.IsCompatibleWith(ctx.input(0))) {
    return errors::InvalidArgument("default value shape ", ctx.input(0).ToString(),
                                   " is not compatible with the declared shape ",
                                   declared.ToString());
  }
  ctx.set_output(0, declared);
  return Status::OK();
}

Status ForwardInput(KernelContext& ctx) {
  ctx.SetOutput(0, ctx.input(0));
  return Status::OK();
}

Status PassGradient(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.output_grad(0));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("PlaceholderWithDefault")
                   .Input("input", "dtype")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", kAllTypesAndString)
                   .RequiredAttr("shape", AttrType::kShape)
                   .Shape(PlaceholderWithDefaultShape)
                   .Kernel("CPU", ForwardInput)
                   .Gradient(PassGradient)
                   .Doc("Its input, unless a value is fed."));

FS_REGISTER_OP(OpBuilder("Identity")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", ForwardInput)
                   .Gradient(PassGradient)
                   .Doc("Its input, unchanged (no copy)."));

FS_REGISTER_OP(OpBuilder("NoOp")
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", [](KernelContext&) { return Status::OK(); })
                   .NotDifferentiable()
                   .Doc("Does nothing; groups control dependencies."));

}  // namespace
}  // namespace flowstone
