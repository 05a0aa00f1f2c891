// FS_MULTIVERSION compiles a hot function twice, for AVX2+FMA (x86-64-v3) and for baseline
// x86-64, and picks one when the library loads, so one binary is fast on current CPUs and still
// runs on old ones.
#pragma once

#include <string>
#include <vector>

// Sanitizer runtimes are not ready when the loader runs ifunc resolvers, so sanitizer builds use
// the baseline version only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define FS_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#define FS_MULTIVERSION_ENABLED 1
#else
#define FS_MULTIVERSION
#define FS_MULTIVERSION_ENABLED 0
#endif

namespace flowstone {

// The clone FS_MULTIVERSION functions run on this CPU: "avx2+fma" when the loader picks the
// x86-64-v3 one, else "baseline" (the build's FLOWSTONE_BASELINE_ISA).
std::string DispatchedKernelIsa();

// The kernels with FS_MULTIVERSION loops, for `flowstone doctor`; keep in step with the uses.
const std::vector<std::string>& DispatchedKernels();

}  // namespace flowstone
