// Cancellation tokens, and runs stopped by a deadline, by Session::Close and by an interrupt.
#include "flowstone/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(CancellationTokenTest, FirstReasonWins) {
  CancellationToken token;
  EXPECT_FALSE(token.IsCancelled());
  EXPECT_TRUE(token.status().ok());
  token.Cancel(errors::Cancelled("first"));
  token.Cancel(errors::DeadlineExceeded("second"));
  EXPECT_TRUE(token.IsCancelled());
  EXPECT_EQ(token.status().code(), Code::kCancelled);
  EXPECT_EQ(token.status().message(), "first");
}

TEST(CancellationTokenTest, InterruptsCancelOnlyTokensWatchingBeforeThem) {
  CancellationToken before, watching, not_watching;
  before.WatchInterrupts();
  NotifyInterrupt();
  watching.WatchInterrupts();
  EXPECT_TRUE(before.IsCancelled());
  EXPECT_EQ(before.status().code(), Code::kCancelled);
  EXPECT_EQ(before.status().GetPayload("interrupted"), "SIGINT");
  EXPECT_FALSE(watching.IsCancelled());
  EXPECT_FALSE(not_watching.IsCancelled());
  NotifyInterrupt();
  EXPECT_TRUE(watching.IsCancelled());
  EXPECT_FALSE(not_watching.IsCancelled());
}

TEST(CancellationTokenTest, DeadlineCancelsAndEarlyDestructionIsSafe) {
  {
    // Destroyed long before its deadline: the timer must forget it.
    CancellationToken short_lived;
    short_lived.CancelAt(Clock::now() + milliseconds(20), errors::DeadlineExceeded("gone"));
  }
  CancellationToken token;
  token.CancelAt(Clock::now() + milliseconds(30), errors::DeadlineExceeded("late"));
  EXPECT_FALSE(token.IsCancelled());
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!token.IsCancelled() && Clock::now() < give_up)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(token.status().code(), Code::kDeadlineExceeded);
  EXPECT_EQ(token.status().message(), "late");

  CancellationToken past;
  past.CancelAt(Clock::now() - milliseconds(1), errors::DeadlineExceeded("past"));
  while (!past.IsCancelled() && Clock::now() < give_up)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(past.status().message(), "past");
}

// A chain of `n` 512x512 float matrix products: long enough (seconds) to stop in the middle.
struct LongGraph {
  GraphBuilder b;
  Endpoint y;
  Endpoint small;
  explicit LongGraph(int n) {
    Tensor value = Tensor::FromVector<float>(std::vector<float>(512 * 512, 1.0f / 512),
                                             TensorShape({512, 512}));
    Endpoint x = b.Const(value, "x");
    y = x;
    for (int i = 0; i < n; ++i) y = b.Op("MatMul", {y, x});
    small = b.Op("Neg", {b.Const(Tensor::Scalar<float>(2.0f), "two")});
  }
};

std::unique_ptr<Session> NewSession(const GraphBuilder& b) {
  std::unique_ptr<Session> session;
  Status s = Session::Create(b.graph(), {}, &session);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return session;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

TEST(CancellationSessionTest, DeadlineStopsARunAndTheSessionStaysUsable) {
  LongGraph g(4000);
  ASSERT_TRUE(g.b.status().ok()) << g.b.status().ToString();
  auto session = NewSession(g.b);
  std::vector<Tensor> out;
  RunOptions options;
  options.timeout_in_ms = 100;
  const auto start = Clock::now();
  Status s = session->Run({}, {g.y}, {}, &out, options);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_EQ(s.message(), "Timed out waiting for notification");
  EXPECT_LT(Seconds(start), 5.0);  // the whole chain takes far longer
  ASSERT_TRUE(session->Run({}, {g.small}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], -2.0f);
}

TEST(CancellationSessionTest, CloseFromAnotherThreadCancelsTheRun) {
  LongGraph g(4000);
  auto session = NewSession(g.b);
  // Compiled first, so that Close() cannot come before the run started (it would then refuse
  // the run instead of cancelling it).
  Session::CallableHandle handle;
  ASSERT_TRUE(session->MakeCallable({}, {g.y}, {}, &handle).ok());
  Status s;
  std::atomic<bool> started{false};
  std::thread runner([&] {
    std::vector<Tensor> feeds, out;
    started = true;
    s = session->RunCallable(handle, feeds, &out);
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(200));
  const auto start = Clock::now();
  EXPECT_TRUE(session->Close().ok());
  runner.join();
  EXPECT_LT(Seconds(start), 5.0);
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_EQ(s.message(), "Run call was cancelled");
  std::vector<Tensor> out;
  EXPECT_EQ(session->Run({}, {g.small}, {}, &out).code(), Code::kFailedPrecondition);
}

TEST(CancellationSessionTest, InterruptStopsOnlyRunsThatWatchInterrupts) {
  LongGraph g(4000);
  auto session = NewSession(g.b);
  // Interrupts that come before the run watches them do not count, so keep sending until the
  // run returns (compiling 4000 nodes takes a while under sanitizers).
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done) {
      std::this_thread::sleep_for(milliseconds(50));
      NotifyInterrupt();
    }
  });
  RunOptions options;
  options.cancel_on_interrupt = true;
  std::vector<Tensor> out;
  Status s = session->Run({}, {g.y}, {}, &out, options);
  done = true;
  interrupter.join();
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_EQ(s.GetPayload("interrupted"), "SIGINT");

  // An interrupt before a run started does not stop it, nor one that does not watch.
  LongGraph shorter(20);
  auto second = NewSession(shorter.b);
  EXPECT_TRUE(second->Run({}, {shorter.y}, {}, &out, options).ok());
  NotifyInterrupt();
  EXPECT_TRUE(second->Run({}, {shorter.y}, {}, &out).ok());
}

}  // namespace
}  // namespace flowstone
