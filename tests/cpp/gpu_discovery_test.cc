// GPU settings discovery applies for every platform, tested without a GPU.
#include "runtime/gpu_discovery.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace flowstone {
namespace {

TEST(GpuDiscovery, ForceAllowGrowthEnvironment) {
  unsetenv("TF_FORCE_GPU_ALLOW_GROWTH");
  EXPECT_FALSE(GpuAllowGrowth(false));
  EXPECT_TRUE(GpuAllowGrowth(true));
  setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true", 1);
  EXPECT_TRUE(GpuAllowGrowth(false));
  setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false", 1);
  EXPECT_FALSE(GpuAllowGrowth(true));
  setenv("TF_FORCE_GPU_ALLOW_GROWTH", "yes", 1);  // not understood: the configuration stands
  EXPECT_TRUE(GpuAllowGrowth(true));
  EXPECT_FALSE(GpuAllowGrowth(false));
  unsetenv("TF_FORCE_GPU_ALLOW_GROWTH");
}

}  // namespace
}  // namespace flowstone
