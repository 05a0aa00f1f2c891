#include "gpu_memory_rule.h"

#include <algorithm>

namespace flowstone::cuda {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

int64_t GpuMemoryLimitBytes(const GpuMemoryOptions& memory, int64_t free_bytes,
                            int64_t total_bytes) {
  if (memory.memory_limit_bytes > 0) return memory.memory_limit_bytes;
  if (memory.memory_fraction > 0) {
    return static_cast<int64_t>(static_cast<double>(total_bytes) * memory.memory_fraction);
  }
  const int64_t reserve =
      total_bytes < 2 * kGiB ? 225 * kMiB : std::max<int64_t>(300 * kMiB, total_bytes / 20);
  return std::max<int64_t>(0, free_bytes - reserve);
}

}  // namespace flowstone::cuda
