"""Array functions TF1 exports that compose other ops: identity_n, shape_n, parallel_stack,
repeat, linspace, broadcast_static_shape / broadcast_dynamic_shape and get_static_value."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, basic_ops, math_ops, math_reductions, reduction_ops,
                           scan_ops)
from flowstone.ops.check_ops import Assert
from flowstone.util.tf_export import tf_export


@tf_export("identity_n")
def identity_n(input, name=None):  # noqa: A002 - TensorFlow's name
    """An identity of each tensor of the list `input`."""
    with _ops.name_scope(name, "IdentityN"):
        return [basic_ops.identity(t) for t in input]


@tf_export("shape_n")
def shape_n(input, out_type=_dtypes.int32, name=None):  # noqa: A002
    """The shape of each tensor of the list `input`."""
    with _ops.name_scope(name, "ShapeN"):
        return [array_ops.shape(t, out_type=out_type) for t in input]


@tf_export("parallel_stack")
def parallel_stack(values, name="parallel_stack"):
    """tf.stack along a new first axis (TensorFlow's variant copies the inputs as they arrive;
    the result is the same)."""
    return array_ops.stack(values, axis=0, name=name)


@tf_export("linspace", "lin_space")
def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` inclusive (just `start` when num is 1)
    along `axis`; start and stop may be tensors of one shape."""
    with _ops.name_scope(name, "LinSpace"):
        start = _ops.convert_to_tensor(start, name="start")
        stop = _ops.convert_to_tensor(stop, name="stop", dtype=start.dtype)
        num = _ops.convert_to_tensor(num, name="num")
        count = math_ops.cast(num, start.dtype)
        step = math_ops.divide(math_ops.subtract(stop, start),
                               math_ops.maximum(math_ops.subtract(count, 1.0), 1.0))
        steps = math_ops.cast(array_ops.range(num), start.dtype)
        steps = array_ops.reshape(steps, array_ops.concat(
            [[-1], array_ops.ones_like(array_ops.shape(start))], 0))
        values = math_ops.add(array_ops.expand_dims(start, 0),
                              math_ops.multiply(steps, array_ops.expand_dims(step, 0)))
        if axis != 0:
            rank = start.shape.ndims + 1
            axis = axis % rank
            values = array_ops.transpose(values, list(range(1, axis + 1)) + [0] +
                                         list(range(axis + 1, rank)))
        return values


@tf_export("repeat")
def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """numpy.repeat: each element (or slice along `axis`) repeated `repeats` times (a scalar, or
    one count per slice); with no axis the input is flattened first."""
    with _ops.name_scope(name, "Repeat"):
        x = _ops.convert_to_tensor(input, name="input")
        repeats = math_ops.cast(_ops.convert_to_tensor(repeats, name="repeats"), _dtypes.int32)
        if axis is None:
            x = array_ops.reshape(x, [-1])
            axis = 0
        length = array_ops.shape(x)[axis]
        counts = math_ops.add(repeats, array_ops.zeros([length], _dtypes.int32)) \
            if repeats.shape.ndims == 0 else repeats
        # The source slice of output position p is the number of cumulative counts <= p.
        ends = scan_ops.cumsum(counts)
        positions = array_ops.range(ends[-1])
        source = reduction_ops.reduce_sum(math_ops.cast(
            math_ops.greater_equal(array_ops.expand_dims(positions, 1),
                                   array_ops.expand_dims(ends, 0)), _dtypes.int32), axis=1)
        result = array_ops.gather(x, source, axis=axis)
        static_counts = get_static_value(repeats)
        if static_counts is not None and x.shape.ndims is not None:
            shape = x.shape.as_list()
            if static_counts.ndim == 1:
                shape[axis] = int(static_counts.sum())
            elif shape[axis] is not None:
                shape[axis] *= int(static_counts)
            result.set_shape(shape)
        return result


@tf_export("broadcast_static_shape")
def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape two static shapes broadcast to; ValueError when they cannot."""
    shape_x, shape_y = TensorShape(shape_x), TensorShape(shape_y)
    if shape_x.ndims is None or shape_y.ndims is None:
        return TensorShape(None)
    x, y = shape_x.as_list(), shape_y.as_list()
    rank = max(len(x), len(y))
    x, y = [1] * (rank - len(x)) + x, [1] * (rank - len(y)) + y
    out = []
    for a, b in zip(x, y):
        if a == 1 or a == b:
            out.append(b)
        elif b == 1:
            out.append(a)
        elif a is None or b is None:
            out.append(b if a is None else a)  # an unknown dim must match the known one
        else:
            raise ValueError("Incompatible shapes for broadcasting. Two shapes are compatible "
                             "if for each dimension pair they are either equal or one of them "
                             f"is 1. Received: {shape_x} and {shape_y}.")
    return TensorShape(out)


@tf_export("broadcast_dynamic_shape")
def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (a 1-D tensor) two shapes broadcast to; InvalidArgumentError at run time when
    they cannot."""
    with _ops.name_scope(None, "BroadcastArgs"):
        x = _ops.convert_to_tensor(shape_x, name="s0")
        y = _ops.convert_to_tensor(shape_y, name="s1", dtype=x.dtype)
        rank = math_ops.maximum(array_ops.size(x), array_ops.size(y))
        x = array_ops.concat([array_ops.ones([rank - array_ops.size(x)], x.dtype), x], 0)
        y = array_ops.concat([array_ops.ones([rank - array_ops.size(y)], x.dtype), y], 0)
        compatible = math_reductions.reduce_all(math_ops.logical_or(
            math_ops.logical_or(math_ops.equal(x, y), math_ops.equal(x, 1)), math_ops.equal(y, 1)))
        check = Assert(compatible, ["Incompatible shapes:", shape_x, "vs.", shape_y])
        with _ops.control_dependencies([check]):
            return basic_ops.identity(math_ops.where(math_ops.equal(x, 1), y, x))


@tf_export("get_static_value")
def get_static_value(tensor, partial=False):
    """The numpy value of `tensor` if it is known while building (a constant, or the shape,
    size or rank of a tensor whose shape is known, through identities and casts), else None.
    Values of other types pass through as numpy arrays."""
    if not isinstance(tensor, _ops.Tensor):
        return np.asarray(tensor)
    op = tensor.op
    if op.type == "Const":
        return np.asarray(op.get_attr("value"))
    if op.type in ("Shape", "Size", "Rank"):
        shape = op.inputs[0].shape
        dtype = tensor.dtype.as_numpy_dtype
        if op.type == "Rank":
            return None if shape.ndims is None else np.array(shape.ndims, dtype)
        if not shape.is_fully_defined():
            return None
        if op.type == "Size":
            return np.array(shape.num_elements(), dtype)
        return np.array(shape.as_list(), dtype)
    if op.type in ("Identity", "StopGradient"):
        return get_static_value(op.inputs[0], partial)
    if op.type == "Cast":
        value = get_static_value(op.inputs[0], partial)
        return None if value is None else value.astype(tensor.dtype.as_numpy_dtype)
    return None
