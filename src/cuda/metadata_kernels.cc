// GPU kernels of ops that never read tensor data: they forward buffers, reinterpret shapes or
// produce small host-memory results, so GPU tensors stay on the GPU without copies.
//
// Ops whose CPU kernel only forwards buffers (after reading host-memory shape arguments) reuse
// that kernel's factory. Ops whose CPU kernel writes an output on the host (Shape, Size, Rank,
// VarHandleOp) get kernels here that allocate that output in host memory themselves.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
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

// Allocates output 0 in host memory.
Status AllocateHostOutput(KernelContext& ctx, const TensorShape& shape, Tensor** out) {
  Tensor host;
  FS_RETURN_IF_ERROR(Tensor::Allocate(CpuAllocator(), ctx.output_type(0), shape, &host));
  ctx.SetOutput(0, std::move(host));
  *out = &ctx.output(0);
  return Status::OK();
}

// Writes `value` into element i of an int32 or int64 output, failing when int32 is too small.
Status StoreIndex(Tensor* out, int64_t i, int64_t value, const char* what) {
  if (out->dtype() == DType::kInt32) {
    if (value > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument(what, " ", value,
                                     " does not fit in the int32 output; use out_type=tf.int64");
    }
    out->data<int32_t>()[i] = static_cast<int32_t>(value);
  } else {
    out->data<int64_t>()[i] = value;
  }
  return Status::OK();
}

Status Shape(KernelContext& ctx) {
  const TensorShape& shape = ctx.input(0).shape();
  Tensor* out;
  FS_RETURN_IF_ERROR(AllocateHostOutput(ctx, TensorShape{shape.rank()}, &out));
  for (int i = 0; i < shape.rank(); ++i) {
    FS_RETURN_IF_ERROR(StoreIndex(out, i, shape.dim(i), "Dimension size"));
  }
  return Status::OK();
}

Status Size(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(AllocateHostOutput(ctx, TensorShape{}, &out));
  return StoreIndex(out, 0, ctx.input(0).num_elements(), "Number of elements");
}

Status Rank(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(AllocateHostOutput(ctx, TensorShape{}, &out));
  *out->data<int32_t>() = ctx.input(0).rank();
  return Status::OK();
}

// The handle is the Var's address, in host memory (as the CPU kernel writes it).
Status VarHandle(KernelContext& ctx) {
  const Node& node = ctx.node();
  Var* var = ctx.resources()->LookupOrCreateVar(
      VarNameOf(node), node.attrs().GetOr<DType>("dtype", DType::kFloat32),
      node.attrs().GetOr<PartialShape>("shape", PartialShape::Unknown()));
  Tensor* out;
  FS_RETURN_IF_ERROR(AllocateHostOutput(ctx, TensorShape{}, &out));
  std::memcpy(out->raw_data(), &var, sizeof(var));
  return Status::OK();
}

FS_REGISTER_GPU_KERNEL(GpuKernel("Shape", Shape).Types(kGpuFloatTypes).HostMemory("output"));
FS_REGISTER_GPU_KERNEL(GpuKernel("Size", Size).Types(kGpuFloatTypes).HostMemory("output"));
FS_REGISTER_GPU_KERNEL(GpuKernel("Rank", Rank).Types(kGpuFloatTypes).HostMemory("output"));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("VarHandleOp", VarHandle).Types(kGpuFloatTypes).HostMemory("resource"));

}  // namespace
}  // namespace flowstone::cuda
