// Status, dtypes, shapes, tensors and allocators.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "flowstone/allocator.h"
#include "flowstone/device.h"
#include "flowstone/shape_inference.h"
#include "flowstone/tensor.h"

namespace flowstone {
namespace {

TEST(StatusTest, CarriesCodeMessageAndPayloads) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  Status s = errors::InvalidArgument("bad ", 3, " things");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad 3 things");
  EXPECT_EQ(s.ToString(), "Invalid argument: bad 3 things");
  s.SetPayload("node", "x");
  Status copy = s;
  EXPECT_EQ(copy.GetPayload("node"), "x");
  EXPECT_EQ(static_cast<int>(Code::kUnauthenticated), 16);
}

TEST(DTypeTest, NamesSizesAndHalfConversions) {
  EXPECT_EQ(DTypeSize(DType::kFloat64), 8u);
  EXPECT_STREQ(DTypeShortName(DType::kFloat32), "float");
  DType t;
  ASSERT_TRUE(DTypeFromName("int64", &t));
  EXPECT_EQ(t, DType::kInt64);
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 1e-7f}) {
    EXPECT_NEAR(static_cast<float>(Half(v)), v, std::abs(v) * 1e-3f + 6e-8f) << v;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(1e6f))));
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_NEAR(static_cast<float>(BFloat16(3.14159f)), 3.14159f, 0.02f);
}

TEST(ShapeTest, PartialShapesMergeAndPrint) {
  PartialShape a({-1, 224, 224, 3});
  EXPECT_EQ(a.ToPythonString(), "(?, 224, 224, 3)");
  EXPECT_EQ(a.ToString(), "[?,224,224,3]");
  EXPECT_TRUE(a.IsCompatibleWith(TensorShape({32, 224, 224, 3})));
  EXPECT_FALSE(a.IsCompatibleWith(TensorShape({32, 224, 224})));
  PartialShape merged;
  ASSERT_TRUE(a.Merge(PartialShape({8, -1, 224, 3}), &merged).ok());
  EXPECT_EQ(merged.ToString(), "[8,224,224,3]");
  EXPECT_FALSE(a.Merge(PartialShape({8, 1, 224, 3}), &merged).ok());
  EXPECT_TRUE(PartialShape::Unknown().IsCompatibleWith(a));
  TensorShape big({1, 2, 3, 4, 5, 6, 7, 8});  // beyond the inline capacity
  EXPECT_EQ(big.num_elements(), 40320);
  TensorShape copy = big;
  EXPECT_EQ(copy, big);
}

TEST(ShapeTest, Broadcasting) {
  PartialShape out;
  ASSERT_TRUE(BroadcastShapes(PartialShape({3, 1}), PartialShape({1, 4}), &out).ok());
  EXPECT_EQ(out.ToString(), "[3,4]");
  ASSERT_TRUE(BroadcastShapes(PartialShape({-1, 4}), PartialShape({4}), &out).ok());
  EXPECT_EQ(out.ToString(), "[?,4]");
  Status s = BroadcastShapes(PartialShape({3}), PartialShape({4}), &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("[3] vs. [4]"), std::string::npos);
}

TEST(TensorTest, SharesBuffersAndReportsRefcount) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  EXPECT_TRUE(t.RefCountIsOne());
  Tensor u = t;
  EXPECT_FALSE(t.RefCountIsOne());
  EXPECT_EQ(u.data<float>()[3], 4.0f);
  Tensor r = t.Reshaped(TensorShape({4}));
  EXPECT_EQ(r.shape(), TensorShape({4}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  Tensor empty = Tensor::Host(DType::kFloat32, TensorShape({0, 3}));
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_NE(empty.raw_data(), nullptr);
}

TEST(AllocatorTest, LimitIsEnforcedAndMemoryIsReused) {
  auto limited = std::make_shared<LimitedAllocator>(CpuAllocator(), 1 << 20, "test");
  Tensor t;
  EXPECT_EQ(Tensor::Allocate(limited.get(), DType::kFloat32, TensorShape({1 << 20}), &t).code(),
            Code::kResourceExhausted);
  ASSERT_TRUE(Tensor::Allocate(limited.get(), DType::kFloat32, TensorShape({1000}), &t).ok());
  EXPECT_EQ(limited->stats().bytes_in_use, 4000);
  t = Tensor();
  EXPECT_EQ(limited->stats().bytes_in_use, 0);

  // A freed block of a size class is handed out again without a system allocation.
  {
    Tensor warm = Tensor::Host(DType::kFloat32, TensorShape({12345}));
  }
  int64_t before = CpuAllocator()->stats().num_system_allocs;
  for (int i = 0; i < 10; ++i) {
    Tensor again = Tensor::Host(DType::kFloat32, TensorShape({12345}));
  }
  EXPECT_EQ(CpuAllocator()->stats().num_system_allocs, before);
}

TEST(AllocatorTest, HugeRequestsFailCleanly) {
  Tensor t;
  EXPECT_EQ(
      Tensor::Allocate(CpuAllocator(), DType::kFloat32, TensorShape({5000, 5000, 5000}), &t).code(),
      Code::kResourceExhausted);
  EXPECT_EQ(Tensor::Allocate(CpuAllocator(), DType::kFloat64,
                             TensorShape({int64_t{1} << 40, int64_t{1} << 40}), &t)
                .code(),
            Code::kResourceExhausted);
}

TEST(DeviceSpecTest, ParsesTheGrammarAndMerges) {
  DeviceSpec s;
  ASSERT_TRUE(DeviceSpec::Parse("/job:localhost/replica:0/task:0/device:GPU:1", &s).ok());
  EXPECT_EQ(s.job, "localhost");
  EXPECT_EQ(s.type, "GPU");
  EXPECT_EQ(s.id, 1);
  ASSERT_TRUE(DeviceSpec::Parse("/cpu:0", &s).ok());
  EXPECT_EQ(s.ToString(), "/device:CPU:0");
  ASSERT_TRUE(DeviceSpec::Parse("/device:GPU:*", &s).ok());
  EXPECT_EQ(s.id, -1);
  ASSERT_TRUE(DeviceSpec::Parse("", &s).ok());
  EXPECT_TRUE(s.empty());
  Status bad = DeviceSpec::Parse("/gpu:zero", &s);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.message().find("/job:<name>/replica:<int>"), std::string::npos);
  EXPECT_FALSE(DeviceSpec::Parse("/foo:1", &s).ok());

  DeviceSpec outer, inner;
  ASSERT_TRUE(DeviceSpec::Parse("/job:worker/device:GPU:0", &outer).ok());
  ASSERT_TRUE(DeviceSpec::Parse("/device:GPU:1", &inner).ok());
  EXPECT_EQ(DeviceSpec::Merge(outer, inner).ToString(), "/job:worker/device:GPU:1");
  ASSERT_TRUE(DeviceSpec::Parse("/cpu:*", &inner).ok());
  EXPECT_EQ(DeviceSpec::Merge(outer, inner).ToString(), "/job:worker/device:CPU:*");
}

TEST(ThreadPoolTest, ParallelForCoversTheRangeOnce) {
  ThreadPool pool("test", 3);
  std::vector<std::atomic<int>> hits(100000);
  pool.ParallelFor(100000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

// A caller does not wait for workers that have not started its shards: with every worker busy,
// ParallelFor runs all shards itself and returns; the workers, when free, find them taken.
TEST(ThreadPoolTest, ParallelForRunsUnstartedShardsOnTheCaller) {
  ThreadPool pool("test", 2);
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  for (int i = 0; i < 2; ++i) {
    pool.Schedule([&] {
      ++blocked;
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (blocked.load() < 2) std::this_thread::yield();
  std::vector<std::atomic<int>> hits(100000);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  pool.ParallelFor(100000, 1000, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != caller) ++elsewhere;
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(elsewhere.load(), 0);
  release = true;  // the queued closures now run, find their shards taken and return
}

// Shards are taken one at a time: while a worker is stuck in its shard, the caller runs all the
// others, rather than waiting with a fixed half of the range still to do.
TEST(ThreadPoolTest, ParallelForHandsOutSmallShardsToWhoeverIsFree) {
  ThreadPool pool("test", 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> hits(64);
  std::atomic<int> calls{0}, caller_calls{0};
  std::atomic<bool> caller_done{false};
  pool.ParallelFor(64, 1000000, [&](int64_t b, int64_t e) {
    ++calls;
    for (int64_t i = b; i < e; ++i) hits[i]++;
    if (std::this_thread::get_id() == caller) {
      ++caller_calls;
      return;
    }
    // The worker holds its shard until the caller has run every other one (or 10 s pass).
    for (int i = 0; i < 10000 && !caller_done.load(); ++i) {
      if (caller_calls.load() + 1 == 8) caller_done = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(calls.load(), 8);  // (1 worker + the caller) x 4 shards each
  EXPECT_GE(caller_calls.load(), 7);
}

void ScheduleFromTwoThreads(ThreadPool::Idle idle) {
  ThreadPool pool("test", 2, idle);
  constexpr int kPerThread = 300;
  std::atomic<int> ran{0};
  auto producer = [&](int seed) {
    const int64_t pauses_us[] = {0, 5, ThreadPool::SpinBeforeSleepMicros() / 2,
                                 ThreadPool::SpinBeforeSleepMicros(),
                                 ThreadPool::SpinBeforeSleepMicros() * 2};
    for (int i = 0; i < kPerThread; ++i) {
      pool.Schedule([&] { ++ran; });
      std::this_thread::sleep_for(std::chrono::microseconds(pauses_us[(i * 7 + seed) % 5]));
    }
  };
  std::thread a(producer, 0), b(producer, 3);
  a.join();
  b.join();
  // A lost wake-up would leave a task queued forever; 10 s is only a bound for a failing run.
  for (int i = 0; i < 10000 && ran.load() < 2 * kPerThread; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ran.load(), 2 * kPerThread);
}

// Every task scheduled runs, whether the workers are spinning, about to stop spinning, or
// blocked: tasks come from two threads with pauses around the spin window, so some find a
// spinning worker and some a blocked one, and none may be left in the queue unwoken.
TEST(ThreadPoolTest, ScheduledTasksRunWhetherWorkersSpinOrSleep) {
  for (ThreadPool::Idle idle : {ThreadPool::Idle::kSpinThenBlock, ThreadPool::Idle::kBlock}) {
    ScheduleFromTwoThreads(idle);
  }
}

// ParallelFor returns once every shard is done whether its caller spins for them or blocks:
// each call's shards take from nothing to well past the spin window.
TEST(ThreadPoolTest, ParallelForWaitsForSlowShardsPastTheSpin) {
  ThreadPool pool("test", 1, ThreadPool::Idle::kSpinThenBlock);
  for (int64_t shard_us : {int64_t{0}, ThreadPool::SpinBeforeSleepMicros() * 3}) {
    std::vector<std::atomic<int>> hits(16);
    pool.ParallelFor(16, 1000000, [&](int64_t b, int64_t e) {
      std::this_thread::sleep_for(std::chrono::microseconds(shard_us));
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

// A pool whose worker is spinning, or blocked, shuts down and joins it.
TEST(ThreadPoolTest, DestroyingAPoolStopsSpinningAndBlockedWorkers) {
  for (int64_t idle_us : {int64_t{0}, ThreadPool::SpinBeforeSleepMicros() * 3}) {
    std::atomic<int> ran{0};
    {
      ThreadPool pool("test", 2, ThreadPool::Idle::kSpinThenBlock);
      pool.Schedule([&] { ++ran; });
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    }
    EXPECT_EQ(ran.load(), 1);  // the destructor drains the queue before the workers exit
  }
}

}  // namespace
}  // namespace flowstone
