// SerializeTensor and ParseTensor (tf.io.serialize_tensor / parse_tensor): a tensor to and from
// a serialized TensorProto in a string scalar, the form TFRecord pipelines store tensors in.
// Bytes written by TensorFlow parse here and the other way round. Neither is differentiable.
#include <string>

#include "flowstone/graph_def.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status SerializeTensorKernel(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return SerializeTensorProto(ctx.input(0), out->data<std::string>());
}

FS_REGISTER_OP(OpBuilder("SerializeTensor")
                   .Input("tensor", "T")
                   .Output("serialized", "string")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", SerializeTensorKernel)
                   .NotDifferentiable()
                   .Doc("The tensor as a serialized TensorProto (a string scalar)."));

Status ParseTensorKernel(KernelContext& ctx) {
  const Tensor& serialized = ctx.input(0);
  if (serialized.rank() != 0) {
    return errors::InvalidArgument("Expected `serialized` to be a scalar, got shape: ",
                                   serialized.shape().ToString());
  }
  Tensor parsed;
  FS_RETURN_IF_ERROR(ParseTensorProto(*serialized.data<std::string>(), "`serialized`", &parsed));
  const DType expected = ctx.output_type(0);
  if (parsed.dtype() != expected) {
    return errors::InvalidArgument("Type mismatch between parsed tensor (",
                                   DTypeName(parsed.dtype()), ") and dtype (", DTypeName(expected),
                                   ")");
  }
  ctx.SetOutput(0, std::move(parsed));
  return Status::OK();
}

Status ParseTensorShape(InferenceContext& ctx) {
  PartialShape scalar;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 0, &scalar));
  ctx.set_output(0, PartialShape::Unknown());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ParseTensor")
                   .Input("serialized", "string")
                   .Output("output", "out_type")
                   .TypeAttr("out_type", kAllTypesAndString)
                   .Shape(ParseTensorShape)
                   .Kernel("CPU", ParseTensorKernel)
                   .NotDifferentiable()
                   .Doc("The tensor a serialized TensorProto holds; its dtype must be "
                        "out_type."));

}  // namespace
}  // namespace flowstone
