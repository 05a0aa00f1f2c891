// CheckNumericsV2: its input, after checking it holds no NaN or infinity; the error says which
// of -Inf, +Inf and NaN it found (CheckNumerics says only "Inf" or "NaN"). tf.debugging's
// enable_check_numerics puts one after every floating-point output.
#include <cmath>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

Status CheckNumericsV2Kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool negative_inf = false, positive_inf = false, nan = false;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double v = x.ElementAsDouble(i);
    nan |= std::isnan(v);
    negative_inf |= std::isinf(v) && v < 0;
    positive_inf |= std::isinf(v) && v > 0;
  }
  std::vector<std::string> found;
  if (negative_inf) found.push_back("-Inf");
  if (positive_inf) found.push_back("+Inf");
  if (nan) found.push_back("NaN");
  if (!found.empty()) {
    std::string what = found[0];
    if (found.size() == 2) what = found[0] + " and " + found[1];
    if (found.size() == 3) what = found[0] + ", " + found[1] + ", and " + found[2];
    return errors::InvalidArgument(ctx.attrs().GetOr<std::string>("message", ""), " : Tensor had ",
                                   what, " values");
  }
  ctx.SetOutput(0, x);
  return Status::OK();
}

// The gradient is checked too, naming the forward check.
Status CheckNumericsV2Grad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("message", "Not a number (NaN) or infinity (Inf) values detected in gradient. " +
                           ctx.attrs().GetOr<std::string>("message", ""));
  ctx.SetInputGrad(0, ctx.Op("CheckNumericsV2", {ctx.output_grad(0)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("CheckNumericsV2")
                   .Input("tensor", "T")
                   .Output("output", "T")
                   .TypeAttr("T",
                             {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64})
                   .RequiredAttr("message", AttrType::kString)
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU", CheckNumericsV2Kernel)
                   .Gradient(CheckNumericsV2Grad)
                   .Doc("Its input, after checking it has no NaN or infinity; else "
                        "InvalidArgument saying which of -Inf, +Inf and NaN it holds."));

}  // namespace
}  // namespace flowstone
