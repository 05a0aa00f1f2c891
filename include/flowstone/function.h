// Graph functions: subgraphs called with inputs. tf.cond's branches, tf.while_loop's condition
// and body (and later Dataset.map, tf.function, imported FunctionDefLibrarys) are all functions in
// the library of the graph that calls them.
//
// A function's body is a Graph of its own whose inputs are Placeholder nodes (TF's FuncGraph
// does the same; a serialized FunctionDef would call them _Arg). Tensors of an outer graph used
// by the body are captured: the body reads them through extra Placeholders, and the caller
// passes them as extra inputs. The body graph shares the library of the graph it was traced in,
// so functions nest and find each other by name.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "flowstone/graph.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

class KernelContext;

struct FunctionDef {
  std::string name;
  std::shared_ptr<Graph> body;
  // The body's inputs (Placeholder outputs), fed with the call's inputs in order.
  std::vector<Endpoint> args;
  // The body tensors the call returns, in order.
  std::vector<Endpoint> rets;

  std::vector<DType> arg_types() const;
  std::vector<DType> ret_types() const;
  // "function 'cond_true_3' (2 inputs, 1 output)" for messages.
  std::string Describe() const;
};

// The functions of one graph and of every function body traced under it. Functions are added,
// never removed or replaced, so a FunctionDef found once stays valid.
class FunctionLibrary {
 public:
  // Adds `def`; fails with InvalidArgument (py_type ValueError) when the name is taken, when an
  // arg is not a Placeholder of the body, or when a ret is not in the body.
  Status Add(FunctionDef def);
  const FunctionDef* Find(const std::string& name) const;
  // A name no function has yet: `base`, else `base_1`, `base_2`, ...
  std::string UniqueName(const std::string& base) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<FunctionDef>> functions_;
};

// A function compiled by a session into a plan; owned by the session, opaque to kernels.
class CompiledFunction {
 public:
  virtual ~CompiledFunction() = default;
};

// What a call kernel needs from the session running it: compile a library function once, and run
// it with the caller's resources, step and cancellation. Reached through KernelContext.
class FunctionRuntime {
 public:
  virtual ~FunctionRuntime() = default;
  // Compiles the library function `name` for the caller's session (its body placed like any
  // graph); the result lives as long as the session. NotFound when there is no such function.
  virtual Status Instantiate(const std::string& name, const CompiledFunction** out) = 0;
  // Runs a compiled function: `args` are moved into its inputs; `rets` receives its outputs.
  // `destinations` (or nullptr) has a host tensor, or an empty one, per output: an output of its
  // dtype and shape is written there, and `rets` shares its memory (ExecutionPlan::Run).
  // Errors name the function and the node inside it.
  virtual Status Run(const CompiledFunction& function, std::vector<Tensor>& args,
                     std::vector<Tensor>* rets, const KernelContext& caller,
                     const std::vector<Tensor>* destinations) = 0;
};

}  // namespace flowstone
