// The eager executor: a cache of (op, signature) -> node + kernel, and the per-call path that
// checks shapes and runs the kernel. See flowstone/eager.h.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "../gpu_discovery.h"
#include "../process_state.h"
#include "flowstone/eager.h"
#include "flowstone/graph.h"
#include "flowstone/kernel.h"
#include "flowstone/shape_inference.h"

namespace flowstone {

namespace {

std::atomic<int64_t> next_handle_id{1};

// TensorFlow's DataTypeString, which its eager messages use ("float", not "float32").
std::string TfTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kFloat16:
      return "half";
    default:
      return DTypeName(dtype);
  }
}

// TensorFlow's eager error form: "<message> [Op:AddV2] name: ". A shape function's graph-mode
// ValueError is an InvalidArgumentError when the op runs, as in TensorFlow, so the Python type
// payload is dropped for those.
Status EagerError(const Status& s, const std::string& op_type, const std::string& name,
                  bool keep_python_type) {
  Status out(s.code(), StrCat(s.message(), " [Op:", op_type, "] name: ", name));
  if (const auto* payloads = s.payloads()) {
    for (const auto& [k, v] : *payloads) {
      if (k == "py_type" && !keep_python_type) continue;
      if (k == "node") continue;
      out.SetPayload(k, v);
    }
  }
  return out;
}

// TensorFlow's check of input dtypes against the op's type attrs, with its eager message.
Status CheckInputTypes(const OpDef& op, const DType* input_types, size_t num_inputs,
                       const AttrMap& attrs) {
  std::vector<std::pair<std::string, DType>> seen;
  size_t pos = 0;
  for (const ArgDef& arg : op.inputs) {
    size_t count = 1;
    if (!arg.number_attr.empty() || !arg.type_list_attr.empty()) {
      // A list argument: only fixed-arity ops are checked here; AddNode checks the rest.
      const int64_t* n = nullptr;
      if (const AttrValue* v = attrs.Find(arg.number_attr)) n = std::get_if<int64_t>(v);
      if (n == nullptr) return Status::OK();
      count = static_cast<size_t>(*n);
    }
    for (size_t k = 0; k < count && pos < num_inputs; ++k, ++pos) {
      DType actual = input_types[pos];
      DType expected = arg.fixed_type;
      if (expected == DType::kInvalid && !arg.type_attr.empty()) {
        if (const AttrValue* v = attrs.Find(arg.type_attr)) {
          if (const DType* t = std::get_if<DType>(v)) expected = *t;
        }
        auto it = std::find_if(seen.begin(), seen.end(),
                               [&](const auto& p) { return p.first == arg.type_attr; });
        if (expected == DType::kInvalid && it != seen.end()) expected = it->second;
        if (it == seen.end()) seen.push_back({arg.type_attr, actual});
      }
      if (expected != DType::kInvalid && actual != expected) {
        return errors::InvalidArgument("cannot compute ", op.name, " as input #", pos,
                                       "(zero-based) was expected to be a ", TfTypeName(expected),
                                       " tensor but is a ", TfTypeName(actual), " tensor");
      }
    }
  }
  return Status::OK();
}

// The cache key of one call: op, device, input dtypes and attrs. Built on every call, so it is
// kept to one small string: the device's address (devices live as long as the context) as raw
// bytes, one character per dtype, and the attrs only when there are any.
std::string CacheKey(const std::string& op_type, const Device& device, const DType* input_types,
                     size_t num_inputs, const AttrMap& attrs) {
  std::string key;
  key.reserve(op_type.size() + sizeof(uintptr_t) + num_inputs + 2);
  key += op_type;
  key += '|';
  const uintptr_t address = reinterpret_cast<uintptr_t>(&device);
  key.append(reinterpret_cast<const char*>(&address), sizeof(address));
  for (size_t i = 0; i < num_inputs; ++i)
    key += static_cast<char>('A' + static_cast<int>(input_types[i]));
  for (const auto& [name, value] : attrs.entries()) {
    key += '|';
    key += name;
    key += '=';
    key += AttrValueToString(value);
  }
  return key;
}

// The input dtypes of a call, without a heap allocation for the usual few inputs.
class InputTypes {
 public:
  explicit InputTypes(const std::vector<const TensorHandle*>& inputs) : size_(inputs.size()) {
    if (size_ > kInline) heap_.resize(size_);
    DType* out = data_mut();
    for (size_t i = 0; i < size_; ++i) out[i] = inputs[i]->tensor().dtype();
  }
  const DType* data() const { return size_ > kInline ? heap_.data() : inline_; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kInline = 8;
  DType* data_mut() { return size_ > kInline ? heap_.data() : inline_; }
  size_t size_;
  DType inline_[kInline];
  std::vector<DType> heap_;
};

// A call's input or output tensors, without a heap allocation for the usual few.
class CallTensors {
 public:
  explicit CallTensors(size_t size) : size_(size) {
    if (size_ > kInline) heap_.resize(size_);
  }
  Tensor* data() { return size_ > kInline ? heap_.data() : inline_; }
  const Tensor* data() const { return size_ > kInline ? heap_.data() : inline_; }
  Tensor& operator[](size_t i) { return data()[i]; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kInline = 3;
  size_t size_;
  Tensor inline_[kInline];
  std::vector<Tensor> heap_;
};

// An input whose value a shape function may key its verdict on cheaply: a host integer tensor
// of at most 16 elements (an axis, a shape, a permutation).
bool IsSmallIndexValue(const Tensor& t, bool host) {
  return host && (t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64) &&
         t.num_elements() <= 16;
}

// The values of the small integer inputs, each preceded by its element count.
void AppendSmallValues(const Tensor* in, int n_in, const std::vector<bool>& host,
                       std::vector<int64_t>* out) {
  for (int i = 0; i < n_in; ++i) {
    if (!IsSmallIndexValue(in[i], host[i])) continue;
    out->push_back(in[i].num_elements());
    for (int64_t k = 0; k < in[i].num_elements(); ++k) out->push_back(in[i].ElementAsInt64(k));
  }
}

// Whether the small integer inputs hold the values AppendSmallValues stored.
bool SameSmallValues(const Tensor* in, int n_in, const std::vector<bool>& host,
                     const std::vector<int64_t>& stored) {
  size_t pos = 0;
  for (int i = 0; i < n_in; ++i) {
    if (!IsSmallIndexValue(in[i], host[i])) continue;
    const int64_t n = in[i].num_elements();
    if (pos + n + 1 > stored.size() || stored[pos] != n) return false;
    ++pos;
    for (int64_t k = 0; k < n; ++k) {
      if (stored[pos++] != in[i].ElementAsInt64(k)) return false;
    }
  }
  return pos == stored.size();
}

// The op whose kernel keeps per-node state (the variable it looked up), so it is built per call
// rather than cached; its handle owns the variable (see EagerContext::Run).
constexpr char kVarHandleOp[] = "VarHandleOp";

}  // namespace

TensorHandle::TensorHandle(Tensor tensor, Device* device)
    : tensor_(std::move(tensor)),
      device_(device),
      id_(next_handle_id.fetch_add(1, std::memory_order_relaxed)) {}

// One op signature, built once: a graph holding Placeholders of the input dtypes and the op's
// node (schema checked, attrs complete), and the kernel created for that node.
struct EagerContext::CachedOp {
  std::shared_ptr<Graph> graph;
  Node* node = nullptr;
  Device* device = nullptr;
  std::unique_ptr<OpKernel> kernel;
  std::vector<bool> host_memory_inputs;
  std::vector<bool> host_memory_outputs;  // empty on host devices
  // A VarHandleOp's: the handle it returns owns its variable.
  bool owns_variable = false;

  // Which inputs the shape function may read the values of (those in host memory).
  std::vector<bool> value_inputs;

  // What the shape function's verdict depends on, found on the first call (see CheckShapes),
  // and the input shapes (and small integer values) it last accepted: a call with the same ones
  // skips it. Guarded by shapes_mu.
  enum class ShapeVerdict { kUnprobed, kShapes, kShapesAndSmallValues, kEveryCall };
  std::mutex shapes_mu;
  ShapeVerdict shape_verdict = ShapeVerdict::kUnprobed;
  bool shapes_checked = false;
  std::vector<TensorShape> checked_shapes;
  std::vector<int64_t> checked_values;

  // Which inputs and outputs the op's gradient reads (GradientTape::GradientReads), worked out
  // when a tape first records the op.
  std::once_flag gradient_reads_once;
  std::vector<bool> gradient_reads_inputs;
  std::vector<bool> gradient_reads_outputs;
};

// An eager variable lives as long as a tensor holds its handle, not as long as the process:
// its handle tensors are allocated here, and each buffer holds its allocator (Keepalive), which
// owns the ResourceMgr the VarHandleOp made the variable in. The last handle freed frees it.
class EagerContext::VariableOwner final : public Allocator,
                                          public std::enable_shared_from_this<VariableOwner> {
 public:
  VariableOwner(EagerContext* context, std::string name)
      : context_(context), name_(std::move(name)) {
    live_variables.fetch_add(1, std::memory_order_relaxed);
  }
  ~VariableOwner() override {
    live_variables.fetch_sub(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(context_->variables_mu_);
    auto it = context_->variables_.find(name_);
    if (it != context_->variables_.end() && it->second.expired()) context_->variables_.erase(it);
  }
  ResourceMgr* resources() { return &resources_; }

  std::string name() const override { return "eager_variable_handle"; }
  void* Allocate(size_t bytes) override { return CpuAllocator()->Allocate(bytes); }
  void Deallocate(void* ptr, size_t bytes) override { CpuAllocator()->Deallocate(ptr, bytes); }
  AllocatorStats stats() const override { return CpuAllocator()->stats(); }
  int64_t limit() const override { return CpuAllocator()->limit(); }
  std::shared_ptr<void> Keepalive() override { return shared_from_this(); }

  static std::atomic<int64_t> live_variables;

 private:
  EagerContext* context_;
  std::string name_;
  ResourceMgr resources_;
};

std::atomic<int64_t> EagerContext::VariableOwner::live_variables{0};

std::shared_ptr<EagerContext::VariableOwner> EagerContext::OwnerOfVariable(
    const std::string& name) {
  std::shared_ptr<VariableOwner> owner;
  std::lock_guard<std::mutex> lock(variables_mu_);
  std::weak_ptr<VariableOwner>& slot = variables_[name];
  owner = slot.lock();
  if (owner == nullptr) {
    owner = std::make_shared<VariableOwner>(this, name);
    slot = owner;
  }
  return owner;
}

int64_t EagerContext::num_variables() {
  return VariableOwner::live_variables.load(std::memory_order_relaxed);
}

EagerContext& EagerContext::Global() {
  // Never destroyed: handles held by Python objects may outlive static destruction.
  static EagerContext* context = new EagerContext();
  return *context;
}

std::vector<std::shared_ptr<GradientTape>>& EagerContext::ThreadTapes() {
  thread_local std::vector<std::shared_ptr<GradientTape>> tapes;
  return tapes;
}

Status EagerContext::InitDevices() {
  std::call_once(devices_once_, [this] {
    ProcessState& process = ProcessState::Get();
    process.ConfigureThreads(0, 0);
    const int num_cpus = std::max(1, process.num_logical_cpus());
    for (int i = 0; i < num_cpus; ++i) {
      devices_.push_back(
          std::make_unique<Device>("CPU", i, CpuAllocator(), process.intra_op_pool()));
    }
    cpu_ = devices_.front().get();
    devices_status_ =
        GpuDiscovery::Get().CreateSessionDevices({}, process.intra_op_pool(), &devices_);
  });
  return devices_status_;
}

std::vector<DeviceAttributes> EagerContext::ListDevices() {
  std::vector<DeviceAttributes> out;
  if (!InitDevices().ok()) return out;
  for (const auto& d : devices_) out.push_back(d->attributes());
  return out;
}

int64_t EagerContext::cache_size() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(cache_.size());
}

// TensorFlow's error when soft placement is off and no device fits the request.
Status EagerContext::UnsatisfiableDevice(const std::string& requested) const {
  std::string types, names;
  for (const auto& d : devices_) {
    if (types.find(d->type()) == std::string::npos)
      types += (types.empty() ? "" : ", ") + d->type();
    names += (names.empty() ? "" : ", ") + d->name();
  }
  // The request completed as TensorFlow shows it: "/GPU:0" is
  // "/job:localhost/replica:0/task:0/device:GPU:0".
  DeviceSpec spec;
  std::string full = requested;
  if (DeviceSpec::Parse(requested, &spec).ok()) {
    if (spec.job.empty()) spec.job = "localhost";
    if (spec.replica < 0) spec.replica = 0;
    if (spec.task < 0) spec.task = 0;
    if (spec.id < 0 && !spec.type.empty()) spec.id = 0;
    full = spec.ToString();
  }
  return errors::InvalidArgument("Could not satisfy device specification '", full,
                                 "'. enable_soft_placement=0. Supported device types [", types,
                                 "]. All available devices [", names,
                                 "]. Turn soft placement on with "
                                 "tf.config.set_soft_device_placement(True).");
}

Status EagerContext::FindDevice(const std::string& requested, const std::string& op_type,
                                Device** out) {
  FS_RETURN_IF_ERROR(InitDevices());
  if (requested.empty() && devices_.size() == 1) {
    *out = cpu_;  // the common case: one CPU and no tf.device scope
    return Status::OK();
  }
  const OpDef* op = op_type.empty() ? nullptr : OpRegistry::Global().Find(op_type);
  auto usable = [&](const Device& d) { return op == nullptr || op->HasKernelFor(d.type()); };
  DeviceSpec spec;
  if (!requested.empty()) FS_RETURN_IF_ERROR(DeviceSpec::Parse(requested, &spec));
  // The requested device when one matches, then (soft placement, TensorFlow's eager default)
  // the first GPU with a kernel, then CPU:0.
  if (!spec.empty()) {
    for (const auto& d : devices_) {
      if (spec.Matches(d->spec()) && usable(*d)) {
        *out = d.get();
        return Status::OK();
      }
    }
    // Only ops fail: a constant made under the scope lives on the host until an op reads it.
    if (!soft_device_placement() && !op_type.empty()) return UnsatisfiableDevice(requested);
  }
  for (const auto& d : devices_) {
    if (d->type() != "CPU" && usable(*d) && (spec.empty() || spec.type != "CPU")) {
      *out = d.get();
      return Status::OK();
    }
  }
  *out = cpu_;
  return Status::OK();
}

Status EagerContext::BuildOp(const std::string& op_type, const DType* input_types,
                             size_t num_inputs, const AttrMap& attrs, Device* device,
                             std::unique_ptr<CachedOp>* out) {
  const OpDef* op = OpRegistry::Global().Find(op_type);
  if (op == nullptr) return errors::NotFound("Op type not registered '", op_type, "'");
  FS_RETURN_IF_ERROR(CheckInputTypes(*op, input_types, num_inputs, attrs));
  auto entry = std::make_unique<CachedOp>();
  entry->graph = std::make_shared<Graph>();
  entry->device = device;
  entry->owns_variable = op_type == kVarHandleOp;
  NodeSpec spec;
  spec.name = op_type;
  spec.op = op_type;
  spec.attrs = attrs;
  for (size_t i = 0; i < num_inputs; ++i) {
    NodeSpec placeholder;
    placeholder.name = StrCat("input_", i);
    placeholder.op = "Placeholder";
    placeholder.attrs.Set("dtype", input_types[i]);
    FS_ASSIGN_OR_RETURN(Node * node, entry->graph->AddNode(std::move(placeholder)));
    spec.inputs.push_back({node, 0});
  }
  FS_ASSIGN_OR_RETURN(entry->node, entry->graph->AddNode(std::move(spec)));
  FS_RETURN_IF_ERROR(CreateKernel(*entry->node, device->type(), &entry->kernel));
  if (const KernelDef* def = FindKernelDef(*entry->node, device->type())) {
    entry->host_memory_inputs = HostMemoryInputs(*entry->node, *def);
    if (!device->host_memory()) entry->host_memory_outputs = HostMemoryOutputs(*entry->node, *def);
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    const DType t = input_types[i];
    entry->value_inputs.push_back(t != DType::kResource && t != DType::kVariant &&
                                  (device->host_memory() || (i < entry->host_memory_inputs.size() &&
                                                             entry->host_memory_inputs[i])));
  }
  *out = std::move(entry);
  return Status::OK();
}

Status EagerContext::GetCachedOp(const std::string& op_type, const DType* input_types,
                                 size_t num_inputs, const AttrMap& attrs, Device* device,
                                 CachedOp** out) {
  std::string key = CacheKey(op_type, *device, input_types, num_inputs, attrs);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    *out = it->second.get();
    return Status::OK();
  }
  std::unique_ptr<CachedOp> entry;
  FS_RETURN_IF_ERROR(BuildOp(op_type, input_types, num_inputs, attrs, device, &entry));
  *out = entry.get();
  cache_.emplace(std::move(key), std::move(entry));
  return Status::OK();
}

Status EagerContext::PrepareOn(const std::string& op_type, const DType* input_types,
                               size_t num_inputs, const AttrMap& attrs,
                               const std::string& device_name, CachedOp** out) {
  Device* device = nullptr;
  FS_RETURN_IF_ERROR(FindDevice(device_name, op_type, &device));
  Status s = GetCachedOp(op_type, input_types, num_inputs, attrs, device, out);
  if (!s.ok() && device != cpu_ && soft_device_placement() &&
      GetCachedOp(op_type, input_types, num_inputs, attrs, cpu_, out).ok()) {
    return Status::OK();  // soft placement, TensorFlow's eager default: no kernel there
  }
  return s;
}

Status EagerContext::Prepare(const std::string& op_type, const std::vector<DType>& input_types,
                             const AttrMap& attrs, const std::string& device, CachedOp** out) {
  Status s = PrepareOn(op_type, input_types.data(), input_types.size(), attrs, device, out);
  return s.ok() ? s : EagerError(s, op_type, "", true);
}

Status EagerContext::Execute(const std::string& op_type,
                             const std::vector<const TensorHandle*>& inputs, const AttrMap& attrs,
                             const std::string& device_name, const std::string& name,
                             std::vector<TensorHandle>* outputs) {
  const InputTypes types(inputs);
  CachedOp* op = nullptr;
  std::unique_ptr<CachedOp> per_call;
  Status s;
  if (op_type == kVarHandleOp) {
    Device* device = nullptr;
    s = FindDevice(device_name, op_type, &device);
    if (s.ok()) s = BuildOp(op_type, types.data(), types.size(), attrs, device, &per_call);
    if (!s.ok() && device != nullptr && device != cpu_) {
      s = BuildOp(op_type, types.data(), types.size(), attrs, cpu_, &per_call);
    }
    op = per_call.get();
  } else {
    s = PrepareOn(op_type, types.data(), types.size(), attrs, device_name, &op);
  }
  if (!s.ok()) return EagerError(s, op_type, name, true);
  return Run(*op, inputs, name, outputs);
}

Status EagerContext::CheckShapes(CachedOp& op, const Tensor* in, int n_in,
                                 const std::string& name) {
  using Verdict = CachedOp::ShapeVerdict;
  Verdict verdict;
  {
    std::lock_guard<std::mutex> lock(op.shapes_mu);
    verdict = op.shape_verdict;
    if (op.shapes_checked) {
      bool same = true;
      for (int i = 0; i < n_in && same; ++i) same = in[i].shape() == op.checked_shapes[i];
      if (same && verdict == Verdict::kShapesAndSmallValues) {
        same = SameSmallValues(in, n_in, op.value_inputs, op.checked_values);
      }
      if (same) return Status::OK();
    }
  }
  const Node& node = *op.node;
  std::vector<PartialShape> shapes;
  std::vector<DType> types;
  std::vector<const Tensor*> values;
  shapes.reserve(n_in);
  types.reserve(n_in);
  values.reserve(n_in);
  for (int i = 0; i < n_in; ++i) {
    shapes.emplace_back(in[i].shape());
    types.push_back(in[i].dtype());
    // Shape functions may read values (Reshape's shape): only those in host memory.
    values.push_back(op.value_inputs[i] ? &in[i] : nullptr);
  }
  std::vector<DType> out_types(node.num_outputs());
  for (int o = 0; o < node.num_outputs(); ++o) out_types[o] = node.output_type(o);
  const std::string& node_name = name.empty() ? node.type() : name;
  InferenceContext shape_ctx(node.type(), node_name, node.attrs(), shapes, types, values,
                             out_types);
  Status s = node.op_def().shape_fn(shape_ctx);
  if (!s.ok()) return EagerError(s, node.type(), name, s.code() != Code::kInvalidArgument);

  if (verdict == Verdict::kUnprobed) {
    // Once per signature: the same call without input values, then with only the small
    // integer ones (axes, shapes). Where one infers the same output shapes, the shape function's
    // verdict depends on no more than what it was given.
    auto same_outputs = [&](std::vector<const Tensor*> given) {
      InferenceContext probe(node.type(), node_name, node.attrs(), shapes, types, std::move(given),
                             out_types);
      return node.op_def().shape_fn(probe).ok() && probe.outputs() == shape_ctx.outputs();
    };
    std::vector<const Tensor*> small(n_in, nullptr);
    for (int i = 0; i < n_in; ++i) {
      if (IsSmallIndexValue(in[i], op.value_inputs[i])) small[i] = &in[i];
    }
    if (same_outputs(std::vector<const Tensor*>(n_in, nullptr))) {
      verdict = Verdict::kShapes;
    } else if (same_outputs(std::move(small))) {
      verdict = Verdict::kShapesAndSmallValues;
    } else {
      verdict = Verdict::kEveryCall;
    }
  }
  std::lock_guard<std::mutex> lock(op.shapes_mu);
  op.shape_verdict = verdict;
  if (verdict == Verdict::kShapes || verdict == Verdict::kShapesAndSmallValues) {
    op.checked_shapes.clear();
    for (int i = 0; i < n_in; ++i) op.checked_shapes.push_back(in[i].shape());
    op.checked_values.clear();
    if (verdict == Verdict::kShapesAndSmallValues) {
      AppendSmallValues(in, n_in, op.value_inputs, &op.checked_values);
    }
    op.shapes_checked = true;
  }
  return Status::OK();
}

Status EagerContext::Run(CachedOp& op, const std::vector<const TensorHandle*>& inputs,
                         const std::string& name, std::vector<TensorHandle>* outputs) {
  const Node& node = *op.node;
  const std::string& op_type = node.type();
  Device* device = op.device;
  const int n_in = static_cast<int>(inputs.size());
  if (n_in != node.num_inputs()) {
    return EagerError(errors::InvalidArgument(op_type, " takes ", node.num_inputs(),
                                              " inputs, but ", n_in, " were given"),
                      op_type, name, false);
  }
  for (int i = 0; i < n_in; ++i) {
    if (inputs[i]->tensor().dtype() != node.input_type(i)) {
      return EagerError(errors::InvalidArgument("cannot compute ", op_type, " as input #", i,
                                                "(zero-based) was expected to be a ",
                                                TfTypeName(node.input_type(i)), " tensor but is a ",
                                                TfTypeName(inputs[i]->tensor().dtype()), " tensor"),
                        op_type, name, false);
    }
  }
  initialized_.store(true, std::memory_order_release);
  if (log_device_placement_.load(std::memory_order_relaxed)) {
    std::fprintf(stderr, "%s: (%s): %s\n", op_type.c_str(), op_type.c_str(),
                 device->name().c_str());
  }

  // The inputs, in the memory the kernel reads them from.
  Status s;
  CallTensors in(n_in);
  for (int i = 0; i < n_in; ++i) {
    const TensorHandle& h = *inputs[i];
    const bool wants_host =
        device->host_memory() || h.tensor().dtype() == DType::kResource ||
        h.tensor().dtype() == DType::kVariant ||
        (i < static_cast<int>(op.host_memory_inputs.size()) && op.host_memory_inputs[i]);
    const bool is_host = h.device() == nullptr || h.device()->host_memory() ||
                         h.tensor().dtype() == DType::kResource ||
                         h.tensor().dtype() == DType::kVariant;
    if (wants_host && !is_host) {
      s = h.device()->CopyToHost(h.tensor(), &in[i]);
    } else if (!wants_host && is_host) {
      s = device->CopyFromHost(h.tensor(), &in[i]);
    } else if (!wants_host && h.device() != device) {
      Tensor staged;
      s = h.device()->CopyToHost(h.tensor(), &staged);
      if (s.ok()) s = device->CopyFromHost(staged, &in[i]);
    } else {
      in[i] = h.tensor();
    }
    if (!s.ok()) return EagerError(s, op_type, name, false);
  }

  // Graph mode's shape checks, on the actual shapes (and values, for shape arguments).
  FS_RETURN_IF_ERROR(CheckShapes(op, in.data(), n_in, name));

  CallTensors out(node.num_outputs());
  std::shared_ptr<VariableOwner> variable;
  if (op.owns_variable) variable = OwnerOfVariable(VarNameOf(node));
  KernelContext::Params params;
  params.node = &node;
  params.device = device;
  params.resources = variable ? variable->resources() : &resources_;
  params.inputs = in.data();
  // No input is forwarded (forwardable stays null): the caller's handles hold every input.
  params.outputs = out.data();
  params.step_id = next_step_.fetch_add(1, std::memory_order_relaxed);
  if (!op.host_memory_outputs.empty()) params.host_memory_outputs = &op.host_memory_outputs;
  KernelContext ctx(params);
  s = op.kernel->Compute(ctx);
  if (s.ok()) s = device->Sync();
  if (!s.ok()) return EagerError(s, op_type, name, false);

  outputs->clear();
  outputs->reserve(out.size());
  for (int o = 0; o < static_cast<int>(out.size()); ++o) {
    if (!out[o].initialized()) {
      return EagerError(errors::Internal("output ", o, " was not produced"), op_type, name, false);
    }
    if (variable) {
      // The handle, in a buffer that keeps the variable alive (VariableOwner).
      Tensor owned;
      s = Tensor::Allocate(variable.get(), out[o].dtype(), out[o].shape(), &owned);
      if (!s.ok()) return EagerError(s, op_type, name, false);
      std::memcpy(owned.raw_data(), out[o].raw_data(), out[o].bytes());
      out[o] = std::move(owned);
    }
    const DType t = out[o].dtype();
    const bool host = device->host_memory() || t == DType::kResource || t == DType::kVariant ||
                      (!op.host_memory_outputs.empty() && op.host_memory_outputs[o]);
    outputs->emplace_back(std::move(out[o]), host ? cpu_ : device);
  }
  if (!op.owns_variable && !ThreadTapes().empty()) Record(op, inputs, *outputs);
  return Status::OK();
}

void EagerContext::Record(CachedOp& op, const std::vector<const TensorHandle*>& inputs,
                          const std::vector<TensorHandle>& outputs) {
  for (const auto& tape : ThreadTapes()) {
    if (!tape->recording()) continue;
    bool watched = false;
    for (const TensorHandle* in : inputs) watched |= tape->IsWatched(in->id());
    if (!watched) continue;
    std::call_once(op.gradient_reads_once, [&op] {
      GradientTape::GradientReads(*op.node, &op.gradient_reads_inputs, &op.gradient_reads_outputs);
    });
    tape->Record(*op.node, inputs, outputs, op.gradient_reads_inputs, op.gradient_reads_outputs);
  }
}

Status EagerContext::MakeHandle(Tensor value, const std::string& device_name,
                                std::unique_ptr<TensorHandle>* out) {
  Device* device = nullptr;
  FS_RETURN_IF_ERROR(FindDevice(device_name, "", &device));
  if (device_name.empty() || device->host_memory() || value.dtype() == DType::kResource ||
      value.dtype() == DType::kVariant) {
    *out = std::make_unique<TensorHandle>(std::move(value), cpu_);
    return Status::OK();
  }
  Tensor on_device;
  FS_RETURN_IF_ERROR(device->CopyFromHost(value, &on_device));
  *out = std::make_unique<TensorHandle>(std::move(on_device), device);
  return Status::OK();
}

Status EagerContext::ToHost(const TensorHandle& handle, Tensor* out) {
  if (handle.device() == nullptr || handle.device()->host_memory()) {
    *out = handle.tensor();
    return Status::OK();
  }
  return handle.device()->CopyToHost(handle.tensor(), out);
}

Status EagerContext::CopyToDevice(const TensorHandle& handle, const std::string& device_name,
                                  std::unique_ptr<TensorHandle>* out) {
  Tensor host;
  FS_RETURN_IF_ERROR(ToHost(handle, &host));
  Device* device = nullptr;
  FS_RETURN_IF_ERROR(FindDevice(device_name, "", &device));
  if (device->host_memory()) {
    *out = std::make_unique<TensorHandle>(std::move(host), device);
    return Status::OK();
  }
  Tensor on_device;
  FS_RETURN_IF_ERROR(device->CopyFromHost(host, &on_device));
  *out = std::make_unique<TensorHandle>(std::move(on_device), device);
  return Status::OK();
}

}  // namespace flowstone
