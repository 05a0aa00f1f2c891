// Gradients of functional ops. The gradient of a call is a call of a gradient function: the
// gradient ops are added (by AddGradients) to the function's own body, which is append-only, so
// the forward plan prunes them away and the gradient function recomputes the forward values it
// needs from the same inputs. A loop's gradient instead splits them (SplitGradientFunction): the
// forward values the gradient ops read become extra outputs of the forward function and extra
// inputs of the gradient function, so each iteration's values are recorded, not recomputed.
#pragma once

#include <string>
#include <vector>

#include "flowstone/function.h"
#include "flowstone/gradients.h"

namespace flowstone {

struct GradientBody {
  // The function's outputs that receive an incoming gradient (its floating-point outputs), and
  // the Placeholders in the body that carry those gradients.
  std::vector<int> dy_outputs;
  std::vector<Endpoint> dys;
  // Per input of the function: its gradient in the body, or a null endpoint when none flows.
  std::vector<Endpoint> grads;
  // The id of the body's first gradient node: older nodes are the function's forward computation.
  int first_gradient_node = 0;
};

// Adds the gradient ops of `function` to its body.
Status BuildGradientBody(const FunctionDef& function, GradientBody* out);

// Adds to the library a function whose inputs are `function`'s inputs followed by `body.dys`,
// and whose outputs are the gradients of the inputs listed in `inputs`. An input with no gradient
// in this body gets zeros of dtype `types[k]` (a resource input: zeros like the variable), so that
// the two branches of an If return the same signature. Returns the new function's name.
StatusOr<std::string> AddGradientFunction(const FunctionDef& function, const GradientBody& body,
                                          const std::vector<int>& inputs,
                                          const std::vector<DType>& types);

// A gradient function that reads the forward values it needs instead of recomputing them.
struct SplitGradient {
  // `function` returning, after its own outputs, the intermediates: the forward values (in its
  // body) that the gradient ops read, other than its inputs and constants.
  std::string forward;
  std::vector<Endpoint> intermediates;
  // The gradient ops alone, in a body of their own. Inputs: the inputs of `function` listed in
  // `reads_inputs` (those the gradient ops read), then the intermediates, then the incoming
  // gradients (GradientBody::dys). Outputs: the gradients of the inputs asked for, as
  // AddGradientFunction's.
  std::string backward;
  std::vector<int> reads_inputs;
};

// Adds the two functions of a SplitGradient of `function` (whose gradient ops `body` holds) to
// the library. The forward function computes what `function` computes, so side effects and
// random values happen once, and the gradient sees the values of the forward pass.
StatusOr<SplitGradient> SplitGradientFunction(const FunctionDef& function, const GradientBody& body,
                                              const std::vector<int>& inputs,
                                              const std::vector<DType>& types);

// The gradient of a call of `function` from the node in `ctx` (PartitionedCall and
// StatefulPartitionedCall): a call, of the same op type, of its gradient function.
Status CallGradient(GradientContext& ctx, const std::string& function_attr);

}  // namespace flowstone
