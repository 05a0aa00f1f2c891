#include "ops/optimizer_support.h"

#include <algorithm>
#include <cstring>

#include "flowstone/shape_inference.h"
#include "ops/var_memory.h"

namespace flowstone {

LockedVars::LockedVars(KernelContext& ctx, const std::vector<int>& indices, const CopyFn& copy) {
  for (int i : indices) vars_.push_back(VarFromHandle(ctx.input(i)));
  std::vector<Var*> order = vars_;
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  for (Var* v : order) locks_.emplace_back(v->mu());
  status_ = Prepare(ctx, copy);
}

Status LockedVars::Prepare(KernelContext& ctx, const CopyFn& copy) {
  for (Var* v : vars_) {
    if (!v->initialized()) {
      return errors::FailedPrecondition(
          "Attempting to use uninitialized value ", v->name(),
          ". Run the variables' initializers (tf.global_variables_initializer()) after "
          "creating the optimizer: its slot variables need initializing too.");
    }
    FS_RETURN_IF_ERROR(MoveVarToMemoryOf(v, ctx.device()));
    if (HoldsObjects(v->value().dtype())) {  // a string variable: no update rule reads it
      return errors::InvalidArgument(ctx.node().type(), " cannot update ", v->name(),
                                     ", a variable of dtype ", DTypeName(v->value().dtype()));
    }
  }
  const Tensor& first = vars_[0]->value();
  for (Var* v : vars_) {
    if (v->value().shape() != first.shape() || v->value().dtype() != first.dtype()) {
      return errors::InvalidArgument("Slot ", v->name(), " has shape ",
                                     v->value().shape().ToString(), " but variable ",
                                     vars_[0]->name(), " has ", first.shape().ToString());
    }
  }
  for (Var* v : vars_) {
    if (v->value().RefCountIsOne()) continue;
    Tensor private_copy;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(v->value().dtype(), v->value().shape(), &private_copy));
    FS_RETURN_IF_ERROR(copy(ctx, v->value(), &private_copy));
    v->value() = private_copy;
  }
  return Status::OK();
}

Status CheckOptimizerInputs(KernelContext& ctx, const LockedVars& vars, int grad_index) {
  FS_RETURN_IF_ERROR(vars.status());
  const Tensor& grad = ctx.input(grad_index);
  if (grad.shape() != vars.shape()) {
    return errors::InvalidArgument("Gradient of shape ", grad.shape().ToString(),
                                   " does not match variable shape ", vars.shape().ToString());
  }
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (i != grad_index && ctx.input(i).dtype() != DType::kResource &&
        ctx.input(i).num_elements() != 1) {
      return errors::InvalidArgument("Input ", i, " of ", ctx.node().type(),
                                     " must be a scalar, got shape ",
                                     ctx.input(i).shape().ToString());
    }
  }
  return Status::OK();
}

Status HostCopy(KernelContext&, const Tensor& from, Tensor* to) {
  std::memcpy(to->raw_data(), from.raw_data(), from.bytes());
  return Status::OK();
}

OpBuilder ApplyOp(const std::string& name, const std::vector<std::string>& resources,
                  const std::vector<std::string>& inputs) {
  OpBuilder b(name);
  for (const std::string& r : resources) b.Input(r, "resource");
  for (const std::string& in : inputs) b.Input(in, "T");
  b.TypeAttr("T", kFloatTypes)
      .Attr("use_locking", false)
      .Stateful()
      .Shape([](InferenceContext&) { return Status::OK(); })
      .NotDifferentiable();
  return b;
}

}  // namespace flowstone
