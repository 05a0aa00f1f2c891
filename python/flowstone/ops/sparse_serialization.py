"""tf.io.serialize_sparse / serialize_many_sparse / deserialize_many_sparse: SparseTensors as
rows of 3 strings (serialized TensorProtos), as TensorFlow 1 pipelines pass them through queues,
or of 3 variants holding the tensors themselves (out_type=tf.variant, what tf.data uses)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops.value_conversions import convert_to_tensor_or_sparse_tensor
from flowstone.util.tf_export import tf_export


def _sparse(sp_input):
    sp_input = convert_to_tensor_or_sparse_tensor(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}")
    return sp_input


def _serialize(op_type, sp_input, out_type, name):
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in (_dtypes.string, _dtypes.variant):
        raise TypeError(f"out_type must be tf.string or tf.variant, got {out_type.name}")
    sp_input = _sparse(sp_input)
    return _ops.apply_op(op_type, [sp_input.indices, sp_input.values, sp_input.dense_shape],
                         {"out_type": out_type}, name=name or op_type).outputs[0]


@tf_export("io.serialize_sparse", "serialize_sparse")
def serialize_sparse(sp_input, name=None, out_type=_dtypes.string):
    """A [3] string tensor: the SparseTensor's indices, values and shape as TensorProtos."""
    return _serialize("SerializeSparse", sp_input, out_type, name)


@tf_export("io.serialize_many_sparse", "serialize_many_sparse")
def serialize_many_sparse(sp_input, name=None, out_type=_dtypes.string):
    """A [N, 3] string tensor: each entry of the SparseTensor's first dimension serialized."""
    return _serialize("SerializeManySparse", sp_input, out_type, name)


@tf_export("io.deserialize_many_sparse", "deserialize_many_sparse")
def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """The rows of `serialized_sparse` ([N, 3], from serialize_sparse) as one SparseTensor:
    its first dimension is the row, the others the largest of the rows' shapes."""
    serialized = _ops.convert_to_tensor(serialized_sparse, dtype=_dtypes.string,
                                        name="serialized_sparse")
    op = _ops.apply_op("DeserializeManySparse", [serialized],
                       {"dtype": _dtypes.as_dtype(dtype)},
                       name=name or "DeserializeManySparse")
    result = SparseTensor(*op.outputs)
    if rank is not None:
        result.indices.set_shape([None, rank])
        result.dense_shape.set_shape([rank])
    return result
