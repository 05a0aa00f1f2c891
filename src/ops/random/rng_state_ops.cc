// RngReadAndSkip: the one stateful step of tf.random.Generator. The generator's state is an int64
// variable [counter_lo, counter_hi, key] (Philox's layout in TensorFlow); each draw reads the
// state and advances the counter under the variable's lock, so concurrent draws never share a
// counter, then samples with a stateless op keyed by (key, counter). This is how TensorFlow's own
// Generator composes its draws from stateless ops.
#include <cstdint>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/resource.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// TensorFlow's RNG algorithm numbers (tf.random.Algorithm).
constexpr int64_t kPhilox = 1;
constexpr int64_t kThreeFry = 2;
constexpr int64_t kAutoSelect = 3;
constexpr int64_t kPhiloxStateSize = 3;

Status RngReadAndSkip(KernelContext& ctx) {
  Var* var = VarFromHandle(ctx.input(0));
  if (ctx.input(1).num_elements() != 1) {
    return errors::InvalidArgument("alg must be a scalar, not of shape ",
                                   ctx.input(1).shape().ToString());
  }
  const int64_t alg = ctx.input(1).ElementAsInt64(0);
  if (alg == kThreeFry) {
    return errors::Unimplemented(
        "The ThreeFry RNG algorithm is not in Flowstone; use Philox "
        "(tf.random.Algorithm.PHILOX or \"auto_select\")");
  }
  if (alg != kPhilox && alg != kAutoSelect) {
    return errors::InvalidArgument("Unsupported algorithm id: ", alg,
                                   " (1 = Philox, 2 = ThreeFry, 3 = auto_select)");
  }
  if (ctx.input(2).num_elements() != 1) {
    return errors::InvalidArgument("delta must be a scalar, not of shape ",
                                   ctx.input(2).shape().ToString());
  }
  const uint64_t delta = static_cast<uint64_t>(ctx.input(2).ElementAsInt64(0));
  std::lock_guard<std::mutex> lock(var->mu());
  if (!var->initialized()) {
    return errors::FailedPrecondition("Attempting to use uninitialized RNG state variable '",
                                      var->name(), "': run its initializer first");
  }
  const Tensor& state = var->value();
  if (state.dtype() != DType::kInt64 || state.rank() != 1 ||
      state.num_elements() < kPhiloxStateSize) {
    return errors::InvalidArgument(
        "The RNG state variable '", var->name(), "' must be an int64 vector of at least ",
        kPhiloxStateSize, " elements, but is ", DTypeName(state.dtype()), state.shape().ToString());
  }
  Tensor before = Tensor::Host(DType::kInt64, TensorShape({kPhiloxStateSize}));
  Tensor after = Tensor::Host(DType::kInt64, state.shape());
  const int64_t* old_state = state.data<int64_t>();
  for (int64_t i = 0; i < state.num_elements(); ++i) {
    if (i < kPhiloxStateSize) before.data<int64_t>()[i] = old_state[i];
    after.data<int64_t>()[i] = old_state[i];
  }
  // The 128-bit counter in words 0 (low) and 1 (high) advances by delta.
  const uint64_t lo = static_cast<uint64_t>(old_state[0]);
  const uint64_t new_lo = lo + delta;
  after.data<int64_t>()[0] = static_cast<int64_t>(new_lo);
  if (new_lo < lo)
    after.data<int64_t>()[1] = static_cast<int64_t>(static_cast<uint64_t>(old_state[1]) + 1);
  var->value() = after;
  ctx.SetOutput(0, before);
  return Status::OK();
}

Status RngReadAndSkipShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape({kPhiloxStateSize}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("RngReadAndSkip")
                   .Input("resource", "resource")
                   .Input("alg", "int32")
                   .Input("delta", "int64")
                   .Output("value", "int64")
                   .Stateful()
                   .Shape(RngReadAndSkipShape)
                   .Kernel("CPU", RngReadAndSkip)
                   .NotDifferentiable()
                   .Doc("Returns an RNG state variable's value and advances its counter by "
                        "delta (atomically)."));

}  // namespace
}  // namespace flowstone
