// Node attributes: the compile-time parameters of an op (transpose_a, axis, dtype, ...).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "flowstone/shape.h"
#include "flowstone/tensor.h"
#include "flowstone/types.h"

namespace flowstone {

enum class AttrType {
  kInt,
  kFloat,
  kBool,
  kString,
  kType,
  kShape,
  kTensor,
  kIntList,
  kFloatList,
  kTypeList,
  kShapeList,
  kStringList,
  kFunc,
};
const char* AttrTypeName(AttrType type);

// A `func` attr: the name of a function in the graph's library (see flowstone/function.h). A
// type of its own, so that a function name is never mistaken for a string attr.
struct FunctionRef {
  std::string name;
};

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, PartialShape, Tensor,
                               std::vector<int64_t>, std::vector<double>, std::vector<DType>,
                               std::vector<PartialShape>, std::vector<std::string>, FunctionRef>;

// The variant index for each AttrType, in declaration order.
AttrType AttrValueType(const AttrValue& value);
// "7", "[1,2]", "DT_FLOAT"-like rendering for messages and GraphDef dumps.
std::string AttrValueToString(const AttrValue& value);

// A node's attributes, sorted by name.
class AttrMap {
 public:
  void Set(const std::string& name, AttrValue value);
  const AttrValue* Find(const std::string& name) const;
  bool Has(const std::string& name) const { return Find(name) != nullptr; }
  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }

  // Typed access; fails with InvalidArgument when missing or of another type.
  template <typename T>
  Status Get(const std::string& name, T* out) const {
    const AttrValue* v = Find(name);
    if (v == nullptr) return errors::InvalidArgument("missing attr '", name, "'");
    if (const T* p = std::get_if<T>(v)) {
      *out = *p;
      return Status::OK();
    }
    return errors::InvalidArgument("attr '", name, "' has type ", AttrTypeName(AttrValueType(*v)));
  }
  // Typed access with a fallback; for attrs that always have a default.
  template <typename T>
  T GetOr(const std::string& name, T fallback) const {
    const AttrValue* v = Find(name);
    if (v == nullptr) return fallback;
    if (const T* p = std::get_if<T>(v)) return *p;
    return fallback;
  }

 private:
  std::vector<std::pair<std::string, AttrValue>> entries_;
};

}  // namespace flowstone
