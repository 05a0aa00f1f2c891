"""Placeholders, identity, no-op and grouping."""

import builtins

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape

__all__ = ["placeholder", "placeholder_with_default", "identity", "no_op", "group", "tuple",
           "constant", "convert_to_tensor"]

constant = _ops.constant
convert_to_tensor = _ops.convert_to_tensor


def placeholder(dtype, shape=None, name=None):
    """A tensor that must be fed: `x = tf.placeholder(tf.float32, [None, 3])`."""
    return _ops.apply_op("Placeholder", [], {
        "dtype": _dtypes.as_dtype(dtype), "shape": TensorShape(shape),
    }, name=name or "Placeholder").outputs[0]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TensorFlow's name
    value = _ops.convert_to_tensor(input)
    return _ops.apply_op("PlaceholderWithDefault", [value], {
        "dtype": value.dtype, "shape": TensorShape(shape),
    }, name=name or "PlaceholderWithDefault").outputs[0]


def identity(input, name=None):  # noqa: A002
    value = _ops.convert_to_tensor(input)
    return _ops.apply_op("Identity", [value], name=name or "Identity").outputs[0]


def no_op(name=None):
    return _ops.apply_op("NoOp", [], name=name or "NoOp")


def _as_ops(inputs):
    ops = []
    for item in inputs:
        if isinstance(item, (list, builtins.tuple)):
            ops.extend(_as_ops(item))
            continue
        if hasattr(item, "_as_graph_element") and not isinstance(item, (_ops.Tensor, _ops.Operation)):
            item = item._as_graph_element()
        if isinstance(item, _ops.Tensor):
            item = item.op
        if not isinstance(item, _ops.Operation):
            raise TypeError(f"Expected a Tensor or Operation in tf.group, got {item!r}")
        ops.append(item)
    return ops


def group(*inputs, **kwargs):
    """An op that runs all `inputs` (Tensors or Operations) and outputs nothing."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unknown keyword arguments: " + ", ".join(kwargs))
    if _ops.executing_eagerly():
        return None  # the inputs have run already, as in TensorFlow's eager mode
    deps = _as_ops(inputs)
    with _ops.control_dependencies(deps):
        return no_op(name=name or "group_deps")


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TensorFlow's name
    """Identities of `tensors` that are available only after all of them are computed."""
    gate = group(*[t for t in tensors if t is not None], *(control_inputs or []))
    with _ops.control_dependencies([gate]):
        return [None if t is None else identity(t) for t in tensors]
