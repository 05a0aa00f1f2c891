"""TF1's deprecated op names that tf.compat.v1 still exports: arg_max / arg_min (argmax and
argmin with `dimension`) and the tf.to_* casts not defined with the other casts."""

from flowstone import dtypes as _dtypes
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.util.tf_export import export_value, tf_export


@tf_export("arg_max")
def arg_max(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """The index of the largest value along `dimension` (tf.math.argmax)."""
    return _reduction_ops.argmax(input, axis=dimension, name=name, output_type=output_type)


@tf_export("arg_min")
def arg_min(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """The index of the smallest value along `dimension` (tf.math.argmin)."""
    return _reduction_ops.argmin(input, axis=dimension, name=name, output_type=output_type)


@tf_export("to_bfloat16")
def to_bfloat16(x, name="ToBFloat16"):
    return _math_ops.cast(x, _dtypes.bfloat16, name=name)


@tf_export("to_complex64")
def to_complex64(x, name="ToComplex64"):
    """x cast to complex64 (a real x gets a zero imaginary part)."""
    return _math_ops.cast(x, _dtypes.complex64, name=name)


@tf_export("to_complex128")
def to_complex128(x, name="ToComplex128"):
    """x cast to complex128 (a real x gets a zero imaginary part)."""
    return _math_ops.cast(x, _dtypes.complex128, name=name)


# tf.dtypes holds cast beside the dtype names.
export_value("dtypes.cast", _math_ops.cast)
