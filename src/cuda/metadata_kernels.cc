// GPU kernels of ops that never read tensor data: they forward buffers, reinterpret shapes or
// produce small host-memory results, so GPU tensors stay on the GPU without copies.
//
// Ops whose CPU kernel only forwards buffers (after reading host-memory shape arguments) reuse
// that kernel's factory; so do ops writing small host results (Shape, Size, Rank, VarHandleOp),
// whose outputs the session allocates in host memory.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda_kernel.h"
#include "flowstone/resource.h"

namespace flowstone::cuda {
namespace {

// Float types only: int32 tensors are mostly shapes and indices, which stay on the CPU.
const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

// Registers an op's CPU kernel factory as its GPU kernel, with the given arguments in host
// memory. Only for kernels that touch no tensor data on the host.
struct CpuFactoryOnGpu {
  CpuFactoryOnGpu(const char* op_name, std::vector<DType> types,
                  std::vector<std::string> host_memory_args) {
    const OpDef* op = OpRegistry::Global().Find(op_name);
    const KernelDef* cpu = op == nullptr ? nullptr : op->FindKernel("CPU", DType::kInvalid);
    Status s = errors::NotFound("op ", op_name, " has no CPU kernel to reuse");
    if (cpu != nullptr) {
      KernelDef gpu;
      gpu.device_type = "GPU";
      gpu.type_constraint = std::move(types);
      gpu.factory = cpu->factory;
      gpu.host_memory_args = std::move(host_memory_args);
      s = OpRegistry::Global().RegisterKernel(op_name, std::move(gpu));
    }
    if (!s.ok()) {
      // The op set is fixed at build time, so this is a programming error in the plugin.
      std::fprintf(stderr, "flowstone: cannot register the GPU kernel of %s: %s\n", op_name,
                   s.ToString().c_str());
      std::abort();
    }
  }
};

// A constant pinned to the GPU keeps its value in host memory; the session copies it to the
// device once, for the ops on the device that read it.
CpuFactoryOnGpu constant("Const", {}, {"output"});
CpuFactoryOnGpu no_op("NoOp", {}, {});
CpuFactoryOnGpu identity("Identity", kGpuFloatTypes, {});
CpuFactoryOnGpu stop_gradient("StopGradient", kGpuFloatTypes, {});
CpuFactoryOnGpu reshape("Reshape", kGpuFloatTypes, {"shape"});
CpuFactoryOnGpu expand_dims("ExpandDims", kGpuFloatTypes, {"dim"});
CpuFactoryOnGpu squeeze("Squeeze", kGpuFloatTypes, {});
// A variable's value is a tensor on the device of its ops; the handle is a host pointer.
CpuFactoryOnGpu read_variable("ReadVariableOp", kGpuFloatTypes, {"resource"});
CpuFactoryOnGpu assign_variable("AssignVariableOp", kGpuFloatTypes, {"resource"});

// These CPU kernels write small host results: the session allocates their outputs in host
// memory. VarHandleOp's also records that the variable's value lives on this GPU, which
// checkpoints rely on.
CpuFactoryOnGpu shape("Shape", kGpuFloatTypes, {"output"});
CpuFactoryOnGpu size("Size", kGpuFloatTypes, {"output"});
CpuFactoryOnGpu rank("Rank", kGpuFloatTypes, {"output"});
CpuFactoryOnGpu var_handle("VarHandleOp", kGpuFloatTypes, {"resource"});

}  // namespace
}  // namespace flowstone::cuda
