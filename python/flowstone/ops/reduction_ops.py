"""Reductions: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, argmax, argmin."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util import dispatch as _dispatch

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "argmax",
           "argmin"]


def _deprecated_lookup(new_name, new_value, old_name, old_value):
    """The value of an argument that also has a deprecated spelling (TensorFlow's rule)."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
        return old_value
    return new_value


# Eager `reduction_indices` of every axis, by rank: values never change, so eager reductions
# over all axes share one constant instead of making one per call.
_EAGER_ALL_AXES = {}


def _reduction_axes(x, axis):
    """The reduction_indices tensor: `axis` as given, or every axis of `x` when it is None."""
    if axis is None:
        rank = x.shape.rank
        if rank is not None and _ops.executing_eagerly():
            axes = _EAGER_ALL_AXES.get(rank)
            if axes is None:
                with _ops.device(None):
                    axes = _EAGER_ALL_AXES[rank] = _ops.constant(np.arange(rank, dtype=np.int32))
            return axes
        if rank is not None:
            return _ops.constant(np.arange(rank, dtype=np.int32))
        # Unknown rank: all axes are range(rank(x)), computed when the graph runs.
        rank_tensor = _ops.apply_op("Rank", [x]).outputs[0]
        return _ops.apply_op("Range", [0, rank_tensor, 1]).outputs[0]
    if isinstance(axis, _ops.Tensor):
        return axis
    if np.size(axis) == 0:
        return _ops.constant(np.zeros([0], dtype=np.int32))  # not float32, as [] would become
    return _ops.convert_to_tensor(axis)


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    handler = _dispatch.lookup("reduce", input_tensor)
    if handler is not None:  # a tf.RaggedTensor
        return handler(op_type, input_tensor, axis, keepdims, name)
    x = _ops.convert_to_tensor(input_tensor)
    axes = _reduction_axes(x, axis)
    return _ops.apply_op(op_type, [x, axes], {"keep_dims": bool(keepdims)},
                         name=name or op_type).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Sum over `axis` (all axes when None); reduced axes are dropped unless `keepdims`."""
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over `axis`; integer inputs give the truncated integer mean, as in TensorFlow."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Maximum over `axis`; -inf (or the lowest integer) over an empty axis."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Minimum over `axis`; +inf (or the highest integer) over an empty axis."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Product over `axis`; 1 over an empty axis."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _arg_reduce(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = _deprecated_lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    x = _ops.convert_to_tensor(input)
    axis = _ops.convert_to_tensor(axis)
    return _ops.apply_op(op_type, [x, axis], {"output_type": _dtypes.as_dtype(output_type)},
                         name=name or op_type).outputs[0]


def argmax(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """Index of the largest value along `axis` (default 0); the first one on ties."""
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """Index of the smallest value along `axis` (default 0); the first one on ties."""
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)
