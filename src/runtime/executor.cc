#include "executor.h"

#include <condition_variable>

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
  return file + ":" + last.substr(line_begin, line_end == std::string::npos ? std::string::npos
                                                                            : line_end - line_begin);
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
  std::lock_guard<std::mutex> lock(pool_mu_);
  free_states_.push_back(std::move(state));
}

Status ExecutionPlan::RunNode(int index, RunState& state, ResourceMgr* resources,
                              int64_t step_id) const {
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
  KernelContext::Params params;
  params.node = pn.node;
  params.device = pn.device;
  params.resources = resources;
  params.inputs = state.inputs.data() + base;
  params.forwardable = reinterpret_cast<const bool*>(state.forwardable.data() + base);
  params.outputs = state.slots.data() + pn.output_base;
  params.step_id = step_id;
  KernelContext ctx(params);
  Status s = pn.kernel->Compute(ctx);
  for (int i = 0; i < n_in; ++i) state.inputs[base + i] = Tensor();
  if (!s.ok()) return AnnotateNodeError(s, *pn.node, pn.device);
  return Status::OK();
}

Status ExecutionPlan::RunSequential(RunState& state, ResourceMgr* resources,
                                    int64_t step_id) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    FS_RETURN_IF_ERROR(RunNode(i, state, resources, step_id));
  }
  return Status::OK();
}

Status ExecutionPlan::RunParallel(RunState& state, ResourceMgr* resources, ThreadPool* pool,
                                  int64_t step_id) const {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<int> outstanding{0};
    std::atomic<bool> failed{false};
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
        Status s = RunNode(index, state, resources, step_id);
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
        shared.cv.notify_all();
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
  shared.cv.wait(lock, [&] { return shared.outstanding.load() == 0; });
  return shared.status;
}

Status ExecutionPlan::Run(std::vector<Tensor>& feed_values, std::vector<Tensor>* outputs,
                          ResourceMgr* resources, ThreadPool* inter_op_pool,
                          int64_t step_id) const {
  std::unique_ptr<RunState> state = AcquireState();
  for (int s = 0; s < num_slots; ++s) {
    state->slot_uses[s].store(slot_consumers[s], std::memory_order_relaxed);
  }
  for (size_t f = 0; f < feed_slots.size(); ++f) {
    state->slots[feed_slots[f]] = std::move(feed_values[f]);
  }
  for (const auto& [slot, value] : constants) state->slots[slot] = value;
  Status s = parallel && inter_op_pool != nullptr && inter_op_pool->num_threads() > 0
                 ? RunParallel(*state, resources, inter_op_pool, step_id)
                 : RunSequential(*state, resources, step_id);
  if (s.ok()) {
    outputs->resize(fetch_slots.size());
    for (size_t f = 0; f < fetch_slots.size(); ++f) {
      (*outputs)[f] = state->slots[fetch_slots[f]];
      if (!(*outputs)[f].initialized()) {
        s = errors::Internal("fetched tensor ", f, " was not produced");
        break;
      }
    }
  }
  ReleaseState(std::move(state));
  return s;
}

}  // namespace flowstone
