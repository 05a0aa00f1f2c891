// The interface between the core and a GPU backend plugin.
//
// The core never links against CUDA. At the first moment devices are needed (a session, or a
// tf.config call), GPU discovery (src/runtime/gpu_discovery.cc) reads CUDA_VISIBLE_DEVICES,
// dlopens the vendor libraries one by one (logging each that fails), then dlopens the backend
// plugin (libflowstone_cuda.so, next to libflowstone.so) and calls its entry point:
//
//   extern "C" flowstone::GpuPlatform* flowstone_create_gpu_platform(
//       const flowstone::GpuPlatformParams* params, std::string* error);
//
// The plugin registers its kernels with OpRegistry::RegisterKernel("GPU") from static
// registrars, which run when it is loaded. Tests load a fake platform through the same entry
// point, so discovery, placement, copies and memory options are tested on machines without GPUs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/device.h"
#include "flowstone/status.h"
#include "flowstone/thread_pool.h"

namespace flowstone {

// One vendor library discovery tried to load, e.g. {"cuBLAS", "libcublas.so.13", ...}.
struct GpuLibrary {
  std::string name;       // "CUDA driver", "CUDA runtime", "cuBLAS", "cuBLASLt", "cuDNN"
  std::string file;       // the file name asked for: "libcudart.so.13"
  bool required = false;  // without it no GPU can be used
  bool loaded = false;
  std::string path;           // where it was found, when loaded
  std::string error;          // dlerror() when not loaded
  std::string found_version;  // "13.0", reported by the library itself, when loaded
  std::string built_version;  // the version the backend was compiled against
  void* handle = nullptr;     // the dlopen handle (owned by discovery, never closed)
};

// What the core hands the plugin's entry point.
struct GpuPlatformParams {
  int abi_version = 1;
  // The libraries discovery loaded, with their handles for dlsym.
  const std::vector<GpuLibrary>* libraries = nullptr;
};

// A physical GPU as the backend sees it.
struct GpuDeviceInfo {
  int ordinal = 0;  // CUDA's device index after CUDA_VISIBLE_DEVICES
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;
  std::string pci_bus_id;
  int multiprocessor_count = 0;
  double clock_ghz = 0;
  double memory_bandwidth_gbs = 0;
};

// Memory settings for one GPU device (GPUOptions and tf.config).
struct GpuMemoryOptions {
  // An explicit limit (a logical device's memory_limit); 0 = use the fraction or the default.
  int64_t memory_limit_bytes = 0;
  // GPUOptions.per_process_gpu_memory_fraction; 0 = the default reserve rule.
  double memory_fraction = 0;
  // Grow regions on demand instead of reserving the whole limit at once.
  bool allow_growth = false;
};

class GpuPlatform {
 public:
  virtual ~GpuPlatform() = default;
  // "CUDA".
  virtual std::string name() const = 0;
  // The driver's version, e.g. "13.0", or why it could not be read.
  virtual std::string driver_version() const = 0;
  // Physical GPUs visible to this process.
  virtual int device_count() const = 0;
  virtual Status GetDeviceInfo(int ordinal, GpuDeviceInfo* info) const = 0;
  // Memory free on the device now (for doctor and GPU memory defaults).
  virtual Status GetFreeMemory(int ordinal, int64_t* free_bytes, int64_t* total_bytes) const = 0;
  // Creates the device "/job:localhost/replica:0/task:0/device:GPU:<tf_id>" on physical GPU
  // `ordinal`. The ordinal's allocator and stream are created by the first call and shared by
  // later ones (GPU memory is held per process); `memory` applies to that first call only.
  virtual Status CreateDevice(int tf_id, int ordinal, const GpuMemoryOptions& memory,
                              ThreadPool* intra_op_pool, std::unique_ptr<Device>* out) = 0;
  // The allocator statistics of physical GPU `ordinal` (tf.config.experimental.get_memory_info);
  // zeros before its first device is created.
  virtual Status GetMemoryStats(int ordinal, AllocatorStats* stats) const = 0;
};

using CreateGpuPlatformFn = GpuPlatform* (*)(const GpuPlatformParams* params, std::string* error);

}  // namespace flowstone
