// Where a variable's value lives. A variable's handle op places it in a device's memory, but an
// op on another device may use it too: an op with no kernel where the variable is (the CPU
// fallback), or a function body whose placer could not see which device the variable it reads
// lives on. Every kernel that reads or writes a variable first moves the value into the memory it
// computes in, so no kernel ever touches memory of another device.
#pragma once

#include "flowstone/device.h"
#include "flowstone/resource.h"
#include "flowstone/status.h"

namespace flowstone {

// Moves `var`'s value into `device`'s memory (host memory for a device that computes in it) and
// records it there. A no-op when it is there already. Only with var->mu() held.
Status MoveVarToMemoryOf(Var* var, Device* device);

}  // namespace flowstone
