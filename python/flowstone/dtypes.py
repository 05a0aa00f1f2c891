"""Element types, named as TensorFlow names them (tf.float32, tf.int64, ...)."""

import builtins

import numpy as np

from flowstone import _C

__all__ = [
    "DType", "as_dtype", "float16", "half", "bfloat16", "float32", "float64", "double",
    "int32", "int64", "uint8", "bool", "resource", "variant",
]


class DType:
    """An element type. Compare with ==; the C++ enum value is `_enum`."""

    __slots__ = ("_name", "_enum", "_size", "_short_name", "_tf_enum", "_np")

    def __init__(self, name, enum, size, short_name, tf_enum, np_dtype):
        self._name = name
        self._enum = enum
        self._size = size
        self._short_name = short_name
        self._tf_enum = tf_enum
        self._np = np_dtype

    name = property(lambda self: self._name)
    size = property(lambda self: self._size)
    as_datatype_enum = property(lambda self: self._tf_enum)
    as_numpy_dtype = property(lambda self: self._np.type if self._np is not None else None)
    base_dtype = property(lambda self: self)
    real_dtype = property(lambda self: self)
    is_floating = property(lambda self: self._name in ("float16", "bfloat16", "float32", "float64"))
    is_integer = property(lambda self: self._name in ("int32", "int64", "uint8"))
    is_bool = property(lambda self: self._name == "bool")
    is_complex = property(lambda self: False)
    is_unsigned = property(lambda self: self._name in ("uint8", "bool"))
    is_numpy_compatible = property(lambda self: self._np is not None)

    @property
    def min(self):
        if self.is_floating:
            return float(np.finfo(self._np).min) if self._np is not None else float("-inf")
        return int(np.iinfo(self._np).min)

    @property
    def max(self):
        if self.is_floating:
            return float(np.finfo(self._np).max) if self._np is not None else float("inf")
        return int(np.iinfo(self._np).max)

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._enum == other._enum
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return f"tf.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return as_dtype, (self._name,)


_NUMPY = {
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_), "float16": np.dtype(np.float16),
    # numpy has no bfloat16: values cross as float32.
    "bfloat16": np.dtype(np.float32), "resource": None, "variant": None,
}

_BY_NAME = {}
_BY_ENUM = {}
for _name, (_enum, _size, _short, _tf_enum) in _C.DTYPES.items():
    _dtype = DType(_name, _enum, _size, _short, _tf_enum, _NUMPY.get(_name))
    _BY_NAME[_name] = _dtype
    _BY_NAME[_short] = _dtype
    _BY_ENUM[_enum] = _dtype

float16 = half = _BY_NAME["float16"]
bfloat16 = _BY_NAME["bfloat16"]
float32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
bool = _BY_NAME["bool"]  # noqa: A001 - TensorFlow's name
resource = _BY_NAME["resource"]
variant = _BY_NAME["variant"]

_FROM_NUMPY = {
    np.dtype(np.float32): float32, np.dtype(np.float64): float64, np.dtype(np.int32): int32,
    np.dtype(np.int64): int64, np.dtype(np.uint8): uint8, np.dtype(np.bool_): bool,
    np.dtype(np.float16): float16,
}
_FROM_PYTHON = {float: float32, int: int32, builtins.bool: bool}


def from_enum(enum):
    return _BY_ENUM[enum]


def as_dtype(type_value):
    """Converts a DType, a name ("float32"), a numpy dtype or a Python type to a DType."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        dtype = _BY_NAME.get(type_value)
        if dtype is not None:
            return dtype
    elif isinstance(type_value, type) and type_value in _FROM_PYTHON:
        return _FROM_PYTHON[type_value]
    else:
        try:
            dtype = _FROM_NUMPY.get(np.dtype(type_value))
        except TypeError:
            dtype = None
        if dtype is not None:
            return dtype
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")
