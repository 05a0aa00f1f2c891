"""Element types, named as TensorFlow names them (tf.float32, tf.int64, ...).

Every dtype TensorFlow 1 exports exists here with TensorFlow's enum value and properties. The C++
core holds only some of them (`_C.DTYPES`); a DType the core lacks has `_enum = None`, and using
it for a tensor raises a TypeError that says so (see `core_enum`).
"""

import builtins

import numpy as np

from flowstone import _C

__all__ = [
    "DType", "as_dtype", "float16", "half", "bfloat16", "float32", "float64", "double",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128", "string", "qint8", "quint8", "qint16", "quint16", "qint32",
    "resource", "variant", "QUANTIZED_DTYPES",
]


class DType:
    """An element type. Compare with ==; `as_datatype_enum` is TensorFlow's DataType number and
    `_enum` the C++ core's (None where the core has no such type)."""

    __slots__ = ("_name", "_enum", "_size", "_short_name", "_tf_enum", "_np", "_kind")

    def __init__(self, name, enum, size, short_name, tf_enum, np_dtype, kind):
        self._name = name
        self._enum = enum
        self._size = size
        self._short_name = short_name
        self._tf_enum = tf_enum
        self._np = np_dtype
        self._kind = kind  # float, int, uint, complex, bool, quantized or other

    name = property(lambda self: self._name)
    size = property(lambda self: self._size)
    as_datatype_enum = property(lambda self: self._tf_enum)
    base_dtype = property(lambda self: self)
    is_floating = property(lambda self: self._kind == "float")
    is_integer = property(lambda self: self._kind in ("int", "uint"))
    is_unsigned = property(lambda self: self._kind == "uint")
    is_complex = property(lambda self: self._kind == "complex")
    is_quantized = property(lambda self: self._kind == "quantized")
    is_bool = property(lambda self: self._kind == "bool")
    is_numpy_compatible = property(lambda self: self._np is not None)

    @property
    def as_numpy_dtype(self):
        """The numpy type (a structured dtype for the quantized types, as in TensorFlow)."""
        if self._np is None:
            raise TypeError(f"{self!r} has no numpy equivalent.")
        return self._np if self._kind == "quantized" else self._np.type

    @property
    def real_dtype(self):
        """float32 for complex64, float64 for complex128, else the dtype itself."""
        if self._name == "complex64":
            return float32
        if self._name == "complex128":
            return float64
        return self

    def _limits_info(self, which):
        if self._kind == "float" and self._np is not None:
            return float(getattr(np.finfo(self._np), which))
        if self._kind in ("int", "uint"):
            return int(getattr(np.iinfo(self._np), which))
        raise TypeError(f"Cannot find {'minimum' if which == 'min' else 'maximum'} value of "
                        f"{self}.")

    @property
    def min(self):
        return self._limits_info("min")

    @property
    def max(self):
        return self._limits_info("max")

    def limits(self, clip_negative=True):
        """(min, max) of the dtype; min is 0 when clip_negative."""
        low, high = self.min, self.max
        if clip_negative:
            low = 0
        return low, high

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._tf_enum == other._tf_enum
        try:
            return self._tf_enum == as_dtype(other)._tf_enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._tf_enum

    def __repr__(self):
        return f"tf.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return as_dtype, (self._name,)


def _quantized(name, base):
    return np.dtype([(name, base)])


# name: (TensorFlow's DataType number, bytes per element, TensorFlow's short name in messages,
# numpy dtype or None, kind). Facts from TensorFlow's types.proto and dtypes.py.
_TENSORFLOW_DTYPES = {
    "float32": (1, 4, "float", np.dtype(np.float32), "float"),
    "float64": (2, 8, "double", np.dtype(np.float64), "float"),
    "int32": (3, 4, "int32", np.dtype(np.int32), "int"),
    "uint8": (4, 1, "uint8", np.dtype(np.uint8), "uint"),
    "int16": (5, 2, "int16", np.dtype(np.int16), "int"),
    "int8": (6, 1, "int8", np.dtype(np.int8), "int"),
    "string": (7, 0, "string", np.dtype(object), "other"),
    "complex64": (8, 8, "complex64", np.dtype(np.complex64), "complex"),
    "int64": (9, 8, "int64", np.dtype(np.int64), "int"),
    "bool": (10, 1, "bool", np.dtype(np.bool_), "bool"),
    "qint8": (11, 1, "qint8", _quantized("qint8", np.int8), "quantized"),
    "quint8": (12, 1, "quint8", _quantized("quint8", np.uint8), "quantized"),
    "qint32": (13, 4, "qint32", _quantized("qint32", np.int32), "quantized"),
    # numpy has no bfloat16: values cross as float32.
    "bfloat16": (14, 2, "bfloat16", np.dtype(np.float32), "float"),
    "qint16": (15, 2, "qint16", _quantized("qint16", np.int16), "quantized"),
    "quint16": (16, 2, "quint16", _quantized("quint16", np.uint16), "quantized"),
    "uint16": (17, 2, "uint16", np.dtype(np.uint16), "uint"),
    "complex128": (18, 16, "complex128", np.dtype(np.complex128), "complex"),
    "float16": (19, 2, "half", np.dtype(np.float16), "float"),
    "resource": (20, 0, "resource", None, "other"),
    "variant": (21, 0, "variant", None, "other"),
    "uint32": (22, 4, "uint32", np.dtype(np.uint32), "uint"),
    "uint64": (23, 8, "uint64", np.dtype(np.uint64), "uint"),
}

_BY_NAME = {}
_BY_ENUM = {}  # C++ enum -> DType
_BY_TF_ENUM = {}
for _name, (_tf_enum, _size, _short, _np_dtype, _kind) in _TENSORFLOW_DTYPES.items():
    # The core gives its enum and message name; size and enum number stay TensorFlow's (a
    # resource handle has size 0 in TensorFlow, whatever the core stores).
    _core = _C.DTYPES.get(_name)
    if _core is not None:
        _enum, _, _short, _ = _core
    _dtype = DType(_name, None if _core is None else _enum, _size, _short, _tf_enum, _np_dtype,
                   _kind)
    _BY_NAME[_name] = _BY_NAME[_short] = _BY_TF_ENUM[_tf_enum] = _dtype
    if _core is not None:
        _BY_ENUM[_enum] = _dtype

# A core dtype TensorFlow does not have (none today) still gets a DType, so that nodes of it
# can be wrapped.
for _name, (_enum, _size, _short, _tf_enum) in _C.DTYPES.items():
    if _name not in _BY_NAME:
        _BY_NAME[_name] = _BY_ENUM[_enum] = DType(_name, _enum, _size, _short, _tf_enum, None,
                                                  "other")

float16 = half = _BY_NAME["float16"]
bfloat16 = _BY_NAME["bfloat16"]
float32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
int8 = _BY_NAME["int8"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
uint16 = _BY_NAME["uint16"]
uint32 = _BY_NAME["uint32"]
uint64 = _BY_NAME["uint64"]
bool = _BY_NAME["bool"]  # noqa: A001 - TensorFlow's name
complex64 = _BY_NAME["complex64"]
complex128 = _BY_NAME["complex128"]
string = _BY_NAME["string"]
qint8 = _BY_NAME["qint8"]
quint8 = _BY_NAME["quint8"]
qint16 = _BY_NAME["qint16"]
quint16 = _BY_NAME["quint16"]
qint32 = _BY_NAME["qint32"]
resource = _BY_NAME["resource"]
variant = _BY_NAME["variant"]

QUANTIZED_DTYPES = frozenset([qint8, quint8, qint16, quint16, qint32])

# numpy dtype -> DType, for the plain numeric types (bfloat16 and the quantized types have no
# numpy type of their own).
_FROM_NUMPY = {d._np: d for d in _BY_NAME.values()
               if d._np is not None and d._kind not in ("quantized", "other")
               and d is not bfloat16}
_FROM_NUMPY[np.dtype(object)] = string
_FROM_PYTHON = {float: float32, int: int32, builtins.bool: bool, complex: complex128,
                str: string, bytes: string}


def from_enum(enum):
    """The DType of a C++ core enum value."""
    return _BY_ENUM[enum]


def core_enum(dtype):
    """The C++ core's enum value of `dtype`; a TypeError naming the dtype when the core has no
    such type yet."""
    if dtype._enum is None:
        supported = ", ".join(sorted(d.name for d in _BY_ENUM.values() if d is not resource))
        raise TypeError(f"{dtype!r} is not supported by Flowstone yet: no tensor of dtype "
                        f"{dtype.name} can be created. Supported dtypes: {supported}.")
    return dtype._enum


def as_dtype(type_value):
    """Converts a DType, a name ("float32"), TensorFlow's enum number, a numpy dtype or a Python
    type to a DType."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        dtype = _BY_NAME.get(type_value)
        if dtype is not None:
            return dtype
    elif isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        dtype = _BY_TF_ENUM.get(type_value)
        if dtype is not None:
            return dtype
    elif isinstance(type_value, type) and type_value in _FROM_PYTHON:
        return _FROM_PYTHON[type_value]
    elif type_value is not None:  # np.dtype(None) would be float64
        if isinstance(type_value, np.dtype) and type_value.names:
            # The structured numpy dtypes TensorFlow uses for its quantized types.
            dtype = _BY_NAME.get(type_value.names[0])
            if dtype is not None and dtype._kind == "quantized":
                return dtype
        try:
            np_dtype = np.dtype(type_value)
            # Byte and unicode strings of any length are tf.string.
            dtype = string if np_dtype.kind in "SU" else _FROM_NUMPY.get(np_dtype)
        except TypeError:
            dtype = None
        if dtype is not None:
            return dtype
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")
