"""The sparse plumbing of feature columns: raw features as SparseTensors without their ignored
values, and TensorFlow's safe embedding lookup (invalid ids dropped, empty rows zero)."""

import flowstone as tf


def to_sparse_dropping(tensor, ignore_value):
    """A SparseTensor of the entries of `tensor` (dense or sparse) that are not `ignore_value`."""
    if isinstance(tensor, tf.SparseTensor):
        keep = tf.not_equal(tensor.values, ignore_value)
        return tf.SparseTensor(tf.boolean_mask(tensor.indices, keep),
                               tf.boolean_mask(tensor.values, keep), tensor.dense_shape)
    keep = tf.not_equal(tensor, ignore_value)
    return tf.SparseTensor(tf.where(keep), tf.boolean_mask(tensor, keep),
                           tf.shape(tensor, out_type=tf.int64))


def with_values(sparse, values):
    """`sparse` with new values at the same positions."""
    return tf.SparseTensor(sparse.indices, values, sparse.dense_shape)


def safe_embedding_lookup_sparse(params, ids, weights=None, combiner="mean"):
    """Per row of the [batch, k] SparseTensor `ids`, the combined rows of `params` [n, d] (each
    times its weight): "sum", "mean" (by the sum of weights) or "sqrtn" (by the root of the sum
    of squared weights). Ids < 0 and weights <= 0 are dropped; a row left empty is zero."""
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    keep = tf.greater_equal(ids.values, 0)
    if weights is not None:
        keep = tf.logical_and(keep, tf.greater(weights.values, 0))
    rows = tf.boolean_mask(ids.indices[:, 0], keep)
    id_values = tf.boolean_mask(ids.values, keep)
    batch = ids.dense_shape[0]
    embedded = tf.gather(params, id_values)
    if weights is None:
        w = tf.ones_like(id_values, dtype=params.dtype)
    else:
        w = tf.cast(tf.boolean_mask(weights.values, keep), params.dtype)
    total = tf.unsorted_segment_sum(embedded * w[:, None], rows, batch)
    if combiner == "sum":
        return total
    if combiner == "mean":
        scale = tf.unsorted_segment_sum(w, rows, batch)
    else:
        scale = tf.sqrt(tf.unsorted_segment_sum(w * w, rows, batch))
    return tf.math.divide_no_nan(total, scale[:, None])
