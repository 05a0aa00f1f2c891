"""tf.sparse.slice, split, reduce_sum_sparse, reduce_max_sparse and bincount over their C++ ops
(src/ops/sparse/), and sparse.eye and expand_dims, which TensorFlow composes in Python too."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import array_ops, math_ops
from flowstone.ops.sparse_ops import _check_sparse
from flowstone.util.tf_export import tf_export


def _int64(x, name):
    return math_ops.cast(_ops.convert_to_tensor(x, name=name), _dtypes.int64)


def _sparse_result(op):
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


@tf_export("sparse.slice", "sparse_slice")
def sparse_slice(sp_input, start, size, name=None):
    """The entries inside [start, start + size), shifted so that `start` becomes 0, in a dense
    shape of `size` clipped to the input's."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseSlice"):
        return _sparse_result(_ops.apply_op(
            "SparseSlice", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                            _int64(start, "start"), _int64(size, "size")]))


@tf_export("sparse.split", "sparse_split")
def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """`num_split` SparseTensors cut from `sp_input` along `axis` (the first size % num_split
    pieces one longer). Arguments are keywords, as in TensorFlow."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None or num_split is None:
        raise ValueError("sp_input and num_split are required")
    axis = split_dim if axis is None else axis
    if axis is None:
        raise ValueError("axis is required")
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseSplit"):
        op = _ops.apply_op("SparseSplit", [_int64(axis, "split_dim"), sp_input.indices,
                                           sp_input.values, sp_input.dense_shape],
                           {"num_split": int(num_split)})
        n = int(num_split)
        return [SparseTensor(op.outputs[k], op.outputs[n + k], op.outputs[2 * n + k])
                for k in range(n)]


def _reduce_sparse(op_type, sp_input, axis, keepdims, reduction_axes, keep_dims):
    sp_input = _check_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keepdims = keep_dims if keepdims is None else keepdims
    if axis is None:
        axes = array_ops.range(array_ops.size(sp_input.dense_shape))
    else:
        axes = _ops.convert_to_tensor(axis, dtype=_dtypes.int32, name="reduction_axes")
    return _sparse_result(_ops.apply_op(
        op_type, [sp_input.indices, sp_input.values, sp_input.dense_shape, axes],
        {"keep_dims": bool(keepdims)}))


@tf_export("sparse.reduce_sum_sparse", "sparse_reduce_sum_sparse")
def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """The sums over `axis` (all axes when None) as a SparseTensor of the groups with
    entries."""
    return _reduce_sparse("SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes,
                          keep_dims)


@tf_export("sparse.reduce_max_sparse", "sparse_reduce_max_sparse")
def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """The largest entries over `axis` (all axes when None) as a SparseTensor of the groups
    with entries."""
    return _reduce_sparse("SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes,
                          keep_dims)


@tf_export("sparse.bincount")
def sparse_bincount(values, weights=None, axis=0, minlength=None, maxlength=None,
                    binary_output=False, name=None):
    """How often each value occurs (or its summed weights, or 1 with binary_output), over all
    of `values` (axis=0) or per row (axis=-1), as a SparseTensor."""
    if axis is None:
        axis = 0
    if axis not in (0, -1):
        raise ValueError(f"Unsupported value for argument axis={axis}. Only 0 and -1 are "
                         "currently supported.")
    with _ops.name_scope(name, "count"):
        is_sparse = isinstance(values, SparseTensor)
        if not is_sparse:
            values = _ops.convert_to_tensor(values, name="values")
        if weights is not None:
            weights = _ops.convert_to_tensor(
                weights.values if isinstance(weights, SparseTensor) else weights, name="weights")
        if axis == 0:
            if is_sparse:
                values, is_sparse = values.values, False
            else:
                values = array_ops.reshape(values, [-1])
            if weights is not None:
                weights = array_ops.reshape(weights, [-1])
        value_dtype = values.values.dtype if is_sparse else values.dtype
        if weights is None:
            weights = _ops.constant(np.zeros([0], value_dtype.as_numpy_dtype))
        attrs = {"minlength": -1 if minlength is None else int(minlength),
                 "maxlength": -1 if maxlength is None else int(maxlength),
                 "binary_output": bool(binary_output)}
        if is_sparse:
            op = _ops.apply_op("SparseCountSparseOutput", [values.indices, values.values,
                                                           values.dense_shape, weights], attrs)
        else:
            op = _ops.apply_op("DenseCountSparseOutput", [values, weights], attrs)
        return _sparse_result(op)


@tf_export("sparse.eye")
def sparse_eye(num_rows, num_columns=None, dtype=_dtypes.float32, name=None):
    """The identity matrix [num_rows, num_columns] as a SparseTensor."""
    with _ops.name_scope(name, "eye"):
        num_rows = _int64(num_rows, "num_rows")
        num_columns = num_rows if num_columns is None else _int64(num_columns, "num_columns")
        diag = array_ops.range(math_ops.minimum(num_rows, num_columns))
        return SparseTensor(array_ops.stack([diag, diag], axis=1),
                            array_ops.ones_like(diag, dtype=_dtypes.as_dtype(dtype)),
                            array_ops.stack([num_rows, num_columns]))


@tf_export("sparse.expand_dims")
def sparse_expand_dims(sp_input, axis=None, name=None):
    """sp_input with a dimension of size 1 inserted at `axis` (negative counts from the end,
    -1 appending)."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "expand_dims"):
        axis = 0 if axis is None else axis
        rank = math_ops.cast(array_ops.size(sp_input.dense_shape), _dtypes.int64)
        axis = _int64(axis, "axis")
        axis = math_ops.where(math_ops.less(axis, 0), math_ops.add(axis, rank + 1), axis)
        n = array_ops.shape(sp_input.indices, out_type=_dtypes.int64)[0]
        zeros = array_ops.zeros(array_ops.stack([n, 1]), _dtypes.int64)
        indices = array_ops.concat([sp_input.indices[:, :axis], zeros, sp_input.indices[:, axis:]],
                                   axis=1)
        shape = array_ops.concat([sp_input.dense_shape[:axis], array_ops.ones([1], _dtypes.int64),
                                  sp_input.dense_shape[axis:]], axis=0)
        return SparseTensor(indices, sp_input.values, shape)
