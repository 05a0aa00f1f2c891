"""tf.io.serialize_tensor / parse_tensor: a tensor to and from the bytes of a TensorProto (the
C++ SerializeTensor and ParseTensor ops), readable by TensorFlow and from it."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


@tf_export("io.serialize_tensor", "serialize_tensor")
def serialize_tensor(tensor, name=None):
    """A string scalar holding `tensor` as a serialized TensorProto."""
    return _ops.apply_op("SerializeTensor", [_ops.convert_to_tensor(tensor, name="tensor")],
                         name=name or "SerializeTensor").outputs[0]


@tf_export("io.parse_tensor", "parse_tensor")
def parse_tensor(serialized, out_type, name=None):
    """The tensor a serialized TensorProto holds; it must be of dtype `out_type`."""
    serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
    return _ops.apply_op("ParseTensor", [serialized], {"out_type": _dtypes.as_dtype(out_type)},
                         name=name or "ParseTensor").outputs[0]
