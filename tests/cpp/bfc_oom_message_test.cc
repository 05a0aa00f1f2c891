// The OOM status a kernel gets from a device whose allocator is a BfcAllocator.
#include <gtest/gtest.h>

#include "flowstone/bfc_allocator.h"
#include "flowstone/device.h"
#include "flowstone/kernel.h"
#include "flowstone/tensor.h"

namespace flowstone {
namespace {

TEST(BfcOomMessageTest, NamesTheLargestFreeBlockAndIncludesTheMemoryReport) {
  BfcOptions options;
  options.memory_limit_bytes = 1 << 20;
  BfcAllocator allocator(std::make_unique<HostSubAllocator>(), options, "GPU_0_bfc");
  Device device("GPU", 0, &allocator, nullptr);
  KernelContext::Params params;
  params.device = &device;
  KernelContext ctx(params);

  Tensor held;
  ASSERT_TRUE(ctx.AllocateTemp(DType::kFloat32, TensorShape{64 * 1024}, &held).ok());
  Tensor too_big;
  Status s = ctx.AllocateTemp(DType::kFloat32, TensorShape{1024, 1024}, &too_big);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  const std::string& message = s.message();
  EXPECT_NE(message.find("OOM when allocating tensor with shape[1024,1024] and type float on "
                         "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc. "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("; limit 1048576 bytes (1.00 MiB); largest free block 786432 bytes "
                         "(768.00 KiB). Use smaller shapes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\nAllocator (GPU_0_bfc) ran out of memory trying to allocate 4.0MiB "
                         "(rounded to 4194304)\n"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Sum Total of in-use chunks: 256.0KiB\n"), std::string::npos) << message;
}

}  // namespace
}  // namespace flowstone
