// Graph building, sessions and the executor through the public C++ API.
#include "flowstone/session.h"

#include <gtest/gtest.h>

#include <thread>

#include "flowstone/cc/ops.h"

namespace flowstone {
namespace {

std::unique_ptr<Session> NewSession(const GraphBuilder& b, SessionOptions options = {}) {
  std::unique_ptr<Session> session;
  Status s = Session::Create(b.graph(), options, &session);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return session;
}

TEST(GraphTest, UniqueNamesFollowTensorFlow) {
  Graph g;
  EXPECT_EQ(g.UniqueName("Add"), "Add");
  EXPECT_EQ(g.UniqueName("Add"), "Add_1");
  EXPECT_EQ(g.UniqueName("add"), "add_2");  // case-insensitive, as in TensorFlow
  EXPECT_EQ(g.UniqueName("scope/Add"), "scope/Add");
}

TEST(GraphTest, SetRequestedDeviceReplacesTheDevice) {
  GraphBuilder b;
  Endpoint x = b.Const(Tensor::Scalar<float>(2.0f), "x");
  EXPECT_EQ(x.node->requested_device(), "");
  b.graph()->SetRequestedDevice(x.node, "/device:CPU:0");
  EXPECT_EQ(x.node->requested_device(), "/device:CPU:0");
  std::unique_ptr<Session> session = NewSession(b);
  std::vector<Tensor> out;
  Status s = session->Run({}, {x}, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out[0].data<float>()[0], 2.0f);
}

TEST(GraphTest, RejectsUnknownOpsDuplicatesAndDtypeMismatches) {
  GraphBuilder b;
  b.Op("NoSuchOp", {});
  EXPECT_EQ(b.status().code(), Code::kNotFound);

  GraphBuilder c;
  Endpoint f = c.Const(Tensor::Scalar<float>(1.0f), "f");
  Endpoint h = c.Placeholder(DType::kInt32, PartialShape::Unknown(), "h");
  AttrMap attrs;
  attrs.Set("dtype", DType::kFloat32);
  NodeSpec spec;
  spec.name = "f";
  spec.op = "Identity";
  spec.inputs = {f};
  EXPECT_FALSE(c.graph()->AddNode(spec).ok());  // duplicate name
  spec.name = "assign";
  spec.op = "AssignVariableOp";
  Endpoint handle = c.NewVariable("v", f).handle;
  spec.inputs = {handle, h};
  spec.attrs = attrs;
  StatusOr<Node*> bad = c.graph()->AddNode(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().GetPayload("py_type"), "TypeError");
  EXPECT_NE(bad.status().message().find("int32"), std::string::npos);
}

TEST(GraphTest, FinalizedGraphRefusesNewNodes) {
  GraphBuilder b;
  b.Const(Tensor::Scalar<float>(1.0f));
  b.graph()->Finalize();
  b.Const(Tensor::Scalar<float>(2.0f));
  EXPECT_EQ(b.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("finalized"), std::string::npos);
}

TEST(SessionTest, FetchesFeedsAndValidatesFeedShapes) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape({-1, 3}), "x");
  Endpoint y = b.Op("Identity", {x}, {}, "y");
  Endpoint c = b.Const(Tensor::FromVector<float>({1, 2}, TensorShape({2})), "c");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);

  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {c}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);

  Tensor value = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  ASSERT_TRUE(session->Run({{x, value}}, {y}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3}));
  EXPECT_EQ(out[0].data<float>()[5], 6.0f);

  Status missing = session->Run({}, {y}, {}, &out);
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_NE(
      missing.message().find(
          "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,3]"),
      std::string::npos);
  EXPECT_EQ(missing.GetPayload("node"), "x");

  Tensor wrong = Tensor::FromVector<float>({1, 2}, TensorShape({2}));
  Status bad_feed = session->Run({{x, wrong}}, {y}, {}, &out);
  EXPECT_EQ(bad_feed.code(), Code::kInvalidArgument);
  EXPECT_NE(bad_feed.message().find(
                "Cannot feed value of shape (2,) for Tensor 'x:0', which has shape '(?, 3)'"),
            std::string::npos);

  // The session stays usable after errors.
  ASSERT_TRUE(session->Run({{x, value}}, {y}, {}, &out).ok());
  ASSERT_TRUE(session->Close().ok());
  ASSERT_TRUE(session->Close().ok());  // idempotent
  Status closed = session->Run({}, {c}, {}, &out);
  EXPECT_NE(closed.message().find("Attempted to use a closed Session."), std::string::npos);
}

TEST(SessionTest, VariablesLiveInTheSession) {
  GraphBuilder b;
  Endpoint init = b.Const(Tensor::FromVector<float>({1, 2}, TensorShape({2})));
  auto var = b.NewVariable("w", init);
  Endpoint one = b.Const(Tensor::FromVector<float>({1, 1}, TensorShape({2})));
  AttrMap attrs;
  attrs.Set("dtype", DType::kFloat32);
  Node* add = b.AddOp("AssignAddVariableOp", {var.handle, one}, attrs, "w/add");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();

  auto s1 = NewSession(b);
  auto s2 = NewSession(b);
  std::vector<Tensor> out;
  Status uninit = s1->Run({}, {var.value}, {}, &out);
  EXPECT_EQ(uninit.code(), Code::kFailedPrecondition);
  EXPECT_NE(uninit.message().find("Attempting to use uninitialized value w"), std::string::npos);

  ASSERT_TRUE(s1->Run({}, {}, {var.initializer}, &out).ok());
  ASSERT_TRUE(s1->Run({}, {var.value}, {}, &out).ok());
  Tensor before = out[0];
  ASSERT_TRUE(s1->Run({}, {}, {add}, &out).ok());
  ASSERT_TRUE(s1->Run({}, {var.value}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2.0f);
  EXPECT_EQ(before.data<float>()[0], 1.0f);  // a value read earlier never changes
  // The second session has its own, uninitialized, copy.
  EXPECT_EQ(s2->Run({}, {var.value}, {}, &out).code(), Code::kFailedPrecondition);
}

TEST(SessionTest, PlacementErrorsNameTheDeviceAndTheFix) {
  GraphBuilder b;
  NodeSpec spec;
  spec.name = "a";
  spec.op = "Const";
  spec.attrs.Set("value", Tensor::Scalar<float>(1.0f));
  spec.attrs.Set("dtype", DType::kFloat32);
  spec.device = "/device:GPU:2";
  StatusOr<Node*> a = b.graph()->AddNode(spec);
  ASSERT_TRUE(a.ok());
  auto session = NewSession(b);
  std::vector<Tensor> out;
  Status s = session->Run({}, {{*a, 0}}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Cannot assign a device for operation a"), std::string::npos);
  EXPECT_NE(s.message().find("allow_soft_placement"), std::string::npos);

  SessionOptions soft;
  soft.allow_soft_placement = true;
  auto soft_session = NewSession(b, soft);
  EXPECT_TRUE(soft_session->Run({}, {{*a, 0}}, {}, &out).ok());
}

// `_class = ["loc:@<name>"]` (tf.colocate_with) may name a node created later; a pin that
// contradicts it is an error without soft placement.
TEST(SessionTest, ColocationFollowsClassAttrAndReportsConflicts) {
  GraphBuilder b;
  auto add_const = [&](const std::string& name, const std::string& device,
                       const std::vector<std::string>& groups) {
    NodeSpec spec;
    spec.name = name;
    spec.op = "Const";
    spec.attrs.Set("value", Tensor::Scalar<float>(1.0f));
    spec.attrs.Set("dtype", DType::kFloat32);
    if (!groups.empty()) spec.attrs.Set("_class", groups);
    spec.device = device;
    StatusOr<Node*> node = b.graph()->AddNode(spec);
    EXPECT_TRUE(node.ok()) << node.status().ToString();
    return *node;
  };
  Node* follower = add_const("follower", "", {"loc:@leader"});
  Node* pinned = add_const("pinned", "/cpu:0", {"loc:@leader"});
  add_const("leader", "/cpu:1", {});

  SessionOptions two_cpus;
  two_cpus.device_count["CPU"] = 2;
  auto session = NewSession(b, two_cpus);
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {{follower, 0}}, {}, &out).ok());
  Status s = session->Run({}, {{pinned, 0}}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Cannot colocate nodes {{colocation_node pinned}} and "
                             "{{colocation_node leader}}"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("allow_soft_placement=True"), std::string::npos);

  // With one CPU the leader's pin cannot be satisfied: the error names the leader.
  auto one_cpu = NewSession(b);
  s = one_cpu->Run({}, {{follower, 0}}, {}, &out);
  EXPECT_NE(s.message().find("Cannot assign a device for operation leader"), std::string::npos)
      << s.message();

  two_cpus.allow_soft_placement = true;
  auto soft = NewSession(b, two_cpus);
  EXPECT_TRUE(soft->Run({}, {{pinned, 0}}, {}, &out).ok());
}

TEST(SessionTest, ManyThreadsRunOneSession) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape({-1}), "x");
  Endpoint y = b.Op("Identity", {x}, {}, "y");
  auto var = b.NewVariable("counter", b.Const(Tensor::FromVector<float>({0}, TensorShape({1}))));
  Endpoint one = b.Const(Tensor::FromVector<float>({1}, TensorShape({1})));
  AttrMap attrs;
  attrs.Set("dtype", DType::kFloat32);
  Node* add = b.AddOp("AssignAddVariableOp", {var.handle, one}, attrs, "inc");
  ASSERT_TRUE(b.status().ok());
  auto session = NewSession(b);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {var.initializer}, &out).ok());

  constexpr int kThreads = 8;
  constexpr int kRuns = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRuns; ++i) {
        std::vector<Tensor> result;
        Tensor value = Tensor::FromVector<float>({float(t), float(i)}, TensorShape({2}));
        Status s = session->Run({{x, value}}, {y}, {add}, &result);
        if (!s.ok() || result[0].data<float>()[0] != float(t) ||
            result[0].data<float>()[1] != float(i)) {
          failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(session->Run({}, {var.value}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], float(kThreads * kRuns));
}

// Truncate=true drops the mantissa bits bfloat16 and float16 cannot hold instead of rounding.
// Run here too because the sanitizer builds are -O2, where GCC 12 once optimized the
// truncation away.
TEST(SessionTest, CastTruncateDropsLowMantissaBits) {
  GraphBuilder b;
  const float value = 1.0f + 1.0f / 256 + 1.0f / 512;  // rounds up in bfloat16, not exact in half
  Endpoint x = b.Const(Tensor::FromVector<float>({value, -value}, TensorShape({2})));
  AttrMap attrs;
  attrs.Set("SrcT", DType::kFloat32);
  attrs.Set("Truncate", true);
  attrs.Set("DstT", DType::kBFloat16);
  Endpoint to_bfloat16 = b.Op("Cast", {x}, attrs);
  attrs.Set("DstT", DType::kFloat16);
  Endpoint to_half = b.Op("Cast", {x}, attrs);
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {to_bfloat16, to_half}, {}, &out).ok());
  const uint16_t* bf = static_cast<const uint16_t*>(out[0].raw_data());
  EXPECT_EQ(bf[0], 0x3f80);  // 1.0: the dropped 2^-8 + 2^-9 do not round up to 1.0078125
  EXPECT_EQ(bf[1], 0xbf80);
  // float16 keeps 10 mantissa bits, so 2^-8 and 2^-9 survive: 1 + 0x6 / 1024.
  const uint16_t* half = static_cast<const uint16_t*>(out[1].raw_data());
  EXPECT_EQ(half[0], 0x3c06);
  EXPECT_EQ(half[1], 0xbc06);
}

TEST(SessionTest, ParallelReadersOfOneTensor) {
  // Unknown shapes make every Neg "expensive", so the plan runs them on the inter-op pool, all
  // reading the fed tensor at once.
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape::Unknown(), "x");
  std::vector<Endpoint> outs;
  for (int i = 0; i < 6; ++i) outs.push_back(b.Op("Neg", {b.Op("Neg", {x})}));
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  auto session = NewSession(b);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        std::vector<Tensor> result;
        Tensor value = Tensor::FromVector<float>({float(t), float(i), 1.f}, TensorShape({3}));
        if (!session->Run({{x, value}}, outs, {}, &result).ok()) {
          failures++;
          continue;
        }
        for (const Tensor& r : result) {
          if (r.data<float>()[0] != float(t) || r.data<float>()[1] != float(i)) failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace flowstone
