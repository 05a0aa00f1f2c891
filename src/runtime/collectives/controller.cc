// The background thread of the collectives: each cycle (HOROVOD_CYCLE_TIME) it sends rank 0 the
// tensors submitted since the last cycle, receives the list of operations every rank runs now
// (fused allreduces, allgathers, broadcasts, alltoalls, errors) and runs them in that order, so
// every rank makes the same transport calls in the same order. Only this thread calls the
// transport.
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "flowstone/collectives.h"
#include "flowstone/logging.h"
#include "runtime/collectives/data_plane.h"
#include "runtime/collectives/negotiation.h"
#include "runtime/collectives/timeline.h"
#include "runtime/collectives/transports.h"

namespace flowstone {

namespace collectives {
namespace {

constexpr const char* kLog = "flowstone/horovod";

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string UpperKind(CollectiveKind kind) {
  std::string s = CollectiveKindName(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Entry {
  CollectiveRequest request;
  CollectiveDone done;
};

class Controller {
 public:
  Controller(const CollectiveOptions& options, std::unique_ptr<CollectiveTransport> transport)
      : options_(options), transport_(std::move(transport)), data_plane_(transport_.get()) {
    if (transport_->rank() == 0) {
      coordinator_ = std::make_unique<Coordinator>(transport_->size(), options.fusion_threshold,
                                                   options.timeout_s);
      if (!options.timeline_path.empty() && !timeline_.Open(options.timeline_path)) {
        LogWarning(kLog, "Cannot write the timeline to '", options.timeline_path,
                   "': ", std::strerror(errno), "; HOROVOD_TIMELINE is ignored.");
      }
    }
    thread_ = std::thread([this] { Loop(); });
  }

  ~Controller() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_requested_ = true;
    }
    cv_.notify_all();
    thread_.join();
    timeline_.Close();
  }

  CollectiveTransport& transport() { return *transport_; }

  void Enqueue(CollectiveRequest request, CollectiveDone done) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) {
      Status s = final_status_;
      lock.unlock();
      done(s, {});
      return;
    }
    queue_.push_back({std::move(request), std::move(done)});
    lock.unlock();
    cv_.notify_all();
  }

 private:
  void Loop() {
    auto next = std::chrono::steady_clock::now();
    const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(options_.cycle_time_ms));
    const bool alone = transport_->size() == 1;
    Status final_status = errors::Aborted(
        "Horovod has been shut down (hvd.shutdown() or the end of the program); no more "
        "collectives can run in this process");
    while (true) {
      RankMessage message;
      std::vector<Entry> fresh;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (alone) {
          // No peers to keep in step with: wake only for work.
          cv_.wait(lock, [&] { return stop_requested_ || !queue_.empty(); });
        } else {
          cv_.wait_until(lock, next, [&] { return stop_requested_; });
        }
        message.shutdown = stop_requested_;
        fresh.assign(std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
        queue_.clear();
      }
      next = std::chrono::steady_clock::now() + cycle;
      for (Entry& e : fresh) Submit(std::move(e), &message);
      ResponseList list;
      Status s = Negotiate(message, &list);
      if (!s.ok()) {
        final_status = s;
        break;
      }
      for (const Response& resp : list.responses) Perform(resp);
      timeline_.Flush();
      if (list.shutdown) {
        final_status = Status(list.shutdown_code, list.shutdown_reason);
        break;
      }
    }
    // Nothing is left for pending tensors: fail them, and every later submission.
    std::vector<Entry> orphans;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      final_status_ = final_status;
      for (Entry& e : queue_) orphans.push_back(std::move(e));
      queue_.clear();
    }
    for (auto& [name, e] : table_) orphans.push_back(std::move(e));
    table_.clear();
    for (Entry& e : orphans) e.done(final_status, {});
    if (!final_status.message().starts_with("Horovod has been shut down") &&
        final_status.code() != Code::kAborted) {
      LogWarning(kLog, final_status.message());
    }
  }

  // Moves a kernel's tensor into the table of tensors waiting for the other ranks.
  void Submit(Entry e, RankMessage* message) {
    const std::string& name = e.request.name;
    if (table_.count(name)) {
      e.done(errors::FailedPrecondition("Horovod: a collective named '", name,
                                        "' is already in flight on this rank; "
                                        "two collectives running at once need different names"),
             {});
      return;
    }
    RequestInfo info;
    info.name = name;
    info.kind = e.request.kind;
    info.dtype = e.request.input.dtype();
    info.shape = e.request.input.shape().ToVector();
    info.root = e.request.root;
    info.splits = e.request.splits;
    info.on_device = e.request.device != nullptr;
    message->requests.push_back(std::move(info));
    timeline_.Begin(name, "NEGOTIATE_" + UpperKind(e.request.kind));
    table_.emplace(name, std::move(e));
  }

  Status Negotiate(const RankMessage& message, ResponseList* list) {
    const double timeout = options_.timeout_s;
    std::vector<std::string> all;
    Status gathered = transport_->GatherToRoot(Serialize(message), &all, timeout);
    std::string bytes;
    if (transport_->rank() == 0) {
      if (gathered.ok()) {
        const double now = NowSeconds();
        for (int r = 0; r < static_cast<int>(all.size()) && gathered.ok(); ++r) {
          RankMessage m;
          gathered = Parse(all[r], &m);
          coordinator_->Add(r, m, now);
        }
        if (gathered.ok()) *list = coordinator_->Compute(now);
      }
      if (!gathered.ok()) {
        list->shutdown = true;
        list->shutdown_code = gathered.code();
        list->shutdown_reason = gathered.message();
      }
      bytes = Serialize(*list);
    }
    Status sent = transport_->BroadcastFromRoot(&bytes, timeout);
    if (transport_->rank() == 0) return gathered.ok() ? sent : gathered;
    FS_RETURN_IF_ERROR(sent);
    return Parse(bytes, list);
  }

  void Perform(const Response& resp) {
    std::vector<Entry> entries;
    for (const std::string& name : resp.names) {
      auto it = table_.find(name);
      if (it == table_.end()) continue;  // only an error for tensors this rank never sent
      timeline_.End(name, "NEGOTIATE_" + UpperKind(resp.kind));
      timeline_.Begin(name, UpperKind(resp.kind));
      entries.push_back(std::move(it->second));
      table_.erase(it);
    }
    std::vector<const CollectiveRequest*> requests;
    for (const Entry& e : entries) requests.push_back(&e.request);
    std::vector<CollectiveResult> results(entries.size());
    Status s = resp.error_code == Code::kOk ? data_plane_.Run(resp, requests, &results)
                                            : Status(resp.error_code, resp.error);
    for (size_t i = 0; i < entries.size(); ++i) {
      timeline_.End(entries[i].request.name, UpperKind(resp.kind));
      entries[i].done(s, s.ok() ? std::move(results[i]) : CollectiveResult{});
    }
  }

  const CollectiveOptions options_;
  std::unique_ptr<CollectiveTransport> transport_;
  DataPlane data_plane_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  Timeline timeline_;                         // rank 0 only, when asked for

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;  // submitted by kernels, not yet seen by the loop
  bool stop_requested_ = false;
  bool finished_ = false;
  Status final_status_;

  // Loop thread only.
  std::unordered_map<std::string, Entry> table_;
  std::thread thread_;
};

std::mutex g_mu;
std::unique_ptr<Controller> g_controller;
bool g_mpi_used = false;  // MPI cannot start again once finalized

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

}  // namespace
}  // namespace collectives

CollectiveOptions CollectiveOptionsFromEnvironment() {
  using collectives::EnvDouble;
  CollectiveOptions o;
  o.fusion_threshold =
      static_cast<int64_t>(EnvDouble("HOROVOD_FUSION_THRESHOLD", double(o.fusion_threshold)));
  o.cycle_time_ms = EnvDouble("HOROVOD_CYCLE_TIME", o.cycle_time_ms);
  if (const char* t = std::getenv("HOROVOD_TIMELINE")) o.timeline_path = t;
  o.timeout_s = EnvDouble("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", o.timeout_s);
  o.timeout_s = EnvDouble("FLOWSTONE_HOROVOD_TIMEOUT_SECONDS", o.timeout_s);
  return o;
}

Status InitCollectives(const CollectiveOptions& options) {
  using namespace collectives;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_controller) return Status::OK();
  std::unique_ptr<CollectiveTransport> transport;
  if (!options.force_local && LaunchedByMpi()) {
    if (g_mpi_used) {
      return errors::FailedPrecondition(
          "hvd.init() after hvd.shutdown(): MPI cannot be started twice in one process");
    }
    FS_RETURN_IF_ERROR(LoadMpiTransport(options.plugin_path, &transport));
    g_mpi_used = true;
  } else {
    transport = MakeLocalTransport();
    if (!options.force_local) {
      LogInfo(kLog, "hvd.init() found no launcher (mpirun, flowstone-run): running as a single ",
              "process (size 1).");
    }
  }
  g_controller = std::make_unique<Controller>(options, std::move(transport));
  return Status::OK();
}

Status ShutdownCollectives() {
  std::unique_ptr<collectives::Controller> controller;
  {
    std::lock_guard<std::mutex> lock(collectives::g_mu);
    controller = std::move(collectives::g_controller);
  }
  controller.reset();  // joins the loop, then finalizes MPI with the transport
  return Status::OK();
}

bool CollectivesInitialized() {
  std::lock_guard<std::mutex> lock(collectives::g_mu);
  return collectives::g_controller != nullptr;
}

Status GetCollectiveTopology(CollectiveTopology* out) {
  std::lock_guard<std::mutex> lock(collectives::g_mu);
  if (!collectives::g_controller) {
    return errors::FailedPrecondition("Horovod has not been initialized; call hvd.init() first");
  }
  CollectiveTransport& t = collectives::g_controller->transport();
  *out = {t.rank(),       t.size(),       t.local_rank(),        t.local_size(),
          t.cross_rank(), t.cross_size(), t.threads_supported(), t.name()};
  return Status::OK();
}

void EnqueueCollective(CollectiveRequest request, CollectiveDone done) {
  std::unique_lock<std::mutex> lock(collectives::g_mu);
  if (!collectives::g_controller) {
    lock.unlock();
    done(errors::FailedPrecondition("Horovod has not been initialized; call hvd.init() before ",
                                    "running a Horovod collective"),
         {});
    return;
  }
  collectives::g_controller->Enqueue(std::move(request), std::move(done));
}

}  // namespace flowstone
