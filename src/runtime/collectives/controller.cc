// The background thread of the collectives: each cycle (HOROVOD_CYCLE_TIME) it sends rank 0 the
// tensors submitted since the last cycle, receives the list of operations every rank runs now
// (fused allreduces, allgathers, broadcasts, alltoalls, errors) and runs them in that order, so
// every rank makes the same transport calls in the same order. Only this thread calls the
// transport.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "flowstone/collectives.h"
#include "flowstone/logging.h"
#include "runtime/collectives/negotiation.h"
#include "runtime/collectives/timeline.h"
#include "runtime/collectives/transports.h"

namespace flowstone {

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce:
      return "allreduce";
    case CollectiveKind::kAllgather:
      return "allgather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAlltoall:
      return "alltoall";
  }
  return "unknown collective";
}

namespace collectives {
namespace {

std::mutex& CollectiveTypesMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::shared_ptr<DeviceCollectives>>& DeviceCollectivesTable() {
  static std::map<std::string, std::shared_ptr<DeviceCollectives>> table;
  return table;
}

std::shared_ptr<DeviceCollectives> DeviceCollectivesFor(const std::string& device_type) {
  std::lock_guard<std::mutex> lock(CollectiveTypesMutex());
  auto it = DeviceCollectivesTable().find(device_type);
  return it == DeviceCollectivesTable().end() ? nullptr : it->second;
}

std::set<std::string>& CollectiveTypes() {
  static std::set<std::string> types;
  return types;
}

constexpr const char* kLog = "flowstone/horovod";

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string UpperKind(CollectiveKind kind) {
  std::string s = CollectiveKindName(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// data[i] *= factor for `count` elements of `dtype` (integers are truncated, as Horovod's
// average of integers is).
void Scale(void* data, int64_t count, DType dtype, double factor) {
  if (factor == 1.0) return;
  auto scale = [&]<typename T>(T* p) {
    for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] * factor);
  };
  switch (dtype) {
    case DType::kFloat32:
      return scale(static_cast<float*>(data));
    case DType::kFloat64:
      return scale(static_cast<double*>(data));
    case DType::kInt32:
      return scale(static_cast<int32_t*>(data));
    case DType::kInt64:
      return scale(static_cast<int64_t*>(data));
    case DType::kFloat16: {
      Half* p = static_cast<Half*>(data);
      for (int64_t i = 0; i < count; ++i) p[i] = Half(static_cast<float>(p[i]) * factor);
      return;
    }
    default:
      return;
  }
}

struct Entry {
  CollectiveRequest request;
  CollectiveDone done;
};

class Controller {
 public:
  Controller(const CollectiveOptions& options, std::unique_ptr<CollectiveTransport> transport)
      : options_(options), transport_(std::move(transport)) {
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
    std::vector<CollectiveResult> results(entries.size());
    Status s = resp.error_code == Code::kOk ? Run(resp, entries, &results)
                                            : Status(resp.error_code, resp.error);
    for (size_t i = 0; i < entries.size(); ++i) {
      timeline_.End(entries[i].request.name, UpperKind(resp.kind));
      entries[i].done(s, s.ok() ? std::move(results[i]) : CollectiveResult{});
    }
  }

  Status Run(const Response& resp, std::vector<Entry>& entries,
             std::vector<CollectiveResult>* results) {
    if (entries.size() != resp.names.size()) {
      return errors::Internal("Horovod: rank 0 scheduled tensors this rank never submitted");
    }
    if (entries[0].request.device != nullptr) return RunOnDevice(resp, entries, results);
    switch (resp.kind) {
      case CollectiveKind::kAllreduce:
        return Allreduce(entries, results);
      case CollectiveKind::kAllgather:
        return Allgather(entries[0].request, resp.sizes, &(*results)[0]);
      case CollectiveKind::kBroadcast: {
        const CollectiveRequest& q = entries[0].request;
        Tensor out = Tensor::Host(q.input.dtype(), q.input.shape());
        std::memcpy(out.raw_data(), q.input.raw_data(), q.input.bytes());
        FS_RETURN_IF_ERROR(transport_->Broadcast(out.raw_data(), out.bytes(), q.root));
        (*results)[0].output = std::move(out);
        return Status::OK();
      }
      case CollectiveKind::kAlltoall:
        return Alltoall(entries[0].request, resp.sizes, &(*results)[0]);
    }
    return errors::Internal("Horovod: unknown collective kind");
  }

  // Tensors in a device's own memory: the device type's DeviceCollectives (NCCL for GPUs).
  Status RunOnDevice(const Response& resp, std::vector<Entry>& entries,
                     std::vector<CollectiveResult>* results) {
    Device* device = entries[0].request.device;
    std::shared_ptr<DeviceCollectives> impl = DeviceCollectivesFor(device->type());
    if (impl == nullptr) {
      return errors::Unimplemented("Horovod ", CollectiveKindName(resp.kind), " of tensors in ",
                                   device->type(), " memory needs the ", device->type(),
                                   " plugin's collectives (NCCL for GPUs), which are not loaded");
    }
    const CollectiveRequest& q = entries[0].request;
    switch (resp.kind) {
      case CollectiveKind::kAllreduce: {
        // One call for the averaged tensors of the fused group and one for the summed ones.
        for (const bool average : {true, false}) {
          std::vector<size_t> members;
          std::vector<Tensor> inputs, outputs;
          for (size_t i = 0; i < entries.size(); ++i) {
            const CollectiveRequest& e = entries[i].request;
            if (e.prescale != 1.0 || e.postscale != 1.0) {
              return errors::Unimplemented(
                  "Horovod allreduce of a GPU tensor with "
                  "prescale_factor or postscale_factor other than 1; "
                  "scale the tensor instead");
            }
            if ((e.reduce_op == ReduceOp::kAverage) != average) continue;
            members.push_back(i);
            inputs.push_back(e.input);
          }
          if (members.empty()) continue;
          FS_RETURN_IF_ERROR(impl->Allreduce(*transport_, device, inputs, average, &outputs));
          for (size_t k = 0; k < members.size(); ++k)
            (*results)[members[k]].output = std::move(outputs[k]);
        }
        return Status::OK();
      }
      case CollectiveKind::kAllgather:
        return impl->Allgather(*transport_, device, q.input, resp.sizes, &(*results)[0].output);
      case CollectiveKind::kBroadcast:
        return impl->Broadcast(*transport_, device, q.input, q.root, &(*results)[0].output);
      case CollectiveKind::kAlltoall:
        break;
    }
    return errors::Unimplemented("Horovod ", CollectiveKindName(resp.kind), " of tensors in ",
                                 device->type(), " memory");
  }

  // One allreduce over a buffer holding every tensor of the response back to back (the fusion
  // buffer), or over the tensor's own output when it is alone.
  Status Allreduce(std::vector<Entry>& entries, std::vector<CollectiveResult>* results) {
    const DType dtype = entries[0].request.input.dtype();
    const int size = transport_->size();
    auto postscale = [&](const CollectiveRequest& q) {
      return q.postscale / (q.reduce_op == ReduceOp::kAverage ? size : 1);
    };
    for (size_t i = 0; i < entries.size(); ++i) {
      const Tensor& in = entries[i].request.input;
      (*results)[i].output = Tensor::Host(dtype, in.shape());
    }
    if (entries.size() == 1) {
      const CollectiveRequest& q = entries[0].request;
      Tensor& out = (*results)[0].output;
      std::memcpy(out.raw_data(), q.input.raw_data(), q.input.bytes());
      Scale(out.raw_data(), out.num_elements(), dtype, q.prescale);
      FS_RETURN_IF_ERROR(transport_->Allreduce(out.raw_data(), out.num_elements(), dtype));
      Scale(out.raw_data(), out.num_elements(), dtype, postscale(q));
      return Status::OK();
    }
    int64_t total = 0;
    for (const Entry& e : entries) total += e.request.input.num_elements();
    fusion_buffer_.resize(total * DTypeSize(dtype));
    char* p = fusion_buffer_.data();
    for (const Entry& e : entries) {
      const Tensor& in = e.request.input;
      std::memcpy(p, in.raw_data(), in.bytes());
      Scale(p, in.num_elements(), dtype, e.request.prescale);
      p += in.bytes();
    }
    FS_RETURN_IF_ERROR(transport_->Allreduce(fusion_buffer_.data(), total, dtype));
    p = fusion_buffer_.data();
    for (size_t i = 0; i < entries.size(); ++i) {
      Tensor& out = (*results)[i].output;
      std::memcpy(out.raw_data(), p, out.bytes());
      Scale(out.raw_data(), out.num_elements(), dtype, postscale(entries[i].request));
      p += out.bytes();
    }
    return Status::OK();
  }

  static int64_t RowBytes(const Tensor& t) {
    int64_t row = static_cast<int64_t>(DTypeSize(t.dtype()));
    for (int d = 1; d < t.rank(); ++d) row *= t.dim(d);
    return row;
  }

  static TensorShape WithFirstDim(const TensorShape& shape, int64_t first) {
    std::vector<int64_t> dims = shape.ToVector();
    dims[0] = first;
    return TensorShape(dims);
  }

  Status Allgather(const CollectiveRequest& q, const std::vector<int64_t>& sizes,
                   CollectiveResult* result) {
    const int64_t row = RowBytes(q.input);
    std::vector<int64_t> recv_bytes;
    int64_t rows = 0;
    for (int64_t n : sizes) {
      recv_bytes.push_back(n * row);
      rows += n;
    }
    result->output = Tensor::Host(q.input.dtype(), WithFirstDim(q.input.shape(), rows));
    return transport_->Allgatherv(q.input.raw_data(), q.input.bytes(), result->output.raw_data(),
                                  recv_bytes);
  }

  Status Alltoall(const CollectiveRequest& q, const std::vector<int64_t>& matrix,
                  CollectiveResult* result) {
    const int size = transport_->size();
    const int rank = transport_->rank();
    const int64_t row = RowBytes(q.input);
    std::vector<int64_t> send_bytes, recv_bytes;
    int64_t rows = 0;
    for (int peer = 0; peer < size; ++peer) {
      send_bytes.push_back(matrix[rank * size + peer] * row);
      const int64_t received = matrix[peer * size + rank];
      recv_bytes.push_back(received * row);
      result->received_splits.push_back(received);
      rows += received;
    }
    result->output = Tensor::Host(q.input.dtype(), WithFirstDim(q.input.shape(), rows));
    return transport_->Alltoallv(q.input.raw_data(), send_bytes, result->output.raw_data(),
                                 recv_bytes);
  }

  const CollectiveOptions options_;
  std::unique_ptr<CollectiveTransport> transport_;
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
  std::vector<char> fusion_buffer_;
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

void RegisterDeviceCollectives(const std::string& device_type,
                               std::shared_ptr<DeviceCollectives> collectives) {
  std::lock_guard<std::mutex> lock(collectives::CollectiveTypesMutex());
  collectives::DeviceCollectivesTable()[device_type] = std::move(collectives);
}

void RegisterCollectiveOpType(const std::string& type) {
  std::lock_guard<std::mutex> lock(collectives::CollectiveTypesMutex());
  collectives::CollectiveTypes().insert(type);
}

bool IsCollectiveOpType(const std::string& type) {
  std::lock_guard<std::mutex> lock(collectives::CollectiveTypesMutex());
  return collectives::CollectiveTypes().count(type) > 0;
}

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
