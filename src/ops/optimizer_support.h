// What every optimizer update kernel does before touching memory, on the CPU (training_ops.cc)
// and on a GPU (src/cuda/training_kernels.cu): lock the variables, check them and the inputs,
// and make the variables' buffers private for writing.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/resource.h"

namespace flowstone {

// Locks the variables named by resource inputs `indices` (in address order, so concurrent steps
// cannot deadlock), checks that they are initialized and alike, and gives each a buffer of its
// own: a value a reader still holds is copied first with `copy` (a memcpy on the CPU, a
// device-to-device copy on a GPU), so a fetched value never changes under the user.
class LockedVars {
 public:
  // Copies `from` into `to`, which has the same dtype and shape.
  using CopyFn = std::function<Status(KernelContext& ctx, const Tensor& from, Tensor* to)>;

  LockedVars(KernelContext& ctx, const std::vector<int>& indices, const CopyFn& copy);
  const Status& status() const { return status_; }
  int num_vars() const { return static_cast<int>(vars_.size()); }
  Var* var(int k) const { return vars_[k]; }
  template <typename T>
  T* data(int k) {
    return vars_[k]->value().template data<T>();
  }
  int64_t size() const { return vars_[0]->value().num_elements(); }
  const TensorShape& shape() const { return vars_[0]->value().shape(); }

 private:
  Status Prepare(KernelContext& ctx, const CopyFn& copy);

  std::vector<Var*> vars_;
  std::vector<std::unique_lock<std::mutex>> locks_;
  Status status_;
};

// The locked variables' status, then: the gradient (input `grad_index`) has the variables'
// shape, and every other non-resource input (learning rate, decay...) is a scalar.
Status CheckOptimizerInputs(KernelContext& ctx, const LockedVars& vars, int grad_index);

// A scalar hyper-parameter input, read in host memory.
template <typename T>
T ScalarInput(KernelContext& ctx, int i) {
  return static_cast<T>(ctx.input(i).ElementAsDouble(0));
}

// Copies a variable's value for LockedVars on the CPU, where variables live in host memory.
Status HostCopy(KernelContext& ctx, const Tensor& from, Tensor* to);

// Runs fn(begin, end) over `n` elements on the intra-op threads.
template <typename F>
void ForEachBlock(KernelContext& ctx, int64_t n, F&& fn) {
  ctx.ParallelFor(n, 10, fn);
}

// Declares a resource-apply op: the resource inputs `resources`, then the inputs `inputs` of
// type T (float32 or float64), the `use_locking` attr, no outputs and no gradient.
OpBuilder ApplyOp(const std::string& name, const std::vector<std::string>& resources,
                  const std::vector<std::string>& inputs);

}  // namespace flowstone
