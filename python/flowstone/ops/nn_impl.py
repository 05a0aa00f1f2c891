"""tf.nn losses, activations and normalization built from C++ ops."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = [
    "sparse_softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "l2_loss", "relu6", "elu", "selu", "leaky_relu",
    "dropout", "moments", "batch_normalization", "l2_normalize", "embedding_lookup",
]


def _math():
    from flowstone.ops import math_ops
    return math_ops


def _array():
    from flowstone.ops import array_ops
    return array_ops


def _reduce():
    from flowstone.ops import reduction_ops
    return reduction_ops


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Per-example cross entropy of softmax(logits) against integer class labels."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...).")
    with _ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits") as scope:
        logits = _ops.convert_to_tensor(logits)
        labels = _ops.convert_to_tensor(labels)
        if labels.dtype not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"labels must be int32 or int64 class indices, got "
                             f"{labels.dtype.name}")
        rank = logits.shape.rank
        if labels.shape.rank is not None and rank is not None and labels.shape.rank != rank - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {labels.shape.rank}) "
                             f"should equal rank of logits minus 1 (received {rank}).")
        if rank is not None and rank != 2:
            array_ops = _array()
            flat_logits = array_ops.reshape(logits, [-1, array_ops.shape(logits)[-1]])
            flat_labels = array_ops.reshape(labels, [-1])
            loss = _ops.apply_op("SparseSoftmaxCrossEntropyWithLogits",
                                 [flat_logits, flat_labels], name="xentropy").outputs[0]
            return array_ops.reshape(loss, array_ops.shape(labels), name=scope.rstrip("/"))
        return _ops.apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels],
                             name="xentropy").outputs[0]


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=-1, name=None, dim=None):
    """Per-example cross entropy of softmax(logits) against label distributions; gradients flow
    into both logits and labels."""
    axis = dim if dim is not None else axis
    with _ops.name_scope(name, "softmax_cross_entropy_with_logits"):
        logits = _ops.convert_to_tensor(logits)
        labels = _ops.convert_to_tensor(labels, dtype=logits.dtype)
        if axis not in (-1, (logits.shape.rank or 0) - 1):
            array_ops = _array()
            perm = list(range(logits.shape.rank))
            perm[axis], perm[-1] = perm[-1], perm[axis]
            logits = array_ops.transpose(logits, perm)
            labels = array_ops.transpose(labels, perm)
        return _ops.apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels],
                             name="xentropy").outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF1's version: like _v2 but no gradient flows into the labels."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...).")
    from flowstone.ops.gradients import stop_gradient
    return softmax_cross_entropy_with_logits_v2(stop_gradient(labels), logits,
                                                axis if axis is not None else dim, name)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2"""
    return _ops.apply_op("L2Loss", [_ops.convert_to_tensor(t)], name=name or "L2Loss").outputs[0]


def _activation(op_type, features, name, attrs=None):
    return _ops.apply_op(op_type, [_ops.convert_to_tensor(features)], attrs,
                         name=name or op_type).outputs[0]


def relu6(features, name=None):
    return _activation("Relu6", features, name)


def elu(features, name=None):
    return _activation("Elu", features, name)


def selu(features, name=None):
    return _activation("Selu", features, name)


def leaky_relu(features, alpha=0.2, name=None):
    return _activation("LeakyRelu", features, name, {"alpha": float(alpha)})


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zeroes each element with probability `rate` (= 1 - keep_prob) and scales the rest by
    1 / keep_prob, so the expected value is unchanged."""
    math_ops = _math()
    from flowstone.ops import random_ops
    if rate is None and keep_prob is None:
        raise ValueError("dropout needs keep_prob or rate")
    if rate is not None and keep_prob is not None:
        raise ValueError("Cannot specify both keep_prob and rate")
    with _ops.name_scope(name, "dropout"):
        x = _ops.convert_to_tensor(x)
        if rate is None:
            keep = keep_prob
        elif isinstance(rate, (int, float)):
            keep = 1.0 - rate
        else:
            keep = math_ops.subtract(1.0, _ops.convert_to_tensor(rate, dtype=x.dtype))
        if isinstance(keep, (int, float)):
            if not 0.0 < keep <= 1.0:
                raise ValueError(f"keep_prob must be in (0, 1], got {keep}")
            if keep == 1.0:
                return x
        keep = _ops.convert_to_tensor(keep, dtype=x.dtype)
        shape = noise_shape if noise_shape is not None else _array().shape(x)
        noise = random_ops.random_uniform(shape, dtype=x.dtype, seed=seed)
        mask = math_ops.floor(math_ops.add(keep, noise))
        return math_ops.multiply(math_ops.divide(x, keep), mask)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and variance of x over `axes`."""
    reduce = _reduce()
    math_ops = _math()
    from flowstone.ops.gradients import stop_gradient
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _ops.name_scope(name, "moments"):
        x = _ops.convert_to_tensor(x)
        mean = reduce.reduce_mean(x, axes, keepdims=True, name="mean")
        variance = reduce.reduce_mean(
            math_ops.squared_difference(x, stop_gradient(mean)), axes, keepdims=True,
            name="variance")
        if not keep:
            array_ops = _array()
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + epsilon) * scale + offset."""
    math_ops = _math()
    with _ops.name_scope(name, "batchnorm"):
        inv = math_ops.rsqrt(math_ops.add(variance, variance_epsilon))
        if scale is not None:
            inv = math_ops.multiply(inv, scale)
        shifted = math_ops.multiply(mean, inv)
        bias = math_ops.subtract(offset, shifted) if offset is not None else math_ops.negative(
            shifted)
        return math_ops.add(math_ops.multiply(x, inv), bias)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    math_ops = _math()
    axis = dim if axis is None else axis
    with _ops.name_scope(name, "l2_normalize"):
        x = _ops.convert_to_tensor(x)
        square_sum = _reduce().reduce_sum(math_ops.square(x), axis, keepdims=True)
        return math_ops.multiply(x, math_ops.rsqrt(math_ops.maximum(square_sum, epsilon)))


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows of `params` for `ids`."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup over sharded params is not supported")
        params = params[0]
    with _ops.name_scope(name, "embedding_lookup"):
        return _array().gather(params, ids)
