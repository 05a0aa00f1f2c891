// Bindings for GPU discovery and the process-wide GPU settings of tf.config.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "runtime/gpu_discovery.h"

namespace flowstone::python {
namespace {

nb::dict LibraryDict(const GpuLibrary& lib) {
  nb::dict d;
  d["name"] = lib.name;
  d["file"] = lib.file;
  d["required"] = lib.required;
  d["loaded"] = lib.loaded;
  d["path"] = lib.path;
  d["error"] = lib.error;
  d["found_version"] = lib.found_version;
  d["built_version"] = lib.built_version;
  return d;
}

nb::dict DeviceDict(const GpuDeviceInfo& info) {
  nb::dict d;
  d["ordinal"] = info.ordinal;
  d["name"] = info.name;
  d["compute_capability"] = StrCat(info.compute_major, ".", info.compute_minor);
  d["total_memory"] = info.total_memory_bytes;
  d["free_memory"] = info.free_memory_bytes;
  d["pci_bus_id"] = info.pci_bus_id;
  d["multiprocessor_count"] = info.multiprocessor_count;
  return d;
}

nb::dict DiscoveryDict(bool read_free_memory) {
  GpuDiscoveryReport r;
  {
    nb::gil_scoped_release release;  // the first call dlopens libraries
    r = GpuDiscovery::Get().Report(read_free_memory);
  }
  nb::dict d;
  d["cuda_visible_devices"] =
      r.cuda_visible_devices_set ? nb::object(nb::str(r.cuda_visible_devices.c_str())) : nb::none();
  d["search_path"] = r.search_path;
  nb::list libraries;
  for (const GpuLibrary& lib : r.libraries) libraries.append(LibraryDict(lib));
  d["libraries"] = libraries;
  nb::dict backend;
  backend["path"] = r.backend_path;
  backend["loaded"] = r.backend_loaded;
  backend["error"] = r.backend_error;
  d["backend"] = backend;
  d["platform"] = r.platform_name;
  d["driver_version"] = r.driver_version;
  nb::list devices;
  for (const GpuDeviceInfo& info : r.devices) devices.append(DeviceDict(info));
  d["devices"] = devices;
  d["reason"] = r.reason;
  return d;
}

}  // namespace

void RegisterDevices(nb::module_& m) {
  m.def("gpu_discovery", &DiscoveryDict, nb::arg("read_free_memory") = false,
        "Runs GPU discovery (once per process) and reports what it found and why no GPU can be "
        "used. read_free_memory=True also reads each GPU's free memory, creating a CUDA context "
        "on every GPU.");
  m.def("visible_gpus", [] {
    nb::list out;
    for (const GpuDeviceInfo& info : GpuDiscovery::Get().visible_devices())
      out.append(DeviceDict(info));
    return out;
  });
  m.def("set_visible_gpus",
        [](std::vector<int> ordinals) { GpuDiscovery::Get().SetVisibleOrdinals(ordinals); });
  m.def("set_gpu_memory_growth",
        [](int ordinal, bool enable) { GpuDiscovery::Get().SetMemoryGrowth(ordinal, enable); });
  m.def("set_gpu_memory_limit",
        [](int ordinal, int64_t bytes) { GpuDiscovery::Get().SetMemoryLimit(ordinal, bytes); });
  m.def("gpu_memory_info", [](int index) {
    AllocatorStats stats;
    ThrowIfError(GpuDiscovery::Get().GetMemoryStats(index, &stats));
    nb::dict d;
    d["current"] = stats.bytes_in_use;
    d["peak"] = stats.peak_bytes_in_use;
    d["limit"] = stats.bytes_limit;
    return d;
  });
}

}  // namespace flowstone::python
