// What the CPU this process runs on can execute, read once from CPUID (x86-64 only), for
// `flowstone doctor` and `_C.cpu_info()`.
#pragma once

#include <string>
#include <vector>

namespace flowstone {

// An instruction set counts as present only when the CPU has it and the operating system saves
// its registers on a context switch (XGETBV's XCR0): a CPU with AVX-512 under an OS that does not
// enable the ZMM state cannot run AVX-512 code.
struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"; empty on other architectures
  std::string brand;   // the model name, e.g. "Intel(R) Xeon(R) Platinum 8480+"
  bool sse4_2 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  // AMX also needs a per-process permission request on Linux (arch_prctl); these say that the
  // CPU has the units and the OS enables their state.
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;

  // The present instruction sets by name, in the order above: {"sse4.2", "avx", "avx2", ...}.
  std::vector<std::string> FeatureNames() const;
};

// The CPU this process runs on; detected on the first call.
const CpuInfo& GetCpuInfo();

}  // namespace flowstone
