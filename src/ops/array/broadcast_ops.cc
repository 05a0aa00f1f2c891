// BroadcastTo (tf.broadcast_to): input repeated numpy-style to a given shape. The output is a
// strided view of the input with stride 0 along the broadcast dimensions, copied by element size,
// so every dtype is served. Its gradient sums over those dimensions.
#include <cstring>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array/scatter_util.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;

// Whether `input` broadcasts to `target` (dims aligned from the right; unknown dims pass).
bool Broadcasts(const std::vector<int64_t>& input, const std::vector<int64_t>& target) {
  if (input.size() > target.size()) return false;
  const size_t offset = target.size() - input.size();
  for (size_t i = 0; i < input.size(); ++i) {
    const int64_t in = input[i];
    const int64_t out = target[offset + i];
    if (in >= 0 && out >= 0 && in != 1 && in != out) return false;
  }
  return true;
}

std::string ShapeString(const std::vector<int64_t>& dims) { return array_util::JoinInts(dims); }

Status BroadcastToShape(InferenceContext& ctx) {
  PartialShape target;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(1, &target));
  const PartialShape& input = ctx.input(0);
  if (input.known_rank() && target.known_rank() &&
      !Broadcasts(input.dims().ToVector(), target.dims().ToVector())) {
    return errors::InvalidArgument("Unable to broadcast tensor of shape ", input.ToString(),
                                   " to tensor of shape ", target.ToString());
  }
  ctx.set_output(0, target);
  return Status::OK();
}

Status BroadcastToKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& shape_tensor = ctx.input(1);
  if (shape_tensor.rank() != 1) {
    return errors::InvalidArgument("shape must be a vector, got shape ",
                                   shape_tensor.shape().ToString());
  }
  const std::vector<int64_t> target = array_util::IntValues(shape_tensor);
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] < 0) {
      return errors::InvalidArgument("shape[", i, "] = ", target[i], " must be non-negative");
    }
  }
  if (!Broadcasts(input.shape().ToVector(), target)) {
    return errors::InvalidArgument("Unable to broadcast tensor of shape ", input.shape().ToString(),
                                   " to tensor of shape ", ShapeString(target));
  }
  TensorShape out_shape;
  FS_RETURN_IF_ERROR(scatter_util::CheckedShape(target, &out_shape));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  if (target.empty()) {
    std::memcpy(out->raw_data(), input.raw_data(), input.bytes());
    return Status::OK();
  }
  // Input strides aligned with the target's dims: 0 where the input has size 1 or no dim.
  const int offset = static_cast<int>(target.size()) - input.rank();
  std::vector<int64_t> strides(target.size(), 0);
  int64_t stride = 1;
  for (int d = input.rank() - 1; d >= 0; --d) {
    strides[offset + d] = input.dim(d) == 1 ? 0 : stride;
    stride *= input.dim(d);
  }
  return array_util::DispatchElementSize(DTypeSize(input.dtype()), [&]<typename U>() -> Status {
    array_util::StridedGather(ctx, input.data<U>(), target, strides, out->data<U>());
    return Status::OK();
  });
}

// The gradient summed over the broadcast dimensions, reshaped to the input's shape.
Status BroadcastToGrad(GradientContext& ctx) {
  const Endpoint input_shape = ctx.Shape(ctx.input(0));
  Endpoint target = ctx.input(1);
  if (ctx.input_type(1) != DType::kInt32) {  // BroadcastGradientArgs reads int32 shapes
    AttrMap cast;
    cast.Set("DstT", DType::kInt32);
    target = ctx.Op("Cast", {target}, cast);
  }
  Node* args = ctx.AddNode("BroadcastGradientArgs", {target, input_shape});
  if (args == nullptr) return ctx.status();
  AttrMap keep;
  keep.Set("keep_dims", true);
  const Endpoint summed = ctx.Op("Sum", {ctx.output_grad(0), Endpoint{args, 1}}, keep);
  ctx.SetInputGrad(0, ctx.Op("Reshape", {summed, input_shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("BroadcastTo")
                   .Input("input", "T")
                   .Input("shape", "Tidx")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tidx", kIndexTypes, DType::kInt32)
                   .Shape(BroadcastToShape)
                   .Kernel("CPU", BroadcastToKernel)
                   .Gradient(BroadcastToGrad)
                   .Doc("input broadcast numpy-style to `shape` (tf.broadcast_to)."));

}  // namespace
}  // namespace flowstone
