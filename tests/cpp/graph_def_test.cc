// GraphDef import and export in C++: the parser and importer face untrusted bytes.
#include "flowstone/graph_def.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "proto/graph.pb.h"

namespace flowstone {
namespace {

proto::GraphDef SmallGraphDef() {
  proto::GraphDef def;
  proto::NodeDef* c = def.add_node();
  c->set_name("c");
  c->set_op("Const");
  (*c->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  proto::TensorProto* value = (*c->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(proto::DT_FLOAT);
  value->mutable_tensor_shape()->add_dim()->set_size(2);
  value->add_float_val(1.5f);
  value->add_float_val(-2.0f);
  proto::NodeDef* out = def.add_node();
  out->set_name("out");
  out->set_op("Identity");
  out->add_input("c");
  (*out->mutable_attr())["T"].set_type(proto::DT_FLOAT);
  return def;
}

TEST(GraphDefTest, ExportThenImportKeepsNodesInputsAndAttrs) {
  Graph source;
  ImportGraphDefResults results;
  ImportGraphDefOptions options;
  options.return_elements = {"out:0", "c"};
  ASSERT_TRUE(ImportGraphDef(SmallGraphDef(), options, &source, &results).ok());
  ASSERT_EQ(results.return_elements.size(), 2u);
  EXPECT_EQ(results.return_elements[0].node->name(), "out");
  EXPECT_EQ(results.return_elements[0].index, 0);
  EXPECT_EQ(results.return_elements[1].index, -1);

  proto::GraphDef exported;
  ASSERT_TRUE(GraphToGraphDef(source, &exported).ok());
  ASSERT_EQ(exported.node_size(), 2);
  EXPECT_EQ(exported.node(1).input(0), "c");
  EXPECT_EQ(exported.node(0).attr().at("value").tensor().tensor_content().size(), 8u);
  EXPECT_EQ(exported.versions().producer(), kGraphDefProducer);

  Graph copy;
  options.prefix = "copy";
  options.return_elements.clear();
  ASSERT_TRUE(ImportGraphDef(exported, options, &copy, &results).ok());
  ASSERT_NE(copy.FindNode("copy/out"), nullptr);
  EXPECT_EQ(copy.FindNode("copy/out")->input(0).node->name(), "copy/c");
}

TEST(GraphDefTest, TruncatedBytesAreInvalidArgument) {
  std::string bytes = SmallGraphDef().SerializeAsString();
  proto::GraphDef def;
  Status s = ParseGraphDef(bytes.substr(0, bytes.size() - 3), &def);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Cannot parse"), std::string::npos);
}

// Random damage to a valid GraphDef either fails to parse or imports cleanly or fails with a
// Status: never a crash (run under ASan in `make asan`).
TEST(GraphDefTest, DamagedBytesNeverCrashTheImporter) {
  const std::string bytes = SmallGraphDef().SerializeAsString();
  std::mt19937 rng(7);
  int parsed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      damaged[rng() % damaged.size()] = static_cast<char>(rng() % 256);
    }
    proto::GraphDef def;
    if (!ParseGraphDef(damaged, &def).ok()) continue;
    ++parsed;
    Graph graph;
    ImportGraphDefResults results;
    Status s = ImportGraphDef(def, ImportGraphDefOptions{}, &graph, &results);
    if (!s.ok()) EXPECT_FALSE(s.message().empty());
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace flowstone
