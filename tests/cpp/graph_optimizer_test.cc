// The graph optimizer through the public C++ API: SessionOptions::rewrites switches constant
// folding, merging and fusion, traces show what ran, and the results do not change.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"

namespace flowstone {
namespace {

struct Traced {
  std::vector<Tensor> outputs;
  std::map<std::string, std::string> ran;  // node name -> op type, as recorded
};

Status RunTraced(GraphBuilder& b, const RewriterConfig& rewrites,
                 const std::vector<std::pair<Endpoint, Tensor>>& feeds,
                 const std::vector<Endpoint>& fetches, Traced* out) {
  SessionOptions options;
  options.device_count["GPU"] = 0;
  options.rewrites = rewrites;
  std::unique_ptr<Session> session;
  FS_RETURN_IF_ERROR(Session::Create(b.graph(), options, &session));
  RunOptions run;
  run.trace_level = RunOptions::kFullTrace;
  RunMetadata metadata;
  FS_RETURN_IF_ERROR(session->Run(feeds, fetches, {}, &out->outputs, run, &metadata));
  for (const auto& device : metadata.step_stats.dev_stats)
    for (const NodeExecStats& n : device.node_stats) out->ran[n.node_name] = n.op_type;
  return Status::OK();
}

RewriterConfig Off() {
  RewriterConfig config;
  config.disable_meta_optimizer = true;
  return config;
}

TEST(GraphOptimizerTest, FoldsConstantsAndMergesDuplicates) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape({2}), "x");
  Endpoint c = b.Const(Tensor::FromVector<float>({1.5f, -2.0f}, {2}), "c");
  Endpoint sq = b.Op("Square", {c}, {}, "sq");
  Endpoint y1 = b.Op("Mul", {x, sq}, {}, "y1");
  Endpoint y2 = b.Op("Mul", {x, sq}, {}, "y2");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  Tensor xv = Tensor::FromVector<float>({2.0f, -0.0f}, {2});

  Traced on, off;
  ASSERT_TRUE(RunTraced(b, {}, {{x, xv}}, {y1, y2}, &on).ok());
  ASSERT_TRUE(RunTraced(b, Off(), {{x, xv}}, {y1, y2}, &off).ok());
  EXPECT_EQ(on.ran.at("sq"), "Const");  // folded
  EXPECT_EQ(on.ran.count("c"), 0u);     // only the folded node read it
  EXPECT_EQ(on.ran.count("y2"), 0u);    // merged into y1
  EXPECT_EQ(off.ran.at("sq"), "Square");
  EXPECT_EQ(off.ran.count("y2"), 1u);
  for (size_t i = 0; i < 2; ++i) {
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(std::memcmp(&on.outputs[i].data<float>()[k], &off.outputs[i].data<float>()[k], 4),
                0);
    }
  }
  EXPECT_EQ(on.outputs[0].data<float>()[0], 4.5f);

  RewriterConfig no_folding;
  no_folding.constant_folding = RewriterConfig::kOff;
  Traced partial;
  ASSERT_TRUE(RunTraced(b, no_folding, {{x, xv}}, {y1, y2}, &partial).ok());
  EXPECT_EQ(partial.ran.at("sq"), "Square");
  EXPECT_EQ(partial.ran.count("y2"), 0u);  // merging is still on
}

TEST(GraphOptimizerTest, AFoldingErrorComesAtRunTimeFromTheNode) {
  GraphBuilder b;
  Endpoint params = b.Const(Tensor::FromVector<float>({1.0f, 2.0f}, {2}), "params");
  Endpoint indices = b.Const(Tensor::FromVector<int32_t>({7}, {1}), "indices");
  Endpoint axis = b.Const(Tensor::Scalar<int32_t>(0), "axis");
  Endpoint bad = b.Op("GatherV2", {params, indices, axis}, {}, "bad");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  Traced out;
  Status s = RunTraced(b, {}, {}, {bad}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.GetPayload("node"), "bad") << s.ToString();
}

TEST(GraphOptimizerTest, FusesMatMulBiasReluUnderTheLastNodesName) {
  GraphBuilder b;
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape({-1, 3}), "x");
  Endpoint bias = b.Placeholder(DType::kFloat32, PartialShape({-1}), "bias");
  Endpoint w = b.Const(Tensor::FromVector<float>({1, -2, 0.5f, 3, -1, 2}, {3, 2}), "w");
  Endpoint product = b.Op("MatMul", {x, w}, {}, "product");
  Endpoint biased = b.Op("BiasAdd", {product, bias}, {}, "biased");
  Endpoint y = b.Op("Relu", {biased}, {}, "y");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  Tensor xv = Tensor::FromVector<float>({1, 2, 3, -4, 0.25f, 7}, {2, 3});
  Tensor bv = Tensor::FromVector<float>({0.5f, -8}, {2});

  Traced on, off;
  RewriterConfig no_fusion;
  no_fusion.remapping = RewriterConfig::kOff;
  ASSERT_TRUE(RunTraced(b, {}, {{x, xv}, {bias, bv}}, {y}, &on).ok());
  ASSERT_TRUE(RunTraced(b, no_fusion, {{x, xv}, {bias, bv}}, {y}, &off).ok());
  EXPECT_EQ(on.ran.at("y"), "_FusedMatMul");
  EXPECT_EQ(on.ran.count("product"), 0u);
  EXPECT_EQ(on.ran.count("biased"), 0u);
  EXPECT_EQ(off.ran.at("y"), "Relu");
  EXPECT_EQ(std::memcmp(on.outputs[0].raw_data(), off.outputs[0].raw_data(), 16), 0);
  // relu(x w + b) = relu([[-0.5, 2], [-10.375, 14.75]]).
  const float* values = on.outputs[0].data<float>();
  EXPECT_EQ(std::vector<float>(values, values + 4), (std::vector<float>{0, 2, 0, 14.75f}));

  // A run-time error in the fused node is the last node's, as placement and traces are.
  Traced failed;
  Status s =
      RunTraced(b, {}, {{x, xv}, {bias, Tensor::FromVector<float>({1, 2, 3}, {3})}}, {y}, &failed);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.GetPayload("node"), "y") << s.ToString();
  EXPECT_NE(s.ToString().find("2 channels"), std::string::npos) << s.ToString();
}

// A constant inference batch norm (after a BiasAdd) folds into the convolution's filter: the plan
// runs one _FusedConv2D holding the folded filter and bias as constants. With
// arithmetic_optimization off the batch norm runs as its own node.
TEST(GraphOptimizerTest, FoldsAConstantBatchNormIntoTheConvolution) {
  GraphBuilder b;
  auto vec = [&](std::vector<float> v, const char* name) {
    return b.Const(Tensor::FromVector<float>(v, {2}), name);
  };
  Endpoint x = b.Placeholder(DType::kFloat32, PartialShape({-1, 1, 2, 1}), "x");
  Endpoint w = b.Const(Tensor::FromVector<float>({2, -1}, {1, 1, 1, 2}), "w");
  AttrMap conv_attrs;
  conv_attrs.Set("strides", std::vector<int64_t>{1, 1, 1, 1});
  conv_attrs.Set("padding", std::string("VALID"));
  Endpoint conv = b.Op("Conv2D", {x, w}, conv_attrs, "conv");
  Endpoint biased = b.Op("BiasAdd", {conv, vec({1, 0.5f}, "b")}, {}, "biased");
  AttrMap norm_attrs;
  norm_attrs.Set("is_training", false);
  norm_attrs.Set("epsilon", 0.0f);
  Endpoint norm = b.Op("FusedBatchNormV3",
                       {biased, vec({0.5f, 2}, "scale"), vec({0, 1}, "offset"),
                        vec({1, 0.5f}, "mean"), vec({4, 1}, "var")},
                       norm_attrs, "norm");
  Endpoint y = b.Op("Relu", {norm}, {}, "y");
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  Tensor xv = Tensor::FromVector<float>({1, 3}, {1, 1, 2, 1});

  Traced folded, kept;
  RewriterConfig no_arithmetic;
  no_arithmetic.arithmetic_optimization = RewriterConfig::kOff;
  ASSERT_TRUE(RunTraced(b, {}, {{x, xv}}, {y}, &folded).ok());
  ASSERT_TRUE(RunTraced(b, no_arithmetic, {{x, xv}}, {y}, &kept).ok());
  EXPECT_EQ(folded.ran.at("y"), "_FusedConv2D");
  EXPECT_EQ(folded.ran.count("norm"), 0u);
  EXPECT_EQ(folded.ran.count("biased"), 0u);
  EXPECT_EQ(kept.ran.at("norm"), "FusedBatchNormV3");
  // Folded: filter {2 * 0.25, -1 * 2}, bias {(1 - 1) * 0.25 + 0, (0.5 - 0.5) * 2 + 1}, so
  // relu([[0.5, -1], [1.5, -5]]), exactly as the unfolded chain.
  for (const Traced* t : {&folded, &kept}) {
    const float* values = t->outputs[0].data<float>();
    EXPECT_EQ(std::vector<float>(values, values + 4), (std::vector<float>{0.5f, 0, 1.5f, 0}));
  }
}

}  // namespace
}  // namespace flowstone
