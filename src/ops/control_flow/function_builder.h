// Builds a new function from C++: the functions that gradients of functional ops derive (a
// recording loop, a backward loop). Errors stick like GradientContext's: after the first failure
// every call returns a null endpoint and Finish returns the error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flowstone/function.h"

namespace flowstone {

class FunctionBuilder {
 public:
  // A new body sharing `caller`'s library; the function will be named `base_name` (made unique).
  FunctionBuilder(const Graph& caller, const std::string& base_name);

  // The next argument: a Placeholder of the body.
  Endpoint Arg(DType dtype, const PartialShape& shape);
  Node* AddNode(const std::string& type, const std::vector<Endpoint>& inputs,
                const AttrMap& attrs = {});
  Endpoint Op(const std::string& type, const std::vector<Endpoint>& inputs,
              const AttrMap& attrs = {}, int index = 0);
  Endpoint ScalarInt32(int32_t value);
  // A call of library function `function` from this body; returns its outputs.
  std::vector<Endpoint> Call(const FunctionDef& function, const std::vector<Endpoint>& inputs);

  // Adds the function returning `rets` to the library; returns its name.
  StatusOr<std::string> Finish(const std::vector<Endpoint>& rets);

 private:
  std::shared_ptr<Graph> body_;
  std::string name_;
  std::vector<Endpoint> args_;
  Status status_;
};

}  // namespace flowstone
