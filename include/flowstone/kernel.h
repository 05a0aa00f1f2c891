// Kernels: the code that computes one op on one device. A kernel object is built once per node
// per session and may be called by several runs at once, so Compute must be thread-safe.
// Sessions and eager execution call kernels through the same KernelContext.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <utility>

#include "flowstone/attr.h"
#include "flowstone/cancellation.h"
#include "flowstone/device.h"
#include "flowstone/function.h"
#include "flowstone/graph.h"
#include "flowstone/resource.h"
#include "flowstone/status.h"
#include "flowstone/step_stats.h"
#include "flowstone/tensor.h"
#include "flowstone/thread_pool.h"

namespace flowstone {

class OpKernel {
 public:
  explicit OpKernel(const Node& node) : node_(node) {}
  virtual ~OpKernel() = default;
  // Validates and caches attrs; called once after construction.
  virtual Status Init() { return Status::OK(); }
  virtual Status Compute(KernelContext& ctx) = 0;
  const Node& node() const { return node_; }

 private:
  const Node& node_;
};

// Wraps a plain function as a kernel.
class FunctionKernel final : public OpKernel {
 public:
  FunctionKernel(const Node& node, KernelFn fn) : OpKernel(node), fn_(std::move(fn)) {}
  Status Compute(KernelContext& ctx) override { return fn_(ctx); }

 private:
  KernelFn fn_;
};

// Everything a kernel sees while it runs.
class KernelContext {
 public:
  struct Params {
    const Node* node = nullptr;
    Device* device = nullptr;
    ResourceMgr* resources = nullptr;
    Tensor* inputs = nullptr;           // num_inputs entries
    const bool* forwardable = nullptr;  // may input i's buffer be reused for an output?
    Tensor* outputs = nullptr;          // num_outputs entries
    int64_t step_id = 0;
    // Per output, whether the kernel keeps it in host memory although its device has memory
    // of its own (KernelDef::host_memory_args); nullptr on host devices.
    const std::vector<bool>* host_memory_outputs = nullptr;
    // Compiles and runs graph functions for call ops (If, While, PartitionedCall); null outside a
    // session.
    FunctionRuntime* functions = nullptr;
    // RunOptions.report_tensor_allocations_upon_oom of the run, passed on to function calls.
    bool report_allocations_on_oom = false;
    // The run's cancellation token; nullptr when nothing can cancel the call (eager execution).
    const CancellationToken* cancellation = nullptr;
    // Where this node's run records node statistics; nullptr unless the run is traced. Function
    // calls trace their bodies into the same collector.
    const TraceScope* trace = nullptr;
    // Per output, a host tensor the caller of the run wants the output written into (a row of a
    // batch, see ExecutionPlan::Run's destinations), or nullptr; nullptr when none has one.
    const Tensor* const* destinations = nullptr;
  };
  explicit KernelContext(const Params& params) : p_(params) {}

  const Node& node() const { return *p_.node; }
  const AttrMap& attrs() const { return p_.node->attrs(); }
  Device* device() const { return p_.device; }
  ResourceMgr* resources() const { return p_.resources; }
  int64_t step_id() const { return p_.step_id; }
  FunctionRuntime* functions() const { return p_.functions; }
  bool report_allocations_on_oom() const { return p_.report_allocations_on_oom; }
  const TraceScope* trace() const { return p_.trace; }

  int num_inputs() const { return p_.node->num_inputs(); }
  const Tensor& input(int i) const { return p_.inputs[i]; }
  int num_outputs() const { return p_.node->num_outputs(); }
  DType output_type(int i) const { return p_.node->output_type(i); }

  // Allocates output i with the node's output dtype, in host memory for resource handles and
  // outputs the kernel declared host-memory, else in the device's memory; or hands out the
  // output's destination when the run has one of this dtype and shape. On OOM returns
  // ResourceExhausted naming the shape, dtype, device and allocator, the bytes asked for and the
  // limit.
  Status AllocateOutput(int i, const TensorShape& shape, Tensor** out);
  // Like AllocateOutput, but reuses input `input_index`'s buffer when this kernel holds the only
  // reference and the sizes and dtypes agree (in-place elementwise ops), unless the output has a
  // destination.
  Status ForwardOrAllocateOutput(int input_index, int output_index, const TensorShape& shape,
                                 Tensor** out);
  // Scratch memory released when the tensor goes out of scope.
  Status AllocateTemp(DType dtype, const TensorShape& shape, Tensor* out);
  void SetOutput(int i, Tensor tensor) { p_.outputs[i] = std::move(tensor); }
  Tensor& output(int i) { return p_.outputs[i]; }

  // Runs fn(begin, end) over [0, n) on the device's intra-op threads when the work is big
  // enough, inline otherwise. Work too small for two shards runs here directly, with no
  // std::function in between: small ops are dominated by such fixed costs.
  template <typename Fn>
  void ParallelFor(int64_t n, int64_t cost_per_unit, Fn&& fn) const {
    if (n <= 0) return;
    if (!ThreadPool::WorthSplitting(n, cost_per_unit)) {
      fn(int64_t{0}, n);
      return;
    }
    ParallelForOnPool(n, cost_per_unit, fn);
  }
  void ParallelForOnPool(int64_t n, int64_t cost_per_unit,
                         const std::function<void(int64_t, int64_t)>& fn) const;

  // OK while the run goes on; once it is cancelled (Session::Close, a deadline, an interrupt), the
  // reason. Kernels that run long call it between units of work (tiles, chunks, loop iterations)
  // and return its error; the executor discards the outputs of a cancelled run.
  Status CheckCancelled() const { return cancelled() ? p_.cancellation->status() : Status::OK(); }
  bool cancelled() const { return p_.cancellation != nullptr && p_.cancellation->IsCancelled(); }
  const CancellationToken* cancellation() const { return p_.cancellation; }

  // Builds the OOM status for an allocation that failed.
  Status OomError(DType dtype, const TensorShape& shape) const;

 private:
  // Output i's destination when it has one of `shape` and the output's dtype, on a device whose
  // memory is the host's; else nullptr.
  const Tensor* Destination(int i, const TensorShape& shape) const;

  Params p_;
};

// Calls fn.template operator()<T>() for the C++ type matching `dtype` among Ts, or returns
// InvalidArgument naming the op and the dtype.
template <typename... Ts, typename F>
Status DispatchDType(DType dtype, const char* op_name, F&& fn) {
  Status result;
  bool matched = false;
  ((!matched && DTypeOf<Ts>::value == dtype
        ? (matched = true, result = fn.template operator()<Ts>(), 0)
        : 0),
   ...);
  // Built only on a miss: formatting a message costs more than many small kernels.
  if (!matched) {
    result = errors::InvalidArgument(op_name, " has no kernel for dtype ", DTypeName(dtype));
  }
  return result;
}

// The kernel registration for `node` on `device_type`, or nullptr.
const KernelDef* FindKernelDef(const Node& node, const std::string& device_type);
// Which of the node's inputs (or outputs) the kernel `def` keeps in host memory; resource
// handles always live there.
std::vector<bool> HostMemoryInputs(const Node& node, const KernelDef& def);
std::vector<bool> HostMemoryOutputs(const Node& node, const KernelDef& def);

// The kernel for `node` on `device_type`, or an error explaining that none exists.
Status CreateKernel(const Node& node, const std::string& device_type,
                    std::unique_ptr<OpKernel>* out);

}  // namespace flowstone
