#include "flowstone/op_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <shared_mutex>

#include "flowstone/kernel.h"
#include "graph/op_library_load.h"

namespace flowstone {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kRealTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                       DType::kInt64};
const std::vector<DType> kNumericTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                          DType::kInt64, DType::kUInt8};
const std::vector<DType> kAllTypes = {
    DType::kFloat32, DType::kFloat64, DType::kInt32,    DType::kInt64,     DType::kUInt8,
    DType::kBool,    DType::kFloat16, DType::kBFloat16, DType::kComplex64, DType::kComplex128};

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& attr : attrs)
    if (attr.name == attr_name) return &attr;
  return nullptr;
}

namespace {

// Guards every op's kernel list: a device plugin adds kernels (RegisterKernel) while sessions
// may be looking kernels up on other threads. Lookups happen when plans are compiled, not per run.
std::shared_mutex& KernelListMutex() {
  static auto* mu = new std::shared_mutex;
  return *mu;
}

}  // namespace

const KernelDef* OpDef::FindKernel(const std::string& device_type, DType dtype) const {
  std::shared_lock<std::shared_mutex> lock(KernelListMutex());
  for (const KernelDef& kernel : kernels_) {
    if (kernel.device_type != device_type) continue;
    if (dtype == DType::kInvalid || kernel.type_constraint.empty() ||
        std::find(kernel.type_constraint.begin(), kernel.type_constraint.end(), dtype) !=
            kernel.type_constraint.end()) {
      return &kernel;
    }
  }
  return nullptr;
}

bool OpDef::HasKernelFor(const std::string& device_type) const {
  return FindKernel(device_type, DType::kInvalid) != nullptr;
}

std::vector<std::string> OpDef::KernelDeviceTypes() const {
  std::shared_lock<std::shared_mutex> lock(KernelListMutex());
  std::vector<std::string> types;
  for (const KernelDef& kernel : kernels_) {
    if (std::find(types.begin(), types.end(), kernel.device_type) == types.end()) {
      types.push_back(kernel.device_type);
    }
  }
  return types;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry;
  return *registry;
}

void OpRegistry::Register(std::unique_ptr<OpDef> op) {
  std::lock_guard<std::mutex> lock(mu_);
  // A custom op library's mistakes are its loader's errors; the core's own are bugs found at
  // start-up.
  internal::LibraryLoad* library = internal::CurrentLibraryLoad();
  for (const auto& existing : ops_) {
    if (existing->name == op->name) {
      if (library != nullptr) {
        library->already_registered.push_back(op->name);
        return;
      }
      std::fprintf(stderr, "flowstone: op %s registered twice\n", op->name.c_str());
      std::abort();
    }
  }
  if (!op->shape_fn) {
    if (library != nullptr) {
      library->without_shape_fn.push_back(op->name);
      return;
    }
    std::fprintf(stderr, "flowstone: op %s has no shape function\n", op->name.c_str());
    std::abort();
  }
  if (library != nullptr) library->registered.push_back(op->name);
  ops_.push_back(std::move(op));
}

Status OpRegistry::RegisterKernel(const std::string& op_name, KernelDef kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& op : ops_) {
    if (op->name == op_name) {
      std::unique_lock<std::shared_mutex> kernels_lock(KernelListMutex());
      op->kernels_.push_back(std::move(kernel));
      return Status::OK();
    }
  }
  return errors::NotFound("cannot register a kernel for unknown op '", op_name, "'");
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

std::vector<const OpDef*> OpRegistry::ListOps() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const OpDef*> out;
  for (const auto& op : ops_) out.push_back(op.get());
  std::sort(out.begin(), out.end(),
            [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
  return out;
}

namespace {

// Adds `attr` to `attrs`, or replaces the declaration of the same name: a list argument declares
// its length or type-list attr when the op has not yet, and the op's own declaration, made
// later, takes its place rather than standing beside it.
AttrDef& PlaceAttr(std::vector<AttrDef>& attrs, AttrDef attr) {
  for (AttrDef& existing : attrs) {
    if (existing.name == attr.name) {
      existing = std::move(attr);
      return existing;
    }
  }
  attrs.push_back(std::move(attr));
  return attrs.back();
}

}  // namespace

OpBuilder::OpBuilder(std::string name) : op_(std::make_unique<OpDef>()) {
  op_->name = std::move(name);
}

ArgDef OpBuilder::MakeArg(const std::string& name, const std::string& type,
                          const std::string& number_attr) {
  ArgDef arg;
  arg.name = name;
  arg.number_attr = number_attr;
  DType fixed;
  if (DTypeFromName(type, &fixed)) {
    arg.fixed_type = fixed;
  } else {
    arg.type_attr = type;
  }
  return arg;
}

OpBuilder& OpBuilder::Input(const std::string& name, const std::string& type) {
  op_->inputs.push_back(MakeArg(name, type, ""));
  return *this;
}

OpBuilder& OpBuilder::InputList(const std::string& name, const std::string& type,
                                const std::string& number_attr) {
  op_->inputs.push_back(MakeArg(name, type, number_attr));
  if (!op_->FindAttr(number_attr)) RequiredAttr(number_attr, AttrType::kInt);
  return *this;
}

OpBuilder& OpBuilder::Output(const std::string& name, const std::string& type) {
  op_->outputs.push_back(MakeArg(name, type, ""));
  return *this;
}

OpBuilder& OpBuilder::OutputList(const std::string& name, const std::string& type,
                                 const std::string& number_attr) {
  op_->outputs.push_back(MakeArg(name, type, number_attr));
  if (!op_->FindAttr(number_attr)) RequiredAttr(number_attr, AttrType::kInt);
  return *this;
}

OpBuilder& OpBuilder::InputTypeList(const std::string& name, const std::string& types_attr) {
  ArgDef arg;
  arg.name = name;
  arg.type_list_attr = types_attr;
  op_->inputs.push_back(std::move(arg));
  if (!op_->FindAttr(types_attr)) RequiredAttr(types_attr, AttrType::kTypeList);
  return *this;
}

OpBuilder& OpBuilder::OutputTypeList(const std::string& name, const std::string& types_attr) {
  ArgDef arg;
  arg.name = name;
  arg.type_list_attr = types_attr;
  op_->outputs.push_back(std::move(arg));
  if (!op_->FindAttr(types_attr)) RequiredAttr(types_attr, AttrType::kTypeList);
  return *this;
}

OpBuilder& OpBuilder::TypeAttr(const std::string& name, const std::vector<DType>& allowed) {
  AttrDef attr;
  attr.name = name;
  attr.type = AttrType::kType;
  attr.allowed_types = allowed;
  PlaceAttr(op_->attrs, std::move(attr));
  return *this;
}

OpBuilder& OpBuilder::TypeAttr(const std::string& name, const std::vector<DType>& allowed,
                               DType default_value) {
  AttrDef attr;
  attr.name = name;
  attr.type = AttrType::kType;
  attr.allowed_types = allowed;
  attr.has_default = true;
  attr.default_value = default_value;
  PlaceAttr(op_->attrs, std::move(attr));
  return *this;
}

OpBuilder& OpBuilder::RequiredAttr(const std::string& name, AttrType type) {
  AttrDef attr;
  attr.name = name;
  attr.type = type;
  PlaceAttr(op_->attrs, std::move(attr));
  return *this;
}

OpBuilder& OpBuilder::Attr(const std::string& name, AttrValue default_value) {
  AttrDef attr;
  attr.name = name;
  attr.type = AttrValueType(default_value);
  attr.has_default = true;
  attr.default_value = std::move(default_value);
  PlaceAttr(op_->attrs, std::move(attr));
  return *this;
}

OpBuilder& OpBuilder::Attr(const std::string& name, const char* default_value) {
  return Attr(name, AttrValue(std::string(default_value)));
}

OpBuilder& OpBuilder::Attr(const std::string& name, int default_value) {
  return Attr(name, AttrValue(static_cast<int64_t>(default_value)));
}

OpBuilder& OpBuilder::Attr(const std::string& name, bool default_value) {
  return Attr(name, AttrValue(default_value));
}

OpBuilder& OpBuilder::Attr(const std::string& name, float default_value) {
  return Attr(name, AttrValue(static_cast<double>(default_value)));
}

OpBuilder& OpBuilder::Shape(ShapeFn fn) {
  op_->shape_fn = std::move(fn);
  return *this;
}

OpBuilder& OpBuilder::Stateful() {
  op_->stateful = true;
  return *this;
}

OpBuilder& OpBuilder::Kernel(const std::string& device_type, KernelFn fn,
                             std::vector<DType> type_constraint) {
  return KernelFactory(
      device_type,
      [fn = std::move(fn)](const Node& node, std::unique_ptr<OpKernel>* out) {
        *out = std::make_unique<FunctionKernel>(node, fn);
        return Status::OK();
      },
      std::move(type_constraint));
}

OpBuilder& OpBuilder::KernelFactory(const std::string& device_type,
                                    flowstone::KernelFactory factory,
                                    std::vector<DType> type_constraint) {
  op_->kernels_.push_back(
      KernelDef{device_type, std::move(type_constraint), std::move(factory), {}});
  return *this;
}

OpBuilder& OpBuilder::Gradient(GradFn fn) {
  op_->gradient = std::move(fn);
  return *this;
}

OpBuilder& OpBuilder::NotDifferentiable() {
  op_->not_differentiable = true;
  return *this;
}

OpBuilder& OpBuilder::Doc(const std::string& text) {
  op_->doc = text;
  return *this;
}

std::unique_ptr<OpDef> OpBuilder::Build() { return std::move(op_); }

OpRegistrar::OpRegistrar(OpBuilder& builder) { OpRegistry::Global().Register(builder.Build()); }
OpRegistrar::OpRegistrar(OpBuilder&& builder) { OpRegistry::Global().Register(builder.Build()); }

}  // namespace flowstone
