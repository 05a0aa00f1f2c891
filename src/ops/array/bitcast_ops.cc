// Bitcast: the bytes of a tensor read as another dtype (tf.bitcast). Equal sizes keep the
// shape; a wider input gains a last dimension of size(input) / size(type); a narrower one loses
// its last dimension, which must be size(type) / size(input). The bytes are copied (TensorFlow
// shares the buffer; the values are the same).
#include <cstdint>
#include <cstring>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// Every dtype with a fixed-size numeric element.
const std::vector<DType> kBitcastTypes = {DType::kFloat32,  DType::kFloat64,   DType::kInt32,
                                          DType::kInt64,    DType::kUInt8,     DType::kFloat16,
                                          DType::kBFloat16, DType::kComplex64, DType::kComplex128};

// The output dims for input dims `in` (rank -1 when unknown), or an error.
Status BitcastDims(const std::vector<int64_t>& in, DType from, DType to,
                   std::vector<int64_t>* out) {
  const int64_t in_size = static_cast<int64_t>(DTypeSize(from));
  const int64_t out_size = static_cast<int64_t>(DTypeSize(to));
  *out = in;
  if (in_size > out_size) {
    out->push_back(in_size / out_size);
  } else if (in_size < out_size) {
    const int64_t want = out_size / in_size;
    if (in.empty() || (in.back() >= 0 && in.back() != want)) {
      return errors::InvalidArgument("Cannot bitcast from ", DTypeName(from), " to ", DTypeName(to),
                                     ": the input's last "
                                     "dimension must be ",
                                     want, " (", out_size, " bytes / ", in_size,
                                     "), but the shape is ", PartialShape(in).ToString());
    }
    out->pop_back();
  }
  return Status::OK();
}

Status BitcastKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> dims;
  FS_RETURN_IF_ERROR(BitcastDims(x.shape().ToVector(), x.dtype(), ctx.output_type(0), &dims));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  if (x.bytes() > 0) std::memcpy(out->raw_data(), x.raw_data(), x.bytes());
  return Status::OK();
}

Status BitcastShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims;
  FS_RETURN_IF_ERROR(BitcastDims(in.ToVector(), ctx.input_type(0), ctx.output_type(0), &dims));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Bitcast")
                   .Input("input", "T")
                   .Output("output", "type")
                   .TypeAttr("T", kBitcastTypes)
                   .TypeAttr("type", kBitcastTypes)
                   .Shape(BitcastShape)
                   .Kernel("CPU", BitcastKernel)
                   .NotDifferentiable()
                   .Doc("The input's bytes as elements of another dtype."));

}  // namespace
}  // namespace flowstone
