// What the functional ops (PartitionedCall, If, While) share: calling a library function from a
// kernel, checking a call against the function's signature while the node is built, and TF's
// truth value of a condition tensor.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "flowstone/function.h"
#include "flowstone/kernel.h"
#include "flowstone/shape_inference.h"

namespace flowstone {

// Calls one library function from a kernel. The function is compiled by the session on the first
// call and the compiled plan is kept by this object, which lives as long as the kernel instance
// (one per node and session), so later calls do no graph work.
class FunctionCaller {
 public:
  explicit FunctionCaller(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  // Runs the function; `args` are consumed and `rets` receives its outputs, written into
  // `destinations` where given (see FunctionRuntime::Run).
  Status Call(KernelContext& ctx, std::vector<Tensor>& args, std::vector<Tensor>* rets,
              const std::vector<Tensor>* destinations = nullptr);

 private:
  std::string name_;
  std::atomic<const CompiledFunction*> compiled_{nullptr};
};

// The function named by the `func` attr `attr` of the node being built. Checks that it takes
// `arg_types` (ValueError on a different arity, TypeError on another dtype) and, when
// `ret_types` is given, that it returns them..
Status CheckCallSignature(const InferenceContext& ctx, const std::string& attr,
                          const std::vector<DType>& arg_types, const std::vector<DType>* ret_types,
                          const FunctionDef** out);

// The static shapes of a function's outputs.
std::vector<PartialShape> ReturnShapes(const FunctionDef& function);

// The most specific shape compatible with both (dimensions that differ become unknown).
PartialShape MostSpecificCompatibleShape(const PartialShape& a, const PartialShape& b);

// TF's truth value of a condition: a scalar is true when nonzero, any other tensor when it has
// elements.
Status ToBool(const Tensor& t, bool* out);

// Reads the `func` attr `attr` of the kernel's node.
Status FunctionAttr(const Node& node, const std::string& attr, std::string* name);

}  // namespace flowstone
