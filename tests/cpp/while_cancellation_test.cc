// An endless While stays interruptible: a deadline or Session::Close from another thread stops
// it, and the session stays usable after a deadline. (The loop's values, nesting and gradients
// are tested from Python in tests/python/test_control_flow.py.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "flowstone/cc/ops.h"
#include "flowstone/function.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Adds a function of one int32 argument to `root`'s library: `ret(arg, body_builder)` gives its
// output.
void AddFunction(const GraphBuilder& root, const std::string& name,
                 Endpoint (*ret)(Endpoint, GraphBuilder&)) {
  GraphBuilder body(std::make_shared<Graph>(root.graph()->shared_library()));
  Endpoint arg = body.Placeholder(DType::kInt32, PartialShape{});
  Endpoint out = ret(arg, body);
  ASSERT_TRUE(body.status().ok()) << body.status().ToString();
  FunctionDef def;
  def.name = name;
  def.body = body.graph();
  def.args = {arg};
  def.rets = {out};
  Status s = root.graph()->library().Add(std::move(def));
  ASSERT_TRUE(s.ok()) << s.ToString();
}

// A loop that never ends. With `kernels`, its cond and body run kernels each iteration; without,
// both only pass values through (no node runs), so only the While kernel's own check can stop it.
struct EndlessLoop {
  GraphBuilder b;
  Endpoint loop;
  Endpoint small;
  explicit EndlessLoop(bool kernels) {
    if (kernels) {
      AddFunction(b, "cond", [](Endpoint i, GraphBuilder& g) {
        return g.Op("GreaterEqual", {i, g.Const(Tensor::Scalar<int32_t>(0))});
      });
      AddFunction(b, "body", [](Endpoint i, GraphBuilder& g) {
        return g.Add(i, g.Const(Tensor::Scalar<int32_t>(1)));
      });
    } else {
      AddFunction(b, "cond",
                  [](Endpoint, GraphBuilder& g) { return g.Const(Tensor::Scalar<bool>(true)); });
      AddFunction(b, "body", [](Endpoint i, GraphBuilder&) { return i; });
    }
    AttrMap attrs;
    attrs.Set("cond", FunctionRef{"cond"});
    attrs.Set("body", FunctionRef{"body"});
    loop = b.Op("While", {b.Const(Tensor::Scalar<int32_t>(0))}, attrs);
    small = b.Op("Neg", {b.Const(Tensor::Scalar<float>(2.0f), "two")});
  }
};

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

class WhileCancellationTest : public ::testing::TestWithParam<bool> {};

TEST_P(WhileCancellationTest, DeadlineStopsAnEndlessLoopAndTheSessionStaysUsable) {
  EndlessLoop g(GetParam());
  ASSERT_TRUE(g.b.status().ok()) << g.b.status().ToString();
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(g.b.graph(), {}, &session).ok());
  RunOptions options;
  options.timeout_in_ms = 100;
  std::vector<Tensor> out;
  const auto start = Clock::now();
  Status s = session->Run({}, {g.loop}, {}, &out, options);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_EQ(s.message(), "Timed out waiting for notification");
  EXPECT_LT(Seconds(start), 5.0);
  ASSERT_TRUE(session->Run({}, {g.small}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], -2.0f);
}

TEST_P(WhileCancellationTest, CloseFromAnotherThreadStopsAnEndlessLoop) {
  EndlessLoop g(GetParam());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(g.b.graph(), {}, &session).ok());
  Status s;
  std::atomic<bool> started{false};
  std::thread runner([&] {
    std::vector<Tensor> out;
    started = true;
    s = session->Run({}, {g.loop}, {}, &out);
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(100));
  const auto start = Clock::now();
  EXPECT_TRUE(session->Close().ok());
  runner.join();
  EXPECT_LT(Seconds(start), 5.0);
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_EQ(s.message(), "Run call was cancelled");
}

INSTANTIATE_TEST_SUITE_P(BodyRunsKernels, WhileCancellationTest, ::testing::Bool());

// A function body shares its root graph's library without owning it: the library owns its
// bodies, so a body owning the library back would keep both alive forever (a leak that
// LeakSanitizer found in the tests above).
TEST(FunctionLibraryTest, ARootGraphFreesItsLibraryAndBodies) {
  std::weak_ptr<FunctionLibrary> library;
  std::weak_ptr<Graph> body;
  {
    GraphBuilder root;
    AddFunction(root, "identity", [](Endpoint i, GraphBuilder&) { return i; });
    library = root.graph()->shared_library();
    body = root.graph()->library().Find("identity")->body;
    ASSERT_FALSE(library.expired());
    ASSERT_FALSE(body.expired());
  }
  EXPECT_TRUE(library.expired());
  EXPECT_TRUE(body.expired());
}

}  // namespace
}  // namespace flowstone
