// Optimizer update rules, applied in place to resource variables (and their slots). Each kernel
// locks the variables it updates; a value still shared with a reader is copied before writing.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/multiversion.h"
#include "ops/optimizer_support.h"

namespace flowstone {
namespace {

Status ApplyGradientDescent(KernelContext& ctx) {
  LockedVars vars(ctx, {0}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 2));
  return DispatchDType<float, double>(ctx.input(2).dtype(), "ResourceApplyGradientDescent",
                                      [&]<typename T>() -> Status {
                                        T* w = vars.data<T>(0);
                                        const T* g = ctx.input(2).data<T>();
                                        const T lr = ScalarInput<T>(ctx, 1);
                                        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
                                          for (int64_t i = b; i < e; ++i) w[i] -= lr * g[i];
                                        });
                                        return Status::OK();
                                      });
}

Status ApplyMomentum(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 3));
  const bool nesterov = ctx.attrs().GetOr<bool>("use_nesterov", false);
  return DispatchDType<float, double>(
      ctx.input(3).dtype(), "ResourceApplyMomentum", [&]<typename T>() -> Status {
        T* w = vars.data<T>(0);
        T* accum = vars.data<T>(1);
        const T lr = ScalarInput<T>(ctx, 2);
        const T* g = ctx.input(3).data<T>();
        const T momentum = ScalarInput<T>(ctx, 4);
        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            accum[i] = accum[i] * momentum + g[i];
            w[i] -= nesterov ? g[i] * lr + accum[i] * momentum * lr : lr * accum[i];
          }
        });
        return Status::OK();
      });
}

// One block of the Adam update; `mix`/`grad_mix` select plain (1, 0) or Nesterov
// (beta1, 1 - beta1) momentum without a branch in the loop.
template <typename T>
inline void AdamBlockImpl(int64_t n, T* __restrict w, T* __restrict m, T* __restrict v,
                          const T* __restrict g, T lr_t, T beta1, T beta2, T epsilon, T mix,
                          T grad_mix) {
  const T one_minus_beta1 = T(1) - beta1;
  const T one_minus_beta2 = T(1) - beta2;
  for (int64_t i = 0; i < n; ++i) {
    const T mi = m[i] + (g[i] - m[i]) * one_minus_beta1;
    const T vi = v[i] + (g[i] * g[i] - v[i]) * one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr_t * (mi * mix + grad_mix * g[i]) / (std::sqrt(vi) + epsilon);
  }
}

FS_MULTIVERSION void AdamBlock(int64_t n, float* w, float* m, float* v, const float* g, float lr_t,
                               float beta1, float beta2, float epsilon, float mix, float grad_mix) {
  AdamBlockImpl(n, w, m, v, g, lr_t, beta1, beta2, epsilon, mix, grad_mix);
}

FS_MULTIVERSION void AdamBlock(int64_t n, double* w, double* m, double* v, const double* g,
                               double lr_t, double beta1, double beta2, double epsilon, double mix,
                               double grad_mix) {
  AdamBlockImpl(n, w, m, v, g, lr_t, beta1, beta2, epsilon, mix, grad_mix);
}

Status ApplyAdam(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 9));
  const bool nesterov = ctx.attrs().GetOr<bool>("use_nesterov", false);
  return DispatchDType<float, double>(
      ctx.input(9).dtype(), "ResourceApplyAdam", [&]<typename T>() -> Status {
        T* w = vars.data<T>(0);
        T* m = vars.data<T>(1);
        T* v = vars.data<T>(2);
        const T beta1_power = ScalarInput<T>(ctx, 3);
        const T beta2_power = ScalarInput<T>(ctx, 4);
        const T lr = ScalarInput<T>(ctx, 5);
        const T beta1 = ScalarInput<T>(ctx, 6);
        const T beta2 = ScalarInput<T>(ctx, 7);
        const T epsilon = ScalarInput<T>(ctx, 8);
        const T* g = ctx.input(9).data<T>();
        const T lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
        const T mix = nesterov ? beta1 : T(1);
        const T grad_mix = nesterov ? T(1) - beta1 : T(0);
        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
          AdamBlock(e - b, w + b, m + b, v + b, g + b, lr_t, beta1, beta2, epsilon, mix, grad_mix);
        });
        return Status::OK();
      });
}

// One block of the RMSProp update. Apart (restrict, and compiled for AVX2) the loop vectorizes,
// square root and division included; ResourceApplyRMSProp of the tutorial CNN's 2048x625 kernel
// took about twice TensorFlow's CPU time as a scalar loop.
template <typename T>
inline void RMSPropBlockImpl(int64_t n, T* __restrict w, T* __restrict ms, T* __restrict mom,
                             const T* __restrict g, T lr, T rho, T momentum, T epsilon) {
  for (int64_t i = 0; i < n; ++i) {
    const T msi = ms[i] + (g[i] * g[i] - ms[i]) * (T(1) - rho);
    const T momi = mom[i] * momentum + lr * g[i] / std::sqrt(msi + epsilon);
    ms[i] = msi;
    mom[i] = momi;
    w[i] -= momi;
  }
}

FS_MULTIVERSION void RMSPropBlock(int64_t n, float* w, float* ms, float* mom, const float* g,
                                  float lr, float rho, float momentum, float epsilon) {
  RMSPropBlockImpl(n, w, ms, mom, g, lr, rho, momentum, epsilon);
}

FS_MULTIVERSION void RMSPropBlock(int64_t n, double* w, double* ms, double* mom, const double* g,
                                  double lr, double rho, double momentum, double epsilon) {
  RMSPropBlockImpl(n, w, ms, mom, g, lr, rho, momentum, epsilon);
}

Status ApplyRMSProp(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 7));
  return DispatchDType<float, double>(
      ctx.input(7).dtype(), "ResourceApplyRMSProp", [&]<typename T>() -> Status {
        T* w = vars.data<T>(0);
        T* ms = vars.data<T>(1);
        T* mom = vars.data<T>(2);
        const T lr = ScalarInput<T>(ctx, 3);
        const T rho = ScalarInput<T>(ctx, 4);
        const T momentum = ScalarInput<T>(ctx, 5);
        const T epsilon = ScalarInput<T>(ctx, 6);
        const T* g = ctx.input(7).data<T>();
        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
          RMSPropBlock(e - b, w + b, ms + b, mom + b, g + b, lr, rho, momentum, epsilon);
        });
        return Status::OK();
      });
}

Status ApplyCenteredRMSProp(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1, 2, 3}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 8));
  return DispatchDType<float, double>(
      ctx.input(8).dtype(), "ResourceApplyCenteredRMSProp", [&]<typename T>() -> Status {
        T* w = vars.data<T>(0);
        T* mg = vars.data<T>(1);
        T* ms = vars.data<T>(2);
        T* mom = vars.data<T>(3);
        const T lr = ScalarInput<T>(ctx, 4);
        const T rho = ScalarInput<T>(ctx, 5);
        const T momentum = ScalarInput<T>(ctx, 6);
        const T epsilon = ScalarInput<T>(ctx, 7);
        const T* g = ctx.input(8).data<T>();
        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            ms[i] += (g[i] * g[i] - ms[i]) * (T(1) - rho);
            mg[i] += (g[i] - mg[i]) * (T(1) - rho);
            mom[i] = mom[i] * momentum + lr * g[i] / std::sqrt(ms[i] - mg[i] * mg[i] + epsilon);
            w[i] -= mom[i];
          }
        });
        return Status::OK();
      });
}

Status ApplyAdagrad(KernelContext& ctx) {
  LockedVars vars(ctx, {0, 1}, HostCopy);
  FS_RETURN_IF_ERROR(CheckOptimizerInputs(ctx, vars, 3));
  const bool update_slots = ctx.attrs().GetOr<bool>("update_slots", true);
  return DispatchDType<float, double>(ctx.input(3).dtype(), "ResourceApplyAdagrad",
                                      [&]<typename T>() -> Status {
                                        T* w = vars.data<T>(0);
                                        T* accum = vars.data<T>(1);
                                        const T lr = ScalarInput<T>(ctx, 2);
                                        const T* g = ctx.input(3).data<T>();
                                        ForEachBlock(ctx, vars.size(), [&](int64_t b, int64_t e) {
                                          for (int64_t i = b; i < e; ++i) {
                                            if (update_slots) accum[i] += g[i] * g[i];
                                            w[i] -= lr * g[i] / std::sqrt(accum[i]);
                                          }
                                        });
                                        return Status::OK();
                                      });
}

FS_REGISTER_OP(ApplyOp("ResourceApplyGradientDescent", {"var"}, {"alpha", "delta"})
                   .Kernel("CPU", ApplyGradientDescent)
                   .Doc("var -= alpha * delta"));

FS_REGISTER_OP(ApplyOp("ResourceApplyMomentum", {"var", "accum"}, {"lr", "grad", "momentum"})
                   .Attr("use_nesterov", false)
                   .Kernel("CPU", ApplyMomentum)
                   .Doc("accum = accum * momentum + grad; var -= lr * accum (or the Nesterov "
                        "form: var -= lr * grad + lr * momentum * accum)"));

FS_REGISTER_OP(ApplyOp("ResourceApplyAdam", {"var", "m", "v"},
                       {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"})
                   .Attr("use_nesterov", false)
                   .Kernel("CPU", ApplyAdam)
                   .Doc("lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m)(1 - beta1); "
                        "v += (g^2 - v)(1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon)"));

FS_REGISTER_OP(ApplyOp("ResourceApplyRMSProp", {"var", "ms", "mom"},
                       {"lr", "rho", "momentum", "epsilon", "grad"})
                   .Kernel("CPU", ApplyRMSProp)
                   .Doc("ms += (g^2 - ms)(1 - rho); mom = mom * momentum + lr * g / "
                        "sqrt(ms + epsilon); var -= mom"));

FS_REGISTER_OP(ApplyOp("ResourceApplyCenteredRMSProp", {"var", "mg", "ms", "mom"},
                       {"lr", "rho", "momentum", "epsilon", "grad"})
                   .Kernel("CPU", ApplyCenteredRMSProp)
                   .Doc("RMSProp normalized by the centered second moment ms - mg^2."));

FS_REGISTER_OP(ApplyOp("ResourceApplyAdagrad", {"var", "accum"}, {"lr", "grad"})
                   .Attr("update_slots", true)
                   .Kernel("CPU", ApplyAdagrad)
                   .Doc("accum += g^2; var -= lr * g / sqrt(accum)"));

}  // namespace
}  // namespace flowstone
