// QueueResource (src/ops/io/queue.h) without a session: order, a dequeue blocked until another
// thread enqueues, a close that ends it with OutOfRange, a cancellation token that ends it with
// the token's reason, and padding of a batch.
#include "ops/io/queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "flowstone/cancellation.h"

namespace flowstone::io {
namespace {

QueueResource::Options FloatQueue(QueueResource::Kind kind = QueueResource::Kind::kFifo) {
  QueueResource::Options o;
  o.name = "q";
  o.kind = kind;
  o.dtypes = {DType::kFloat32};
  return o;
}

TEST(QueueTest, FifoOrderAndDequeueMany) {
  QueueResource queue(FloatQueue());
  KernelContext ctx(KernelContext::Params{});
  for (float v : {1.0f, 2.0f, 3.0f}) {
    ASSERT_TRUE(queue.Enqueue(ctx, {Tensor::Scalar<float>(v)}, false).ok());
  }
  EXPECT_EQ(queue.Size(), 3);
  QueueTuple out;
  ASSERT_TRUE(queue.Dequeue(ctx, 2, false, &out).ok());
  ASSERT_EQ(out[0].shape(), TensorShape({2}));
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);
  EXPECT_EQ(queue.Size(), 1);
}

TEST(QueueTest, BlockedDequeueWokenByEnqueueThenByClose) {
  QueueResource queue(FloatQueue());
  KernelContext ctx(KernelContext::Params{});
  QueueTuple got;
  Status status;
  std::thread consumer([&] { status = queue.Dequeue(ctx, -1, false, &got); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(queue.Enqueue(ctx, {Tensor::Scalar<float>(7.0f)}, false).ok());
  consumer.join();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(got[0].data<float>()[0], 7.0f);

  std::thread waiting([&] { status = queue.Dequeue(ctx, -1, false, &got); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  queue.Close(false);
  waiting.join();
  EXPECT_EQ(status.code(), Code::kOutOfRange);
  EXPECT_NE(status.message().find("is closed and has insufficient elements (requested 1, "
                                  "current size 0)"),
            std::string::npos)
      << status.ToString();
  EXPECT_EQ(queue.Enqueue(ctx, {Tensor::Scalar<float>(1.0f)}, false).code(), Code::kCancelled);
}

TEST(QueueTest, CancellationEndsABlockedDequeueWithTheTokensReason) {
  QueueResource queue(FloatQueue());
  CancellationToken token;
  KernelContext::Params params;
  params.cancellation = &token;
  KernelContext ctx(params);
  Status status;
  QueueTuple got;
  std::thread consumer([&] { status = queue.Dequeue(ctx, -1, false, &got); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  token.Cancel(errors::Cancelled("Run call was cancelled"));
  consumer.join();
  EXPECT_EQ(status.code(), Code::kCancelled);
}

TEST(QueueTest, PaddingQueuePadsABatchToItsLargestElement) {
  QueueResource::Options o = FloatQueue(QueueResource::Kind::kPadding);
  o.shapes = {PartialShape{-1}};
  QueueResource queue(o);
  KernelContext ctx(KernelContext::Params{});
  ASSERT_TRUE(queue.Enqueue(ctx, {Tensor::FromVector<float>({1, 2}, TensorShape{2})}, false).ok());
  ASSERT_TRUE(
      queue.Enqueue(ctx, {Tensor::FromVector<float>({3, 4, 5}, TensorShape{3})}, false).ok());
  QueueTuple out;
  ASSERT_TRUE(queue.Dequeue(ctx, 2, false, &out).ok());
  ASSERT_EQ(out[0].shape(), TensorShape({2, 3}));
  const float* v = out[0].data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 6), (std::vector<float>{1, 2, 0, 3, 4, 5}));
}

}  // namespace
}  // namespace flowstone::io
