"""Moments from sufficient statistics, and weighted moments: tf.nn.sufficient_statistics,
normalize_moments and weighted_moments (tf.nn.moments is in nn_impl)."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops, reduction_ops
from flowstone.ops.nn_impl import _deprecated_lookup
from flowstone.util.tf_export import tf_export


def _keep_dims(keepdims, keep_dims):
    return bool(_deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims))


@tf_export("nn.sufficient_statistics")
def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum(x - shift), sum((x - shift) ** 2), shift) over `axes`: the statistics that
    normalize_moments turns into a mean and variance. The count is a constant when x's sizes
    along `axes` are known while building, else computed from tf.shape(x)."""
    axes = sorted(set(int(a) for a in axes))
    keep = _keep_dims(keepdims, keep_dims)
    with _ops.name_scope(name, "sufficient_statistics"):
        x = _ops.convert_to_tensor(x, name="x")
        dims = x.shape.as_list() if x.shape.rank is not None else None
        if dims is not None and all(dims[d] is not None for d in axes):
            count = 1
            for d in axes:
                count *= dims[d]
            counts = _ops.convert_to_tensor(count, dtype=x.dtype)
        else:
            x_dims = array_ops.gather(math_ops.cast(array_ops.shape(x), x.dtype), axes)
            counts = reduction_ops.reduce_prod(x_dims, name="count")
        if shift is not None:
            shift = _ops.convert_to_tensor(shift, name="shift")
            m_ss = math_ops.subtract(x, shift)
            v_ss = math_ops.squared_difference(x, shift)
        else:
            m_ss = x
            v_ss = math_ops.square(x)
        m_ss = reduction_ops.reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = reduction_ops.reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
    return counts, m_ss, v_ss, shift


@tf_export("nn.normalize_moments")
def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics: mean = mean_ss / counts + shift and
    variance = variance_ss / counts - (mean_ss / counts) ** 2."""
    with _ops.name_scope(name, "normalize"):
        mean_ss = _ops.convert_to_tensor(mean_ss, name="mean_ss")
        counts = _ops.convert_to_tensor(counts, dtype=mean_ss.dtype, name="counts")
        divisor = math_ops.divide(_ops.convert_to_tensor(1.0, dtype=counts.dtype), counts,
                                  name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math_ops.subtract(math_ops.multiply(variance_ss, divisor),
                                     math_ops.square(shifted_mean), name="variance")
    return mean, variance


def _div_no_nan(x, y):
    """x / y, and 0 where y is 0."""
    zero = array_ops.zeros_like(y)
    is_zero = math_ops.equal(y, zero)
    safe = math_ops.where_v2(is_zero, array_ops.ones_like(y), y)
    return math_ops.where_v2(is_zero, array_ops.zeros_like(x), math_ops.divide(x, safe))


@tf_export("nn.weighted_moments")
def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """The frequency-weighted mean and (biased) variance of x over `axes`; `frequency_weights`
    broadcasts against x. Where the weights sum to 0, both are 0."""
    keep = _keep_dims(keepdims, keep_dims)
    with _ops.name_scope(name, "weighted_moments"):
        x = _ops.convert_to_tensor(x, name="x")
        weights = _ops.convert_to_tensor(frequency_weights, name="frequency_weights")
        needs_cast = x.dtype.name == "float16"
        if needs_cast:
            x = math_ops.cast(x, "float32")
        if weights.dtype != x.dtype:
            weights = math_ops.cast(weights, x.dtype)
        weighted_input_sum = reduction_ops.reduce_sum(math_ops.multiply(weights, x), axes,
                                                      name="weighted_input_sum", keepdims=True)
        broadcast_weights = math_ops.add(weights, array_ops.zeros_like(x))
        sum_of_weights = reduction_ops.reduce_sum(broadcast_weights, axes, name="sum_of_weights",
                                                  keepdims=True)
        mean = _div_no_nan(weighted_input_sum, sum_of_weights)
        distsq = reduction_ops.reduce_sum(
            math_ops.multiply(weights, math_ops.squared_difference(x, mean)), axes,
            name="weighted_distsq", keepdims=True)
        variance = _div_no_nan(distsq, sum_of_weights)
        if not keep:
            mean = array_ops.squeeze(mean, axis=axes)
            variance = array_ops.squeeze(variance, axis=axes)
        if needs_cast:
            mean = math_ops.cast(mean, "float16")
            variance = math_ops.cast(variance, "float16")
    return mean, variance
