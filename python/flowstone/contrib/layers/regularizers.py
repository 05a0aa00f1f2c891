"""tf.contrib.layers' weight regularizers: functions of a weight tensor giving a scalar penalty
(or None), and apply_regularization, which sums them into tf.GraphKeys.REGULARIZATION_LOSSES."""

import numbers

from flowstone.framework import ops as _ops
from flowstone.ops import math_ops, nn_impl, reduction_ops
from flowstone.platform import tf_logging


def _checked_scale(scale, name):
    """None when `scale` disables the regularizer (0); raises for a negative or non-number."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            tf_logging.info("Scale of 0 disables regularizer.")
            return None
    return scale


def _regularizer(scale, scope, default_name, penalty):
    if _checked_scale(scale, default_name) is None:
        return lambda _: None

    def regularize(weights, name=None):
        with _ops.name_scope(scope, default_name, [weights]) as name:
            weights = _ops.convert_to_tensor(weights)
            my_scale = _ops.convert_to_tensor(scale, dtype=weights.dtype.base_dtype,
                                              name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)

    return regularize


def l1_regularizer(scale, scope=None):
    """weights -> scale * sum(|weights|)."""
    return _regularizer(scale, scope, "l1_regularizer",
                        lambda w: reduction_ops.reduce_sum(math_ops.abs(w)))


def l2_regularizer(scale, scope=None):
    """weights -> scale * sum(weights ** 2) / 2 (tf.nn.l2_loss)."""
    return _regularizer(scale, scope, "l2_regularizer", nn_impl.l2_loss)


def sum_regularizer(regularizer_list, scope=None):
    """weights -> the sum of the regularizers' penalties (None when there are none)."""
    regularizers = [r for r in regularizer_list if r is not None]
    if not regularizers:
        return lambda _: None

    def regularize(weights):
        with _ops.name_scope(scope, "sum_regularizer", [weights]) as name:
            penalties = [p for p in (r(weights) for r in regularizers) if p is not None]
            if not penalties:
                return None
            return math_ops.add_n(penalties, name=name)

    return regularize


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of l1_regularizer(scale_l1) and l2_regularizer(scale_l2)."""
    if isinstance(scale_l1, numbers.Real) and isinstance(scale_l2, numbers.Real):
        if scale_l1 == 0.0:
            return l2_regularizer(scale_l2, scope)
        if scale_l2 == 0.0:
            return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """The sum of regularizer(w) over `weights_list` (default: tf.GraphKeys.WEIGHTS), also
    added to tf.GraphKeys.REGULARIZATION_LOSSES."""
    from flowstone.ops import basic_ops
    if not weights_list:
        weights_list = _ops.get_collection(_ops.GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with _ops.name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [basic_ops.constant(0.0) if p is None else _ops.convert_to_tensor(p)
                     for p in penalties]
        for p in penalties:
            if p.shape.rank != 0:
                raise ValueError("regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.shape.rank}.")
        summed = math_ops.add_n(penalties, name=scope)
        _ops.add_to_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, summed)
        return summed
