"""TF1's SparseTensor functions, composed from the dense ops (scatter, gather, segment sums,
sorting), so gradients reach the values through those ops: densifying, sparse x dense matmul,
reductions, retaining, reordering, transposing, reshaping, concatenation, and the placeholder.
Indices are not validated for order or duplicates (TensorFlow's validate_indices; see
docs/COMPAT.md)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, basic_ops, math_ops, matmul_ops, partition_ops,
                           reduction_ops, scan_ops, scatter_ops, sort_ops)
from flowstone.util.tf_export import tf_export


def _check_sparse(sp_input):
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}")
    return sp_input


def _fill_then_update(indices, values, shape, default_value):
    dense = array_ops.fill(shape, _ops.convert_to_tensor(default_value, dtype=values.dtype))
    return scatter_ops.tensor_scatter_nd_update(dense, indices, values)


@tf_export("sparse.to_dense", "sparse_tensor_to_dense")
def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor: the values at their indices, `default_value` (0) elsewhere."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseToDense"):
        default = 0 if default_value is None else default_value
        dense = _fill_then_update(sp_input.indices, sp_input.values, sp_input.dense_shape,
                                  default)
        dense.set_shape(sp_input.shape)
        return dense


@tf_export("sparse_to_dense")
def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of `output_shape` with `sparse_values` (one value, or one per index) at
    `sparse_indices` (a scalar, a vector for a 1-D output, or a matrix [N, rank])."""
    with _ops.name_scope(name, "SparseToDense"):
        indices = _ops.convert_to_tensor(sparse_indices, name="sparse_indices")
        if indices.shape.ndims == 0:
            indices = array_ops.reshape(indices, [1, 1])
        elif indices.shape.ndims == 1:
            indices = array_ops.expand_dims(indices, 1)
        values = _ops.convert_to_tensor(sparse_values, name="sparse_values")
        values = values + array_ops.zeros([array_ops.shape(indices)[0]], values.dtype) \
            if values.shape.ndims == 0 else values
        shape = _ops.convert_to_tensor(output_shape, name="output_shape")
        return _fill_then_update(indices, values, shape, default_value)


@tf_export("sparse.sparse_dense_matmul", "sparse.matmul", "sparse_tensor_dense_matmul")
def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """A @ b for a sparse matrix A [M, K] and a dense b [K, N]: each stored entry a_ik adds
    a_ik * b[k, :] to row i."""
    sp_a = _check_sparse(sp_a)
    with _ops.name_scope(name, "SparseTensorDenseMatMul"):
        b = _ops.convert_to_tensor(b, name="b")
        if adjoint_b:
            b = array_ops.transpose(b)
        rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
        num_rows = sp_a.dense_shape[0]
        if adjoint_a:
            rows, cols, num_rows = cols, rows, sp_a.dense_shape[1]
        products = math_ops.multiply(array_ops.expand_dims(sp_a.values, 1),
                                     array_ops.gather(b, cols))
        product = array_ops.unsorted_segment_sum(products, rows, num_rows)
        a_shape = sp_a.shape
        if a_shape.ndims == 2 and b.shape.ndims == 2:
            product.set_shape([a_shape.as_list()[1 if adjoint_a else 0], b.shape.as_list()[1]])
        return product


def _reduce(sp_input, axis, keepdims, reduction_axes, keep_dims, reducer, name):
    axis = reduction_axes if axis is None else axis
    keepdims = keep_dims if keepdims is None else keepdims
    return reducer(sp_input, axis, bool(keepdims), name)


@tf_export("sparse.reduce_sum", "sparse_reduce_sum")
def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """reduce_sum of the dense tensor (missing entries count as zero)."""
    def reducer(sp, ax, keep, name):
        with _ops.name_scope(None, name):
            return reduction_ops.reduce_sum(sparse_tensor_to_dense(_check_sparse(sp)), ax, keep)
    return _reduce(sp_input, axis, keepdims, reduction_axes, keep_dims, reducer,
                   "SparseReduceSum")


@tf_export("sparse.reduce_max", "sparse_reduce_max")
def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """The largest stored value of each reduced group, as TensorFlow defines it: missing entries
    do not take part, and a group without entries gives 0."""
    def reducer(sp, ax, keep, name):
        sp = _check_sparse(sp)
        with _ops.name_scope(None, name):
            lowest = sp.values.dtype.min
            dense = _fill_then_update(sp.indices, sp.values, sp.dense_shape, lowest)
            present = _fill_then_update(sp.indices, array_ops.ones_like(sp.values, _dtypes.int32),
                                        sp.dense_shape, 0)
            largest = reduction_ops.reduce_max(dense, ax, keep)
            count = reduction_ops.reduce_sum(present, ax, keep)
            return math_ops.where(math_ops.greater(count, 0), largest,
                                  array_ops.zeros_like(largest))
    return _reduce(sp_input, axis, keepdims, reduction_axes, keep_dims, reducer,
                   "SparseReduceMax")


@tf_export("sparse.retain", "sparse_retain")
def sparse_retain(sp_input, to_retain):
    """The entries where the bool vector `to_retain` (one per entry) is true."""
    sp_input = _check_sparse(sp_input)
    keep = _ops.convert_to_tensor(to_retain, name="to_retain")
    if keep.shape.ndims not in (None, 1):
        raise ValueError(f"to_retain must be a vector, got shape {keep.shape}")
    return SparseTensor(partition_ops.boolean_mask(sp_input.indices, keep),
                        partition_ops.boolean_mask(sp_input.values, keep), sp_input.dense_shape)


def _row_major_positions(indices, shape):
    """Each entry's position in the dense tensor's row-major order."""
    strides = scan_ops.cumprod(shape, exclusive=True, reverse=True)
    return reduction_ops.reduce_sum(math_ops.multiply(indices, strides), axis=1)


@tf_export("sparse.reorder", "sparse_reorder")
def sparse_reorder(sp_input, name=None):
    """The same SparseTensor with its entries in row-major order."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseReorder"):
        order = sort_ops.argsort(_row_major_positions(sp_input.indices, sp_input.dense_shape),
                                 stable=True)
        return SparseTensor(array_ops.gather(sp_input.indices, order),
                            array_ops.gather(sp_input.values, order), sp_input.dense_shape)


@tf_export("sparse.transpose", "sparse_transpose")
def sparse_transpose(sp_input, perm=None, name=None):
    """The transpose (axes reversed, or permuted by `perm`), in row-major order."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseTranspose"):
        if perm is None:
            rank = array_ops.size(sp_input.dense_shape)
            perm = math_ops.subtract(math_ops.subtract(rank, 1), array_ops.range(rank))
        perm = _ops.convert_to_tensor(perm, name="perm")
        indices = array_ops.gather(sp_input.indices, perm, axis=1)
        shape = array_ops.gather(sp_input.dense_shape, perm)
        return sparse_reorder(SparseTensor(indices, sp_input.values, shape))


@tf_export("sparse.reshape", "sparse_reshape")
def sparse_reshape(sp_input, shape, name=None):
    """The same entries in a dense shape of as many elements (one dimension may be -1)."""
    sp_input = _check_sparse(sp_input)
    with _ops.name_scope(name, "SparseReshape"):
        shape = math_ops.cast(_ops.convert_to_tensor(shape, name="shape"), _dtypes.int64)
        total = reduction_ops.reduce_prod(sp_input.dense_shape)
        known = reduction_ops.reduce_prod(math_ops.where(
            math_ops.equal(shape, -1), array_ops.ones_like(shape), shape))
        shape = math_ops.where(math_ops.equal(shape, -1),
                               array_ops.fill(array_ops.shape(shape),
                                              math_ops.floordiv(total, known)), shape)
        positions = array_ops.expand_dims(
            _row_major_positions(sp_input.indices, sp_input.dense_shape), 1)
        strides = scan_ops.cumprod(shape, exclusive=True, reverse=True)
        indices = math_ops.floormod(math_ops.floordiv(positions, strides), shape)
        return SparseTensor(indices, sp_input.values, shape)


@tf_export("sparse.concat", "sparse_concat")
def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """The SparseTensors joined along `axis` (their other dimensions equal, or with
    expand_nonconcat_dim the largest of each), in row-major order."""
    axis = concat_dim if concat_dim is not None else axis
    expand = expand_nonconcat_dims if expand_nonconcat_dims is not None else expand_nonconcat_dim
    sp_inputs = [_check_sparse(sp) for sp in sp_inputs]
    rank = sp_inputs[0].dense_shape.shape.as_list()[0]
    if rank is None:
        raise ValueError("sparse_concat needs SparseTensors of known rank")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for SparseTensors of rank {rank}")
    along = [1 if d == axis % rank else 0 for d in range(rank)]
    with _ops.name_scope(name, "SparseConcat"):
        along = _ops.constant(along, dtype=_dtypes.int64)
        offset = array_ops.zeros_like(sp_inputs[0].dense_shape)
        indices = []
        for sp in sp_inputs:
            indices.append(math_ops.add(sp.indices, array_ops.expand_dims(offset * along, 0)))
            offset = math_ops.add(offset, sp.dense_shape)
        shapes = array_ops.stack([sp.dense_shape for sp in sp_inputs])
        others = reduction_ops.reduce_max(shapes, axis=0) if expand else sp_inputs[0].dense_shape
        shape = math_ops.add(math_ops.multiply(offset, along),
                             math_ops.multiply(others, 1 - along))
        return sparse_reorder(SparseTensor(array_ops.concat(indices, 0),
                                           array_ops.concat([sp.values for sp in sp_inputs], 0),
                                           shape))


@tf_export("sparse.placeholder", "sparse_placeholder")
def sparse_placeholder(dtype, shape=None, name=None):
    """A SparseTensor of three placeholders, fed with a SparseTensorValue (or an (indices,
    values, dense_shape) tuple). A fully known `shape` is the dense shape's default."""
    shape = TensorShape(shape)
    with _ops.name_scope(name, "SparseTensor"):
        rank = shape.ndims
        values = basic_ops.placeholder(dtype, [None], name="values")
        indices = basic_ops.placeholder(_dtypes.int64, [None, rank], name="indices")
        if shape.is_fully_defined():
            dense_shape = basic_ops.placeholder_with_default(
                _ops.constant(shape.as_list(), dtype=_dtypes.int64), [rank], name="shape")
        else:
            dense_shape = basic_ops.placeholder(_dtypes.int64, [rank], name="shape")
        return SparseTensor(indices, values, dense_shape)


@tf_export("sparse_matmul")
def sparse_matmul(a, b, transpose_a=False, transpose_b=False, a_is_sparse=False,
                  b_is_sparse=False, name=None):
    """a @ b of dense matrices; the sparsity hints change nothing here (one MatMul kernel)."""
    return matmul_ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name)
