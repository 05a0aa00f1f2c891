"""tf.math's incomplete gamma and beta functions (igamma, igammac, betainc) and nextafter: one
C++ op each (src/ops/math/incomplete_function_ops.cc); and the small TF1 names over existing
ops (tf.math.l2_normalize, tf.math.invert_permutation, tf.count_up_to)."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, nn_impl
from flowstone.ops.math_ops import _binary, _finish
from flowstone.util.tf_export import export_value, tf_export

export_value("math.l2_normalize", nn_impl.l2_normalize)
export_value("math.invert_permutation", array_ops.invert_permutation)


@tf_export("math.igamma", "igamma")
def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function P(a, x)."""
    return _binary("Igamma", a, x, name, "Igamma")


@tf_export("math.igammac", "igammac")
def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _binary("Igammac", a, x, name, "Igammac")


@tf_export("math.betainc", "betainc")
def betainc(a, b, x, name=None):
    """The regularized incomplete beta function I_x(a, b). a, b and x have one shape, or are
    scalars."""
    with _ops.name_scope(name, "Betainc", [a, b, x]) as scope:
        # The dtype of the first Tensor operand, else of the first numpy array.
        typed = ([v.dtype for v in (a, b, x) if isinstance(v, _ops.Tensor)] +
                 [_dtypes.as_dtype(v.dtype) for v in (a, b, x) if isinstance(v, np.ndarray)])
        dtype = typed[0] if typed else None
        a = _ops.convert_to_tensor(a, dtype=dtype, name="a")
        b = _ops.convert_to_tensor(b, dtype=a.dtype, name="b")
        x = _ops.convert_to_tensor(x, dtype=a.dtype, name="x")
        return _finish("Betainc", [a, b, x], scope)


@tf_export("math.nextafter")
def nextafter(x1, x2, name=None):
    """The next representable value after x1 in the direction of x2, elementwise."""
    return _binary("NextAfter", x1, x2, name, "NextAfter")


@tf_export("count_up_to")
def count_up_to(ref, limit, name=None):
    """Increments the integer variable `ref` until it reaches `limit`; returns the value before
    the increment (OutOfRangeError at the limit)."""
    with _ops.name_scope(name, "CountUpTo"):
        return ref.count_up_to(limit)
