"""Selecting, splitting and merging rows: tf.boolean_mask (composed from Where and GatherV2, as
in TensorFlow), tf.dynamic_partition, tf.dynamic_stitch, tf.reverse and tf.reverse_sequence
(kernels in src/ops/array/partition_ops.cc and reverse_ops.cc)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.util.tf_export import tf_export


def _outputs(op_type, inputs, scope, attrs=None):
    """The outputs of an op named exactly after the enclosing name scope."""
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/") or op_type,
                         exact_name=bool(scope)).outputs


@tf_export("boolean_mask")
def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The entries of `tensor` where the bool `mask` is true: mask's dims (from `axis`) are
    flattened into one, of the number of true entries."""
    with _ops.name_scope(name, "boolean_mask", [tensor, mask]):
        tensor = _ops.convert_to_tensor(tensor, name="tensor")
        mask = _ops.convert_to_tensor(mask, name="mask")
        ndims_mask = mask.shape.ndims
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else int(axis)
        tensor_shape = tensor.shape
        if tensor_shape.ndims is not None:
            if axis < 0:
                axis += tensor_shape.ndims
            masked = tensor_shape[axis:axis + ndims_mask]
            if not masked.is_compatible_with(mask.shape):
                raise ValueError(f"Shapes {masked} and {mask.shape} are incompatible")
        shape = _array_ops.shape(tensor)
        leading_size = _reduction_ops.reduce_prod(shape[axis:axis + ndims_mask], [0],
                                                  keepdims=True)
        tensor = _array_ops.reshape(
            tensor, _array_ops.concat([shape[:axis], leading_size, shape[axis + ndims_mask:]], 0))
        indices = _array_ops.squeeze(_math_ops.where(_array_ops.reshape(mask, [-1])), axis=[1])
        return _array_ops.gather(tensor, indices, axis=axis)


@tf_export("dynamic_partition")
def dynamic_partition(data, partitions, num_partitions, name=None):
    """Splits the rows of `data` (its dims after partitions' dims) into num_partitions tensors
    by the int32 partition id of each row, keeping their order."""
    with _ops.name_scope(name, "DynamicPartition", [data, partitions]) as scope:
        data = _ops.convert_to_tensor(data, name="data")
        partitions = _ops.convert_to_tensor(partitions, dtype=_dtypes.int32, name="partitions")
        return list(_outputs("DynamicPartition", [data, partitions], scope,
                             {"num_partitions": int(num_partitions)}))


def _stitch(op_type, indices, data, name):
    with _ops.name_scope(name, op_type, [indices, data]) as scope:
        indices = [_ops.convert_to_tensor(i, dtype=_dtypes.int32, name="indices")
                   for i in indices]
        data = _array_ops._convert_list(list(data), "data")
        return _outputs(op_type, [indices, data], scope, {"N": len(indices)})[0]


@tf_export("dynamic_stitch")
def dynamic_stitch(indices, data, name=None):
    """Merges rows: merged[indices[m][i...], ...] = data[m][i..., ...]; later entries win."""
    return _stitch("DynamicStitch", indices, data, name)


@tf_export("reverse", "reverse_v2", "manip.reverse")
def reverse(tensor, axis, name=None):
    """`tensor` with the dimensions listed in `axis` reversed."""
    with _ops.name_scope(name, "ReverseV2", [tensor, axis]) as scope:
        tensor = _ops.convert_to_tensor(tensor, name="tensor")
        axis = _ops.convert_to_tensor(axis, preferred_dtype=_dtypes.int32, name="axis")
        return _outputs("ReverseV2", [tensor, axis], scope)[0]


@tf_export("reverse_sequence")
def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """Reverses the first seq_lengths[b] entries along seq_axis of each slice b along
    batch_axis (seq_dim and batch_dim are TensorFlow's deprecated names for them)."""
    if seq_axis is not None and seq_dim is not None:
        raise ValueError("Cannot specify both 'seq_axis' and 'seq_dim'")
    if batch_axis is not None and batch_dim is not None:
        raise ValueError("Cannot specify both 'batch_axis' and 'batch_dim'")
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else batch_dim
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument: 'seq_axis'")
    with _ops.name_scope(name, "ReverseSequence", [input, seq_lengths]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        seq_lengths = _ops.convert_to_tensor(seq_lengths, preferred_dtype=_dtypes.int64,
                                             name="seq_lengths")
        return _outputs("ReverseSequence", [input, seq_lengths], scope,
                        {"seq_dim": int(seq_axis),
                         "batch_dim": 0 if batch_axis is None else int(batch_axis)})[0]
