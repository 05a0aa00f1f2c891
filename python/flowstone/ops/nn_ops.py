"""Softmax and log-softmax (tf.nn.softmax, tf.nn.log_softmax)."""

import numpy as np

from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.ops.reduction_ops import _deprecated_lookup

__all__ = ["softmax", "log_softmax"]


def _softmax(op_type, logits, axis, name):
    """Applies a last-axis op along `axis`, swapping that axis with the last one around it."""
    logits = _ops.convert_to_tensor(logits)
    rank = logits.shape.rank
    if axis == -1 or (rank is not None and axis == rank - 1):
        return _ops.apply_op(op_type, [logits], name=name or op_type).outputs[0]
    if rank is None:
        raise ValueError(f"{op_type} along axis {axis} needs the rank of the logits to be known; "
                         "set it with logits.set_shape(...) or use the last axis (axis=-1).")
    if not -rank <= axis < rank:
        raise _errors.InvalidArgumentError(
            None, None, f"Dimension ({axis}) must be in the range [{-rank}, {rank}) where {rank} "
                        "is the number of dimensions in the input.")
    axis %= rank
    perm = np.arange(rank, dtype=np.int32)
    perm[axis], perm[-1] = rank - 1, axis
    # Swapping two axes is its own inverse, so the same permutation restores the layout.
    swapped = _ops.apply_op("Transpose", [logits, perm]).outputs[0]
    result = _ops.apply_op(op_type, [swapped]).outputs[0]
    return _ops.apply_op("Transpose", [result, perm], name=name or op_type).outputs[0]


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / reduce_sum(exp(logits), axis), computed stably (default: last axis)."""
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    return _softmax("Softmax", logits, -1 if axis is None else int(axis), name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - log(reduce_sum(exp(logits), axis)), computed stably (default: last axis)."""
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    return _softmax("LogSoftmax", logits, -1 if axis is None else int(axis), name)
