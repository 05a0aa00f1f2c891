"""Normalization ops of tf.nn: lrn / local_response_normalization, fused_batch_norm and
batch_norm_with_global_normalization (tf.nn.batch_normalization is in nn_impl)."""

from flowstone.framework import ops as _ops
from flowstone.ops.nn_impl import _deprecated_lookup, batch_normalization
from flowstone.util.tf_export import tf_export


@tf_export("nn.lrn", "nn.local_response_normalization")
def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,  # noqa: A002
                                 name=None):
    """input / (bias + alpha * sqr_sum) ** beta, where sqr_sum sums the squares of the
    2 * depth_radius + 1 neighbouring entries along the last axis of a 4-D tensor."""
    x = _ops.convert_to_tensor(input, name="input")
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
             "beta": float(beta)}
    return _ops.apply_op("LRN", [x], attrs, name=name or "LRN").outputs[0]


@tf_export("nn.fused_batch_norm")
def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization of a 4-D (NHWC, NCHW) or 5-D (NDHWC, NCDHW) tensor over its channel
    axis in one op. Returns (y, mean, variance): in training, the batch's mean and unbiased
    variance (blended with `mean` and `variance` when exponential_avg_factor != 1); in
    inference, `mean` and `variance` themselves. epsilon is raised to at least 1.001e-5, as
    cuDNN requires and TensorFlow does on every device."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` is "
                         "False or `exponential_avg_factor` != 1.0. Received: "
                         f"`mean` {mean!r} and `variance` {variance!r}")
    x = _ops.convert_to_tensor(x, name="input")
    scale = _ops.convert_to_tensor(scale, name="scale")
    offset = _ops.convert_to_tensor(offset, dtype=scale.dtype, name="offset")
    if mean is None:
        mean = _ops.convert_to_tensor([], dtype=scale.dtype)
    if variance is None:
        variance = _ops.convert_to_tensor([], dtype=scale.dtype)
    mean = _ops.convert_to_tensor(mean, dtype=scale.dtype)
    variance = _ops.convert_to_tensor(variance, dtype=scale.dtype)
    min_epsilon = 1.001e-5
    epsilon = epsilon if epsilon > min_epsilon else min_epsilon
    attrs = {"epsilon": float(epsilon), "exponential_avg_factor": float(exponential_avg_factor),
             "data_format": data_format, "is_training": bool(is_training)}
    op = _ops.apply_op("FusedBatchNormV3", [x, scale, offset, mean, variance], attrs,
                       name=name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]


@tf_export("nn.batch_norm_with_global_normalization")
def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None, scale_after_normalization=None,
                                         name=None, input=None, mean=None,  # noqa: A002
                                         variance=None):
    """TF1's batch normalization with a global mean and variance: batch_normalization(t, m, v,
    beta, gamma if scale_after_normalization else None, variance_epsilon)."""
    t = _deprecated_lookup("input", input, "t", t)
    m = _deprecated_lookup("mean", mean, "m", m)
    v = _deprecated_lookup("variance", variance, "v", v)
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name)
