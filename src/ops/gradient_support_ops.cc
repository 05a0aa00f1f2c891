// Ops that backpropagation builds: AddN (summing gradient contributions), BroadcastGradientArgs
// (which axes a broadcasting op expanded) and StopGradient.
#include <algorithm>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/data_structures/tensor_list.h"
#include "ops/elementwise.h"

namespace flowstone {
namespace {

Status AddNShape(InferenceContext& ctx) {
  if (ctx.num_inputs() == 0) {
    return errors::InvalidArgument("Attr 'N' of 'AddN' Op passed 0 less than minimum 1.");
  }
  PartialShape merged = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    PartialShape next;
    Status s = merged.Merge(ctx.input(i), &next);
    if (!s.ok()) {
      return errors::InvalidArgument("AddN inputs must have the same shape, but input ", i,
                                     " has shape ", ctx.input(i).ToString(),
                                     " and earlier "
                                     "inputs have ",
                                     merged.ToString());
    }
    merged = next;
  }
  ctx.set_output(0, merged);
  return Status::OK();
}

Status AddNKernel(KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).shape() != first.shape()) {
      return errors::InvalidArgument("AddN inputs must have the same shape, but input ", i,
                                     " has shape ", ctx.input(i).shape().ToString(),
                                     " and input 0 has ", first.shape().ToString());
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, first.shape(), &out));
  return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
      first.dtype(), "AddN", [&]<typename T>() -> Status {
        const int64_t n = first.num_elements();
        const int num = ctx.num_inputs();
        ctx.ParallelFor(n, 2 * num, [&](int64_t begin, int64_t end) {
          T* dst = out->data<T>();
          const T* a = ctx.input(0).data<T>();
          for (int64_t k = begin; k < end; ++k) dst[k] = a[k];
          for (int i = 1; i < num; ++i) {
            const T* src = ctx.input(i).data<T>();
            // Integers wrap around on overflow, as in TensorFlow.
            for (int64_t k = begin; k < end; ++k) dst[k] = WrapAdd(dst[k], src[k]);
          }
        });
        return Status::OK();
      });
}

std::vector<DType> AddNTypes() {
  std::vector<DType> types = kRealTypes;
  types.insert(types.end(), {DType::kComplex64, DType::kComplex128, DType::kVariant});
  return types;
}

Status AddNGrad(GradientContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.SetInputGrad(i, ctx.output_grad(0));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("AddN")
                   .InputList("inputs", "T", "N")
                   .Output("sum", "T")
                   .TypeAttr("T", AddNTypes())
                   .Shape(AddNShape)
                   // Gradients of TensorLists (variants) add up element by element.
                   .Kernel("CPU", AddTensorLists, {DType::kVariant})
                   .Kernel("CPU", AddNKernel)
                   .Gradient(AddNGrad)
                   .Doc("Elementwise sum of N tensors of one shape."));

Status BroadcastGradientArgsShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape::UnknownOfRank(1));
  ctx.set_output(1, PartialShape::UnknownOfRank(1));
  return Status::OK();
}

// For shapes s0 and s1 broadcast together, the axes of the result each input must be summed over.
Status BroadcastGradientArgsKernel(KernelContext& ctx) {
  const Tensor& s0 = ctx.input(0);
  const Tensor& s1 = ctx.input(1);
  if (s0.rank() != 1 || s1.rank() != 1) {
    return errors::InvalidArgument("BroadcastGradientArgs takes two shape vectors");
  }
  const int rank = static_cast<int>(std::max(s0.num_elements(), s1.num_elements()));
  std::vector<int32_t> r0, r1;
  for (int i = 0; i < rank; ++i) {
    int i0 = i - (rank - static_cast<int>(s0.num_elements()));
    int i1 = i - (rank - static_cast<int>(s1.num_elements()));
    int64_t d0 = i0 >= 0 ? s0.ElementAsInt64(i0) : 1;
    int64_t d1 = i1 >= 0 ? s1.ElementAsInt64(i1) : 1;
    if (d0 != d1 && d0 != 1 && d1 != 1) {
      return errors::InvalidArgument("Incompatible shapes in BroadcastGradientArgs: ", d0, " vs. ",
                                     d1, " at axis ", i);
    }
    if (d0 == 1 && d1 != 1) r0.push_back(i);
    if (d1 == 1 && d0 != 1) r1.push_back(i);
    if (d0 == 1 && d1 == 1) {
      r0.push_back(i);
      r1.push_back(i);
    }
  }
  // The outputs have the inputs' dtype T: int32, or int64 in graphs TensorFlow wrote for it.
  return DispatchDType<int32_t, int64_t>(
      s0.dtype(), "BroadcastGradientArgs", [&]<typename T>() -> Status {
        for (int k = 0; k < 2; ++k) {
          const std::vector<int32_t>& r = k == 0 ? r0 : r1;
          Tensor* out;
          FS_RETURN_IF_ERROR(
              ctx.AllocateOutput(k, TensorShape{static_cast<int64_t>(r.size())}, &out));
          std::copy(r.begin(), r.end(), out->data<T>());
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("BroadcastGradientArgs")
                   .Input("s0", "T")
                   .Input("s1", "T")
                   .Output("r0", "T")
                   .Output("r1", "T")
                   .TypeAttr("T", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .Shape(BroadcastGradientArgsShape)
                   .Kernel("CPU", BroadcastGradientArgsKernel)
                   .NotDifferentiable()
                   .Doc("Reduction axes for the gradients of a broadcasting binary op."));

FS_REGISTER_OP(OpBuilder("StopGradient")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .Shape(shape_fns::Unchanged)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             ctx.SetOutput(0, ctx.input(0));
                             return Status::OK();
                           })
                   .NotDifferentiable()
                   .Doc("Its input; no gradient flows through it."));

}  // namespace
}  // namespace flowstone
