// GPU discovery: finds out, once per process and only when first needed, whether GPUs can be
// used, and explains why not when they cannot.
//
// It is lazy so that a program setting CUDA_VISIBLE_DEVICES before its first session (the first
// seed sets it to -1) is obeyed. It reads CUDA_VISIBLE_DEVICES, dlopens the CUDA driver, the
// CUDA runtime, cuBLAS(Lt) and cuDNN, logging each library that fails with the file name, the
// dlerror and the search path, then loads the backend plugin (libflowstone_cuda.so, beside
// libflowstone.so) and asks it for devices. Whatever fails, the process carries on with the CPU
// and `reason()` says why, for placement errors, tf.config and `flowstone doctor`.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/gpu_platform.h"

namespace flowstone {

// GPU settings of one session (ConfigProto.gpu_options and device_count) merged with the
// process-wide tf.config settings.
struct GpuSessionOptions {
  // device_count["GPU"]; -1 = every visible GPU.
  int max_devices = -1;
  // GPUOptions.visible_device_list, e.g. "1,0": GPU:0 is the second visible GPU.
  std::string visible_device_list;
  GpuMemoryOptions memory;
};

struct GpuDiscoveryReport {
  bool cuda_visible_devices_set = false;
  std::string cuda_visible_devices;
  std::vector<std::string> search_path;
  std::vector<GpuLibrary> libraries;
  std::string backend_path;
  bool backend_loaded = false;
  std::string backend_error;
  std::string platform_name;
  std::string driver_version;
  std::vector<GpuDeviceInfo> devices;
  // Why no GPU can be used; empty when at least one can.
  std::string reason;
};

// `configured`, unless TF_FORCE_GPU_ALLOW_GROWTH is "true" or "false" (another value is reported
// on stderr and ignored). TensorFlow's variable overrides the config; users set it for both.
bool GpuAllowGrowth(bool configured);

class GpuDiscovery {
 public:
  static GpuDiscovery& Get();

  // Runs discovery on the first call (thread-safe); later calls return at once.
  void EnsureDiscovered();
  // What discovery found (runs it if needed). With `read_free_memory`, each GPU's free memory is
  // read now, which creates a CUDA context (hundreds of MB) on every GPU: for the doctor only.
  GpuDiscoveryReport Report(bool read_free_memory);
  // Why no GPU can be used, or "" (runs discovery if needed).
  std::string reason();
  // Physical GPUs usable by this process after tf.config.set_visible_devices (runs discovery).
  std::vector<GpuDeviceInfo> visible_devices();

  // tf.config.set_visible_devices for GPUs: the physical ordinals to use, in order.
  void SetVisibleOrdinals(std::vector<int> ordinals);
  // tf.config memory settings for one physical GPU; they override a session's gpu_options.
  void SetMemoryGrowth(int ordinal, bool enable);
  void SetMemoryLimit(int ordinal, int64_t bytes);
  // The allocator statistics of visible GPU `index` (GPU:<index> in tf.config's numbering).
  Status GetMemoryStats(int index, AllocatorStats* stats);

  // The GPU devices of a new session: GPU:0..n-1 mapped through visible_device_list. Fails with
  // InvalidArgument for a malformed or out-of-range visible_device_list.
  Status CreateSessionDevices(const GpuSessionOptions& options, ThreadPool* intra_op_pool,
                              std::vector<std::unique_ptr<Device>>* out);

 private:
  GpuDiscovery() = default;
  void Discover();
  bool LoadLibraries();
  void LoadPlatform();

  std::once_flag once_;
  std::mutex mu_;
  GpuDiscoveryReport report_;
  GpuPlatform* platform_ = nullptr;    // owned for the whole process (never unloaded)
  std::vector<int> visible_ordinals_;  // empty = all
  bool visible_set_ = false;
  std::vector<int> growth_;           // per ordinal: -1 unset, 0, 1
  std::vector<int64_t> limit_bytes_;  // per ordinal: 0 unset
};

}  // namespace flowstone
