// Checkpoint files through the public C++ API: CRC32C, round trips, errors, atomic writes.
#include "flowstone/checkpoint.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/fs_ckpt_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& name : Files()) unlink((dir_ + "/" + name).c_str());
    rmdir(dir_.c_str());
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      closedir(d);
    }
    return names;
  }

  std::unique_ptr<Session> NewSession() {
    std::unique_ptr<Session> session;
    Status s = Session::Create(b_.graph(), {}, &session);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return session;
  }

  // layer/w: float32 [2,3], step: int64 scalar, mask: bool [3], h: float16 [2].
  void BuildModel() {
    w_ = b_.NewVariable("layer/w", b_.Const(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})));
    step_ = b_.NewVariable("step", b_.Const(Tensor::Scalar<int64_t>(int64_t{1} << 40)));
    mask_ = b_.NewVariable("mask", b_.Const(Tensor::FromVector<bool>({true, false, true}, {3})));
    h_ = b_.NewVariable("h", b_.Const(Tensor::FromVector<Half>({Half(0.5f), Half(-2.0f)}, {2})));
    ASSERT_TRUE(b_.status().ok()) << b_.status().ToString();
    vars_ = {{"layer/w", w_.handle.node},
             {"step", step_.handle.node},
             {"mask", mask_.handle.node},
             {"h", h_.handle.node}};
  }

  void Initialize(Session& session) {
    std::vector<Tensor> out;
    Status s = session.Run(
        {}, {}, {w_.initializer, step_.initializer, mask_.initializer, h_.initializer}, &out);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<Tensor> Read(Session& session) {
    std::vector<Tensor> out;
    Status s = session.Run({}, {w_.value, step_.value, mask_.value, h_.value}, {}, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  std::string dir_;
  GraphBuilder b_;
  GraphBuilder::Variable w_, step_, mask_, h_;
  CheckpointVars vars_;
};

TEST_F(CheckpointTest, RoundTripIntoAFreshSessionWithoutInitializers) {
  BuildModel();
  std::string path = dir_ + "/model.ckpt";
  {
    auto session = NewSession();
    Initialize(*session);
    Status s = SaveCheckpoint(*session, vars_, path);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(Files(), std::vector<std::string>{"model.ckpt"});  // no temporary file left

  auto session = NewSession();
  Status s = RestoreCheckpoint(*session, vars_, path);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<Tensor> values = Read(*session);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[0].shape(), TensorShape({2, 3}));
  EXPECT_EQ(values[0].data<float>()[5], 6.0f);
  EXPECT_EQ(*values[1].data<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(values[2].dtype(), DType::kBool);
  EXPECT_TRUE(values[2].data<bool>()[2]);
  EXPECT_FALSE(values[2].data<bool>()[1]);
  EXPECT_EQ(static_cast<float>(values[3].data<Half>()[1]), -2.0f);

  std::vector<CheckpointEntry> entries;
  ASSERT_TRUE(ListCheckpoint(path, &entries).ok());
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].key, "h");
  EXPECT_EQ(entries[1].key, "layer/w");
  EXPECT_EQ(entries[1].dtype, DType::kFloat32);
  EXPECT_EQ(entries[1].shape, TensorShape({2, 3}));
  EXPECT_EQ(entries[3].key, "step");
  EXPECT_EQ(entries[3].shape, TensorShape({}));
}

TEST_F(CheckpointTest, SavingUninitializedOrNonVariablesFailsAndWritesNothing) {
  BuildModel();
  Endpoint c = b_.Const(Tensor::Scalar<float>(1.0f), "not_a_var");
  auto session = NewSession();
  std::string path = dir_ + "/m";
  Status s = SaveCheckpoint(*session, vars_, path);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("Attempting to use uninitialized value layer/w"), std::string::npos)
      << s.message();

  Initialize(*session);
  s = SaveCheckpoint(*session, {{"x", c.node}}, path);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("not_a_var is a Const"), std::string::npos) << s.message();
  s = SaveCheckpoint(*session, {{"x", w_.handle.node}, {"x", step_.handle.node}}, path);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Files().empty());

  s = SaveCheckpoint(*session, vars_, dir_ + "/missing/dir/m");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find(dir_ + "/missing/dir/m.tmp-"), std::string::npos) << s.message();

  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(SaveCheckpoint(*session, vars_, path).code(), Code::kFailedPrecondition);
}

TEST_F(CheckpointTest, RestoreErrorsChangeNothing) {
  BuildModel();
  std::string path = dir_ + "/m";
  auto saver = NewSession();
  Initialize(*saver);
  ASSERT_TRUE(SaveCheckpoint(*saver, {{"layer/w", w_.handle.node}}, path).ok());

  // A model with a differently shaped variable and one the checkpoint lacks.
  GraphBuilder other;
  auto w = other.NewVariable("layer/w",
                             other.Const(Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, {3, 2})));
  auto bias = other.NewVariable("layer/b", other.Const(Tensor::Scalar<float>(0.0f)));
  auto same =
      other.NewVariable("same", other.Const(Tensor::FromVector<float>({9, 9, 9, 9, 9, 9}, {2, 3})));
  ASSERT_TRUE(other.status().ok());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(other.graph(), {}, &session).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {same.initializer}, &out).ok());

  Status s = RestoreCheckpoint(
      *session, {{"layer/w", same.handle.node}, {"layer/b", bias.handle.node}}, path);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "Key layer/b not found in checkpoint " + path);

  s = RestoreCheckpoint(*session, {{"layer/w", same.handle.node}, {"layer/w", w.handle.node}},
                        path);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("variable has shape [3,2]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("with shape [2,3]"), std::string::npos) << s.message();

  // Neither failed restore touched `same`.
  ASSERT_TRUE(session->Run({}, {same.value}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 9.0f);

  // Restoring the right key into `same` works (keys, not variable names, select values).
  ASSERT_TRUE(RestoreCheckpoint(*session, {{"layer/w", same.handle.node}}, path).ok());
  ASSERT_TRUE(session->Run({}, {same.value}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[5], 6.0f);

  s = RestoreCheckpoint(*session, {{"layer/w", same.handle.node}}, dir_ + "/nope");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find(dir_ + "/nope"), std::string::npos);
}

TEST_F(CheckpointTest, DamagedFilesAreDataLoss) {
  BuildModel();
  std::string path = dir_ + "/m";
  auto session = NewSession();
  Initialize(*session);
  ASSERT_TRUE(SaveCheckpoint(*session, vars_, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  auto check = [&](const std::string& contents, const std::string& expected) {
    std::string damaged = dir_ + "/damaged";
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << contents;
    std::vector<Tensor> values;
    Status s = ReadCheckpointTensors(damaged, {"layer/w", "step", "mask", "h"}, &values);
    EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
    EXPECT_NE(s.message().find(damaged), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  };
  for (size_t keep : {size_t{0}, size_t{5}, size_t{43}, bytes.size() / 2, bytes.size() - 1}) {
    check(bytes.substr(0, keep), "truncated");
  }
  // Whatever single byte is damaged, reading fails instead of returning wrong values.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x21;
    check(damaged, "");
  }
  std::string flipped = bytes;
  flipped[bytes.size() - 13] ^= 1;  // the last byte of the data section
  check(flipped, "the data of step fails the CRC32C check");
  flipped = bytes;
  flipped[40] ^= 1;
  check(flipped, "index fails the CRC32C check");
  check("not a checkpoint at all, but long enough to have a header and footer", "magic");
}

TEST_F(CheckpointTest, TensorsOfEveryDtypeRoundTripBitForBit) {
  std::vector<std::pair<std::string, Tensor>> values = {
      {"f64", Tensor::FromVector<double>({1.0 / 3, -0.0}, {2})},
      {"i32", Tensor::FromVector<int32_t>({-7, 1 << 30, 0}, {3, 1})},
      {"u8", Tensor::FromVector<uint8_t>({0, 255}, {2})},
      {"bf16", Tensor::FromVector<BFloat16>({BFloat16(1.5f), BFloat16(-3.0f)}, {1, 2})},
      {"empty", Tensor::Host(DType::kFloat32, TensorShape({0, 4}))},
      {"scalar", Tensor::Scalar<int64_t>(-1)},
  };
  std::string path = dir_ + "/tensors";
  ASSERT_TRUE(WriteCheckpoint(values, path).ok());
  std::vector<std::string> keys;
  for (const auto& [key, _] : values) keys.push_back(key);
  std::vector<Tensor> read;
  Status s = ReadCheckpointTensors(path, keys, &read);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& expected = values[i].second;
    EXPECT_EQ(read[i].dtype(), expected.dtype()) << keys[i];
    EXPECT_EQ(read[i].shape(), expected.shape()) << keys[i];
    EXPECT_EQ(std::memcmp(read[i].raw_data(), expected.raw_data(), expected.bytes()), 0) << keys[i];
  }
  s = ReadCheckpointTensors(path, {"f64", "nope"}, &read);
  EXPECT_EQ(s.code(), Code::kNotFound);

  values.push_back({"f64", Tensor::Scalar<float>(1.0f)});
  EXPECT_EQ(WriteCheckpoint(values, path).code(), Code::kInvalidArgument);
}

TEST_F(CheckpointTest, WriteFileAtomicallyReplacesContents) {
  std::string path = dir_ + "/state";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second");
  EXPECT_EQ(Files(), std::vector<std::string>{"state"});
}

}  // namespace
}  // namespace flowstone
