"""tf.nn.embedding_lookup_sparse and tf.nn.safe_embedding_lookup_sparse: combined embeddings of
each row of a SparseTensor of ids, composed of embedding_lookup and the segment reductions as in
TensorFlow."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import (array_ops, math_composites, math_ops, nn_impl, reduction_ops,
                           segment_ops, sort_ops, sparse_composites, sparse_ops)
from flowstone.util.tf_export import tf_export

_COMBINERS = ("mean", "sqrtn", "sum")


def _as_param_list(params):
    if isinstance(params, (list, tuple)):
        return list(params)
    if hasattr(params, "_get_variable_list"):  # a PartitionedVariable
        return list(params)
    return [params]


@tf_export("nn.embedding_lookup_sparse")
def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None, allow_fast_lookup=False):
    """One embedding per row of sp_ids (a SparseTensor of int ids [batch, ...]): the rows of
    params for the row's ids, weighted by sp_weights' values (or 1 when sp_weights is None) and
    combined by `combiner`: "sum", "mean" (the weighted mean, the default) or "sqrtn" (the
    weighted sum over the square root of the sum of squared weights). The result has
    max(row) + 1 rows; a row without ids gets zeros. `allow_fast_lookup` is accepted and
    unused."""
    del allow_fast_lookup
    if combiner is None:
        combiner = "mean"
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = _as_param_list(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor, got {type(sp_weights)}")
    with _ops.name_scope(name, "embedding_lookup_sparse", [sp_ids]) as scope:
        segment_ids = math_ops.cast(sp_ids.indices[:, 0], _dtypes.int32)
        ids, idx = sort_ops.unique(sp_ids.values)
        embeddings = nn_impl.embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                              max_norm=max_norm)
        if sp_weights is None:
            reduce = {"sum": segment_ops.sparse_segment_sum,
                      "mean": segment_ops.sparse_segment_mean,
                      "sqrtn": segment_ops.sparse_segment_sqrt_n}[combiner]
            return reduce(embeddings, idx, segment_ids, name=scope)
        sp_ids.values.shape.assert_is_compatible_with(sp_weights.values.shape)
        embeddings = array_ops.gather(embeddings, idx)
        weights = sp_weights.values
        if weights.dtype != embeddings.dtype:
            weights = math_ops.cast(weights, embeddings.dtype)
        # One weight per id, broadcast over the embedding's dimensions.
        extra = array_ops.ones(array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0),
                               _dtypes.int32)
        weights = array_ops.reshape(weights, array_ops.concat([array_ops.shape(weights), extra],
                                                              0))
        embeddings = math_ops.multiply(embeddings, weights)
        if combiner == "sum":
            return segment_ops.segment_sum(embeddings, segment_ids, name=scope)
        total = segment_ops.segment_sum(embeddings, segment_ids)
        if combiner == "mean":
            norm = segment_ops.segment_sum(weights, segment_ids)
        else:
            norm = math_ops.sqrt(segment_ops.segment_sum(math_ops.square(weights), segment_ids))
        return math_composites.divide_no_nan(total, norm, name=scope)


@tf_export("nn.safe_embedding_lookup_sparse")
def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None,
                                 allow_fast_lookup=False):
    """embedding_lookup_sparse for ids [d0, ..., dn-1, k] of any rank, tolerating invalid
    input: negative ids (and, unless combiner is "sum", ids of non-positive weight) are dropped,
    and a row left without ids gets the embedding of default_id, or zeros when it is None.
    The result is [d0, ..., dn-1, embedding dims...]."""
    del allow_fast_lookup
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    embedding_weights = _as_param_list(embedding_weights)
    if not embedding_weights:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    embedding_weights = [w if hasattr(w, "_get_variable_list") or hasattr(w, "read_value")
                         else _ops.convert_to_tensor(w, dtype=dtype)
                         for w in embedding_weights]
    with _ops.name_scope(name, "embedding_lookup", [sparse_ids]) as scope:
        # Rows are all dimensions but the last: flatten them into one.
        original_shape = sparse_ids.dense_shape
        rank_dim = original_shape.shape[0]
        rank = array_ops.size(original_shape) if rank_dim is None else int(rank_dim)
        leading = array_ops.slice(original_shape, [0], array_ops.reshape(rank - 1, [1]))
        sparse_ids = sparse_ops.sparse_reshape(sparse_ids, array_ops.stack([
            reduction_ops.reduce_prod(leading), array_ops.gather(original_shape, rank - 1)]))
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values,
                                          sparse_ids.dense_shape)
        keep = math_ops.greater_equal(sparse_ids.values, 0)
        if sparse_weights is not None and combiner != "sum":
            keep = math_ops.logical_and(keep, math_ops.greater(sparse_weights.values, 0))
        sparse_ids = sparse_ops.sparse_retain(sparse_ids, keep)
        if sparse_weights is not None:
            sparse_weights = sparse_ops.sparse_retain(sparse_weights, keep)
        sparse_ids, is_row_empty = sparse_composites.sparse_fill_empty_rows(
            sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_composites.sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights,
                                         combiner=combiner, partition_strategy=partition_strategy,
                                         max_norm=max_norm)
        if default_id is None:
            empty = array_ops.reshape(is_row_empty, array_ops.concat(
                [array_ops.shape(is_row_empty),
                 array_ops.ones(array_ops.expand_dims(array_ops.rank(result) - 1, 0),
                                _dtypes.int32)], 0))
            empty = math_ops.logical_and(empty, array_ops.ones_like(result, dtype=_dtypes.bool))
            result = math_ops.where(empty, array_ops.zeros_like(result), result)
        return array_ops.reshape(result, array_ops.concat(
            [math_ops.cast(leading, _dtypes.int32), array_ops.shape(result)[1:]], 0), name=scope)
