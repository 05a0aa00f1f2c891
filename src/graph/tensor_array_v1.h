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

}  // namespace flowstone
