"""tf.math functions that TensorFlow composes from other ops (or, for the no-NaN divisions, that
compose here from selects around the ordinary op): divide_no_nan, reciprocal_no_nan,
multiply_no_nan, logical_xor, lbeta, scalar_mul, zero_fraction, is_non_decreasing,
is_strictly_increasing and accumulate_n (conj, real, imag and angle are in complex_ops.py)."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import math_ops as _math
from flowstone.ops import math_reductions as _reductions
from flowstone.ops import reduction_ops as _reduction
from flowstone.ops.math_functions import lgamma
from flowstone.util.tf_export import tf_export


def _zero_where_y_is_zero(x, y, combine, name, default_name):
    """combine(x, y) where y != 0 and 0 where y == 0, with finite gradients there: y is replaced
    by 1 before combining, so no inf or NaN is ever selected away."""
    with _ops.name_scope(name, default_name, [x, y]) as scope:
        x, y = _math._binary_operands(x, y)
        if not (x.dtype.is_floating or x.dtype.is_complex):
            raise TypeError(f"{default_name} needs floating or complex inputs, got "
                            f"{x.dtype.name}")
        is_zero = _math.equal(y, _ops.constant(0, dtype=y.dtype))
        safe_y = _math.where(is_zero, _array.ones_like(y), y)
        value = combine(x, safe_y)
        return _math.where(is_zero, _array.zeros_like(value), value, name=scope)


@tf_export("math.divide_no_nan", "div_no_nan")
def divide_no_nan(x, y, name=None):
    """x / y, or 0 where y is 0."""
    return _zero_where_y_is_zero(x, y, _math.truediv, name, "div_no_nan")


@tf_export("math.reciprocal_no_nan")
def reciprocal_no_nan(x, name=None):
    """1 / x, or 0 where x is 0."""
    with _ops.name_scope(name, "reciprocal_no_nan", [x]):
        x = _ops.convert_to_tensor(x, name="x")
        return divide_no_nan(_ops.constant(1, dtype=x.dtype, name="one"), x)


@tf_export("math.multiply_no_nan")
def multiply_no_nan(x, y, name=None):
    """x * y, or 0 where y is 0 (even where x is inf or NaN)."""
    return _zero_where_y_is_zero(x, y, _math.multiply, name, "multiply_no_nan")


@tf_export("math.logical_xor", "logical_xor")
def logical_xor(x, y, name="LogicalXor"):
    """x != y for bools: (x or y) and not (x and y), as TensorFlow builds it."""
    both = _math.logical_and(x, y)
    return _math.logical_and(_math.logical_or(x, y), _math.logical_not(both), name=name)


@tf_export("math.lbeta", "lbeta")
def lbeta(x, name=None):
    """log |Beta(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    with _ops.name_scope(name, "lbeta", [x]):
        x = _ops.convert_to_tensor(x, name="x")
        log_prod_gamma_x = _reduction.reduce_sum(lgamma(x), axis=[-1])
        log_gamma_sum_x = lgamma(_reduction.reduce_sum(x, axis=[-1]))
        return log_prod_gamma_x - log_gamma_sum_x


@tf_export("math.scalar_mul", "scalar_mul")
def scalar_mul(scalar, x, name=None):
    """scalar * x for a scalar (0-d) `scalar`."""
    scalar = _ops.convert_to_tensor(scalar, dtype=_ops.convert_to_tensor(x).dtype, name="scalar")
    if scalar.shape.rank != 0:
        raise ValueError(f"Only scalar multiply works, got shape {scalar.shape}")
    with _ops.name_scope(name, "scalar_mul", [x]) as scope:
        return _math.multiply(scalar, x, name=scope)


@tf_export("math.zero_fraction", "nn.zero_fraction")
def zero_fraction(value, name=None):
    """The fraction of zeros in `value`, as float32."""
    with _ops.name_scope(name, "zero_fraction", [value]):
        value = _ops.convert_to_tensor(value, name="value")
        zero = _ops.constant(np.zeros((), value.dtype.as_numpy_dtype), name="zero")
        is_zero = _math.cast(_math.equal(value, zero), _dtypes.float32)
        return _reduction.reduce_mean(is_zero)


def _monotonic(x, compare, name, default_name):
    """compare(0, x[i+1] - x[i]) for every pair of x's elements in row-major order."""
    with _ops.name_scope(name, default_name, [x]):
        x = _ops.convert_to_tensor(x, name="x")
        flat = _array.reshape(x, [-1])
        diff = flat[1:] - flat[:-1]
        return _reductions.reduce_all(compare(_ops.constant(0, dtype=diff.dtype), diff))


@tf_export("math.is_non_decreasing", "debugging.is_non_decreasing", "is_non_decreasing")
def is_non_decreasing(x, name=None):
    """Whether x (flattened) never decreases; True for fewer than two elements."""
    return _monotonic(x, _math.less_equal, name, "is_non_decreasing")


@tf_export("math.is_strictly_increasing", "debugging.is_strictly_increasing",
           "is_strictly_increasing")
def is_strictly_increasing(x, name=None):
    """Whether x (flattened) always increases; True for fewer than two elements."""
    return _monotonic(x, _math.less, name, "is_strictly_increasing")


@tf_export("math.accumulate_n", "accumulate_n")
def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The sum of a list of tensors of one shape and dtype (add_n, with TensorFlow's checks of
    the optional shape and dtype)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    inputs = [_ops.convert_to_tensor(t) for t in inputs]
    if not all(t.dtype == inputs[0].dtype for t in inputs):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    if tensor_dtype is not None and _dtypes.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError(f"tensor_dtype is {tensor_dtype}, but input is of type "
                        f"{inputs[0].dtype}")
    if shape is not None and list(shape) != inputs[0].shape.as_list():
        raise ValueError(f"Shape {inputs[0].shape} of inputs does not match {shape}")
    return _math.add_n(inputs, name=name)
