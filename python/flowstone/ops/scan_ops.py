"""Scans along an axis: tf.math.cumsum, tf.math.cumprod and tf.math.cumulative_logsumexp, with
TensorFlow's `exclusive` and `reverse` (kernels in src/ops/array/scan_ops.cc)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _scan(op_type, x, axis, exclusive, reverse, name):
    with _ops.name_scope(name, op_type, [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        axis = _ops.convert_to_tensor(axis, preferred_dtype=_dtypes.int32, name="axis")
        return _ops.apply_op(op_type, [x, axis],
                             {"exclusive": bool(exclusive), "reverse": bool(reverse)},
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


@tf_export("math.cumsum", "cumsum")
def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis`: [a, b, c] -> [a, a + b, a + b + c]."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


@tf_export("math.cumprod", "cumprod")
def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis`: [a, b, c] -> [a, a * b, a * b * c]."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


@tf_export("math.cumulative_logsumexp")
def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along `axis`, without overflow."""
    return _scan("CumulativeLogsumexp", x, axis, exclusive, reverse, name)
