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
_SP_INDICES = np.array([[0, 1], [2, 0], [2, 3]], np.int64)
_SP_VALUES = np.array([1.5, -2.0, 0.25], np.float32)
_SP_SHAPE = np.array([3, 4], np.int64)


def _sparse_row(indices, values, shape):
    """The 3 serialized TensorProtos of one SparseTensor."""
    indices = np.array(indices, np.int64).reshape(len(values), len(shape))
    return [_tensor_proto_bytes(indices, 9), _tensor_proto_bytes(np.array(values, np.float32), 1),
            _tensor_proto_bytes(np.array(shape, np.int64), 9)]

CASES = [
    Case("IdentityN", [rand(2, 3), rand(4), np.array([1, -2], np.int32)],
         lambda a, b, c: (a, b, c), outputs=3, grad=[0]),
    # Tensors as serialized TensorProtos (DT_DOUBLE = 2, DT_INT32 = 3).
    Case("SerializeTensor", [_MATRIX],
         lambda x: np.array(_tensor_proto_bytes(x, 2), dtype=object)),
    Case("ParseTensor", [np.array(_tensor_proto_bytes(np.array([4, -5], np.int32), 3),
                                  dtype=object)],
         lambda s: np.array([4, -5], np.int32), attrs={"out_type": dtypes.int32}),
    # SparseTensors as rows of serialized TensorProtos (DT_INT64 = 9, DT_FLOAT = 1).
    Case("SerializeSparse", [_SP_INDICES, _SP_VALUES, _SP_SHAPE],
         lambda i, v, s: np.array([_tensor_proto_bytes(i, 9), _tensor_proto_bytes(v, 1),
                                   _tensor_proto_bytes(s, 9)], dtype=object)),
    Case("SerializeManySparse", [_SP_INDICES, _SP_VALUES, _SP_SHAPE],
         lambda i, v, s: np.array([_sparse_row([[1]], [1.5], [4]), _sparse_row([], [], [4]),
                                   _sparse_row([[0], [3]], [-2.0, 0.25], [4])], dtype=object)),
    Case("DeserializeManySparse",
         [np.array([_sparse_row([[1]], [1.5], [2]), _sparse_row([[3], [0]], [-2.0, 4.0], [5])],
                   dtype=object)],
         lambda rows: (np.array([[0, 1], [1, 3], [1, 0]], np.int64),
                       np.array([1.5, -2.0, 4.0], np.float32), np.array([2, 5], np.int64)),
         attrs={"dtype": dtypes.float32}, outputs=3),
    Case("DeserializeSparse", [np.array(_sparse_row([[1, 2]], [7.0], [3, 4]), dtype=object)],
         lambda row: (np.array([[1, 2]], np.int64), np.array([7.0], np.float32),
                      np.array([3, 4], np.int64)), attrs={"dtype": dtypes.float32}, outputs=3),
    Case("ShardedFilename", [np.array(b"/ckpt/part", dtype=object), np.array(3, np.int32),
                             np.array(12, np.int32)],
         lambda b, s, n: np.array(b"/ckpt/part-00003-of-00012", dtype=object)),
]

EXEMPT = {
    op: "tests/python/interop/test_checkpoint_ops.py (round trips, merges, errors)"
    for op in ["SaveV2", "RestoreV2", "MergeV2Checkpoints", "DisableCopyOnRead"]
}
