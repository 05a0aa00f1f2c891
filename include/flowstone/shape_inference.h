// The context an op's shape function sees while a node is being added to a graph.
#pragma once

#include <string>
#include <vector>

#include "flowstone/attr.h"
#include "flowstone/graph.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

class InferenceContext {
 public:
  InferenceContext(const std::string& op_type, const std::string& node_name, const AttrMap& attrs,
                   std::vector<PartialShape> input_shapes, std::vector<DType> input_types,
                   std::vector<const Tensor*> input_values, std::vector<DType> output_types,
                   std::vector<Endpoint> input_sources = {});

  const std::string& op_type() const { return op_type_; }
  const std::string& node_name() const { return node_name_; }
  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const PartialShape& input(int i) const { return input_shapes_[i]; }
  DType input_type(int i) const { return input_types_[i]; }
  DType output_type(int i) const { return output_types_[i]; }
  // The value of input i when it is known while building (a constant, or a shape that is fully
  // known); nullptr otherwise.
  const Tensor* input_value(int i) const { return input_values_[i]; }
  const AttrMap& attrs() const { return attrs_; }
  // The library of the graph the node is added to, for the shapes of call ops; may be null.
  const FunctionLibrary* library() const { return library_; }
  void set_library(const FunctionLibrary* library) { library_ = library; }
  template <typename T>
  Status GetAttr(const std::string& name, T* out) const {
    return attrs_.Get(name, out);
  }

  void set_output(int i, PartialShape shape) { output_shapes_[i] = std::move(shape); }
  const PartialShape& output(int i) const { return output_shapes_[i]; }
  std::vector<PartialShape>& outputs() { return output_shapes_; }

  // Reads a 1-D shape tensor input (like Reshape's `shape` or Fill's `dims`) into a partial
  // shape: known entries where the value is known, unknown elsewhere. Beyond constants, the
  // entries are followed through the ops that build shapes (see src/graph/partial_value.h), so
  // `[tf.shape(x)[0], 2]` gives [?,2]; -1 entries are unknown.
  Status InputAsShape(int i, PartialShape* out) const;

  // Helpers returning InvalidArgument with TensorFlow-style wording.
  Status WithRank(int input, int rank, PartialShape* out) const;
  Status WithRankAtLeast(int input, int rank) const;
  // Merges two dimensions that must be equal, "Dimensions must be equal, but are 10 and 5".
  Status MergeDim(int64_t a, int64_t b, int64_t* out) const;

 private:
  std::string op_type_;
  std::string node_name_;
  const AttrMap& attrs_;
  std::vector<PartialShape> input_shapes_;
  std::vector<DType> input_types_;
  std::vector<const Tensor*> input_values_;
  std::vector<DType> output_types_;
  std::vector<PartialShape> output_shapes_;
  // The tensors feeding the inputs, when the node is being added to a graph (else empty).
  std::vector<Endpoint> input_sources_;
  const FunctionLibrary* library_ = nullptr;
};

// Shape functions shared by many ops.
namespace shape_fns {
// Output 0 has the shape of input 0.
Status Unchanged(InferenceContext& ctx);
// Output is a scalar.
Status Scalar(InferenceContext& ctx);
// Output 0 is the numpy broadcast of inputs 0 and 1.
Status Broadcast(InferenceContext& ctx);
// No outputs.
Status NoOutputs(InferenceContext& ctx);
}  // namespace shape_fns

// numpy broadcasting of two partial shapes; fails naming both shapes.
Status BroadcastShapes(const PartialShape& a, const PartialShape& b, PartialShape* out);
// numpy broadcasting of two concrete shapes.
Status BroadcastShapes(const TensorShape& a, const TensorShape& b, TensorShape* out);

}  // namespace flowstone
