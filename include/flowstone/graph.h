// The dataflow graph: nodes (op instances) connected by tensor edges and control edges.
//
// A graph only grows: nodes are never removed or rewired after they are added, so plans compiled
// by a session stay valid while the user keeps adding nodes. Adding nodes and reading the graph
// from several threads is safe.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "flowstone/attr.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"

namespace flowstone {

class FunctionLibrary;
class Node;

// One output of a node: "name:index".
struct Endpoint {
  Node* node = nullptr;
  int index = 0;
  bool operator==(const Endpoint& other) const {
    return node == other.node && index == other.index;
  }
  // "op_name:0".
  std::string ToString() const;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& type() const { return op_->name; }
  const OpDef& op_def() const { return *op_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Endpoint& input(int i) const { return inputs_[i]; }
  const std::vector<Endpoint>& inputs() const { return inputs_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DType output_type(int i) const { return output_types_[i]; }
  const PartialShape& output_shape(int i) const { return output_shapes_[i]; }
  DType input_type(int i) const { return inputs_[i].node->output_type(inputs_[i].index); }
  const AttrMap& attrs() const { return attrs_; }
  // The device the user asked for with tf.device (may be partial or empty).
  const std::string& requested_device() const { return requested_device_; }
  // Where the user created the node ("file.py:12 in build_model", one frame per line).
  const std::string& creation_site() const { return creation_site_; }
  bool is_stateful() const { return op_->stateful; }
  // "{{node name}} = Type[attrs](inputs)" as TensorFlow prints nodes in errors.
  std::string DebugString() const;

 private:
  friend class Graph;
  int id_ = -1;
  std::string name_;
  const OpDef* op_ = nullptr;
  std::vector<Endpoint> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<DType> output_types_;
  std::vector<PartialShape> output_shapes_;
  AttrMap attrs_;
  std::string requested_device_;
  std::string creation_site_;
};

// What AddNode needs to create a node.
struct NodeSpec {
  std::string name;  // must be unique; see Graph::UniqueName
  std::string op;
  std::vector<Endpoint> inputs;
  std::vector<Node*> control_inputs;
  AttrMap attrs;
  std::string device;
  std::string creation_site;
};

class Graph : public std::enable_shared_from_this<Graph> {
 public:
  // A graph with an empty function library of its own.
  Graph();
  // A function body: it shares `library` with the graph it is traced in, so calls inside it find
  // the same functions.
  explicit Graph(std::shared_ptr<FunctionLibrary> library);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Validates the spec against the op's schema, infers type attrs from the inputs, fills attr
  // defaults, runs shape inference and adds the node. Errors: an unknown op (NotFound), a dtype
  // mismatch (InvalidArgument with py_type=TypeError), incompatible shapes (InvalidArgument,
  // naming the op and its input shapes), a duplicate name, or a finalized graph.
  StatusOr<Node*> AddNode(NodeSpec spec);

  // Replaces the device `node` asks for. For device functions (tf.device with a function), which
  // see the created node: Python sets the device they return right after AddNode, before the
  // node reaches user code or a session.
  void SetRequestedDevice(Node* node, std::string device);

  // Narrows the static shape of `node`'s output `index` to its merge with `shape`
  // (Tensor.set_shape): nodes added afterwards infer their shapes from the narrowed one.
  // InvalidArgument (py_type ValueError) if the two shapes are incompatible.
  Status RefineOutputShape(Node* node, int index, const PartialShape& shape);

  Node* FindNode(const std::string& name) const;
  Node* node(int id) const;
  int num_nodes() const;
  // Nodes [0, num_nodes) in creation order (which is a topological order).
  std::vector<Node*> nodes() const;

  // TensorFlow's unique naming: "Add", then "Add_1", "Add_2"; case-insensitive like TF.
  std::string UniqueName(const std::string& base);

  // After Finalize, AddNode fails; TensorFlow raises this to catch graphs that grow per step.
  void Finalize() { finalized_ = true; }
  bool finalized() const { return finalized_; }

  // The functions this graph's call ops (If, While, PartitionedCall, ...) refer to by name. A
  // function body shares the library of the root graph it was traced in; a body that outlives
  // that root graph sees an empty library.
  FunctionLibrary& library() const;
  // The library, for making function bodies that share it (null once the root graph is gone).
  std::shared_ptr<FunctionLibrary> shared_library() const { return library_.lock(); }

  // A seed set with tf.set_random_seed, or -1.
  int64_t seed() const { return seed_; }
  void set_seed(int64_t seed) { seed_ = seed; }

  // Readers (sessions compiling plans) hold it shared; AddNode holds it exclusively.
  std::shared_mutex& mutex() const { return mu_; }
  // For callers already holding mutex().
  int num_nodes_unlocked() const { return static_cast<int>(nodes_.size()); }
  Node* node_unlocked(int id) const {
    return id >= 0 && id < static_cast<int>(nodes_.size()) ? nodes_[id].get() : nullptr;
  }
  // The node named `name`, or nullptr.
  Node* FindNodeUnlocked(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  mutable std::shared_mutex mu_;
  // A root graph owns its library; a function body only refers to it. The library owns its
  // bodies, so a body owning the library back would be a reference cycle leaking both.
  std::shared_ptr<FunctionLibrary> owned_library_;
  std::weak_ptr<FunctionLibrary> library_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, int> name_counts_;
  bool finalized_ = false;
  int64_t seed_ = -1;
};

}  // namespace flowstone
