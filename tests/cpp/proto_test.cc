// The messages generated from proto/ read bytes that TensorFlow wrote: the field numbers are
// TensorFlow's. The hex strings are SerializeToString() of messages built by TensorFlow 2.21.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "proto/example.pb.h"
#include "proto/graph.pb.h"

namespace flowstone::proto {
namespace {

std::string FromHex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// tf.compat.v1: c = constant([1.5, -2.0], name="c"); identity(c, name="out"); as_graph_def().
constexpr char kTensorFlowGraphDef[] =
    "0a360a01631205436f6e73742a0b0a056474797065120230012a1d0a0576616c756512144212080112041202080222"
    "080000c03f000000c00a1b0a036f757412084964656e746974791a01632a070a015412023001220308aa13";

TEST(ProtoTest, ParsesAGraphDefWrittenByTensorFlow) {
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(FromHex(kTensorFlowGraphDef)));
  ASSERT_EQ(graph.node_size(), 2);
  const NodeDef& constant = graph.node(0);
  EXPECT_EQ(constant.name(), "c");
  EXPECT_EQ(constant.op(), "Const");
  EXPECT_EQ(constant.attr().at("dtype").type(), DT_FLOAT);
  const TensorProto& value = constant.attr().at("value").tensor();
  EXPECT_EQ(value.dtype(), DT_FLOAT);
  ASSERT_EQ(value.tensor_shape().dim_size(), 1);
  EXPECT_EQ(value.tensor_shape().dim(0).size(), 2);
  ASSERT_EQ(value.tensor_content().size(), 8u);
  float values[2];
  std::memcpy(values, value.tensor_content().data(), sizeof(values));
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  const NodeDef& identity = graph.node(1);
  EXPECT_EQ(identity.op(), "Identity");
  ASSERT_EQ(identity.input_size(), 1);
  EXPECT_EQ(identity.input(0), "c");
  EXPECT_EQ(identity.attr().at("T").type(), DT_FLOAT);
  EXPECT_EQ(graph.versions().producer(), 2474);
}

// tf.train.Example with label: int64 [7, -1], score: float [0.25], name: bytes [b"cat"].
constexpr char kTensorFlowExample[] =
    "0a3e0a110a0573636f7265120812060a040000803e0a0f0a046e616d6512070a050a036361740a180a056c6162656c"
    "120f1a0d0a0b07ffffffffffffffffff01";

TEST(ProtoTest, ParsesAnExampleWrittenByTensorFlowAndWritesTheSameBytes) {
  Example example;
  ASSERT_TRUE(example.ParseFromString(FromHex(kTensorFlowExample)));
  const auto& features = example.features().feature();
  ASSERT_EQ(features.size(), 3u);
  const Int64List& label = features.at("label").int64_list();
  ASSERT_EQ(label.value_size(), 2);
  EXPECT_EQ(label.value(0), 7);
  EXPECT_EQ(label.value(1), -1);
  ASSERT_EQ(features.at("score").float_list().value_size(), 1);
  EXPECT_EQ(features.at("score").float_list().value(0), 0.25f);
  ASSERT_EQ(features.at("name").bytes_list().value_size(), 1);
  EXPECT_EQ(features.at("name").bytes_list().value(0), "cat");

  Example rebuilt;
  auto& feature = *rebuilt.mutable_features()->mutable_feature();
  feature["label"].mutable_int64_list()->add_value(7);
  feature["label"].mutable_int64_list()->add_value(-1);
  feature["score"].mutable_float_list()->add_value(0.25f);
  feature["name"].mutable_bytes_list()->add_value("cat");
  Example reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(rebuilt.SerializeAsString()));
  EXPECT_EQ(reparsed.features().feature().at("label").int64_list().value(1), -1);
}

TEST(ProtoTest, RejectsTruncatedBytes) {
  std::string bytes = FromHex(kTensorFlowGraphDef);
  GraphDef graph;
  EXPECT_FALSE(graph.ParseFromString(bytes.substr(0, bytes.size() / 2)));
}

}  // namespace
}  // namespace flowstone::proto
