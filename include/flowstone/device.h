// Devices: where kernels run. Each device has a full TensorFlow name, a type ("CPU", "GPU") that
// selects kernels, an allocator and a pool for intra-op parallelism. Device backends (the CUDA
// plugin) implement this interface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flowstone/allocator.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "flowstone/thread_pool.h"

namespace flowstone {

// A parsed device specification; every field is optional.
struct DeviceSpec {
  std::string job;   // empty = any
  int replica = -1;  // -1 = any
  int task = -1;
  std::string type;  // "CPU", "GPU", empty = any (upper case)
  int id = -1;       // -1 = any

  // Parses "/job:localhost/replica:0/task:0/device:GPU:1", "/gpu:1", "/device:CPU:*", "gpu:0",
  // "" ... Fails with InvalidArgument showing the grammar.
  static Status Parse(const std::string& text, DeviceSpec* out);
  // Fields set in `inner` override those in `outer`, as nested tf.device scopes do.
  static DeviceSpec Merge(const DeviceSpec& outer, const DeviceSpec& inner);
  // True when every set field matches the device's.
  bool Matches(const DeviceSpec& device) const;
  bool empty() const;
  // The canonical string, e.g. "/job:localhost/device:GPU:1" (only the set fields).
  std::string ToString() const;
};

// The canonical local device name: "/job:localhost/replica:0/task:0/device:CPU:0".
std::string LocalDeviceName(const std::string& type, int id);

struct DeviceAttributes {
  std::string name;
  std::string device_type;
  int64_t memory_limit_bytes = 0;
  std::string description;
};

class Device {
 public:
  Device(std::string type, int id, Allocator* allocator, ThreadPool* intra_op_pool);
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  int id() const { return id_; }
  const DeviceSpec& spec() const { return spec_; }
  Allocator* allocator() const { return allocator_; }
  ThreadPool* intra_op_pool() const { return intra_op_pool_; }
  virtual DeviceAttributes attributes() const;

  // True when tensors on this device live in host memory (CPU devices), so that other host
  // devices may read them without a copy.
  virtual bool host_memory() const { return true; }
  // Copies between this device's memory and host memory, complete when the call returns. The
  // CPU device's share the buffer.
  virtual Status CopyToHost(const Tensor& device_tensor, Tensor* host_tensor);
  virtual Status CopyFromHost(const Tensor& host_tensor, Tensor* device_tensor);
  // Waits for the work queued on this device (a GPU stream); a no-op on the CPU.
  virtual Status Sync() { return Status::OK(); }
  // Extra lines for `Device mapping:` in the placement log, e.g. "name: NVIDIA H100, pci bus
  // id: 0000:00:04.0, compute capability: 9.0"; empty for the CPU.
  virtual std::string physical_description() const { return {}; }

 private:
  std::string type_;
  int id_;
  std::string name_;
  DeviceSpec spec_;
  Allocator* allocator_;
  ThreadPool* intra_op_pool_;
};

}  // namespace flowstone
