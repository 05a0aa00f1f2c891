#include "io/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flowstone::io {
namespace {

// Check values from RFC 3720 (iSCSI), appendix B.4, and the standard "123456789" check value.
TEST(Crc32cTest, MatchesPublishedCheckValues) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff), ascending(32), descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<unsigned char>(i);
    descending[i] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62a8ab43u);
  EXPECT_EQ(Crc32c(ascending.data(), ascending.size()), 0x46dd794eu);
  EXPECT_EQ(Crc32c(descending.data(), descending.size()), 0x113fdb5cu);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, ExtendingInPiecesEqualsOneCall) {
  std::string text = "TFRecord framing: length, masked crc of length, data, masked crc of data";
  uint32_t whole = Crc32c(text.data(), text.size());
  for (size_t split = 0; split <= text.size(); ++split) {
    uint32_t first = Crc32c(text.data(), split);
    EXPECT_EQ(Crc32cExtend(first, text.data() + split, text.size() - split), whole) << split;
  }
}

TEST(Crc32cTest, MaskIsTensorFlowsAndUnmaskInvertsIt) {
  // TensorFlow's mask of the crc of "123456789": rotate right 15, add 0xa282ead8.
  uint32_t crc = 0xe3069283u;
  uint32_t expected = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  EXPECT_EQ(MaskCrc32c(crc), expected);
  for (uint32_t value : {0u, 1u, 0xffffffffu, 0xe3069283u, 0x12345678u}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(value)), value);
    EXPECT_NE(MaskCrc32c(value), value);
  }
}

}  // namespace
}  // namespace flowstone::io
