// Roll (tf.roll): elements shifted cyclically along axes; shifts of the same axis add up. Its
// gradient rolls the other way. Elements move by element size, so every dtype is served.
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;

Status RollShape(InferenceContext& ctx) {
  const PartialShape& shift = ctx.input(1);
  const PartialShape& axis = ctx.input(2);
  if (shift.known_rank() && shift.rank() > 1) {
    return errors::InvalidArgument("shift must be a scalar or a vector, got shape ",
                                   shift.ToString());
  }
  if (axis.known_rank() && axis.rank() > 1) {
    return errors::InvalidArgument("axis must be a scalar or a vector, got shape ",
                                   axis.ToString());
  }
  if (shift.known_rank() && axis.known_rank() && shift.rank() != axis.rank()) {
    return errors::InvalidArgument("shift and axis must have the same rank, got shapes ",
                                   shift.ToString(), " and ", axis.ToString());
  }
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status RollKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& shift = ctx.input(1);
  const Tensor& axis = ctx.input(2);
  if (shift.rank() > 1 || shift.shape() != axis.shape()) {
    return errors::InvalidArgument(
        "shift and axis must be scalars or vectors of one length, "
        "got shapes ",
        shift.shape().ToString(), " and ", axis.shape().ToString());
  }
  const int rank = input.rank();
  // The total shift of each dimension, in [0, size).
  std::vector<int64_t> total(rank, 0);
  for (int64_t k = 0; k < axis.num_elements(); ++k) {
    int d = 0;
    FS_RETURN_IF_ERROR(array_util::CanonicalAxis(axis.ElementAsInt64(k), rank, "axis", &d));
    const int64_t n = input.dim(d);
    if (n > 0) total[d] = ((total[d] + shift.ElementAsInt64(k) % n) % n + n) % n;
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, input.shape(), &out));
  if (input.num_elements() == 0) return Status::OK();
  return array_util::DispatchElementSize(DTypeSize(input.dtype()), [&]<typename U>() -> Status {
    const U* src = input.data<U>();
    U* dst = out->data<U>();
    // Output element j takes input element j - shift along every dimension (cyclically).
    ctx.ParallelFor(input.num_elements(), rank * 4 + 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        int64_t rest = j;
        int64_t source = 0;
        int64_t stride = 1;
        for (int d = rank - 1; d >= 0; --d) {
          const int64_t n = input.dim(d);
          int64_t coord = rest % n - total[d];
          if (coord < 0) coord += n;
          source += coord * stride;
          rest /= n;
          stride *= n;
        }
        dst[j] = src[source];
      }
    });
    return Status::OK();
  });
}

Status RollGrad(GradientContext& ctx) {
  ctx.SetInputGrad(
      0, ctx.Op("Roll", {ctx.output_grad(0), ctx.Op("Neg", {ctx.input(1)}), ctx.input(2)}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Roll")
                   .Input("input", "T")
                   .Input("shift", "Tshift")
                   .Input("axis", "Taxis")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tshift", kIndexTypes)
                   .TypeAttr("Taxis", kIndexTypes)
                   .Shape(RollShape)
                   .Kernel("CPU", RollKernel)
                   .Gradient(RollGrad)
                   .Doc("input with its elements shifted cyclically by shift[i] along axis[i] "
                        "(tf.roll)."));

}  // namespace
}  // namespace flowstone
