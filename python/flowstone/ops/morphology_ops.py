"""Grayscale morphology: tf.nn.dilation2d (the Dilation2D op) and tf.nn.erosion2d, its dual."""

from flowstone.framework import ops as _ops
from flowstone.ops import math_ops
from flowstone.ops.conv_ops import _convert, _lookup
from flowstone.util.tf_export import tf_export


@tf_export("nn.dilation2d")
def dilation2d(input, filter=None, strides=None, rates=None, padding=None,  # noqa: A002
               name=None, filters=None, dilations=None):
    """Max over each window of input + filter (a [rows, cols, depth] structuring function),
    with strides and rates given as [1, rows, cols, 1]."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    rates = _lookup("dilations", dilations, "rates", rates)
    x = _convert(input, "input")
    f = _convert(filter, "filter", like=x)
    attrs = {"strides": [int(s) for s in strides], "rates": [int(r) for r in rates],
             "padding": padding}
    return _ops.apply_op("Dilation2D", [x, f], attrs, name=name or "Dilation2D").outputs[0]


@tf_export("nn.erosion2d")
def erosion2d(value, kernel, strides, rates, padding, name=None):
    """Min over each window of value - kernel (the kernel mirrored), by duality with dilation:
    -dilation2d(-value, reverse(kernel))."""
    with _ops.name_scope(name, "erosion2d") as scope:
        x = _convert(value, "value")
        k = _convert(kernel, "kernel", like=x)
        dilated = dilation2d(math_ops.negative(x), k[::-1, ::-1], strides, rates, padding,
                             name=scope.rstrip("/"))
        return math_ops.negative(dilated)
