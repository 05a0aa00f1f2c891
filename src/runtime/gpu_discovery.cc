#include "gpu_discovery.h"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "flowstone/build_config.h"
#include "flowstone/logging.h"

namespace flowstone {
namespace {

constexpr const char* kLog = "flowstone/gpu";
constexpr const char* kPluginFile = "libflowstone_cuda.so";

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string(fallback);
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The directory holding libflowstone.so: the plugin is installed beside it.
std::string CoreLibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&CoreLibraryDirectory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return ".";
  }
  return Dirname(info.dli_fname);
}

// Directories tried after the dynamic loader's own path (LD_LIBRARY_PATH, ld.so.cache, RPATH):
// an explicit list, the toolkit, and NVIDIA's PyPI wheels (site-packages/nvidia/*/lib) beside
// the flowstone package.
std::vector<std::string> SearchPath() {
  std::vector<std::string> dirs;
  std::istringstream extra(EnvOr("FLOWSTONE_CUDA_LIBRARY_PATH", ""));
  for (std::string dir; std::getline(extra, dir, ':');)
    if (!dir.empty()) dirs.push_back(dir);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string root = EnvOr(var, "");
    if (!root.empty()) dirs.push_back(root + "/lib64");
  }
  dirs.push_back("/usr/local/cuda/lib64");
  std::string pattern = CoreLibraryDirectory() + "/../nvidia/*/lib";
  glob_t matches;
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) dirs.push_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& d : dirs)
    if (seen.insert(d).second) unique.push_back(d);
  return unique;
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// dlopens `lib.file` from the loader's path, then from each directory.
void Open(GpuLibrary& lib, const std::vector<std::string>& dirs) {
  dlerror();
  void* handle = dlopen(lib.file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    lib.error = err ? err : "unknown dlopen error";
    for (const std::string& dir : dirs) {
      std::string path = dir + "/" + lib.file;
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (handle != nullptr) break;
    }
  }
  if (handle == nullptr) return;
  lib.handle = handle;
  lib.loaded = true;
  lib.error.clear();
  char origin[4096] = {0};
  if (dlinfo(handle, RTLD_DI_ORIGIN, origin) == 0) lib.path = StrCat(origin, "/", lib.file);
}

// "13.0" from 13000 (CUDA's encoding: 1000 * major + 10 * minor).
std::string CudaVersionString(int v) { return StrCat(v / 1000, ".", (v % 1000) / 10); }

// Asks a loaded library for its version with its own entry points.
void ReadVersion(GpuLibrary& lib) {
  if (!lib.loaded) return;
  if (lib.name == "CUDA driver" || lib.name == "CUDA runtime") {
    using VersionFn = int (*)(int*);
    auto fn = reinterpret_cast<VersionFn>(dlsym(
        lib.handle, lib.name == "CUDA driver" ? "cuDriverGetVersion" : "cudaRuntimeGetVersion"));
    int v = 0;
    if (fn != nullptr && fn(&v) == 0) lib.found_version = CudaVersionString(v);
  } else if (lib.name == "cuBLAS") {
    using PropertyFn = int (*)(int, int*);  // cublasGetProperty(libraryPropertyType, int*)
    auto fn = reinterpret_cast<PropertyFn>(dlsym(lib.handle, "cublasGetProperty"));
    int major = 0, minor = 0, patch = 0;
    if (fn != nullptr && fn(0, &major) == 0 && fn(1, &minor) == 0 && fn(2, &patch) == 0)
      lib.found_version = StrCat(major, ".", minor, ".", patch);
  } else if (lib.name == "NCCL") {
    using VersionFn = int (*)(int*);  // ncclGetVersion: major * 10000 + minor * 100 + patch
    auto fn = reinterpret_cast<VersionFn>(dlsym(lib.handle, "ncclGetVersion"));
    int v = 0;
    if (fn != nullptr && fn(&v) == 0)
      lib.found_version = StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
  } else if (lib.name == "cuBLASLt" || lib.name == "cuDNN") {
    using VersionFn = size_t (*)();  // major * 10000 + minor * 100 + patch
    auto fn = reinterpret_cast<VersionFn>(
        dlsym(lib.handle, lib.name == "cuDNN" ? "cudnnGetVersion" : "cublasLtGetVersion"));
    if (fn != nullptr) {
      size_t v = fn();
      lib.found_version = StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
    }
  }
}

std::string Major(const std::string& version) { return version.substr(0, version.find('.')); }

// "12.2" < "13.0", comparing major then minor numerically.
bool VersionLess(const std::string& a, const std::string& b) {
  int a_major = 0, a_minor = 0, b_major = 0, b_minor = 0;
  std::sscanf(a.c_str(), "%d.%d", &a_major, &a_minor);
  std::sscanf(b.c_str(), "%d.%d", &b_major, &b_minor);
  return a_major != b_major ? a_major < b_major : a_minor < b_minor;
}

}  // namespace

bool GpuAllowGrowth(bool configured) {
  const std::string value = EnvOr("TF_FORCE_GPU_ALLOW_GROWTH", "");
  if (value.empty()) return configured;
  if (value == "true") return true;
  if (value == "false") return false;
  LogWarning(kLog, "Ignoring TF_FORCE_GPU_ALLOW_GROWTH=", value,
             ": it must be \"true\" or \"false\".");
  return configured;
}

GpuDiscovery& GpuDiscovery::Get() {
  static GpuDiscovery* discovery = new GpuDiscovery;  // never destroyed, like the plugin
  return *discovery;
}

void GpuDiscovery::EnsureDiscovered() {
  std::call_once(once_, [this] { Discover(); });
}

void GpuDiscovery::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  report_.cuda_visible_devices_set = visible != nullptr;
  report_.cuda_visible_devices = visible ? visible : "";
  report_.search_path = SearchPath();
  std::string plugin_override = EnvOr("FLOWSTONE_GPU_PLUGIN", "");
  report_.backend_path =
      plugin_override.empty() ? CoreLibraryDirectory() + "/" + kPluginFile : plugin_override;

  // CUDA_VISIBLE_DEVICES=-1 (or empty) is how users ask for the CPU: say so once, quietly.
  if (visible != nullptr &&
      (report_.cuda_visible_devices.empty() || report_.cuda_visible_devices.rfind("-", 0) == 0)) {
    report_.reason =
        StrCat("CUDA_VISIBLE_DEVICES=\"", report_.cuda_visible_devices, "\" hides every GPU");
    LogInfo(kLog, report_.reason, ": every op runs on the CPU.");
    return;
  }
  if (plugin_override.empty() && !FLOWSTONE_BUILT_WITH_CUDA) {
    report_.reason = "this build of Flowstone has no CUDA backend (it was compiled without nvcc)";
    report_.backend_error = "not built";
    return;
  }
  // A plugin named explicitly (a test platform) loads its own dependencies.
  if (plugin_override.empty() && !LoadLibraries()) return;
  LoadPlatform();
}

bool GpuDiscovery::LoadLibraries() {
  const std::string cuda_major = FLOWSTONE_CUDA_MAJOR_STRING;
  const std::string cuda_version = FLOWSTONE_CUDA_VERSION;
  const std::string cudnn_major = FLOWSTONE_CUDNN_MAJOR_STRING;
  report_.libraries = {
      {"CUDA driver", "libcuda.so.1", true, false, "", "", "", cuda_version},
      {"CUDA runtime", "libcudart.so." + cuda_major, true, false, "", "", "", cuda_version},
      // cuBLAS needs cuBLASLt, so it is opened first.
      {"cuBLASLt", "libcublasLt.so." + cuda_major, false, false, "", "", "", cuda_major},
      {"cuBLAS", "libcublas.so." + cuda_major, false, false, "", "", "", cuda_major},
      {"cuDNN", "libcudnn.so." + cudnn_major, false, false, "", "", "", cudnn_major},
      // For data-parallel training across GPUs; reported, not needed by one process.
      {"NCCL", "libnccl.so.2", false, false, "", "", "", "2"},
  };
  const std::string ld_path = EnvOr("LD_LIBRARY_PATH", "(unset)");
  const std::string searched = Join(report_.search_path, ":");
  GpuLibrary& driver = report_.libraries[0];
  for (GpuLibrary& lib : report_.libraries) {
    Open(lib, report_.search_path);
    ReadVersion(lib);
    // Without a driver the other libraries do not matter: probe them for the report only.
    const bool worth_a_warning = &lib == &driver || (driver.loaded && lib.name != "NCCL");
    if (!lib.loaded && worth_a_warning) {
      LogWarning(kLog, "Could not load dynamic library '", lib.file, "' (", lib.name,
                 "); dlerror: ", lib.error, "; LD_LIBRARY_PATH: ", ld_path,
                 "; also searched: ", searched,
                 lib.required ? "" : ". The ops that need it run on the CPU.");
    }
  }
  std::string missing;
  for (const GpuLibrary& lib : report_.libraries) {
    if (lib.required && !lib.loaded) {
      missing = lib.name == "CUDA driver"
                    ? "no CUDA driver: libcuda.so.1 not found"
                    : StrCat("the ", lib.name, " (", lib.file, ") was not found");
      break;
    }
  }
  if (!missing.empty()) {
    report_.reason = missing;
    std::string fix = driver.loaded
                          ? StrCat("install the CUDA ", cuda_version,
                                   " runtime (e.g. pip install nvidia-cuda-runtime-cu", cuda_major,
                                   ") or add its lib directory to LD_LIBRARY_PATH")
                          : "install the NVIDIA driver (it provides libcuda.so.1); in a "
                            "container, run it with the NVIDIA container toolkit";
    LogWarning(kLog, "Cannot use a GPU: ", missing,
               ". Skipping GPU devices: every op runs on the CPU. To fix: ", fix,
               ". `flowstone doctor` explains this machine.");
    return false;
  }
  // A driver older than the toolkit cannot run this build's kernels: say so before trying.
  if (!driver.found_version.empty() && VersionLess(driver.found_version, cuda_version)) {
    report_.reason = StrCat("the NVIDIA driver supports CUDA up to ", driver.found_version,
                            " but this build needs CUDA ", cuda_version);
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason,
               ". Skipping GPU devices: every op runs on the CPU. To fix: update the NVIDIA "
               "driver to one for CUDA ",
               cuda_version, " or newer.");
    return false;
  }
  const GpuLibrary& runtime = report_.libraries[1];
  if (!runtime.found_version.empty() && Major(runtime.found_version) != cuda_major) {
    report_.reason = StrCat("the CUDA runtime found (", runtime.found_version, " at ", runtime.path,
                            ") is not the one this build needs (", cuda_version, ")");
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason,
               ". Skipping GPU devices: every op runs on the CPU.");
    return false;
  }
  return true;
}

void GpuDiscovery::LoadPlatform() {
  dlerror();
  void* plugin = dlopen(report_.backend_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    const char* err = dlerror();
    report_.backend_error = err ? err : "unknown dlopen error";
    report_.reason = StrCat("the CUDA backend plugin could not be loaded: ", report_.backend_error);
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason, ". Every op runs on the CPU.");
    return;
  }
  auto create =
      reinterpret_cast<CreateGpuPlatformFn>(dlsym(plugin, "flowstone_create_gpu_platform"));
  if (create == nullptr) {
    report_.backend_error = "flowstone_create_gpu_platform not found in the plugin";
    report_.reason = StrCat("the GPU backend plugin is broken: ", report_.backend_error);
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason, ". Every op runs on the CPU.");
    return;
  }
  report_.backend_loaded = true;
  GpuPlatformParams params;
  params.libraries = &report_.libraries;
  std::string error;
  platform_ = create(&params, &error);
  if (platform_ == nullptr) {
    report_.reason = StrCat("the GPU backend could not start: ", error);
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason, ". Every op runs on the CPU.");
    return;
  }
  report_.platform_name = platform_->name();
  report_.driver_version = platform_->driver_version();
  const int count = platform_->device_count();
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    GpuDeviceInfo info;
    if (!platform_->GetDeviceInfo(i, &info).ok()) continue;
    report_.devices.push_back(info);
    ids.push_back(std::to_string(i));
    char clock[32], size[32], bandwidth[32];
    std::snprintf(clock, sizeof(clock), "%.2fGHz", info.clock_ghz);
    std::snprintf(size, sizeof(size), "%.2fGiB", info.total_memory_bytes / double(1 << 30));
    std::snprintf(bandwidth, sizeof(bandwidth), "%.2fGiB/s", info.memory_bandwidth_gbs);
    LogInfo(kLog, "Found device ", i, " with properties: \npciBusID: ", info.pci_bus_id,
            " name: ", info.name, " computeCapability: ", info.compute_major, ".",
            info.compute_minor, "\ncoreClock: ", clock, " coreCount: ", info.multiprocessor_count,
            " deviceMemorySize: ", size, " deviceMemoryBandwidth: ", bandwidth);
  }
  if (report_.devices.empty()) {
    while (!error.empty() && error.back() == '.') error.pop_back();
    const bool versioned = !report_.driver_version.empty() &&
                           std::isdigit(static_cast<unsigned char>(report_.driver_version[0]));
    report_.reason = StrCat("the ", report_.platform_name, " driver",
                            versioned ? StrCat(" (", report_.driver_version, ")") : "",
                            " reports no usable GPU", error.empty() ? "" : ": ", error);
    LogWarning(kLog, "Cannot use a GPU: ", report_.reason, ". Every op runs on the CPU.");
    return;
  }
  LogInfo(kLog, "Adding visible gpu devices: ", Join(ids, ", "));
  growth_.assign(report_.devices.size(), -1);
  limit_bytes_.assign(report_.devices.size(), 0);
}

GpuDiscoveryReport GpuDiscovery::Report(bool read_free_memory) {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  GpuDiscoveryReport report = report_;
  if (!read_free_memory) return report;
  for (GpuDeviceInfo& info : report.devices) {
    int64_t free_bytes = 0, total = 0;
    if (platform_->GetFreeMemory(info.ordinal, &free_bytes, &total).ok())
      info.free_memory_bytes = free_bytes;
  }
  return report;
}

std::string GpuDiscovery::reason() {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  return report_.reason;
}

std::vector<GpuDeviceInfo> GpuDiscovery::visible_devices() {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  if (!visible_set_) return report_.devices;
  std::vector<GpuDeviceInfo> out;
  for (int ordinal : visible_ordinals_)
    if (ordinal >= 0 && ordinal < static_cast<int>(report_.devices.size()))
      out.push_back(report_.devices[ordinal]);
  return out;
}

void GpuDiscovery::SetVisibleOrdinals(std::vector<int> ordinals) {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  visible_ordinals_ = std::move(ordinals);
  visible_set_ = true;
}

void GpuDiscovery::SetMemoryGrowth(int ordinal, bool enable) {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  if (ordinal >= 0 && ordinal < static_cast<int>(growth_.size())) growth_[ordinal] = enable;
}

void GpuDiscovery::SetMemoryLimit(int ordinal, int64_t bytes) {
  EnsureDiscovered();
  std::lock_guard<std::mutex> lock(mu_);
  if (ordinal >= 0 && ordinal < static_cast<int>(limit_bytes_.size()))
    limit_bytes_[ordinal] = bytes;
}

Status GpuDiscovery::GetMemoryStats(int index, AllocatorStats* stats) {
  std::vector<GpuDeviceInfo> visible = visible_devices();
  if (index < 0 || index >= static_cast<int>(visible.size())) {
    std::string why = reason();
    return errors::InvalidArgument("There is no GPU:", index, ": ", visible.size(),
                                   " GPU(s) are visible", why.empty() ? "" : " because ", why, ".");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return platform_->GetMemoryStats(visible[index].ordinal, stats);
}

Status GpuDiscovery::CreateSessionDevices(const GpuSessionOptions& options,
                                          ThreadPool* intra_op_pool,
                                          std::vector<std::unique_ptr<Device>>* out) {
  if (options.max_devices == 0) return Status::OK();
  std::vector<GpuDeviceInfo> visible = visible_devices();
  std::lock_guard<std::mutex> lock(mu_);
  if (platform_ == nullptr || visible.empty()) return Status::OK();
  if (options.memory.memory_fraction > 0 && options.memory.memory_limit_bytes > 0) {
    return errors::InvalidArgument(
        "It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set. To "
        "fix: keep only one of GPUOptions.per_process_gpu_memory_fraction and "
        "GPUOptions.experimental.virtual_devices[].memory_limit_mb.");
  }
  // visible_device_list picks and orders among the visible GPUs.
  std::vector<int> picks;
  if (options.visible_device_list.empty()) {
    for (size_t i = 0; i < visible.size(); ++i) picks.push_back(static_cast<int>(i));
  } else {
    std::istringstream list(options.visible_device_list);
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      long id = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || id < 0 || id >= static_cast<long>(visible.size())) {
        return errors::InvalidArgument("'visible_device_list' listed an invalid GPU id '", item,
                                       "' but the visible device "
                                       "count is ",
                                       visible.size(), ". To fix: use ids from 0 to ",
                                       visible.size() - 1,
                                       ", separated by commas, e.g. visible_device_list=\"0\".");
      }
      if (std::find(picks.begin(), picks.end(), static_cast<int>(id)) != picks.end()) {
        return errors::InvalidArgument("'visible_device_list' lists GPU id ", id, " twice: '",
                                       options.visible_device_list, "'.");
      }
      picks.push_back(static_cast<int>(id));
    }
  }
  if (options.max_devices > 0 && static_cast<int>(picks.size()) > options.max_devices)
    picks.resize(options.max_devices);
  for (size_t tf_id = 0; tf_id < picks.size(); ++tf_id) {
    const int ordinal = visible[picks[tf_id]].ordinal;
    GpuMemoryOptions memory = options.memory;
    if (growth_[ordinal] >= 0) memory.allow_growth = growth_[ordinal] == 1;
    memory.allow_growth = GpuAllowGrowth(memory.allow_growth);
    if (limit_bytes_[ordinal] > 0) memory.memory_limit_bytes = limit_bytes_[ordinal];
    std::unique_ptr<Device> device;
    FS_RETURN_IF_ERROR(
        platform_->CreateDevice(static_cast<int>(tf_id), ordinal, memory, intra_op_pool, &device));
    out->push_back(std::move(device));
  }
  return Status::OK();
}

}  // namespace flowstone
