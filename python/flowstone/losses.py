"""tf.losses: weighted, reduced losses collected in tf.GraphKeys.LOSSES.

Unlike TensorFlow, which computes these in float32 whatever the inputs, losses keep the dtype of
the predictions (logits), so float64 models get float64 losses.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "cosine_distance",
           "hinge_loss", "huber_loss", "log_loss", "mean_squared_error", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy", "add_loss", "get_losses",
           "get_regularization_losses", "get_regularization_loss", "get_total_loss",
           "mean_pairwise_squared_error"]


class Reduction:
    """How compute_weighted_loss reduces the weighted losses."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _m():
    from flowstone.ops import array_ops, math_ops, reduction_ops
    return math_ops, reduction_ops, array_ops


def _check_broadcastable(weights, values):
    """TensorFlow's rule for loss weights: a scalar, or the rank of the losses with each
    dimension 1 or equal to the loss's. Checked when the static shapes tell."""
    w, v = weights.shape, values.shape
    if w.rank is None or v.rank is None or w.rank == 0:
        return
    if w.rank != v.rank:
        raise ValueError(f"weights can not be broadcast to values. values.rank={v.rank}. "
                         f"weights.rank={w.rank}. values.shape={v}. weights.shape={w}.")
    for wd, vd in zip(w.as_list(), v.as_list()):
        if wd is not None and vd is not None and wd not in (1, vd):
            raise ValueError(f"weights can not be broadcast to values. values.shape={v}. "
                             f"weights.shape={w}.")


def _safe_divide(numerator, denominator):
    """numerator / denominator, or 0 where the denominator is 0 (no weight, no elements)."""
    math_ops, _, _ = _m()
    zero = math_ops.equal(denominator, 0.0)
    safe = math_ops.where_v2(zero, _ops.convert_to_tensor(1.0, dtype=denominator.dtype),
                             denominator)
    return math_ops.where_v2(zero, _ops.convert_to_tensor(0.0, dtype=numerator.dtype),
                             math_ops.divide(numerator, safe), name="value")


def _num_elements(losses):
    math_ops, _, array_ops = _m()
    return math_ops.cast(array_ops.size(losses), losses.dtype, name="num_elements")


def _num_present(losses, weights, weights_arg):
    """The number of losses with a nonzero weight (all of them for a nonzero Python float)."""
    math_ops, reduction_ops, array_ops = _m()
    if isinstance(weights_arg, float) and weights_arg != 0.0:
        return _num_elements(losses)
    with _ops.name_scope(None, "num_present"):
        present = math_ops.cast(math_ops.not_equal(weights, 0.0), losses.dtype)
        return reduction_ops.reduce_sum(math_ops.multiply(present, array_ops.ones_like(losses)))


def compute_weighted_loss(losses, weights=1.0, scope=None,
                          loss_collection=_ops.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights, reduced as `reduction` says, and added to loss_collection. The
    averaging reductions give 0 when there is nothing to average over."""
    Reduction.validate(reduction)
    math_ops, reduction_ops, array_ops = _m()
    with _ops.name_scope(scope, "weighted_loss"):
        losses = _ops.convert_to_tensor(losses)
        weights_arg = weights
        weights = _ops.convert_to_tensor(weights)
        if weights.dtype != losses.dtype:
            weights = math_ops.cast(weights, losses.dtype)
        _check_broadcastable(weights, losses)
        weighted = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduction_ops.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_divide(loss, reduction_ops.reduce_sum(
                    math_ops.multiply(array_ops.ones_like(losses), weights)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_divide(loss, _num_present(losses, weights, weights_arg))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_divide(loss, _num_elements(losses))
        add_loss(loss, loss_collection)
        return loss


def _require(**args):
    for arg, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{arg}` must not be None.")


def _predictions_and_labels(predictions, labels):
    """predictions as a tensor and labels cast to its dtype, with compatible shapes."""
    math_ops, _, _ = _m()
    predictions = _ops.convert_to_tensor(predictions, name="predictions")
    labels = _ops.convert_to_tensor(labels, name="labels")
    if labels.dtype != predictions.dtype:
        labels = math_ops.cast(labels, predictions.dtype)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
    return predictions, labels


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=_ops.GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    _require(labels=labels, predictions=predictions)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "absolute_difference") as scope:
        predictions, labels = _predictions_and_labels(predictions, labels)
        losses = math_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=_ops.GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels) ** 2, weighted and reduced."""
    _require(labels=labels, predictions=predictions)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "mean_squared_error") as scope:
        predictions, labels = _predictions_and_labels(predictions, labels)
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=_ops.GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """1 - sum(labels * predictions, axis): the cosine distance of unit-normalized inputs."""
    from flowstone.ops.nn_impl import _deprecated_lookup
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _require(labels=labels, predictions=predictions)
    math_ops, reduction_ops, _ = _m()
    with _ops.name_scope(scope, "cosine_distance_loss") as scope:
        predictions, labels = _predictions_and_labels(predictions, labels)
        losses = math_ops.subtract(1.0, reduction_ops.reduce_sum(
            math_ops.multiply(predictions, labels), axis=(axis,), keepdims=True))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=_ops.GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - y * logits) with 0/1 labels mapped to y = -1/+1."""
    _require(labels=labels, logits=logits)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "hinge_loss") as scope:
        logits, labels = _predictions_and_labels(logits, labels)
        signs = math_ops.subtract(math_ops.multiply(labels, 2.0), 1.0)
        losses = math_ops.relu(math_ops.subtract(1.0, math_ops.multiply(signs, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=_ops.GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 * e ** 2 where |e| <= delta, else delta * (|e| - 0.5 * delta); e = predictions -
    labels."""
    _require(labels=labels, predictions=predictions)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "huber_loss") as scope:
        predictions, labels = _predictions_and_labels(predictions, labels)
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        # |e| - min(|e|, delta) equals max(|e| - delta, 0) but has gradient 0 at |e| == delta,
        # where the quadratic part already carries the whole gradient.
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(math_ops.multiply(0.5, math_ops.square(quadratic)),
                              math_ops.multiply(delta, linear))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=_ops.GraphKeys.LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels * log(predictions + epsilon) - (1 - labels) * log(1 - predictions + epsilon)."""
    _require(labels=labels, predictions=predictions)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "log_loss") as scope:
        predictions, labels = _predictions_and_labels(predictions, labels)
        positive = math_ops.multiply(labels, math_ops.log(math_ops.add(predictions, epsilon)))
        negative = math_ops.multiply(math_ops.subtract(1.0, labels), math_ops.log(
            math_ops.add(math_ops.subtract(1.0, predictions), epsilon)))
        losses = math_ops.negative(math_ops.add(positive, negative))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_ops.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Elementwise sigmoid cross entropy; label_smoothing moves labels towards 1/2."""
    from flowstone.ops import nn_impl
    _require(multi_class_labels=multi_class_labels, logits=logits)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "sigmoid_cross_entropy_loss") as scope:
        logits, labels = _predictions_and_labels(logits, multi_class_labels)
        if label_smoothing > 0:
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - label_smoothing),
                                  0.5 * label_smoothing)
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                           name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=_ops.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Cross entropy of softmax(logits) against one-hot labels [batch, classes], per example;
    label_smoothing mixes the labels with the uniform distribution. No gradient flows into the
    labels."""
    from flowstone.ops import array_ops, gradients, nn_impl
    _require(onehot_labels=onehot_labels, logits=logits)
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "softmax_cross_entropy_loss") as scope:
        logits, labels = _predictions_and_labels(logits, onehot_labels)
        if label_smoothing > 0:
            classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - label_smoothing),
                                  math_ops.divide(label_smoothing, classes))
        labels = gradients.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_impl.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                              name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _squeeze_last(tensor, expected_rank):
    """Drops a trailing axis of size 1 when tensor has one dimension more than expected (labels
    of shape [batch, 1] for logits [batch, classes])."""
    from flowstone.ops import array_ops
    shape = tensor.shape
    if shape.rank is not None and shape.rank == expected_rank + 1 and shape[-1] == 1:
        return array_ops.squeeze(tensor, [-1])
    return tensor


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_ops.GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Cross entropy of softmax(logits) against integer class labels, per example. Labels and
    weights of shape [batch, 1] are accepted for logits [batch, classes]."""
    from flowstone.ops import nn_impl
    _require(labels=labels, logits=logits)
    with _ops.name_scope(scope, "sparse_softmax_cross_entropy_loss") as scope:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, name="labels")
        if logits.shape.rank is not None:
            labels = _squeeze_last(labels, logits.shape.rank - 1)
            if not isinstance(weights, (int, float)):
                weights = _squeeze_last(_ops.convert_to_tensor(weights, name="weights"),
                                        logits.shape.rank - 1)
        losses = nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                  name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def add_loss(loss, loss_collection=_ops.GraphKeys.LOSSES):
    """Adds loss to loss_collection (nothing when loss_collection is None)."""
    if loss_collection:
        _ops.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=_ops.GraphKeys.LOSSES):
    return _ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses, or a float32 0 when there are none."""
    math_ops, _, _ = _m()
    losses = get_regularization_losses(scope)
    if not losses:
        return _ops.constant(0.0, dtype=_dtypes.float32, name=name)
    return math_ops.add_n(losses, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the losses in LOSSES (and the regularization losses)."""
    math_ops, _, _ = _m()
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in the losses collection; add one with a tf.losses "
                         "function or tf.losses.add_loss.")
    return math_ops.add_n(losses, name=name)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=_ops.GraphKeys.LOSSES):
    """Per batch entry, the mean over pairs of its elements (i, j) of ((p_i - p_j) - (l_i -
    l_j)) ** 2, computed as 2 * sum(d ** 2) / (n - 1) - 2 * sum(d) ** 2 / (n * (n - 1)) with
    d = predictions - labels and n the entry's elements of nonzero weight; the entries'
    values times `weights` are summed. As TensorFlow's graph mode computes it."""
    _require(labels=labels, predictions=predictions)
    math_ops, reduction_ops, array_ops = _m()
    with _ops.name_scope(scope, "mean_pairwise_squared_error"):
        predictions, labels = _predictions_and_labels(predictions, labels)
        weights = _ops.convert_to_tensor(weights)
        if weights.dtype != predictions.dtype:
            weights = math_ops.cast(weights, predictions.dtype)
        _check_broadcastable(weights, labels)
        diffs = math_ops.subtract(predictions, labels)
        axis = array_ops.range(1, array_ops.rank(diffs))
        with _ops.name_scope(None, "num_present"):
            present = math_ops.cast(math_ops.not_equal(weights, 0.0), diffs.dtype)
            present = math_ops.multiply(present, array_ops.ones_like(diffs))
            n = reduction_ops.reduce_sum(present, axis=axis, keepdims=True)
        sum_squares = reduction_ops.reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
        term1 = math_ops.multiply(2.0, _safe_divide(sum_squares, math_ops.subtract(n, 1.0)))
        sum_diff = reduction_ops.reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = math_ops.multiply(2.0, _safe_divide(
            math_ops.square(sum_diff), math_ops.multiply(n, math_ops.subtract(n, 1.0))))
        loss = reduction_ops.reduce_sum(math_ops.multiply(math_ops.subtract(term1, term2),
                                                          weights))
        mean_loss = math_ops.where_v2(math_ops.greater(reduction_ops.reduce_sum(n), 0.0), loss,
                                      array_ops.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss
