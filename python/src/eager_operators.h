// EagerTensor's arithmetic operators in C++ (eager_operators.cc).
#pragma once

#include "common.h"

namespace flowstone::python {

// Adds `eager_register_tensor_class`, `eager_operator` and `eager_device_scope` to `m`.
void RegisterEagerOperators(nb::module_& m);

}  // namespace flowstone::python
