// Timestamp: the time of the op's run, in seconds since the Unix epoch (tf.timestamp).
#include <chrono>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status TimestampKernel(KernelContext& ctx) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  ctx.SetOutput(0, Tensor::Scalar<double>(std::chrono::duration<double>(now).count()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Timestamp")
                   .Output("ts", "float64")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", TimestampKernel)
                   .NotDifferentiable()
                   .Doc("Seconds since the Unix epoch when the op runs, as a float64."));

}  // namespace
}  // namespace flowstone
