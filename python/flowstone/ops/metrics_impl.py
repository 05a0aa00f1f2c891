"""tf.metrics (tf.compat.v1.metrics): streaming evaluation metrics.

Each metric returns `(value, update_op)`. Its state lives in local variables (collections
LOCAL_VARIABLES and METRIC_VARIABLES, reset by `tf.local_variables_initializer()`); `update_op`
adds a batch to the state and returns the metric over everything seen so far, `value` reads it
without updating. As in TensorFlow, the metrics are compositions of ordinary ops built here, op
for op, so their variable and op names (`accuracy/total`, `accuracy/update_op`) and their values
match TensorFlow's.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _tf():
    """The public namespace, at call time (this module is imported while it is being built)."""
    import flowstone
    return flowstone


def _metric_variable(shape, dtype, validate_shape=True, name=None):
    """A zero-initialized local variable that holds a metric's running state."""
    tf = _tf()
    keys = _ops.GraphKeys
    return tf.Variable(lambda: tf.zeros(shape, dtype), trainable=False,
                       collections=[keys.LOCAL_VARIABLES, keys.METRIC_VARIABLES],
                       validate_shape=validate_shape, name=name)


def _add_to_collections(collections, value):
    for key in collections or ():
        _ops.add_to_collection(key, value)


def _remove_squeezable_dimensions(predictions, labels, weights):
    """TensorFlow's alignment of ranks, from static shapes: a trailing dimension of size 1 is
    squeezed from labels or predictions when their ranks differ by one, and weights lose a
    trailing 1 or gain one so that they broadcast against predictions."""
    tf = _tf()
    predictions = _ops.convert_to_tensor(predictions)
    if labels is not None:
        labels = _ops.convert_to_tensor(labels)
        p_rank, l_rank = predictions.shape.rank, labels.shape.rank
        if p_rank is not None and l_rank is not None:
            if p_rank - l_rank == 1 and predictions.shape.as_list()[-1] in (1, None):
                predictions = tf.squeeze(predictions, [-1])
            elif l_rank - p_rank == 1 and labels.shape.as_list()[-1] in (1, None):
                labels = tf.squeeze(labels, [-1])
    if weights is None:
        return predictions, labels, None
    weights = _ops.convert_to_tensor(weights)
    p_rank, w_rank = predictions.shape.rank, weights.shape.rank
    if p_rank is not None and w_rank is not None and w_rank != 0:
        if w_rank - p_rank == 1:
            weights = tf.squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = tf.expand_dims(weights, [-1])
    return predictions, labels, weights


def _broadcast_weights(weights, values):
    """`weights` broadcast to the shape of `values`; the weights' dimensions must each be 1 or
    equal to the values' (TensorFlow's `broadcast_weights`)."""
    tf = _tf()
    weights = _ops.convert_to_tensor(weights)
    values = _ops.convert_to_tensor(values)
    if weights.shape.is_fully_defined() and values.shape.is_fully_defined() and \
            weights.shape.as_list() == values.shape.as_list():
        return weights
    w, v = weights.shape, values.shape
    if w.rank is not None and v.rank is not None and w.rank != 0:
        if w.rank != v.rank or any(a is not None and b is not None and a not in (1, b)
                                   for a, b in zip(w.as_list(), v.as_list())):
            raise ValueError(f"weights can not be broadcast to values. values.shape={v}. "
                             f"weights.shape={w}.")
    return tf.multiply(weights, tf.ones_like(values), name="broadcast_weights")


def _safe_ratio(numerator, denominator, name):
    """numerator / denominator where the denominator is positive, 0 elsewhere."""
    tf = _tf()
    return tf.where(tf.greater(denominator, 0), tf.truediv(numerator, denominator),
                    tf.zeros_like(numerator), name=name)


@tf_export("metrics.mean")
def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of `values` over every batch the update op has seen."""
    tf = _tf()
    with tf.variable_scope(name, "mean", (values, weights)):
        values = tf.cast(values, _dtypes.float32)
        total = _metric_variable([], _dtypes.float32, name="total")
        count = _metric_variable([], _dtypes.float32, name="count")
        if weights is None:
            num_values = tf.cast(tf.size(values), _dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = _broadcast_weights(tf.cast(weights, _dtypes.float32), values)
            values = tf.multiply(values, weights)
            num_values = tf.reduce_sum(weights)
        update_total = tf.assign_add(total, tf.reduce_sum(values))
        with tf.control_dependencies([values]):
            update_count = tf.assign_add(count, num_values)
        value = tf.div_no_nan(total, tf.maximum(count, 0), name="value")
        update_op = tf.div_no_nan(update_total, tf.maximum(update_count, 0), name="update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


@tf_export("metrics.mean_tensor")
def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The elementwise (weighted) mean of `values` over every batch seen: a tensor of their
    shape."""
    tf = _tf()
    with tf.variable_scope(name, "mean", (values, weights)):
        values = tf.cast(values, _dtypes.float32)
        total = _metric_variable(values.shape, _dtypes.float32, name="total_tensor")
        count = _metric_variable(values.shape, _dtypes.float32, name="count_tensor")
        num_values = tf.ones_like(values)
        if weights is not None:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = _broadcast_weights(tf.cast(weights, _dtypes.float32), values)
            values = tf.multiply(values, weights)
            num_values = tf.multiply(num_values, weights)
        update_total = tf.assign_add(total, values)
        with tf.control_dependencies([values]):
            update_count = tf.assign_add(count, num_values)
        value = tf.div_no_nan(total, tf.maximum(count, 0), name="value")
        update_op = tf.identity(
            tf.div_no_nan(update_total, tf.maximum(update_count, 0)), name="update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


@tf_export("metrics.accuracy")
def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """How often `predictions` equal `labels`, weighted."""
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.shape.assert_is_compatible_with(labels.shape)
    if labels.dtype != predictions.dtype:
        predictions = tf.cast(predictions, labels.dtype)
    is_correct = tf.cast(tf.equal(predictions, labels), _dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


@tf_export("metrics.mean_absolute_error")
def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    errors = tf.abs(tf.subtract(predictions, labels))
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


@tf_export("metrics.mean_squared_error")
def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    errors = tf.squared_difference(predictions, labels)
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


@tf_export("metrics.root_mean_squared_error")
def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    value = tf.sqrt(mse)
    update_op = tf.sqrt(update_mse)
    _add_to_collections(metrics_collections, value)
    _add_to_collections(updates_collections, update_op)
    return value, update_op


@tf_export("metrics.mean_relative_error")
def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of |predictions - labels| / normalizer (0 where the normalizer is 0)."""
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions, normalizer, _ = _remove_squeezable_dimensions(predictions, normalizer, None)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative_errors = tf.where(tf.equal(normalizer, 0.0), tf.zeros_like(labels),
                               tf.truediv(tf.abs(labels - predictions), normalizer))
    return mean(relative_errors, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


@tf_export("metrics.mean_cosine_distance")
def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """The mean of 1 - sum(labels * predictions, dim); the inputs are expected unit-normalized
    along `dim`, as in TensorFlow."""
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    radial_diffs = tf.reduce_sum(tf.multiply(predictions, labels), axis=[dim], keepdims=True)
    value, update_op = mean(radial_diffs, weights, None, None,
                            name or "mean_cosine_distance")
    value = tf.subtract(1.0, value, name="value")
    update_op = tf.subtract(1.0, update_op, name="update_op")
    _add_to_collections(metrics_collections, value)
    _add_to_collections(updates_collections, update_op)
    return value, update_op


@tf_export("metrics.percentage_below")
def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The fraction of `values` below `threshold`."""
    tf = _tf()
    is_below = tf.cast(tf.less(values, threshold), _dtypes.float32)
    return mean(is_below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


# ---------------------------------------------------------------------------------------------
# Counts of binary outcomes.

def _count_condition(values, weights, metrics_collections, updates_collections):
    """Sums `values` (bool, weighted) into a `count` variable."""
    tf = _tf()
    count = _metric_variable([], _dtypes.float32, name="count")
    values = tf.cast(values, _dtypes.float32)
    if weights is not None:
        weights = tf.cast(weights, _dtypes.float32)
        values = tf.multiply(values, weights)
    value = tf.identity(count)
    update_op = tf.assign_add(count, tf.reduce_sum(values))
    _add_to_collections(metrics_collections, value)
    _add_to_collections(updates_collections, update_op)
    return value, update_op


def _binary_count(default_name, label_is, prediction_is):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        tf = _tf()
        with tf.variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                tf.cast(predictions, _dtypes.bool), tf.cast(labels, _dtypes.bool), weights)
            condition = tf.logical_and(tf.equal(labels, label_is),
                                       tf.equal(predictions, prediction_is))
            return _count_condition(condition, weights, metrics_collections,
                                    updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = (f"The (weighted) number of {default_name.replace('_', ' ')}: labels "
                      f"{label_is} and predictions {prediction_is}, as bools.")
    return tf_export(f"metrics.{default_name}")(metric)


true_positives = _binary_count("true_positives", True, True)
false_positives = _binary_count("false_positives", False, True)
true_negatives = _binary_count("true_negatives", False, False)
false_negatives = _binary_count("false_negatives", True, False)


def _true_positive_ratio(default_name, other_count, doc):
    """precision or recall: true_positives / (true_positives + the other count), 0 when both
    are 0."""

    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        tf = _tf()
        with tf.variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                tf.cast(predictions, _dtypes.bool), tf.cast(labels, _dtypes.bool), weights)
            tp, update_tp = true_positives(labels, predictions, weights)
            other, update_other = other_count(labels, predictions, weights)
            value = _safe_ratio(tp, tp + other, "value")
            update_op = _safe_ratio(update_tp, update_tp + update_other, "update_op")
            _add_to_collections(metrics_collections, value)
            _add_to_collections(updates_collections, update_op)
            return value, update_op

    metric.__name__ = default_name
    metric.__doc__ = doc
    return tf_export(f"metrics.{default_name}")(metric)


precision = _true_positive_ratio(
    "precision", false_positives, "true_positives / (true_positives + false_positives).")
recall = _true_positive_ratio(
    "recall", false_negatives, "true_positives / (true_positives + false_negatives).")


# ---------------------------------------------------------------------------------------------
# Counts at thresholds: the basis of AUC and the *_at_thresholds metrics.

def _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None,
                                    includes=("tp", "fn", "tn", "fp")):
    """Per threshold, the weighted counts of predictions above it (positive) against bool
    labels. Returns ({key: variable}, {key: update op}), each of shape [len(thresholds)]."""
    tf = _tf()
    predictions, labels, weights = _remove_squeezable_dimensions(
        tf.cast(predictions, _dtypes.float32), tf.cast(labels, _dtypes.bool), weights)
    checks = [
        tf.assert_greater_equal(predictions, tf.cast(0.0, predictions.dtype),
                                message="predictions must be in [0, 1]"),
        tf.assert_less_equal(predictions, tf.cast(1.0, predictions.dtype),
                             message="predictions must be in [0, 1]"),
    ]
    with tf.control_dependencies(checks):
        predictions = tf.identity(predictions)
    num_thresholds = len(thresholds)
    predictions_2d = tf.reshape(predictions, [-1, 1])
    labels_2d = tf.reshape(tf.cast(labels, _dtypes.bool), [1, -1])
    num_predictions = tf.shape(predictions_2d)[0]
    thresholds_tiled = tf.tile(tf.expand_dims(tf.constant(thresholds, _dtypes.float32), 1),
                               tf.stack([1, num_predictions]))
    predictions_tiled = tf.tile(tf.transpose(predictions_2d), [num_thresholds, 1])
    prediction_is_pos = tf.greater(predictions_tiled, thresholds_tiled)
    prediction_is_neg = tf.logical_not(prediction_is_pos)
    label_is_pos = tf.tile(labels_2d, [num_thresholds, 1])
    label_is_neg = tf.logical_not(label_is_pos)
    weights_tiled = None
    if weights is not None:
        weights = _broadcast_weights(tf.cast(weights, _dtypes.float32), predictions)
        weights_tiled = tf.tile(tf.reshape(weights, [1, -1]), [num_thresholds, 1])
    conditions = {
        "tp": (label_is_pos, prediction_is_pos, "true_positives"),
        "fn": (label_is_pos, prediction_is_neg, "false_negatives"),
        "tn": (label_is_neg, prediction_is_neg, "true_negatives"),
        "fp": (label_is_neg, prediction_is_pos, "false_positives"),
    }
    values, update_ops = {}, {}
    for key in includes:
        if key not in conditions:
            raise ValueError(f"Invalid key: {key}")
        label_cond, prediction_cond, variable_name = conditions[key]
        variable = _metric_variable([num_thresholds], _dtypes.float32, name=variable_name)
        hits = tf.cast(tf.logical_and(label_cond, prediction_cond), _dtypes.float32)
        if weights_tiled is not None:
            hits = tf.multiply(hits, weights_tiled)
        update_ops[key] = tf.assign_add(variable, tf.reduce_sum(hits, 1))
        values[key] = variable
    return values, update_ops


def _at_thresholds(public_name, default_name, key):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        tf = _tf()
        with tf.variable_scope(name, default_name, (predictions, labels, weights)):
            values, update_ops = _confusion_matrix_at_thresholds(
                labels, predictions, thresholds, weights, includes=(key,))
            value = tf.identity(values[key])
            _add_to_collections(metrics_collections, value)
            _add_to_collections(updates_collections, update_ops[key])
            return value, update_ops[key]

    metric.__name__ = public_name
    metric.__doc__ = f"The (weighted) {key} count at each threshold: a vector."
    return tf_export(f"metrics.{public_name}")(metric)


true_positives_at_thresholds = _at_thresholds("true_positives_at_thresholds", "true_positives", "tp")
false_positives_at_thresholds = _at_thresholds("false_positives_at_thresholds", "false_positives", "fp")
true_negatives_at_thresholds = _at_thresholds("true_negatives_at_thresholds", "true_negatives", "tn")
false_negatives_at_thresholds = _at_thresholds("false_negatives_at_thresholds", "false_negatives", "fn")


def _ratio_at_thresholds(default_name, other_key):
    """precision_at_thresholds or recall_at_thresholds: tp / (tp + other) per threshold, with
    TensorFlow's epsilon in the denominator."""

    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        tf = _tf()
        with tf.variable_scope(name, default_name, (predictions, labels, weights)):
            values, update_ops = _confusion_matrix_at_thresholds(
                labels, predictions, thresholds, weights, includes=("tp", other_key))
            prefix = default_name.split("_")[0] + "_"

            def compute(counts, op_name):
                tp = counts["tp"]
                return tf.truediv(tp, 1e-7 + tp + counts[other_key], name=prefix + op_name)

            value = compute(values, "value")
            update_op = compute(update_ops, "update_op")
            _add_to_collections(metrics_collections, value)
            _add_to_collections(updates_collections, update_op)
            return value, update_op

    metric.__name__ = default_name
    return tf_export(f"metrics.{default_name}")(metric)


precision_at_thresholds = _ratio_at_thresholds("precision_at_thresholds", "fp")
recall_at_thresholds = _ratio_at_thresholds("recall_at_thresholds", "fn")


def _auc_thresholds(num_thresholds):
    """TensorFlow's evenly spaced thresholds, with the ends just outside [0, 1] so that
    predictions of exactly 0 and 1 fall inside the first and last bucket."""
    epsilon = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - epsilon] + inner + [1.0 + epsilon]


@tf_export("metrics.auc")
def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC or precision-recall curve, by a Riemann sum over thresholds
    (`trapezoidal`, `minoring`, `majoring`) or, for PR, `careful_interpolation`."""
    tf = _tf()
    if curve not in ("ROC", "PR"):
        raise ValueError(f'curve must be either ROC or PR, {curve} unknown')
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with tf.variable_scope(name, "auc", (labels, predictions, weights)):
        if thresholds is not None:
            thresholds = sorted(float(t) for t in thresholds)
            num_thresholds = len(thresholds) + 2
            thresholds = [0.0 - 1e-7] + thresholds + [1.0 + 1e-7]
        else:
            thresholds = _auc_thresholds(num_thresholds)
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)
        epsilon = 1.0e-6
        n = num_thresholds

        def interpolate_pr_auc(tp, fp, fn):
            # Davis & Goadrich (2006): precision interpolated between thresholds as a function
            # of the true positives, integrated exactly.
            dtp = tp[:n - 1] - tp[1:]
            p = tp + fp
            prec_slope = tf.div_no_nan(dtp, tf.maximum(p[:n - 1] - p[1:], 0), name="prec_slope")
            intercept = tp[1:] - tf.multiply(prec_slope, p[1:])
            safe_p_ratio = tf.where(
                tf.logical_and(tf.greater(p[:n - 1], 0), tf.greater(p[1:], 0)),
                tf.div_no_nan(p[:n - 1], tf.maximum(p[1:], 0), name="recall_relative_ratio"),
                tf.ones_like(p[1:]))
            return tf.reduce_sum(
                tf.div_no_nan(prec_slope * (dtp + intercept * tf.log(safe_p_ratio)),
                              tf.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
                name="interpolate_pr_auc")

        def compute_auc(tp, fn, tn, fp, op_name):
            if curve == "PR" and summation_method == "careful_interpolation":
                return interpolate_pr_auc(tp, fp, fn)
            rec = tf.truediv(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                x = tf.truediv(fp, fp + tn + epsilon)
                y = rec
            else:
                x = rec
                y = tf.truediv(tp + epsilon, tp + fp + epsilon)
            if summation_method in ("trapezoidal", "careful_interpolation"):
                heights = (y[:n - 1] + y[1:]) / 2.0
            elif summation_method == "minoring":
                heights = tf.minimum(y[:n - 1], y[1:])
            else:
                heights = tf.maximum(y[:n - 1], y[1:])
            return tf.reduce_sum(tf.multiply(x[:n - 1] - x[1:], heights), name=op_name)

        value = compute_auc(values["tp"], values["fn"], values["tn"], values["fp"], "value")
        update_op = compute_auc(update_ops["tp"], update_ops["fn"], update_ops["tn"],
                                update_ops["fp"], "update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


def _operating_point_thresholds(num_thresholds, upper):
    epsilon = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - epsilon] + inner + [upper]


def _check_rate(name, value, num_thresholds):
    if value < 0 or value > 1:
        raise ValueError(f"`{name}` must be in the range [0, 1]. Currently, `{name}` is "
                         f"{value}.")
    if num_thresholds <= 1:
        raise ValueError("`num_thresholds` must be > 1.")


@tf_export("metrics.sensitivity_at_specificity")
def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity at the first threshold whose specificity is closest to the target."""
    tf = _tf()
    _check_rate("specificity", specificity, num_thresholds)
    with tf.variable_scope(name, "sensitivity_at_specificity", (predictions, labels, weights)):
        epsilon = 1e-7
        thresholds = _operating_point_thresholds(num_thresholds, 1.0 + epsilon)
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)

        def compute(tp, tn, fp, fn, op_name):
            specificities = tf.truediv(tn, tn + fp + epsilon)
            index = tf.cast(tf.argmin(tf.abs(specificities - specificity), 0), _dtypes.int32)
            return tf.truediv(tp[index], tp[index] + fn[index] + epsilon, name=op_name)

        value = compute(values["tp"], values["tn"], values["fp"], values["fn"], "value")
        update_op = compute(update_ops["tp"], update_ops["tn"], update_ops["fp"],
                            update_ops["fn"], "update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


@tf_export("metrics.specificity_at_sensitivity")
def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the LAST threshold whose sensitivity is closest to the target (and,
    as in TensorFlow, a top threshold just below 1)."""
    tf = _tf()
    _check_rate("sensitivity", sensitivity, num_thresholds)
    with tf.variable_scope(name, "specificity_at_sensitivity", (predictions, labels, weights)):
        epsilon = 1e-7
        thresholds = _operating_point_thresholds(num_thresholds, 1.0 - epsilon)
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)

        def compute(tp, tn, fp, fn, op_name):
            sensitivities = tf.truediv(tp, tp + fn + epsilon)
            distance = tf.abs(sensitivities - sensitivity)
            # argmax of the running count of ties picks the last of them.
            at_min = tf.cast(tf.equal(distance, tf.reduce_min(distance)), _dtypes.int64)
            index = tf.cast(tf.argmax(tf.cumsum(at_min), 0), _dtypes.int32)
            return tf.truediv(tn[index], tn[index] + fp[index] + epsilon, name=op_name)

        value = compute(values["tp"], values["tn"], values["fp"], values["fn"], "value")
        update_op = compute(update_ops["tp"], update_ops["tn"], update_ops["fp"],
                            update_ops["fn"], "update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


# ---------------------------------------------------------------------------------------------
# Confusion matrices: mean IoU and per-class accuracy.

@tf_export("math.confusion_matrix", "confusion_matrix")
def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=_dtypes.int32,
                     name=None):
    """The [num_classes, num_classes] matrix whose (i, j) entry counts (or sums the weights of)
    the examples with label i and prediction j. num_classes defaults to the largest label or
    prediction plus one."""
    tf = _tf()
    with tf.name_scope(name, "confusion_matrix", (predictions, labels, num_classes, weights)):
        predictions, labels, _ = _remove_squeezable_dimensions(
            tf.cast(predictions, _dtypes.int64), tf.cast(labels, _dtypes.int64), None)
        checks = [
            tf.assert_non_negative(labels, message="`labels` contains negative values"),
            tf.assert_non_negative(predictions,
                                   message="`predictions` contains negative values"),
        ]
        if num_classes is None:
            num_classes = tf.maximum(tf.reduce_max(predictions), tf.reduce_max(labels)) + 1
        else:
            num_classes = tf.cast(num_classes, _dtypes.int64)
            checks.append(tf.assert_less(labels, num_classes, message="`labels` out of bound"))
            checks.append(tf.assert_less(predictions, num_classes,
                                         message="`predictions` out of bound"))
        with tf.control_dependencies(checks):
            indices = tf.stack([tf.reshape(labels, [-1]), tf.reshape(predictions, [-1])], axis=1)
        if weights is None:
            values = tf.ones_like(tf.reshape(predictions, [-1]), dtype)
        else:
            values = tf.cast(tf.reshape(weights, [-1]), dtype)
        shape = tf.stack([num_classes, num_classes])
        return tf.scatter_nd(indices, values, shape)


def _streaming_confusion_matrix(labels, predictions, num_classes, weights=None):
    tf = _tf()
    total_cm = _metric_variable([num_classes, num_classes], _dtypes.float64,
                                name="total_confusion_matrix")
    predictions = tf.reshape(tf.cast(predictions, _dtypes.int64), [-1])
    labels = tf.reshape(tf.cast(labels, _dtypes.int64), [-1])
    if weights is not None:
        weights = tf.reshape(weights, [-1])
    current_cm = confusion_matrix(labels, predictions, num_classes, weights=weights,
                                  dtype=_dtypes.float64)
    return total_cm, tf.assign_add(total_cm, current_cm)


@tf_export("metrics.mean_iou")
def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over classes of intersection / union, over classes that occur."""
    tf = _tf()
    with tf.variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions = _ops.convert_to_tensor(predictions)
        labels = _ops.convert_to_tensor(labels)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total_cm, update_op = _streaming_confusion_matrix(labels, predictions, num_classes,
                                                          weights)

        def compute_mean_iou(cm, op_name):
            sum_over_row = tf.cast(tf.reduce_sum(cm, 0), _dtypes.float32)
            sum_over_col = tf.cast(tf.reduce_sum(cm, 1), _dtypes.float32)
            cm_diag = tf.cast(tf.matrix_diag_part(cm), _dtypes.float32)
            denominator = sum_over_row + sum_over_col - cm_diag
            num_valid = tf.reduce_sum(tf.cast(tf.not_equal(denominator, 0), _dtypes.float32))
            denominator = tf.where(tf.greater(denominator, 0), denominator,
                                   tf.ones_like(denominator))
            iou = tf.truediv(cm_diag, denominator)
            return tf.where(tf.greater(num_valid, 0),
                            tf.reduce_sum(iou, name="mean_iou") / num_valid, 0.0, name=op_name)

        value = compute_mean_iou(total_cm, "mean_iou")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


@tf_export("metrics.mean_per_class_accuracy")
def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over classes of the fraction of each class's examples predicted correctly."""
    tf = _tf()
    with tf.variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = tf.cast(labels, _dtypes.int64)
        if labels.shape.rank is not None and labels.shape.rank > 1:
            labels = tf.reshape(labels, [-1])
        predictions = tf.reshape(tf.cast(predictions, _dtypes.int64), [-1])
        total = _metric_variable([num_classes], _dtypes.float32, name="total")
        count = _metric_variable([num_classes], _dtypes.float32, name="count")
        ones = tf.ones([tf.size(labels)], _dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = tf.cast(predictions, labels.dtype)
        is_correct = tf.cast(tf.equal(predictions, labels), _dtypes.float32)
        if weights is not None:
            weights = tf.reshape(tf.cast(weights, _dtypes.float32), [-1])
            ones = tf.multiply(ones, weights)
            is_correct = tf.multiply(is_correct, weights)
        update_total = tf.scatter_add(total, labels, ones)
        update_count = tf.scatter_add(count, labels, is_correct)

        def compute(count_t, total_t, op_name):
            per_class = tf.where(tf.greater(total_t, 0), tf.truediv(count_t, total_t),
                                 tf.zeros_like(total_t))
            return tf.reduce_mean(per_class, name=op_name)

        value = compute(count, total, "mean_accuracy")
        update_op = compute(update_count, update_total, "update_op")
        _add_to_collections(metrics_collections, value)
        _add_to_collections(updates_collections, update_op)
        return value, update_op


# ---------------------------------------------------------------------------------------------
# Top-k precision and recall for multi-class and multi-label problems.

def _at_k_name(name, k=None, class_id=None):
    if k is not None:
        name = f"{name}_at_{k}"
    else:
        name = f"{name}_at_k"
    if class_id is not None:
        name = f"{name}_class{class_id}"
    return name


def _top_k_hits(labels, predictions_idx, num_classes, class_id):
    """Multi-hot matrices [batch, classes] of the labels and the top-k predictions, limited to
    `class_id` when given. Labels outside [0, num_classes) (such as -1 padding) are ignored,
    as TensorFlow's set operations ignore them."""
    tf = _tf()
    labels = tf.cast(labels, _dtypes.int64)
    if labels.shape.rank == predictions_idx.shape.rank - 1:
        labels = tf.expand_dims(labels, -1)
    label_hot = tf.reduce_max(tf.one_hot(labels, num_classes, dtype=_dtypes.float32), axis=-2)
    pred_hot = tf.reduce_max(tf.one_hot(tf.cast(predictions_idx, _dtypes.int64), num_classes,
                                        dtype=_dtypes.float32), axis=-2)
    if class_id is not None:
        label_hot = label_hot[..., class_id:class_id + 1]
        pred_hot = pred_hot[..., class_id:class_id + 1]
    return label_hot, pred_hot


def _weighted_row_sum(hits, weights):
    tf = _tf()
    per_row = tf.reduce_sum(hits, axis=-1)
    if weights is not None:
        weights = _broadcast_weights(tf.cast(weights, _dtypes.float32), per_row)
        per_row = tf.multiply(per_row, weights)
    return tf.reduce_sum(per_row)


def _top_k_metric(default_name, second_name, second_hits):
    """precision_at_top_k / recall_at_top_k: tp / (tp + fp) or tp / (tp + fn) over the k
    predicted classes of each row."""

    def metric(labels, predictions_idx, k=None, class_id=None, weights=None,
               metrics_collections=None, updates_collections=None, name=None):
        tf = _tf()
        with tf.name_scope(name, _at_k_name(default_name, k, class_id),
                           (predictions_idx, labels, weights)) as scope:
            predictions_idx = tf.cast(predictions_idx, _dtypes.int64)
            if k is None:
                k = predictions_idx.shape.as_list()[-1]
            elif predictions_idx.shape.as_list()[-1] not in (None, k):
                raise ValueError(f"predictions_idx must have last dimension {k}, got "
                                 f"{predictions_idx.shape}.")
            num_classes = _top_k_num_classes(labels, predictions_idx, class_id)
            label_hot, pred_hot = _top_k_hits(labels, predictions_idx, num_classes, class_id)
            tp_batch = _weighted_row_sum(label_hot * pred_hot, weights)
            other_batch = _weighted_row_sum(second_hits(label_hot, pred_hot), weights)
            tp_var = _metric_variable([], _dtypes.float64,
                                      name=_at_k_name("true_positive", k, class_id))
            other_var = _metric_variable([], _dtypes.float64,
                                         name=_at_k_name(second_name, k, class_id))
            update_tp = tf.assign_add(tp_var, tf.cast(tp_batch, _dtypes.float64))
            update_other = tf.assign_add(other_var, tf.cast(other_batch, _dtypes.float64))
            value = tf.div_no_nan(tp_var, tp_var + other_var, name=scope)
            update_op = tf.div_no_nan(update_tp, update_tp + update_other, name="update")
            _add_to_collections(metrics_collections, value)
            _add_to_collections(updates_collections, update_op)
            return value, update_op

    metric.__name__ = default_name
    return metric


def _top_k_num_classes(labels, predictions_idx, class_id):
    """How wide the multi-hot matrices must be: past every label and predicted index."""
    tf = _tf()
    largest = tf.maximum(tf.reduce_max(tf.cast(labels, _dtypes.int64)),
                         tf.reduce_max(predictions_idx))
    width = tf.cast(tf.maximum(largest + 1, 1), _dtypes.int32)
    if class_id is not None:
        width = tf.maximum(width, class_id + 1)
    return width


precision_at_top_k = tf_export("metrics.precision_at_top_k")(_top_k_metric(
    "precision", "false_positive", lambda label_hot, pred_hot: pred_hot * (1.0 - label_hot)))
recall_at_top_k = tf_export("metrics.recall_at_top_k")(_top_k_metric(
    "recall", "false_negative", lambda label_hot, pred_hot: label_hot * (1.0 - pred_hot)))


@tf_export("metrics.precision_at_k", "metrics.sparse_precision_at_k")
def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Of the k highest-scored classes of each row, the fraction that are among its labels."""
    tf = _tf()
    with tf.name_scope(name, _at_k_name("precision", k, class_id),
                       (predictions, labels, weights)) as scope:
        _, top_k_idx = tf.nn.top_k(predictions, k)
        return precision_at_top_k(labels, top_k_idx, k, class_id, weights,
                                  metrics_collections, updates_collections, name=scope)


@tf_export("metrics.recall_at_k")
def recall_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """Of each row's labels, the fraction found among its k highest-scored classes."""
    tf = _tf()
    with tf.name_scope(name, _at_k_name("recall", k, class_id),
                       (predictions, labels, weights)) as scope:
        _, top_k_idx = tf.nn.top_k(predictions, k)
        return recall_at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections,
                               updates_collections, name=scope)
