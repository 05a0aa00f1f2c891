// Symbolic differentiation: adds the ops computing d(ys)/d(xs) to a graph.
//
// Each op's gradient is a GradFn registered next to the op (OpBuilder::Gradient). It receives a
// GradientContext: the forward node, the gradients flowing into its outputs, and a way to add
// ops; it sets the gradients of the node's inputs, written as graph ops so they run on any device
// and can themselves be differentiated.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "flowstone/attr.h"
#include "flowstone/graph.h"
#include "flowstone/status.h"

namespace flowstone {

class GradientContext {
 public:
  GradientContext(Graph* graph, const Node& node, std::vector<Endpoint> output_grads,
                  std::string name_prefix);

  const Node& node() const { return node_; }
  // The graph being differentiated (its library holds the functions call ops refer to).
  Graph* graph() const { return graph_; }
  const AttrMap& attrs() const { return node_.attrs(); }
  int num_inputs() const { return node_.num_inputs(); }
  int num_outputs() const { return node_.num_outputs(); }
  Endpoint input(int i) const { return node_.input(i); }
  Endpoint output(int i) const { return Endpoint{const_cast<Node*>(&node_), i}; }
  DType input_type(int i) const { return node_.input_type(i); }
  // The gradient flowing into output i; a node with no gradient there gets zeros on request.
  bool has_output_grad(int i) const { return output_grads_[i].node != nullptr; }
  Endpoint output_grad(int i);

  // The gradient for input i (leave unset for "no gradient", e.g. integer indices).
  void SetInputGrad(int i, Endpoint grad) { input_grads_[i] = grad; }
  const std::vector<Endpoint>& input_grads() const { return input_grads_; }

  // Adds an op named under the gradient scope; returns output `index`. After an error every
  // call returns a null endpoint and status() holds the first error.
  Endpoint Op(const std::string& type, const std::vector<Endpoint>& inputs,
              const AttrMap& attrs = {}, int index = 0);
  Node* AddNode(const std::string& type, const std::vector<Endpoint>& inputs,
                const AttrMap& attrs = {});
  // Common building blocks.
  Endpoint Const(const Tensor& value);
  Endpoint ScalarLike(Endpoint like, double value);  // a scalar constant of like's dtype
  Endpoint Shape(Endpoint x);                        // int32 shape of x
  // conj(x) for a complex x, x itself otherwise: TensorFlow's complex gradients are
  // dL/dRe + i dL/dIm, so the chain rule through a holomorphic f multiplies by conj(f'(z)).
  Endpoint ConjIfComplex(Endpoint x);
  // Sums `grad` over the dimensions where `x` was broadcast to produce it, then reshapes to x's
  // shape: the gradient of a broadcasting binary op for input x.
  Endpoint ReduceToShapeOf(Endpoint grad, Endpoint x, Endpoint other);

  const Status& status() const { return status_; }

 private:
  Graph* graph_;
  const Node& node_;
  std::vector<Endpoint> output_grads_;
  std::vector<Endpoint> input_grads_;
  std::string prefix_;
  Status status_;
};

struct GradientOptions {
  // Gradients start here; empty entries (or none) mean ones of each y's shape.
  std::vector<Endpoint> grad_ys;
  // Gradients do not flow through these tensors.
  std::vector<Endpoint> stop_gradients;
  // Name scope of the new ops, e.g. "gradients".
  std::string name_scope = "gradients";
  // Where the user asked for the gradients, for error messages and creation sites.
  std::string creation_site;
  // Gradient functions defined outside the core (tf.RegisterGradient in Python). Used for a node
  // whose `_gradient_op_type` attr names one (Graph.gradient_override_map), in place of its op's
  // gradient. Sets *found to false when no function has that name.
  std::function<Status(GradientContext& ctx, const std::string& gradient_type, bool* found)>
      external_gradient;
};

// Adds ops computing sum(d ys / d xs) for each x. (*grads)[i] is a null endpoint when ys do not
// depend on xs[i]. Fails with InvalidArgument (py_type LookupError) naming the op when a needed
// op has no gradient and is not marked NotDifferentiable.
Status AddGradients(Graph* graph, const std::vector<Endpoint>& ys, const std::vector<Endpoint>& xs,
                    const GradientOptions& options, std::vector<Endpoint>* grads);

}  // namespace flowstone
