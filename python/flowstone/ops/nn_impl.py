"""tf.nn losses, activations, normalization and top-k, built from C++ ops."""

import collections
import numbers

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape

__all__ = [
    "sparse_softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "sigmoid_cross_entropy_with_logits", "l2_loss",
    "relu6", "elu", "selu", "leaky_relu", "dropout", "moments", "batch_normalization",
    "l2_normalize", "embedding_lookup", "top_k", "in_top_k",
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


def _deprecated_lookup(new_name, new_value, old_name, old_value):
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
    return old_value


# --- cross entropy ------------------------------------------------------------------------------

def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per-example cross entropy of softmax(logits) against integer class labels.

    labels has the shape of logits without its last (class) axis. A label outside
    [0, num_classes) fails at run time with InvalidArgumentError."""
    if labels is None or logits is None:
        raise ValueError("Both labels=... and logits=... must be given to "
                         "sparse_softmax_cross_entropy_with_logits.")
    with _ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits"):
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, name="labels")
        logits_shape, labels_shape = logits.shape, labels.shape
        if logits_shape.rank == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}")
        if logits_shape.rank is not None and labels_shape.rank is not None:
            if labels_shape.rank != logits_shape.rank - 1:
                raise ValueError(
                    "`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                    f"labels.shape={labels_shape} of rank {labels_shape.rank} and "
                    f"logits.shape={logits_shape} of rank {logits_shape.rank}")
            if not labels_shape.is_compatible_with(logits_shape[:-1]):
                raise ValueError(
                    "`labels.shape` must equal `logits.shape` except for the last dimension. "
                    f"Received: labels.shape={labels_shape} and logits.shape={logits_shape}")
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if logits_shape.rank == 2:
            return _ops.apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels],
                                 name=op_name).outputs[0]
        array_ops = _array()
        flat_logits = array_ops.reshape(logits, [-1, array_ops.shape(logits)[-1]])
        flat_labels = array_ops.reshape(labels, [-1])
        cost = _ops.apply_op("SparseSoftmaxCrossEntropyWithLogits", [flat_logits, flat_labels],
                             name=op_name).outputs[0]
        cost = array_ops.reshape(cost, array_ops.shape(labels))
        cost.set_shape(labels_shape)
        return cost


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """Per-example cross entropy of softmax(logits) against label distributions along `axis`
    (default: the last); gradients flow into both logits and labels."""
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    if axis is None:
        axis = -1
    with _ops.name_scope(name, "softmax_cross_entropy_with_logits"):
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        rank = logits.shape.rank
        if rank == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}")
        op_name = name or "SoftmaxCrossEntropyWithLogits"
        if rank == 2 and axis in (-1, 1):
            return _ops.apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels],
                                 name=op_name).outputs[0]
        if rank is None:
            raise ValueError("softmax_cross_entropy_with_logits needs the rank of the logits to "
                             "be known; set it with logits.set_shape(...).")
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for logits of rank {rank}")
        array_ops = _array()
        axis %= rank
        if axis != rank - 1:
            # Move the class axis to the end, keeping the other axes in order.
            perm = [d for d in range(rank) if d != axis] + [axis]
            logits = array_ops.transpose(logits, perm)
            labels = array_ops.transpose(labels, perm)
        classes = array_ops.shape(logits)[-1]
        cost = _ops.apply_op("SoftmaxCrossEntropyWithLogits",
                             [array_ops.reshape(logits, [-1, classes]),
                              array_ops.reshape(labels, [-1, classes])],
                             name=op_name).outputs[0]
        cost = array_ops.reshape(cost, array_ops.shape(logits)[:-1])
        cost.set_shape(logits.shape[:-1])
        return cost


def softmax_cross_entropy_with_logits(labels=None, logits=None, dim=-1, name=None, axis=None):
    """TF1's version: like _v2, but no gradient flows into the labels."""
    if labels is None or logits is None:
        raise ValueError("Both labels=... and logits=... must be given to "
                         "softmax_cross_entropy_with_logits.")
    from flowstone.ops.gradients import stop_gradient
    axis = _deprecated_lookup("axis", axis, "dim", dim if dim != -1 else None)
    with _ops.name_scope(name, "softmax_cross_entropy_with_logits_sg"):
        labels = stop_gradient(labels, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels, logits, axis=axis, name=name)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise cross entropy of sigmoid(logits) against labels in [0, 1], computed as
    max(x, 0) - x * z + log(1 + exp(-|x|)), which neither overflows nor loses precision."""
    if labels is None or logits is None:
        raise ValueError("Both labels=... and logits=... must be given to "
                         "sigmoid_cross_entropy_with_logits.")
    math_ops = _math()
    with _ops.name_scope(name, "logistic_loss") as scope:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, dtype=logits.dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"`logits` and `labels` must have the same shape, received "
                             f"({logits.shape} vs {labels.shape}).")
        relu_logits = math_ops.maximum(logits, 0.0)
        neg_abs_logits = math_ops.negative(math_ops.abs(logits))
        return math_ops.add(math_ops.subtract(relu_logits, math_ops.multiply(logits, labels)),
                            math_ops.log1p(math_ops.exp(neg_abs_logits)),
                            name=scope.rstrip("/"))


def l2_loss(t, name=None):
    """sum(t ** 2) / 2"""
    return _ops.apply_op("L2Loss", [_ops.convert_to_tensor(t, name="t")],
                         name=name or "L2Loss").outputs[0]


# --- activations --------------------------------------------------------------------------------

def _activation(op_type, features, name, attrs=None):
    with _ops.name_scope(name, op_type) as scope:
        features = _ops.convert_to_tensor(features, name="features")
        return _ops.apply_op(op_type, [features], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def relu6(features, name=None):
    """min(max(features, 0), 6)"""
    return _activation("Relu6", features, name)


def elu(features, name=None):
    """features if features > 0 else exp(features) - 1"""
    return _activation("Elu", features, name)


def selu(features, name=None):
    """scale * (features if features > 0 else alpha * (exp(features) - 1)), with the constants
    of Klambauer et al. (2017)."""
    return _activation("Selu", features, name)


def leaky_relu(features, alpha=0.2, name=None):
    """features if features > 0 else alpha * features; integer features become float32."""
    features = _ops.convert_to_tensor(features, name="features")
    if features.dtype.is_integer:
        features = _math().cast(features, _dtypes.float32)
    return _activation("LeakyRelu", features, name, {"alpha": float(alpha)})


# --- dropout ------------------------------------------------------------------------------------

def _noise_shape(x, noise_shape):
    """noise_shape with its None entries filled in from x's static shape, as TensorFlow does."""
    if noise_shape is None:
        return _array().shape(x)
    if isinstance(noise_shape, _ops.Tensor):
        return noise_shape
    dims = TensorShape(noise_shape).as_list()
    if x.shape.rank == len(dims):
        dims = [x_dim if d is None else d for d, x_dim in zip(dims, x.shape.as_list())]
    if any(d is None for d in dims):
        raise ValueError(f"noise_shape {noise_shape} has unknown dimensions that x "
                         f"({x.shape}) does not determine")
    return dims


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zeroes each element with probability `rate` (TF1's `keep_prob` = 1 - rate) and scales the
    kept ones by 1 / (1 - rate), so the expected value is unchanged. With noise_shape, elements
    share one keep/drop decision along the axes where noise_shape is 1."""
    if keep_prob is not None:
        if isinstance(keep_prob, numbers.Real):
            keep_prob = 1.0 - keep_prob
        else:
            keep_prob = _math().subtract(1.0, keep_prob)
    rate = _deprecated_lookup("rate", rate, "keep_prob", keep_prob)
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    math_ops = _math()
    from flowstone.ops import random_ops
    with _ops.name_scope(name, "dropout"):
        is_number = isinstance(rate, numbers.Real)
        if is_number and not 0 <= rate < 1:
            raise ValueError("`rate` must be a scalar tensor or a float in the range [0, 1). "
                             f"Received: rate={rate}")
        x = _ops.convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError("`x.dtype` must be a floating point tensor as `x` will be scaled. "
                             f"Received: x_dtype={x.dtype}")
        if is_number and rate == 0:
            return x
        if is_number:
            kept = math_ops.multiply(x, _ops.convert_to_tensor(1.0 / (1.0 - rate),
                                                               dtype=x.dtype))
        else:
            rate = _ops.convert_to_tensor(rate, name="rate")
            if rate.shape.rank not in (None, 0):
                raise ValueError(f"`rate` must be a scalar, got shape {rate.shape}")
            if rate.dtype != x.dtype:
                rate = math_ops.cast(rate, x.dtype, name="rate")
            kept = math_ops.divide(x, math_ops.subtract(_ops.convert_to_tensor(
                1.0, dtype=x.dtype), rate))
        noise = random_ops.random_uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
        keep_mask = math_ops.greater_equal(noise, rate)
        result = math_ops.where_v2(keep_mask, kept, _ops.convert_to_tensor(0.0, dtype=x.dtype))
        result.set_shape(x.shape)
        return result


# --- normalization ------------------------------------------------------------------------------

def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and (biased) variance of x over `axes`. `shift` is accepted for compatibility and
    unused, as in TensorFlow."""
    reduce = _reduce()
    math_ops = _math()
    from flowstone.ops.gradients import stop_gradient
    keep = bool(_deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    with _ops.name_scope(name, "moments"):
        x = _ops.convert_to_tensor(x, name="x")
        axes = list(axes) if isinstance(axes, (list, tuple)) else axes
        mean = reduce.reduce_mean(x, axes, keepdims=True, name="mean")
        # The mean's own gradient through the variance is zero (the deviations sum to zero), so
        # stopping it there only saves work.
        variance = reduce.reduce_mean(
            math_ops.squared_difference(x, stop_gradient(mean)), axes, keepdims=True,
            name="variance")
        if not keep:
            array_ops = _array()
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, computed as x * inv + (offset -
    mean * inv) with inv = scale / sqrt(variance + epsilon). offset and scale may be None."""
    math_ops = _math()
    with _ops.name_scope(name, "batchnorm"):
        x = _ops.convert_to_tensor(x, name="x")
        inv = math_ops.rsqrt(math_ops.add(variance, variance_epsilon))
        if scale is not None:
            inv = math_ops.multiply(inv, scale)
        shifted = math_ops.multiply(mean, inv)
        bias = (math_ops.subtract(offset, shifted) if offset is not None
                else math_ops.negative(shifted))
        return math_ops.add(math_ops.multiply(x, inv), bias)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)); axis=None normalizes over all elements."""
    math_ops = _math()
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    with _ops.name_scope(name, "l2_normalize") as scope:
        x = _ops.convert_to_tensor(x, name="x")
        square_sum = _reduce().reduce_sum(math_ops.square(x), axis, keepdims=True)
        inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, inv_norm, name=scope.rstrip("/"))


# --- embeddings ---------------------------------------------------------------------------------

def _clip_rows(embeddings, ids_rank, max_norm):
    """Scales each embedding row whose L2 norm exceeds max_norm down to max_norm; the norm of a
    zero row is taken as 0 without a square root so that its gradient stays finite."""
    math_ops = _math()
    axes = list(range(ids_rank, embeddings.shape.rank))
    square_sum = _reduce().reduce_sum(math_ops.square(embeddings), axes, keepdims=True)
    positive = math_ops.greater(square_sum, 0.0)
    safe = math_ops.where_v2(positive, square_sum, _array().ones_like(square_sum))
    norm = math_ops.where_v2(positive, math_ops.sqrt(safe), square_sum)
    return math_ops.divide(math_ops.multiply(embeddings, max_norm),
                           math_ops.maximum(norm, max_norm))


def _partition_ids(flat_ids, params, partition_strategy):
    """(partition, id within it) of each id, by TensorFlow's rules. "mod": id % n, id // n.
    "div": contiguous blocks, the first (total % n) partitions one row longer than the rest."""
    math_ops = _math()
    array_ops = _array()
    n = len(params)
    if partition_strategy == "mod":
        return math_ops.floormod(flat_ids, n), math_ops.floordiv(flat_ids, n)
    sizes = [p.shape[0] if p.shape.rank else None for p in map(_ops.convert_to_tensor, params)]
    if all(isinstance(s, int) for s in sizes):
        total = _ops.convert_to_tensor(sum(sizes), dtype=flat_ids.dtype)
    else:
        total = math_ops.add_n([math_ops.cast(array_ops.shape(p)[0], flat_ids.dtype)
                                for p in params])
    per_partition = math_ops.floordiv(total, n)
    extras = math_ops.floormod(total, n)
    partition = math_ops.maximum(
        math_ops.floordiv(flat_ids, per_partition + 1),
        math_ops.floordiv(flat_ids - extras, per_partition))
    in_long_partition = math_ops.less(partition, extras)
    new_ids = math_ops.where_v2(in_long_partition, math_ops.floormod(flat_ids, per_partition + 1),
                                math_ops.floormod(flat_ids - extras, per_partition))
    return partition, new_ids


def _sharded_lookup(params, ids, partition_strategy, max_norm):
    """Rows of a table split over `params` by `partition_strategy`. Each shard gathers the ids
    that fall in it (others read its row 0, then discarded), and the rows are merged by
    partition, so gradients reach each shard's rows only. An id outside the table is given to
    every gather as it is, so that it fails with InvalidArgumentError naming the id."""
    math_ops = _math()
    array_ops = _array()
    flat_ids = array_ops.reshape(ids, [-1])
    partition, new_ids = _partition_ids(flat_ids, params, partition_strategy)
    n = _ops.convert_to_tensor(len(params), dtype=partition.dtype)
    in_table = math_ops.logical_and(math_ops.greater_equal(partition, array_ops.zeros_like(n)),
                                    math_ops.less(partition, n))
    elsewhere = math_ops.where_v2(in_table, array_ops.zeros_like(new_ids), flat_ids)
    result = None
    for p, shard in enumerate(params):
        in_shard = math_ops.equal(partition, _ops.convert_to_tensor(p, dtype=partition.dtype))
        rows = array_ops.gather(shard, math_ops.where_v2(in_shard, new_ids, elsewhere))
        if max_norm is not None:
            rows = _clip_rows(rows, 1, max_norm)
        if result is None:
            result = rows
            continue
        element_rank = rows.shape.rank - 1 if rows.shape.rank is not None else None
        if element_rank is None:
            raise ValueError("embedding_lookup over several params needs their rank to be known")
        mask = array_ops.reshape(in_shard, [-1] + [1] * element_rank)
        result = math_ops.where_v2(mask, rows, result)
    shape = array_ops.concat([array_ops.shape(ids), array_ops.shape(result)[1:]], 0)
    return array_ops.reshape(result, shape)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """The rows of `params` for `ids` (shape ids.shape + params.shape[1:]). `params` is one
    tensor or variable, or a list of shards of one table, split by `partition_strategy`
    ("mod": id i lives in shard i % n; "div": shards hold contiguous blocks). Ids outside the
    table fail at run time. With max_norm, rows longer than max_norm are scaled down to it.
    `validate_indices` is ignored, as in TensorFlow."""
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        params = list(params)
    else:
        params = [params]
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    with _ops.name_scope(name, "embedding_lookup"):
        ids = _ops.convert_to_tensor(ids, name="ids")
        if len(params) > 1:
            return _sharded_lookup(params, ids, partition_strategy, max_norm)
        result = _array().gather(params[0], ids)
        if max_norm is not None:
            result = _clip_rows(result, ids.shape.rank, max_norm)
        return result


# --- top k --------------------------------------------------------------------------------------

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None, index_type=_dtypes.int32):  # noqa: A002
    """The k largest entries along the last axis of `input` and their indices, as a
    (values, indices) named tuple. Values come largest first (sorted=False allows any order);
    equal values come in index order, and NaN ranks above every number."""
    input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
    k = _ops.convert_to_tensor(k, preferred_dtype=_dtypes.int32, name="k")
    op = _ops.apply_op("TopKV2", [input, k],
                       {"sorted": bool(sorted), "index_type": _dtypes.as_dtype(index_type)},
                       name=name or "TopKV2")
    return TopKV2(*op.outputs)


def in_top_k(predictions, targets, k, name=None):
    """Whether targets[i] is among the k largest predictions[i, :] (bool [batch]). Classes tied
    with the k-th largest count as in the top k; an out-of-range target, or a row with a
    non-finite prediction, is never in it."""
    with _ops.name_scope(name, "in_top_k"):
        predictions = _ops.convert_to_tensor(predictions, name="predictions")
        if predictions.dtype != _dtypes.float32:
            predictions = _math().cast(predictions, _dtypes.float32)
        targets = _ops.convert_to_tensor(targets, preferred_dtype=_dtypes.int32,
                                         name="targets")
        k = _ops.convert_to_tensor(k, dtype=targets.dtype, name="k")
        return _ops.apply_op("InTopKV2", [predictions, targets, k]).outputs[0]
