// Where a variable's value lives. A variable's handle op places it in a device's memory, but an
// op on another device may use it too: an op with no kernel where the variable is (the CPU
// fallback), or a function body whose placer could not see which device the variable it reads
// lives on. Every kernel that reads or writes a variable first moves the value into the memory it
// computes in, so no kernel ever touches memory of another device.
#pragma once

#include <mutex>
#include <string>

#include "flowstone/device.h"
#include "flowstone/kernel.h"
#include "flowstone/resource.h"
#include "flowstone/status.h"

namespace flowstone {

// Moves `var`'s value into `device`'s memory (host memory for a device that computes in it) and
// records it there. A no-op when it is there already. Only with var->mu() held.
Status MoveVarToMemoryOf(Var* var, Device* device);

// The resource variable of a kernel's input 0, locked for the kernel's life, that the kernel may
// write in place: initialized, in the kernel's device memory, of the dtype of the values at input
// `value_input`, and not shared with a reader (a value a reader still holds is copied first, so
// a fetched value never changes).
class WritableVar {
 public:
  WritableVar(KernelContext& ctx, int value_input);
  // Not OK when the variable cannot be written; then value() must not be used.
  const Status& status() const { return status_; }
  Tensor& value() { return var_->value(); }
  const std::string& name() const { return var_->name(); }

 private:
  Status Prepare(KernelContext& ctx, int value_input);

  Var* var_;
  std::unique_lock<std::mutex> lock_;
  Status status_;
};

}  // namespace flowstone
