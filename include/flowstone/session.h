// Session: runs parts of a graph. A session owns the devices' state for one graph (variables,
// compiled plans, kernels) and may be called from many threads at once.
//
//   auto graph = std::make_shared<flowstone::Graph>();
//   ... add nodes (see flowstone/cc/ops.h) ...
//   std::unique_ptr<flowstone::Session> session;
//   FS_RETURN_IF_ERROR(flowstone::Session::Create(graph, {}, &session));
//   std::vector<flowstone::Tensor> outputs;
//   FS_RETURN_IF_ERROR(session->Run({{x, x_value}}, {y}, {}, &outputs));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/device.h"
#include "flowstone/graph.h"
#include "flowstone/resource.h"
#include "flowstone/status.h"
#include "flowstone/step_stats.h"
#include "flowstone/tensor.h"

namespace flowstone {

// ConfigProto.graph_options.rewrite_options (TensorFlow's RewriterConfig): which graph rewrites a
// session applies when it compiles a plan. The rewrites never change the user's graph and keep
// results bit-identical; see docs/architecture/graph-optimizer.md.
struct RewriterConfig {
  // TensorFlow's RewriterConfig.Toggle values. Every value but kOff leaves a rewrite on.
  enum Toggle { kDefault = 0, kOn = 1, kOff = 2, kAggressive = 3 };
  // Evaluate once, at compile time, the stateless nodes whose inputs are all constants.
  Toggle constant_folding = kDefault;
  // Forward exact no-ops to their input: x*1, x/1, x+(-0.0), x-0, a Cast or Reshape to what x
  // already is, a transpose undone by the next one.
  Toggle arithmetic_optimization = kDefault;
  // Forward Identity and StopGradient nodes to their input.
  Toggle dependency_optimization = kDefault;
  // Merge identical stateless nodes (same op, attrs, inputs and device), constants included.
  Toggle common_subgraph_elimination = kDefault;
  // TensorFlow's remapper: Conv2D/MatMul + BiasAdd + activation run as one fused node
  // (_FusedConv2D, _FusedMatMul) when the intermediate results have no other reader.
  Toggle remapping = kDefault;
  // Turns every rewrite off.
  bool disable_meta_optimizer = false;
  // The most bytes a folded node's outputs may take (OptimizerOptions'
  // max_folded_constant_in_bytes); bigger results stay computed at run time.
  int64_t max_folded_constant_bytes = 10 << 20;
  // How long folding may compute for one plan (RewriterConfig.meta_optimizer_timeout_ms when
  // set). Folding runs before the run, out of reach of its deadline and of cancellation, so past
  // this budget the remaining nodes are left to the run.
  int64_t fold_time_budget_ms = 1000;

  bool Enabled(Toggle toggle) const { return !disable_meta_optimizer && toggle != kOff; }
  bool AnyEnabled() const {
    return Enabled(constant_folding) || Enabled(arithmetic_optimization) ||
           Enabled(dependency_optimization) || Enabled(common_subgraph_elimination) ||
           Enabled(remapping);
  }
};

struct SessionOptions {
  // Threads that run independent nodes at once; 0 = number of cores.
  int inter_op_threads = 0;
  // Threads a single big kernel may use; 0 = number of cores.
  int intra_op_threads = 0;
  // Devices per type ({"CPU": 2} gives /cpu:0 and /cpu:1; {"GPU": 0} disables GPUs).
  std::map<std::string, int> device_count;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // A CPU memory limit for this session's tensors in bytes; 0 = the process limit.
  int64_t cpu_memory_limit_bytes = 0;
  // GPUOptions: which visible GPUs become GPU:0, GPU:1... ("1,0"; empty = all, in order).
  std::string gpu_visible_device_list;
  // The share of each GPU's memory to reserve; 0 = all but a reserve.
  double gpu_memory_fraction = 0;
  // Grow GPU memory on demand instead of reserving it at the first allocation.
  bool gpu_allow_growth = false;
  // A GPU memory limit in bytes (a virtual device's memory_limit_mb); 0 = unset.
  int64_t gpu_memory_limit_bytes = 0;
  // ConfigProto.operation_timeout_in_ms: the deadline of runs whose RunOptions set none; 0 = none.
  int64_t operation_timeout_in_ms = 0;
  // The graph rewrites applied to each compiled plan.
  RewriterConfig rewrites;
};

struct RunOptions {
  // On OOM, list the tensors alive in this step by the op that made them.
  bool report_tensor_allocations_upon_oom = false;
  // A deadline for the run: past it, the run stops and returns DeadlineExceeded. 0 = the
  // session's operation_timeout_in_ms.
  int64_t timeout_in_ms = 0;
  // Stop the run with InterruptedError() when NotifyInterrupt() is called (by a SIGINT handler)
  // while it runs. The Python bindings set it for runs on Python's main thread.
  bool cancel_on_interrupt = false;
  // TensorFlow's RunOptions.TraceLevel. Any level but kNoTrace records every executed node's
  // timing and outputs into RunMetadata::step_stats (all levels trace the same on the CPU).
  enum TraceLevel { kNoTrace = 0, kSoftwareTrace = 1, kHardwareTrace = 2, kFullTrace = 3 };
  TraceLevel trace_level = kNoTrace;
};

// What a run reports besides its outputs (TensorFlow's RunMetadata).
struct RunMetadata {
  // Filled when RunOptions::trace_level asks for a trace; empty otherwise.
  StepStats step_stats;
};

class Session {
 public:
  using CallableHandle = int64_t;

  static Status Create(std::shared_ptr<Graph> graph, const SessionOptions& options,
                       std::unique_ptr<Session>* out);
  virtual ~Session() = default;

  // Feeds the given tensors, computes `fetches` and runs `targets`, and returns the fetched
  // values in order. Fed values are checked against the graph before anything runs. A run past
  // its deadline returns DeadlineExceeded ("Timed out waiting for notification"), as in
  // TensorFlow; a run stopped by Close() from another thread returns Cancelled. With `metadata`,
  // a run whose options ask for a trace fills metadata->step_stats (and a run that does not
  // leaves it empty).
  virtual Status Run(const std::vector<std::pair<Endpoint, Tensor>>& feeds,
                     const std::vector<Endpoint>& fetches, const std::vector<Node*>& targets,
                     std::vector<Tensor>* outputs, const RunOptions& options = {},
                     RunMetadata* metadata = nullptr) = 0;

  // Compiles a (feeds, fetches, targets) signature once; RunCallable then does no graph work.
  virtual Status MakeCallable(const std::vector<Endpoint>& feeds,
                              const std::vector<Endpoint>& fetches,
                              const std::vector<Node*>& targets, CallableHandle* handle) = 0;
  virtual Status RunCallable(CallableHandle handle, std::vector<Tensor>& feed_values,
                             std::vector<Tensor>* outputs, const RunOptions& options = {},
                             RunMetadata* metadata = nullptr) = 0;
  virtual Status ReleaseCallable(CallableHandle handle) = 0;

  // Cancels the runs in flight (they return Cancelled, "Run call was cancelled"), waits for them
  // to return, then frees the session's state. Idempotent.
  virtual Status Close() = 0;
  virtual bool closed() const = 0;
  virtual std::vector<DeviceAttributes> ListDevices() const = 0;
  virtual const std::shared_ptr<Graph>& graph() const = 0;
  // The session's variables (for checkpoints); valid until Close().
  virtual ResourceMgr* resource_manager() = 0;
};

}  // namespace flowstone
