"""Initializers for tf.get_variable and layers (tf.initializers, tf.keras.initializers)."""

import math

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = [
    "Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
    "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal",
    "zeros_initializer", "ones_initializer", "constant_initializer",
    "random_normal_initializer", "random_uniform_initializer", "truncated_normal_initializer",
    "variance_scaling_initializer", "glorot_uniform_initializer", "glorot_normal_initializer",
    "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
]


def _full_shape(shape):
    dims = [int(d) for d in (shape if shape is not None else [])]
    return dims


class Initializer:
    """Called as init(shape, dtype=None, partition_info=None) -> Tensor."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def _dtype(self, dtype):
        return _dtypes.as_dtype(dtype) if dtype is not None else self.dtype

    def get_config(self):
        return {}


# Zeros, ones and scalar constants go through tf.zeros/tf.ones/tf.fill, which build a Fill op
# for large shapes: a big variable's initializer is not a big constant held by the graph (and
# counted against the memory limit before any session runs).
class Zeros(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import array_ops
        return array_ops.zeros(_full_shape(shape), dtype=self._dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import array_ops
        return array_ops.ones(_full_shape(shape), dtype=self._dtype(dtype))


class Constant(Initializer):
    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        value = np.asarray(self.value, dtype=dtype.as_numpy_dtype)
        dims = _full_shape(shape)
        if value.size == 1:
            from flowstone.ops import array_ops
            return array_ops.fill(dims, _ops.constant(value.reshape(()), dtype=dtype))
        elif value.size == int(np.prod(dims)):
            value = value.reshape(dims)
        else:
            raise ValueError(f"Constant initializer value of shape {value.shape} cannot fill a "
                             f"variable of shape {tuple(dims)}.")
        return _ops.constant(value, dtype=dtype)

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import random_ops
        return random_ops.random_normal(_full_shape(shape), self.mean, self.stddev,
                                        self._dtype(dtype), seed=self.seed)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import random_ops
        return random_ops.random_uniform(_full_shape(shape), self.minval, self.maxval,
                                         self._dtype(dtype), seed=self.seed)


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import random_ops
        return random_ops.truncated_normal(_full_shape(shape), self.mean, self.stddev,
                                           self._dtype(dtype), seed=self.seed)


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples with variance scale / n, n being fan_in, fan_out or their mean."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        super().__init__(dtype)
        if scale <= 0.0:
            raise ValueError("`scale` must be a positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        from flowstone.ops import random_ops
        dims = _full_shape(shape)
        fan_in, fan_out = _fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dtype = self._dtype(dtype)
        if self.distribution == "truncated_normal":
            # 0.8796... is the stddev of a unit normal truncated to [-2, 2].
            stddev = math.sqrt(scale) / 0.87962566103423978
            return random_ops.truncated_normal(dims, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(dims, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(dims, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal


def he_normal(seed=None):
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return VarianceScaling(1.0, "fan_in", "uniform", seed)
