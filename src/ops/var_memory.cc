#include "ops/var_memory.h"

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

}  // namespace flowstone
