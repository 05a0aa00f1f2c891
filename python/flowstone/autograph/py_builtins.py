"""Python builtins that converted code calls with tensors: `print`, `len`, `range`, `int`,
`float`, `abs` behave as TensorFlow's AutoGraph makes them (a graph tensor gets the op that
means the same); any other argument gets the builtin itself. Also `tf.stack` of a list a tensor
loop turned into a TensorArray."""

import builtins

from flowstone import dtypes as _dtypes
from flowstone.autograph.operators import as_tensor, is_graph_tensor
from flowstone.ops import array_ops
from flowstone.ops import math_ops
from flowstone.ops import script_ops
from flowstone.ops import tensor_array_ops


def print_(*objects, **kwargs):
    """print; with a graph tensor among the objects, an op that prints them (as numpy values,
    with Python's print) each time it runs, as TensorFlow's converted print does."""
    unknown = set(kwargs) - {"sep", "end", "file", "flush"}
    if unknown:
        raise ValueError(f"invalid keyword arguments: {tuple(unknown)}")
    if not any(is_graph_tensor(o) for o in objects):
        return builtins.print(*objects, **kwargs)
    positions = [i for i, o in enumerate(objects) if is_graph_tensor(o)]
    tensors = [as_tensor(objects[i]) for i in positions]

    def print_values(*values):
        shown = list(objects)
        for i, v in zip(positions, values):
            shown[i] = v
        builtins.print(*shown, **kwargs)
        return True

    return script_ops.py_func(print_values, tensors, _dtypes.bool, name="print")


def len_(value):
    if isinstance(value, tensor_array_ops.TensorArray):
        return value.size()
    if not is_graph_tensor(value):
        return builtins.len(value)
    value = as_tensor(value)
    shape = value.shape
    if shape.rank == 0:
        raise ValueError(f"len requires a non-scalar tensor, got one of shape {shape}")
    if shape.rank is not None and shape[0] is not None:
        return shape[0]
    return array_ops.shape(value)[0]


def range_(start_or_stop, stop=None, step=None):
    """range; with a graph tensor argument, tf.range (empty, not an error, when the bounds say
    so: Python's meaning)."""
    args = [a for a in (start_or_stop, stop, step) if a is not None]
    if not any(is_graph_tensor(a) for a in args):
        return builtins.range(*args)
    if step is not None:
        return array_ops.range(start_or_stop, stop, step)
    if stop is not None:
        return array_ops.range(start_or_stop, math_ops.maximum(start_or_stop, stop))
    return array_ops.range(math_ops.maximum(start_or_stop, 0))


def _cast(builtin, dtype):
    def convert(value=0, *args):
        if is_graph_tensor(value) and not args:
            return math_ops.cast(as_tensor(value), dtype)
        return builtin(value, *args)
    return convert


def abs_(value):
    if is_graph_tensor(value):
        return math_ops.abs(as_tensor(value))
    return builtins.abs(value)


def stack(values, *args, **kwargs):
    if isinstance(values, tensor_array_ops.TensorArray):
        return values.stack()
    return array_ops.stack(values, *args, **kwargs)


# The callables converted code calls in place of each builtin.
REPLACEMENTS = {
    builtins.print: print_,
    builtins.len: len_,
    builtins.range: range_,
    builtins.int: _cast(builtins.int, _dtypes.int32),
    builtins.float: _cast(builtins.float, _dtypes.float32),
    builtins.abs: abs_,
    array_ops.stack: stack,
}


def replacement(func):
    """What converted code calls for `func`: its tensor-aware form, or None."""
    try:
        return REPLACEMENTS.get(func)
    except TypeError:  # an unhashable callable
        return None

