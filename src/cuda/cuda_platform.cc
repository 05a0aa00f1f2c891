// The CUDA implementation of GpuPlatform and the plugin's entry point.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "cublas_api.h"
#include "cuda_device.h"
#include "cuda_kernel.h"
#include "flowstone/bfc_allocator.h"
#include "flowstone/gpu_platform.h"
#include "flowstone/logging.h"
#include "gpu_memory_rule.h"
#include "nccl_api.h"

namespace flowstone::cuda {

// Defined with the cuDNN kernels (cudnn_api.cc): resolve cuDNN's entry points from discovery's
// dlopen handle, and create a cudnnHandle_t on GPU `ordinal`.
Status LoadCudnnApi(void* library_handle, const CudnnApi** api);
Status CreateCudnnHandle(int ordinal, const CudnnApi* api, void** handle);

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// GPU memory straight from the driver, in the regions the BFC allocator asks for.
class CudaSubAllocator final : public SubAllocator {
 public:
  explicit CudaSubAllocator(int ordinal) : ordinal_(ordinal) {}

  void* Alloc(size_t bytes) override {
    void* ptr = nullptr;
    if (cudaSetDevice(ordinal_) != cudaSuccess || cudaMalloc(&ptr, bytes) != cudaSuccess) {
      // Out of memory is reported by the BFC allocator; clear the error so that the next
      // kernel's LaunchCheck does not report it again.
      cudaGetLastError();
      return nullptr;
    }
    return ptr;
  }

  void Free(void* ptr, size_t bytes) override {
    cudaSetDevice(ordinal_);
    cudaFree(ptr);
  }

 private:
  int ordinal_;
};

std::string VersionString(int version) {
  // CUDA encodes versions as 1000 * major + 10 * minor.
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// The dlopen handle of a library discovery loaded, by its name ("cuBLAS"), or nullptr.
void* LoadedLibrary(const GpuPlatformParams& params, const std::string& name) {
  if (params.libraries == nullptr) return nullptr;
  for (const GpuLibrary& library : *params.libraries) {
    if (library.name == name && library.loaded) return library.handle;
  }
  return nullptr;
}

class CudaPlatform final : public GpuPlatform {
 public:
  explicit CudaPlatform(const GpuPlatformParams& params) {
    const cudaError_t err = cudaGetDeviceCount(&device_count_);
    if (err != cudaSuccess) {
      device_count_ = 0;
      count_error_ = CudaCheck(err, "cudaGetDeviceCount").message();
      cudaGetLastError();
    }
    // Discovery has already logged a library that could not be opened; a library that opened
    // but lacks symbols is logged here.
    if (void* cublas_library = LoadedLibrary(params, "cuBLAS")) {
      Status cublas = LoadCublasApi(cublas_library, &cublas_);
      if (!cublas.ok()) {
        LogWarning("flowstone/gpu", "cuBLAS is not usable: ", cublas.message());
      }
    }
    if (void* cudnn_library = LoadedLibrary(params, "cuDNN")) {
      Status cudnn = LoadCudnnApi(cudnn_library, &cudnn_);
      if (!cudnn.ok()) {
        cudnn_ = nullptr;
        LogWarning("flowstone/gpu", "cuDNN is not usable: ", cudnn.message());
      }
    }
    if (void* nccl_library = LoadedLibrary(params, "NCCL")) {
      Status nccl = LoadNcclApi(nccl_library, &nccl_);
      if (!nccl.ok()) {
        nccl_ = nullptr;
        LogWarning("flowstone/gpu", "NCCL is not usable: ", nccl.message());
      }
    }
    std::vector<std::string> usable;
    if (cublas_ != nullptr) usable.push_back("cuBLAS");
    if (cudnn_ != nullptr) usable.push_back("cuDNN");
    if (nccl_ != nullptr) {
      usable.push_back("NCCL");
      RegisterNcclCollectives(nccl_.get());
    }
    RegisterKernelsNeedingLibraries(usable);
  }

  // Why no GPU could be counted, or empty.
  const std::string& count_error() const { return count_error_; }

  std::string name() const override { return "CUDA"; }

  std::string driver_version() const override {
    int version = 0;
    const cudaError_t err = cudaDriverGetVersion(&version);
    if (err != cudaSuccess) return CudaCheck(err, "cudaDriverGetVersion").message();
    if (version == 0) return "no CUDA driver installed";
    return VersionString(version);
  }

  int device_count() const override { return device_count_; }

  Status GetDeviceInfo(int ordinal, GpuDeviceInfo* info) const override {
    FS_RETURN_IF_ERROR(CheckOrdinal(ordinal));
    cudaDeviceProp prop;
    FS_RETURN_IF_ERROR(
        CudaCheck(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties"));
    *info = GpuDeviceInfo();
    info->ordinal = ordinal;
    info->name = prop.name;
    info->compute_major = prop.major;
    info->compute_minor = prop.minor;
    info->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info->pci_bus_id = PciBusId(prop);
    info->multiprocessor_count = prop.multiProcessorCount;
    // CUDA 13 moved the clock rates out of cudaDeviceProp into attributes (both in kHz).
    int clock_khz = 0, memory_clock_khz = 0, bus_width_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal) == cudaSuccess) {
      info->clock_ghz = clock_khz / 1e6;
    }
    if (cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal) ==
            cudaSuccess &&
        cudaDeviceGetAttribute(&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal) ==
            cudaSuccess) {
      // Double data rate: two transfers per clock, bus width in bits.
      info->memory_bandwidth_gbs = 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
    }
    cudaGetLastError();  // a missing attribute is not an error worth keeping
    // Free memory is left out: reading it creates a CUDA context (hundreds of MB) on the GPU,
    // which discovery must not do to GPUs no session uses. GetFreeMemory reads it on request.
    return Status::OK();
  }

  Status GetFreeMemory(int ordinal, int64_t* free_bytes, int64_t* total_bytes) const override {
    FS_RETURN_IF_ERROR(CheckOrdinal(ordinal));
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ordinal), "cudaSetDevice"));
    size_t free_now = 0, total = 0;
    FS_RETURN_IF_ERROR(CudaCheck(cudaMemGetInfo(&free_now, &total), "cudaMemGetInfo"));
    *free_bytes = static_cast<int64_t>(free_now);
    *total_bytes = static_cast<int64_t>(total);
    return Status::OK();
  }

  Status GetMemoryStats(int ordinal, AllocatorStats* stats) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gpus_.find(ordinal);
    *stats = it == gpus_.end() ? AllocatorStats() : it->second.allocator->stats();
    return Status::OK();
  }

  Status CreateDevice(int tf_id, int ordinal, const GpuMemoryOptions& memory,
                      ThreadPool* intra_op_pool, std::unique_ptr<Device>* out) override {
    FS_RETURN_IF_ERROR(CheckOrdinal(ordinal));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gpus_.find(ordinal);
    if (it == gpus_.end()) {
      PhysicalGpu gpu;
      FS_RETURN_IF_ERROR(CreatePhysicalGpu(tf_id, ordinal, memory, &gpu));
      it = gpus_.emplace(ordinal, std::move(gpu)).first;
    }
    PhysicalGpu& gpu = it->second;
    if (logged_tf_ids_.insert(tf_id).second) {
      LogInfo("flowstone/gpu", "Created device ", LocalDeviceName("GPU", tf_id), " with ",
              gpu.allocator->limit() / kMiB, " MB memory -> physical GPU (", gpu.description, ")");
    }
    *out = std::make_unique<CudaDevice>(tf_id, gpu.context.get(), gpu.allocator.get(),
                                        intra_op_pool, gpu.description);
    return Status::OK();
  }

 private:
  // What every device on one physical GPU shares.
  struct PhysicalGpu {
    std::unique_ptr<GpuContext> context;
    std::unique_ptr<BfcAllocator> allocator;
    std::string description;
  };

  Status CheckOrdinal(int ordinal) const {
    if (ordinal >= 0 && ordinal < device_count_) return Status::OK();
    return errors::InvalidArgument("There is no CUDA GPU with ordinal ", ordinal, ": ",
                                   device_count_, " GPU(s) are visible",
                                   count_error_.empty() ? "" : " (" + count_error_ + ")",
                                   ". Check CUDA_VISIBLE_DEVICES and the device ids you ask for.");
  }

  static std::string PciBusId(const cudaDeviceProp& prop) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID,
                  prop.pciDeviceID);
    return buffer;
  }

  Status CreatePhysicalGpu(int tf_id, int ordinal, const GpuMemoryOptions& memory,
                           PhysicalGpu* gpu) {
    FS_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(ordinal), "cudaSetDevice"));
    GpuDeviceInfo info;
    FS_RETURN_IF_ERROR(GetDeviceInfo(ordinal, &info));
    int64_t free_bytes = 0, total_bytes = 0;
    FS_RETURN_IF_ERROR(GetFreeMemory(ordinal, &free_bytes, &total_bytes));

    auto context = std::make_unique<GpuContext>();
    context->ordinal = ordinal;
    // Non-blocking: the stream does not wait for work on the legacy default stream.
    FS_RETURN_IF_ERROR(CudaCheck(cudaStreamCreateWithFlags(&context->stream, cudaStreamNonBlocking),
                                 "cudaStreamCreateWithFlags"));
    if (cublas_ != nullptr) {
      cublasHandle handle = nullptr;
      Status s = CublasCheck(*cublas_, cublas_->Create(&handle), "cublasCreate");
      if (s.ok())
        s = CublasCheck(*cublas_, cublas_->SetStream(handle, context->stream), "cublasSetStream");
      if (s.ok()) {
        context->cublas = cublas_.get();
        context->cublas_handle = handle;
      } else {
        LogWarning("flowstone/gpu", "matrix products cannot run on GPU ", ordinal, ": ",
                   s.message());
      }
    }
    if (cudnn_ != nullptr) {
      void* handle = nullptr;
      Status s = CreateCudnnHandle(ordinal, cudnn_, &handle);
      if (s.ok()) {
        context->cudnn = cudnn_;
        context->cudnn_handle = handle;
      } else {
        LogWarning("flowstone/gpu", "cuDNN cannot run on GPU ", ordinal, ": ", s.message());
      }
    }

    BfcOptions options;
    options.memory_limit_bytes = GpuMemoryLimitBytes(memory, free_bytes, total_bytes);
    options.allow_growth = memory.allow_growth;
    gpu->allocator =
        std::make_unique<BfcAllocator>(std::make_unique<CudaSubAllocator>(ordinal), options,
                                       "GPU_" + std::to_string(tf_id) + "_bfc");
    gpu->context = std::move(context);
    gpu->description = "device: " + std::to_string(ordinal) + ", name: " + info.name +
                       ", pci bus id: " + info.pci_bus_id +
                       ", compute capability: " + std::to_string(info.compute_major) + "." +
                       std::to_string(info.compute_minor);
    return Status::OK();
  }

  int device_count_ = 0;
  std::string count_error_;
  std::unique_ptr<CublasApi> cublas_;
  const CudnnApi* cudnn_ = nullptr;
  // Horovod's collectives on GPU tensors; kept for the process (the collectives outlive
  // sessions).
  std::unique_ptr<NcclApi> nccl_;

  mutable std::mutex mu_;
  std::map<int, PhysicalGpu> gpus_;
  std::set<int> logged_tf_ids_;
};

}  // namespace
}  // namespace flowstone::cuda

// The plugin's entry point (see gpu_platform.h). A platform is returned even when no GPU can be
// counted, so that `flowstone doctor` can still report the driver; `error` then says why
// device_count() is 0.
extern "C" __attribute__((visibility("default"))) flowstone::GpuPlatform*
flowstone_create_gpu_platform(const flowstone::GpuPlatformParams* params, std::string* error) {
  if (params == nullptr || params->abi_version != 1) {
    if (error != nullptr) {
      *error = "the CUDA plugin speaks GPU platform ABI version 1, but the core asked for " +
               (params == nullptr ? std::string("none") : std::to_string(params->abi_version)) +
               ": libflowstone_cuda.so and libflowstone.so come from different builds; "
               "reinstall flowstone";
    }
    return nullptr;
  }
  auto* platform = new flowstone::cuda::CudaPlatform(*params);
  if (error != nullptr) *error = platform->count_error();
  return platform;
}
