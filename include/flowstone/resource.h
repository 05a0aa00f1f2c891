// Session-owned state: variables live here, not in the graph, so two sessions on one graph hold
// separate values.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "flowstone/device.h"
#include "flowstone/graph.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

// A variable's storage. Readers get a Tensor sharing the current buffer; writers replace the
// buffer (or update it in place when no reader still holds it), so a value fetched earlier never
// changes under the user.
class Var {
 public:
  Var(std::string name, DType dtype, PartialShape shape)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)) {}
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const PartialShape& declared_shape() const { return shape_; }
  std::mutex& mu() { return mu_; }
  // Only with mu() held.
  bool initialized() const { return value_.initialized(); }
  Tensor& value() { return value_; }
  // The device whose memory holds the value (a GPU), or nullptr for host memory. Set by the
  // variable's handle op when it first runs; only with mu() held.
  Device* device() const { return device_; }
  void set_device(Device* device) { device_ = device; }

 private:
  std::string name_;
  DType dtype_;
  PartialShape shape_;
  std::mutex mu_;
  Tensor value_;
  Device* device_ = nullptr;
};

class ResourceMgr {
 public:
  // Returns the variable named `name`, creating it on first use.
  Var* LookupOrCreateVar(const std::string& name, DType dtype, const PartialShape& shape);
  // nullptr when no variable of that name was created in this session yet.
  Var* LookupVar(const std::string& name);
  void Clear();

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Var>> vars_;
};

// The variable a resource handle tensor (a VarHandleOp's output) points to.
Var* VarFromHandle(const Tensor& handle);
// The name a VarHandleOp's variable is stored under: its shared_name, else the node's name.
std::string VarNameOf(const Node& var_handle_node);

}  // namespace flowstone
