#include "flowstone/cc/ops.h"

namespace flowstone {

Node* GraphBuilder::AddOp(const std::string& type, const std::vector<Endpoint>& inputs,
                          const AttrMap& attrs, const std::string& name,
                          const std::vector<Node*>& control_inputs) {
  if (!status_.ok()) return nullptr;
  for (const Endpoint& in : inputs) {
    if (in.node == nullptr) {
      status_ = errors::InvalidArgument("input of ", type, " comes from a failed op");
      return nullptr;
    }
  }
  NodeSpec spec;
  spec.name = graph_->UniqueName(name.empty() ? type : name);
  spec.op = type;
  spec.inputs = inputs;
  spec.control_inputs = control_inputs;
  spec.attrs = attrs;
  StatusOr<Node*> node = graph_->AddNode(std::move(spec));
  if (!node.ok()) {
    status_ = node.status();
    return nullptr;
  }
  return *node;
}

Endpoint GraphBuilder::Op(const std::string& type, const std::vector<Endpoint>& inputs,
                          const AttrMap& attrs, const std::string& name) {
  return Endpoint{AddOp(type, inputs, attrs, name), 0};
}

Endpoint GraphBuilder::Const(const Tensor& value, const std::string& name) {
  AttrMap attrs;
  attrs.Set("value", value);
  attrs.Set("dtype", value.dtype());
  return Op("Const", {}, attrs, name);
}

Endpoint GraphBuilder::Placeholder(DType dtype, const PartialShape& shape,
                                   const std::string& name) {
  AttrMap attrs;
  attrs.Set("dtype", dtype);
  attrs.Set("shape", shape);
  return Op("Placeholder", {}, attrs, name);
}

Endpoint GraphBuilder::MatMul(Endpoint a, Endpoint b, bool transpose_a, bool transpose_b,
                              const std::string& name) {
  AttrMap attrs;
  attrs.Set("transpose_a", transpose_a);
  attrs.Set("transpose_b", transpose_b);
  return Op("MatMul", {a, b}, attrs, name);
}

GraphBuilder::Variable GraphBuilder::NewVariable(const std::string& name, Endpoint initial_value) {
  Variable var;
  if (!status_.ok() || initial_value.node == nullptr) return var;
  DType dtype = initial_value.node->output_type(initial_value.index);
  const PartialShape& shape = initial_value.node->output_shape(initial_value.index);
  AttrMap handle_attrs;
  handle_attrs.Set("dtype", dtype);
  handle_attrs.Set("shape", shape);
  handle_attrs.Set("shared_name", name);
  var.handle = Op("VarHandleOp", {}, handle_attrs, name);
  AttrMap dtype_attr;
  dtype_attr.Set("dtype", dtype);
  var.initializer =
      AddOp("AssignVariableOp", {var.handle, initial_value}, dtype_attr, name + "/Assign");
  AttrMap read_attrs = dtype_attr;
  read_attrs.Set("value_shape", shape);
  var.value = Op("ReadVariableOp", {var.handle}, read_attrs, name + "/Read/ReadVariableOp");
  return var;
}

}  // namespace flowstone
