"""Complex numbers: tf.complex, tf.math.real / imag / conj / angle (complex tensors go to the
Complex, Real, Imag, Conj and Angle ops; a real tensor is its own real part and conjugate, with
imaginary part 0 and angle 0 or pi, as in TensorFlow)."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import math_ops as _math
from flowstone.util.tf_export import tf_export

# The complex dtype of each real precision.
_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}


def _op(op_type, inputs, attrs, scope):
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/"),
                         exact_name=True).outputs[0]


@tf_export("dtypes.complex", "complex")
def complex(real, imag, name=None):  # noqa: A001 - TensorFlow's name
    """real + i * imag: float32 parts give complex64 and float64 parts complex128."""
    with _ops.name_scope(name, "Complex", [real, imag]) as scope:
        real = _ops.convert_to_tensor(real, name="real")
        imag = _ops.convert_to_tensor(imag, name="imag")
        if real.dtype != imag.dtype:
            raise TypeError(f"real and imag must have the same dtype, got {real.dtype.name} and "
                            f"{imag.dtype.name}")
        tout = _COMPLEX_OF.get(real.dtype)
        if tout is None:
            raise TypeError(f"tf.complex takes float32 or float64 parts, got {real.dtype.name}")
        return _op("Complex", [real, imag], {"Tout": tout}, scope)


def _to_real(op_type, x, scope):
    return _op(op_type, [x], {"Tout": x.dtype.real_dtype}, scope)


@tf_export("math.real", "real")
def real(input, name=None):  # noqa: A002 - TensorFlow's name
    """The real part of each element; a real tensor is its own."""
    with _ops.name_scope(name, "Real", [input]) as scope:
        x = _ops.convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return _to_real("Real", x, scope)
        return x


@tf_export("math.imag", "imag")
def imag(input, name=None):  # noqa: A002
    """The imaginary part of each element: zeros for a real tensor."""
    with _ops.name_scope(name, "Imag", [input]) as scope:
        x = _ops.convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return _to_real("Imag", x, scope)
        return _array.zeros_like(x)


@tf_export("math.conj", "conj")
def conj(x, name=None):
    """The complex conjugate of each element; a real tensor is its own."""
    with _ops.name_scope(name, "Conj", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return _op("Conj", [x], {}, scope)
        if not (x.dtype.is_floating or x.dtype.is_integer):
            raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}")
        return x


@tf_export("math.angle", "angle")
def angle(input, name=None):  # noqa: A002
    """The argument of each element, in [-pi, pi]; for a real tensor pi where it is negative,
    else 0."""
    with _ops.name_scope(name, "Angle", [input]) as scope:
        x = _ops.convert_to_tensor(input, name="input")
        if x.dtype.is_complex:
            return _to_real("Angle", x, scope)
        pi = _ops.constant(np.pi, dtype=x.dtype) * _array.ones_like(x)
        return _math.where(x < 0, pi, _array.zeros_like(x))
