// Bindings that describe this build and this CPU: `_C.build_info()` and `_C.cpu_info()`, read by
// tf.sysconfig and `flowstone doctor`, and `_C.sgemm_peak()`, the float32 GEMM peak the
// benchmarks compare with.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "core/cpu_info.h"
#include "flowstone/build_config.h"
#include "flowstone/graph_def.h"
#include "ops/gemm_peak.h"
#include "ops/multiversion.h"

namespace flowstone::python {
namespace {

std::string CompilerId() {
#if defined(__clang__)
  return "clang";
#elif defined(__GNUC__)
  return "gcc";
#else
  return "unknown";
#endif
}

}  // namespace

void RegisterBuildInfo(nb::module_& m) {
  m.def(
      "build_info",
      [] {
        nb::dict d;
        d["version"] = FLOWSTONE_VERSION_STRING;
        d["built_with_cuda"] = FLOWSTONE_BUILT_WITH_CUDA != 0;
        d["cuda_version"] = FLOWSTONE_CUDA_VERSION;
        d["cudnn_major"] = FLOWSTONE_CUDNN_MAJOR_STRING;
        d["baseline_isa"] = FLOWSTONE_BASELINE_ISA;
        d["compiler"] = CompilerId();
        d["compiler_version"] = __VERSION__;
        // The GraphDef version this build writes and the oldest it still reads (TensorFlow's
        // GRAPH_DEF_VERSION and GRAPH_DEF_VERSION_MIN_CONSUMER/PRODUCER).
        d["graph_def_version"] = kGraphDefProducer;
        d["graph_def_min_consumer"] = 0;
        d["graph_def_min_producer"] = 0;
        // What a C++ extension linking libflowstone must match (tf.sysconfig's constants).
        d["cxx11_abi"] = _GLIBCXX_USE_CXX11_ABI;
        d["cxx_version"] = static_cast<long>(__cplusplus);
        return d;
      },
      "What this build was compiled with: CUDA and cuDNN versions, baseline ISA, compiler.");
  m.def(
      "cpu_info",
      [] {
        const CpuInfo& cpu = GetCpuInfo();
        nb::dict d;
        d["vendor"] = cpu.vendor;
        d["brand"] = cpu.brand;
        d["features"] = cpu.FeatureNames();
        d["kernel_isa"] = DispatchedKernelIsa();
        d["dispatched_kernels"] = DispatchedKernels();
        return d;
      },
      "The CPU's vendor, model and instruction sets (CPUID, with OS support), and the "
      "instruction set the run-time dispatched kernels use on it.");
  m.def(
      "sgemm_peak",
      [](int64_t n, int threads, int repeats) {
        SgemmRate rate;
        {
          nb::gil_scoped_release release;
          ThrowIfError(MeasureSgemmPeak(n, threads, repeats, &rate));
        }
        nb::dict d;
        d["n"] = n;
        d["threads"] = threads;
        d["seconds"] = rate.seconds;
        d["cpu_seconds"] = rate.cpu_seconds;
        d["gflops"] = rate.gflops;
        return d;
      },
      nb::arg("n"), nb::arg("threads"), nb::arg("repeats"),
      "Times oneDNN's sgemm on n x n float32 matrices with `threads` OpenMP threads: the "
      "fastest of `repeats` calls, its wall seconds, the calling thread's CPU seconds and GFLOP/s "
      "(2 n^3 per call).");
}

}  // namespace flowstone::python
