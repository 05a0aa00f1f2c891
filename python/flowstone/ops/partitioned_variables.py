"""tf.create_partitioned_variables: a variable of `shape` made as one variable per slice along
its partitioned dimension ("<name>/part_<i>"), as TensorFlow lays them out. Flowstone makes
variables whole otherwise (partitioners are ignored), so the slices are plain variables."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import variable_scope as _vs
from flowstone.util.tf_export import tf_export


def _slice_sizes(dim, parts):
    """TensorFlow's split of `dim` into `parts`: the first dim % parts slices one longer."""
    base, extra = divmod(dim, parts)
    return [base + 1 if i < extra else base for i in range(parts)]


@tf_export("create_partitioned_variables")
def create_partitioned_variables(shape, slicing, initializer, dtype=_dtypes.float32,
                                 trainable=True, collections=None, name=None, reuse=None):
    """A list of variables, one per slice of `shape` cut `slicing[d]` ways along the one
    dimension d with slicing[d] > 1. `initializer` is an initializer (called with each slice's
    shape) or a value of the full shape (sliced)."""
    shape = [int(d) for d in shape]
    slicing = [int(s) for s in slicing]
    if len(shape) != len(slicing):
        raise ValueError(f"The 'shape' and 'slicing' of a partitioned Variable must have the "
                         f"length: shape: {shape}, slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    split = [d for d, s in enumerate(slicing) if s > 1]
    if len(split) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"slicing: {slicing}")
    axis = split[0] if split else 0
    sizes = _slice_sizes(shape[axis], slicing[axis])
    if not callable(initializer) and not isinstance(initializer, _ops.Tensor):
        initializer = np.asarray(initializer)
    with _vs.variable_scope(name, "PartitionedVariable", reuse=reuse):
        parts, offset = [], 0
        for i, size in enumerate(sizes):
            part_shape = list(shape)
            part_shape[axis] = size
            if callable(initializer):
                init, init_shape = initializer, part_shape
            else:
                index = [slice(None)] * len(shape)
                index[axis] = slice(offset, offset + size)
                init, init_shape = initializer[tuple(index)], None
            parts.append(_vs.get_variable(f"part_{i}", shape=init_shape, dtype=dtype,
                                          initializer=init, trainable=trainable,
                                          collections=collections))
            offset += size
        return parts
