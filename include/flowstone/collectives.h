// Collective operations across processes (data-parallel training with Horovod's API).
//
// Kernels of the Horovod* ops enqueue tensors with EnqueueCollective; a background thread per
// process negotiates with the other processes which tensors every process has submitted (rank 0
// decides the order), fuses small allreduces into one buffer and runs them through a
// CollectiveTransport. The transport is Open MPI, in a plugin (libflowstone_mpi.so) that
// InitCollectives loads at run time, so the core never needs MPI to load; without a launcher
// the process runs alone (size 1) on a built-in local transport.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/device.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "flowstone/types.h"

namespace flowstone {

// What a transport moves bytes with. Every call is collective: all ranks make it, in the same
// order, from the background thread only.
class CollectiveTransport {
 public:
  virtual ~CollectiveTransport() = default;
  // "Open MPI v4.1.4", "local (no launcher)".
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual int cross_rank() const = 0;
  virtual int cross_size() const = 0;
  // Whether the library allows calls from several threads (MPI_THREAD_MULTIPLE).
  virtual bool threads_supported() const = 0;

  // The control plane. Rank 0 receives one message from every rank (its own included, at index
  // 0); other ranks send theirs. A rank that sends nothing for `timeout_s` seconds makes rank 0
  // return Unavailable naming it.
  virtual Status GatherToRoot(const std::string& mine, std::vector<std::string>* all,
                              double timeout_s) = 0;
  // Rank 0's `message` reaches every rank. Rank 0 may itself have waited `timeout_s` for a
  // missing rank before it answers (naming that rank), so the others return Unavailable naming
  // rank 0 only after hearing nothing for 2 * timeout_s + 1 seconds.
  virtual Status BroadcastFromRoot(std::string* message, double timeout_s) = 0;

  // The data plane. Sums `count` elements of `dtype` in place across ranks.
  virtual Status Allreduce(void* data, int64_t count, DType dtype) = 0;
  // Concatenates each rank's bytes in rank order; recv_bytes[r] is rank r's byte count.
  virtual Status Allgatherv(const void* send, int64_t send_bytes, void* recv,
                            const std::vector<int64_t>& recv_bytes) = 0;
  // Copies root's bytes to every rank.
  virtual Status Broadcast(void* data, int64_t bytes, int root) = 0;
  // Rank r's send_bytes[q] bytes (consecutive in `send`) go to rank q; recv_bytes[q] come from q.
  virtual Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                           const std::vector<int64_t>& recv_bytes) = 0;
};

// Collectives on tensors in a device's own memory (NCCL for GPUs), registered by the device's
// plugin. The background thread calls them instead of the transport's data plane, in the same
// order on every rank; `transport` carries the library's own setup (NCCL's unique id).
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  // Each input reduced over the ranks into a new tensor in `device`'s memory: summed, or
  // averaged when `average`.
  virtual Status Allreduce(CollectiveTransport& transport, Device* device,
                           const std::vector<Tensor>& inputs, bool average,
                           std::vector<Tensor>* outputs) = 0;
  // The ranks' inputs concatenated along the first dimension; rank r gives rows[r] rows.
  virtual Status Allgather(CollectiveTransport& transport, Device* device, const Tensor& input,
                           const std::vector<int64_t>& rows, Tensor* output) = 0;
  // Rank `root`'s input on every rank.
  virtual Status Broadcast(CollectiveTransport& transport, Device* device, const Tensor& input,
                           int root, Tensor* output) = 0;
};
// Makes `collectives` run the collectives of tensors in memory of devices of `device_type`.
void RegisterDeviceCollectives(const std::string& device_type,
                               std::shared_ptr<DeviceCollectives> collectives);

// Op types whose kernels block until every process runs the same op (Horovod's collectives).
// A plan holding one runs its nodes one at a time in plan order, which every process shares: run
// in parallel, a process could block its threads in collectives its peers have not reached.
void RegisterCollectiveOpType(const std::string& type);
bool IsCollectiveOpType(const std::string& type);
// Collective op types that only submit their work and return (HorovodAllreduceStart): a plan
// runs each as soon as its inputs exist, so the collective overlaps with the nodes after it.
void RegisterEarlyCollectiveOpType(const std::string& type);
bool IsEarlyCollectiveOpType(const std::string& type);

// The entry point a transport plugin exports (extern "C"); returns nullptr and sets *error when
// the library cannot start.
using CreateTransportFn = CollectiveTransport* (*)(std::string* error);
inline constexpr const char* kCreateMpiTransportSymbol = "flowstone_create_mpi_transport";

enum class CollectiveKind : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3
};
const char* CollectiveKindName(CollectiveKind kind);  // "allreduce", ...

// Horovod's reduce ops (their attr values on HorovodAllreduce).
enum class ReduceOp : int32_t { kAverage = 0, kSum = 1, kAdasum = 2 };

struct CollectiveOptions {
  // Force the local size-1 transport, or (empty) decide from the environment: a launcher
  // (mpirun, flowstone-run) sets OMPI_COMM_WORLD_SIZE or PMI_SIZE.
  bool force_local = false;
  // The MPI plugin's path; empty = beside libflowstone.so.
  std::string plugin_path;
  // HOROVOD_FUSION_THRESHOLD (bytes, default 64 MiB; 0 disables fusion) and HOROVOD_CYCLE_TIME
  // (milliseconds, default 1).
  int64_t fusion_threshold = 64 << 20;
  double cycle_time_ms = 1.0;
  // HOROVOD_TIMELINE: a Chrome trace written by rank 0; empty = none.
  std::string timeline_path;
  // How long a tensor may wait for the other ranks to submit it, and how long a rank may stay
  // silent, before every rank fails with an error naming the ranks missing
  // (FLOWSTONE_HOROVOD_TIMEOUT_SECONDS or HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, default 60).
  double timeout_s = 60.0;
};

// Reads the HOROVOD_* variables named above into options.
CollectiveOptions CollectiveOptionsFromEnvironment();

// Starts the background thread (once per process); a second call is a no-op. Fails with
// NotFound naming the library when the launcher asks for MPI and Open MPI cannot be loaded.
Status InitCollectives(const CollectiveOptions& options);
// Stops the background thread: pending collectives here and on the other ranks fail with
// Aborted. MPI is finalized, so collectives cannot start again in this process.
Status ShutdownCollectives();
bool CollectivesInitialized();

struct CollectiveTopology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool threads_supported = false;
  std::string transport;
};
// FailedPrecondition before InitCollectives.
Status GetCollectiveTopology(CollectiveTopology* out);

// One tensor submitted by a kernel. `name` must be the same on every rank and unique among the
// collectives in flight.
struct CollectiveRequest {
  std::string name;
  CollectiveKind kind = CollectiveKind::kAllreduce;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0, postscale = 1.0;
  int root = 0;                 // broadcast
  std::vector<int64_t> splits;  // alltoall: rows of the first dimension sent to each rank
  Tensor input;
  // The device whose own memory holds `input` and receives the output (a GPU); nullptr for
  // host memory. Such tensors go to the device type's DeviceCollectives.
  Device* device = nullptr;
};
struct CollectiveResult {
  Tensor output;
  std::vector<int64_t> received_splits;  // alltoall
};
using CollectiveDone = std::function<void(const Status&, CollectiveResult)>;

// Hands a tensor to the background thread; `done` runs there once every rank has submitted it
// and the operation finished, or with the error that stopped it.
void EnqueueCollective(CollectiveRequest request, CollectiveDone done);

}  // namespace flowstone
