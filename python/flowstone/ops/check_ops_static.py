"""The assertions TF1 exports besides those of check_ops.py: dtype, scalar and rank-range checks
(decided while building when the shape is known, else checked at run time), and the initialized
check over variables. Messages are TensorFlow's."""

import collections.abc

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops, math_reductions, variables
from flowstone.ops.basic_ops import no_op
from flowstone.ops.check_ops import Assert
from flowstone.util.tf_export import tf_export


def _prefix(message):
    return f"{message}.  " if message else ""


@tf_export("debugging.assert_integer", "assert_integer")
def assert_integer(x, message=None, name=None):
    """Raises TypeError now unless `x` has an integer dtype; returns a no-op."""
    with _ops.name_scope(name, "assert_integer", [x]):
        x = _ops.convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(f"{_prefix(message)}Expected \"x\" to be integer type.  Found: "
                            f"{x.name} of dtype {x.dtype!r}")
        return no_op("statically_determined_was_integer")


@tf_export("debugging.assert_scalar", "assert_scalar")
def assert_scalar(tensor, name=None, message=None):
    """Raises ValueError now unless `tensor` is a scalar (when its rank is known); returns the
    tensor."""
    with _ops.name_scope(name, "assert_scalar", [tensor]):
        tensor = _ops.convert_to_tensor(tensor, name="tensor")
        if tensor.shape.ndims is not None and tensor.shape.ndims != 0:
            raise ValueError(f"{_prefix(message)}Expected scalar shape for {tensor.name}, saw "
                             f"shape: {tensor.shape}.")
        return tensor


def _rank_assert(x, ranks, describe, data, summarize, message, name, default_name):
    """Static rank check when the rank is known, else an Assert that rank(x) is in `ranks`."""
    with _ops.name_scope(name, default_name, [x]):
        x = _ops.convert_to_tensor(x, name="x")
        static_rank = x.shape.ndims
        if static_rank is not None:
            if not ranks(static_rank):
                raise ValueError(f"{_prefix(message)}Tensor {x.name} must have rank "
                                 f"{describe}.  Received rank {static_rank}, shape {x.shape}")
            return no_op("static_checks_determined_all_ok")
        rank = array_ops.rank(x)
        condition = ranks(rank)
        if data is None:
            data = [message or "", f"Tensor {x.name} must have rank {describe}",
                    "Received shape: ", array_ops.shape(x)]
        return Assert(condition, data, summarize=summarize)


@tf_export("debugging.assert_rank_at_least", "assert_rank_at_least")
def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts rank(x) >= rank: a ValueError now when the rank is known, else at run time."""
    def at_least(actual):
        return actual >= rank if isinstance(actual, int) else math_ops.greater_equal(actual, rank)
    return _rank_assert(x, at_least, f"at least {rank}", data, summarize, message, name,
                        "assert_rank_at_least")


@tf_export("debugging.assert_rank_in", "assert_rank_in")
def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """Asserts rank(x) is one of `ranks`: a ValueError now when the rank is known, else at run
    time."""
    ranks = tuple(int(r) for r in ranks)

    def is_in(actual):
        if isinstance(actual, int):
            return actual in ranks
        matches = [math_ops.equal(actual, r) for r in ranks]
        return math_reductions.reduce_any(array_ops.stack(matches))
    return _rank_assert(x, is_in, f"in {ranks}", data, summarize, message, name,
                        "assert_rank_in")


@tf_export("debugging.assert_same_float_dtype", "assert_same_float_dtype")
def assert_same_float_dtype(tensors=None, dtype=None):
    """The float dtype every tensor of `tensors` (and `dtype`, if given) shares (float32 when
    there are none); ValueError when they differ or are not floats."""
    if tensors:
        first = None
        for tensor in tensors:
            if first is None:
                first = tensor
                dtype = dtype or tensor.dtype.base_dtype
            elif tensor.dtype.base_dtype != dtype:
                raise ValueError(f"{tensor.name}, type={tensor.dtype!r}, must be of the same "
                                 f"type ({dtype!r}) as {first.name}.")
            if tensor.dtype.base_dtype != dtype:
                raise ValueError(f"{tensor.name}, type={tensor.dtype!r}, must be of the same "
                                 f"type ({dtype!r}).")
    if dtype is None:
        return _dtypes.float32
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype!r}.")
    return dtype


@tf_export("debugging.assert_proper_iterable", "assert_proper_iterable")
def assert_proper_iterable(values):
    """Raises TypeError unless `values` is an iterable other than a tensor, an array or a
    string (which iterate over their elements or characters, not as a list of values)."""
    unintentional = (_ops.Tensor, variables.Variable, np.ndarray, str, bytes)
    if isinstance(values, unintentional):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: "
                        f"{type(values)}")
    if not isinstance(values, collections.abc.Iterable):
        raise TypeError(f"Expected argument \"values\" to be iterable.  Found: {type(values)}")


@tf_export("assert_variables_initialized")
def assert_variables_initialized(var_list=None):
    """An op that fails at run time unless every variable of `var_list` (default: the global and
    local variables) is initialized; None when there are none."""
    if var_list is None:
        var_list = variables.global_variables() + variables.local_variables()
    if not var_list:
        return None
    with _ops.name_scope("assert_variables_initialized"):
        ready = array_ops.stack([variables.is_variable_initialized(v) for v in var_list])
        return Assert(math_reductions.reduce_all(ready), ["Variables not initialized"],
                      name="Assert")
