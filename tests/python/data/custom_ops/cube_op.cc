// A differentiable custom op for tests/python/test_load_op_library.py: Cube(x) = x^3, with its
// gradient 3 x^2 dy built from core ops, and float32/float64 kernels.
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace {

using namespace flowstone;

Status CubeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor* y = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &y));
  return DispatchDType<float, double>(x.dtype(), "Cube", [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = y->data<T>();
    for (int64_t i = 0; i < x.shape().num_elements(); ++i) out[i] = in[i] * in[i] * in[i];
    return Status::OK();
  });
}

Status CubeGrad(GradientContext& ctx) {
  Endpoint x = ctx.input(0);
  Endpoint three_x_squared = ctx.Op("Mul", {ctx.ScalarLike(x, 3.0), ctx.Op("Square", {x})});
  ctx.SetInputGrad(0, ctx.Op("Mul", {ctx.output_grad(0), three_x_squared}));
  return ctx.status();
}

}  // namespace

FS_REGISTER_OP(OpBuilder("Cube")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64})
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", CubeKernel)
                   .Gradient(CubeGrad)
                   .Doc("x cubed, element-wise."));
