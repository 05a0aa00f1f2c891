// Resources other than variables (iterators, queues, readers) live in a session's ResourceMgr
// slot as one variant holding the object.
#pragma once

#include "flowstone/resource.h"
#include "flowstone/tensor.h"
#include "flowstone/variant.h"

namespace flowstone {

// The T that `slot` holds as its one variant, or nullptr. Any resource handle can be fed to an
// op, so a slot holding something else (a plain variable's value) is told apart here rather than
// read as a T. Only with slot->mu() held.
template <typename T>
const T* HeldInSlot(Var* slot) {
  const Tensor& value = slot->value();
  if (!slot->initialized() || value.dtype() != DType::kVariant || value.num_elements() != 1) {
    return nullptr;
  }
  return value.data<Variant>()[0].get<T>();
}

}  // namespace flowstone
