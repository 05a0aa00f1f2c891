// Bindings for process-wide runtime settings: memory limits, logical devices, allocator stats.
#include <nanobind/stl/string.h>

#include "common.h"
#include "flowstone/allocator.h"
#include "flowstone/device.h"
#include "runtime/process_state.h"

namespace flowstone::python {

void RegisterRuntime(nb::module_& m) {
  m.def("set_cpu_memory_limit", &SetCpuMemoryLimit,
        "Sets the process-wide CPU memory limit in bytes (0 = physical memory).");
  m.def("physical_memory_bytes", &PhysicalMemoryBytes);
  m.def("cpu_memory_info", [] {
    AllocatorStats s = CpuAllocator()->stats();
    nb::dict d;
    d["current"] = s.bytes_in_use;
    d["peak"] = s.peak_bytes_in_use;
    d["limit"] = s.bytes_limit;
    d["cached"] = s.bytes_cached;
    d["system_allocations"] = s.num_system_allocs;
    return d;
  });
  m.def("set_num_logical_cpus", [](int n) { ProcessState::Get().set_num_logical_cpus(n); });
  m.def("num_logical_cpus", [] { return ProcessState::Get().num_logical_cpus(); });
  m.def("num_schedulable_cpus", &NumSchedulableCpus);
  m.def(
      "merge_device_specs",
      [](const std::string& outer, const std::string& inner) {
        DeviceSpec a, b;
        ThrowIfError(DeviceSpec::Parse(outer, &a));
        ThrowIfError(DeviceSpec::Parse(inner, &b));
        return DeviceSpec::Merge(a, b).ToString();
      },
      "Merges two device strings field by field, as nested tf.device scopes do.");
}

}  // namespace flowstone::python
