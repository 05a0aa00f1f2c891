#include "cuda_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include "cuda_device.h"
#include "flowstone/logging.h"

namespace flowstone::cuda {
namespace {

// What to do about a CUDA error, by kind.
const char* AdviceFor(cudaError_t err) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return "The GPU is out of memory: reduce the batch size or the model, set "
             "GPUOptions.allow_growth, or stop other processes using the GPU (nvidia-smi).";
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "Check the NVIDIA driver and CUDA_VISIBLE_DEVICES; `flowstone doctor` shows what "
             "was found.";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return "This build of Flowstone has no code for this GPU's architecture, or the driver is "
             "older than the CUDA toolkit it was built with; `flowstone doctor` shows both.";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      return "A GPU kernel faulted; the GPU context is unusable until the process restarts. Run "
             "with CUDA_LAUNCH_BLOCKING=1 to find the op, and please report it.";
    default:
      return "Run with CUDA_LAUNCH_BLOCKING=1 to find the failing op; `flowstone doctor` checks "
             "the driver and libraries.";
  }
}

const GpuContext* ContextOrNull(const KernelContext& ctx) {
  const auto* device = dynamic_cast<const CudaDevice*>(ctx.device());
  return device == nullptr ? nullptr : &device->context();
}

}  // namespace

const GpuContext& ContextOf(const KernelContext& ctx) {
  const GpuContext* context = ContextOrNull(ctx);
  if (context == nullptr) {
    // Only the CUDA platform creates devices that run GPU kernels: a programming error.
    std::fprintf(stderr, "flowstone: GPU kernel for op %s ran on %s, which is not a CUDA device\n",
                 ctx.node().type().c_str(),
                 ctx.device() ? ctx.device()->name().c_str() : "no device");
    std::abort();
  }
  return *context;
}

Status CudaCheck(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::OK();
  return errors::Internal(what, " failed: ", cudaGetErrorString(err), " (", cudaGetErrorName(err),
                          "). ", AdviceFor(err));
}

Status LaunchCheck(const char* kernel_name) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return CudaCheck(err, (std::string("launching CUDA kernel ") + kernel_name).c_str());
}

GpuKernel::GpuKernel(std::string op_name, KernelFn fn)
    : op_name_(std::move(op_name)), fn_(std::move(fn)) {}

GpuKernel& GpuKernel::Types(std::vector<DType> types) {
  types_ = std::move(types);
  return *this;
}

GpuKernel& GpuKernel::HostMemory(std::string arg_name) {
  host_memory_.push_back(std::move(arg_name));
  return *this;
}

KernelDef GpuKernel::Build() const {
  KernelDef def;
  def.device_type = "GPU";
  def.type_constraint = types_;
  def.host_memory_args = host_memory_;
  // Executor threads may have any GPU current; kernels launch on the device's own GPU.
  KernelFn on_device = [fn = fn_](KernelContext& ctx) -> Status {
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ContextOf(ctx).ordinal), "cudaSetDevice"));
    return fn(ctx);
  };
  def.factory = [on_device](const Node& node, std::unique_ptr<OpKernel>* out) {
    *out = std::make_unique<FunctionKernel>(node, on_device);
    return Status::OK();
  };
  return def;
}

GpuKernel& GpuKernel::Needs(std::string library) {
  needs_ = std::move(library);
  return *this;
}

namespace {

struct PendingKernel {
  std::string op_name;
  std::string library;
  KernelDef def;
};

std::vector<PendingKernel>& PendingKernels() {
  static auto* pending = new std::vector<PendingKernel>;
  return *pending;
}

void RegisterOrAbort(const std::string& op_name, KernelDef def) {
  Status s = OpRegistry::Global().RegisterKernel(op_name, std::move(def));
  if (!s.ok()) {
    // The op set is fixed at build time, so this is a programming error in the plugin.
    std::fprintf(stderr, "flowstone: cannot register the GPU kernel of %s: %s\n", op_name.c_str(),
                 s.ToString().c_str());
    std::abort();
  }
}

}  // namespace

void RegisterGpuKernel(const GpuKernel& kernel, KernelDef def) {
  if (kernel.needs().empty()) {
    RegisterOrAbort(kernel.op_name(), std::move(def));
  } else {
    // Static registrars run while the plugin loads, before the platform knows its libraries.
    PendingKernels().push_back({kernel.op_name(), kernel.needs(), std::move(def)});
  }
}

void RegisterKernelsNeedingLibraries(const std::vector<std::string>& usable_libraries) {
  std::map<std::string, std::string> skipped;  // library -> "Conv2D, Conv2DBackpropInput"
  for (PendingKernel& kernel : PendingKernels()) {
    if (std::find(usable_libraries.begin(), usable_libraries.end(), kernel.library) !=
        usable_libraries.end()) {
      RegisterOrAbort(kernel.op_name, std::move(kernel.def));
    } else {
      std::string& ops = skipped[kernel.library];
      ops += (ops.empty() ? "" : ", ") + kernel.op_name;
    }
  }
  PendingKernels().clear();
  for (const auto& [library, ops] : skipped) {
    LogWarning("flowstone/gpu", library, " is not usable, so these ops run on the CPU: ", ops, ".");
  }
}

GpuKernelRegistrar::GpuKernelRegistrar(const GpuKernel& kernel) {
  RegisterGpuKernel(kernel, kernel.Build());
}

}  // namespace flowstone::cuda
