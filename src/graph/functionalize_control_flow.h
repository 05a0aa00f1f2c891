// TF1 control flow ("v1": Switch, Merge, Enter, Exit, NextIteration, LoopCond) in an imported
// GraphDef, rewritten into Flowstone's functional If and While over graph functions before the
// import, as TensorFlow's functionalize_control_flow does for XLA. Flowstone keeps one function
// mechanism: the loops and conds of a TF 1.x graph run as the same call ops as TF 2.x's.
//
//   loops: every Enter frame (innermost first) becomes one While node. Loop variables enter
//          through Enter -> Merge -> Switch(LoopCond) and leave through Exit; loop-invariant
//          Enters (is_constant) become extra loop variables the body returns unchanged. The cond
//          function is what computes LoopCond's input from the Merges; the body function is what
//          computes the NextIterations' inputs from the Switches' true outputs. Each Exit becomes
//          an Identity of the While's output, under the Exit's name, so fetches keep working.
//   conds: the Switches of one predicate (looked through Identity) and the nodes their outputs
//          reach up to Merges become one If (innermost conds first); each Merge becomes an
//          Identity of the If's output, under the Merge's name.
//
// What the rewrite cannot convert is Unimplemented naming the node and the pattern; a malformed
// structure (a Merge without two inputs, an Exit outside any loop, inputs from two frames) is
// InvalidArgument. Nodes inside a loop or a cond move into the functions, so their names can no
// longer be fetched or mapped.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/status.h"

namespace flowstone {

namespace proto {
class GraphDef;
}  // namespace proto

// A function the rewrite built: a GraphDef in which the arguments are Placeholders.
struct FunctionalizedBody {
  std::string name;
  std::shared_ptr<proto::GraphDef> body;
  std::vector<std::string> args;  // the argument Placeholders' names, in order
  std::vector<std::string> rets;  // "node:N" tensors of `body`, in order
};

// Whether `op` is one of TF1's control-flow ops this rewrite removes.
bool IsV1ControlFlowOp(const std::string& op);

// Whether any node of `def` (not of its library) is a TF1 control-flow op.
bool HasV1ControlFlow(const proto::GraphDef& def);

// Rewrites `def` in place so that it has no TF1 control-flow op, and appends the functions its
// new If and While nodes call to `bodies`, each after the functions it calls. `name_taken` says
// which function names are already in use (the library the graph will be imported into).
Status FunctionalizeControlFlow(proto::GraphDef* def,
                                const std::function<bool(const std::string&)>& name_taken,
                                std::vector<FunctionalizedBody>* bodies);

}  // namespace flowstone
