// Executor: runs a compiled plan (a pruned, placed, topologically ordered subgraph).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/session.h"
#include "flowstone/thread_pool.h"

namespace flowstone {

// An input that must move between memories before the kernel runs: from a device's memory to
// host memory, from host memory to a device, or between two devices through the host.
struct InputTransfer {
  int input = 0;
  Device* from = nullptr;  // nullptr: the tensor is in host memory
  Device* to = nullptr;    // nullptr: the kernel reads it in host memory
};

struct PlanNode {
  const Node* node = nullptr;
  OpKernel* kernel = nullptr;
  Device* device = nullptr;
  std::vector<int> input_slots;  // the slot each input reads
  std::vector<InputTransfer> transfers;
  // Outputs the kernel writes in host memory on a device with its own memory; empty on hosts.
  std::vector<bool> host_memory_outputs;
  int output_base = 0;          // outputs occupy slots [output_base, output_base + n)
  std::vector<int> successors;  // plan indices that wait on this node (data and control)
  int num_predecessors = 0;
};

// Per-run scratch state, pooled by the plan so that a steady-state run allocates nothing.
struct RunState {
  std::vector<Tensor> slots;
  std::unique_ptr<std::atomic<int>[]> slot_uses;
  std::unique_ptr<std::atomic<int>[]> pending;
  std::vector<Tensor> inputs;        // per node, gathered contiguously at input_base[n]
  std::vector<uint8_t> forwardable;  // parallel to inputs
  // RunOptions.report_tensor_allocations_upon_oom for this run.
  bool report_allocations_on_oom = false;
  // The session's function runtime, for call ops in this run.
  FunctionRuntime* functions = nullptr;
  // What stops this run early (Session::Close, a deadline, an interrupt); never null in a run.
  const CancellationToken* cancellation = nullptr;
  // Where this run records node statistics; nullptr (the usual case) when it is not traced.
  const TraceScope* trace = nullptr;
  // Per slot, the tensor the run's caller wants it written into (Run's destinations); empty
  // when the run has none, the usual case.
  std::vector<const Tensor*> destinations;
};

class ExecutionPlan {
 public:
  std::vector<PlanNode> nodes;
  std::vector<int> input_base;      // per node: offset into RunState::inputs
  std::vector<int> slot_consumers;  // per slot: number of readers (fetches count as readers)
  int num_slots = 0;
  int num_inputs = 0;
  std::vector<int> feed_slots;
  std::vector<int> fetch_slots;
  // Per fetch: the device whose memory holds it (copied to the host after the run), or nullptr.
  std::vector<Device*> fetch_devices;
  // Devices with queued work (GPUs) that a run waits for before it returns.
  std::vector<Device*> devices_to_sync;
  // Per slot: "dense/MatMul:0", "feed x:0", for allocation reports.
  std::vector<std::string> slot_names;
  // Constants are not executed: each run starts with their values in their slots.
  std::vector<std::pair<int, Tensor>> constants;
  // The graph's constants and the nodes folded into constants (optimizer/plan_optimizer.h), with
  // their devices, for traces. Their values are the first entries of `constants`, in this order:
  // one for a Const, one per output for a folded node.
  struct ConstantNode {
    const Node* node = nullptr;
    Device* device = nullptr;
    bool folded = false;
  };
  std::vector<ConstantNode> constant_nodes;
  std::vector<std::string> feed_names;  // for messages
  std::vector<Endpoint> feeds;
  std::vector<int> roots;
  bool parallel = false;

  // Runs the plan. `feed_values` are moved into the feed slots. The run checks `cancellation`
  // between nodes (kernels check it between units of work) and, once it is cancelled, stops and
  // returns its Status. Call ops compile and run their functions through `functions`. With a
  // `trace`, each executed node's statistics go to its collector. `destinations`, when given,
  // has a tensor (or an empty one) per fetch: the kernel producing a fetch with a destination of
  // its shape and dtype writes it there instead of allocating (a batch's row, written by a map's
  // call); the fetched tensor then shares the destination's memory.
  Status Run(std::vector<Tensor>& feed_values, std::vector<Tensor>* outputs, ResourceMgr* resources,
             ThreadPool* inter_op_pool, int64_t step_id, const RunOptions& options,
             const CancellationToken& cancellation, FunctionRuntime* functions,
             const TraceScope* trace = nullptr,
             const std::vector<Tensor>* destinations = nullptr) const;

 private:
  std::unique_ptr<RunState> AcquireState() const;
  void ReleaseState(std::unique_ptr<RunState> state) const;
  // Runs one node: the untraced body, or the same body timed and recorded when the run is
  // traced. That choice is the only cost of tracing in an untraced run.
  Status RunNode(int index, RunState& state, ResourceMgr* resources, int64_t step_id) const {
    return state.trace == nullptr ? ExecuteNode<false>(index, state, resources, step_id)
                                  : ExecuteNode<true>(index, state, resources, step_id);
  }
  template <bool kTraced>
  Status ExecuteNode(int index, RunState& state, ResourceMgr* resources, int64_t step_id) const;
  // Records a traced node's times and outputs (in its output slots) into the run's collector.
  void RecordNode(int index, const RunState& state, int64_t start_nanos, int64_t compute_start,
                  int64_t compute_end) const;
  // Records the constants, which are not executed, as taking no time at the run's start.
  void RecordConstants(const TraceScope& trace) const;
  // The tensors alive in `state` (and the failing node's inputs), largest first, for an OOM.
  std::string AllocationReport(const RunState& state, int failing_node) const;
  Status RunSequential(RunState& state, ResourceMgr* resources, int64_t step_id) const;
  Status RunParallel(RunState& state, ResourceMgr* resources, ThreadPool* pool,
                     int64_t step_id) const;

  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<RunState>> free_states_;
};

// The inter-op pool of the plan run whose nodes this thread is executing (nullptr outside one):
// a call op may run its function's independent nodes on it at once (see FunctionRuntime::Run in
// direct_session.cc). Dataset threads and eager ops see nullptr.
ThreadPool* FunctionPoolOfThisThread();

// Adds the failing node's name, type, device and creation site to a kernel's error.
Status AnnotateNodeError(const Status& status, const Node& node, const Device* device);

}  // namespace flowstone
