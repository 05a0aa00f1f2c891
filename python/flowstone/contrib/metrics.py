"""tf.contrib.metrics: TF1's streaming metrics, which are tf.metrics with the contrib argument
order (predictions before labels), and aggregate_metrics / aggregate_metric_map, which split
(value, update_op) pairs. Each returns tf.metrics' (value, update_op) and local variables."""

import flowstone as tf

__all__ = ["aggregate_metrics", "aggregate_metric_map", "streaming_accuracy", "streaming_mean",
           "streaming_mean_tensor", "streaming_precision", "streaming_recall", "streaming_auc",
           "streaming_mean_absolute_error", "streaming_mean_squared_error",
           "streaming_root_mean_squared_error", "streaming_mean_relative_error",
           "streaming_mean_cosine_distance", "streaming_mean_iou", "streaming_percentage_less",
           "streaming_true_positives", "streaming_true_negatives", "streaming_false_positives",
           "streaming_false_negatives", "streaming_sensitivity_at_specificity",
           "streaming_specificity_at_sensitivity", "streaming_precision_at_thresholds",
           "streaming_recall_at_thresholds", "streaming_sparse_precision_at_k",
           "streaming_sparse_recall_at_k", "streaming_pearson_correlation", "f1_score"]


def aggregate_metrics(*value_update_tuples):
    """([values], [update_ops]) from (value, update_op) pairs."""
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


def aggregate_metric_map(names_to_tuples):
    """({name: value}, {name: update_op}) from {name: (value, update_op)}."""
    return ({name: pair[0] for name, pair in names_to_tuples.items()},
            {name: pair[1] for name, pair in names_to_tuples.items()})


def _swapped(metric_name):
    """tf.metrics.<metric_name> taking (predictions, labels, ...) in contrib's order (looked up
    when called: tf.metrics is filled in after tf.contrib loads)."""

    def streaming(predictions, labels, *args, **kwargs):
        # The arguments after the first two are in the same order in both.
        return getattr(tf.metrics, metric_name)(labels, predictions, *args, **kwargs)

    streaming.__name__ = "streaming_" + metric_name
    streaming.__doc__ = f"tf.metrics.{metric_name} with predictions before labels."
    return streaming


streaming_accuracy = _swapped("accuracy")
streaming_precision = _swapped("precision")
streaming_recall = _swapped("recall")
streaming_auc = _swapped("auc")
streaming_mean_absolute_error = _swapped("mean_absolute_error")
streaming_mean_squared_error = _swapped("mean_squared_error")
streaming_root_mean_squared_error = _swapped("root_mean_squared_error")
streaming_true_positives = _swapped("true_positives")
streaming_true_negatives = _swapped("true_negatives")
streaming_false_positives = _swapped("false_positives")
streaming_false_negatives = _swapped("false_negatives")
streaming_sensitivity_at_specificity = _swapped("sensitivity_at_specificity")
streaming_specificity_at_sensitivity = _swapped("specificity_at_sensitivity")
streaming_precision_at_thresholds = _swapped("precision_at_thresholds")
streaming_recall_at_thresholds = _swapped("recall_at_thresholds")
streaming_sparse_precision_at_k = _swapped("sparse_precision_at_k")
streaming_sparse_recall_at_k = _swapped("recall_at_k")


def streaming_mean(values, weights=None, metrics_collections=None, updates_collections=None,
                   name=None):
    return tf.metrics.mean(values, weights, metrics_collections, updates_collections, name)


def streaming_mean_tensor(values, weights=None, metrics_collections=None,
                          updates_collections=None, name=None):
    return tf.metrics.mean_tensor(values, weights, metrics_collections, updates_collections,
                                  name)


def streaming_mean_relative_error(predictions, labels, normalizer, weights=None,
                                  metrics_collections=None, updates_collections=None, name=None):
    return tf.metrics.mean_relative_error(labels, predictions, normalizer, weights,
                                          metrics_collections, updates_collections, name)


def streaming_mean_cosine_distance(predictions, labels, dim, weights=None,
                                   metrics_collections=None, updates_collections=None,
                                   name=None):
    return tf.metrics.mean_cosine_distance(labels, predictions, dim, weights,
                                           metrics_collections, updates_collections, name)


def streaming_mean_iou(predictions, labels, num_classes, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    return tf.metrics.mean_iou(labels, predictions, num_classes, weights, metrics_collections,
                               updates_collections, name)


def streaming_percentage_less(values, threshold, weights=None, metrics_collections=None,
                              updates_collections=None, name=None):
    return tf.metrics.percentage_below(values, threshold, weights, metrics_collections,
                                       updates_collections, name)


def streaming_pearson_correlation(predictions, labels, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """The Pearson correlation of predictions and labels over the stream (weighted), from
    streaming means of x, y, x^2, y^2 and x*y."""
    with tf.variable_scope(name, "pearson_r", (predictions, labels, weights)):
        x = tf.cast(predictions, tf.float64)
        y = tf.cast(labels, tf.float64)
        moments = {}
        updates = []
        for key, value in (("x", x), ("y", y), ("xx", x * x), ("yy", y * y), ("xy", x * y)):
            moments[key], update = tf.metrics.mean(value, weights, name=f"mean_{key}")
            updates.append(update)

        def correlation(m):
            covariance = m["xy"] - m["x"] * m["y"]
            return covariance / tf.sqrt((m["xx"] - m["x"] ** 2) * (m["yy"] - m["y"] ** 2))

        value = tf.cast(correlation(moments), tf.float32)
        with tf.control_dependencies(updates):
            update_op = tf.cast(correlation(moments), tf.float32)
        for key, tensor in ((metrics_collections, value), (updates_collections, update_op)):
            for collection in key or []:
                tf.add_to_collection(collection, tensor)
        return value, update_op


def f1_score(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
             updates_collections=None, name=None):
    """The best F1 over `num_thresholds` thresholds of the predicted probabilities."""
    with tf.variable_scope(name, "f1", (labels, predictions, weights)):
        thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - 1e-7] + thresholds + [1.0 + 1e-7]
        precision, precision_update = tf.metrics.precision_at_thresholds(
            labels, predictions, thresholds, weights, name="precision")
        recall, recall_update = tf.metrics.recall_at_thresholds(
            labels, predictions, thresholds, weights, name="recall")

        def best_f1(p, r):
            return tf.reduce_max(2.0 * p * r / tf.maximum(p + r, 1e-12))

        value = best_f1(precision, recall)
        update_op = best_f1(precision_update, recall_update)
        for key, tensor in ((metrics_collections, value), (updates_collections, update_op)):
            for collection in key or []:
                tf.add_to_collection(collection, tensor)
        return value, update_op
