// The collectives' negotiation (rank 0's Coordinator and the wire format) without MPI, and the
// background thread on the single-process transport.
#include "flowstone/collectives.h"

#include <gtest/gtest.h>

#include <future>

#include "flowstone/allocator.h"
#include "runtime/collectives/negotiation.h"

namespace flowstone::collectives {
namespace {

RequestInfo Req(const std::string& name, std::vector<int64_t> shape,
                CollectiveKind kind = CollectiveKind::kAllreduce, DType dtype = DType::kFloat32) {
  RequestInfo q;
  q.name = name;
  q.kind = kind;
  q.dtype = dtype;
  q.shape = std::move(shape);
  return q;
}

RankMessage Msg(std::vector<RequestInfo> requests) {
  RankMessage m;
  m.requests = std::move(requests);
  return m;
}

TEST(CollectivesNegotiation, MessagesRoundTrip) {
  RankMessage m = Msg({Req("a", {2, 3}), Req("b", {4}, CollectiveKind::kAlltoall)});
  m.requests[1].splits = {1, 3};
  m.shutdown = true;
  RankMessage back;
  ASSERT_TRUE(Parse(Serialize(m), &back).ok());
  EXPECT_TRUE(back.shutdown);
  ASSERT_EQ(back.requests.size(), 2u);
  EXPECT_EQ(back.requests[1].name, "b");
  EXPECT_EQ(back.requests[1].splits, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(back.requests[0].shape, (std::vector<int64_t>{2, 3}));

  ResponseList l;
  Response r;
  r.names = {"x", "y"};
  r.sizes = {5, 6};
  r.error_code = Code::kFailedPrecondition;
  r.error = "bad";
  l.responses.push_back(r);
  ResponseList lb;
  ASSERT_TRUE(Parse(Serialize(l), &lb).ok());
  ASSERT_EQ(lb.responses.size(), 1u);
  EXPECT_EQ(lb.responses[0].names, r.names);
  EXPECT_EQ(lb.responses[0].error, "bad");
  EXPECT_EQ(lb.responses[0].error_code, Code::kFailedPrecondition);

  std::string truncated = Serialize(m).substr(0, 20);
  Status s = Parse(truncated, &back);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("malformed"), std::string::npos);
}

TEST(CollectivesNegotiation, ReadyOnlyWhenEveryRankSubmittedInReadyOrder) {
  Coordinator c(/*size=*/2, /*fusion_threshold=*/0, /*stall_timeout_s=*/60);
  c.Add(0, Msg({Req("a", {2}), Req("b", {2})}), 0);
  c.Add(1, Msg({Req("b", {2})}), 0);
  ResponseList l = c.Compute(0);
  ASSERT_EQ(l.responses.size(), 1u);
  EXPECT_EQ(l.responses[0].names, std::vector<std::string>{"b"});
  c.Add(1, Msg({Req("a", {2})}), 1);
  l = c.Compute(1);
  ASSERT_EQ(l.responses.size(), 1u);
  EXPECT_EQ(l.responses[0].names, std::vector<std::string>{"a"});
  EXPECT_FALSE(l.shutdown);
}

TEST(CollectivesNegotiation, FusesAllreducesOfOneDtypeUpToTheThreshold) {
  // 3 tensors of 40 bytes, threshold 100: the first two fuse, the third starts a new buffer;
  // a float64 tensor never joins a float32 buffer.
  Coordinator c(2, 100, 60);
  std::vector<RequestInfo> reqs = {Req("a", {10}), Req("b", {10}), Req("c", {10}),
                                   Req("d", {2}, CollectiveKind::kAllreduce, DType::kFloat64)};
  c.Add(0, Msg(reqs), 0);
  c.Add(1, Msg(reqs), 0);
  ResponseList l = c.Compute(0);
  ASSERT_EQ(l.responses.size(), 3u);
  EXPECT_EQ(l.responses[0].names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l.responses[1].names, (std::vector<std::string>{"c"}));
  EXPECT_EQ(l.responses[2].names, (std::vector<std::string>{"d"}));
}

TEST(CollectivesNegotiation, MismatchesAreErrorsNamingTheRanks) {
  Coordinator c(3, 1 << 20, 60);
  c.Add(0, Msg({Req("s", {2}), Req("t", {2}), Req("k", {2})}), 0);
  c.Add(1,
        Msg({Req("s", {2}), Req("t", {2}, CollectiveKind::kAllreduce, DType::kInt32),
             Req("k", {2}, CollectiveKind::kAllgather)}),
        0);
  c.Add(2, Msg({Req("s", {3}), Req("t", {2}), Req("k", {2})}), 0);
  ResponseList l = c.Compute(0);
  ASSERT_EQ(l.responses.size(), 3u);
  for (const Response& r : l.responses) EXPECT_EQ(r.error_code, Code::kFailedPrecondition);
  EXPECT_NE(l.responses[0].error.find("Mismatched allreduce tensor shapes: rank 0 sent a tensor "
                                      "of shape [2], but rank 2 sent a tensor of shape [3]"),
            std::string::npos)
      << l.responses[0].error;
  EXPECT_NE(l.responses[1].error.find("rank 0 had type float32, but rank 1 had type int32"),
            std::string::npos)
      << l.responses[1].error;
  EXPECT_NE(l.responses[2].error.find("rank 0 did an allreduce, but rank 1 did an allgather"),
            std::string::npos)
      << l.responses[2].error;
}

TEST(CollectivesNegotiation, AllgatherSizesAndAlltoallSplits) {
  Coordinator c(2, 0, 60);
  RequestInfo g0 = Req("g", {1, 4}, CollectiveKind::kAllgather);
  RequestInfo g1 = Req("g", {3, 4}, CollectiveKind::kAllgather);
  RequestInfo bad = Req("g2", {3, 5}, CollectiveKind::kAllgather);
  RequestInfo a0 = Req("a", {3}, CollectiveKind::kAlltoall);
  a0.splits = {1, 2};
  RequestInfo a1 = Req("a", {4}, CollectiveKind::kAlltoall);
  a1.splits = {4, 0};
  c.Add(0, Msg({g0, a0, Req("g2", {3, 4}, CollectiveKind::kAllgather)}), 0);
  c.Add(1, Msg({g1, a1, bad}), 0);
  ResponseList l = c.Compute(0);
  ASSERT_EQ(l.responses.size(), 3u);
  EXPECT_EQ(l.responses[0].sizes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(l.responses[1].sizes, (std::vector<int64_t>{1, 2, 4, 0}));
  EXPECT_EQ(l.responses[2].error_code, Code::kFailedPrecondition);
  EXPECT_NE(l.responses[2].error.find("only the first dimension may differ"), std::string::npos);
}

TEST(CollectivesNegotiation, StallShutsDownNamingTheMissingRanks) {
  Coordinator c(3, 0, /*stall_timeout_s=*/5);
  c.Add(0, Msg({Req("w", {1})}), 0);
  c.Add(2, Msg({Req("w", {1})}), 1);
  EXPECT_FALSE(c.Compute(4).shutdown);
  ResponseList l = c.Compute(6);
  EXPECT_TRUE(l.shutdown);
  EXPECT_EQ(l.shutdown_code, Code::kAborted);
  EXPECT_NE(l.shutdown_reason.find("'w' (allreduce) was submitted by rank(s) 0, 2 but not by "
                                   "rank(s) 1"),
            std::string::npos)
      << l.shutdown_reason;
}

TEST(CollectivesNegotiation, ARankShuttingDownShutsEveryRankDown) {
  Coordinator c(2, 0, 60);
  RankMessage bye;
  bye.shutdown = true;
  c.Add(1, bye, 0);
  ResponseList l = c.Compute(0);
  EXPECT_TRUE(l.shutdown);
  EXPECT_NE(l.shutdown_reason.find("rank 1"), std::string::npos);
}

TEST(CollectivesLocal, SingleProcessCollectivesCopyAndScale) {
  CollectiveOptions options;
  options.force_local = true;
  ASSERT_TRUE(InitCollectives(options).ok());
  CollectiveTopology t;
  ASSERT_TRUE(GetCollectiveTopology(&t).ok());
  EXPECT_EQ(t.size, 1);
  std::vector<std::future<std::pair<Status, CollectiveResult>>> results;
  for (int i = 0; i < 3; ++i) {
    auto promise = std::make_shared<std::promise<std::pair<Status, CollectiveResult>>>();
    results.push_back(promise->get_future());
    CollectiveRequest q;
    q.name = "t" + std::to_string(i);
    q.reduce_op = ReduceOp::kSum;
    q.postscale = i + 1.0;
    q.input = Tensor::FromVector<float>({1.0f, 2.0f}, {2});
    EnqueueCollective(q, [promise](const Status& s, CollectiveResult r) {
      promise->set_value({s, std::move(r)});
    });
  }
  for (int i = 0; i < 3; ++i) {
    auto [s, r] = results[i].get();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FLOAT_EQ(r.output.data<float>()[1], 2.0f * (i + 1));
  }
  ASSERT_TRUE(ShutdownCollectives().ok());
  EXPECT_FALSE(CollectivesInitialized());
  std::promise<Status> after;
  EnqueueCollective(CollectiveRequest{},
                    [&](const Status& s, CollectiveResult) { after.set_value(s); });
  Status s = after.get_future().get();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("hvd.init()"), std::string::npos);
}

// Stands in for NCCL: records the calls and doubles the inputs (host memory posing as a device's).
class RecordingDeviceCollectives final : public DeviceCollectives {
 public:
  Status Allreduce(CollectiveTransport& transport, Device* device,
                   const std::vector<Tensor>& inputs, bool average,
                   std::vector<Tensor>* outputs) override {
    calls.push_back(StrCat("allreduce ", inputs.size(), average ? " average" : " sum"));
    for (const Tensor& in : inputs) {
      Tensor out = Tensor::Host(in.dtype(), in.shape());
      for (int64_t i = 0; i < in.num_elements(); ++i)
        out.data<float>()[i] = 2 * in.data<float>()[i];
      outputs->push_back(out);
    }
    return Status::OK();
  }
  Status Allgather(CollectiveTransport&, Device*, const Tensor& input,
                   const std::vector<int64_t>& rows, Tensor* output) override {
    calls.push_back(StrCat("allgather ", rows[0]));
    *output = input;
    return Status::OK();
  }
  Status Broadcast(CollectiveTransport&, Device*, const Tensor& input, int root,
                   Tensor* output) override {
    calls.push_back(StrCat("broadcast ", root));
    *output = input;
    return Status::OK();
  }
  std::vector<std::string> calls;
};

class FakeAccelerator final : public Device {
 public:
  FakeAccelerator() : Device("FAKE_ACCELERATOR", 0, CpuAllocator(), nullptr) {}
  bool host_memory() const override { return false; }
};

std::pair<Status, CollectiveResult> Collect(CollectiveRequest q) {
  std::promise<std::pair<Status, CollectiveResult>> promise;
  EnqueueCollective(std::move(q), [&](const Status& s, CollectiveResult r) {
    promise.set_value({s, std::move(r)});
  });
  return promise.get_future().get();
}

TEST(CollectivesDevice, TensorsInDeviceMemoryGoToTheDevicesCollectives) {
  CollectiveOptions options;
  options.force_local = true;
  ASSERT_TRUE(InitCollectives(options).ok());
  FakeAccelerator device;
  CollectiveRequest q;
  q.name = "on_device";
  q.device = &device;
  q.input = Tensor::FromVector<float>({1.0f, 2.0f}, {2});
  auto [missing, unused] = Collect(q);
  EXPECT_EQ(missing.code(), Code::kUnimplemented);
  EXPECT_NE(missing.message().find("FAKE_ACCELERATOR plugin's collectives"), std::string::npos)
      << missing.message();

  auto recording = std::make_shared<RecordingDeviceCollectives>();
  RegisterDeviceCollectives("FAKE_ACCELERATOR", recording);
  q.reduce_op = ReduceOp::kAverage;
  auto [s, result] = Collect(q);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FLOAT_EQ(result.output.data<float>()[1], 4.0f);
  q.kind = CollectiveKind::kBroadcast;
  q.root = 0;
  EXPECT_TRUE(Collect(q).first.ok());
  q.kind = CollectiveKind::kAllgather;
  EXPECT_TRUE(Collect(q).first.ok());
  q.kind = CollectiveKind::kAllreduce;
  // Scale factors are applied in host memory around the device's allreduce.
  q.prescale = 3.0;
  q.postscale = 0.5;
  auto [scaled, scaled_result] = Collect(q);
  ASSERT_TRUE(scaled.ok()) << scaled.message();
  EXPECT_FLOAT_EQ(scaled_result.output.data<float>()[1], 2.0f * 3.0f * 2.0f * 0.5f);
  EXPECT_EQ(recording->calls, (std::vector<std::string>{"allreduce 1 average", "broadcast 0",
                                                        "allgather 2", "allreduce 1 average"}));
  ASSERT_TRUE(ShutdownCollectives().ok());
}

TEST(CollectivesNegotiation, HostAndDeviceTensorsNeitherFuseNorMix) {
  Coordinator c(2, 1 << 20, 60);
  RequestInfo host = Req("h", {4});
  RequestInfo device = Req("d", {4});
  device.on_device = true;
  RequestInfo mixed = Req("m", {4});
  RequestInfo mixed_device = mixed;
  mixed_device.on_device = true;
  c.Add(0, Msg({host, device, mixed}), 0);
  c.Add(1, Msg({host, device, mixed_device}), 0);
  ResponseList l = c.Compute(0);
  ASSERT_EQ(l.responses.size(), 3u);
  EXPECT_EQ(l.responses[0].names, std::vector<std::string>{"h"});
  EXPECT_EQ(l.responses[1].names, std::vector<std::string>{"d"});
  EXPECT_EQ(l.responses[2].error_code, Code::kFailedPrecondition);
  EXPECT_NE(l.responses[2].error.find("Mismatched memory"), std::string::npos);
}

}  // namespace
}  // namespace flowstone::collectives
