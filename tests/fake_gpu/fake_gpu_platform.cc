// A fake GPU platform: a device plugin whose "device memory" is host memory carved by the BFC
// allocator, loaded through the same entry point and interface as the CUDA backend. It lets the
// device tests exercise discovery, placement that prefers GPUs, host<->device transfers, memory
// options and OOM on machines without a GPU. Its kernels wrap the CPU kernels and first check
// that every input they read as device memory really is in this device's memory, so a missing
// transfer in the executor fails loudly instead of silently working on host memory.
//
// Settings (environment, read when the platform is created):
//   FLOWSTONE_FAKE_GPU_COUNT      number of GPUs (default 1)
//   FLOWSTONE_FAKE_GPU_MEMORY_MB  memory per GPU (default 256)
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "flowstone/bfc_allocator.h"
#include "flowstone/gpu_platform.h"
#include "flowstone/kernel.h"
#include "flowstone/logging.h"
#include "flowstone/op_registry.h"

namespace flowstone::fake_gpu {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// Host memory that remembers which regions are "device memory".
class FakeDeviceMemory final : public SubAllocator {
 public:
  void* Alloc(size_t bytes) override {
    void* p = host_.Alloc(bytes);
    if (p != nullptr) {
      std::lock_guard<std::mutex> lock(Mutex());
      Regions().insert({static_cast<char*>(p), bytes});
    }
    return p;
  }
  void Free(void* ptr, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(Mutex());
      Regions().erase({static_cast<char*>(ptr), bytes});
    }
    host_.Free(ptr, bytes);
  }
  // True when `p` points into memory of some fake GPU.
  static bool Owns(const void* p) {
    const char* c = static_cast<const char*>(p);
    std::lock_guard<std::mutex> lock(Mutex());
    auto it = Regions().upper_bound({c, ~size_t{0}});
    if (it == Regions().begin()) return false;
    --it;
    return c >= it->first && c < it->first + it->second;
  }

 private:
  static std::mutex& Mutex() {
    static std::mutex mu;
    return mu;
  }
  static std::set<std::pair<const char*, size_t>>& Regions() {
    static auto* regions = new std::set<std::pair<const char*, size_t>>;
    return *regions;
  }
  HostSubAllocator host_;
};

class FakeGpuDevice final : public Device {
 public:
  FakeGpuDevice(int tf_id, int ordinal, Allocator* allocator, ThreadPool* pool)
      : Device("GPU", tf_id, allocator, pool), ordinal_(ordinal) {}
  bool host_memory() const override { return false; }
  Status CopyToHost(const Tensor& device_tensor, Tensor* host_tensor) override {
    return Copy(device_tensor, CpuAllocator(), host_tensor);
  }
  Status CopyFromHost(const Tensor& host_tensor, Tensor* device_tensor) override {
    return Copy(host_tensor, allocator(), device_tensor);
  }
  std::string physical_description() const override {
    return StrCat("device: ", ordinal_, ", name: Flowstone fake GPU, pci bus id: 0000:00:0",
                  ordinal_, ".0, compute capability: 0.0");
  }

 private:
  Status Copy(const Tensor& from, Allocator* allocator, Tensor* to) {
    Tensor out;
    Status s = Tensor::Allocate(allocator, from.dtype(), from.shape(), &out);
    if (!s.ok()) {
      return errors::ResourceExhausted(
          "OOM when copying tensor with shape", from.shape().ToString(), " and type ",
          DTypeShortName(from.dtype()), " to ", name(), " by allocator ", allocator->name());
    }
    if (from.bytes() > 0) std::memcpy(out.raw_data(), from.raw_data(), from.bytes());
    *to = std::move(out);
    return Status::OK();
  }
  int ordinal_;
};

class FakeGpuPlatform final : public GpuPlatform {
 public:
  FakeGpuPlatform()
      : count_(EnvInt("FLOWSTONE_FAKE_GPU_COUNT", 1)),
        memory_bytes_(int64_t{EnvInt("FLOWSTONE_FAKE_GPU_MEMORY_MB", 256)} << 20),
        allocators_(count_) {}

  std::string name() const override { return "FakeGPU"; }
  std::string driver_version() const override { return "0.0"; }
  int device_count() const override { return count_; }

  Status GetDeviceInfo(int ordinal, GpuDeviceInfo* info) const override {
    if (ordinal < 0 || ordinal >= count_) return errors::InvalidArgument("no fake GPU ", ordinal);
    info->ordinal = ordinal;
    info->name = "Flowstone fake GPU";
    info->pci_bus_id = StrCat("0000:00:0", ordinal, ".0");
    info->total_memory_bytes = memory_bytes_;
    info->free_memory_bytes = memory_bytes_;
    info->multiprocessor_count = 1;
    info->clock_ghz = 1.0;
    info->memory_bandwidth_gbs = 1.0;
    return Status::OK();
  }

  Status GetFreeMemory(int ordinal, int64_t* free_bytes, int64_t* total_bytes) const override {
    std::lock_guard<std::mutex> lock(mu_);
    *total_bytes = memory_bytes_;
    *free_bytes = memory_bytes_;
    if (allocators_[ordinal]) *free_bytes -= allocators_[ordinal]->bytes_reserved();
    return Status::OK();
  }

  Status GetMemoryStats(int ordinal, AllocatorStats* stats) const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (allocators_[ordinal]) *stats = allocators_[ordinal]->stats();
    return Status::OK();
  }

  Status CreateDevice(int tf_id, int ordinal, const GpuMemoryOptions& memory,
                      ThreadPool* intra_op_pool, std::unique_ptr<Device>* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<BfcAllocator>& allocator = allocators_[ordinal];
    if (!allocator) {
      // The CUDA backend's rule, with no reserve: the fake has no driver to leave room for.
      BfcOptions options;
      options.memory_limit_bytes = memory_bytes_;
      if (memory.memory_limit_bytes > 0) {
        options.memory_limit_bytes = std::min(memory.memory_limit_bytes, memory_bytes_);
      } else if (memory.memory_fraction > 0) {
        options.memory_limit_bytes = static_cast<int64_t>(memory_bytes_ * memory.memory_fraction);
      }
      options.allow_growth = memory.allow_growth;
      allocator = std::make_unique<BfcAllocator>(std::make_unique<FakeDeviceMemory>(), options,
                                                 StrCat("GPU_", tf_id, "_bfc"));
      LogInfo("flowstone/gpu", "Created device ", LocalDeviceName("GPU", tf_id), " with ",
              options.memory_limit_bytes >> 20, " MB memory -> physical GPU (device: ", ordinal,
              ", name: Flowstone fake GPU, pci bus id: 0000:00:0", ordinal,
              ".0, compute capability: 0.0)");
    }
    *out = std::make_unique<FakeGpuDevice>(tf_id, ordinal, allocator.get(), intra_op_pool);
    return Status::OK();
  }

 private:
  int count_;
  int64_t memory_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<BfcAllocator>> allocators_;  // per ordinal, for the process
};

// A CPU kernel run on the fake GPU, after checking where its inputs are.
class CheckedKernel final : public OpKernel {
 public:
  CheckedKernel(const Node& node, std::unique_ptr<OpKernel> inner, std::vector<bool> host_inputs)
      : OpKernel(node), inner_(std::move(inner)), host_inputs_(std::move(host_inputs)) {}
  Status Compute(KernelContext& ctx) override {
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& in = ctx.input(i);
      if (in.num_elements() == 0) continue;
      const bool on_device = FakeDeviceMemory::Owns(in.raw_data());
      if (on_device == host_inputs_[i]) {
        return errors::Internal("fake GPU: input ", i, " of ", node().name(), " is in ",
                                on_device ? "device" : "host",
                                " memory but the kernel reads it "
                                "in ",
                                on_device ? "host" : "device", " memory");
      }
    }
    return inner_->Compute(ctx);
  }

 private:
  std::unique_ptr<OpKernel> inner_;
  std::vector<bool> host_inputs_;
};

// Registers the op's CPU kernel for the fake GPU, wrapped in CheckedKernel.
struct FakeKernelRegistrar {
  FakeKernelRegistrar(const char* op_name, std::vector<DType> types,
                      std::vector<std::string> host_memory_args = {}) {
    const OpDef* op = OpRegistry::Global().Find(op_name);
    const KernelDef* cpu = op ? op->FindKernel("CPU", DType::kInvalid) : nullptr;
    if (cpu == nullptr) {
      std::fprintf(stderr, "fake GPU: op %s has no CPU kernel to wrap\n", op_name);
      std::abort();
    }
    KernelDef def;
    def.device_type = "GPU";
    def.type_constraint = std::move(types);
    def.host_memory_args = std::move(host_memory_args);
    KernelFactory cpu_factory = cpu->factory;
    def.factory = [cpu_factory, def_args = def.host_memory_args](const Node& node,
                                                                 std::unique_ptr<OpKernel>* out) {
      std::unique_ptr<OpKernel> inner;
      FS_RETURN_IF_ERROR(cpu_factory(node, &inner));
      KernelDef probe;
      probe.host_memory_args = def_args;
      *out = std::make_unique<CheckedKernel>(node, std::move(inner), HostMemoryInputs(node, probe));
      return Status::OK();
    };
    Status s = OpRegistry::Global().RegisterKernel(op_name, std::move(def));
    if (!s.ok()) std::abort();
  }
};

const std::vector<DType> kFloat = {DType::kFloat32};

// As on a real GPU, constants may be pinned to the device; their values stay in host memory
// until an op on the device reads them.
FakeKernelRegistrar constant("Const", {}, {"output"});
FakeKernelRegistrar add("AddV2", kFloat);
FakeKernelRegistrar mul("Mul", kFloat);
FakeKernelRegistrar sub("Sub", kFloat);
FakeKernelRegistrar matmul("MatMul", kFloat);
FakeKernelRegistrar relu("Relu", kFloat);
FakeKernelRegistrar square("Square", kFloat);
FakeKernelRegistrar identity("Identity", kFloat);
FakeKernelRegistrar sum("Sum", kFloat, {"reduction_indices"});
FakeKernelRegistrar reshape("Reshape", kFloat, {"shape"});
FakeKernelRegistrar shape("Shape", kFloat, {"output"});
FakeKernelRegistrar fill("Fill", kFloat, {"dims", "value"});
FakeKernelRegistrar var_handle("VarHandleOp", kFloat);
FakeKernelRegistrar read_variable("ReadVariableOp", kFloat);
FakeKernelRegistrar assign_variable("AssignVariableOp", kFloat);
FakeKernelRegistrar assign_add("AssignAddVariableOp", kFloat);

}  // namespace
}  // namespace flowstone::fake_gpu

extern "C" flowstone::GpuPlatform* flowstone_create_gpu_platform(
    const flowstone::GpuPlatformParams* params, std::string* error) {
  if (params == nullptr || params->abi_version != 1) {
    *error = "unsupported plugin ABI version";
    return nullptr;
  }
  return new flowstone::fake_gpu::FakeGpuPlatform;
}
