// Graphs in TensorFlow's GraphDef format (the protobuf messages of proto/graph.proto, whose field
// numbers are TensorFlow's): what Graph.as_graph_def() returns and tf.import_graph_def reads.
//
//   proto::GraphDef def;
//   FS_RETURN_IF_ERROR(GraphToGraphDef(graph, &def));
//   ImportGraphDefOptions options;
//   options.prefix = "import";
//   ImportGraphDefResults results;
//   FS_RETURN_IF_ERROR(ImportGraphDef(def, options, &other_graph, &results));
//
// Node names, "name:N" output references, "^name" control inputs, devices and attrs (in
// TensorFlow's AttrValue forms) round-trip, and so do the functions that call ops use (a
// FunctionDefLibrary, mapped onto the graph's FunctionLibrary). Attrs whose names start with "_"
// are internal to the system that wrote them; of those only the colocation attr `_class` is kept.
//
// A GraphDef is untrusted input: every malformed part (a duplicate or empty name, an input that
// names no node, a cycle, an attr of the wrong form, a dtype Flowstone lacks, a negative or huge
// shape, tensor bytes that do not match the shape) is reported as InvalidArgument (Unimplemented
// for a dtype Flowstone does not have) naming the node, and nothing is added to the graph unless
// every node imports.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flowstone/graph.h"
#include "flowstone/status.h"

namespace flowstone {

namespace proto {
class GraphDef;
class TensorProto;
}  // namespace proto

// The GraphDef version Flowstone writes as `versions.producer`: TensorFlow 2.21's, whose op
// definitions Flowstone's schemas follow.
inline constexpr int kGraphDefProducer = 2474;

// Serializes every node of `graph`. Fails with Unimplemented for an attr that holds a value
// TensorFlow cannot represent (a resource or variant tensor).
Status GraphToGraphDef(const Graph& graph, proto::GraphDef* out);

// A tensor as TensorFlow's TensorProto (numbers in tensor_content, strings in string_val), as
// Const attrs are written; also what tensor summaries carry. Unimplemented for resource and
// variant tensors.
Status TensorToProto(const Tensor& tensor, proto::TensorProto* out);

// The tensor a TensorProto holds (tensor_content, or the typed repeated fields, expanded up to a
// size limit), checked as a Const attr is: InvalidArgument naming `what` for a malformed one,
// Unimplemented for resource and variant tensors.
Status TensorFromProto(const proto::TensorProto& in, const std::string& what, Tensor* out);

// A tensor as the bytes of its serialized TensorProto, and back: the form tf.io.serialize_tensor
// and the SparseTensor serializations store tensors in. Bytes that do not parse are an
// InvalidArgument naming `what`.
Status SerializeTensorProto(const Tensor& tensor, std::string* out);
Status ParseTensorProto(const std::string& bytes, const std::string& what, Tensor* out);

struct ImportGraphDefOptions {
  // Prepended with a "/" to every imported node's name (and to `_class` colocation names); empty
  // for none.
  std::string prefix;
  // Tensors of the GraphDef ("name:N", or "name" for output 0) replaced by tensors already in the
  // destination graph; "^name" keys replace control inputs by `Endpoint::node`.
  std::vector<std::pair<std::string, Endpoint>> input_map;
  // What to return: "name:N" tensors or "name" operations of the GraphDef (unprefixed names).
  std::vector<std::string> return_elements;
};

struct ImportGraphDefResults {
  // One entry per return element, in order; `index` is -1 for an operation.
  std::vector<Endpoint> return_elements;
};

// Adds the nodes of `def` to `graph`. Ops Flowstone does not register are all found before any
// node is added and reported together: NotFound "Op type not registered 'X' in binary running
// on <host>" naming the first such node and listing every unsupported op type of the GraphDef.
Status ImportGraphDef(const proto::GraphDef& def, const ImportGraphDefOptions& options,
                      Graph* graph, ImportGraphDefResults* results);

// Parses a serialized GraphDef; a truncated or malformed message is InvalidArgument.
Status ParseGraphDef(const std::string& bytes, proto::GraphDef* out);

}  // namespace flowstone
