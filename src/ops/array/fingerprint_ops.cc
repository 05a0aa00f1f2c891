// Fingerprint (tf.fingerprint): a 64-bit FarmHash fingerprint of each row (index of dimension 0)
// of a tensor's bytes, as 8 little-endian uint8 values, with TensorFlow's method "farmhash64"
// (FarmHash's Fingerprint64, its "na" hash, from ops/string/fingerprint.h). String tensors are
// fingerprinted one string per row, so rank 1 only.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/string/fingerprint.h"

namespace flowstone {
namespace {

Status FingerprintKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& method = ctx.input(1);
  if (method.rank() != 0 || method.dtype() != DType::kString) {
    return errors::InvalidArgument("`method` should be a scalar string, got shape ",
                                   method.shape().ToString());
  }
  const std::string& name = *method.data<std::string>();
  if (name != "farmhash64") {
    return errors::InvalidArgument("Unsupported fingerprint method: ", name,
                                   " (only \"farmhash64\")");
  }
  if (data.rank() < 1) {
    return errors::InvalidArgument("`data` should have at least one dimension, got a scalar");
  }
  const int64_t rows = data.dim(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape({rows, 8}), &out));
  uint8_t* dst = out->data<uint8_t>();
  if (data.dtype() == DType::kString && data.rank() != 1) {
    return errors::Unimplemented("Fingerprint of string tensors of rank ", data.rank(),
                                 " is not in Flowstone; fingerprint a vector of strings");
  }
  const int64_t row_bytes =
      rows == 0 ? 0 : static_cast<int64_t>(data.bytes()) / rows;  // numeric rows
  for (int64_t r = 0; r < rows; ++r) {
    uint64_t fingerprint;
    if (data.dtype() == DType::kString) {
      const std::string& s = data.data<std::string>()[r];
      fingerprint = Fingerprint64(s);
    } else {
      fingerprint =
          Fingerprint64(std::string_view(static_cast<const char*>(data.raw_data()) + r * row_bytes,
                                         static_cast<size_t>(row_bytes)));
    }
    for (int k = 0; k < 8; ++k) dst[r * 8 + k] = static_cast<uint8_t>(fingerprint >> (8 * k));
  }
  return Status::OK();
}

Status FingerprintShape(InferenceContext& ctx) {
  const PartialShape& data = ctx.input(0);
  if (data.known_rank() && data.rank() < 1) {
    return errors::InvalidArgument("`data` should have at least one dimension, got a scalar");
  }
  ctx.set_output(0, PartialShape({data.known_rank() ? data.dim(0) : -1, 8}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Fingerprint")
                   .Input("data", "T")
                   .Input("method", "string")
                   .Output("fingerprint", "uint8")
                   .TypeAttr("T", kAllTypesAndString)
                   .Shape(FingerprintShape)
                   .Kernel("CPU", FingerprintKernel)
                   .NotDifferentiable()
                   .Doc("A 64-bit fingerprint of each row of data, as 8 little-endian bytes."));

}  // namespace
}  // namespace flowstone
