#include "ops/multiversion.h"

namespace flowstone {

std::string DispatchedKernelIsa() {
#if FS_MULTIVERSION_ENABLED
  // The same test the target_clones resolver makes.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) return "avx2+fma";
#endif
  return "baseline";
}

const std::vector<std::string>& DispatchedKernels() {
  static const std::vector<std::string> kernels = {
      "MatMul float64/int (GEMM tiles)",
      "ResourceApplyAdam",
  };
  return kernels;
}

}  // namespace flowstone
