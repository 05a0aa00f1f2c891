// DirectSession: the in-process Session. It compiles each distinct (feeds, fetches, targets)
// signature once into an ExecutionPlan and runs plans on the caller's thread, or on the inter-op
// pool when a plan has independent expensive nodes.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "executor.h"
#include "flowstone/collectives.h"
#include "flowstone/function.h"
#include "flowstone/session.h"
#include "gpu_discovery.h"
#include "graph/loop_stand_in.h"
#include "optimizer/plan_optimizer.h"
#include "placer.h"
#include "process_state.h"

namespace flowstone {
namespace {

Status ClosedSessionError() {
  Status s = errors::FailedPrecondition("Attempted to use a closed Session.");
  s.SetPayload("py_type", "RuntimeError");
  return s;
}

// Ops whose cost does not depend on the data size.
bool IsCheapOp(const std::string& type) {
  return type == "Const" || type == "Placeholder" || type == "Identity" || type == "NoOp" ||
         type == "VarHandleOp" || type == "ReadVariableOp" || type == "Shape" ||
         type == "PlaceholderWithDefault";
}

bool IsExpensive(const Node& node) {
  if (IsCheapOp(node.type())) return false;
  for (int i = 0; i < node.num_outputs(); ++i) {
    int64_t n = node.output_shape(i).num_elements();
    if (n < 0 || n > (1 << 15)) return true;
  }
  return node.type() == "MatMul" || node.type() == "BatchMatMulV2" ||
         node.type().rfind("Conv", 0) == 0 || node.type().rfind("_Fused", 0) == 0;
}

// Queue and reader ops wait for other runs (an enqueue, a close). A plan holding one runs on the
// caller's thread only: a kernel waiting on an inter-op pool thread could hold the last thread that
// the run it waits for needs.
bool MayBlock(const Node& node) {
  const std::string& type = node.type();
  return type.rfind("QueueEnqueue", 0) == 0 || type.rfind("QueueDequeue", 0) == 0 ||
         type.rfind("ReaderRead", 0) == 0;
}

// A library function compiled for one session: a sequential plan (see Instantiate).
struct SessionFunction final : CompiledFunction {
  const FunctionDef* def = nullptr;
  ExecutionPlan plan;
};

// Adds "[[in function f]]" to an error from inside a function body. The inner node's name stays
// in the message; the `node` payload is dropped so that the caller's annotation names the call
// node, which is the Operation Python can find in the caller's graph.
Status InFunction(const Status& status, const std::string& function) {
  Status s(status.code(), StrCat(status.message(), "\n\t [[in function ", function, "]]"));
  if (const auto* payloads = status.payloads()) {
    for (const auto& [k, v] : *payloads)
      if (k != "node" && k != "device") s.SetPayload(k, v);
  }
  return s;
}

class DirectSession final : public Session, public FunctionRuntime {
 public:
  DirectSession(std::shared_ptr<Graph> graph, const SessionOptions& options)
      : graph_(std::move(graph)), options_(options) {}

  Status Init() {
    int num_cpus = 1;
    auto it = options_.device_count.find("CPU");
    if (it != options_.device_count.end() && it->second > 0) num_cpus = it->second;
    if (num_cpus == 1) num_cpus = std::max(1, ProcessState::Get().num_logical_cpus());
    if (options_.cpu_memory_limit_bytes > 0) {
      limited_ = std::make_shared<LimitedAllocator>(CpuAllocator(), options_.cpu_memory_limit_bytes,
                                                    "cpu");
    }
    Allocator* allocator = limited_ ? static_cast<Allocator*>(limited_.get()) : CpuAllocator();
    ProcessState& process = ProcessState::Get();
    process.ConfigureThreads(options_.inter_op_threads, options_.intra_op_threads);
    for (int i = 0; i < num_cpus; ++i) {
      devices_.push_back(std::make_unique<Device>("CPU", i, allocator, process.intra_op_pool()));
    }
    fold_device_ = std::make_unique<Device>("CPU", 0, CpuAllocator(), process.intra_op_pool());
    GpuSessionOptions gpu;
    auto gpu_count = options_.device_count.find("GPU");
    if (gpu_count != options_.device_count.end()) gpu.max_devices = gpu_count->second;
    gpu.visible_device_list = options_.gpu_visible_device_list;
    gpu.memory.memory_fraction = options_.gpu_memory_fraction;
    gpu.memory.allow_growth = options_.gpu_allow_growth;
    gpu.memory.memory_limit_bytes = options_.gpu_memory_limit_bytes;
    FS_RETURN_IF_ERROR(
        GpuDiscovery::Get().CreateSessionDevices(gpu, process.intra_op_pool(), &devices_));
    // Placement tries GPUs first: an unpinned op runs on a GPU when one has a kernel for it.
    for (const auto& d : devices_)
      if (d->type() != "CPU") device_ptrs_.push_back(d.get());
    for (const auto& d : devices_)
      if (d->type() == "CPU") device_ptrs_.push_back(d.get());
    placement_.allow_soft_placement = options_.allow_soft_placement;
    placement_.gpu_unavailable_reason =
        gpu.max_devices == 0 ? "the session's ConfigProto sets device_count={'GPU': 0}"
                             : GpuDiscovery::Get().reason();
    return Status::OK();
  }

  ~DirectSession() override { Close(); }

  Status Run(const std::vector<std::pair<Endpoint, Tensor>>& feeds,
             const std::vector<Endpoint>& fetches, const std::vector<Node*>& targets,
             std::vector<Tensor>* outputs, const RunOptions& options,
             RunMetadata* metadata) override {
    std::vector<Endpoint> feed_endpoints;
    std::vector<Tensor> feed_values;
    for (const auto& [endpoint, value] : feeds) {
      feed_endpoints.push_back(endpoint);
      feed_values.push_back(value);
    }
    std::string key;
    for (const Endpoint& e : feed_endpoints) key += StrCat("f", e.node->id(), ":", e.index, ",");
    for (const Endpoint& e : fetches) key += StrCat("o", e.node->id(), ":", e.index, ",");
    for (const Node* n : targets) key += StrCat("t", n->id(), ",");
    CallableHandle handle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = run_cache_.find(key);
      handle = it == run_cache_.end() ? -1 : it->second;
    }
    if (handle < 0) {
      FS_RETURN_IF_ERROR(MakeCallable(feed_endpoints, fetches, targets, &handle));
      std::lock_guard<std::mutex> lock(mu_);
      run_cache_[key] = handle;
    }
    return RunCallable(handle, feed_values, outputs, options, metadata);
  }

  Status MakeCallable(const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
                      const std::vector<Node*>& targets, CallableHandle* handle) override {
    InFlight guard(this);
    if (!guard.ok()) return ClosedSessionError();
    auto plan = std::make_shared<ExecutionPlan>();
    FS_RETURN_IF_ERROR(Compile(*graph_, feeds, fetches, targets, plan.get()));
    std::lock_guard<std::mutex> lock(mu_);
    *handle = next_handle_++;
    callables_[*handle] = std::move(plan);
    return Status::OK();
  }

  Status RunCallable(CallableHandle handle, std::vector<Tensor>& feed_values,
                     std::vector<Tensor>* outputs, const RunOptions& options,
                     RunMetadata* metadata) override {
    CancellationToken cancellation;
    InFlight guard(this, &cancellation);
    if (!guard.ok()) return ClosedSessionError();
    std::shared_ptr<ExecutionPlan> plan;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = callables_.find(handle);
      if (it == callables_.end()) {
        return errors::InvalidArgument("No such callable handle: ", handle);
      }
      plan = it->second;
    }
    if (feed_values.size() != plan->feeds.size()) {
      return errors::InvalidArgument("Expected ", plan->feeds.size(), " feed values, got ",
                                     feed_values.size());
    }
    for (size_t i = 0; i < feed_values.size(); ++i) {
      FS_RETURN_IF_ERROR(CheckFeed(plan->feeds[i], feed_values[i]));
    }
    const int64_t timeout_ms =
        options.timeout_in_ms > 0 ? options.timeout_in_ms : options_.operation_timeout_in_ms;
    if (timeout_ms > 0) {
      cancellation.CancelAt(CancellationToken::Clock::now() + std::chrono::milliseconds(timeout_ms),
                            errors::DeadlineExceeded("Timed out waiting for notification"));
    }
    if (options.cancel_on_interrupt) cancellation.WatchInterrupts();
    int64_t step = next_step_.fetch_add(1, std::memory_order_relaxed);
    if (metadata != nullptr) metadata->step_stats = StepStats();
    if (options.trace_level == RunOptions::kNoTrace || metadata == nullptr) {
      return plan->Run(feed_values, outputs, &resources_, ProcessState::Get().inter_op_pool(), step,
                       options, cancellation, this);
    }
    // The collector exists only for a traced run, so an untraced one pays for no tracing state.
    StepStatsCollector collector;
    TraceScope trace{&collector, ""};
    Status s = plan->Run(feed_values, outputs, &resources_, ProcessState::Get().inter_op_pool(),
                         step, options, cancellation, this, &trace);
    collector.Finalize(&metadata->step_stats);
    return s;
  }

  // Called by a call kernel inside a run, so Close() waits for it like for the run.
  Status Instantiate(const std::string& name, const CompiledFunction** out) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = functions_.find(name);
      if (it != functions_.end()) {
        *out = it->second.get();
        return Status::OK();
      }
    }
    const FunctionDef* def = graph_->library().Find(name);
    if (def == nullptr) {
      return errors::NotFound("Function '", name, "' is not in the graph's function library");
    }
    auto compiled = std::make_unique<SessionFunction>();
    compiled->def = def;
    Status s = Compile(*def->body, def->args, def->rets, {}, &compiled->plan);
    if (!s.ok()) return InFunction(s, name);
    OrderSideEffects(&compiled->plan);
    compiled->plan.parallel =
        compiled->plan.parallel && HasIndependentExpensiveNodes(compiled->plan);
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = functions_.emplace(name, std::move(compiled));
    *out = it->second.get();
    return Status::OK();
  }

  Status Run(const CompiledFunction& function, std::vector<Tensor>& args, std::vector<Tensor>* rets,
             const KernelContext& caller, const std::vector<Tensor>* destinations) override {
    const auto& f = static_cast<const SessionFunction&>(function);
    if (args.size() != f.plan.feeds.size()) {
      return errors::InvalidArgument(f.def->Describe(), " called with ", args.size(), " inputs");
    }
    RunOptions options;
    options.report_tensor_allocations_upon_oom = caller.report_allocations_on_oom();
    // A function runs inside its caller's run and stops with it.
    static const CancellationToken kNeverCancelled;
    const CancellationToken* cancellation = caller.cancellation();
    if (cancellation == nullptr) cancellation = &kNeverCancelled;
    // A traced caller traces the body too, naming its nodes "function/node".
    std::optional<TraceScope> trace;
    if (caller.trace() != nullptr) {
      trace = TraceScope{caller.trace()->collector,
                         StrCat(caller.trace()->node_prefix, f.def->name, "/")};
    }
    // On the thread that called Session::Run, a function may run its independent nodes on the
    // run's inter-op pool. On one of the pool's threads it runs in order: a parallel plan would
    // wait on the pool from one of the pool's own threads.
    ThreadPool* pool = FunctionPoolOfThisThread();
    if (pool != nullptr && pool->InWorkerThread()) pool = nullptr;
    Status s = f.plan.Run(args, rets, caller.resources(), pool, caller.step_id(), options,
                          *cancellation, this, trace ? &*trace : nullptr, destinations);
    return s.ok() ? s : InFunction(s, f.def->name);
  }

  Status ReleaseCallable(CallableHandle handle) override {
    std::lock_guard<std::mutex> lock(mu_);
    callables_.erase(handle);
    return Status::OK();
  }

  Status Close() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    ForgetRunsOfForkParentLocked();
    for (CancellationToken* run : running_)
      run->Cancel(errors::Cancelled("Run call was cancelled"));
    idle_cv_.wait(lock, [this] { return in_flight_ == 0; });
    // Resources first: an iterator's prefetch thread may still be running a compiled function,
    // and is stopped and joined when its iterator goes. Without the lock, which that thread's
    // function calls take (Instantiate).
    lock.unlock();
    resources_.Clear();
    lock.lock();
    callables_.clear();
    run_cache_.clear();
    functions_.clear();
    folded_.Clear();
    kernels_.clear();
    return Status::OK();
  }

  bool closed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

  std::vector<DeviceAttributes> ListDevices() const override {
    std::vector<DeviceAttributes> out;
    for (const auto& d : devices_) out.push_back(d->attributes());
    return out;
  }

  const std::shared_ptr<Graph>& graph() const override { return graph_; }
  ResourceMgr* resource_manager() override { return &resources_; }

 private:
  // Counts a call in flight so Close() can wait for it, and lists a run's cancellation token so
  // Close() can cancel the run.
  class InFlight {
   public:
    explicit InFlight(DirectSession* s, CancellationToken* run = nullptr) : s_(s), run_(run) {
      std::lock_guard<std::mutex> lock(s_->mu_);
      s_->ForgetRunsOfForkParentLocked();
      ok_ = !s_->closed_;
      if (!ok_) return;
      ++s_->in_flight_;
      if (run_ != nullptr) s_->running_.push_back(run_);
    }
    ~InFlight() {
      if (!ok_) return;
      std::lock_guard<std::mutex> lock(s_->mu_);
      if (run_ != nullptr) {
        auto& running = s_->running_;
        *std::find(running.begin(), running.end(), run_) = running.back();
        running.pop_back();
      }
      if (--s_->in_flight_ == 0) s_->idle_cv_.notify_all();
    }
    bool ok() const { return ok_; }

   private:
    DirectSession* s_;
    CancellationToken* run_;
    bool ok_ = false;
  };

  // In a child of fork(), the runs in flight in the parent never finish: forget them, so that
  // Close() does not wait for them.
  void ForgetRunsOfForkParentLocked() {
    const uint64_t generation = ProcessState::ForkGeneration();
    if (generation == fork_generation_) return;
    fork_generation_ = generation;
    in_flight_ = 0;
    running_.clear();
  }

  static Status CheckFeed(const Endpoint& endpoint, const Tensor& value) {
    DType expected = endpoint.node->output_type(endpoint.index);
    if (value.dtype() != expected) {
      Status s = errors::InvalidArgument("Cannot feed a value of dtype ", DTypeName(value.dtype()),
                                         " for Tensor '", endpoint.ToString(),
                                         "', which has dtype ", DTypeName(expected));
      s.SetPayload("py_type", "TypeError");
      return s;
    }
    const PartialShape& shape = endpoint.node->output_shape(endpoint.index);
    if (!shape.IsCompatibleWith(value.shape())) {
      Status s = errors::InvalidArgument(
          "Cannot feed value of shape ", value.shape().ToPythonString(), " for Tensor '",
          endpoint.ToString(), "', which has shape '", shape.ToPythonString(), "'");
      s.SetPayload("py_type", "ValueError");
      s.SetPayload("node", endpoint.node->name());
      return s;
    }
    return Status::OK();
  }

  Status PlaceLocked(const Graph& graph, const Node& node, Device** out) {
    auto it = placements_.find(&node);
    if (it != placements_.end()) {
      *out = it->second;
      return Status::OK();
    }
    std::vector<ColocationTarget> colocated;
    FS_RETURN_IF_ERROR(PlaceColocationTargetsLocked(graph, node, &colocated));
    std::vector<Device*> input_devices;
    for (const Endpoint& in : node.inputs()) {
      auto found = placements_.find(in.node);
      input_devices.push_back(found == placements_.end() ? nullptr : found->second);
    }
    Status s =
        colocated.empty()
            ? PlaceNode(node, DevicesForLocked(graph, node), input_devices, placement_, out)
            : PlaceColocatedNode(node, colocated, device_ptrs_, input_devices, placement_, out);
    if (!s.ok()) {
      s.SetPayload("node", node.name());
      return s;
    }
    placements_[&node] = *out;
    if (options_.log_device_placement) {
      if (!logged_mapping_header_) {
        std::fprintf(stderr, "Device mapping:\n");
        for (const auto& d : devices_) {
          std::string physical = d->physical_description();
          if (physical.empty()) physical = StrCat("device: ", d->id(), ", name: ", d->type());
          std::fprintf(stderr, "%s -> %s\n", d->name().c_str(), physical.c_str());
        }
        logged_mapping_header_ = true;
      }
      std::fprintf(stderr, "%s: (%s): %s\n", node.name().c_str(), node.type().c_str(),
                   (*out)->name().c_str());
    }
    return Status::OK();
  }

  // The devices `node` may go to. A variable (a node making a resource) may only go where every
  // op using it has a kernel: its value lives in that device's memory.
  std::vector<Device*> DevicesForLocked(const Graph& graph, const Node& node) {
    bool makes_resource = false;
    for (int o = 0; o < node.num_outputs(); ++o)
      makes_resource |= node.output_type(o) == DType::kResource;
    if (!makes_resource) return device_ptrs_;
    std::vector<const Node*> users;
    for (int id = node.id() + 1; id < graph.num_nodes_unlocked(); ++id) {
      const Node* candidate = graph.node_unlocked(id);
      for (const Endpoint& in : candidate->inputs()) {
        if (in.node == &node) {
          users.push_back(candidate);
          break;
        }
      }
    }
    std::vector<Device*> out;
    for (Device* d : device_ptrs_) {
      bool all = true;
      for (const Node* user : users) all = all && (d->host_memory() || HasKernel(*user, *d));
      if (all) out.push_back(d);
    }
    // A pin the filtered devices cannot honour is left to fail on the user with a clear error.
    DeviceSpec requested;
    if (!DeviceSpec::Parse(node.requested_device(), &requested).ok()) return device_ptrs_;
    for (Device* d : out)
      if (requested.Matches(d->spec())) return out;
    return device_ptrs_;
  }

  // Places what decides `node`'s device before it: the variables it reads (resource inputs) and
  // the nodes tf.colocate_with names in its `_class` attr, which may come later in the graph.
  // Returns the placed colocation targets. A node reached again while its own targets are being
  // placed (a colocation cycle) is skipped there.
  Status PlaceColocationTargetsLocked(const Graph& graph, const Node& node,
                                      std::vector<ColocationTarget>* targets) {
    std::vector<const Node*> prerequisites;
    for (const Endpoint& in : node.inputs())
      if (in.node->output_type(in.index) == DType::kResource) prerequisites.push_back(in.node);
    std::vector<std::string> names = ColocationTargets(node);
    for (const std::string& name : names)
      if (const Node* target = graph.FindNodeUnlocked(name)) prerequisites.push_back(target);
    if (prerequisites.empty()) return Status::OK();

    placing_.insert(&node);
    Status status;
    for (const Node* prerequisite : prerequisites) {
      if (placing_.count(prerequisite)) continue;
      Device* device;
      status = PlaceLocked(graph, *prerequisite, &device);
      if (!status.ok()) break;
      if (std::find(names.begin(), names.end(), prerequisite->name()) != names.end())
        targets->push_back({prerequisite, device});
    }
    placing_.erase(&node);
    return status;
  }

  Status KernelLocked(const Node& node, Device* device, OpKernel** out) {
    auto it = kernels_.find(&node);
    if (it != kernels_.end()) {
      *out = it->second.get();
      return Status::OK();
    }
    std::unique_ptr<OpKernel> kernel;
    Status s = CreateKernel(node, device->type(), &kernel);
    if (!s.ok()) return AnnotateNodeError(s, node, device);
    *out = kernel.get();
    kernels_[&node] = std::move(kernel);
    return Status::OK();
  }

  // Compiles the part of `graph` (the session's graph or a function body) that computes
  // `fetches` and runs `targets`, given `feeds`.
  Status Compile(const Graph& graph, const std::vector<Endpoint>& feeds,
                 const std::vector<Endpoint>& fetches, const std::vector<Node*>& targets,
                 ExecutionPlan* plan) {
    std::shared_lock<std::shared_mutex> graph_lock(graph.mutex());
    if (graph.num_nodes_unlocked() == 0) {
      Status s = errors::FailedPrecondition(
          "The Session graph is empty. Add operations to the graph before calling run().");
      s.SetPayload("py_type", "RuntimeError");
      return s;
    }
    auto check_endpoint = [&](const Endpoint& e, const char* what) -> Status {
      if (e.node == nullptr || graph.node_unlocked(e.node->id()) != e.node) {
        Status s = errors::InvalidArgument(what, " ", e.node ? e.node->name() : "<null>",
                                           " is not an element of this graph.");
        s.SetPayload("py_type", "ValueError");
        return s;
      }
      if (e.index < 0 || e.index >= e.node->num_outputs()) {
        return errors::InvalidArgument(what, " refers to output ", e.index, " of ", e.node->name(),
                                       " which has ", e.node->num_outputs(), " outputs");
      }
      return Status::OK();
    };
    for (const Endpoint& e : feeds) FS_RETURN_IF_ERROR(check_endpoint(e, "Feed"));
    for (const Endpoint& e : fetches) FS_RETURN_IF_ERROR(check_endpoint(e, "Fetch"));
    for (Node* n : targets) {
      if (n == nullptr || graph.node_unlocked(n->id()) != n) {
        Status s = errors::InvalidArgument("Target ", n ? n->name() : "<null>",
                                           " is not an element of this graph.");
        s.SetPayload("py_type", "ValueError");
        return s;
      }
    }

    // Prune: walk back from fetches and targets, stopping at fed tensors.
    auto fed_index = [&](const Endpoint& e) -> int {
      for (size_t i = 0; i < feeds.size(); ++i)
        if (feeds[i] == e) return static_cast<int>(i);
      return -1;
    };
    // As in TensorFlow, a control dependency on a fed placeholder is satisfied by the feed
    // (`with tf.control_dependencies([x])` where x is fed): the placeholder itself never runs.
    auto fed_placeholder = [&](Node* n) {
      return n->type() == "Placeholder" && fed_index(Endpoint{n, 0}) >= 0;
    };
    // The plan's graph rewrites (optimizer/plan_optimizer.h): the plan reads a forwarded node's
    // replacement instead of the node, and a folded node's values instead of running it.
    PlanRewrites rewrites;
    // The output a consumer of `e` reads, or an empty endpoint when that tensor is fed.
    auto source = [&](const Endpoint& e) -> Endpoint {
      if (fed_index(e) >= 0) return {};
      const Endpoint r = rewrites.Resolve(e);
      return fed_index(r) >= 0 ? Endpoint{} : r;
    };
    // The node a control input waits for, or nullptr when nothing has to run for it. Waiting
    // for a forwarded node's replacement waits for everything the node waited for.
    auto control_source = [&](Node* dep) -> Node* {
      if (fed_placeholder(dep)) return nullptr;
      if (!rewrites.IsForwarded(dep)) return dep;
      Node* replacement = source(Endpoint{dep, 0}).node;
      return replacement != nullptr && !fed_placeholder(replacement) ? replacement : nullptr;
    };
    auto prune = [&] {
      std::vector<char> needed(graph.num_nodes_unlocked(), 0);
      std::vector<Node*> stack;
      for (const Endpoint& e : fetches)
        if (Node* n = source(e).node) stack.push_back(n);
      for (Node* n : targets) stack.push_back(n);
      while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        if (needed[n->id()]) continue;
        needed[n->id()] = 1;
        if (rewrites.Folded(n) != nullptr) continue;  // a constant now: its inputs do not run
        for (const Endpoint& in : rewrites.Inputs(n)) {
          Node* src = source(in).node;
          if (src != nullptr && !needed[src->id()]) stack.push_back(src);
        }
        for (Node* dep : n->control_inputs()) {
          Node* src = control_source(dep);
          if (src != nullptr && !needed[src->id()]) stack.push_back(src);
        }
      }
      return needed;
    };
    std::vector<char> needed = prune();

    // A recording loop the run needs stands in for its forward loop (graph/loop_stand_in.h).
    const std::unordered_map<int, int> stand_ins = RecordingLoopStandIns(graph, needed);
    for (const auto& [forward, record] : stand_ins) needed[forward] = 0;
    // A stand-in already makes one node read for another: such plans run as written.
    if (stand_ins.empty() && options_.rewrites.AnyEnabled()) {
      // Placed before the rewrites, as TensorFlow places a graph before Grappler rewrites it: the
      // placement log and placement errors cover every node the fetches need, in the order the
      // plan would place them (constants first, then the others by id, which is their order).
      std::vector<char> on_host(needed.size(), 0);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_) return ClosedSessionError();
        for (const bool constants : {true, false}) {
          for (int id = 0; id < static_cast<int>(needed.size()); ++id) {
            Node* n = graph.node_unlocked(id);
            if (!needed[id] || (n->type() == "Const" && n->control_inputs().empty()) != constants)
              continue;
            Device* device;
            FS_RETURN_IF_ERROR(PlaceLocked(graph, *n, &device));
            on_host[id] = device->host_memory();
          }
        }
      }
      OptimizerScope scope;
      scope.graph = &graph;
      scope.needed = &needed;
      scope.on_host = &on_host;
      scope.is_fed = [&](const Endpoint& e) { return fed_index(e) >= 0; };
      scope.targets.assign(targets.begin(), targets.end());
      scope.fetches = fetches;
      scope.fusions = &fusions_;
      scope.cpu = fold_device_.get();
      scope.resources = &resources_;
      scope.cache = &folded_;
      rewrites = OptimizePlan(scope, options_.rewrites);
      if (!rewrites.empty()) needed = prune();
    }
    auto is_constant = [&](const Node* n) {
      return (n->type() == "Const" && n->control_inputs().empty()) || rewrites.Folded(n) != nullptr;
    };

    // Constants are placed like any node but not executed: their values are put in their slots
    // directly. The others run in a topological order (RunSequential runs them in plan order).
    std::unordered_map<int, int> plan_index;
    std::unordered_map<int, int> constant_slot;
    std::vector<Node*> constants;
    for (int id = 0; id < static_cast<int>(needed.size()); ++id) {
      Node* n = graph.node_unlocked(id);
      if (needed[id] && is_constant(n)) constants.push_back(n);
    }
    auto inputs_of = [&](const Node* n) -> const std::vector<Endpoint>& {
      return rewrites.Inputs(n);
    };
    std::vector<Node*> order =
        ExecutionOrder(graph, needed, stand_ins, is_constant, inputs_of, source, control_source);
    for (size_t i = 0; i < order.size(); ++i) plan_index[order[i]->id()] = static_cast<int>(i);
    for (const auto& [forward, record] : stand_ins) plan_index[forward] = plan_index.at(record);

    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return ClosedSessionError();
    plan->feeds = feeds;
    int slot = 0;
    for (size_t f = 0; f < feeds.size(); ++f) plan->feed_slots.push_back(slot++);
    for (Node* n : constants) {
      Device* device;
      FS_RETURN_IF_ERROR(PlaceLocked(graph, *n, &device));
      constant_slot[n->id()] = slot;
      const std::vector<Tensor>* folded = rewrites.Folded(n);
      plan->constant_nodes.push_back({n, device, folded != nullptr});
      if (folded == nullptr) {
        plan->constants.push_back({slot++, std::get<Tensor>(*n->attrs().Find("value"))});
      } else {
        for (const Tensor& value : *folded) plan->constants.push_back({slot++, value});
      }
    }
    plan->nodes.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      Node* n = order[i];
      PlanNode& pn = plan->nodes[i];
      // A replaced node runs its fused node's kernel, under the user's node's name and placement.
      const Replacement* replacement = rewrites.Replaced(n);
      pn.node = replacement != nullptr ? replacement->node : n;
      FS_RETURN_IF_ERROR(PlaceLocked(graph, *n, &pn.device));
      FS_RETURN_IF_ERROR(KernelLocked(*pn.node, pn.device, &pn.kernel));
      pn.output_base = slot;
      // A fused node may have more outputs than the node it replaces (_ReluGradBiasAddGrad).
      slot += std::max(n->num_outputs(), pn.node->num_outputs());
    }
    plan->num_slots = slot;
    plan->slot_consumers.assign(slot, 0);
    // The slot holding an endpoint's value in this plan.
    auto slot_of = [&](const Endpoint& e) {
      int f = fed_index(e);
      if (f >= 0) return plan->feed_slots[f];
      const Endpoint r = rewrites.Resolve(e);
      f = fed_index(r);
      if (f >= 0) return plan->feed_slots[f];
      auto c = constant_slot.find(r.node->id());
      if (c != constant_slot.end()) return c->second + r.index;
      return plan->nodes[plan_index[r.node->id()]].output_base + r.index;
    };
    plan->slot_names.resize(slot);
    for (size_t f = 0; f < feeds.size(); ++f)
      plan->slot_names[plan->feed_slots[f]] = "feed " + feeds[f].ToString();
    for (Node* n : constants) {
      const int outputs = rewrites.Folded(n) != nullptr ? n->num_outputs() : 1;
      for (int o = 0; o < outputs; ++o)
        plan->slot_names[constant_slot[n->id()] + o] = StrCat(n->name(), ":", o);
    }
    for (const PlanNode& pn : plan->nodes)
      for (int o = 0; o < pn.node->num_outputs(); ++o)
        plan->slot_names[pn.output_base + o] = StrCat(pn.node->name(), ":", o);

    // Partitioning: each slot lives in the memory of the device that produced it (nullptr:
    // host memory: feeds, constants, CPU outputs, and outputs a device kernel keeps on the host).
    // An input whose slot is not where its kernel reads it gets a transfer.
    std::vector<Device*> slot_device(slot, nullptr);
    std::vector<std::vector<bool>> host_inputs(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      PlanNode& pn = plan->nodes[i];
      if (pn.device->host_memory()) continue;
      const KernelDef* def = FindKernelDef(*pn.node, pn.device->type());
      host_inputs[i] = HostMemoryInputs(*pn.node, *def);
      pn.host_memory_outputs = HostMemoryOutputs(*pn.node, *def);
      for (int o = 0; o < pn.node->num_outputs(); ++o)
        if (!pn.host_memory_outputs[o]) slot_device[pn.output_base + o] = pn.device;
      auto& sync = plan->devices_to_sync;
      if (std::find(sync.begin(), sync.end(), pn.device) == sync.end()) sync.push_back(pn.device);
    }
    // A constant read on a device is copied there once, now, into a slot of its own.
    std::unordered_map<int, Tensor> constant_values(plan->constants.begin(), plan->constants.end());
    std::map<std::pair<int, Device*>, int> constant_copies;
    auto constant_on = [&](int host_slot, Device* device, int* out_slot) -> Status {
      auto key = std::make_pair(host_slot, device);
      auto found = constant_copies.find(key);
      if (found != constant_copies.end()) {
        *out_slot = found->second;
        return Status::OK();
      }
      Tensor on_device;
      FS_RETURN_IF_ERROR(device->CopyFromHost(constant_values.at(host_slot), &on_device));
      *out_slot = plan->num_slots++;
      plan->constants.push_back({*out_slot, std::move(on_device)});
      plan->slot_consumers.push_back(0);
      plan->slot_names.push_back(StrCat(plan->slot_names[host_slot], " on ", device->name()));
      slot_device.push_back(device);
      constant_copies[key] = *out_slot;
      return Status::OK();
    };

    int input_count = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      Node* n = order[i];
      PlanNode& pn = plan->nodes[i];
      plan->input_base.push_back(input_count);
      const std::vector<Endpoint>& inputs = inputs_of(n);
      input_count += static_cast<int>(inputs.size());
      std::unordered_set<int> preds;
      for (int k = 0; k < static_cast<int>(inputs.size()); ++k) {
        const Endpoint& in = inputs[k];
        int s = slot_of(in);
        Device* want = pn.device->host_memory() || host_inputs[i][k] ? nullptr : pn.device;
        if (slot_device[s] != want) {
          if (constant_values.count(s) && want != nullptr) {
            Status copied = constant_on(s, want, &s);
            if (!copied.ok()) return AnnotateNodeError(copied, *n, pn.device);
          } else {
            pn.transfers.push_back({k, slot_device[s], want});
          }
        }
        pn.input_slots.push_back(s);
        ++plan->slot_consumers[s];
        if (Node* src = source(in).node) {
          auto p = plan_index.find(src->id());
          if (p != plan_index.end()) preds.insert(p->second);
        }
      }
      // A replacement's constants (a filter with a batch norm folded in) follow its inputs, each
      // in a host slot of its own that every run starts with, like a Const's.
      if (const Replacement* r = rewrites.Replaced(n)) {
        for (const Tensor& value : r->constants) {
          const int s = plan->num_slots++;
          plan->constants.push_back({s, value});
          plan->slot_consumers.push_back(1);
          plan->slot_names.push_back(StrCat(n->name(), " folded constant ", pn.input_slots.size()));
          slot_device.push_back(nullptr);
          pn.input_slots.push_back(s);
          ++input_count;
        }
      }
      for (Node* dep : n->control_inputs()) {
        Node* src = control_source(dep);
        auto p = src == nullptr ? plan_index.end() : plan_index.find(src->id());
        if (p != plan_index.end()) preds.insert(p->second);
      }
      pn.num_predecessors = static_cast<int>(preds.size());
      for (int p : preds) plan->nodes[p].successors.push_back(static_cast<int>(i));
      if (preds.empty()) plan->roots.push_back(static_cast<int>(i));
    }
    plan->num_inputs = input_count;
    for (const Endpoint& e : fetches) {
      int s = slot_of(e);
      plan->fetch_slots.push_back(s);
      plan->fetch_devices.push_back(slot_device[s]);
      ++plan->slot_consumers[s];
    }
    // A GPU runs its kernels in stream order anyway, and its library handles (cuBLAS, cuDNN)
    // must not be used from several threads at once: plans using one run on a single thread.
    // Collectives (Horovod's ops) block until every process reaches them: one thread, in plan
    // order, which is the same in every process (see IsCollectiveOpType).
    const bool blocks = std::any_of(plan->nodes.begin(), plan->nodes.end(),
                                    [](const auto& pn) { return MayBlock(*pn.node); });
    plan->parallel = plan->devices_to_sync.empty() && !blocks && !HasCollective(*plan) &&
                     HasIndependentExpensiveNodes(*plan);
    return Status::OK();
  }

  // The needed nodes other than constants, inputs before consumers. Node ids are such an order
  // (inputs always exist before their consumers, and a rewrite only ever points a consumer at an
  // older node), which this keeps; only a stand-in can break it (a forward loop's consumer may be
  // older than the recording loop that replaces the forward loop), so producers are visited depth
  // first and come out before their consumers. `inputs_of` gives a node's inputs after the plan's
  // rewrites (a fused node's), `source` and `control_source` the node an edge waits for
  // (nullptr: none, the tensor is fed).
  template <typename IsConstant, typename InputsOf, typename Source, typename ControlSource>
  static std::vector<Node*> ExecutionOrder(const Graph& graph, const std::vector<char>& needed,
                                           const std::unordered_map<int, int>& stand_ins,
                                           const IsConstant& is_constant, const InputsOf& inputs_of,
                                           const Source& source,
                                           const ControlSource& control_source) {
    auto executed = [&](const Node* n) { return needed[n->id()] && !is_constant(n); };
    auto producer = [&](const Node* n) {
      auto s = stand_ins.find(n->id());
      return s == stand_ins.end() ? n : graph.node_unlocked(s->second);
    };
    std::vector<Node*> order;
    std::vector<char> state(needed.size(), 0);  // 1: being visited, 2: in `order`
    std::vector<std::pair<Node*, int>> stack;   // a node, and how many of its edges are visited
    for (int id = 0; id < static_cast<int>(needed.size()); ++id) {
      Node* root = graph.node_unlocked(id);
      if (!executed(root) || state[id]) continue;
      stack.push_back({root, 0});
      state[id] = 1;
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        const std::vector<Endpoint>& inputs = inputs_of(n);
        const int num_inputs = static_cast<int>(inputs.size());
        const int num_edges = num_inputs + static_cast<int>(n->control_inputs().size());
        if (next == num_edges) {
          state[n->id()] = 2;
          order.push_back(n);
          stack.pop_back();
          continue;
        }
        const int edge = next++;
        Node* src = edge < num_inputs ? source(inputs[edge]).node
                                      : control_source(n->control_inputs()[edge - num_inputs]);
        if (src == nullptr) continue;
        Node* pred = const_cast<Node*>(producer(src));
        if (executed(pred) && state[pred->id()] == 0) {
          state[pred->id()] = 1;
          stack.push_back({pred, 0});
        }
      }
    }
    StartCollectivesEarly(&order, [&](Node* n, const auto& visit) {
      const std::vector<Endpoint>& inputs = inputs_of(n);
      for (const Endpoint& in : inputs) {
        if (Node* src = source(in).node) visit(producer(src));
      }
      for (Node* dep : n->control_inputs()) {
        if (Node* src = control_source(dep)) visit(producer(src));
      }
    });
    return order;
  }

  // Moves each early collective (IsEarlyCollectiveOpType: an allreduce's Start) to just after the
  // last node it waits for, so that the collective runs on the background thread while the nodes
  // after it do: the last layer's gradient starts its allreduce while the earlier layers'
  // gradients are computed. A node only moves earlier, never before what it waits for, so the
  // order stays topological, and it is the same in every process.
  template <typename ForEachPredecessor>
  static void StartCollectivesEarly(std::vector<Node*>* order,
                                    const ForEachPredecessor& for_each_predecessor) {
    auto early = [](const Node* n) { return IsEarlyCollectiveOpType(n->type()); };
    if (std::none_of(order->begin(), order->end(), early)) return;
    std::unordered_map<const Node*, int> position;
    for (size_t i = 0; i < order->size(); ++i) position[(*order)[i]] = static_cast<int>(i);
    std::unordered_map<const Node*, std::vector<Node*>> right_after;  // early nodes per anchor
    std::vector<Node*> first;  // early nodes that wait for nothing in the plan
    for (Node* n : *order) {
      if (!early(n)) continue;
      const Node* anchor = nullptr;
      int latest = -1;
      for_each_predecessor(n, [&](const Node* pred) {
        auto p = position.find(pred);
        if (p != position.end() && p->second > latest) {
          latest = p->second;
          anchor = pred;
        }
      });
      (anchor == nullptr ? first : right_after[anchor]).push_back(n);
    }
    std::vector<Node*> reordered;
    reordered.reserve(order->size());
    std::function<void(Node*)> emit = [&](Node* n) {
      reordered.push_back(n);
      auto it = right_after.find(n);
      if (it == right_after.end()) return;
      for (Node* e : it->second) emit(e);
    };
    for (Node* n : first) emit(n);
    for (Node* n : *order) {
      if (!early(n)) emit(n);
    }
    *order = std::move(reordered);
  }

  // True when two expensive nodes sit at the same depth, so running them at once can pay.
  static bool HasCollective(const ExecutionPlan& plan) {
    for (const PlanNode& pn : plan.nodes)
      if (IsCollectiveOpType(pn.node->type())) return true;
    return false;
  }

  // A function's side effects keep the order they were written in, as TensorFlow's automatic
  // control dependencies keep a tf.function's: the nodes reading or writing one resource (a
  // variable read after an assign in the same function sees the assign) wait for one another in
  // plan order, which is the order of a sequential run, and so do the stateful nodes that touch
  // no resource. As in TensorFlow, nodes on different resources are not ordered: the updates of
  // different variables overlap with the gradients still being computed. Only those and pure
  // computation overlap when the plan runs in parallel.
  // Which resource a handle tensor names, as far as the body shows: a function argument, or a
  // variable by its shared name, seen through Identity nodes. Any other source (a handle out of
  // a call, a cond or a loop) may alias those, so all such handles share one key and stay ordered
  // with each other.
  static std::string ResourceKey(Endpoint handle) {
    while (handle.node->type() == "Identity" ||
           (handle.node->type() == "IdentityN" && handle.index < handle.node->num_inputs())) {
      handle = handle.node->input(handle.node->type() == "Identity" ? 0 : handle.index);
    }
    const Node& source = *handle.node;
    if (source.type() == "Placeholder" || source.type() == "_Arg") {
      return StrCat("argument ", source.id(), ":", handle.index);
    }
    if (source.type() == "VarHandleOp") {
      const std::string shared = source.attrs().GetOr<std::string>("shared_name", "");
      return StrCat("variable ", source.attrs().GetOr<std::string>("container", ""), "/",
                    shared.empty() ? source.name() : shared);
    }
    return "other";
  }

  static void OrderSideEffects(ExecutionPlan* plan) {
    auto after = [plan](int previous, int i) {
      std::vector<int>& successors = plan->nodes[previous].successors;
      if (std::find(successors.begin(), successors.end(), i) == successors.end()) {
        successors.push_back(i);
        ++plan->nodes[i].num_predecessors;
      }
    };
    // The last node so far on each resource, and the last stateful node that touches none.
    std::map<std::string, int> last_on_resource;
    int last_without_resource = -1;
    for (int i = 0; i < static_cast<int>(plan->nodes.size()); ++i) {
      const Node& node = *plan->nodes[i].node;
      bool touches_resource = false;
      for (int k = 0; k < node.num_inputs(); ++k) {
        if (node.input_type(k) != DType::kResource) continue;
        touches_resource = true;
        auto [it, first] = last_on_resource.try_emplace(ResourceKey(node.input(k)), i);
        if (!first) {
          if (it->second != i) after(it->second, i);
          it->second = i;
        }
      }
      if (!touches_resource && node.is_stateful()) {
        if (last_without_resource >= 0) after(last_without_resource, i);
        last_without_resource = i;
      }
    }
    plan->roots.clear();
    for (int i = 0; i < static_cast<int>(plan->nodes.size()); ++i) {
      if (plan->nodes[i].num_predecessors == 0) plan->roots.push_back(i);
    }
  }

  static bool HasIndependentExpensiveNodes(const ExecutionPlan& plan) {
    std::vector<int> depth(plan.nodes.size(), 0);
    std::unordered_map<int, int> expensive_at_depth;
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      for (int succ : plan.nodes[i].successors) depth[succ] = std::max(depth[succ], depth[i] + 1);
      if (IsExpensive(*plan.nodes[i].node) && ++expensive_at_depth[depth[i]] >= 2) return true;
    }
    return false;
  }

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  std::shared_ptr<LimitedAllocator> limited_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_ptrs_;
  PlacementOptions placement_;
  ResourceMgr resources_;
  // Computes folded nodes (optimizer/plan_optimizer.h) in the process's memory: folded values are
  // constants, like the graph's, and not the session's tensors that a memory limit counts.
  std::unique_ptr<Device> fold_device_;
  FoldCache folded_;
  // The fused nodes its plans run in place of the user's (optimizer/plan_optimizer.h).
  FusionCache fusions_;

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  bool closed_ = false;
  int in_flight_ = 0;
  std::vector<CancellationToken*> running_;                    // the runs in flight
  uint64_t fork_generation_ = ProcessState::ForkGeneration();  // of in_flight_ and running_
  bool logged_mapping_header_ = false;
  // Keyed by node, not id: function bodies are graphs of their own.
  std::unordered_map<const Node*, Device*> placements_;
  std::unordered_set<const Node*> placing_;  // nodes whose colocation targets are being placed
  std::unordered_map<const Node*, std::unique_ptr<OpKernel>> kernels_;
  std::unordered_map<std::string, std::unique_ptr<SessionFunction>> functions_;
  std::unordered_map<CallableHandle, std::shared_ptr<ExecutionPlan>> callables_;
  std::unordered_map<std::string, CallableHandle> run_cache_;
  CallableHandle next_handle_ = 1;
  std::atomic<int64_t> next_step_{1};
};

}  // namespace

Status Session::Create(std::shared_ptr<Graph> graph, const SessionOptions& options,
                       std::unique_ptr<Session>* out) {
  if (graph == nullptr) return errors::InvalidArgument("Session::Create needs a graph");
  auto session = std::make_unique<DirectSession>(std::move(graph), options);
  FS_RETURN_IF_ERROR(session->Init());
  *out = std::move(session);
  return Status::OK();
}

}  // namespace flowstone
