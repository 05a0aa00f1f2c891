#include "flowstone/graph.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "flowstone/function.h"
#include "flowstone/shape_inference.h"

namespace flowstone {

std::string Endpoint::ToString() const {
  return node ? StrCat(node->name(), ":", index) : std::string("<null>");
}

std::string Node::DebugString() const {
  std::string out = StrCat("{{node ", name_, "}} = ", type(), "[");
  bool first = true;
  for (const auto& [attr_name, value] : attrs_.entries()) {
    if (AttrValueType(value) == AttrType::kTensor) continue;
    out += StrCat(first ? "" : ", ", attr_name, "=", AttrValueToString(value));
    first = false;
  }
  out += "](";
  for (int i = 0; i < num_inputs(); ++i) {
    if (i) out += ", ";
    out += inputs_[i].index == 0 ? inputs_[i].node->name() : inputs_[i].ToString();
  }
  return out + ")";
}

namespace {

Status WithPyType(Status s, const char* py_type) {
  s.SetPayload("py_type", py_type);
  return s;
}

std::string Lower(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string AllowedList(const std::vector<DType>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += StrCat(i ? ", " : "", DTypeName(types[i]));
  return out;
}

// The most tensors one list argument may have. Only a wrong attr asks for more, and the graph
// would then allocate per-output state for each of them (num_split=2**62 never returned).
constexpr int64_t kMaxListLength = int64_t{1} << 20;

// The length of a list argument from its number attr ("N", "num_split"), checked: an attr of
// another type or a count outside [0, kMaxListLength] is an error, not a cast.
Status ListLength(const OpDef& op, const std::string& number_attr, const AttrValue& value,
                  int* count) {
  const int64_t* n = std::get_if<int64_t>(&value);
  if (n == nullptr) {
    return errors::TypeError("Attr '", number_attr, "' of ", op.name, " must be int, got ",
                             AttrTypeName(AttrValueType(value)));
  }
  if (*n < 0 || *n > kMaxListLength) {
    return WithPyType(
        errors::InvalidArgument(op.name, ": attr '", number_attr, "' must be >= 0 and at most ",
                                kMaxListLength, ", got ", *n),
        "ValueError");
  }
  *count = static_cast<int>(*n);
  return Status::OK();
}

// Assigns each input argument its [begin, end) range in the flat input list.
Status MatchInputArgs(const OpDef& op, const NodeSpec& spec, AttrMap* attrs,
                      std::vector<std::pair<int, int>>* ranges) {
  int fixed_count = 0;
  int open_lists = 0;
  // The length of a list(type)-typed argument whose attr is already set.
  auto type_list_length = [&](const ArgDef& arg) -> int {
    const AttrValue* types = attrs->Find(arg.type_list_attr);
    const auto* list = types ? std::get_if<std::vector<DType>>(types) : nullptr;
    return list ? static_cast<int>(list->size()) : -1;
  };
  for (const ArgDef& arg : op.inputs) {
    if (!arg.type_list_attr.empty()) {
      int n = type_list_length(arg);
      if (n >= 0) {
        fixed_count += n;
      } else {
        ++open_lists;
      }
    } else if (arg.number_attr.empty()) {
      ++fixed_count;
    } else if (const AttrValue* n = attrs->Find(arg.number_attr)) {
      int count = 0;
      FS_RETURN_IF_ERROR(ListLength(op, arg.number_attr, *n, &count));
      fixed_count += count;
    } else {
      ++open_lists;
    }
  }
  int total = static_cast<int>(spec.inputs.size());
  if (open_lists > 1 || (open_lists == 0 && total != fixed_count) || total < fixed_count) {
    return WithPyType(errors::InvalidArgument(op.name, " expects ", fixed_count,
                                              open_lists ? " or more" : "", " inputs, got ", total),
                      "ValueError");
  }
  int pos = 0;
  for (const ArgDef& arg : op.inputs) {
    int count = 1;
    if (!arg.type_list_attr.empty()) {
      count = type_list_length(arg);
      if (count < 0) count = total - fixed_count;
    } else if (!arg.number_attr.empty()) {
      if (const AttrValue* n = attrs->Find(arg.number_attr)) {
        FS_RETURN_IF_ERROR(ListLength(op, arg.number_attr, *n, &count));
      } else {
        count = total - fixed_count;
        attrs->Set(arg.number_attr, static_cast<int64_t>(count));
      }
    }
    ranges->push_back({pos, pos + count});
    pos += count;
  }
  return Status::OK();
}

// Sets or checks type attrs from the input dtypes, with TensorFlow's messages.
Status InferInputTypes(const OpDef& op, const NodeSpec& spec,
                       const std::vector<std::pair<int, int>>& ranges, AttrMap* attrs) {
  std::vector<std::pair<std::string, std::string>> set_by;  // type attr -> arg that set it
  for (size_t a = 0; a < op.inputs.size(); ++a) {
    const ArgDef& arg = op.inputs[a];
    if (!arg.type_list_attr.empty()) {
      std::vector<DType> actual;
      for (int i = ranges[a].first; i < ranges[a].second; ++i)
        actual.push_back(spec.inputs[i].node->output_type(spec.inputs[i].index));
      const AttrValue* current = attrs->Find(arg.type_list_attr);
      if (current == nullptr) {
        attrs->Set(arg.type_list_attr, actual);
        continue;
      }
      const auto* expected = std::get_if<std::vector<DType>>(current);
      for (size_t i = 0; expected && i < actual.size(); ++i) {
        if (actual[i] != (*expected)[i]) {
          return errors::TypeError(
              "Input '", arg.name, "' of '", op.name, "' Op has type ", DTypeName(actual[i]),
              " at position ", i, " that does not match expected type of ",
              DTypeName((*expected)[i]), " in attr '", arg.type_list_attr, "'.");
        }
      }
      continue;
    }
    for (int i = ranges[a].first; i < ranges[a].second; ++i) {
      const Endpoint& in = spec.inputs[i];
      DType actual = in.node->output_type(in.index);
      if (arg.fixed_type != DType::kInvalid) {
        if (actual != arg.fixed_type) {
          return errors::TypeError("Input '", arg.name, "' of '", op.name, "' Op has type ",
                                   DTypeName(actual), " that does not match expected type of ",
                                   DTypeName(arg.fixed_type), ".");
        }
        continue;
      }
      const AttrValue* current = attrs->Find(arg.type_attr);
      if (current == nullptr) {
        attrs->Set(arg.type_attr, actual);
        set_by.push_back({arg.type_attr, arg.name});
        continue;
      }
      DType expected = std::get<DType>(*current);
      if (actual == expected) continue;
      auto who = std::find_if(set_by.begin(), set_by.end(),
                              [&](const auto& p) { return p.first == arg.type_attr; });
      if (who != set_by.end()) {
        return errors::TypeError("Input '", arg.name, "' of '", op.name, "' Op has type ",
                                 DTypeName(actual), " that does not match type ",
                                 DTypeName(expected), " of argument '", who->second, "'.");
      }
      return errors::TypeError("Input '", arg.name, "' of '", op.name, "' Op has type ",
                               DTypeName(actual), " that does not match expected type of ",
                               DTypeName(expected), ".");
    }
  }
  return Status::OK();
}

Status FillAndCheckAttrs(const OpDef& op, AttrMap* attrs) {
  for (const AttrDef& def : op.attrs) {
    const AttrValue* value = attrs->Find(def.name);
    if (value == nullptr) {
      if (!def.has_default) {
        return WithPyType(errors::InvalidArgument("Op ", op.name, " is missing required attr '",
                                                  def.name, "' (", AttrTypeName(def.type), ")"),
                          "ValueError");
      }
      attrs->Set(def.name, def.default_value);
      continue;
    }
    if (AttrValueType(*value) != def.type) {
      return errors::TypeError("Attr '", def.name, "' of ", op.name, " must be ",
                               AttrTypeName(def.type), ", got ",
                               AttrTypeName(AttrValueType(*value)));
    }
    if (def.type == AttrType::kType && !def.allowed_types.empty()) {
      DType t = std::get<DType>(*value);
      if (std::find(def.allowed_types.begin(), def.allowed_types.end(), t) ==
          def.allowed_types.end()) {
        return errors::TypeError("Value for attr '", def.name, "' of ", DTypeName(t),
                                 " is not in the list of allowed values for ", op.name, ": ",
                                 AllowedList(def.allowed_types));
      }
    }
  }
  for (const auto& [name, value] : attrs->entries()) {
    if (op.FindAttr(name) == nullptr && name.rfind("_", 0) != 0) {
      return WithPyType(errors::InvalidArgument("Op ", op.name, " has no attr named '", name, "'"),
                        "ValueError");
    }
  }
  return Status::OK();
}

Status OutputTypes(const OpDef& op, const AttrMap& attrs, std::vector<DType>* out) {
  for (const ArgDef& arg : op.outputs) {
    if (!arg.type_list_attr.empty()) {
      const auto& types = std::get<std::vector<DType>>(*attrs.Find(arg.type_list_attr));
      out->insert(out->end(), types.begin(), types.end());
      continue;
    }
    DType t = arg.fixed_type;
    if (t == DType::kInvalid) t = std::get<DType>(*attrs.Find(arg.type_attr));
    int count = 1;
    if (!arg.number_attr.empty()) {
      FS_RETURN_IF_ERROR(ListLength(op, arg.number_attr, *attrs.Find(arg.number_attr), &count));
    }
    out->insert(out->end(), count, t);
  }
  return Status::OK();
}

// Values of inputs known while building: constants, and shapes that are fully known.
const Tensor* KnownValue(const Endpoint& in, std::vector<Tensor>* scratch) {
  const Node* node = in.node;
  if (node->type() == "Const") {
    const AttrValue* v = node->attrs().Find("value");
    return v ? std::get_if<Tensor>(v) : nullptr;
  }
  if (node->type() == "Shape" && node->num_inputs() == 1) {
    const PartialShape& shape = node->input(0).node->output_shape(node->input(0).index);
    if (!shape.IsFullyDefined()) return nullptr;
    DType out_type = node->output_type(0);
    Tensor t = Tensor::Host(out_type, TensorShape{shape.rank()});
    for (int i = 0; i < shape.rank(); ++i) {
      if (out_type == DType::kInt32) {
        t.data<int32_t>()[i] = static_cast<int32_t>(shape.dim(i));
      } else {
        t.data<int64_t>()[i] = shape.dim(i);
      }
    }
    scratch->push_back(std::move(t));
    return &scratch->back();
  }
  return nullptr;
}

}  // namespace

Graph::Graph() : owned_library_(std::make_shared<FunctionLibrary>()), library_(owned_library_) {}
Graph::Graph(std::shared_ptr<FunctionLibrary> library) : library_(std::move(library)) {}

FunctionLibrary& Graph::library() const {
  if (owned_library_) return *owned_library_;
  // A body's library lives as long as its root graph, which is alive while the body is in use.
  if (std::shared_ptr<FunctionLibrary> shared = library_.lock()) return *shared;
  static FunctionLibrary* const kEmpty = new FunctionLibrary;
  return *kEmpty;
}
Graph::~Graph() = default;

StatusOr<Node*> Graph::AddNode(NodeSpec spec) {
  const OpDef* op = OpRegistry::Global().Find(spec.op);
  if (op == nullptr) {
    return WithPyType(errors::NotFound("Op type not registered '", spec.op, "'"), "ValueError");
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (finalized_) {
    return WithPyType(
        errors::FailedPrecondition(
            "Graph is finalized and cannot be modified (adding '", spec.name, "' of type ", spec.op,
            "). Create ops before calling graph.finalize(); creating ops inside a "
            "training loop makes the graph grow on every step."),
        "RuntimeError");
  }
  if (spec.name.empty()) {
    return WithPyType(errors::InvalidArgument("node name is empty"), "ValueError");
  }
  if (by_name_.count(spec.name)) {
    return WithPyType(errors::InvalidArgument("Duplicate node name in graph: '", spec.name, "'"),
                      "ValueError");
  }
  auto in_graph = [this](const Node* n) {
    return n != nullptr && n->id_ >= 0 && n->id_ < static_cast<int>(nodes_.size()) &&
           nodes_[n->id_].get() == n;
  };
  for (const Endpoint& in : spec.inputs) {
    if (!in_graph(in.node)) {
      return WithPyType(errors::InvalidArgument("Input of '", spec.name,
                                                "' must be from the same graph as the node."),
                        "ValueError");
    }
    if (in.index < 0 || in.index >= in.node->num_outputs()) {
      return WithPyType(errors::InvalidArgument("Input of '", spec.name, "' refers to output ",
                                                in.index, " of '", in.node->name(), "', which has ",
                                                in.node->num_outputs(), " outputs"),
                        "ValueError");
    }
  }
  for (const Node* dep : spec.control_inputs) {
    if (!in_graph(dep)) {
      return WithPyType(errors::InvalidArgument("Control input of '", spec.name,
                                                "' must be from the same graph."),
                        "ValueError");
    }
  }

  std::vector<std::pair<int, int>> ranges;
  FS_RETURN_IF_ERROR(MatchInputArgs(*op, spec, &spec.attrs, &ranges));
  FS_RETURN_IF_ERROR(InferInputTypes(*op, spec, ranges, &spec.attrs));
  FS_RETURN_IF_ERROR(FillAndCheckAttrs(*op, &spec.attrs));
  std::vector<DType> output_types;
  FS_RETURN_IF_ERROR(OutputTypes(*op, spec.attrs, &output_types));

  std::vector<PartialShape> input_shapes;
  std::vector<DType> input_types;
  std::vector<const Tensor*> input_values;
  std::vector<Tensor> scratch;
  scratch.reserve(spec.inputs.size());
  for (const Endpoint& in : spec.inputs) {
    input_shapes.push_back(in.node->output_shape(in.index));
    input_types.push_back(in.node->output_type(in.index));
    input_values.push_back(KnownValue(in, &scratch));
  }
  InferenceContext ctx(op->name, spec.name, spec.attrs, input_shapes, input_types, input_values,
                       output_types, spec.inputs);
  ctx.set_library(&library());
  Status shape_status = op->shape_fn(ctx);
  if (!shape_status.ok()) {
    std::string shapes;
    for (size_t i = 0; i < input_shapes.size(); ++i) {
      shapes += StrCat(i ? ", " : "", input_shapes[i].ToString());
    }
    Status s(shape_status.code(), StrCat(shape_status.message(), " for '", spec.name, "' (op: ",
                                         op->name, ") with input shapes: ", shapes, "."));
    if (const auto* payloads = shape_status.payloads()) {
      for (const auto& [k, v] : *payloads) s.SetPayload(k, v);
    }
    if (s.GetPayload("py_type").empty()) s.SetPayload("py_type", "ValueError");
    return s;
  }

  auto node = std::make_unique<Node>();
  node->id_ = static_cast<int>(nodes_.size());
  node->name_ = std::move(spec.name);
  node->op_ = op;
  node->inputs_ = std::move(spec.inputs);
  node->control_inputs_ = std::move(spec.control_inputs);
  node->output_types_ = std::move(output_types);
  node->output_shapes_ = std::move(ctx.outputs());
  node->attrs_ = std::move(spec.attrs);
  node->requested_device_ = std::move(spec.device);
  node->creation_site_ = std::move(spec.creation_site);
  Node* raw = node.get();
  by_name_[raw->name_] = raw;
  // Names given explicitly still count for uniquing, as in TensorFlow.
  std::string key = Lower(raw->name_);
  if (name_counts_.find(key) == name_counts_.end()) name_counts_[key] = 1;
  nodes_.push_back(std::move(node));
  return raw;
}

void Graph::SetRequestedDevice(Node* node, std::string device) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  node->requested_device_ = std::move(device);
}

Status Graph::RefineOutputShape(Node* node, int index, const PartialShape& shape) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (index < 0 || index >= node->num_outputs()) {
    return errors::InvalidArgument("Node ", node->name(), " has no output ", index);
  }
  PartialShape merged;
  Status merge = node->output_shapes_[index].Merge(shape, &merged);
  if (!merge.ok()) {
    Status s = errors::InvalidArgument("Shapes ", node->output_shapes_[index].ToPythonString(),
                                       " and ", shape.ToPythonString(), " are incompatible");
    s.SetPayload("py_type", "ValueError");
    return s;
  }
  node->output_shapes_[index] = std::move(merged);
  return Status::OK();
}

Node* Graph::FindNode(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return FindNodeUnlocked(name);
}

Node* Graph::node(int id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return id >= 0 && id < static_cast<int>(nodes_.size()) ? nodes_[id].get() : nullptr;
}

int Graph::num_nodes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return static_cast<int>(nodes_.size());
}

std::vector<Node*> Graph::nodes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::string Graph::UniqueName(const std::string& base) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  std::string key = Lower(base);
  int count = name_counts_[key]++;
  if (count == 0) return base;
  std::string candidate_key;
  while (true) {
    candidate_key = StrCat(key, "_", count);
    if (name_counts_.find(candidate_key) == name_counts_.end()) break;
    ++count;
  }
  name_counts_[candidate_key] = 1;
  name_counts_[key] = count + 1;
  return StrCat(base, "_", count);
}

}  // namespace flowstone
