"""Reshaping helpers TF1 programs use often: tf.roll, tf.broadcast_to, tf.space_to_depth,
tf.depth_to_space, tf.space_to_batch_nd, tf.batch_to_space_nd and tf.image.extract_patches (C++
ops in src/ops/array/roll_ops.cc, broadcast_ops.cc, space_depth_ops.cc, space_batch_ops.cc and
extract_patches_ops.cc), and tf.meshgrid and tf.sequence_mask, composed from other ops as in
TensorFlow."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.util.tf_export import tf_export


def _index(value, name):
    return _ops.convert_to_tensor(value, preferred_dtype=_dtypes.int32, name=name)


@tf_export("roll", "manip.roll")
def roll(input, shift, axis, name=None):  # noqa: A002 - TensorFlow's name
    """`input` with its elements shifted cyclically by shift[i] along axis[i]."""
    with _ops.name_scope(name, "Roll", [input, shift, axis]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        return _ops.apply_op("Roll", [input, _index(shift, "shift"), _index(axis, "axis")],
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


@tf_export("broadcast_to")
def broadcast_to(input, shape, name=None):  # noqa: A002
    """`input` broadcast numpy-style to `shape`."""
    with _ops.name_scope(name, "BroadcastTo", [input, shape]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        return _ops.apply_op("BroadcastTo", [input, _array_ops._index_tensor(shape)],
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


@tf_export("meshgrid")
def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D coordinate vectors: with indexing='xy' (the default) the first
    two output dims are swapped, as in numpy.meshgrid."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = list(kwargs)[0]
        raise TypeError(f"'{key}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got "
                         f"'{indexing}'")
    with _ops.name_scope(name, "meshgrid", args):
        ndim = len(args)
        if not ndim:
            return []
        ones_shape = (1,) * ndim
        outputs = [_array_ops.reshape(_array_ops.stack(x), ones_shape[:i] + (-1,)
                                      + ones_shape[i + 1:]) for i, x in enumerate(args)]
        sizes = [_array_ops.size(x) for x in args]
        dtype = _ops.convert_to_tensor(args[0]).dtype
        if indexing == "xy" and ndim > 1:
            outputs[0] = _array_ops.reshape(outputs[0], (1, -1) + (1,) * (ndim - 2))
            outputs[1] = _array_ops.reshape(outputs[1], (-1, 1) + (1,) * (ndim - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        ones = _array_ops.ones(_array_ops.stack(sizes), dtype)
        return [x * ones for x in outputs]


@tf_export("sequence_mask")
def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """mask[i..., j] = j < lengths[i...], for j in [0, maxlen) (maxlen defaults to the largest
    length)."""
    with _ops.name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = _ops.convert_to_tensor(lengths, name="lengths")
        if maxlen is None:
            maxlen = _math_ops.maximum(_reduction_ops.reduce_max(lengths), 0)
        else:
            maxlen = _ops.convert_to_tensor(maxlen, name="maxlen")
        if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
            raise ValueError(f"Argument `maxlen` must be scalar for sequence_mask, received "
                             f"`maxlen` = {maxlen}.")
        row = _array_ops.range(0, maxlen, 1, dtype=maxlen.dtype)
        result = row < _math_ops.cast(_array_ops.expand_dims(lengths, -1), maxlen.dtype)
        dtype = _dtypes.as_dtype(dtype)
        return result if dtype == _dtypes.bool else _math_ops.cast(result, dtype)


def _space_depth(op_type, input, block_size, name, data_format):  # noqa: A002
    with _ops.name_scope(name, op_type, [input]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        return _ops.apply_op(op_type, [input], {"block_size": int(block_size),
                                                "data_format": data_format},
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


@tf_export("space_to_depth", "nn.space_to_depth")
def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves block_size x block_size blocks of pixels into channels:
    [b, h, w, c] -> [b, h / block_size, w / block_size, c * block_size**2] (NHWC only)."""
    return _space_depth("SpaceToDepth", input, block_size, name, data_format)


@tf_export("depth_to_space", "nn.depth_to_space")
def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves channels into block_size x block_size blocks of pixels:
    [b, h, w, c] -> [b, h * block_size, w * block_size, c / block_size**2] (NHWC only)."""
    return _space_depth("DepthToSpace", input, block_size, name, data_format)


def _space_batch(op_type, input, block_shape, amounts, name):  # noqa: A002
    with _ops.name_scope(name, op_type, [input, block_shape, amounts]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        block_shape = _index(block_shape, "block_shape")
        amounts = _index(amounts, "paddings" if op_type == "SpaceToBatchND" else "crops")
        return _ops.apply_op(op_type, [input, block_shape, amounts], name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("space_to_batch_nd", "manip.space_to_batch_nd")
def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Pads spatial dims 1..M by `paddings` ([M, 2]) and moves blocks of block_shape into the
    batch dimension: [b, h, w, c] -> [b * bh * bw, (h + pads) / bh, (w + pads) / bw, c]."""
    return _space_batch("SpaceToBatchND", input, block_shape, paddings, name)


@tf_export("batch_to_space_nd", "manip.batch_to_space_nd")
def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd: batch entries back into blocks of the spatial dims,
    which are then cropped by `crops` ([M, 2])."""
    return _space_batch("BatchToSpaceND", input, block_shape, crops, name)


def _block_shape(block_size, block_shape):
    if block_size is not None and block_shape is not None:
        raise ValueError("Cannot specify both 'block_size' and 'block_shape'")
    size = block_size if block_size is not None else block_shape
    if size is None:
        raise TypeError("missing required argument: 'block_size'")
    return [int(size), int(size)]


@tf_export("space_to_batch", "nn.space_to_batch")
def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """space_to_batch_nd over the two spatial dims of an NHWC tensor, with square blocks."""
    return space_to_batch_nd(input, _block_shape(block_size, block_shape), paddings, name)


@tf_export("batch_to_space")
def batch_to_space(input, crops, block_size=None, name=None, block_shape=None):  # noqa: A002
    """batch_to_space_nd over the two spatial dims of an NHWC tensor, with square blocks."""
    return batch_to_space_nd(input, _block_shape(block_size, block_shape), crops, name)


@tf_export("image.extract_patches")
def extract_patches(images, sizes, strides, rates, padding, name=None):
    """The sizes[1] x sizes[2] patches of an NHWC image (sampled every rates[i] pixels, one
    every strides[i] pixels), each flattened into the depth of one output pixel."""
    with _ops.name_scope(name, "ExtractImagePatches", [images]) as scope:
        images = _ops.convert_to_tensor(images, name="images")
        attrs = {"ksizes": [int(s) for s in sizes], "strides": [int(s) for s in strides],
                 "rates": [int(r) for r in rates], "padding": padding}
        return _ops.apply_op("ExtractImagePatches", [images], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("extract_image_patches", "image.extract_image_patches")
def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """TF1's name for tf.image.extract_patches (`ksizes` is the deprecated name of `sizes`)."""
    if ksizes is not None and sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and 'sizes'")
    return extract_patches(images, sizes if sizes is not None else ksizes, strides, rates,
                           padding, name)
