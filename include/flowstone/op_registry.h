// The op registry. Each op is declared once, next to its kernels, with a builder:
//
//   FS_REGISTER_OP(OpBuilder("MatMul")
//                      .Input("a", "T").Input("b", "T").Output("product", "T")
//                      .TypeAttr("T", kRealTypes)
//                      .Attr("transpose_a", false).Attr("transpose_b", false)
//                      .Shape(MatMulShape)
//                      .Kernel("CPU", MatMulKernel)
//                      .Gradient(MatMulGrad));
//
// The shape function is required. Every op also declares its gradient or that it has none, so a
// registry-driven test can find the ones that lack either.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/attr.h"
#include "flowstone/status.h"
#include "flowstone/types.h"

namespace flowstone {

class Node;
class InferenceContext;
class OpKernel;
class KernelContext;
class GradientContext;

// One input or output argument of an op.
struct ArgDef {
  std::string name;
  DType fixed_type = DType::kInvalid;  // set when the argument always has this type
  std::string type_attr;               // or: the type comes from this kType attr ("T")
  std::string number_attr;             // set for a list of N tensors of one type ("N")
  std::string type_list_attr;          // set for a list of tensors typed by a list(type) attr
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  bool has_default = false;
  AttrValue default_value;
  std::vector<DType> allowed_types;  // for kType attrs; empty = any
};

using ShapeFn = std::function<Status(InferenceContext&)>;
using KernelFn = std::function<Status(KernelContext&)>;
// Builds a kernel for one node; a kernel may validate its attrs here and fail.
using KernelFactory = std::function<Status(const Node&, std::unique_ptr<OpKernel>*)>;
// Adds the ops computing input gradients from output gradients (see gradients.h).
using GradFn = std::function<Status(GradientContext&)>;

struct KernelDef {
  std::string device_type;             // "CPU", "GPU"
  std::vector<DType> type_constraint;  // allowed values of the op's first type attr; empty = any
  KernelFactory factory;
  // Inputs and outputs (by argument name) this kernel reads or writes in host memory although it
  // runs on a device (shape arguments of a GPU Reshape, say); the executor copies accordingly.
  std::vector<std::string> host_memory_args;
};

// Common type sets for TypeAttr.
extern const std::vector<DType> kFloatTypes;    // float32, float64
extern const std::vector<DType> kRealTypes;     // float32, float64, int32, int64
extern const std::vector<DType> kNumericTypes;  // real types and uint8
extern const std::vector<DType> kAllTypes;      // every user-visible dtype
// The sets with complex numbers are inline, like kAllTypesAndString below, so that they are
// initialized before the registrations of any file that includes this header.
inline const std::vector<DType> kComplexTypes = {DType::kComplex64, DType::kComplex128};
// TensorFlow's "number" types of math ops: float32, float64, int32, int64, uint8, complex64,
// complex128 (Add, Mul, Sum, AddN...).
inline const std::vector<DType> kNumericAndComplexTypes = {
    DType::kFloat32, DType::kFloat64,   DType::kInt32,     DType::kInt64,
    DType::kUInt8,   DType::kComplex64, DType::kComplex128};
// float32, float64, int32, int64, complex64, complex128 (Neg, MatMul, AssignAddVariableOp...).
inline const std::vector<DType> kRealAndComplexTypes = {DType::kFloat32,   DType::kFloat64,
                                                        DType::kInt32,     DType::kInt64,
                                                        DType::kComplex64, DType::kComplex128};
// float32, float64, complex64, complex128 (Exp, Log, Tanh, RealDiv...).
inline const std::vector<DType> kFloatAndComplexTypes = {DType::kFloat32, DType::kFloat64,
                                                         DType::kComplex64, DType::kComplex128};
// kAllTypes and string, for the ops whose kernels also move string elements (Const, Identity,
// ConcatV2, Pack, GatherV2, ...). Inline, so that it is initialized before the registrations of
// any file that includes this header.
inline const std::vector<DType> kAllTypesAndString = {
    DType::kFloat32, DType::kFloat64,   DType::kInt32,     DType::kInt64,
    DType::kUInt8,   DType::kBool,      DType::kFloat16,   DType::kBFloat16,
    DType::kString,  DType::kComplex64, DType::kComplex128};

class OpDef {
 public:
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  // Stateful ops (random numbers, variables) are never deduplicated or constant-folded.
  bool stateful = false;
  GradFn gradient;
  bool not_differentiable = false;
  std::string doc;

  const AttrDef* FindAttr(const std::string& attr_name) const;
  // The kernel registered for a device type that accepts the given dtype (kInvalid = any).
  const KernelDef* FindKernel(const std::string& device_type, DType dtype) const;
  bool HasKernelFor(const std::string& device_type) const;
  std::vector<std::string> KernelDeviceTypes() const;

 private:
  friend class OpRegistry;
  friend class OpBuilder;
  // A deque: a KernelDef found earlier stays valid while a plugin adds kernels.
  std::deque<KernelDef> kernels_;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  // Registers an op; a second op with the same name is a programming error and aborts.
  void Register(std::unique_ptr<OpDef> op);
  // Adds a kernel to a registered op, e.g. from a device plugin loaded at run time.
  Status RegisterKernel(const std::string& op_name, KernelDef kernel);
  const OpDef* Find(const std::string& name) const;
  std::vector<const OpDef*> ListOps() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<OpDef>> ops_;
};

// Fluent declaration of one op; see the top of this file.
class OpBuilder {
 public:
  explicit OpBuilder(std::string name);

  // An input of type `type`: either a type attr name ("T") or a dtype name ("int32").
  OpBuilder& Input(const std::string& name, const std::string& type);
  // A list input of `number_attr` tensors of `type`.
  OpBuilder& InputList(const std::string& name, const std::string& type,
                       const std::string& number_attr);
  OpBuilder& Output(const std::string& name, const std::string& type);
  OpBuilder& OutputList(const std::string& name, const std::string& type,
                        const std::string& number_attr);
  // A list argument whose length and dtypes are a list(type) attr ("Tin"), as TF's functional
  // ops declare their arguments. An input list sets the attr from the inputs when it is absent.
  OpBuilder& InputTypeList(const std::string& name, const std::string& types_attr);
  OpBuilder& OutputTypeList(const std::string& name, const std::string& types_attr);

  // A type attr with its allowed dtypes.
  OpBuilder& TypeAttr(const std::string& name, const std::vector<DType>& allowed = {});
  OpBuilder& TypeAttr(const std::string& name, const std::vector<DType>& allowed,
                      DType default_value);
  // A required attr of the given type.
  OpBuilder& RequiredAttr(const std::string& name, AttrType type);
  // An attr with a default; its type is the default's type.
  OpBuilder& Attr(const std::string& name, AttrValue default_value);
  OpBuilder& Attr(const std::string& name, const char* default_value);
  OpBuilder& Attr(const std::string& name, int default_value);
  OpBuilder& Attr(const std::string& name, bool default_value);
  OpBuilder& Attr(const std::string& name, float default_value);

  OpBuilder& Shape(ShapeFn fn);
  OpBuilder& Stateful();
  // A kernel given as a function, or as a factory of kernel objects.
  OpBuilder& Kernel(const std::string& device_type, KernelFn fn,
                    std::vector<DType> type_constraint = {});
  OpBuilder& KernelFactory(const std::string& device_type, flowstone::KernelFactory factory,
                           std::vector<DType> type_constraint = {});
  template <typename K>
  OpBuilder& KernelClass(const std::string& device_type, std::vector<DType> type_constraint = {}) {
    return KernelFactory(
        device_type,
        [](const Node& node, std::unique_ptr<OpKernel>* out) {
          auto kernel = std::make_unique<K>(node);
          Status s = kernel->Init();
          if (s.ok()) *out = std::move(kernel);
          return s;
        },
        std::move(type_constraint));
  }
  OpBuilder& Gradient(GradFn fn);
  // Declares that no gradient flows through this op (comparisons, shapes, random numbers).
  OpBuilder& NotDifferentiable();
  OpBuilder& Doc(const std::string& text);

  std::unique_ptr<OpDef> Build();

 private:
  ArgDef MakeArg(const std::string& name, const std::string& type, const std::string& number_attr);
  std::unique_ptr<OpDef> op_;
};

// Registers at static-initialization time.
struct OpRegistrar {
  explicit OpRegistrar(OpBuilder& builder);
  explicit OpRegistrar(OpBuilder&& builder);
};

}  // namespace flowstone

#define FS_REGISTER_OP(builder) \
  static ::flowstone::OpRegistrar FS_CONCAT(fs_op_registrar_, __COUNTER__)(builder)
