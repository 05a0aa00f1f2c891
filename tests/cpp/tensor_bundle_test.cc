// The .index table and the tensor bundle: round trips and damaged files (untrusted input).
#include "flowstone/tensor_bundle.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "io/table.h"

namespace flowstone {
namespace {

TEST(TableTest, RoundTripsManyKeysAcrossBlocks) {
  io::TableBuilder builder;
  std::vector<std::pair<std::string, std::string>> expected;
  for (int i = 0; i < 20000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "layer_%06d/kernel", i);
    expected.emplace_back(key, std::string(static_cast<size_t>(i % 50), static_cast<char>(i)));
    ASSERT_TRUE(builder.Add(expected.back().first, expected.back().second).ok());
  }
  EXPECT_FALSE(builder.Add("a", "out of order").ok());
  std::string table = builder.Finish();
  EXPECT_GT(table.size(), 2u * 256 * 1024);  // several data blocks
  std::vector<std::pair<std::string, std::string>> entries;
  ASSERT_TRUE(io::ReadTable(table, "t", &entries).ok());
  EXPECT_EQ(entries, expected);
}

TEST(TableTest, DamageIsDataLossNeverACrash) {
  io::TableBuilder builder;
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(builder.Add("key" + std::to_string(1000 + i), "v").ok());
  const std::string table = builder.Finish();
  std::mt19937 rng(3);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = table;
    if (trial % 3 == 0) {
      damaged.resize(rng() % table.size());
    } else {
      damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    std::vector<std::pair<std::string, std::string>> entries;
    Status s = io::ReadTable(damaged, "t", &entries);
    if (!s.ok()) EXPECT_EQ(s.code(), Code::kDataLoss) << s.message();
  }
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bundle_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    prefix_ = (dir_ / "model.ckpt").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string prefix_;
};

TEST_F(BundleTest, WritesListsAndReads) {
  Tensor w = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{2, 3});
  Tensor step = Tensor::Scalar<int64_t>(9);
  ASSERT_TRUE(WriteTensorBundle({{"w", w}, {"global_step", step}}, prefix_).ok());
  EXPECT_TRUE(IsTensorBundle(prefix_));
  std::vector<CheckpointEntry> entries;
  ASSERT_TRUE(ListTensorBundle(prefix_, &entries).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key, "global_step");
  EXPECT_EQ(entries[1].shape, (TensorShape{2, 3}));
  std::vector<Tensor> values;
  ASSERT_TRUE(ReadTensorBundle(prefix_, {"w", "global_step"}, &values).ok());
  EXPECT_EQ(values[0].data<float>()[5], 6.0f);
  EXPECT_EQ(values[1].data<int64_t>()[0], 9);
  EXPECT_EQ(ReadTensorBundle(prefix_, {"missing"}, &values).code(), Code::kNotFound);
  EXPECT_EQ(WriteTensorBundle({{"w", w}, {"w", w}}, prefix_).code(), Code::kInvalidArgument);
}

TEST_F(BundleTest, IndexPointingPastTheDataFileIsDataLoss) {
  std::vector<float> big(1000, 1.5f);
  ASSERT_TRUE(
      WriteTensorBundle({{"w", Tensor::FromVector<float>(big, TensorShape{1000})}}, prefix_).ok());
  std::filesystem::resize_file(prefix_ + ".data-00000-of-00001", 100);
  std::vector<Tensor> values;
  Status s = ReadTensorBundle(prefix_, {"w"}, &values);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("but the data file"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace flowstone
