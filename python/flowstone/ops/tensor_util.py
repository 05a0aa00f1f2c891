"""tf.make_tensor_proto and tf.make_ndarray: numpy values to TensorFlow's TensorProto message and
back, with TensorFlow's encoding rules (raw `tensor_content` for real numeric tensors of more than
one element, the typed repeated fields otherwise, whose last value repeats to fill the shape)."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.util.tf_export import tf_export

# The repeated field that holds each dtype's values when tensor_content is not used.
_VALUE_FIELDS = {
    _dtypes.float32: "float_val", _dtypes.float64: "double_val", _dtypes.int32: "int_val",
    _dtypes.int16: "int_val", _dtypes.int8: "int_val", _dtypes.uint8: "int_val",
    _dtypes.uint16: "int_val", _dtypes.int64: "int64_val", _dtypes.uint32: "uint32_val",
    _dtypes.uint64: "uint64_val", _dtypes.bool: "bool_val", _dtypes.string: "string_val",
    _dtypes.float16: "half_val", _dtypes.bfloat16: "half_val",
    _dtypes.complex64: "scomplex_val", _dtypes.complex128: "dcomplex_val",
}
_HALF_BITS = (_dtypes.float16, _dtypes.bfloat16)
# Complex values are stored as (real, imaginary) pairs.
_COMPLEX = (_dtypes.complex64, _dtypes.complex128)


def _tensor_proto_class():
    from flowstone.framework import tf_protos
    return tf_protos.TensorProto


def _numpy_values(values, dtype):
    if dtype == _dtypes.string:
        flat = np.asarray(values, dtype=object).ravel()
        return np.array([v.encode() if isinstance(v, str) else bytes(v) for v in flat],
                        dtype=object).reshape(np.shape(values))
    return np.asarray(values, dtype=dtype.as_numpy_dtype)


def _inferred_dtype(values):
    """numpy values keep their dtype; Python numbers become int32 (int64 when they do not fit)
    and float32, as TensorFlow infers them."""
    probe = np.asarray(values)
    if probe.dtype.kind in "SUO":
        return _dtypes.string
    if isinstance(values, (np.ndarray, np.generic)):
        return _dtypes.as_dtype(probe.dtype)
    if probe.dtype.kind == "f":
        return _dtypes.float32
    if probe.dtype.kind in "iu":
        fits = probe.size == 0 or (probe.min() >= -2**31 and probe.max() < 2**31)
        return _dtypes.int32 if fits else _dtypes.int64
    return _dtypes.as_dtype(probe.dtype)


@tf_export("make_tensor_proto")
def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False):
    """A TensorProto holding `values` (anything numpy converts), as `dtype` and `shape` when
    given. One value fills any `shape`; otherwise the counts must agree."""
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    else:
        dtype = _inferred_dtype(values)
    if dtype not in _VALUE_FIELDS:
        raise TypeError(f"make_tensor_proto does not support dtype {dtype.name}")
    array = _numpy_values(values, dtype)
    if shape is None:
        shape = list(array.shape)
    else:
        shape = [int(d) for d in shape]
        count = int(np.prod(shape, dtype=np.int64))
        if verify_shape and list(array.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got "
                            f"{array.shape}.")
        if array.size > count:
            raise ValueError(f"Too many elements provided. Takes at most {count:d}, but got "
                             f"{array.size:d}.")
        if array.size not in (1, count) and not (allow_broadcast and array.size == 0):
            raise ValueError(f"Expected {count} elements for shape {shape}, but got "
                             f"{array.size}.")
    proto = _tensor_proto_class()(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.SetInParent()
    for d in shape:
        proto.tensor_shape.dim.add().size = d
    count = int(np.prod(shape, dtype=np.int64))
    # TensorFlow keeps complex values in scomplex_val/dcomplex_val, never tensor_content.
    if dtype != _dtypes.string and dtype not in _COMPLEX and array.size == count and count > 1:
        proto.tensor_content = np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<"), copy=False).tobytes()
        return proto
    flat = array.ravel()
    if dtype in _HALF_BITS:
        flat = flat.view(np.uint16)
    elif dtype in _COMPLEX:
        flat = np.stack([flat.real, flat.imag], axis=-1).ravel()
    getattr(proto, _VALUE_FIELDS[dtype]).extend(flat.tolist())
    return proto


@tf_export("make_ndarray")
def make_ndarray(tensor):
    """The numpy array a TensorProto holds (strings as an object array of bytes)."""
    dtype = _dtypes.as_dtype(tensor.dtype)
    if dtype not in _VALUE_FIELDS:
        raise TypeError(f"Unsupported tensor type: {tensor.dtype}")
    shape = [d.size for d in tensor.tensor_shape.dim]
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == _dtypes.string:
        values = list(tensor.string_val)
        out = np.empty(count, dtype=object)
        out[:len(values)] = values
        if values and len(values) < count:
            out[len(values):] = values[-1]
        elif not values:
            out[:] = b""
        return out.reshape(shape)
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if tensor.tensor_content:
        return np.frombuffer(tensor.tensor_content,
                             dtype=np_dtype.newbyteorder("<")).astype(np_dtype).reshape(shape)
    values = list(getattr(tensor, _VALUE_FIELDS[dtype]))
    if dtype in _HALF_BITS:
        values = np.array(values, dtype=np.uint16).view(np_dtype)
    elif dtype in _COMPLEX:
        pairs = np.array(values, dtype=np_dtype.type(0).real.dtype).reshape(-1, 2)
        values = pairs[:, 0] + 1j * pairs[:, 1]
    values = np.array(values, dtype=np_dtype)
    if values.size == count:
        return values.reshape(shape)
    if values.size == 0:
        return np.zeros(shape, dtype=np_dtype)
    return np.pad(values, (0, count - values.size), "edge").reshape(shape)
