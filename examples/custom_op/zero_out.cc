// A custom op in its own shared library, TensorFlow's "Create an op" example on Flowstone:
// ZeroOut keeps the first element of its int32 input and zeroes the rest.
//
// Build and use it (build.sh does the first line):
//   g++ -std=c++20 -shared -fPIC -O2 zero_out.cc -o zero_out.so \
//       $(python -c "import flowstone as tf; print(' '.join(tf.sysconfig.get_compile_flags()))") \
//       $(python -c "import flowstone as tf; print(' '.join(tf.sysconfig.get_link_flags()))")
//   zero_out = tf.load_op_library("./zero_out.so").zero_out
//   tf.Session().run(zero_out([[1, 2], [3, 4]]))  # [[1, 0], [0, 0]]
#include <algorithm>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace {

using flowstone::KernelContext;
using flowstone::Status;
using flowstone::Tensor;

Status ZeroOutKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  Tensor* output = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &output));
  const int32_t* in = input.data<int32_t>();
  int32_t* out = output->data<int32_t>();
  const int64_t n = input.shape().num_elements();
  std::fill(out, out + n, 0);
  if (n > 0) out[0] = in[0];
  return Status::OK();
}

}  // namespace

FS_REGISTER_OP(flowstone::OpBuilder("ZeroOut")
                   .Input("to_zero", "int32")
                   .Output("zeroed", "int32")
                   .Shape(flowstone::shape_fns::Unchanged)
                   .Kernel("CPU", ZeroOutKernel)
                   .NotDifferentiable()
                   .Doc("Its input with every element but the first set to zero."));
