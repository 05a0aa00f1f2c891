"""tf.debugging.enable_check_numerics: every floating-point output of the ops made (graph) or run
(eager) afterwards is checked for NaN and infinity by a CheckNumericsV2 op, whose
InvalidArgumentError names the op that produced it. Eager outputs are checked as the op runs; in
a graph, the check sits between the op and each op reading the output, so outputs that are only
fetched are not checked."""

import weakref

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export

# Ops that give finite outputs for finite inputs, so checking their outputs finds nothing new.
_SAFE_OPS = frozenset({
    "Const", "Placeholder", "PlaceholderWithDefault", "Identity", "IdentityN", "Reshape",
    "ExpandDims", "Squeeze", "Transpose", "Concat", "ConcatV2", "Pack", "Unpack", "Slice",
    "StridedSlice", "Gather", "GatherV2", "Tile", "Fill", "OneHot", "ReadVariableOp",
    "VarHandleOp", "Shape", "Size", "Rank", "ZerosLike", "OnesLike", "CheckNumerics",
    "CheckNumericsV2"})
_FLOAT_TYPES = (_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64)


def _message(op, index, mode):
    outputs = op.outputs
    tensor = outputs[index]
    return (f'\n\n!!! Detected Infinity or NaN in output {index} of {mode} op "{op.type}" '
            f"(# of outputs: {len(outputs)}) !!!\n  dtype: {tensor.dtype!r}\n"
            f"  shape: {tensor.shape}\n" + ("" if mode != "graph" else
                                             f"  op name: {op.name}\n") + "\n")


class _CheckNumerics:
    def __init__(self):
        self._checked = weakref.WeakSet()  # graph ops made while checking was on

    def on_output(self, op_type, op):
        if op_type in _SAFE_OPS:
            return
        if isinstance(op, _ops.Operation):
            self._checked.add(op)
            return
        for index, tensor in enumerate(op.outputs):
            if tensor.dtype in _FLOAT_TYPES:
                _ops.apply_op("CheckNumericsV2", [tensor],
                              {"message": _message(op, index, "eagerly-executing")})

    def on_input(self, tensor, op_type):
        if op_type == "CheckNumericsV2" or tensor.dtype not in _FLOAT_TYPES or \
                tensor.op not in self._checked:
            return tensor
        message = _message(tensor.op, tensor.value_index, "graph")
        return _ops.apply_op("CheckNumericsV2", [tensor], {"message": message}).outputs[0]


_callback = None


@tf_export("debugging.enable_check_numerics")
def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Checks every floating-point output of the ops made or run from now on for NaN and
    infinity (InvalidArgumentError naming the op). The limits are accepted and unused: the
    error carries the op's creation site as every Flowstone error does."""
    del stack_height_limit, path_length_limit
    global _callback
    if _callback is None:
        _callback = _CheckNumerics()
        _ops._op_callbacks.append(_callback)
        _C.eager_operators_hold(1)  # `x + y` of eager tensors too goes through apply_op


@tf_export("debugging.disable_check_numerics")
def disable_check_numerics():
    """Stops checking the outputs of ops made or run from now on (checks already in a graph
    stay)."""
    global _callback
    if _callback is not None:
        _ops._op_callbacks.remove(_callback)
        _C.eager_operators_hold(-1)
        _callback = None
