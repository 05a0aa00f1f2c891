// Bindings for TensorFlow's GraphDef format: graphs cross as serialized bytes, and Python wraps
// them in protobuf message classes (flowstone/framework/tf_protos.py).
#include "flowstone/graph_def.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "common.h"
#include "proto/graph.pb.h"

namespace flowstone::python {

void RegisterGraphDef(nb::module_& m) {
  m.def(
      "graph_to_graph_def",
      [](const Graph& graph) {
        proto::GraphDef def;
        ThrowIfError(GraphToGraphDef(graph, &def));
        std::string bytes = def.SerializeAsString();
        return nb::bytes(bytes.data(), bytes.size());
      },
      "The graph as a serialized TensorFlow GraphDef.");
  m.def(
      "import_graph_def",
      [](Graph& graph, nb::bytes serialized, const std::string& prefix,
         const std::vector<std::tuple<std::string, NodeRef, int>>& input_map,
         const std::vector<std::string>& return_elements) {
        proto::GraphDef def;
        ThrowIfError(ParseGraphDef(std::string(serialized.c_str(), serialized.size()), &def));
        ImportGraphDefOptions options;
        options.prefix = prefix;
        for (const auto& [key, ref, index] : input_map) {
          if (ref.graph.get() != &graph) {
            ThrowIfError(
                errors::InvalidArgument("input_map['", key, "'] is a tensor of another graph"));
          }
          options.input_map.push_back({key, Endpoint{ref.node, index}});
        }
        options.return_elements = return_elements;
        ImportGraphDefResults results;
        ThrowIfError(ImportGraphDef(def, options, &graph, &results));
        std::vector<std::tuple<NodeRef, int>> out;
        for (const Endpoint& e : results.return_elements) {
          out.emplace_back(NodeRef{graph.shared_from_this(), e.node}, e.index);
        }
        return out;
      },
      "Imports a serialized GraphDef into the graph; returns (node, output index or -1) per "
      "return element.");
}

}  // namespace flowstone::python
