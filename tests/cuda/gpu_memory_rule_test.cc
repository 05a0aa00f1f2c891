// The CUDA plugin's GPU memory rule (src/cuda/gpu_memory_rule.h), which needs no GPU.
#include "gpu_memory_rule.h"

#include <gtest/gtest.h>

namespace flowstone::cuda {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(GpuMemoryRule, ExplicitLimitWins) {
  GpuMemoryOptions memory;
  memory.memory_limit_bytes = 512 * kMiB;
  memory.memory_fraction = 0.5;
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 10 * kGiB, 16 * kGiB), 512 * kMiB);
}

TEST(GpuMemoryRule, FractionOfTotal) {
  GpuMemoryOptions memory;
  memory.memory_fraction = 0.25;
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 1 * kGiB, 16 * kGiB), 4 * kGiB);
}

TEST(GpuMemoryRule, FreeMinusReserve) {
  GpuMemoryOptions memory;
  // Large GPU: 5% of 80 GiB (4 GiB) is more than 300 MiB.
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 79 * kGiB, 80 * kGiB), 79 * kGiB - 80 * kGiB / 20);
  // 4 GiB: 5% is less than 300 MiB.
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 3 * kGiB, 4 * kGiB), 3 * kGiB - 300 * kMiB);
  // Under 2 GiB: 225 MiB.
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 1 * kGiB, 3 * kGiB / 2), 1 * kGiB - 225 * kMiB);
  // Less free than the reserve: nothing, never a negative limit.
  EXPECT_EQ(GpuMemoryLimitBytes(memory, 100 * kMiB, 16 * kGiB), 0);
}

}  // namespace
}  // namespace flowstone::cuda
