"""tf.nn.with_space_to_batch: runs an op over a dilated input by moving the dilation into the
batch dimension (space_to_batch_nd before, batch_to_space_nd after), as TensorFlow composes it."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, batch_scatter_ops, manip_ops, math_ops
from flowstone.ops.array_composites import get_static_value
from flowstone.util.tf_export import tf_export


def _spread(rows, fill, spatial_dims):
    """`rows` (one per spatial dimension) placed at dimensions 1..spatial_dims[-1], `fill` (a
    row of the same shape) at the others."""
    if list(spatial_dims) == list(range(1, len(spatial_dims) + 1)):
        return rows
    by_dim = dict(zip(spatial_dims, array_ops.unstack(rows, num=len(spatial_dims))))
    return array_ops.stack([by_dim.get(d, fill) for d in range(1, spatial_dims[-1] + 1)])


@tf_export("nn.with_space_to_batch")
def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None,  # noqa: A002
                        spatial_dims=None, data_format=None):
    """op(converted_input, num_spatial_dims, padding) evaluated as if over `input` dilated by
    dilation_rate: the input's spatial_dims (default: those after the batch, or after the
    channels for an "NC..." data_format) are padded and moved into the batch, the op runs with
    "VALID" padding, and the result is moved back. "SAME" padding needs filter_shape."""
    input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
    rate = _ops.convert_to_tensor(dilation_rate, dtype=_dtypes.int32, name="dilation_rate")
    if rate.shape.rank != 1 or rate.shape[0] is None:
        raise ValueError(f"`dilation_rate` must be a vector of known length, got shape "
                         f"{rate.shape}")
    num_spatial_dims = rate.shape[0]
    start = 2 if data_format is not None and data_format.startswith("NC") else 1
    if spatial_dims is None:
        spatial_dims = list(range(start, num_spatial_dims + start))
    spatial_dims = sorted(set(int(d) for d in spatial_dims))
    if len(spatial_dims) != num_spatial_dims or spatial_dims[0] < 1:
        raise ValueError(f"spatial_dims must be {num_spatial_dims} distinct positive "
                         f"dimensions (one per dilation rate), got {spatial_dims}")
    if input.shape.rank is not None and input.shape.rank < spatial_dims[-1] + 1:
        raise ValueError(f"input of shape {input.shape} must have rank at least "
                         f"{spatial_dims[-1] + 1}")
    const_rate = get_static_value(rate)
    if const_rate is not None:
        if np.any(const_rate < 1):
            raise ValueError(f"dilation_rate must be positive, got {const_rate.tolist()}")
        if np.all(const_rate == 1):
            return op(input, num_spatial_dims, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("`filter_shape` must be specified for `padding='SAME'`")
        filter_shape = _ops.convert_to_tensor(filter_shape, dtype=_dtypes.int32,
                                              name="filter_shape")
        extra = math_ops.multiply(math_ops.subtract(filter_shape[:num_spatial_dims], 1), rate)
        before = math_ops.floordiv(extra, 2)
        base_paddings = array_ops.stack([before, math_ops.subtract(extra, before)], axis=1)
    elif padding == "VALID":
        base_paddings = np.zeros([num_spatial_dims, 2], np.int32)
    else:
        raise ValueError(f"Invalid padding method {padding!r}")
    static = input.shape.as_list() if input.shape.rank is not None else None
    if static is not None and all(static[d] is not None for d in spatial_dims):
        input_spatial_shape = [static[d] for d in spatial_dims]
    else:
        dynamic = array_ops.shape(input)
        input_spatial_shape = array_ops.stack([dynamic[d] for d in spatial_dims])
    paddings, crops = batch_scatter_ops.required_space_to_batch_paddings(
        input_spatial_shape, rate, base_paddings=base_paddings)
    zero_row = array_ops.zeros([2], _dtypes.int32)
    block = _spread(rate, _ops.convert_to_tensor(1, dtype=_dtypes.int32), spatial_dims)
    converted = manip_ops.space_to_batch_nd(input, block,
                                            _spread(paddings, zero_row, spatial_dims))
    result = op(converted, num_spatial_dims, "VALID")
    return manip_ops.batch_to_space_nd(result, block, _spread(crops, zero_row, spatial_dims))
