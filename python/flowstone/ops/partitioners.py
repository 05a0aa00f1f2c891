"""The variable partitioners TF1 offers besides fixed_size_partitioner: each returns a function
of (shape, dtype) giving how many parts each dimension is split into (only `axis` is split)."""

import math

from flowstone import dtypes as _dtypes
from flowstone.framework.tensor_shape import TensorShape
from flowstone.util.tf_export import tf_export


def _element_bytes(dtype, bytes_per_string_element):
    dtype = _dtypes.as_dtype(dtype).base_dtype
    return bytes_per_string_element if dtype == _dtypes.string else dtype.size


@tf_export("variable_axis_size_partitioner")
def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """Splits `axis` into as few parts as keep each part within `max_shard_bytes` (at least one
    slice per part), at most `max_shards` parts."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         f"Currently, max_shard_bytes is {max_shard_bytes} and "
                         f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def partitioner(shape, dtype):
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dims = shape.as_list()
        bytes_per_slice = (shape.num_elements() / dims[axis] *
                           _element_bytes(dtype, bytes_per_string_element))
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(dims[axis] / slices_per_shard))
        if max_shards:
            shards = min(max_shards, shards)
        partitions = [1] * len(dims)
        partitions[axis] = shards
        return partitions
    return partitioner


@tf_export("min_max_variable_partitioner")
def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """Splits `axis` into parts of at least `min_slice_size` bytes, at most `max_partitions`
    parts (and at most one per slice)."""
    if min_slice_size <= 0:
        raise ValueError(f"min_slice_size must be positive, got {min_slice_size}")

    def partitioner(shape, dtype):
        dims = TensorShape(shape).as_list()
        if axis >= len(dims):
            raise ValueError(f"Can not partition variable along axis {axis} when shape is "
                             f"only {shape}")
        total_bytes = math.prod(dims) * _element_bytes(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        partitions[axis] = max(1, min(dims[axis], max_partitions,
                                      int(math.ceil(total_bytes / min_slice_size))))
        return partitions
    return partitioner
