#include "core/cpu_info.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FS_CPUID_AVAILABLE 1
#endif

namespace flowstone {
namespace {

#ifdef FS_CPUID_AVAILABLE

struct Registers {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers Cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  Registers r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool Bit(uint32_t reg, int bit) { return (reg >> bit) & 1; }

// XCR0: the register states the OS saves and restores. Read with the raw instruction so that
// this file needs no -mxsave; only called when CPUID says OSXSAVE is set, so it cannot fault.
uint64_t ReadXcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// XCR0 bits: 1 SSE, 2 AVX (upper YMM), 5-7 AVX-512 (opmask, upper ZMM0-15, ZMM16-31),
// 17-18 AMX (tile config, tile data).
constexpr uint64_t kAvxState = (1u << 1) | (1u << 2);
constexpr uint64_t kAvx512State = kAvxState | (1u << 5) | (1u << 6) | (1u << 7);
constexpr uint64_t kAmxState = (1u << 17) | (1u << 18);

std::string Vendor() {
  const Registers r = Cpuid(0);
  char name[13] = {};
  std::memcpy(name, &r.ebx, 4);
  std::memcpy(name + 4, &r.edx, 4);
  std::memcpy(name + 8, &r.ecx, 4);
  return name;
}

// The brand string of leaves 0x80000002-4, without the padding some CPUs put around it.
std::string Brand() {
  if (Cpuid(0x80000000).eax < 0x80000004) return "";
  char brand[49] = {};
  for (uint32_t i = 0; i < 3; ++i) {
    const Registers r = Cpuid(0x80000002 + i);
    std::memcpy(brand + 16 * i, &r, 16);
  }
  std::string s(brand);
  const size_t first = s.find_first_not_of(' ');
  const size_t last = s.find_last_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

CpuInfo Detect() {
  CpuInfo info;
  info.vendor = Vendor();
  info.brand = Brand();
  const uint32_t max_leaf = Cpuid(0).eax;
  if (max_leaf < 1) return info;
  const Registers leaf1 = Cpuid(1);
  info.sse4_2 = Bit(leaf1.ecx, 20);
  const bool osxsave = Bit(leaf1.ecx, 27);
  const uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool avx_state = (xcr0 & kAvxState) == kAvxState;
  const bool avx512_state = (xcr0 & kAvx512State) == kAvx512State;
  const bool amx_state = (xcr0 & kAmxState) == kAmxState;
  info.avx = Bit(leaf1.ecx, 28) && avx_state;
  info.fma = Bit(leaf1.ecx, 12) && avx_state;
  if (max_leaf < 7) return info;
  const Registers leaf7 = Cpuid(7, 0);
  info.avx2 = Bit(leaf7.ebx, 5) && avx_state;
  info.avx512f = Bit(leaf7.ebx, 16) && avx512_state;
  info.avx512bw = Bit(leaf7.ebx, 30) && avx512_state;
  info.avx512vl = Bit(leaf7.ebx, 31) && avx512_state;
  info.amx_bf16 = Bit(leaf7.edx, 22) && amx_state;
  info.amx_tile = Bit(leaf7.edx, 24) && amx_state;
  info.amx_int8 = Bit(leaf7.edx, 25) && amx_state;
  return info;
}

#else

// Not x86: none of the x86 instruction sets above exist.
CpuInfo Detect() { return CpuInfo{}; }

#endif  // FS_CPUID_AVAILABLE

}  // namespace

std::vector<std::string> CpuInfo::FeatureNames() const {
  const std::pair<bool, const char*> features[] = {
      {sse4_2, "sse4.2"},     {avx, "avx"},           {avx2, "avx2"},
      {fma, "fma"},           {avx512f, "avx512f"},   {avx512bw, "avx512bw"},
      {avx512vl, "avx512vl"}, {amx_tile, "amx-tile"}, {amx_bf16, "amx-bf16"},
      {amx_int8, "amx-int8"},
  };
  std::vector<std::string> names;
  for (const auto& [present, name] : features) {
    if (present) names.push_back(name);
  }
  return names;
}

const CpuInfo& GetCpuInfo() {
  static const CpuInfo info = Detect();
  return info;
}

}  // namespace flowstone
