"""Clipping and norms: clip_by_value, clip_by_norm, clip_by_global_norm, clip_by_average_norm,
global_norm and tf.norm / tf.linalg.norm. TensorFlow builds each from elementwise ops and
reductions; so does this module, op for op, so that values, gradients and names match."""

import numbers

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import math_ops as _math
from flowstone.ops import reduction_ops as _reduction
from flowstone.util.tf_export import tf_export


def _op(op_type, inputs, attrs=None, name=None, exact_name=False):
    return _ops.apply_op(op_type, inputs, attrs, name=name or op_type,
                         exact_name=exact_name).outputs[0]


@tf_export("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """min(max(t, clip_value_min), clip_value_max) elementwise. The bounds may be scalars or
    tensors broadcasting to t's shape, but may not change it. The gradient passes where t is
    within the bounds (at a bound too)."""
    with _ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = _ops.convert_to_tensor(t, name="t")
        t_min = _math.minimum(values, clip_value_max)
        # The bounds must not broadcast t to a larger shape.
        values.shape.assert_is_compatible_with(t_min.shape)
        t_max = _math.maximum(t_min, clip_value_min, name=scope)  # the scope itself, re-entered
        values.shape.assert_is_compatible_with(t_max.shape)
        return t_max


@tf_export("clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t, axes), clip_norm): t scaled so that its L2 norm over `axes`
    (all axes when None) is at most clip_norm. A zero t stays zero with a finite gradient."""
    with _ops.name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = _ops.convert_to_tensor(t, name="t")
        l2sum = _reduction.reduce_sum(values * values, axes, keepdims=True)
        positive = l2sum > 0
        # Two selects so that the gradient of sqrt at 0 never becomes NaN.
        l2sum_safe = _math.where(positive, l2sum, _array.ones_like(l2sum))
        l2norm = _math.where(positive, _math.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.assert_is_compatible_with(intermediate.shape)
        clipped = intermediate / _math.maximum(l2norm, clip_norm)
        return _op("Identity", [clipped], name=scope.rstrip("/"), exact_name=True)


def _as_tensor_list(t_list):
    if not isinstance(t_list, (list, tuple)):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    return list(t_list)


@tf_export("global_norm", "linalg.global_norm")
def global_norm(t_list, name=None):
    """sqrt(sum of squares of every element of every tensor in t_list); None entries are
    skipped."""
    t_list = _as_tensor_list(t_list)
    with _ops.name_scope(name, "global_norm", [t for t in t_list if t is not None]):
        half_squared_norms = []
        for i, t in enumerate(t_list):
            if t is None:
                continue
            v = _ops.convert_to_tensor(t, name=f"t_{i}")
            with _ops.colocate_with(v):
                half_squared_norms.append(_op("L2Loss", [v]))
        half_squared_norm = _reduction.reduce_sum(_array.stack(half_squared_norms))
        two = _ops.constant(2.0, dtype=half_squared_norm.dtype)
        return _math.sqrt(half_squared_norm * two, name="global_norm")


@tf_export("clip_by_global_norm")
def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor of t_list by clip_norm / max(global_norm, clip_norm) and returns
    (list_clipped, global_norm). `use_norm` replaces the computed global norm. When that norm is
    inf or NaN every clipped value is NaN, as in TensorFlow, so that a diverged step is visible
    rather than silently scaled to zero."""
    t_list = _as_tensor_list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    present = [t for t in t_list if t is not None]
    with _ops.name_scope(name, "clip_by_global_norm", present + [clip_norm]) as scope:
        use_norm = _ops.convert_to_tensor(use_norm, name="use_norm")
        one = _ops.constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * _math.minimum(1.0 / use_norm, one / clip_norm)
        # use_norm - use_norm is 0 for finite norms and NaN for inf and NaN.
        scale = scale_for_finite + (use_norm - use_norm)
        clipped = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            v = _ops.convert_to_tensor(t, name=f"t_{i}")
            with _ops.colocate_with(v):
                # TensorFlow's name: "<scope>/<scope>/_<i>".
                clipped.append(_op("Identity", [v * scale], name=f"{scope}_{i}"))
        return clipped, use_norm


@tf_export("clip_by_average_norm")
def clip_by_average_norm(t, clip_norm, name=None):
    """t scaled so that its L2 norm divided by its number of elements is at most clip_norm
    (deprecated in TensorFlow; kept for TF1 programs)."""
    with _ops.name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = _ops.convert_to_tensor(t, name="t")
        n_element = _math.cast(_array.size(t), _dtypes.float32)
        all_axes = _array.range(_array.rank(t))
        l2norm_inv = _math.rsqrt(_reduction.reduce_sum(t * t, all_axes))
        limit = _math.minimum(l2norm_inv * n_element, _ops.constant(1.0) / clip_norm)
        return _op("Identity", [t * clip_norm * limit], name=scope.rstrip("/"), exact_name=True)


_MATRIX_NORMS = ["euclidean", "fro", 1, 2, np.inf]
_VECTOR_NORMS = ["euclidean", 1, 2, np.inf]


def _check_norm_args(ord, axis):  # noqa: A002 - TensorFlow's name
    """TensorFlow's argument checks; returns (is_matrix_norm, axis as a tuple or None)."""
    is_matrix_norm = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix_norm:
        axis = tuple(axis)
        if (not isinstance(axis[0], int) or not isinstance(axis[1], int)
                or axis[0] == axis[1]):
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                             f"got {axis}")
        if ord not in _MATRIX_NORMS:
            raise ValueError(f"'ord' must be a supported matrix norm in {_MATRIX_NORMS}, got "
                             f"{ord}")
        return True, axis
    if not (isinstance(axis, int) or axis is None):
        raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, got "
                         f"{axis}")
    if (not isinstance(ord, numbers.Real) or ord <= 0) and ord not in _VECTOR_NORMS:
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    return False, None if axis is None else (axis,)


def _matrix_2_norm(tensor, axis):
    """The largest singular value over the two axes, which are moved last for the SVD and put
    back (as size-1 dimensions) afterwards."""
    rank = tensor.shape.rank
    if rank is None:
        raise ValueError("tf.norm with ord=2 over two axes needs the input's rank known while "
                         "building the graph.")
    positive = [a % rank for a in axis]
    perm_before = [i for i in range(rank) if i not in positive] + positive
    perm_after = [perm_before.index(i) for i in range(rank)]
    permed = _array.transpose(tensor, perm_before)
    singular_values = _ops.apply_op("Svd", [permed], {"compute_uv": False}).outputs[0]
    largest = _reduction.reduce_max(_math.abs(singular_values), axis=-1, keepdims=True)
    return _array.transpose(_array.expand_dims(largest, -1), perm_after)


@tf_export("norm", "linalg.norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """The vector norm over one axis (or all of them), or the matrix norm over two axes:
    ord 'euclidean'/'fro' (sqrt of the sum of squares), 1, 2, inf, or any p > 0 for vectors."""
    keepdims = bool(_reduction._deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    is_matrix_norm, axis = _check_norm_args(ord, axis)
    with _ops.name_scope(name, "norm", [tensor]):
        tensor = _ops.convert_to_tensor(tensor)
        if ord in ["fro", "euclidean", 2, 2.0]:
            if is_matrix_norm and ord in [2, 2.0]:
                result = _matrix_2_norm(tensor, axis)
            else:
                result = _math.sqrt(_reduction.reduce_sum(tensor * tensor, axis, keepdims=True))
        else:
            result = _math.abs(tensor)
            if ord == 1:
                sum_axis = None if axis is None else axis[0]
                result = _reduction.reduce_sum(result, sum_axis, keepdims=True)
                if is_matrix_norm:
                    result = _reduction.reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if is_matrix_norm:
                    result = _reduction.reduce_sum(result, axis[1], keepdims=True)
                max_axis = None if axis is None else axis[0]
                result = _reduction.reduce_max(result, max_axis, keepdims=True)
            else:
                powered = _math.pow(result, ord)
                result = _math.pow(_reduction.reduce_sum(powered, axis, keepdims=True), 1.0 / ord)
        if not keepdims:
            result = _array.squeeze(result, axis)
        return result
