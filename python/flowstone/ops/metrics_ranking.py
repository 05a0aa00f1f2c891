"""tf.metrics.average_precision_at_k (and its alias sparse_average_precision_at_k): the
streaming mean over rows of the average precision of each row's k highest-scored classes,
composed op for op as TensorFlow's, with the same variable names."""

from flowstone import dtypes as _dtypes
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops.metrics_impl import (_add_to_collections, _at_k_name, _broadcast_weights,
                                        _metric_variable, _tf)
from flowstone.util.tf_export import tf_export


def _average_precision_per_row(labels, predictions_idx, k):
    """For each row: sum over ranks i <= k with a relevant prediction of precision@i, over
    min(number of labels, k). Negative labels are padding."""
    tf = _tf()
    with tf.name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        if isinstance(labels, SparseTensor):
            labels = tf.sparse.to_dense(labels, default_value=-1)
        labels = tf.cast(labels, _dtypes.int64)
        if labels.shape.rank == predictions_idx.shape.rank - 1:
            labels = tf.expand_dims(labels, -1)
        # relevant[..., i]: whether the i-th prediction is one of the row's labels.
        matches = tf.equal(tf.expand_dims(predictions_idx, -1), tf.expand_dims(labels, -2))
        relevant = tf.cast(tf.reduce_any(matches, axis=-1), _dtypes.float64,
                           name="relevant_per_k")
        tp_per_k = tf.cumsum(relevant, axis=-1, name="tp_per_k")
        retrieved_per_k = tf.cumsum(tf.ones_like(relevant), axis=-1, name="retrieved_per_k")
        precision_per_k = tf.divide(tp_per_k, retrieved_per_k, name="precision_per_k")
        precision_sum = tf.reduce_sum(tf.multiply(precision_per_k, relevant), axis=-1,
                                      name="precision_sum")
        # The row's non-negative labels, at most k of them (a repeated label counts each
        # time here, as in TensorFlow, though it is one hit above).
        num_relevant = tf.minimum(
            tf.reduce_sum(tf.cast(tf.greater_equal(labels, 0), _dtypes.int64), axis=-1),
            tf.constant(k, _dtypes.int64), name="num_relevant")
        return tf.divide(precision_sum, tf.cast(num_relevant, _dtypes.float64), name=scope)


@tf_export("metrics.average_precision_at_k", "metrics.sparse_average_precision_at_k")
def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The mean (weighted by `weights`) over rows of the average precision at k: predictions
    [D1, ..., DN, num_classes] scores, labels [D1, ..., DN, num_labels] (or [D1, ..., DN], or
    a SparseTensor) class ids. Returns (value, update_op); the state is the total average
    precision and the largest possible total (the rows, or their weights)."""
    tf = _tf()
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with tf.name_scope(name, _at_k_name("average_precision", k),
                       (predictions, labels, weights)) as scope:
        _, predictions_idx = tf.nn.top_k(predictions, k)
        predictions_idx = tf.cast(predictions_idx, _dtypes.int64)
        average_precision = _average_precision_per_row(labels, predictions_idx, k)
        if weights is not None:
            weights = _broadcast_weights(tf.cast(weights, _dtypes.float64),
                                         average_precision)
            average_precision = tf.multiply(average_precision, weights)
        with tf.name_scope(None, "max", (average_precision,)) as max_scope:
            max_var = _metric_variable([], _dtypes.float64, name=max_scope)
            if weights is None:
                batch_max = tf.cast(tf.size(average_precision, name="batch_max"),
                                    _dtypes.float64)
            else:
                batch_max = tf.reduce_sum(weights, name="batch_max")
            max_update = tf.assign_add(max_var, batch_max, name="update")
        with tf.name_scope(None, "total", (average_precision,)) as total_scope:
            total_var = _metric_variable([], _dtypes.float64, name=total_scope)
            batch_total = tf.reduce_sum(average_precision, name="batch_total")
            total_update = tf.assign_add(total_var, batch_total, name="update")
        value = tf.div_no_nan(total_var, max_var, name="mean")
        update_op = tf.div_no_nan(total_update, max_update, name=scope)
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op
