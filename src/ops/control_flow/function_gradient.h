// Gradients of functional ops. The gradient of a call is a call of a gradient function: the
// gradient ops are added (by AddGradients) to the function's own body, which is append-only, so
// the forward plan prunes them away and the gradient function recomputes the forward values it
// needs from the same inputs.
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

// The gradient of a call of `function` from the node in `ctx` (PartitionedCall and
// StatefulPartitionedCall): a call, of the same op type, of its gradient function.
Status CallGradient(GradientContext& ctx, const std::string& function_attr);

}  // namespace flowstone
