"""tf.losses: weighted, reduced losses collected in tf.GraphKeys.LOSSES."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = ["Reduction", "mean_squared_error", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy", "absolute_difference", "compute_weighted_loss",
           "get_losses", "get_regularization_losses", "get_regularization_loss",
           "get_total_loss", "add_loss"]


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS


def _m():
    from flowstone.ops import math_ops, reduction_ops, array_ops
    return math_ops, reduction_ops, array_ops


def compute_weighted_loss(losses, weights=1.0, scope=None,
                          loss_collection=_ops.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    math_ops, reduction_ops, array_ops = _m()
    with _ops.name_scope(scope, "weighted_loss"):
        losses = _ops.convert_to_tensor(losses)
        weights = _ops.convert_to_tensor(weights, dtype=losses.dtype)
        weighted = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            total = reduction_ops.reduce_sum(weighted)
            if reduction == Reduction.SUM:
                loss = total
            elif reduction == Reduction.MEAN:
                loss = math_ops.divide(total, reduction_ops.reduce_sum(
                    math_ops.multiply(array_ops.ones_like(losses), weights)))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = math_ops.divide(total, math_ops.cast(array_ops.size(losses), losses.dtype))
            else:
                nonzero = reduction_ops.reduce_sum(math_ops.cast(math_ops.not_equal(
                    math_ops.multiply(array_ops.ones_like(losses), weights), 0.0),
                    losses.dtype))
                loss = math_ops.divide(total, math_ops.maximum(nonzero, 1.0))
        if loss_collection:
            _ops.add_to_collection(loss_collection, loss)
        return loss


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=_ops.GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "mean_squared_error"):
        predictions = _ops.convert_to_tensor(predictions)
        labels = _ops.convert_to_tensor(labels, dtype=predictions.dtype) if not isinstance(
            labels, _ops.Tensor) else math_ops.cast(labels, predictions.dtype)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=_ops.GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "absolute_difference"):
        predictions = _ops.convert_to_tensor(predictions)
        labels = math_ops.cast(_ops.convert_to_tensor(labels), predictions.dtype)
        losses = math_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=_ops.GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    from flowstone.ops import nn_impl
    math_ops, _, _ = _m()
    with _ops.name_scope(scope, "softmax_cross_entropy_loss"):
        logits = _ops.convert_to_tensor(logits)
        labels = math_ops.cast(_ops.convert_to_tensor(onehot_labels), logits.dtype)
        if label_smoothing > 0:
            classes = logits.shape[-1]
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - label_smoothing),
                                  label_smoothing / classes)
        losses = nn_impl.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_ops.GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    from flowstone.ops import nn_impl
    with _ops.name_scope(scope, "sparse_softmax_cross_entropy_loss"):
        losses = nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def add_loss(loss, loss_collection=_ops.GraphKeys.LOSSES):
    if loss_collection:
        _ops.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=_ops.GraphKeys.LOSSES):
    return _ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    math_ops, _, _ = _m()
    losses = get_regularization_losses(scope)
    if not losses:
        return _ops.constant(0.0, dtype=_dtypes.float32, name=name)
    return math_ops.add_n(losses, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    math_ops, _, _ = _m()
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in the losses collection.")
    return math_ops.add_n(losses, name=name)
