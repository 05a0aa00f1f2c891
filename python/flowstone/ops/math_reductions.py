"""tf.math's reductions beyond the five arithmetic ones: reduce_any and reduce_all (the Any and All
ops), and reduce_logsumexp, count_nonzero, reduce_variance, reduce_std and reduce_euclidean_norm,
which TensorFlow composes from other ops the same way."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import reduction_ops as _reduction
from flowstone.ops.reduction_ops import _deprecated_lookup, _reduce
from flowstone.util.tf_export import tf_export


@tf_export("math.reduce_any", "reduce_any")
def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical or over `axis` (all axes when None); False over an empty axis."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


@tf_export("math.reduce_all", "reduce_all")
def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical and over `axis` (all axes when None); True over an empty axis."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _apply(op_type, inputs, attrs=None, name=None):
    return _ops.apply_op(op_type, inputs, attrs, name=name or op_type).outputs[0]


@tf_export("math.reduce_logsumexp", "reduce_logsumexp")
def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """log(sum(exp(x))) over `axis`, computed as max + log(sum(exp(x - max))) so that it neither
    overflows nor underflows; the (finite) max is a constant for the gradient, as in TF."""
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    with _ops.name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = _reduction.reduce_max(x, axis, keepdims=True)
        finite = _apply("IsFinite", [raw_max])
        zeros = _apply("ZerosLike", [raw_max])
        my_max = _apply("StopGradient", [_apply("SelectV2", [finite, raw_max, zeros])])
        shifted = _apply("Exp", [_apply("Sub", [x, my_max])])
        result = _apply("Log", [_reduction.reduce_sum(shifted, axis, keepdims=keepdims)])
        if not keepdims:
            my_max = _apply("Reshape", [my_max, _apply("Shape", [result])])
        return _ops.apply_op("AddV2", [result, my_max], name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("math.count_nonzero", "count_nonzero")
def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero elements over `axis`, as `dtype` (int64 by default)."""
    input_tensor = _deprecated_lookup("input_tensor", input_tensor, "input", input)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    with _ops.name_scope(name, "count_nonzero", [input_tensor]):
        x = _ops.convert_to_tensor(input_tensor, name="input")
        zero = _ops.constant(np.zeros((), x.dtype.as_numpy_dtype), name="zeros")
        nonzero = _apply("Cast", [_apply("NotEqual", [x, zero])], {"DstT": _dtypes.int64})
        count = _reduction.reduce_sum(nonzero, axis, keepdims=keepdims)
        dtype = _dtypes.as_dtype(dtype)
        if dtype == _dtypes.int64:
            return count
        return _apply("Cast", [count], {"DstT": dtype})


def _check_floating(x, fn_name):
    if not x.dtype.is_floating:
        raise TypeError(f"Input must be either real or complex, for {fn_name} got {x.dtype.name}")


@tf_export("math.reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The population variance (mean squared deviation from the mean) over `axis`."""
    with _ops.name_scope(name or "reduce_variance"):
        x = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        _check_floating(x, "reduce_variance")
        means = _reduction.reduce_mean(x, axis, keepdims=True)
        squared_deviations = _apply("Square", [_apply("Sub", [x, means])])
        return _reduction.reduce_mean(squared_deviations, axis, keepdims=keepdims)


@tf_export("math.reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The population standard deviation over `axis`."""
    with _ops.name_scope(name or "reduce_std"):
        x = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        _check_floating(x, "reduce_std")
        return _apply("Sqrt", [reduce_variance(x, axis=axis, keepdims=keepdims)])


@tf_export("math.reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x^2)) over `axis` (floating inputs; TensorFlow's one op, EuclideanNorm, is
    composed here from Square, Sum and Sqrt)."""
    with _ops.name_scope(name, "EuclideanNorm", [input_tensor]) as scope:
        x = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        _check_floating(x, "reduce_euclidean_norm")
        total = _reduction.reduce_sum(_apply("Square", [x]), axis, keepdims=keepdims)
        return _ops.apply_op("Sqrt", [total], name=scope.rstrip("/"), exact_name=True).outputs[0]
