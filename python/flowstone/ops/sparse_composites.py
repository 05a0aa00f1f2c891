"""More of TF1's sparse functions. As TensorFlow composes them: sparse_mask (the rows of an
IndexedSlices not masked out), sparse_reset_shape (a larger or the tight dense shape) and
sparse_to_indicator (a multi-hot bool tensor from ids). From dense ops, as sparse_ops.py
composes TensorFlow's sparse kernels: sparse_softmax (a softmax over the entries of each row),
sparse_maximum / sparse_minimum and sparse_add."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.indexed_slices import IndexedSlices
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import (array_ops, basic_ops, gradients, math_ops, partition_ops,
                           reduction_ops, segment_ops, sort_ops)
from flowstone.ops.array_composites import get_static_value
from flowstone.ops.check_ops import assert_equal, assert_less_equal
from flowstone.ops.sparse_ops import (_check_sparse, _fill_then_update, _row_major_positions,
                                      sparse_reorder, sparse_tensor_to_dense)
from flowstone.util.tf_export import tf_export


@tf_export("sparse.mask", "sparse_mask")
def sparse_mask(a, mask_indices, name=None):
    """The rows of the IndexedSlices `a` whose index is not in `mask_indices`."""
    with _ops.name_scope(name, "sparse_mask", [a.values, a.indices, mask_indices]) as name:
        kept_indices, kept_positions = sort_ops.setdiff1d(a.indices, mask_indices)
        kept_values = array_ops.gather(a.values, kept_positions, name=name)
        return IndexedSlices(kept_values, kept_indices, a.dense_shape)


@tf_export("sparse.reset_shape", "sparse_reset_shape")
def sparse_reset_shape(sp_input, new_shape=None):
    """`sp_input` with dense shape `new_shape`, which must be of the same rank and no smaller in
    any dimension; without `new_shape`, the tight shape (the largest index + 1 per dimension)."""
    sp_input = _check_sparse(sp_input)
    indices, values = sp_input.indices, sp_input.values
    with _ops.name_scope(None, "SparseResetShape", [indices, values, sp_input.dense_shape]):
        in_shape = basic_ops.identity(sp_input.dense_shape)
        if new_shape is None:
            largest_index = reduction_ops.reduce_max(indices, axis=0)
            return SparseTensor(indices, values,
                                math_ops.add(largest_index, array_ops.ones_like(in_shape)))
        out_shape = math_ops.cast(_ops.convert_to_tensor(new_shape), _dtypes.int64)
        if out_shape.shape.ndims != 1:
            raise ValueError(f"new_shape must be a vector (rank 1), got shape {out_shape.shape}")
        known_rank = sp_input.dense_shape.shape
        if out_shape.shape[0] is not None and known_rank.ndims == 1 and \
                known_rank[0] is not None and out_shape.shape[0] != known_rank[0]:
            raise ValueError(f"new_shape has {out_shape.shape[0]} dimensions but sp_input has "
                             f"rank {known_rank[0]}; they must be equal")
        out_shape_value = get_static_value(out_shape)
        in_shape_static = sp_input.shape
        if out_shape_value is not None and in_shape_static.is_fully_defined():
            in_shape_value = np.array(in_shape_static.as_list())
            if not np.all(in_shape_value <= out_shape_value):
                raise ValueError("Requested new_shape should have dimension sizes >= "
                                 f"sp_input.shape.  Found new_shape ({out_shape_value}), "
                                 f"sp_input.shape ({in_shape_value}).")
            return SparseTensor(indices, values, out_shape_value)
        checks = [assert_equal(array_ops.shape(in_shape), array_ops.shape(out_shape)),
                  assert_less_equal(in_shape, out_shape)]
        with _ops.control_dependencies(checks):
            out_shape = basic_ops.identity(out_shape)
        return SparseTensor(indices, values, out_shape)


@tf_export("sparse.to_indicator", "sparse_to_indicator")
def sparse_to_indicator(sp_input, vocab_size, name=None):
    """A bool tensor of shape dense_shape[:-1] + [vocab_size] that is True at [..., id] for each
    id among the values of row [...] of the integer SparseTensor `sp_input`."""
    sp_input = _check_sparse(sp_input)
    if not sp_input.dtype.is_integer:
        raise TypeError(f"sparse_to_indicator needs integer ids, got {sp_input.dtype!r}")
    with _ops.name_scope(name, "SparseToIndicator", [sp_input.indices, sp_input.values]) as name:
        row_indices = sp_input.indices[:, :-1]
        ids = array_ops.expand_dims(math_ops.cast(sp_input.values, _dtypes.int64), 1)
        indicator_indices = array_ops.concat([row_indices, ids], 1)
        dense_shape = array_ops.concat(
            [sp_input.dense_shape[:-1],
             array_ops.reshape(math_ops.cast(vocab_size, _dtypes.int64), [1])], 0)
        ones = array_ops.ones_like(sp_input.values, dtype=_dtypes.bool)
        return basic_ops.identity(_fill_then_update(indicator_indices, ones, dense_shape, False),
                                  name=name)


@tf_export("sparse.softmax", "sparse_softmax")
def sparse_softmax(sp_input, name=None):
    """A softmax over the entries of each row (all dimensions but the last) of `sp_input`;
    the missing entries take no part, as if they were -inf."""
    sp_input = _check_sparse(sp_input)
    if sp_input.indices.shape.ndims == 2 and sp_input.indices.shape[1] is not None and \
            sp_input.indices.shape[1] < 2:
        raise ValueError("sparse_softmax needs a SparseTensor of rank 2 or more, got rank "
                         f"{sp_input.indices.shape[1]}")
    with _ops.name_scope(name, "SparseSoftmax", [sp_input.indices, sp_input.values]):
        indices, values = sp_input.indices, sp_input.values
        row_shape = sp_input.dense_shape[:-1]
        rows = _row_major_positions(indices[:, :-1], row_shape)
        num_rows = reduction_ops.reduce_prod(row_shape)
        # The shift by each row's maximum only keeps exp() finite; softmax does not depend on it.
        row_max = gradients.stop_gradient(
            segment_ops.unsorted_segment_max(values, rows, num_rows))
        exps = math_ops.exp(math_ops.subtract(values, array_ops.gather(row_max, rows)))
        row_sums = array_ops.unsorted_segment_sum(exps, rows, num_rows)
        return SparseTensor(indices, math_ops.divide(exps, array_ops.gather(row_sums, rows)),
                            sp_input.dense_shape)


def _sparse_sparse_elementwise(sp_a, sp_b, combine, name, default_name):
    """`combine` of two SparseTensors of one dense shape, at the union of their indices (in
    row-major order), a missing entry counting as 0."""
    sp_a, sp_b = _check_sparse(sp_a), _check_sparse(sp_b)
    with _ops.name_scope(name, default_name, [sp_a.indices, sp_a.values, sp_b.indices,
                                              sp_b.values]):
        same_shape = assert_equal(
            sp_a.dense_shape, sp_b.dense_shape,
            message=f"{default_name}: operands' shapes do not match (sp_a and sp_b must have "
                    "the same dense_shape)")
        with _ops.control_dependencies([same_shape]):
            shape = basic_ops.identity(sp_a.dense_shape)
        positions = array_ops.concat([_row_major_positions(sp_a.indices, shape),
                                      _row_major_positions(sp_b.indices, shape)], 0)
        union = sort_ops.sort(sort_ops.unique(positions).y)
        flat_a = array_ops.reshape(sparse_tensor_to_dense(sp_a), [-1])
        flat_b = array_ops.reshape(sparse_tensor_to_dense(sp_b), [-1])
        values = combine(array_ops.gather(flat_a, union), array_ops.gather(flat_b, union))
        indices = array_ops.transpose(sort_ops.unravel_index(union, shape))
        return SparseTensor(indices, values, shape)


@tf_export("sparse.maximum", "sparse_maximum")
def sparse_maximum(sp_a, sp_b, name=None):
    """The element-wise maximum of two SparseTensors of one shape (missing entries are 0)."""
    return _sparse_sparse_elementwise(sp_a, sp_b, math_ops.maximum, name, "SparseSparseMaximum")


@tf_export("sparse.minimum", "sparse_minimum")
def sparse_minimum(sp_a, sp_b, name=None):
    """The element-wise minimum of two SparseTensors of one shape (missing entries are 0)."""
    return _sparse_sparse_elementwise(sp_a, sp_b, math_ops.minimum, name, "SparseSparseMinimum")


@tf_export("sparse.add", "sparse_add")
def sparse_add(a, b, threshold=None, thresh=None):
    """a + b where at least one is a SparseTensor. Two SparseTensors give a SparseTensor at the
    union of their indices, without the sums whose magnitude is below `threshold` (`thresh` is
    its old name); a SparseTensor and a dense tensor give a dense tensor."""
    if threshold is not None and thresh is not None:
        raise ValueError("Cannot specify both 'threshold' and 'thresh'")
    threshold = 0 if threshold is None and thresh is None else (
        thresh if threshold is None else threshold)
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not (a_sparse or b_sparse):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if a_sparse and b_sparse:
        total = _sparse_sparse_elementwise(a, b, math_ops.add, None, "SparseAdd")
        with _ops.name_scope(None, "SparseAdd", [total.values]):
            keep = math_ops.greater_equal(
                math_ops.abs(total.values),
                math_ops.cast(threshold, total.values.dtype.real_dtype))
            return SparseTensor(partition_ops.boolean_mask(total.indices, keep),
                                partition_ops.boolean_mask(total.values, keep),
                                total.dense_shape)
    sparse, dense = (a, b) if a_sparse else (b, a)
    with _ops.name_scope(None, "SparseTensorDenseAdd", [sparse.values, dense]):
        dense = _ops.convert_to_tensor(dense, dtype=sparse.dtype, name="dense")
        return math_ops.add(dense, sparse_tensor_to_dense(sparse))


@tf_export("sparse.fill_empty_rows", "sparse_fill_empty_rows")
def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """`sp_input` with an entry `default_value` at [row, 0, ..., 0] for every row that has no
    entry, in row-major order; and a bool vector saying which rows were empty."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseFillEmptyRows", [sp_input]):
        default_value = _ops.convert_to_tensor(default_value, dtype=sp_input.values.dtype,
                                               name="default_value")
        num_rows = sp_input.dense_shape[0]
        entries_per_row = array_ops.unsorted_segment_sum(
            array_ops.ones_like(sp_input.indices[:, 0]), sp_input.indices[:, 0], num_rows)
        empty_row_indicator = math_ops.equal(entries_per_row, 0)
        empty_rows = math_ops.where(empty_row_indicator)  # int64 [k, 1]
        rank = array_ops.size(sp_input.dense_shape)
        added_indices = array_ops.concat(
            [empty_rows, array_ops.zeros(array_ops.stack([array_ops.shape(empty_rows)[0],
                                                          rank - 1]), _dtypes.int64)], 1)
        added_values = array_ops.fill(array_ops.shape(empty_rows)[:1], default_value)
        filled = SparseTensor(array_ops.concat([sp_input.indices, added_indices], 0),
                              array_ops.concat([sp_input.values, added_values], 0),
                              sp_input.dense_shape)
        return sparse_reorder(filled), empty_row_indicator


@tf_export("sparse.merge", "sparse_merge")
def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """One SparseTensor from ids and their weights: the entry at [row..., id] holds the weight,
    so the last dimension becomes the vocabulary (TF1's sparse_merge, for one id tensor)."""
    if isinstance(sp_ids, (list, tuple)) or isinstance(vocab_size, (list, tuple)):
        raise NotImplementedError("sparse_merge of several id tensors is not supported; merge "
                                  "one SparseTensor of ids at a time")
    sp_ids = _check_sparse(sp_ids)
    sp_values = _check_sparse(sp_values)
    with _ops.name_scope(name, "SparseMerge", [sp_ids, sp_values]):
        ids = math_ops.cast(sp_ids.values, _dtypes.int64)
        indices = array_ops.concat([sp_ids.indices[:, :-1], array_ops.expand_dims(ids, 1)], 1)
        vocab = array_ops.reshape(math_ops.cast(vocab_size, _dtypes.int64), [1])
        shape = array_ops.concat([sp_ids.dense_shape[:-1], vocab], 0)
        merged = SparseTensor(indices, sp_values.values, shape)
        if already_sorted:
            return merged
        return sparse_reorder(merged)


@tf_export("sparse.from_dense")
def from_dense(tensor, name=None):
    """The non-zero (non-empty, for strings) elements of a dense tensor as a SparseTensor, in
    row-major order."""
    with _ops.name_scope(name, "dense_to_sparse", [tensor]):
        tensor = _ops.convert_to_tensor(tensor)
        zero = "" if tensor.dtype == _dtypes.string else array_ops.zeros([], tensor.dtype)
        keep = math_ops.not_equal(tensor, zero)
        # The values in row-major order, as Where lists their indices.
        return SparseTensor(math_ops.where(keep), partition_ops.boolean_mask(tensor, keep),
                            array_ops.shape(tensor, out_type=_dtypes.int64))
