#include "flowstone/resource.h"

#include <cstring>

namespace flowstone {

Var* ResourceMgr::LookupOrCreateVar(const std::string& name, DType dtype,
                                    const PartialShape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<Var>(name, dtype, shape);
  return slot.get();
}

Var* ResourceMgr::LookupVar(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

void ResourceMgr::Clear() {
  std::map<std::string, std::unique_ptr<Var>> vars;
  {
    std::lock_guard<std::mutex> lock(mu_);
    vars.swap(vars_);
  }
  // Destroyed without the lock: an iterator's background thread, joined by its destructor, may
  // be looking up a variable. Iterators ("iterator:..." slots, see src/ops/data) go first, so
  // that no such thread outlives the variables it reads.
  for (auto& [name, var] : vars) {
    if (name.rfind("iterator:", 0) == 0) var.reset();
  }
  vars.clear();
}

Var* VarFromHandle(const Tensor& handle) {
  Var* var;
  std::memcpy(&var, handle.raw_data(), sizeof(var));
  return var;
}

std::string VarNameOf(const Node& var_handle_node) {
  std::string shared = var_handle_node.attrs().GetOr<std::string>("shared_name", "");
  return shared.empty() ? var_handle_node.name() : shared;
}

}  // namespace flowstone
