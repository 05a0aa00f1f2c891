#include "executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>

#include "core/thread_signals.h"

namespace flowstone {

namespace {
// "model.py:12" from the innermost frame of a creation site ('  File "/x/model.py", line 12,
// in build'); other formats are shown as they are.
std::string ShortSite(const std::string& site) {
  if (site.empty()) return site;
  size_t start = site.rfind('\n');
  std::string last = site.substr(start == std::string::npos ? 0 : start + 1);
  size_t file_begin = last.find("File \"");
  size_t file_end = last.find("\", line ");
  if (file_begin == std::string::npos || file_end == std::string::npos) return last;
  std::string file = last.substr(file_begin + 6, file_end - file_begin - 6);
  size_t slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  size_t line_begin = file_end + 8;
  size_t line_end = last.find(',', line_begin);
  return file + ":" +
         last.substr(line_begin,
                     line_end == std::string::npos ? std::string::npos : line_end - line_begin);
}
// Moves `in` from `from`'s memory (nullptr: host) to `to`'s memory (nullptr: host).
Status Transfer(const Tensor& in, Device* from, Device* to, Tensor* out) {
  Tensor host = in;
  if (from != nullptr) FS_RETURN_IF_ERROR(from->CopyToHost(in, &host));
  if (to != nullptr) return to->CopyFromHost(host, out);
  *out = std::move(host);
  return Status::OK();
}

// Wall-clock time since the Unix epoch, as TensorFlow's step statistics count it.
int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A small number per thread for traces (1, 2, ... in the order threads first record a node), so
// timelines show readable thread lanes.
uint32_t TraceThreadId() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

// TensorFlow's timeline label, "name = Op(input, input:1)", with the function prefix on the node
// and on its inputs, which live in the same function body.
std::string TimelineLabel(const std::string& prefix, const Node& node) {
  std::string label = StrCat(prefix, node.name(), " = ", node.type(), "(");
  for (int i = 0; i < node.num_inputs(); ++i) {
    const Endpoint& in = node.input(i);
    if (i > 0) label += ", ";
    label += StrCat(prefix, in.node->name());
    if (in.index != 0) label += StrCat(":", in.index);
  }
  return label + ")";
}

std::string FormatBytes(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), bytes >= (1 << 20) ? "%.2fMiB" : "%.2fKiB",
                bytes / (bytes >= (1 << 20) ? 1048576.0 : 1024.0));
  return buf;
}

}  // namespace

Status AnnotateNodeError(const Status& status, const Node& node, const Device* device) {
  std::string site = ShortSite(node.creation_site());
  std::string where = site.empty() ? std::string() : StrCat(", defined at ", site);
  Status s(status.code(),
           StrCat(status.message(), "\n\t [[node ", node.name(), " (", node.type(), ") on ",
                  device ? device->name() : std::string("<unplaced>"), where, "]]"));
  if (const auto* payloads = status.payloads()) {
    for (const auto& [k, v] : *payloads) s.SetPayload(k, v);
  }
  if (s.GetPayload("node").empty()) s.SetPayload("node", node.name());
  if (device != nullptr && s.GetPayload("device").empty()) s.SetPayload("device", device->name());
  return s;
}

std::unique_ptr<RunState> ExecutionPlan::AcquireState() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!free_states_.empty()) {
      std::unique_ptr<RunState> state = std::move(free_states_.back());
      free_states_.pop_back();
      return state;
    }
  }
  auto state = std::make_unique<RunState>();
  state->slots.resize(num_slots);
  state->slot_uses.reset(new std::atomic<int>[num_slots]);
  state->pending.reset(new std::atomic<int>[nodes.size()]);
  state->inputs.resize(num_inputs);
  state->forwardable.resize(num_inputs);
  return state;
}

void ExecutionPlan::ReleaseState(std::unique_ptr<RunState> state) const {
  for (Tensor& t : state->slots) t = Tensor();
  for (Tensor& t : state->inputs) t = Tensor();
  state->cancellation = nullptr;
  state->trace = nullptr;
  state->destinations.clear();
  std::lock_guard<std::mutex> lock(pool_mu_);
  free_states_.push_back(std::move(state));
}

template <bool kTraced>
Status ExecutionPlan::ExecuteNode(int index, RunState& state, ResourceMgr* resources,
                                  int64_t step_id) const {
  int64_t start_nanos = 0;
  if constexpr (kTraced) start_nanos = NowNanos();
  const PlanNode& pn = nodes[index];
  const int base = input_base[index];
  const int n_in = static_cast<int>(pn.input_slots.size());
  for (int i = 0; i < n_in; ++i) {
    int slot = pn.input_slots[i];
    if (slot_consumers[slot] == 1) {
      // The only reader takes the tensor, so an in-place kernel can reuse its buffer.
      state.inputs[base + i] = std::move(state.slots[slot]);
      state.forwardable[base + i] = 1;
    } else {
      // Each reader copies before counting itself out, so the last one (which then empties the
      // slot and may reuse the buffer) never races with a reader still copying.
      state.inputs[base + i] = state.slots[slot];
      const bool last = state.slot_uses[slot].fetch_sub(1, std::memory_order_acq_rel) == 1;
      if (last) state.slots[slot] = Tensor();
      state.forwardable[base + i] = last ? 1 : 0;
    }
    if (!state.inputs[base + i].initialized()) {
      return AnnotateNodeError(
          errors::Internal("input ", i, " of ", pn.node->name(), " was not produced"), *pn.node,
          pn.device);
    }
  }
  for (const InputTransfer& t : pn.transfers) {
    Tensor& in = state.inputs[base + t.input];
    Status s = Transfer(in, t.from, t.to, &in);
    if (!s.ok()) return AnnotateNodeError(s, *pn.node, pn.device);
    state.forwardable[base + t.input] = 1;
  }
  KernelContext::Params params;
  params.node = pn.node;
  params.device = pn.device;
  params.resources = resources;
  params.inputs = state.inputs.data() + base;
  params.forwardable = reinterpret_cast<const bool*>(state.forwardable.data() + base);
  params.outputs = state.slots.data() + pn.output_base;
  params.step_id = step_id;
  params.functions = state.functions;
  params.report_allocations_on_oom = state.report_allocations_on_oom;
  params.cancellation = state.cancellation;
  params.trace = state.trace;
  if (!pn.host_memory_outputs.empty()) params.host_memory_outputs = &pn.host_memory_outputs;
  if (!state.destinations.empty()) params.destinations = state.destinations.data() + pn.output_base;
  KernelContext ctx(params);
  int64_t compute_start = 0;
  if constexpr (kTraced) compute_start = NowNanos();
  Status s = pn.kernel->Compute(ctx);
  if constexpr (kTraced) {
    if (s.ok()) RecordNode(index, state, start_nanos, compute_start, NowNanos());
  }
  if (!s.ok() && s.code() == Code::kResourceExhausted && state.report_allocations_on_oom) {
    Status with_report(s.code(), StrCat(s.message(), "\n", AllocationReport(state, index)));
    if (const auto* payloads = s.payloads()) {
      for (const auto& [k, v] : *payloads) with_report.SetPayload(k, v);
    }
    s = with_report;
  }
  for (int i = 0; i < n_in; ++i) state.inputs[base + i] = Tensor();
  // A kernel that saw the cancellation may have stopped part way: its outputs are not used, and
  // the run returns the cancellation's reason as it is, which is no fault of this node.
  if (state.cancellation->IsCancelled()) return state.cancellation->status();
  if (!s.ok()) return AnnotateNodeError(s, *pn.node, pn.device);
  return Status::OK();
}

namespace {
NodeOutputStats DescribeOutput(int slot, const Tensor& t, const std::string& allocator_name) {
  NodeOutputStats out;
  out.slot = slot;
  out.dtype = t.dtype();
  out.shape = t.shape();
  out.requested_bytes = static_cast<int64_t>(t.bytes());
  out.allocator_name = allocator_name;
  return out;
}
}  // namespace

void ExecutionPlan::RecordConstants(const TraceScope& trace) const {
  const int64_t now = NowNanos();
  size_t value = 0;
  for (const ConstantNode& c : constant_nodes) {
    NodeExecStats stats;
    stats.node_name = trace.node_prefix + c.node->name();
    // A folded node is shown as the constant it became, as TensorFlow shows the Const that its
    // constant folding puts in a node's place.
    stats.op_type = c.folded ? "Const" : c.node->type();
    stats.timeline_label = c.folded ? StrCat(stats.node_name, " = Const()")
                                    : TimelineLabel(trace.node_prefix, *c.node);
    stats.all_start_nanos = now;
    stats.thread_id = TraceThreadId();
    const int outputs = c.folded ? c.node->num_outputs() : 1;
    for (int k = 0; k < outputs; ++k) {
      stats.outputs.push_back(DescribeOutput(k, constants[value++].second, CpuAllocator()->name()));
    }
    trace.collector->Add(c.device->name(), std::move(stats));
  }
}

void ExecutionPlan::RecordNode(int index, const RunState& state, int64_t start_nanos,
                               int64_t compute_start, int64_t compute_end) const {
  const PlanNode& pn = nodes[index];
  NodeExecStats stats;
  stats.node_name = state.trace->node_prefix + pn.node->name();
  stats.op_type = pn.node->type();
  stats.timeline_label = TimelineLabel(state.trace->node_prefix, *pn.node);
  stats.all_start_nanos = start_nanos;
  stats.op_start_rel_nanos = compute_start - start_nanos;
  stats.op_end_rel_nanos = compute_end - start_nanos;
  stats.thread_id = TraceThreadId();
  Allocator* allocator = pn.device->allocator();
  stats.allocator_name = allocator->name();
  for (int k = 0; k < pn.node->num_outputs(); ++k) {
    const Tensor& t = state.slots[pn.output_base + k];
    if (!t.initialized()) continue;
    const bool on_host = !pn.host_memory_outputs.empty() && pn.host_memory_outputs[k];
    stats.outputs.push_back(
        DescribeOutput(k, t, on_host ? CpuAllocator()->name() : stats.allocator_name));
    if (!on_host) stats.output_bytes += stats.outputs.back().requested_bytes;
  }
  stats.allocator_bytes_in_use = allocator->stats().bytes_in_use;
  stats.all_end_rel_nanos = NowNanos() - start_nanos;
  state.trace->collector->Add(pn.device->name(), std::move(stats));
}

std::string ExecutionPlan::AllocationReport(const RunState& state, int failing_node) const {
  struct Entry {
    size_t bytes;
    std::string line;
  };
  std::vector<Entry> entries;
  auto add = [&](const Tensor& t, const std::string& name) {
    if (!t.initialized() || t.dtype() == DType::kResource || t.buffer() == nullptr) return;
    entries.push_back({t.bytes(), StrCat(FormatBytes(t.bytes()), " from ", name, " ",
                                         t.shape().ToString(), " ", DTypeShortName(t.dtype()))});
  };
  for (int slot = 0; slot < num_slots; ++slot) add(state.slots[slot], slot_names[slot]);
  const PlanNode& failing = nodes[failing_node];
  for (size_t i = 0; i < failing.input_slots.size(); ++i) {
    add(state.inputs[input_base[failing_node] + i],
        StrCat(slot_names[failing.input_slots[i]], " (input ", i, " of ", failing.node->name(),
               ")"));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.bytes > b.bytes; });
  size_t total = 0;
  for (const Entry& e : entries) total += e.bytes;
  std::string report =
      StrCat("Tensors alive in this step when the OOM happened (", entries.size(), " tensors, ",
             FormatBytes(total), ", largest first; variables not included):");
  constexpr size_t kMaxLines = 20;
  for (size_t i = 0; i < entries.size() && i < kMaxLines; ++i) report += "\n  " + entries[i].line;
  if (entries.size() > kMaxLines)
    report += StrCat("\n  ... and ", entries.size() - kMaxLines, " more");
  return report;
}

Status ExecutionPlan::RunSequential(RunState& state, ResourceMgr* resources,
                                    int64_t step_id) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (state.cancellation->IsCancelled()) return state.cancellation->status();
    FS_RETURN_IF_ERROR(RunNode(i, state, resources, step_id));
  }
  return Status::OK();
}

Status ExecutionPlan::RunParallel(RunState& state, ResourceMgr* resources, ThreadPool* pool,
                                  int64_t step_id) const {
  // `shared` and `process` live on this thread's stack, so this function may return only once no
  // worker touches them again. The last worker to finish a node sets `done` and notifies with the
  // mutex held; the waiter can only see `done` after taking the mutex, hence after that worker
  // has released it for the last time. (Waiting for `outstanding` to reach 0 instead let the
  // waiter return, and its stack be reused, between a worker's decrement and its notify_all on
  // the then-destroyed condition variable: the crash in SessionTest.ParallelReadersOfOneTensor.)
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<int> outstanding{0};
    std::atomic<bool> failed{false};
    bool done = false;  // guarded by mu
    Status status;
  } shared;
  shared.outstanding.store(static_cast<int>(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    state.pending[i].store(nodes[i].num_predecessors, std::memory_order_relaxed);
  }

  // Runs a node, then keeps going with one ready successor and hands the others to the pool.
  std::function<void(int)> process = [&](int index) {
    while (index >= 0) {
      if (!shared.failed.load(std::memory_order_acquire)) {
        Status s = state.cancellation->IsCancelled() ? state.cancellation->status()
                                                     : RunNode(index, state, resources, step_id);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(shared.mu);
          if (shared.status.ok()) shared.status = s;
          shared.failed.store(true, std::memory_order_release);
        }
      }
      int next = -1;
      for (int succ : nodes[index].successors) {
        if (state.pending[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          if (next < 0) {
            next = succ;
          } else {
            pool->Schedule([&process, succ] { process(succ); });
          }
        }
      }
      if (shared.outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(shared.mu);
        shared.done = true;
        shared.cv.notify_all();
        return;  // nothing after the notify may touch `shared` or `process`
      }
      index = next;
    }
  };
  for (size_t r = 1; r < roots.size(); ++r) {
    int root = roots[r];
    pool->Schedule([&process, root] { process(root); });
  }
  if (!roots.empty()) process(roots[0]);
  std::unique_lock<std::mutex> lock(shared.mu);
  shared.cv.wait(lock, [&] { return shared.done; });
  return shared.status;
}

namespace {
thread_local ThreadPool* function_pool_of_this_thread = nullptr;

// Sets this thread's function pool for the length of a plan run; a nested run (a function's)
// restores its caller's when it ends.
class ScopedFunctionPool {
 public:
  explicit ScopedFunctionPool(ThreadPool* pool) : previous_(function_pool_of_this_thread) {
    function_pool_of_this_thread = pool;
  }
  ~ScopedFunctionPool() { function_pool_of_this_thread = previous_; }
  ScopedFunctionPool(const ScopedFunctionPool&) = delete;
  ScopedFunctionPool& operator=(const ScopedFunctionPool&) = delete;

 private:
  ThreadPool* previous_;
};
}  // namespace

ThreadPool* FunctionPoolOfThisThread() { return function_pool_of_this_thread; }

Status ExecutionPlan::Run(std::vector<Tensor>& feed_values, std::vector<Tensor>* outputs,
                          ResourceMgr* resources, ThreadPool* inter_op_pool, int64_t step_id,
                          const RunOptions& options, const CancellationToken& cancellation,
                          FunctionRuntime* functions, const TraceScope* trace,
                          const std::vector<Tensor>* destinations) const {
  // Kernels run on this thread too: a signal handled here must not land on a kernel's stack
  // pointer (see core/thread_signals.h).
  EnsureAlternateSignalStack();
  ScopedFunctionPool function_pool(inter_op_pool);
  std::unique_ptr<RunState> state = AcquireState();
  state->report_allocations_on_oom = options.report_tensor_allocations_upon_oom;
  state->cancellation = &cancellation;
  state->functions = functions;
  state->trace = trace;
  for (int s = 0; s < num_slots; ++s) {
    state->slot_uses[s].store(slot_consumers[s], std::memory_order_relaxed);
  }
  for (size_t f = 0; f < feed_slots.size(); ++f) {
    state->slots[feed_slots[f]] = std::move(feed_values[f]);
  }
  for (const auto& [slot, value] : constants) state->slots[slot] = value;
  if (trace != nullptr) RecordConstants(*trace);
  if (destinations != nullptr) {
    state->destinations.assign(num_slots, nullptr);
    for (size_t f = 0; f < fetch_slots.size() && f < destinations->size(); ++f) {
      const Tensor& dest = (*destinations)[f];
      const Tensor*& slot_dest = state->destinations[fetch_slots[f]];
      if (dest.initialized() && slot_dest == nullptr) slot_dest = &dest;
    }
  }
  // An allocation report reads every slot, so that run goes one node at a time.
  const bool run_parallel = parallel && !state->report_allocations_on_oom &&
                            inter_op_pool != nullptr && inter_op_pool->num_threads() > 0;
  Status s = run_parallel ? RunParallel(*state, resources, inter_op_pool, step_id)
                          : RunSequential(*state, resources, step_id);
  if (s.ok()) {
    outputs->resize(fetch_slots.size());
    for (size_t f = 0; f < fetch_slots.size(); ++f) {
      const Tensor& value = state->slots[fetch_slots[f]];
      if (!value.initialized()) {
        s = errors::Internal("fetched tensor ", f, " was not produced");
        break;
      }
      s = Transfer(value, fetch_devices[f], nullptr, &(*outputs)[f]);
      if (!s.ok()) break;
    }
  }
  for (Device* device : devices_to_sync) {
    Status synced = device->Sync();
    if (s.ok()) s = synced;
  }
  ReleaseState(std::move(state));
  return s;
}

}  // namespace flowstone
