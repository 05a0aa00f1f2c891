// Graph <-> TensorFlow GraphDef. See include/flowstone/graph_def.h.
#include "flowstone/graph_def.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "flowstone/function.h"
#include "graph/functionalize_control_flow.h"
#include "graph/tensor_array_v1.h"
#include "proto/graph.pb.h"

namespace flowstone {
namespace {

// TensorFlow's limit on a shape's rank.
constexpr int kMaxRank = 254;
// The most bytes a tensor attr may expand to from fewer stored values (TF repeats the last
// value of a typed field to fill the shape). Larger constants must carry their bytes, so a
// GraphDef can never make the importer allocate much more memory than the GraphDef's own size.
constexpr int64_t kMaxExpandedTensorBytes = int64_t{256} << 20;

Status WithPyType(Status s, const char* py_type) {
  s.SetPayload("py_type", py_type);
  return s;
}

// ---- dtypes and shapes ----

bool DTypeFromTfEnum(int value, DType* out) {
  for (int i = 1; i < kNumDTypes; ++i) {
    DType dtype = static_cast<DType>(i);
    if (DTypeToTfEnum(dtype) == value) {
      *out = dtype;
      return true;
    }
  }
  return false;
}

Status ImportDType(int value, const std::string& what, DType* out) {
  if (DTypeFromTfEnum(value, out)) return Status::OK();
  const std::string name = proto::DataType_Name(static_cast<proto::DataType>(value));
  if (value >= 100 && DTypeFromTfEnum(value - 100, out)) {
    return errors::Unimplemented(what, " has the reference dtype ", name,
                                 ", which Flowstone does not support");
  }
  if (proto::DataType_IsValid(value) && value != proto::DT_INVALID) {
    return errors::Unimplemented(what, " has dtype ", name, ", which Flowstone does not support");
  }
  return errors::InvalidArgument(what, " has an invalid DataType value ", value);
}

void ExportShape(const PartialShape& shape, proto::TensorShapeProto* out) {
  if (!shape.known_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int i = 0; i < shape.rank(); ++i) out->add_dim()->set_size(shape.dim(i));
}

Status ImportShape(const proto::TensorShapeProto& in, const std::string& what, PartialShape* out) {
  if (in.unknown_rank()) {
    if (in.dim_size() > 0) {
      return errors::InvalidArgument(what, ": a shape of unknown rank lists dimensions");
    }
    *out = PartialShape::Unknown();
    return Status::OK();
  }
  if (in.dim_size() > kMaxRank) {
    return errors::InvalidArgument(what, ": shape has rank ", in.dim_size(),
                                   ", more than the maximum of ", kMaxRank);
  }
  std::vector<int64_t> dims;
  dims.reserve(in.dim_size());
  for (const auto& dim : in.dim()) {
    if (dim.size() < -1) {
      return errors::InvalidArgument(what, ": shape has dimension ", dim.size(),
                                     "; a dimension is -1 (unknown) or at least 0");
    }
    dims.push_back(dim.size());
  }
  *out = PartialShape(dims);
  return Status::OK();
}

// ---- tensors ----

// The elements of a fully defined shape, or an error when the product overflows.
Status ElementCount(const PartialShape& shape, const std::string& what, int64_t* count) {
  int64_t n = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    int64_t d = shape.dim(i);
    if (d < 0) return errors::InvalidArgument(what, ": a tensor's shape must be fully defined");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return errors::InvalidArgument(what, ": the number of elements of shape ", shape.ToString(),
                                     " overflows int64");
    }
    n *= d;
  }
  *count = n;
  return Status::OK();
}

Status ExportTensor(const Tensor& tensor, proto::TensorProto* out) {
  int tf_enum = DTypeToTfEnum(tensor.dtype());
  if (tensor.dtype() == DType::kResource || tensor.dtype() == DType::kVariant) {
    return errors::Unimplemented("a ", DTypeName(tensor.dtype()),
                                 " tensor cannot be written to a GraphDef");
  }
  out->set_dtype(static_cast<proto::DataType>(tf_enum));
  ExportShape(PartialShape(tensor.shape()), out->mutable_tensor_shape());
  if (tensor.dtype() == DType::kString) {
    // TensorFlow keeps strings in string_val, one entry per element.
    const std::string* elements = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.num_elements(); ++i) out->add_string_val(elements[i]);
    return Status::OK();
  }
  out->set_tensor_content(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  return Status::OK();
}

// A string tensor from string_val: all of its elements, or fewer whose last one repeats (none:
// empty strings). The expanded bytes are bounded as for numbers.
Status ImportStringTensor(const proto::TensorProto& in, const PartialShape& shape, int64_t count,
                          const std::string& what, Tensor* out) {
  if (!in.tensor_content().empty()) {
    return errors::InvalidArgument(what,
                                   ": a string tensor must hold its values in string_val, "
                                   "not tensor_content");
  }
  const auto& values = in.string_val();
  if (values.size() > count) {
    return errors::InvalidArgument(what, ": the tensor holds ", values.size(),
                                   " values but its shape has ", count, " elements");
  }
  int64_t bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t size =
        values.empty()
            ? 0
            : static_cast<int64_t>(values.Get(std::min<int64_t>(i, values.size() - 1)).size());
    bytes += size + static_cast<int64_t>(sizeof(std::string));
    if (bytes > kMaxExpandedTensorBytes) {
      return errors::InvalidArgument(what, ": a string tensor of shape ", shape.ToString(),
                                     " expands to more than the ", kMaxExpandedTensorBytes,
                                     " bytes Flowstone expands from a GraphDef");
    }
  }
  *out = Tensor::Host(DType::kString, shape.ToTensorShape());
  std::string* elements = out->data<std::string>();
  for (int64_t i = 0; i < count && !values.empty(); ++i) {
    elements[i] = values.Get(static_cast<int>(std::min<int64_t>(i, values.size() - 1)));
  }
  return Status::OK();
}

// Fills `out` (of `count` elements) from the typed repeated field `values`: all of them, or
// TensorFlow's shorthand of fewer values whose last one repeats (none: zeros).
template <typename Stored, typename Element, typename Convert>
Status FillFromValues(const google::protobuf::RepeatedField<Stored>& values, int64_t count,
                      const std::string& what, Convert convert, Element* out) {
  if (values.size() > count) {
    return errors::InvalidArgument(what, ": the tensor holds ", values.size(),
                                   " values but its shape has ", count, " elements");
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i] = values.empty()
                 ? Element{}
                 : convert(values.Get(static_cast<int>(std::min<int64_t>(i, values.size() - 1))));
  }
  return Status::OK();
}

// scomplex_val and dcomplex_val hold (real, imaginary) pairs; with fewer pairs than elements the
// last pair repeats, as in TensorFlow.
template <typename T>
Status FillComplexFromValues(const google::protobuf::RepeatedField<T>& values, int64_t count,
                             const std::string& what, std::complex<T>* out) {
  if (values.size() % 2 != 0) {
    return errors::InvalidArgument(what,
                                   ": a complex tensor's values come in (real, imaginary) "
                                   "pairs, but it holds ",
                                   values.size(), " numbers");
  }
  const int64_t pairs = values.size() / 2;
  if (pairs > count) {
    return errors::InvalidArgument(what, ": the tensor holds ", pairs, " values but its shape has ",
                                   count, " elements");
  }
  for (int64_t i = 0; i < count; ++i) {
    if (pairs == 0) {
      out[i] = std::complex<T>();
      continue;
    }
    const int k = static_cast<int>(std::min<int64_t>(i, pairs - 1)) * 2;
    out[i] = std::complex<T>(values.Get(k), values.Get(k + 1));
  }
  return Status::OK();
}

Status ImportTensor(const proto::TensorProto& in, const std::string& what, Tensor* out) {
  DType dtype;
  FS_RETURN_IF_ERROR(ImportDType(in.dtype(), what, &dtype));
  if (dtype == DType::kResource || dtype == DType::kVariant) {
    return errors::Unimplemented(what, ": a ", DTypeName(dtype),
                                 " tensor cannot be read from a GraphDef");
  }
  PartialShape shape;
  FS_RETURN_IF_ERROR(ImportShape(in.tensor_shape(), what, &shape));
  if (!shape.known_rank()) {
    return errors::InvalidArgument(what, ": a tensor's shape must have a known rank");
  }
  int64_t count;
  FS_RETURN_IF_ERROR(ElementCount(shape, what, &count));
  if (dtype == DType::kString) return ImportStringTensor(in, shape, count, what, out);
  const int64_t element_size = static_cast<int64_t>(DTypeSize(dtype));
  if (count > std::numeric_limits<int64_t>::max() / element_size) {
    return errors::InvalidArgument(what, ": the byte size of shape ", shape.ToString(),
                                   " overflows int64");
  }
  const int64_t bytes = count * element_size;
  if (!in.tensor_content().empty()) {
    if (static_cast<int64_t>(in.tensor_content().size()) != bytes) {
      return errors::InvalidArgument(what, ": tensor_content has ", in.tensor_content().size(),
                                     " bytes but a ", DTypeName(dtype), " tensor of shape ",
                                     shape.ToString(), " needs ", bytes);
    }
    *out = Tensor::Host(dtype, shape.ToTensorShape());
    if (bytes > 0) std::memcpy(out->raw_data(), in.tensor_content().data(), bytes);
    return Status::OK();
  }
  if (bytes > kMaxExpandedTensorBytes) {
    return errors::InvalidArgument(
        what, ": a ", DTypeName(dtype), " tensor of shape ", shape.ToString(), " (", bytes,
        " bytes) given by ", "repeated values instead of tensor_content is larger than the ",
        kMaxExpandedTensorBytes, " bytes Flowstone expands; store its bytes in tensor_content");
  }
  *out = Tensor::Host(dtype, shape.ToTensorShape());
  auto same = [](auto v) { return v; };
  switch (dtype) {
    case DType::kFloat32:
      return FillFromValues(in.float_val(), count, what, same, out->data<float>());
    case DType::kFloat64:
      return FillFromValues(in.double_val(), count, what, same, out->data<double>());
    case DType::kInt32:
      return FillFromValues(in.int_val(), count, what, same, out->data<int32_t>());
    case DType::kInt64:
      return FillFromValues(in.int64_val(), count, what, same, out->data<int64_t>());
    case DType::kUInt8:
      return FillFromValues(
          in.int_val(), count, what, [](int32_t v) { return static_cast<uint8_t>(v); },
          out->data<uint8_t>());
    case DType::kBool:
      return FillFromValues(in.bool_val(), count, what, same, out->data<bool>());
    case DType::kFloat16:
    case DType::kBFloat16:
      return FillFromValues(
          in.half_val(), count, what, [](int32_t v) { return static_cast<uint16_t>(v); },
          static_cast<uint16_t*>(out->raw_data()));
    case DType::kComplex64:
      return FillComplexFromValues(in.scomplex_val(), count, what, out->data<complex64>());
    case DType::kComplex128:
      return FillComplexFromValues(in.dcomplex_val(), count, what, out->data<complex128>());
    default:
      return errors::Unimplemented(what, ": dtype ", DTypeName(dtype));
  }
}

// ---- attrs ----

Status ExportAttr(const AttrValue& value, proto::AttrValue* out) {
  switch (AttrValueType(value)) {
    case AttrType::kInt:
      out->set_i(std::get<int64_t>(value));
      break;
    case AttrType::kFloat:
      out->set_f(static_cast<float>(std::get<double>(value)));
      break;
    case AttrType::kBool:
      out->set_b(std::get<bool>(value));
      break;
    case AttrType::kString:
      out->set_s(std::get<std::string>(value));
      break;
    case AttrType::kType:
      out->set_type(static_cast<proto::DataType>(DTypeToTfEnum(std::get<DType>(value))));
      break;
    case AttrType::kShape:
      ExportShape(std::get<PartialShape>(value), out->mutable_shape());
      break;
    case AttrType::kTensor:
      return ExportTensor(std::get<Tensor>(value), out->mutable_tensor());
    case AttrType::kIntList: {
      auto* list = out->mutable_list();
      for (int64_t v : std::get<std::vector<int64_t>>(value)) list->add_i(v);
      break;
    }
    case AttrType::kFloatList: {
      auto* list = out->mutable_list();
      for (double v : std::get<std::vector<double>>(value)) list->add_f(static_cast<float>(v));
      break;
    }
    case AttrType::kTypeList: {
      auto* list = out->mutable_list();
      for (DType v : std::get<std::vector<DType>>(value)) {
        list->add_type(static_cast<proto::DataType>(DTypeToTfEnum(v)));
      }
      break;
    }
    case AttrType::kShapeList: {
      auto* list = out->mutable_list();
      for (const PartialShape& v : std::get<std::vector<PartialShape>>(value)) {
        ExportShape(v, list->add_shape());
      }
      break;
    }
    case AttrType::kStringList: {
      auto* list = out->mutable_list();
      for (const std::string& v : std::get<std::vector<std::string>>(value)) list->add_s(v);
      break;
    }
    case AttrType::kFunc:
      out->mutable_func()->set_name(std::get<FunctionRef>(value).name);
      break;
  }
  return Status::OK();
}

const char* AttrFormName(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kS:
      return "string";
    case proto::AttrValue::kI:
      return "int";
    case proto::AttrValue::kF:
      return "float";
    case proto::AttrValue::kB:
      return "bool";
    case proto::AttrValue::kType:
      return "type";
    case proto::AttrValue::kShape:
      return "shape";
    case proto::AttrValue::kTensor:
      return "tensor";
    case proto::AttrValue::kList:
      return "list";
    case proto::AttrValue::kFunc:
      return "func";
    case proto::AttrValue::kPlaceholder:
      return "placeholder";
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return "nothing";
}

// Converts an AttrValue to the form the op's schema declares for the attr.
Status ImportAttr(const proto::AttrValue& in, AttrType type, const std::string& what,
                  AttrValue* out) {
  auto expect = [&](proto::AttrValue::ValueCase form) -> Status {
    if (in.value_case() == form) return Status::OK();
    return errors::InvalidArgument(what, " must be ", AttrTypeName(type), " but the GraphDef has ",
                                   AttrFormName(in));
  };
  const bool is_list = type == AttrType::kIntList || type == AttrType::kFloatList ||
                       type == AttrType::kTypeList || type == AttrType::kShapeList ||
                       type == AttrType::kStringList;
  if (is_list) FS_RETURN_IF_ERROR(expect(proto::AttrValue::kList));
  const proto::AttrValue::ListValue& list = in.list();
  switch (type) {
    case AttrType::kInt:
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kI));
      *out = static_cast<int64_t>(in.i());
      return Status::OK();
    case AttrType::kFloat:
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kF));
      *out = static_cast<double>(in.f());
      return Status::OK();
    case AttrType::kBool:
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kB));
      *out = in.b();
      return Status::OK();
    case AttrType::kString:
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kS));
      *out = in.s();
      return Status::OK();
    case AttrType::kType: {
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kType));
      DType dtype;
      FS_RETURN_IF_ERROR(ImportDType(in.type(), what, &dtype));
      *out = dtype;
      return Status::OK();
    }
    case AttrType::kShape: {
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kShape));
      PartialShape shape;
      FS_RETURN_IF_ERROR(ImportShape(in.shape(), what, &shape));
      *out = shape;
      return Status::OK();
    }
    case AttrType::kTensor: {
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kTensor));
      Tensor tensor;
      FS_RETURN_IF_ERROR(ImportTensor(in.tensor(), what, &tensor));
      *out = std::move(tensor);
      return Status::OK();
    }
    case AttrType::kIntList:
      *out = std::vector<int64_t>(list.i().begin(), list.i().end());
      return Status::OK();
    case AttrType::kFloatList:
      *out = std::vector<double>(list.f().begin(), list.f().end());
      return Status::OK();
    case AttrType::kTypeList: {
      std::vector<DType> types;
      for (int value : list.type()) {
        DType dtype;
        FS_RETURN_IF_ERROR(ImportDType(value, what, &dtype));
        types.push_back(dtype);
      }
      *out = std::move(types);
      return Status::OK();
    }
    case AttrType::kShapeList: {
      std::vector<PartialShape> shapes;
      for (const auto& value : list.shape()) {
        PartialShape shape;
        FS_RETURN_IF_ERROR(ImportShape(value, what, &shape));
        shapes.push_back(shape);
      }
      *out = std::move(shapes);
      return Status::OK();
    }
    case AttrType::kStringList:
      *out = std::vector<std::string>(list.s().begin(), list.s().end());
      return Status::OK();
    case AttrType::kFunc:
      FS_RETURN_IF_ERROR(expect(proto::AttrValue::kFunc));
      *out = FunctionRef{in.func().name()};
      return Status::OK();
  }
  return errors::Internal(what, ": unhandled attr type");
}

// True for a value TensorFlow gives attrs it added after an op existed (their defaults keep the
// old behaviour): false, 0, "", an empty list. Such attrs are dropped when Flowstone's op lacks
// them; any other value would change what the op computes, so it is an error.
bool IsNeutralAttrValue(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kB:
      return !value.b();
    case proto::AttrValue::kI:
      return value.i() == 0;
    case proto::AttrValue::kS:
      return value.s().empty();
    case proto::AttrValue::kList:
      return value.list().ByteSizeLong() == 0;
    default:
      return false;
  }
}

// Attrs TensorFlow writes that only describe a node (VarHandleOp's `debug_name`, the
// variable's name for messages; MatMul's `grad_a` / `grad_b`, which TensorFlow 2.x's gradients
// set on the MatMuls they build as a hint for its oneDNN kernels): dropping them never changes
// what the node computes.
bool IsDescriptiveAttr(const std::string& name) {
  return name == "debug_name" || name == "grad_a" || name == "grad_b";
}

// ---- names ----

struct InputRef {
  std::string node;
  int index = 0;  // -1 for a control input
};

Status ParseInput(const std::string& input, const std::string& node_name, InputRef* out) {
  auto bad = [&]() {
    return errors::InvalidArgument("Node '", node_name, "': malformed input '", input,
                                   "'; inputs are \"name\", \"name:N\" or \"^name\"");
  };
  if (input.empty()) return bad();
  if (input[0] == '^') {
    out->node = input.substr(1);
    out->index = -1;
    return out->node.empty() ? bad() : Status::OK();
  }
  size_t colon = input.rfind(':');
  if (colon == std::string::npos) {
    out->node = input;
    out->index = 0;
    return Status::OK();
  }
  std::string digits = input.substr(colon + 1);
  if (colon == 0 || digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad();
  }
  out->node = input.substr(0, colon);
  out->index = std::stoi(digits);
  return Status::OK();
}

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string Prefixed(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "/" + name;
}

// The GraphDef's nodes in an order where every node follows its inputs; InvalidArgument for an
// input naming no node (and not mapped) and for a cycle.
Status TopologicalOrder(const proto::GraphDef& def,
                        const std::unordered_map<std::string, int>& index_of,
                        const std::vector<std::vector<InputRef>>& inputs,
                        const std::set<std::string>& mapped, std::vector<int>* order) {
  const int n = def.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (const InputRef& ref : inputs[i]) {
      std::string key = ref.index < 0 ? "^" + ref.node : ref.node + ":" + std::to_string(ref.index);
      if (mapped.count(key)) continue;
      auto it = index_of.find(ref.node);
      if (it == index_of.end()) {
        return WithPyType(errors::InvalidArgument("Node '", def.node(i).name(),
                                                  "': Unknown input node '", ref.node, "'"),
                          "ValueError");
      }
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  // Ready nodes go in GraphDef order, so a GraphDef that is already sorted keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order->push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(order->size()) != n) {
    std::string members;
    int listed = 0;
    for (int i = 0; i < n && listed < 5; ++i) {
      if (pending[i] > 0) members += StrCat(listed++ ? ", " : "", "'", def.node(i).name(), "'");
    }
    return WithPyType(errors::InvalidArgument(
                          "GraphDef contains a cycle (or nodes that depend on one): ", members,
                          ". Flowstone imports acyclic graphs; TF1 while loops "
                          "(NextIteration) are not supported yet"),
                      "ValueError");
  }
  return Status::OK();
}

// Builds the NodeSpec of GraphDef node `node_def`, whose inputs were already added to `graph`.
Status MakeNodeSpec(const proto::NodeDef& node_def, const OpDef& op,
                    const ImportGraphDefOptions& options,
                    const std::unordered_map<std::string, Node*>& imported,
                    const std::unordered_map<std::string, Endpoint>& input_map,
                    const std::vector<InputRef>& inputs, NodeSpec* spec) {
  const std::string& name = node_def.name();
  spec->name = Prefixed(options.prefix, name);
  spec->op = node_def.op();
  spec->device = node_def.device();
  for (const InputRef& ref : inputs) {
    std::string key = ref.index < 0 ? "^" + ref.node : ref.node + ":" + std::to_string(ref.index);
    auto mapped = input_map.find(key);
    if (ref.index < 0) {
      Node* dep = mapped != input_map.end() ? mapped->second.node : imported.at(ref.node);
      spec->control_inputs.push_back(dep);
      continue;
    }
    if (!spec->control_inputs.empty()) {
      return WithPyType(errors::InvalidArgument("Node '", name, "': data input '", key,
                                                "' follows a control input; control inputs (^) "
                                                "come after every data input"),
                        "ValueError");
    }
    if (mapped != input_map.end()) {
      spec->inputs.push_back(mapped->second);
      continue;
    }
    Node* producer = imported.at(ref.node);
    if (ref.index >= producer->num_outputs()) {
      return WithPyType(
          errors::InvalidArgument("Node '", name, "': input '", key, "' refers to output ",
                                  ref.index, " of '", ref.node, "', which has ",
                                  producer->num_outputs(), " outputs"),
          "ValueError");
    }
    spec->inputs.push_back(Endpoint{producer, ref.index});
  }
  for (const auto& [attr_name, value] : node_def.attr()) {
    std::string what = StrCat("Node '", name, "' (", op.name, "): attr '", attr_name, "'");
    if (attr_name == "_class") {
      if (value.value_case() != proto::AttrValue::kList) {
        return errors::InvalidArgument(what, " must be a list of strings");
      }
      std::vector<std::string> groups;
      for (const std::string& group : value.list().s()) {
        groups.push_back(group.rfind("loc:@", 0) == 0
                             ? "loc:@" + Prefixed(options.prefix, group.substr(5))
                             : group);
      }
      spec->attrs.Set(attr_name, std::move(groups));
      continue;
    }
    if (!attr_name.empty() && attr_name[0] == '_') continue;
    const AttrDef* def = op.FindAttr(attr_name);
    if (def == nullptr) {
      if (IsNeutralAttrValue(value) || IsDescriptiveAttr(attr_name)) continue;
      return WithPyType(errors::InvalidArgument(what, " is not an attr of Flowstone's ", op.name,
                                                " op, and its value is not the default"),
                        "ValueError");
    }
    AttrValue converted;
    FS_RETURN_IF_ERROR(ImportAttr(value, def->type, what, &converted));
    spec->attrs.Set(attr_name, std::move(converted));
  }
  return Status::OK();
}

// Adds the nodes of `def` to `graph`, given the already validated structure.
Status AddNodes(const proto::GraphDef& def, const ImportGraphDefOptions& options,
                const std::vector<int>& order, const std::vector<std::vector<InputRef>>& inputs,
                const std::unordered_map<std::string, Endpoint>& input_map, Graph* graph,
                std::unordered_map<std::string, Node*>* imported) {
  for (int i : order) {
    const proto::NodeDef& node_def = def.node(i);
    const OpDef* op = OpRegistry::Global().Find(node_def.op());
    NodeSpec spec;
    FS_RETURN_IF_ERROR(
        MakeNodeSpec(node_def, *op, options, *imported, input_map, inputs[i], &spec));
    StatusOr<Node*> node = graph->AddNode(std::move(spec));
    if (!node.ok()) {
      Status s(node.status().code(), StrCat("Node '", node_def.name(), "' (", node_def.op(),
                                            ") of the GraphDef: ", node.status().message()));
      if (const auto* payloads = node.status().payloads()) {
        for (const auto& [k, v] : *payloads) s.SetPayload(k, v);
      }
      return s;
    }
    (*imported)[node_def.name()] = *node;
  }
  return Status::OK();
}

// ---- TF1 reference variables ----

// The resource op that replaces a ref op updating a VariableV2.
const char* ResourceUpdateOp(const std::string& ref_op) {
  if (ref_op == "Assign") return "AssignVariableOp";
  if (ref_op == "AssignAdd") return "AssignAddVariableOp";
  if (ref_op == "AssignSub") return "AssignSubVariableOp";
  return nullptr;
}

// Flowstone has no reference dtypes, so TF1's reference variables become resource variables as
// they are imported, keeping every node name that other nodes, collections and signatures use:
//   VariableV2 v                 -> VarHandleOp v/_handle (shared_name: v's, else "v")
//                                   + ReadVariableOp v (so "v:0" is the value)
//   Assign/AssignAdd/AssignSub a -> Assign*VariableOp a/_update(v/_handle, value)
//                                   + ReadVariableOp a after it (so "a:0" is the new value)
//   IsVariableInitialized i      -> VarIsInitializedOp i(v/_handle)
// A read of "v" is ordered only by its own inputs: a reader that must see an assignment made
// in the same step needs a control dependency on it (TF1's ref reads saw it through the ref).
void RewriteRefVariables(proto::GraphDef* def) {
  std::unordered_map<std::string, std::string> handles;  // VariableV2 name -> handle name
  for (proto::NodeDef& node : *def->mutable_node()) {
    if (node.op() != "VariableV2") continue;
    handles[node.name()] = node.name() + "/_handle";
  }
  if (handles.empty()) return;
  auto handle_of = [&](const proto::NodeDef& node) -> const std::string* {
    if (node.input_size() == 0) return nullptr;
    std::string source = node.input(0);
    if (source.size() > 2 && source.compare(source.size() - 2, 2, ":0") == 0) {
      source.resize(source.size() - 2);
    }
    auto it = handles.find(source);
    return it == handles.end() ? nullptr : &it->second;
  };
  auto read_of = [](proto::NodeDef* node, const std::string& handle, proto::DataType dtype) {
    node->set_op("ReadVariableOp");
    node->clear_input();
    node->add_input(handle);
    auto colocation = node->attr().find("_class");
    proto::AttrValue groups;
    if (colocation != node->attr().end()) groups = colocation->second;
    node->clear_attr();
    (*node->mutable_attr())["dtype"].set_type(dtype);
    if (groups.has_list()) (*node->mutable_attr())["_class"] = groups;
  };
  std::vector<proto::NodeDef> added;
  for (proto::NodeDef& node : *def->mutable_node()) {
    if (node.op() == "VariableV2") {
      proto::NodeDef handle;
      handle.set_name(handles[node.name()]);
      handle.set_op("VarHandleOp");
      handle.set_device(node.device());
      auto& attrs = *handle.mutable_attr();
      for (const char* name : {"dtype", "shape", "container", "_class"}) {
        auto it = node.attr().find(name);
        if (it != node.attr().end()) attrs[name] = it->second;
      }
      auto shared = node.attr().find("shared_name");
      const bool has_shared = shared != node.attr().end() && !shared->second.s().empty();
      attrs["shared_name"].set_s(has_shared ? shared->second.s() : node.name());
      proto::DataType dtype = attrs["dtype"].type();
      std::vector<std::string> controls(node.input().begin(), node.input().end());
      read_of(&node, handle.name(), dtype);
      for (const std::string& control : controls) node.add_input(control);
      added.push_back(std::move(handle));
      continue;
    }
    const std::string* handle = handle_of(node);
    if (handle == nullptr) continue;
    if (const char* update_op = ResourceUpdateOp(node.op())) {
      proto::NodeDef update;
      update.set_name(node.name() + "/_update");
      update.set_op(update_op);
      update.set_device(node.device());
      update.add_input(*handle);
      for (int i = 1; i < node.input_size(); ++i) update.add_input(node.input(i));
      proto::DataType dtype = node.attr().count("T") ? node.attr().at("T").type() : proto::DT_FLOAT;
      (*update.mutable_attr())["dtype"].set_type(dtype);
      read_of(&node, *handle, dtype);
      node.add_input("^" + update.name());
      added.push_back(std::move(update));
    } else if (node.op() == "IsVariableInitialized") {
      std::vector<std::string> controls(node.input().begin() + 1, node.input().end());
      node.set_op("VarIsInitializedOp");
      node.clear_input();
      node.add_input(*handle);
      for (const std::string& control : controls) node.add_input(control);
      node.clear_attr();
    }
  }
  for (proto::NodeDef& node : added) *def->add_node() = std::move(node);
}

// Finds options.return_elements among the imported nodes.
Status ReturnElements(const ImportGraphDefOptions& options,
                      const std::unordered_map<std::string, Node*>& imported,
                      ImportGraphDefResults* results) {
  results->return_elements.clear();
  for (const std::string& element : options.return_elements) {
    bool is_tensor = element.find(':') != std::string::npos;
    InputRef ref;
    FS_RETURN_IF_ERROR(ParseInput(element, "return_elements", &ref));
    auto it = imported.find(ref.node);
    if (it == imported.end() || ref.index < 0) {
      return WithPyType(
          errors::InvalidArgument("Requested return node '", ref.node, "' not found in graph def"),
          "ValueError");
    }
    if (!is_tensor) {
      results->return_elements.push_back(Endpoint{it->second, -1});
      continue;
    }
    if (ref.index >= it->second->num_outputs()) {
      return WithPyType(
          errors::InvalidArgument("Invalid return output ", ref.index, " of node '", ref.node,
                                  "', which has ", it->second->num_outputs(), " output(s)"),
          "ValueError");
    }
    results->return_elements.push_back(Endpoint{it->second, ref.index});
  }
  return Status::OK();
}

}  // namespace

Status ParseGraphDef(const std::string& bytes, proto::GraphDef* out) {
  if (!out->ParseFromString(bytes)) {
    return WithPyType(errors::InvalidArgument("Cannot parse the ", bytes.size(),
                                              " bytes as a GraphDef: the message is truncated "
                                              "or is not a GraphDef"),
                      "ValueError");
  }
  return Status::OK();
}

namespace {

// ---- function libraries ----
//
// A FunctionDef's body refers to outputs as "node:output_arg:index" and to its arguments by
// name; a Graph refers to outputs by flat index. These convert between the two using the op's
// output arguments (whose lengths come from number_attr / type_list_attr).

// The length of output argument `arg` of a node with `attrs`.
int64_t OutputArgLength(const ArgDef& arg, const AttrMap& attrs) {
  if (!arg.type_list_attr.empty()) {
    const auto* types = std::get_if<std::vector<DType>>(attrs.Find(arg.type_list_attr));
    return types ? static_cast<int64_t>(types->size()) : 0;
  }
  if (!arg.number_attr.empty()) {
    const auto* n = std::get_if<int64_t>(attrs.Find(arg.number_attr));
    return n ? *n : 0;
  }
  return 1;
}

int64_t OutputArgLength(const ArgDef& arg, const proto::NodeDef& node) {
  auto attr = [&](const std::string& name) -> const proto::AttrValue* {
    auto it = node.attr().find(name);
    return it == node.attr().end() ? nullptr : &it->second;
  };
  if (!arg.type_list_attr.empty()) {
    const proto::AttrValue* types = attr(arg.type_list_attr);
    return types ? types->list().type_size() : 0;
  }
  if (!arg.number_attr.empty()) {
    const proto::AttrValue* n = attr(arg.number_attr);
    return n ? n->i() : 0;
  }
  return 1;
}

// "node:output_arg:index" of output `e` of a body node.
std::string FunctionOutputName(const Endpoint& e) {
  int64_t start = 0;
  for (const ArgDef& arg : e.node->op_def().outputs) {
    int64_t length = OutputArgLength(arg, e.node->attrs());
    if (e.index < start + length)
      return StrCat(e.node->name(), ":", arg.name, ":", e.index - start);
    start += length;
  }
  return StrCat(e.node->name(), ":", e.index);
}

std::string ArgName(int i) { return StrCat("input_", i); }
std::string RetName(int i) { return StrCat("output_", i); }

Status ExportFunction(const FunctionDef& function, proto::FunctionDef* out) {
  proto::OpDef* signature = out->mutable_signature();
  signature->set_name(function.name);
  std::unordered_map<const Node*, int> arg_index;
  for (size_t i = 0; i < function.args.size(); ++i) {
    arg_index[function.args[i].node] = static_cast<int>(i);
    proto::OpDef::ArgDef* arg = signature->add_input_arg();
    arg->set_name(ArgName(static_cast<int>(i)));
    arg->set_type(
        static_cast<proto::DataType>(DTypeToTfEnum(function.args[i].node->output_type(0))));
  }
  auto reference = [&](const Endpoint& e) {
    auto it = arg_index.find(e.node);
    return it != arg_index.end() ? ArgName(it->second) : FunctionOutputName(e);
  };
  for (size_t i = 0; i < function.rets.size(); ++i) {
    proto::OpDef::ArgDef* ret = signature->add_output_arg();
    ret->set_name(RetName(static_cast<int>(i)));
    ret->set_type(static_cast<proto::DataType>(
        DTypeToTfEnum(function.rets[i].node->output_type(function.rets[i].index))));
    (*out->mutable_ret())[ret->name()] = reference(function.rets[i]);
  }
  for (const Node* node : function.body->nodes()) {
    if (arg_index.count(node)) continue;
    proto::NodeDef* node_def = out->add_node_def();
    node_def->set_name(node->name());
    node_def->set_op(node->type());
    node_def->set_device(node->requested_device());
    for (const Endpoint& in : node->inputs()) node_def->add_input(reference(in));
    for (const Node* dep : node->control_inputs()) node_def->add_input("^" + dep->name());
    for (const auto& [name, value] : node->attrs().entries()) {
      Status s = ExportAttr(value, &(*node_def->mutable_attr())[name]);
      if (!s.ok()) {
        return Status(s.code(), StrCat("function '", function.name, "', node '", node->name(),
                                       "': attr '", name, "': ", s.message()));
      }
    }
  }
  return Status::OK();
}

// The functions the nodes of `graph` call, and those they call, each once.
void CollectFunctions(const Graph& graph, std::vector<const FunctionDef*>* out,
                      std::set<std::string>* seen) {
  for (const Node* node : graph.nodes()) {
    for (const auto& [name, value] : node->attrs().entries()) {
      const auto* ref = std::get_if<FunctionRef>(&value);
      if (ref == nullptr || !seen->insert(ref->name).second) continue;
      const FunctionDef* function = graph.library().Find(ref->name);
      if (function == nullptr) continue;
      out->push_back(function);
      CollectFunctions(*function->body, out, seen);
    }
  }
}

Status ImportGraphDefUnchecked(const proto::GraphDef& def, const ImportGraphDefOptions& options,
                               Graph* graph, ImportGraphDefResults* results,
                               const std::vector<FunctionalizedBody>& generated = {});

// NotFound, as TensorFlow words it, listing every op type of `def` that Flowstone lacks. TF1's
// control-flow ops are allowed before FunctionalizeControlFlow removes them.
Status CheckOpsRegistered(const proto::GraphDef& def, bool allow_v1_control_flow) {
  std::map<std::string, std::string> unsupported;  // op type -> first node using it
  for (const proto::NodeDef& node_def : def.node()) {
    if (allow_v1_control_flow && IsV1ControlFlowOp(node_def.op())) continue;
    if (OpRegistry::Global().Find(node_def.op()) == nullptr) {
      unsupported.emplace(node_def.op(), node_def.name());
    }
  }
  if (unsupported.empty()) return Status::OK();
  std::string list;
  for (const auto& [op, node] : unsupported) list += StrCat(list.empty() ? "" : ", ", op);
  const auto& [first_op, first_node] = *unsupported.begin();
  return errors::NotFound("Op type not registered '", first_op, "' in binary running on ",
                          HostName(),
                          ". Make sure the Op and Kernel are registered in the "
                          "binary running in this process. (node '",
                          first_node, "'). Flowstone lacks these ops of the GraphDef: ", list);
}

// Converts "node:output_arg:index", "node:output_arg" or an argument name to a GraphDef input.
Status GraphInputOfFunctionInput(
    const std::string& input, const std::unordered_map<std::string, const proto::NodeDef*>& nodes,
    const std::string& function, std::string* out) {
  if (!input.empty() && input[0] == '^') {
    *out = input;
    return Status::OK();
  }
  size_t colon = input.find(':');
  if (colon == std::string::npos) {
    *out = input;  // an argument: its Placeholder has the argument's name
    return Status::OK();
  }
  std::string node_name = input.substr(0, colon);
  std::string rest = input.substr(colon + 1);
  size_t second = rest.find(':');
  std::string arg_name = rest.substr(0, second);
  int64_t index = 0;
  if (second != std::string::npos) {
    std::string digits = rest.substr(second + 1);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return errors::InvalidArgument("function '", function, "': malformed input '", input, "'");
    }
    index = std::stoll(digits);
  }
  auto it = nodes.find(node_name);
  const OpDef* op = it == nodes.end() ? nullptr : OpRegistry::Global().Find(it->second->op());
  if (op == nullptr) {
    // Unknown nodes and ops are reported by the body's import with their names.
    *out = StrCat(node_name, ":", index);
    return Status::OK();
  }
  int64_t start = 0;
  for (const ArgDef& arg : op->outputs) {
    int64_t length = OutputArgLength(arg, *it->second);
    if (arg.name == arg_name) {
      if (index >= length) {
        return errors::InvalidArgument("function '", function, "': input '", input,
                                       "' refers to element ", index, " of output '", arg_name,
                                       "', which has ", length);
      }
      *out = StrCat(node_name, ":", start + index);
      return Status::OK();
    }
    start += length;
  }
  return errors::InvalidArgument("function '", function, "': input '", input, "' names no output '",
                                 arg_name, "' of ", op->name);
}

// Adds function `name` to `graph`'s library: `body_def` is its body, a GraphDef whose nodes
// `args` are the arguments' Placeholders and whose tensors `rets` ("node:N", or an argument's
// name) are its returns.
Status ImportFunctionBody(const std::string& name, const proto::GraphDef& body_def,
                          const std::vector<std::string>& args,
                          const std::vector<std::string>& rets, Graph* graph) {
  auto body = std::make_shared<Graph>(graph->shared_library());
  ImportGraphDefOptions options;
  options.return_elements = rets;
  for (auto& ret : options.return_elements) {
    if (ret.find(':') == std::string::npos) ret += ":0";
  }
  ImportGraphDefResults results;
  Status s = ImportGraphDefUnchecked(body_def, options, body.get(), &results);
  if (!s.ok()) return Status(s.code(), StrCat("in function '", name, "': ", s.message()));
  FunctionDef imported;
  imported.name = name;
  imported.body = body;
  for (const std::string& arg : args) imported.args.push_back(Endpoint{body->FindNode(arg), 0});
  imported.rets = results.return_elements;
  return graph->library().Add(std::move(imported));
}

Status ImportFunction(const proto::FunctionDef& function, Graph* graph) {
  const std::string& name = function.signature().name();
  proto::GraphDef body_def;
  for (const auto& arg : function.signature().input_arg()) {
    if (arg.type() == proto::DT_INVALID) {
      return errors::Unimplemented("function '", name, "': argument '", arg.name(),
                                   "' is polymorphic (", arg.type_attr(), arg.type_list_attr(),
                                   "), which Flowstone cannot import");
    }
    proto::NodeDef* placeholder = body_def.add_node();
    placeholder->set_name(arg.name());
    placeholder->set_op("Placeholder");
    (*placeholder->mutable_attr())["dtype"].set_type(arg.type());
  }
  std::unordered_map<std::string, const proto::NodeDef*> nodes;
  for (const proto::NodeDef& node : function.node_def()) nodes[node.name()] = &node;
  for (const proto::NodeDef& node : function.node_def()) {
    proto::NodeDef* copy = body_def.add_node();
    *copy = node;
    copy->clear_input();
    for (const std::string& input : node.input()) {
      std::string converted;
      FS_RETURN_IF_ERROR(GraphInputOfFunctionInput(input, nodes, name, &converted));
      copy->add_input(converted);
    }
  }
  std::vector<std::string> args, rets;
  for (const auto& arg : function.signature().input_arg()) args.push_back(arg.name());
  for (const auto& ret : function.signature().output_arg()) {
    auto it = function.ret().find(ret.name());
    if (it == function.ret().end()) {
      return errors::InvalidArgument("function '", name, "' does not say what output '", ret.name(),
                                     "' returns");
    }
    std::string converted;
    FS_RETURN_IF_ERROR(GraphInputOfFunctionInput(it->second, nodes, name, &converted));
    rets.push_back(converted);
  }
  return ImportFunctionBody(name, body_def, args, rets, graph);
}

// Adds the library's functions that `graph`'s library lacks, callees before callers.
Status ImportLibrary(const proto::FunctionDefLibrary& library, Graph* graph) {
  std::vector<const proto::FunctionDef*> pending;
  for (const proto::FunctionDef& function : library.function()) {
    if (graph->library().Find(function.signature().name()) == nullptr) {
      pending.push_back(&function);
    }
  }
  while (!pending.empty()) {
    std::vector<const proto::FunctionDef*> waiting;
    Status last;
    for (const proto::FunctionDef* function : pending) {
      Status s = ImportFunction(*function, graph);
      if (!s.ok()) {
        waiting.push_back(function);
        last = s;
      }
    }
    // No progress: report why the first remaining function cannot be imported.
    if (waiting.size() == pending.size()) return last;
    pending = std::move(waiting);
  }
  return Status::OK();
}

Status ImportGraphDefUnchecked(const proto::GraphDef& def, const ImportGraphDefOptions& options,
                               Graph* graph, ImportGraphDefResults* results,
                               const std::vector<FunctionalizedBody>& generated) {
  const int n = def.node_size();
  std::unordered_map<std::string, int> index_of;
  std::vector<std::vector<InputRef>> inputs(n);
  for (int i = 0; i < n; ++i) {
    const proto::NodeDef& node_def = def.node(i);
    if (node_def.name().empty()) {
      return WithPyType(errors::InvalidArgument("GraphDef node ", i, " (op '", node_def.op(),
                                                "') has an empty name"),
                        "ValueError");
    }
    if (!index_of.emplace(node_def.name(), i).second) {
      return WithPyType(errors::InvalidArgument("GraphDef has two nodes named '", node_def.name(),
                                                "'; node names must be unique"),
                        "ValueError");
    }
    for (const std::string& input : node_def.input()) {
      InputRef ref;
      FS_RETURN_IF_ERROR(ParseInput(input, node_def.name(), &ref));
      inputs[i].push_back(std::move(ref));
    }
  }
  FS_RETURN_IF_ERROR(CheckOpsRegistered(def, /*allow_v1_control_flow=*/false));

  // Functions first: the call ops' shape functions look them up. The library only grows, so
  // functions stay in it even when a node fails below.
  if (def.library().function_size() > 0) FS_RETURN_IF_ERROR(ImportLibrary(def.library(), graph));
  for (const FunctionalizedBody& fn : generated) {
    FS_RETURN_IF_ERROR(ImportFunctionBody(fn.name, *fn.body, fn.args, fn.rets, graph));
  }

  std::unordered_map<std::string, Endpoint> input_map;
  std::set<std::string> mapped;
  std::vector<std::string> unused_keys;
  for (const auto& [key, endpoint] : options.input_map) {
    InputRef ref;
    FS_RETURN_IF_ERROR(ParseInput(key, "input_map", &ref));
    std::string canonical =
        ref.index < 0 ? "^" + ref.node : ref.node + ":" + std::to_string(ref.index);
    if (!index_of.count(ref.node)) unused_keys.push_back(key);
    input_map[canonical] = endpoint;
    mapped.insert(canonical);
  }
  if (!unused_keys.empty()) {
    std::string list;
    for (const std::string& key : unused_keys) list += StrCat(list.empty() ? "" : ", ", key);
    return WithPyType(errors::InvalidArgument(
                          "Attempted to map inputs that were not found in graph_def: [", list, "]"),
                      "ValueError");
  }

  std::vector<int> order;
  FS_RETURN_IF_ERROR(TopologicalOrder(def, index_of, inputs, mapped, &order));

  // Graphs only grow, so a node that fails halfway must not leave its predecessors behind: the
  // import runs first into a scratch graph (mapped inputs become Placeholders of the same dtype
  // and shape) and only then into `graph`.
  {
    auto scratch = std::make_shared<Graph>(graph->shared_library());
    std::unordered_map<std::string, Endpoint> scratch_map;
    int k = 0;
    for (const auto& [key, endpoint] : input_map) {
      if (key[0] == '^') continue;
      NodeSpec placeholder;
      placeholder.name = StrCat("input_map_", k++);
      placeholder.op = "Placeholder";
      placeholder.attrs.Set("dtype", endpoint.node->output_type(endpoint.index));
      placeholder.attrs.Set("shape", endpoint.node->output_shape(endpoint.index));
      StatusOr<Node*> node = scratch->AddNode(std::move(placeholder));
      FS_RETURN_IF_ERROR(node.status());
      scratch_map[key] = Endpoint{*node, 0};
    }
    NodeSpec anchor;
    anchor.name = "control_anchor";
    anchor.op = "NoOp";
    StatusOr<Node*> anchor_node = scratch->AddNode(std::move(anchor));
    FS_RETURN_IF_ERROR(anchor_node.status());
    for (const auto& [key, endpoint] : input_map) {
      if (key[0] == '^') scratch_map[key] = Endpoint{*anchor_node, -1};
    }
    std::unordered_map<std::string, Node*> scratch_imported;
    FS_RETURN_IF_ERROR(
        AddNodes(def, options, order, inputs, scratch_map, scratch.get(), &scratch_imported));
    FS_RETURN_IF_ERROR(ReturnElements(options, scratch_imported, results));
  }
  for (const proto::NodeDef& node_def : def.node()) {
    std::string name = Prefixed(options.prefix, node_def.name());
    if (graph->FindNode(name) != nullptr) {
      return WithPyType(
          errors::InvalidArgument("Cannot import node '", node_def.name(), "' as '", name,
                                  "': the graph already has a node of that "
                                  "name; import with another name (prefix)"),
          "ValueError");
    }
  }
  std::unordered_map<std::string, Node*> imported;
  FS_RETURN_IF_ERROR(AddNodes(def, options, order, inputs, input_map, graph, &imported));
  return ReturnElements(options, imported, results);
}

// The nodes of a TF1 loop or cond move into functions; mapping or returning one of them is an
// error that says so (rather than that the GraphDef lacks the node).
Status CheckRequestedNodesKept(const proto::GraphDef& before, const proto::GraphDef& after,
                               const ImportGraphDefOptions& options) {
  std::set<std::string> kept, moved;
  for (const proto::NodeDef& node : after.node()) kept.insert(node.name());
  for (const proto::NodeDef& node : before.node()) {
    if (!kept.count(node.name())) moved.insert(node.name());
  }
  std::vector<std::string> requested = options.return_elements;
  for (const auto& [key, endpoint] : options.input_map) requested.push_back(key);
  for (const std::string& element : requested) {
    InputRef ref;
    if (!ParseInput(element, "import_graph_def", &ref).ok() || !moved.count(ref.node)) continue;
    return WithPyType(
        errors::InvalidArgument("Cannot map or return '", element, "': node '", ref.node,
                                "' is inside a TF1 while loop or cond, which Flowstone imports "
                                "as a While or If over library functions; use the loop's Exit or "
                                "the cond's Merge (or a tensor outside them) instead"),
        "ValueError");
  }
  return Status::OK();
}

}  // namespace

Status GraphToGraphDef(const Graph& graph, proto::GraphDef* out) {
  out->Clear();
  out->mutable_versions()->set_producer(kGraphDefProducer);
  std::vector<const FunctionDef*> functions;
  std::set<std::string> seen;
  CollectFunctions(graph, &functions, &seen);
  for (const FunctionDef* function : functions) {
    FS_RETURN_IF_ERROR(ExportFunction(*function, out->mutable_library()->add_function()));
  }
  for (const Node* node : graph.nodes()) {
    proto::NodeDef* node_def = out->add_node();
    node_def->set_name(node->name());
    node_def->set_op(node->type());
    for (const Endpoint& in : node->inputs()) {
      node_def->add_input(in.index == 0 ? in.node->name() : in.ToString());
    }
    for (const Node* dep : node->control_inputs()) node_def->add_input("^" + dep->name());
    node_def->set_device(node->requested_device());
    auto& attrs = *node_def->mutable_attr();
    for (const auto& [name, value] : node->attrs().entries()) {
      Status s = ExportAttr(value, &attrs[name]);
      if (!s.ok()) {
        return Status(s.code(), StrCat("Node '", node->name(), "' (", node->type(), "): attr '",
                                       name, "': ", s.message()));
      }
    }
  }
  return Status::OK();
}

Status ImportGraphDef(const proto::GraphDef& def, const ImportGraphDefOptions& options,
                      Graph* graph, ImportGraphDefResults* results) {
  const bool has_ref_variables =
      std::any_of(def.node().begin(), def.node().end(),
                  [](const proto::NodeDef& node) { return node.op() == "VariableV2"; });
  const bool has_v1_control_flow = HasV1ControlFlow(def);
  const bool has_tensor_arrays = HasTensorArraysV3(def);
  Status s;
  if (has_ref_variables || has_v1_control_flow || has_tensor_arrays) {
    proto::GraphDef rewritten = def;
    if (has_ref_variables) RewriteRefVariables(&rewritten);
    if (has_tensor_arrays) s = RewriteTensorArraysV3(&rewritten);
    if (s.ok() && has_v1_control_flow && HasStacksV2(rewritten)) s = RewriteStacksV2(&rewritten);
    std::vector<FunctionalizedBody> generated;
    if (has_v1_control_flow) {
      // TF1 loops and conds become While and If over new functions (one function mechanism).
      std::set<std::string> library_names;
      for (const auto& function : def.library().function()) {
        library_names.insert(function.signature().name());
      }
      auto taken = [&](const std::string& name) {
        return library_names.count(name) > 0 || graph->library().Find(name) != nullptr;
      };
      if (s.ok()) s = CheckOpsRegistered(rewritten, /*allow_v1_control_flow=*/true);
      if (s.ok()) s = FunctionalizeControlFlow(&rewritten, taken, &generated);
      if (s.ok()) s = CheckRequestedNodesKept(def, rewritten, options);
    }
    if (s.ok()) s = ImportGraphDefUnchecked(rewritten, options, graph, results, generated);
  } else {
    s = ImportGraphDefUnchecked(def, options, graph, results);
  }
  // TensorFlow's importer raises ValueError for a malformed GraphDef.
  if (s.code() == Code::kInvalidArgument && s.GetPayload("py_type").empty()) {
    s.SetPayload("py_type", "ValueError");
  }
  return s;
}

Status TensorToProto(const Tensor& tensor, proto::TensorProto* out) {
  return ExportTensor(tensor, out);
}

Status TensorFromProto(const proto::TensorProto& in, const std::string& what, Tensor* out) {
  return ImportTensor(in, what, out);
}

Status SerializeTensorProto(const Tensor& tensor, std::string* out) {
  proto::TensorProto message;
  FS_RETURN_IF_ERROR(ExportTensor(tensor, &message));
  if (!message.SerializeToString(out)) return errors::Internal("a TensorProto did not serialize");
  return Status::OK();
}

Status ParseTensorProto(const std::string& bytes, const std::string& what, Tensor* out) {
  proto::TensorProto message;
  if (!message.ParseFromString(bytes)) {
    return errors::InvalidArgument("Could not parse ", what, " as a TensorProto (", bytes.size(),
                                   " bytes)");
  }
  return ImportTensor(message, what, out);
}

}  // namespace flowstone
