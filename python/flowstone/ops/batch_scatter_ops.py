"""tf.required_space_to_batch_paddings and tf.batch_scatter_update, composed from other ops."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, manip_ops, math_ops, scatter_ops
from flowstone.util.tf_export import tf_export


@tf_export("required_space_to_batch_paddings")
def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """(paddings, crops) for space_to_batch_nd / batch_to_space_nd: `base_paddings` (default
    zeros) plus the least extra end padding that makes each padded size a multiple of its
    block size; crops remove that extra padding again."""
    with _ops.name_scope(name, "required_space_to_batch_paddings"):
        input_shape = _ops.convert_to_tensor(input_shape, dtype=_dtypes.int32, name="input_shape")
        block_shape = _ops.convert_to_tensor(block_shape, dtype=_dtypes.int32, name="block_shape")
        if base_paddings is None:
            base_paddings = array_ops.zeros(array_ops.stack([array_ops.size(block_shape), 2]),
                                            _dtypes.int32)
        base_paddings = _ops.convert_to_tensor(base_paddings, dtype=_dtypes.int32,
                                               name="base_paddings")
        start, end = base_paddings[:, 0], base_paddings[:, 1]
        padded = math_ops.add(math_ops.add(input_shape, start), end)
        extra = math_ops.floormod(math_ops.subtract(block_shape,
                                                    math_ops.floormod(padded, block_shape)),
                                  block_shape)
        paddings = array_ops.stack([start, math_ops.add(end, extra)], axis=1, name="paddings")
        crops = array_ops.stack([array_ops.zeros_like(extra), extra], axis=1, name="crops")
        return paddings, crops


@tf_export("batch_scatter_update")
def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """ref[b..., indices[b..., k], ...] = updates[b..., k, ...] for a variable `ref` whose leading
    dimensions are the batch dimensions of `indices`; returns the updated variable's value."""
    with _ops.name_scope(name, "BatchScatterUpdate"):
        indices = _ops.convert_to_tensor(indices, name="indices")
        rank = indices.shape.ndims
        if rank is None:
            raise ValueError("batch_scatter_update needs indices of known rank")
        if rank == 1:
            return scatter_ops.scatter_update(ref, indices, updates, use_locking=use_locking)
        shape = array_ops.shape(indices)
        coordinates = []
        for axis in range(rank - 1):
            along = array_ops.reshape(math_ops.cast(array_ops.range(shape[axis]), indices.dtype),
                                      [-1 if a == axis else 1 for a in range(rank)])
            coordinates.append(manip_ops.broadcast_to(along, shape))
        coordinates.append(indices)
        return scatter_ops.scatter_nd_update(ref, array_ops.stack(coordinates, axis=-1), updates,
                                           use_locking=use_locking)
