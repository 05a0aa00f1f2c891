#include "flowstone/kernel.h"

#include <algorithm>
#include <cstdio>

#include "flowstone/bfc_allocator.h"

namespace flowstone {
namespace {
// "500000000000 bytes (465.66 GiB)".
std::string DescribeBytes(double bytes) {
  char buf[96];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double scaled = bytes;
  int unit = 0;
  while (scaled >= 1024.0 && unit < 5) {
    scaled /= 1024.0;
    ++unit;
  }
  std::snprintf(buf, sizeof(buf), "%.0f bytes (%.2f %s)", bytes, scaled, units[unit]);
  return buf;
}
}  // namespace

Status KernelContext::OomError(DType dtype, const TensorShape& shape) const {
  Allocator* allocator = p_.device->allocator();
  AllocatorStats stats = allocator->stats();
  // In floating point: a shape refused because its element count overflows int64 gets here too.
  double requested = static_cast<double>(DTypeSize(dtype));
  for (int64_t d : shape.dims()) requested *= static_cast<double>(d);
  std::string largest_free_block;
  if (stats.largest_free_block_bytes >= 0) {
    largest_free_block = StrCat("; largest free block ",
                                DescribeBytes(static_cast<double>(stats.largest_free_block_bytes)));
  }
  // A BFC allocator can say how its memory is carved up, which shows fragmentation.
  std::string memory_report;
  if (auto* bfc = dynamic_cast<BfcAllocator*>(allocator)) {
    // Capped so that the conversion is defined for shapes too large to count in size_t.
    double report_bytes = std::min(requested, static_cast<double>(int64_t{1} << 62));
    memory_report = StrCat("\n", bfc->MemoryReport(static_cast<size_t>(report_bytes)));
  }
  return errors::ResourceExhausted(
      "OOM when allocating tensor with shape", shape.ToString(), " and type ",
      DTypeShortName(dtype), " on ", p_.device->name(), " by allocator ", allocator->name(),
      ". Requested ", DescribeBytes(requested), "; in use ",
      DescribeBytes(static_cast<double>(stats.bytes_in_use)), "; limit ",
      DescribeBytes(static_cast<double>(stats.bytes_limit)), largest_free_block,
      ". Use smaller shapes or batches, or raise the memory limit "
      "(tf.config.set_logical_device_configuration(..., memory_limit=MB), or "
      "ConfigProto.experimental.cpu_memory_limit_mb).\nHint: If you want to see a list of "
      "allocated tensors when OOM happens, add report_tensor_allocations_upon_oom to "
      "RunOptions for current allocation info.",
      memory_report);
}

const Tensor* KernelContext::Destination(int i, const TensorShape& shape) const {
  if (p_.destinations == nullptr || p_.destinations[i] == nullptr) return nullptr;
  const Tensor* dest = p_.destinations[i];
  const bool host = p_.device == nullptr || p_.device->host_memory();
  if (!host || dest->dtype() != output_type(i) || dest->shape() != shape) return nullptr;
  return dest;
}

Status KernelContext::AllocateOutput(int i, const TensorShape& shape, Tensor** out) {
  DType dtype = output_type(i);
  Tensor& slot = p_.outputs[i];
  if (const Tensor* dest = Destination(i, shape)) {
    slot = *dest;
    *out = &slot;
    return Status::OK();
  }
  // Resource handles, variants and strings are host structures whatever the device. A host
  // device's own allocator holds them, so that the session's memory limit covers them too (a
  // string output sized by an input, such as UnsortedSegmentJoin's, was otherwise limited only
  // by the machine's memory).
  const bool host = dtype == DType::kResource || HoldsObjects(dtype) ||
                    (p_.host_memory_outputs != nullptr && (*p_.host_memory_outputs)[i]);
  Allocator* allocator = host && (p_.device == nullptr || !p_.device->host_memory())
                             ? CpuAllocator()
                             : p_.device->allocator();
  Status s = Tensor::Allocate(allocator, dtype, shape, &slot);
  if (!s.ok()) {
    if (s.code() == Code::kResourceExhausted) return OomError(dtype, shape);
    return s;
  }
  *out = &slot;
  return Status::OK();
}

Status KernelContext::ForwardOrAllocateOutput(int input_index, int output_index,
                                              const TensorShape& shape, Tensor** out) {
  Tensor& in = p_.inputs[input_index];
  const bool host_output =
      p_.host_memory_outputs != nullptr && (*p_.host_memory_outputs)[output_index];
  if (!host_output && p_.forwardable != nullptr && p_.forwardable[input_index] &&
      Destination(output_index, shape) == nullptr && in.RefCountIsOne() &&
      in.dtype() == output_type(output_index) && in.num_elements() == shape.num_elements()) {
    p_.outputs[output_index] = in.Reshaped(shape);
    *out = &p_.outputs[output_index];
    return Status::OK();
  }
  return AllocateOutput(output_index, shape, out);
}

Status KernelContext::AllocateTemp(DType dtype, const TensorShape& shape, Tensor* out) {
  Status s = Tensor::Allocate(p_.device->allocator(), dtype, shape, out);
  if (!s.ok() && s.code() == Code::kResourceExhausted) return OomError(dtype, shape);
  return s;
}

void KernelContext::ParallelForOnPool(int64_t n, int64_t cost_per_unit,
                                      const std::function<void(int64_t, int64_t)>& fn) const {
  ThreadPool* pool = p_.device->intra_op_pool();
  if (pool == nullptr) {
    fn(0, n);
    return;
  }
  pool->ParallelFor(n, cost_per_unit, fn);
}

namespace {

// The dtype kernels are selected by: the value of the op's first type attr.
DType KernelDType(const Node& node) {
  for (const AttrDef& attr : node.op_def().attrs) {
    if (attr.type == AttrType::kType) return node.attrs().GetOr<DType>(attr.name, DType::kInvalid);
  }
  return DType::kInvalid;
}

// Marks the node's arguments (inputs or outputs) named in `def.host_memory_args`, expanding list
// arguments by their length attr.
std::vector<bool> HostMemoryArgs(const Node& node, const KernelDef& def,
                                 const std::vector<ArgDef>& args, int count,
                                 DType (Node::*type_of)(int) const) {
  std::vector<bool> host(count, false);
  int index = 0;
  for (const ArgDef& arg : args) {
    int64_t n = 1;
    if (!arg.number_attr.empty()) n = node.attrs().GetOr<int64_t>(arg.number_attr, 0);
    if (!arg.type_list_attr.empty()) {
      n = static_cast<int64_t>(
          node.attrs().GetOr<std::vector<DType>>(arg.type_list_attr, {}).size());
    }
    const bool named = std::find(def.host_memory_args.begin(), def.host_memory_args.end(),
                                 arg.name) != def.host_memory_args.end();
    for (int64_t k = 0; k < n && index < count; ++k, ++index) host[index] = named;
  }
  for (int i = 0; i < count; ++i) {
    const DType dtype = (node.*type_of)(i);
    host[i] = host[i] || dtype == DType::kResource || HoldsObjects(dtype);
  }
  return host;
}

}  // namespace

const KernelDef* FindKernelDef(const Node& node, const std::string& device_type) {
  return node.op_def().FindKernel(device_type, KernelDType(node));
}

std::vector<bool> HostMemoryInputs(const Node& node, const KernelDef& def) {
  return HostMemoryArgs(node, def, node.op_def().inputs, node.num_inputs(), &Node::input_type);
}

std::vector<bool> HostMemoryOutputs(const Node& node, const KernelDef& def) {
  return HostMemoryArgs(node, def, node.op_def().outputs, node.num_outputs(), &Node::output_type);
}

Status CreateKernel(const Node& node, const std::string& device_type,
                    std::unique_ptr<OpKernel>* out) {
  const OpDef& op = node.op_def();
  const DType dtype = KernelDType(node);
  const KernelDef* kernel = op.FindKernel(device_type, dtype);
  if (kernel == nullptr) {
    std::string available;
    for (const std::string& t : op.KernelDeviceTypes())
      available += (available.empty() ? "" : ", ") + t;
    return errors::InvalidArgument(
        "No ", device_type, " kernel is registered for op ", op.name,
        dtype != DType::kInvalid ? StrCat(" with dtype ", DTypeName(dtype)) : "", " (node ",
        node.name(), "). Kernels exist for: [", available, "].");
  }
  return kernel->factory(node, out);
}

}  // namespace flowstone
