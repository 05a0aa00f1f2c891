// GPU kernels for the optimizer updates of src/ops/training_ops.cc (float32 and float64):
// ResourceApplyGradientDescent, ResourceApplyMomentum, ResourceApplyAdam, ResourceApplyRMSProp,
// ResourceApplyCenteredRMSProp and ResourceApplyAdagrad.
//
// The variables (resource handles) and the scalar hyper-parameters are host-memory arguments:
// the kernel looks the variables up on the host, reads lr, beta1 and the rest there and passes
// them to the CUDA kernel as arguments; the gradient and the variables' values are in device
// memory. The update rules are the CPU's, term for term.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "cuda/gpu_launch.h"
#include "flowstone/kernel.h"
#include "flowstone/resource.h"
#include "ops/optimizer_support.h"

namespace flowstone::cuda {
namespace {

#define FS_FOR_EACH_ELEMENT(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

template <typename T>
__global__ void GradientDescentKernel(int64_t n, T* w, const T* g, T lr) {
  FS_FOR_EACH_ELEMENT(i, n) { w[i] -= lr * g[i]; }
}

template <typename T>
__global__ void MomentumKernel(int64_t n, T* w, T* accum, const T* g, T lr, T momentum,
                               bool nesterov) {
  FS_FOR_EACH_ELEMENT(i, n) {
    accum[i] = accum[i] * momentum + g[i];
    w[i] -= nesterov ? g[i] * lr + accum[i] * momentum * lr : lr * accum[i];
  }
}

// `mix`/`grad_mix` are (1, 0) for plain and (beta1, 1 - beta1) for Nesterov momentum.
template <typename T>
__global__ void AdamKernel(int64_t n, T* w, T* m, T* v, const T* g, T lr_t, T beta1, T beta2,
                           T epsilon, T mix, T grad_mix) {
  const T one_minus_beta1 = T(1) - beta1;
  const T one_minus_beta2 = T(1) - beta2;
  FS_FOR_EACH_ELEMENT(i, n) {
    const T mi = m[i] + (g[i] - m[i]) * one_minus_beta1;
    const T vi = v[i] + (g[i] * g[i] - v[i]) * one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr_t * (mi * mix + grad_mix * g[i]) / (sqrt(vi) + epsilon);
  }
}

template <typename T>
__global__ void RMSPropKernel(int64_t n, T* w, T* ms, T* mom, const T* g, T lr, T rho, T momentum,
                              T epsilon) {
  FS_FOR_EACH_ELEMENT(i, n) {
    ms[i] += (g[i] * g[i] - ms[i]) * (T(1) - rho);
    mom[i] = mom[i] * momentum + lr * g[i] / sqrt(ms[i] + epsilon);
    w[i] -= mom[i];
  }
}

template <typename T>
__global__ void CenteredRMSPropKernel(int64_t n, T* w, T* mg, T* ms, T* mom, const T* g, T lr,
                                      T rho, T momentum, T epsilon) {
  FS_FOR_EACH_ELEMENT(i, n) {
    ms[i] += (g[i] * g[i] - ms[i]) * (T(1) - rho);
    mg[i] += (g[i] - mg[i]) * (T(1) - rho);
    mom[i] = mom[i] * momentum + lr * g[i] / sqrt(ms[i] - mg[i] * mg[i] + epsilon);
    w[i] -= mom[i];
  }
}

template <typename T>
__global__ void AdagradKernel(int64_t n, T* w, T* accum, const T* g, T lr, bool update_slots) {
  FS_FOR_EACH_ELEMENT(i, n) {
    if (update_slots) accum[i] += g[i] * g[i];
    w[i] -= lr * g[i] / sqrt(accum[i]);
  }
}

#undef FS_FOR_EACH_ELEMENT

// ---------------------------------------------------------------------------------------------
// Host side.

// True when `ptr` is memory a CUDA kernel can write (device or managed memory).
bool IsDeviceMemory(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();  // clear it, so that the next LaunchCheck does not report it
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// A variable's private copy before an update, on the device's stream.
Status DeviceCopy(KernelContext& ctx, const Tensor& from, Tensor* to) {
  return CudaCheck(cudaMemcpyAsync(to->raw_data(), from.raw_data(), from.bytes(),
                                   cudaMemcpyDeviceToDevice, StreamOf(ctx)),
                   "cudaMemcpyAsync (copy of a variable before an update)");
}

// The shared checks, and that every variable really is in device memory.
Status CheckGpuOptimizerInputs(KernelContext& ctx, const LockedVars& vars, int grad_index) {
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, grad_index));
  for (int k = 0; k < vars.num_vars(); ++k) {
    Var* v = vars.var(k);
    if (v->value().num_elements() > 0 && !IsDeviceMemory(v->value().raw_data())) {
      return errors::FailedPrecondition(
          "Variable ", v->name(), " is in host memory, but ", ctx.node().type(), " runs on ",
          ctx.device()->name(),
          ". Create the variable and its optimizer on the same device (one tf.device scope), "
          "or let the placer colocate them by not pinning either.");
    }
  }
  return Status::OK();
}

// Launches kernel<<<...>>>(n, args...) for the variables' elements, unless there are none.
template <typename... Params, typename... Args>
Status Launch(KernelContext& ctx, const char* name, int64_t n, void (*kernel)(int64_t, Params...),
              Args... args) {
  if (n == 0) return Status::OK();
  kernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(n, args...);
  return LaunchCheck(name);
}

Status ApplyGradientDescentGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 2));
  return DispatchDType<float, double>(
      ctx.input(2).dtype(), "ResourceApplyGradientDescent", [&]<typename T>() -> Status {
        return Launch(ctx, "ResourceApplyGradientDescent", vars.size(), GradientDescentKernel<T>,
                      vars.data<T>(0), ctx.input(2).data<T>(), ScalarInput<T>(ctx, 1));
      });
}

Status ApplyMomentumGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 3));
  const bool nesterov = ctx.attrs().GetOr<bool>("use_nesterov", false);
  return DispatchDType<float, double>(
      ctx.input(3).dtype(), "ResourceApplyMomentum", [&]<typename T>() -> Status {
        return Launch(ctx, "ResourceApplyMomentum", vars.size(), MomentumKernel<T>, vars.data<T>(0),
                      vars.data<T>(1), ctx.input(3).data<T>(), ScalarInput<T>(ctx, 2),
                      ScalarInput<T>(ctx, 4), nesterov);
      });
}

Status ApplyAdamGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 9));
  const bool nesterov = ctx.attrs().GetOr<bool>("use_nesterov", false);
  return DispatchDType<float, double>(
      ctx.input(9).dtype(), "ResourceApplyAdam", [&]<typename T>() -> Status {
        const T beta1_power = ScalarInput<T>(ctx, 3);
        const T beta2_power = ScalarInput<T>(ctx, 4);
        const T lr = ScalarInput<T>(ctx, 5);
        const T beta1 = ScalarInput<T>(ctx, 6);
        const T beta2 = ScalarInput<T>(ctx, 7);
        const T epsilon = ScalarInput<T>(ctx, 8);
        const T lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
        const T mix = nesterov ? beta1 : T(1);
        const T grad_mix = nesterov ? T(1) - beta1 : T(0);
        return Launch(ctx, "ResourceApplyAdam", vars.size(), AdamKernel<T>, vars.data<T>(0),
                      vars.data<T>(1), vars.data<T>(2), ctx.input(9).data<T>(), lr_t, beta1, beta2,
                      epsilon, mix, grad_mix);
      });
}

Status ApplyRMSPropGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 7));
  return DispatchDType<float, double>(
      ctx.input(7).dtype(), "ResourceApplyRMSProp", [&]<typename T>() -> Status {
        return Launch(ctx, "ResourceApplyRMSProp", vars.size(), RMSPropKernel<T>, vars.data<T>(0),
                      vars.data<T>(1), vars.data<T>(2), ctx.input(7).data<T>(),
                      ScalarInput<T>(ctx, 3), ScalarInput<T>(ctx, 4), ScalarInput<T>(ctx, 5),
                      ScalarInput<T>(ctx, 6));
      });
}

Status ApplyCenteredRMSPropGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2, 3}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 8));
  return DispatchDType<float, double>(
      ctx.input(8).dtype(), "ResourceApplyCenteredRMSProp", [&]<typename T>() -> Status {
        return Launch(ctx, "ResourceApplyCenteredRMSProp", vars.size(), CenteredRMSPropKernel<T>,
                      vars.data<T>(0), vars.data<T>(1), vars.data<T>(2), vars.data<T>(3),
                      ctx.input(8).data<T>(), ScalarInput<T>(ctx, 4), ScalarInput<T>(ctx, 5),
                      ScalarInput<T>(ctx, 6), ScalarInput<T>(ctx, 7));
      });
}

Status ApplyAdagradGpu(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1}, DeviceCopy);
  FS_RETURN_IF_ERROR(CheckGpuOptimizerInputs(ctx, vars, 3));
  const bool update_slots = ctx.attrs().GetOr<bool>("update_slots", true);
  return DispatchDType<float, double>(
      ctx.input(3).dtype(), "ResourceApplyAdagrad", [&]<typename T>() -> Status {
        return Launch(ctx, "ResourceApplyAdagrad", vars.size(), AdagradKernel<T>, vars.data<T>(0),
                      vars.data<T>(1), ctx.input(3).data<T>(), ScalarInput<T>(ctx, 2),
                      update_slots);
      });
}

// Registers an update op with its resource inputs and scalar inputs in host memory.
GpuKernel ApplyKernel(const char* op, KernelFn fn, const std::vector<std::string>& host_args) {
  GpuKernel kernel(op, std::move(fn));
  kernel.Types({DType::kFloat32, DType::kFloat64});
  for (const std::string& arg : host_args) kernel.HostMemory(arg);
  return kernel;
}

FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyGradientDescent", ApplyGradientDescentGpu,
                                   {"var", "alpha"}));
FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyMomentum", ApplyMomentumGpu,
                                   {"var", "accum", "lr", "momentum"}));
FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyAdam", ApplyAdamGpu,
                                   {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                                    "beta2", "epsilon"}));
FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyRMSProp", ApplyRMSPropGpu,
                                   {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon"}));
FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyCenteredRMSProp", ApplyCenteredRMSPropGpu,
                                   {"var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon"}));
FS_REGISTER_GPU_KERNEL(ApplyKernel("ResourceApplyAdagrad", ApplyAdagradGpu,
                                   {"var", "accum", "lr"}));

}  // namespace
}  // namespace flowstone::cuda
