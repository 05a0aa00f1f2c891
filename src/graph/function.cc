#include "flowstone/function.h"

namespace flowstone {

std::vector<DType> FunctionDef::arg_types() const {
  std::vector<DType> out;
  for (const Endpoint& e : args) out.push_back(e.node->output_type(e.index));
  return out;
}

std::vector<DType> FunctionDef::ret_types() const {
  std::vector<DType> out;
  for (const Endpoint& e : rets) out.push_back(e.node->output_type(e.index));
  return out;
}

std::string FunctionDef::Describe() const {
  return StrCat("function '", name, "' (", args.size(), args.size() == 1 ? " input, " : " inputs, ",
                rets.size(), rets.size() == 1 ? " output)" : " outputs)");
}

namespace {
Status ValueError(Status s) {
  s.SetPayload("py_type", "ValueError");
  return s;
}
}  // namespace

Status FunctionLibrary::Add(FunctionDef def) {
  if (def.body == nullptr) {
    return ValueError(errors::InvalidArgument("function '", def.name, "' has no body"));
  }
  auto in_body = [&](const Endpoint& e) {
    return e.node != nullptr && def.body->node(e.node->id()) == e.node && e.index >= 0 &&
           e.index < e.node->num_outputs();
  };
  for (const Endpoint& arg : def.args) {
    if (!in_body(arg) || arg.node->type() != "Placeholder") {
      return ValueError(
          errors::InvalidArgument("an input of function '", def.name,
                                  "' is not a Placeholder of its body: ", arg.ToString()));
    }
  }
  for (const Endpoint& ret : def.rets) {
    if (!in_body(ret)) {
      return ValueError(errors::InvalidArgument("output ", ret.ToString(), " of function '",
                                                def.name, "' is not in its body"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (functions_.count(def.name)) {
    return ValueError(errors::InvalidArgument("Cannot add function '", def.name,
                                              "' because a different function with the same "
                                              "name already exists."));
  }
  std::string name = def.name;
  functions_[name] = std::make_unique<FunctionDef>(std::move(def));
  return Status::OK();
}

const FunctionDef* FunctionLibrary::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second.get();
}

std::string FunctionLibrary::UniqueName(const std::string& base) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!functions_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = StrCat(base, "_", i);
    if (!functions_.count(candidate)) return candidate;
  }
}

}  // namespace flowstone
