#include "function_builder.h"

namespace flowstone {

FunctionBuilder::FunctionBuilder(const Graph& caller, const std::string& base_name)
    : body_(std::make_shared<Graph>(caller.shared_library())),
      name_(caller.library().UniqueName(base_name)) {}

Node* FunctionBuilder::AddNode(const std::string& type, const std::vector<Endpoint>& inputs,
                               const AttrMap& attrs) {
  if (!status_.ok()) return nullptr;
  for (const Endpoint& in : inputs) {
    if (in.node == nullptr) {
      status_ = errors::Internal("building function '", name_, "': a ", type, " input is missing");
      return nullptr;
    }
  }
  NodeSpec spec;
  spec.name = body_->UniqueName(type);
  spec.op = type;
  spec.inputs = inputs;
  spec.attrs = attrs;
  StatusOr<Node*> node = body_->AddNode(std::move(spec));
  if (!node.ok()) {
    status_ = node.status();
    status_.Append(StrCat(" (while building function '", name_, "')"));
    return nullptr;
  }
  return *node;
}

Endpoint FunctionBuilder::Op(const std::string& type, const std::vector<Endpoint>& inputs,
                             const AttrMap& attrs, int index) {
  return Endpoint{AddNode(type, inputs, attrs), index};
}

Endpoint FunctionBuilder::Arg(DType dtype, const PartialShape& shape) {
  AttrMap attrs;
  attrs.Set("dtype", dtype);
  attrs.Set("shape", shape);
  Endpoint arg = Op("Placeholder", {}, attrs);
  args_.push_back(arg);
  return arg;
}

Endpoint FunctionBuilder::ScalarInt32(int32_t value) {
  AttrMap attrs;
  attrs.Set("value", Tensor::Scalar<int32_t>(value));
  attrs.Set("dtype", DType::kInt32);
  return Op("Const", {}, attrs);
}

std::vector<Endpoint> FunctionBuilder::Call(const FunctionDef& function,
                                            const std::vector<Endpoint>& inputs) {
  AttrMap attrs;
  attrs.Set("f", FunctionRef{function.name});
  attrs.Set("Tout", function.ret_types());
  Node* call = AddNode("StatefulPartitionedCall", inputs, attrs);
  std::vector<Endpoint> outputs(function.rets.size());
  for (int i = 0; call != nullptr && i < static_cast<int>(outputs.size()); ++i)
    outputs[i] = Endpoint{call, i};
  return outputs;
}

StatusOr<std::string> FunctionBuilder::Finish(const std::vector<Endpoint>& rets) {
  FS_RETURN_IF_ERROR(status_);
  FunctionDef def;
  def.name = name_;
  def.body = body_;
  def.args = args_;
  def.rets = rets;
  FS_RETURN_IF_ERROR(body_->library().Add(std::move(def)));
  return name_;
}

}  // namespace flowstone
