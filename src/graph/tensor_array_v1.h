// TF1's TensorArray ops (TensorArrayV3, ...WriteV3, ReadV3, ScatterV3, GatherV3, SizeV3, CloseV3)
// in an imported GraphDef, rewritten into TensorList ops before the import, the representation
// TensorFlow 2 and Flowstone's own tf.TensorArray use: a TensorArray's `flow` becomes the list
// itself (a variant tensor, so the loop variables and Enter/Merge/Switch/Exit/NextIteration/
// Identity nodes that carry a flow change their T to variant), and the `handle` disappears (every
// op takes the list from its flow input instead). Run before FunctionalizeControlFlow, so a
// TensorArray carried through a TF1 while loop becomes a list carried through a While.
//
//   TensorArrayV3 ta(size)            -> TensorListReserve ta(element_shape, size); "ta:1" ->
//   "ta:0" TensorArrayWriteV3 w(h, i, v, f)  -> TensorListSetItem w(f, i, v) TensorArrayReadV3 r(h,
//   i, f)      -> TensorListGetItem r(f, i, -1) TensorArrayScatterV3 s(h, i, v, f)->
//   TensorListScatterIntoExistingList s(f, v, i) TensorArrayGatherV3 g(h, i, f)    ->
//   TensorListGather g(f, i, element_shape) TensorArraySizeV3 n(h, f)         -> TensorListLength
//   n(f) TensorArrayCloseV3 c(h)           -> NoOp c
//
// Graphs whose TensorArray handles reach any other op (TensorArrayGradV3 of TF1 training graphs,
// TensorArrayConcatV3, ...) are left unchanged, so the import lists those ops as unsupported.
#pragma once

#include "flowstone/status.h"

namespace flowstone {

namespace proto {
class GraphDef;
}  // namespace proto

// Whether `def` (not its library) has a TensorArrayV3 node.
bool HasTensorArraysV3(const proto::GraphDef& def);

// Rewrites `def`'s TensorArrays in place, as described above.
Status RewriteTensorArraysV3(proto::GraphDef* def);

// TF1's gradient stacks (tf.gradients through a while_loop): a StackV2 that the forward loop
// pushes to (StackPushV2, through an Enter) and the backward loop pops from (StackPopV2, through
// another Enter) becomes a TensorList threaded through both loops as a loop variable, in TF1's own
// loop structure (Enter -> Merge -> Switch(LoopCond) -> Identity, NextIteration, Exit), which
// FunctionalizeControlFlow then converts with the rest:
//
//   StackV2 s              -> TensorListReserve s(-1, 0)
//   StackPushV2 p(h, v)    -> TensorListPushBack p(list, v), the forward loop's new variable
//   StackPopV2 q(h)        -> TensorListPopBack q(list, -1): q:0 the backward loop's new
//                             variable (starting from the forward loop's Exit), q:1 the value
//                             (what "q:0" meant)
//
// A value of a nested loop has its stack enter the outer loop and then the inner one (a chain of
// Enters, on both the forward and the backward side): the list is then a loop variable of each
// loop of the chain, the inner loop's Exit feeding the outer loop's NextIteration. Stacks used
// another way are left unchanged, so the import lists StackV2 as unsupported.
bool HasStacksV2(const proto::GraphDef& def);
Status RewriteStacksV2(proto::GraphDef* def);

}  // namespace flowstone
