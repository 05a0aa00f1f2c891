// The user functions of dataset ops (Dataset.map's, filter's, scan's...): a graph function of
// the graph's library and the captured tensors passed after each call's arguments, shared by the
// dataset op files that call one per element.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/control_flow/function_call.h"

namespace flowstone::data {

// A user function and the captured tensors passed after each element's components.
class UserFunction {
 public:
  UserFunction(std::string name, std::vector<Tensor> captured)
      : caller_(std::move(name)), captured_(std::move(captured)) {}

  // Runs the function on `element`; errors name the function (the session adds its node).
  // Components of the result with a destination of their shape are written into it (see
  // FunctionRuntime::Run).
  Status Call(KernelContext& ctx, const Element& element, Element* out,
              const std::vector<Tensor>* destinations = nullptr) const {
    std::vector<Tensor> args = element;
    args.insert(args.end(), captured_.begin(), captured_.end());
    out->clear();
    return caller_.Call(ctx, args, out, destinations);
  }
  const std::string& name() const { return caller_.name(); }

 private:
  // Keeps the compiled plan; calls from several threads are safe (see FunctionCaller).
  mutable FunctionCaller caller_;
  std::vector<Tensor> captured_;
};

// The function attr `attr` and its captured tensors: inputs [1, end) (other_arguments follow
// the input dataset; `end` excludes the scalar inputs after them).
inline Status ReadUserFunction(KernelContext& ctx, const char* attr, int end,
                               std::unique_ptr<UserFunction>* out) {
  std::string name;
  FS_RETURN_IF_ERROR(FunctionAttr(ctx.node(), attr, &name));
  std::vector<Tensor> captured;
  for (int i = 1; i < end; ++i) captured.push_back(ctx.input(i));
  *out = std::make_unique<UserFunction>(std::move(name), std::move(captured));
  return Status::OK();
}

inline OpBuilder FunctionDatasetOp(const char* name, const char* func_attr,
                                   const std::vector<const char*>& int64_inputs) {
  OpBuilder b(name);
  b.Input("input_dataset", "variant").InputTypeList("other_arguments", "Targuments");
  for (const char* input : int64_inputs) b.Input(input, "int64");
  b.Output("handle", "variant")
      .RequiredAttr(func_attr, AttrType::kFunc)
      .RequiredAttr("output_types", AttrType::kTypeList)
      .RequiredAttr("output_shapes", AttrType::kShapeList)
      .Attr("metadata", "")
      .Stateful()
      .Shape(shape_fns::Scalar)
      .NotDifferentiable();
  return b;
}

}  // namespace flowstone::data
