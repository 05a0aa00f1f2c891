// Traced runs through the public C++ API: RunOptions::trace_level fills RunMetadata::step_stats,
// an untraced run leaves it empty, and the statistics serialize as TensorFlow's StepStats.
#include "flowstone/step_stats.h"

#include <gtest/gtest.h>

#include <map>

#include "flowstone/cc/ops.h"
#include "flowstone/session.h"
#include "proto/step_stats.pb.h"

namespace flowstone {
namespace {

struct Model {
  GraphBuilder b;
  Endpoint x, y;
  Model() {
    x = b.Placeholder(DType::kFloat32, PartialShape({-1, 3}), "x");
    Endpoint w = b.Const(Tensor::FromVector<float>(std::vector<float>(12, 0.5f), {3, 4}), "w");
    y = b.MatMul(x, w, false, false, "mm");
  }
};

Status RunModel(Model& m, RunOptions::TraceLevel level, RunMetadata* metadata) {
  std::unique_ptr<Session> session;
  FS_RETURN_IF_ERROR(Session::Create(m.b.graph(), {}, &session));
  RunOptions options;
  options.trace_level = level;
  std::vector<Tensor> out;
  Tensor x = Tensor::FromVector<float>(std::vector<float>(6, 1.0f), {2, 3});
  return session->Run({{m.x, x}}, {m.y}, {}, &out, options, metadata);
}

TEST(StepStatsTest, FullTraceRecordsEachNodeWithItsOutputs) {
  Model m;
  RunMetadata metadata;
  Status s = RunModel(m, RunOptions::kFullTrace, &metadata);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(metadata.step_stats.dev_stats.size(), 1u);
  std::map<std::string, NodeExecStats> nodes;
  for (const NodeExecStats& n : metadata.step_stats.dev_stats[0].node_stats) nodes[n.node_name] = n;
  ASSERT_EQ(nodes.size(), 2u);  // the matmul and the constant; the fed x does not run
  const NodeExecStats& mm = nodes.at("mm");
  EXPECT_EQ(mm.op_type, "MatMul");
  EXPECT_EQ(mm.timeline_label, "mm = MatMul(x, w)");
  EXPECT_GT(mm.all_start_nanos, 0);
  EXPECT_LE(0, mm.op_start_rel_nanos);
  EXPECT_LE(mm.op_start_rel_nanos, mm.op_end_rel_nanos);
  EXPECT_LE(mm.op_end_rel_nanos, mm.all_end_rel_nanos);
  ASSERT_EQ(mm.outputs.size(), 1u);
  EXPECT_EQ(mm.outputs[0].shape, TensorShape({2, 4}));
  EXPECT_EQ(mm.outputs[0].requested_bytes, 2 * 4 * 4);
  EXPECT_EQ(mm.output_bytes, 2 * 4 * 4);
  EXPECT_EQ(nodes.at("w").op_end_rel_nanos, 0);
}

TEST(StepStatsTest, UntracedRunLeavesMetadataEmpty) {
  Model m;
  RunMetadata metadata;
  ASSERT_TRUE(RunModel(m, RunOptions::kFullTrace, &metadata).ok());
  ASSERT_TRUE(RunModel(m, RunOptions::kNoTrace, &metadata).ok());
  EXPECT_TRUE(metadata.step_stats.dev_stats.empty());
  // A trace without metadata to fill is allowed and records nothing.
  ASSERT_TRUE(RunModel(m, RunOptions::kFullTrace, nullptr).ok());
}

TEST(StepStatsTest, SerializesAsTensorFlowStepStats) {
  Model m;
  RunMetadata metadata;
  ASSERT_TRUE(RunModel(m, RunOptions::kSoftwareTrace, &metadata).ok());
  proto::StepStats parsed;
  ASSERT_TRUE(parsed.ParseFromString(SerializeStepStats(metadata.step_stats)));
  ASSERT_EQ(parsed.dev_stats_size(), 1);
  const proto::DeviceStepStats& dev = parsed.dev_stats(0);
  EXPECT_EQ(dev.device(), metadata.step_stats.dev_stats[0].device);
  for (const proto::NodeExecStats& n : dev.node_stats()) {
    EXPECT_EQ(n.all_start_micros(), n.all_start_nanos() / 1000);
    EXPECT_EQ(n.op_end_rel_micros(), n.op_end_rel_nanos() / 1000);
    if (n.node_name() != "mm") continue;
    ASSERT_EQ(n.output_size(), 1);
    const proto::TensorDescription& desc = n.output(0).tensor_description();
    EXPECT_EQ(desc.dtype(), proto::DT_FLOAT);
    ASSERT_EQ(desc.shape().dim_size(), 2);
    EXPECT_EQ(desc.shape().dim(1).size(), 4);
    EXPECT_EQ(desc.allocation_description().requested_bytes(), 32);
    ASSERT_EQ(n.memory_size(), 1);
    EXPECT_EQ(n.memory(0).total_bytes(), 32);
  }
}

}  // namespace
}  // namespace flowstone
