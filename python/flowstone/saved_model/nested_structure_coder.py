"""TensorFlow's StructuredValue (proto/struct.proto, its nested_structure_coder): the Python
structures a SavedModel records for function signatures (tuples, lists, dicts, named tuples,
TensorSpecs, Python scalars), encoded when saving and decoded when restoring."""

import inspect

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops.dataset_structure import TensorSpec

StructuredValue = tf_protos.message_class("StructuredValue")


def shape_into(proto, shape):
    """Writes a TensorShape into a TensorShapeProto (-1 for unknown dims)."""
    if shape.rank is None:
        proto.unknown_rank = True
        return
    for dim in shape.as_list():
        proto.dim.add().size = -1 if dim is None else dim


def spec_value(name, shape, dtype):
    """A StructuredValue holding a TensorSpecProto."""
    value = StructuredValue()
    spec = value.tensor_spec_value
    spec.name = name or ""
    shape_into(spec.shape, shape)
    spec.dtype = _dtypes.as_dtype(dtype).as_datatype_enum
    return value


def encode(value, name="unknown"):
    """A Python structure of TensorSpecs, tensors and Python values as a StructuredValue."""
    out = StructuredValue()
    if isinstance(value, TensorSpec):
        return spec_value(value.name or name, value.shape, value.dtype)
    if isinstance(value, (_ops.Tensor, np.ndarray)):
        return spec_value(name, TensorShape(list(value.shape)) if
                           isinstance(value, np.ndarray) else value.shape, value.dtype)
    if value is None:
        out.none_value.SetInParent()
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, float):
        out.float64_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, dict):
        out.dict_value.SetInParent()
        for key, item in value.items():
            out.dict_value.fields[str(key)].CopyFrom(encode(item, str(key)))
    elif isinstance(value, tuple):
        out.tuple_value.SetInParent()
        for index, item in enumerate(value):
            out.tuple_value.values.add().CopyFrom(encode(item, f"{name}_{index}"))
    elif isinstance(value, list):
        out.list_value.SetInParent()
        for index, item in enumerate(value):
            out.list_value.values.add().CopyFrom(encode(item, f"{name}_{index}"))
    else:
        raise ValueError(f"Cannot save the value {value!r} of type {type(value).__name__} in a "
                         "function signature: only tensors, TensorSpecs, Python scalars and "
                         "strings, and lists, tuples and dicts of them are supported.")
    return out


def argspec(python_function):
    """(FunctionSpec.fullargspec as a StructuredValue, is_method, argument names after self)."""
    is_method = inspect.ismethod(python_function)
    function = python_function.__func__ if is_method else python_function
    spec = inspect.getfullargspec(function)
    fields = [("args", list(spec.args)), ("varargs", spec.varargs), ("varkw", spec.varkw),
              ("defaults", None if spec.defaults is None else tuple(
                  d if isinstance(d, (bool, int, float, str, type(None))) else None
                  for d in spec.defaults)),
              ("kwonlyargs", list(spec.kwonlyargs)), ("kwonlydefaults", None),
              ("annotations", {})]
    value = StructuredValue()
    value.named_tuple_value.name = "FullArgSpec"
    for key, item in fields:
        pair = value.named_tuple_value.values.add(key=key)
        pair.value.CopyFrom(encode(item))
    names = list(spec.args[1:] if is_method else spec.args)
    return value, is_method, names


def _shape(proto):
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def decode(value):
    """A StructuredValue as the Python structure it encodes (TensorSpecs for tensors)."""
    kind = value.WhichOneof("kind")
    if kind in (None, "none_value"):
        return None
    if kind == "tensor_spec_value":
        spec = value.tensor_spec_value
        return TensorSpec(_shape(spec.shape), _dtypes.as_dtype(spec.dtype), spec.name or None)
    if kind == "list_value":
        return [decode(v) for v in value.list_value.values]
    if kind == "tuple_value":
        return tuple(decode(v) for v in value.tuple_value.values)
    if kind == "dict_value":
        return {key: decode(v) for key, v in value.dict_value.fields.items()}
    if kind == "named_tuple_value":
        return {pair.key: decode(pair.value) for pair in value.named_tuple_value.values}
    if kind == "tensor_shape_value":
        return _shape(value.tensor_shape_value)
    if kind == "tensor_dtype_value":
        return _dtypes.as_dtype(value.tensor_dtype_value)
    if kind in ("float64_value", "int64_value", "string_value", "bool_value"):
        return getattr(value, kind)
    raise ValueError(f"Cannot restore a function signature holding a {kind}.")
