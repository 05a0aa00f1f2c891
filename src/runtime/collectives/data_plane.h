// The data plane: runs one negotiated operation on this rank's tensors, on host memory through
// the transport (fusing a group of allreduces in one buffer), or on a device's memory through
// the DeviceCollectives registered for its type (NCCL for GPUs). Called by the background thread
// only, in the same order on every rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flowstone/collectives.h"
#include "runtime/collectives/negotiation.h"

namespace flowstone::collectives {

class DataPlane {
 public:
  explicit DataPlane(CollectiveTransport* transport) : transport_(transport) {}

  // `requests` are this rank's tensors named by `resp`, in its order; results[i] receives the
  // output of requests[i].
  Status Run(const Response& resp, const std::vector<const CollectiveRequest*>& requests,
             std::vector<CollectiveResult>* results);

 private:
  Status Allreduce(const std::vector<const CollectiveRequest*>& requests,
                   std::vector<CollectiveResult>* results);
  Status Allgather(const CollectiveRequest& q, const std::vector<int64_t>& rows,
                   CollectiveResult* result);
  Status Broadcast(const CollectiveRequest& q, CollectiveResult* result);
  Status Alltoall(const CollectiveRequest& q, const std::vector<int64_t>& matrix,
                  CollectiveResult* result);
  Status RunOnDevice(const Response& resp, const std::vector<const CollectiveRequest*>& requests,
                     std::vector<CollectiveResult>* results);

  CollectiveTransport* transport_;
  std::vector<char> fusion_buffer_;  // kept between calls: its size settles after a few steps
};

// The collectives registered for a device type, or nullptr (registry.cc).
std::shared_ptr<DeviceCollectives> DeviceCollectivesFor(const std::string& device_type);

}  // namespace flowstone::collectives
