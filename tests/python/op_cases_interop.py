"""Conformance cases for the ops that TensorFlow's graphs carry and Flowstone's Python rarely
emits (see op_cases.py); tests/python/interop/ imports such graphs from TensorFlow."""

import numpy as np

from flowstone import dtypes
from flowstone.framework import tf_protos
from op_cases import Case, rand


def _tensor_proto_bytes(value, dtype_enum):
    """A numeric array as the bytes of TensorFlow's TensorProto (tensor_content form)."""
    message = tf_protos.TensorProto(dtype=dtype_enum, tensor_content=value.tobytes())
    for size in value.shape:
        message.tensor_shape.dim.add(size=size)
    return message.SerializeToString()


_MATRIX = rand(2, 3)

CASES = [
    Case("IdentityN", [rand(2, 3), rand(4), np.array([1, -2], np.int32)],
         lambda a, b, c: (a, b, c), outputs=3, grad=[0]),
    # Tensors as serialized TensorProtos (DT_DOUBLE = 2, DT_INT32 = 3).
    Case("SerializeTensor", [_MATRIX],
         lambda x: np.array(_tensor_proto_bytes(x, 2), dtype=object)),
    Case("ParseTensor", [np.array(_tensor_proto_bytes(np.array([4, -5], np.int32), 3),
                                  dtype=object)],
         lambda s: np.array([4, -5], np.int32), attrs={"out_type": dtypes.int32}),
    Case("ShardedFilename", [np.array(b"/ckpt/part", dtype=object), np.array(3, np.int32),
                             np.array(12, np.int32)],
         lambda b, s, n: np.array(b"/ckpt/part-00003-of-00012", dtype=object)),
]

EXEMPT = {
    op: "tests/python/interop/test_checkpoint_ops.py (round trips, merges, errors)"
    for op in ["SaveV2", "RestoreV2", "MergeV2Checkpoints", "DisableCopyOnRead"]
}
