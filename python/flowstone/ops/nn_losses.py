"""Elementwise losses of tf.nn: weighted_cross_entropy_with_logits and log_poisson_loss,
composed from math ops exactly as TensorFlow composes them."""

import math

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops
from flowstone.ops.nn_impl import _deprecated_lookup
from flowstone.util.tf_export import tf_export


def _same_shape(a, b, message):
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(message.format(a.shape, b.shape))


@tf_export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """Sigmoid cross entropy with the positive term weighted by `pos_weight`:
    labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits)),
    computed as (1 - z) * x + (1 + (q - 1) * z) * (log1p(exp(-|x|)) + max(-x, 0)), which neither
    overflows nor loses precision."""
    labels = _deprecated_lookup("labels", labels, "targets", targets)
    with _ops.name_scope(name, "logistic_loss") as scope:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        _same_shape(logits, labels, "`logits` and `labels` must have the same shape, received "
                                    "({} vs {}).")
        pos_weight = _ops.convert_to_tensor(pos_weight, dtype=logits.dtype, name="pos_weight")
        one = _ops.convert_to_tensor(1.0, dtype=logits.dtype)
        log_weight = math_ops.add(one, math_ops.multiply(math_ops.subtract(pos_weight, one),
                                                         labels))
        softplus_neg = math_ops.add(
            math_ops.log1p(math_ops.exp(math_ops.negative(math_ops.abs(logits)))),
            math_ops.relu(math_ops.negative(logits)))
        return math_ops.add(math_ops.multiply(math_ops.subtract(one, labels), logits),
                            math_ops.multiply(log_weight, softplus_neg), name=scope)


@tf_export("nn.log_poisson_loss")
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets, the negative log likelihood of `targets` under a
    Poisson distribution of log rate `log_input` (without the constant log(targets!)). With
    compute_full_loss, adds Stirling's approximation of log(targets!) where targets > 1."""
    with _ops.name_scope(name, "log_poisson_loss"):
        log_input = _ops.convert_to_tensor(log_input, name="log_input")
        targets = _ops.convert_to_tensor(targets, dtype=log_input.dtype, name="targets")
        _same_shape(log_input, targets, "`log_input` and `targets` must have the same shape, "
                                        "received ({} vs {}).")
        result = math_ops.subtract(math_ops.exp(log_input),
                                   math_ops.multiply(log_input, targets))
        if not compute_full_loss:
            return result
        dtype = log_input.dtype
        # targets * log(targets) - targets + 0.5 * log(2 * pi * targets), used where targets > 1
        # (for targets in [0, 1] log(targets!) is 0).
        stirling = math_ops.add(
            math_ops.subtract(math_ops.multiply(targets, math_ops.log(targets)), targets),
            math_ops.multiply(_ops.convert_to_tensor(0.5, dtype=dtype),
                              math_ops.log(math_ops.multiply(
                                  _ops.convert_to_tensor(2 * math.pi, dtype=dtype), targets))))
        zeros = array_ops.zeros_like(targets)
        small = math_ops.logical_and(math_ops.greater_equal(targets, zeros),
                                     math_ops.less_equal(targets, array_ops.ones_like(targets)))
        return math_ops.add(result, math_ops.where_v2(small, zeros, stirling))
