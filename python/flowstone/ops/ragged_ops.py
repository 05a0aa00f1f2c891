"""tf.ragged: building ragged tensors (constant, placeholder, range, boolean_mask, stack),
map_flat_values, and the ragged versions of tf.concat, tf.gather and the reductions, which those
functions dispatch to (flowstone/util/dispatch.py) when an argument is a tf.RaggedTensor."""

import builtins

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, math_ops, math_reductions, partition_ops, reduction_ops,
                           segment_ops)
from flowstone.ops import basic_ops as _basic_ops
from flowstone.ops import ragged_tensor as _rt
from flowstone.ops.ragged_tensor import RaggedTensor, RaggedTensorValue
from flowstone.util import dispatch as _dispatch
from flowstone.util.tf_export import tf_export


@tf_export("ragged.constant")
def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=_dtypes.int64):
    """A RaggedTensor of nested Python lists: [[1, 2], [3]] has rows of lengths 2 and 1."""
    value = constant_value(pylist, dtype, ragged_rank, inner_shape, row_splits_dtype)
    with _ops.name_scope(name, "RaggedConstant"):
        if not isinstance(value, RaggedTensorValue):
            return _ops.convert_to_tensor(value, dtype=dtype)
        flat = _basic_ops.constant(value.flat_values, dtype=dtype, name="flat_values")
        splits = [_basic_ops.constant(s, dtype=row_splits_dtype, name="row_splits")
                  for s in value.nested_row_splits]
        return RaggedTensor.from_nested_row_splits(flat, splits, validate=False)


@tf_export("ragged.constant_value")
def constant_value(pylist, dtype=None, ragged_rank=None, inner_shape=None,
                   row_splits_dtype="int64"):
    """The RaggedTensorValue of nested Python lists (a numpy array for a flat list)."""
    if not isinstance(pylist, (list, tuple)):
        return np.array(pylist, dtype=None if dtype is None else
                        _dtypes.as_dtype(dtype).as_numpy_dtype)
    if ragged_rank == 0 or _rt.list_depth(pylist) <= 1:
        return np.array(pylist, dtype=None if dtype is None else
                        _dtypes.as_dtype(dtype).as_numpy_dtype)
    return _rt.nested_lists_value(pylist, dtype, ragged_rank, inner_shape,
                               _dtypes.as_dtype(row_splits_dtype))


@tf_export("ragged.placeholder")
def placeholder(dtype, ragged_rank, value_shape=None, name=None):
    """A RaggedTensor fed with a RaggedTensorValue (or nested lists): placeholders for the row
    splits of each ragged dimension and for the flat values of shape [None] + value_shape."""
    if ragged_rank < 1:
        raise ValueError(f"ragged_rank must be >= 1, got {ragged_rank}")
    with _ops.name_scope(name, "RaggedPlaceholder"):
        flat = _basic_ops.placeholder(dtype, [None] + list(value_shape or []), name="flat_values")
        splits = [_basic_ops.placeholder(_dtypes.int64, [None], name="row_splits_%d" % i)
                  for i in builtins.range(ragged_rank)]
        return RaggedTensor.from_nested_row_splits(flat, splits, validate=False)


@tf_export("ragged.range")
def range(starts, limits=None, deltas=1, dtype=None, name=None,  # noqa: A001
          row_splits_dtype=_dtypes.int64):
    """Row i is range(starts[i], limits[i], deltas[i]); scalars broadcast (RaggedRange)."""
    if limits is None:
        starts, limits = 0, starts
    with _ops.name_scope(name, "RaggedRange"):
        limits = _ops.convert_to_tensor(limits, dtype=dtype, name="limits")
        dtype = dtype or limits.dtype
        starts = _ops.convert_to_tensor(starts, dtype=dtype, name="starts")
        deltas = _ops.convert_to_tensor(deltas, dtype=dtype, name="deltas")
        op = _ops.apply_op("RaggedRange", [starts, limits, deltas],
                           {"Tsplits": _dtypes.as_dtype(row_splits_dtype)})
        return RaggedTensor.from_row_splits(op.outputs[1], op.outputs[0], validate=False)


@tf_export("ragged.map_flat_values")
def map_flat_values(op, *args, **kwargs):
    """op applied to the flat values of the RaggedTensor arguments (which must share their row
    partitions); the result has the first one's partitions."""
    partitions = []

    def replace(value):
        if isinstance(value, RaggedTensor):
            partitions.append(value)
            return value.flat_values
        if isinstance(value, (list, tuple)):
            return type(value)(replace(v) for v in value)
        if isinstance(value, dict):
            return {k: replace(v) for k, v in value.items()}
        return value
    args = replace(args)
    kwargs = replace(kwargs)
    if not partitions:
        return op(*args, **kwargs)
    with _ops.control_dependencies(_rt.same_partitions(*partitions)):
        return partitions[0].with_flat_values(op(*args, **kwargs))


@tf_export("ragged.row_splits_to_segment_ids")
def row_splits_to_segment_ids(splits, name=None, out_type=None):
    with _ops.name_scope(name, "RaggedSplitsToSegmentIds"):
        splits = _ops.convert_to_tensor(splits, name="splits")
        ids = _rt.splits_to_rowids(splits)
        return ids if out_type is None else math_ops.cast(ids, out_type)


@tf_export("ragged.segment_ids_to_row_splits")
def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    with _ops.name_scope(name, "SegmentIdsToRaggedSplits"):
        ids = _ops.convert_to_tensor(segment_ids, name="segment_ids")
        splits = _rt.rowids_to_splits(ids, num_segments)
        return splits if out_type is None else math_ops.cast(splits, out_type)


@tf_export("ragged.boolean_mask")
def boolean_mask(data, mask, name=None):
    """The elements of `data` where `mask` is true, as a RaggedTensor whose ragged dimensions
    are the mask's inner ones (a Tensor for a vector mask over a Tensor)."""
    with _ops.name_scope(name, "RaggedMask"):
        if isinstance(mask, RaggedTensor):
            if not isinstance(data, RaggedTensor) or mask.ragged_rank != 1 or \
                    data.ragged_rank != 1:
                raise ValueError("Flowstone's ragged.boolean_mask takes a ragged mask only over "
                                 "ragged data, both of ragged_rank 1 (see docs/COMPAT.md)")
            keep = mask.values
            values = partition_ops.boolean_mask(data.values, keep)
            lengths = array_ops.unsorted_segment_sum(
                math_ops.cast(keep, data.row_splits.dtype), data.value_rowids(), data.nrows())
            return RaggedTensor.from_row_lengths(values, lengths, validate=False)
        mask = _ops.convert_to_tensor(mask, dtype=_dtypes.bool, name="mask")
        rank = mask.shape.ndims
        if rank == 1:
            if isinstance(data, RaggedTensor):
                return _rt.gather_rows(data, math_ops.where(mask)[:, 0])
            return partition_ops.boolean_mask(data, mask)
        if rank == 2 and not isinstance(data, RaggedTensor):
            data = _ops.convert_to_tensor(data, name="data")
            lengths = reduction_ops.reduce_sum(math_ops.cast(mask, _dtypes.int64), axis=1)
            return RaggedTensor.from_row_lengths(partition_ops.boolean_mask(data, mask), lengths,
                                                 validate=False)
        raise ValueError(f"Flowstone's ragged.boolean_mask takes a mask of rank 1 or 2 (or a "
                         f"ragged one), got rank {rank} (see docs/COMPAT.md)")


def _as_ragged(value, ragged_rank):
    if isinstance(value, RaggedTensor):
        return value
    return RaggedTensor.from_tensor(value, ragged_rank=ragged_rank)


def _concat_rows(rts):
    """The rows of each ragged tensor (or tensor), one after another."""
    if not isinstance(rts[0], RaggedTensor):
        return array_ops.concat(list(rts), 0)
    splits, offset = [rts[0].row_splits], rts[0].row_splits[-1]
    for rt in rts[1:]:
        splits.append(rt.row_splits[1:] + offset)
        offset = offset + rt.row_splits[-1]
    return RaggedTensor.from_row_splits(_concat_rows([rt.values for rt in rts]),
                                        array_ops.concat(splits, 0), validate=False)


@tf_export("ragged.stack")
def stack(values, axis=0, name=None):
    """The tensors (ragged or not) stacked along a new dimension `axis` (0 or 1)."""
    with _ops.name_scope(name, "RaggedStack"):
        rts = _uniform_operands(values)
        if axis == 0:
            nrows = array_ops.stack([rt.nrows() for rt in rts])
            return RaggedTensor.from_row_lengths(_concat_rows(rts), nrows, validate=False)
        if axis == 1:
            count = len(rts)
            nrows = rts[0].nrows()
            # Output row i is (rts[0][i], rts[1][i], ...): row k * nrows + i of the concatenation.
            order = array_ops.reshape(
                array_ops.expand_dims(array_ops.range(nrows), 1) +
                array_ops.expand_dims(array_ops.range(count, dtype=nrows.dtype) * nrows, 0), [-1])
            return RaggedTensor.from_uniform_row_length(_rt.gather_rows(_concat_rows(rts), order),
                                                        count, nrows, validate=False)
        raise ValueError(f"Flowstone's ragged.stack takes axis 0 or 1, got {axis} (see "
                         "docs/COMPAT.md)")


def _uniform_operands(values):
    values = list(values)
    if not values:
        raise ValueError("ragged.stack and concat need at least one value")
    rank = max((v.ragged_rank for v in values if isinstance(v, RaggedTensor)), default=1)
    rts = [_as_ragged(v, rank) for v in values]
    dtypes = {rt.row_splits.dtype for rt in rts}
    if len(dtypes) > 1:
        rts = [rt.with_row_splits_dtype(_dtypes.int64) for rt in rts]
    if any(rt.ragged_rank != rank for rt in rts):
        raise ValueError("ragged.stack and concat need operands of one ragged_rank")
    return rts


@_dispatch.register("concat", RaggedTensor)
def concat(values, axis, name=None):
    """tf.concat of ragged tensors: along axis 0 (rows after rows) or 1 (row by row)."""
    with _ops.name_scope(name, "RaggedConcat"):
        rts = _uniform_operands(values)
        if axis == 0:
            return _concat_rows(rts)
        if axis == 1:
            return stack(rts, axis=1).merge_dims(1, 2)
        raise ValueError(f"Flowstone concatenates ragged tensors along axis 0 or 1, got {axis} "
                         "(see docs/COMPAT.md)")


@_dispatch.register("gather", RaggedTensor)
def gather(params, indices, name=None, axis=None, batch_dims=0):
    """tf.gather of a ragged tensor's rows (RaggedGather)."""
    if axis not in (None, 0) or batch_dims != 0:
        raise ValueError("Flowstone gathers ragged tensors along axis 0 without batch_dims")
    with _ops.name_scope(name, "RaggedGather"):
        return _rt.gather_rows(params, indices)


_SEGMENT_REDUCTIONS = {
    "Sum": array_ops.unsorted_segment_sum, "Max": segment_ops.unsorted_segment_max,
    "Min": segment_ops.unsorted_segment_min, "Prod": segment_ops.unsorted_segment_prod,
}


# The dense reductions, for the flat values' uniform dimensions (and for all of a ragged tensor).
_DENSE_REDUCTIONS = {
    "Sum": reduction_ops.reduce_sum, "Mean": reduction_ops.reduce_mean,
    "Max": reduction_ops.reduce_max, "Min": reduction_ops.reduce_min,
    "Prod": reduction_ops.reduce_prod, "Any": math_reductions.reduce_any,
    "All": math_reductions.reduce_all,
}


def _segment_reduce(op_type, values, ids, count):
    if op_type == "Mean":
        total = array_ops.unsorted_segment_sum(values, ids, count)
        sizes = array_ops.unsorted_segment_sum(array_ops.ones_like(values), ids, count)
        # An empty row's mean is 0 / 0: NaN, as TensorFlow's.
        return math_ops.truediv(total, sizes) if values.dtype.is_floating else \
            total // math_ops.maximum(sizes, 1)
    if op_type in ("Any", "All"):
        as_int = math_ops.cast(values, _dtypes.int32)
        fn = segment_ops.unsorted_segment_max if op_type == "Any" else \
            segment_ops.unsorted_segment_min
        # An empty row's max is the lowest int (any: False), its min the highest (all: True).
        return math_ops.greater(fn(as_int, ids, count), 0)
    return _SEGMENT_REDUCTIONS[op_type](values, ids, count)


@_dispatch.register("reduce", RaggedTensor)
def reduce(op_type, rt, axis, keepdims, name):
    """tf.reduce_* over a ragged tensor: all of it, its rows (axis 1 of ragged_rank 1), its
    columns (axis 0 of ragged_rank 1) or the flat values' inner dimensions."""
    if keepdims:
        raise ValueError("Flowstone's ragged reductions do not keep dims (see docs/COMPAT.md)")
    with _ops.name_scope(name, "RaggedReduce"):
        if axis is None:
            return _DENSE_REDUCTIONS[op_type](rt.flat_values)
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError("Flowstone reduces a ragged tensor over one axis at a time")
            axis = axis[0]
        rank = rt.shape.ndims
        if axis < 0:
            axis += rank
        if axis == 1 and rt.ragged_rank == 1:
            return _segment_reduce(op_type, rt.values, rt.value_rowids(), rt.nrows())
        if axis == 0 and rt.ragged_rank == 1:
            starts = array_ops.gather(rt.row_splits, rt.value_rowids())
            columns = array_ops.range(array_ops.shape(rt.values, out_type=starts.dtype)[0]) - starts
            width = rt.bounding_shape(axis=1)
            return _segment_reduce(op_type, rt.values, columns, width)
        if axis > rt.ragged_rank or (axis > 1 and isinstance(rt.values, RaggedTensor)):
            values = rt.values
            if isinstance(values, RaggedTensor):
                return rt.with_values(reduce(op_type, values, axis - 1, False, None))
            return rt.with_values(_DENSE_REDUCTIONS[op_type](values, axis=axis - 1))
        raise ValueError(f"Flowstone reduces a ragged tensor of ragged_rank {rt.ragged_rank} "
                         f"over axis {axis} only for ragged_rank 1 (see docs/COMPAT.md)")
