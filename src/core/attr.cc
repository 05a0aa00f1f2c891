#include "flowstone/attr.h"

#include <algorithm>

namespace flowstone {

const char* AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kType:
      return "type";
    case AttrType::kShape:
      return "shape";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kIntList:
      return "list(int)";
    case AttrType::kFloatList:
      return "list(float)";
    case AttrType::kTypeList:
      return "list(type)";
    case AttrType::kShapeList:
      return "list(shape)";
    case AttrType::kStringList:
      return "list(string)";
    case AttrType::kFunc:
      return "func";
  }
  return "unknown";
}

AttrType AttrValueType(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

namespace {
template <typename T, typename F>
std::string JoinList(const std::vector<T>& items, F&& render) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += render(items[i]);
  }
  return out + "]";
}
}  // namespace

std::string AttrValueToString(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return StrCat(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(DType v) const { return DTypeName(v); }
    std::string operator()(const PartialShape& v) const { return v.ToString(); }
    std::string operator()(const Tensor& v) const { return v.DebugString(); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return JoinList(v, [](int64_t x) { return std::to_string(x); });
    }
    std::string operator()(const std::vector<double>& v) const {
      return JoinList(v, [](double x) { return StrCat(x); });
    }
    std::string operator()(const std::vector<DType>& v) const {
      return JoinList(v, [](DType x) { return std::string(DTypeName(x)); });
    }
    std::string operator()(const std::vector<PartialShape>& v) const {
      return JoinList(v, [](const PartialShape& x) { return x.ToString(); });
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return JoinList(v, [](const std::string& x) { return "\"" + x + "\""; });
    }
    std::string operator()(const FunctionRef& v) const { return StrCat("func:", v.name); }
  };
  return std::visit(Visitor{}, value);
}

void AttrMap::Set(const std::string& name, AttrValue value) {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const auto& entry, const std::string& n) { return entry.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.insert(it, {name, std::move(value)});
  }
}

const AttrValue* AttrMap::Find(const std::string& name) const {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const auto& entry, const std::string& n) { return entry.first < n; });
  if (it != entries_.end() && it->first == name) return &it->second;
  return nullptr;
}

}  // namespace flowstone
