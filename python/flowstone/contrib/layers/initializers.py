"""tf.contrib.layers' initializers: xavier_initializer and variance_scaling_initializer, with
contrib's own arithmetic (fans over all but the last two dimensions; truncated normal with
stddev sqrt(1.3 * factor / n)), which differs from tf.variance_scaling_initializer's."""

import math

from flowstone import dtypes as _dtypes
from flowstone.ops import random_ops

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


class _ContribVarianceScaling:
    def __init__(self, factor, mode, uniform, seed, dtype):
        self.factor, self.mode, self.uniform, self.seed = factor, mode, uniform, seed
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _dtypes.as_dtype(dtype or self.dtype)
        shape = [int(d) for d in shape]
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1]) if shape else 1.0
        fan_out = float(shape[-1]) if shape else 1.0
        for dim in shape[:-2]:
            fan_in *= dim
            fan_out *= dim
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)
        stddev = math.sqrt(1.3 * self.factor / n)
        return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=_dtypes.float32):
    """Values with variance factor / n, n the fan in, fan out or their mean (`mode`): uniform
    in +-sqrt(3 * factor / n), or truncated normal with stddev sqrt(1.3 * factor / n). The
    default is He et al.'s initializer for ReLU layers."""
    if not _dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    return _ContribVarianceScaling(factor, mode, uniform, seed, _dtypes.as_dtype(dtype))


def xavier_initializer(uniform=True, seed=None, dtype=_dtypes.float32):
    """Glorot and Bengio's initializer: variance 1 / mean(fan in, fan out)."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer
