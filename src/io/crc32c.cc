#include "io/crc32c.h"

#include <array>
#include <cstring>

namespace flowstone::io {
namespace {

// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82f63b78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    table[byte] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t ExtendWithTable(uint32_t crc, const unsigned char* bytes, size_t size) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendWithSse42(uint32_t crc, const unsigned char* bytes,
                                                           size_t size) {
  uint64_t state = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, bytes, 8);
    state = __builtin_ia32_crc32di(state, word);
    bytes += 8;
    size -= 8;
  }
  uint32_t state32 = static_cast<uint32_t>(state);
  while (size > 0) {
    state32 = __builtin_ia32_crc32qi(state32, *bytes);
    ++bytes;
    --size;
  }
  return ~state32;
}

bool CpuHasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (CpuHasSse42()) return ExtendWithSse42(crc, bytes, size);
#endif
  return ExtendWithTable(crc, bytes, size);
}

}  // namespace flowstone::io
