// Building graphs from C++ without Python.
//
//   flowstone::GraphBuilder b;
//   auto x = b.Placeholder(flowstone::DType::kFloat32, flowstone::PartialShape({-1, 3}), "x");
//   auto w = b.Const(flowstone::Tensor::FromVector<float>({1, 2, 3}, {3, 1}));
//   auto y = b.Op("MatMul", {x, w});
//   if (!b.status().ok()) ...   // the first error, with the op that caused it
//   std::unique_ptr<flowstone::Session> session;
//   flowstone::Session::Create(b.graph(), {}, &session);
//   session->Run({{x, input}}, {y}, {}, &outputs);
//
// Like TensorFlow's C++ Scope, the builder records the first error and turns later calls into
// no-ops, so a chain of calls needs one check at the end.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/graph.h"
#include "flowstone/session.h"

namespace flowstone {

class GraphBuilder {
 public:
  GraphBuilder() : graph_(std::make_shared<Graph>()) {}
  explicit GraphBuilder(std::shared_ptr<Graph> graph) : graph_(std::move(graph)) {}

  const std::shared_ptr<Graph>& graph() const { return graph_; }
  // OK, or the first error any call met.
  const Status& status() const { return status_; }

  // Adds an op; `name` defaults to the op type and is made unique ("Add", "Add_1").
  // Returns the node (nullptr after an error).
  Node* AddOp(const std::string& type, const std::vector<Endpoint>& inputs,
              const AttrMap& attrs = {}, const std::string& name = "",
              const std::vector<Node*>& control_inputs = {});
  // Output 0 of a new op.
  Endpoint Op(const std::string& type, const std::vector<Endpoint>& inputs,
              const AttrMap& attrs = {}, const std::string& name = "");

  Endpoint Const(const Tensor& value, const std::string& name = "Const");
  Endpoint Placeholder(DType dtype, const PartialShape& shape = PartialShape::Unknown(),
                       const std::string& name = "Placeholder");
  Endpoint Add(Endpoint a, Endpoint b, const std::string& name = "Add") {
    return Op("AddV2", {a, b}, {}, name);
  }
  Endpoint MatMul(Endpoint a, Endpoint b, bool transpose_a = false, bool transpose_b = false,
                  const std::string& name = "MatMul");

  // A resource variable with its initializer; `Read` gives its value.
  struct Variable {
    Endpoint handle;
    Node* initializer = nullptr;
    Endpoint value;
  };
  Variable NewVariable(const std::string& name, Endpoint initial_value);

 private:
  std::shared_ptr<Graph> graph_;
  Status status_;
};

}  // namespace flowstone
