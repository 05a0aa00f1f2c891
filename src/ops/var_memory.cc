#include "ops/var_memory.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace flowstone {

Status MoveVarToMemoryOf(Var* var, Device* device) {
  Device* target = device == nullptr || device->host_memory() ? nullptr : device;
  if (var->device() == target) return Status::OK();
  if (var->initialized()) {
    Tensor value = var->value();
    if (var->device() != nullptr) {
      Tensor on_host;
      FS_RETURN_IF_ERROR(var->device()->CopyToHost(value, &on_host));
      value = std::move(on_host);
    }
    if (target != nullptr) {
      Tensor on_device;
      FS_RETURN_IF_ERROR(target->CopyFromHost(value, &on_device));
      value = std::move(on_device);
    }
    var->value() = std::move(value);
  }
  var->set_device(target);
  return Status::OK();
}

WritableVar::WritableVar(KernelContext& ctx, int value_input)
    : var_(VarFromHandle(ctx.input(0))), lock_(var_->mu()) {
  status_ = Prepare(ctx, value_input);
}

Status WritableVar::Prepare(KernelContext& ctx, int value_input) {
  if (!var_->initialized()) {
    return errors::FailedPrecondition(
        "Attempting to use uninitialized value ", var_->name(),
        ". Initialize it first: run sess.run(tf.global_variables_initializer()).");
  }
  FS_RETURN_IF_ERROR(MoveVarToMemoryOf(var_, ctx.device()));
  const Tensor& values = ctx.input(value_input);
  if (values.dtype() != var_->value().dtype()) {
    return errors::InvalidArgument("Cannot update variable '", var_->name(), "' of dtype ",
                                   DTypeName(var_->value().dtype()), " with values of dtype ",
                                   DTypeName(values.dtype()));
  }
  Tensor& current = var_->value();
  if (current.RefCountIsOne()) return Status::OK();
  Tensor copy;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(current.dtype(), current.shape(), &copy));
  if (current.dtype() == DType::kString) {  // not trivially copyable
    std::copy_n(current.data<std::string>(), current.num_elements(), copy.data<std::string>());
  } else if (current.bytes() > 0) {
    std::memcpy(copy.raw_data(), current.raw_data(), current.bytes());
  }
  current = copy;
  return Status::OK();
}

}  // namespace flowstone
