"""Sorting, searching and counting: tf.sort and tf.argsort (built on TopKV2, as in TensorFlow),
tf.unique, tf.unique_with_counts, tf.setdiff1d, tf.searchsorted, tf.math.bincount,
tf.histogram_fixed_width and tf.unravel_index (kernels in src/ops/array/unique_ops.cc and
search_ops.cc)."""

import collections
import numbers

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import nn_impl as _nn_impl
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.util.tf_export import tf_export

UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])
ListDiffOutput = collections.namedtuple("ListDiff", ["out", "idx"])


def _outputs(op_type, inputs, scope, attrs=None):
    """The outputs of an op named exactly after the enclosing name scope."""
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/") or op_type,
                         exact_name=bool(scope)).outputs


# --- sort and argsort -------------------------------------------------------------------------

def _sort_or_argsort(values, axis, direction, return_argsort):
    """Sorts along `axis` with top_k over the last axis: ascending order sorts the negated
    values. Ties keep their order, so argsort is stable."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    if not isinstance(axis, numbers.Integral):
        raise ValueError(f"Argument `axis` must be a constant integer. Received: axis={axis}")
    values = _ops.convert_to_tensor(values, name="values")
    rank = values.shape.ndims
    if rank is None:
        raise ValueError("Cannot sort a tensor of unknown rank; give it a static rank first.")
    if rank == 0:
        raise ValueError(f"Argument `axis` ({axis}) is out of bounds for a scalar.")
    if not -rank <= axis < rank:
        raise ValueError(f"Argument `axis` ({axis}) is out of bounds for a tensor of rank "
                         f"{rank}.")
    axis %= rank
    ascending = direction == "ASCENDING"
    if ascending:
        values = -values
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        values = _array_ops.transpose(values, perm)
    size = values.shape.as_list()[-1]
    top = _nn_impl.top_k(values, k=_array_ops.shape(values)[-1] if size is None else size)
    result = top.indices if return_argsort else top.values
    if perm is not None:
        result = _array_ops.transpose(result, perm)
    if ascending and not return_argsort:
        result = -result
    return result


@tf_export("sort")
def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (ASCENDING or DESCENDING)."""
    with _ops.name_scope(name, "sort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


@tf_export("argsort")
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort `values` along `axis`. The sort is always stable: equal
    values keep their order, whatever `stable` says."""
    with _ops.name_scope(name, "argsort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


# --- unique values ----------------------------------------------------------------------------

@tf_export("unique")
def unique(x, out_idx=_dtypes.int32, name=None):
    """The distinct values of a vector in order of first appearance (y), and the position in y
    of each element's value (idx)."""
    with _ops.name_scope(name, "Unique", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        return UniqueOutput(*_outputs("Unique", [x], scope,
                                      {"out_idx": _dtypes.as_dtype(out_idx)}))


@tf_export("unique_with_counts")
def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """tf.unique, and how often each distinct value occurs (count)."""
    with _ops.name_scope(name, "UniqueWithCounts", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        return UniqueWithCountsOutput(*_outputs("UniqueWithCounts", [x], scope,
                                                {"out_idx": _dtypes.as_dtype(out_idx)}))


@tf_export("setdiff1d")
def setdiff1d(x, y, index_dtype=_dtypes.int32, name=None):
    """The values of x that are not in y, in x's order (out), and their positions in x (idx)."""
    with _ops.name_scope(name, "ListDiff", [x, y]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        y = _ops.convert_to_tensor(y, dtype=x.dtype, name="y")
        return ListDiffOutput(*_outputs("ListDiff", [x, y], scope,
                                        {"out_idx": _dtypes.as_dtype(index_dtype)}))


# --- searching and counting -------------------------------------------------------------------

@tf_export("searchsorted")
def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """Where each of `values` would be inserted into the rows (last axis) of sorted_sequence to
    keep them sorted: before equal entries (side='left') or after them (side='right')."""
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: "
                         f"`side` = '{side}'.")
    # As in TensorFlow, only the bound op is named (`name`); the reshapes are not scoped.
    sorted_sequence = _ops.convert_to_tensor(sorted_sequence, name="sorted_sequence")
    values = _ops.convert_to_tensor(values, dtype=sorted_sequence.dtype, name="values")
    sequence_size = _array_ops.shape(sorted_sequence)[-1]
    values_size = _array_ops.shape(values)[-1]
    sequence_2d = _array_ops.reshape(sorted_sequence, _array_ops.stack([-1, sequence_size]))
    values_2d = _array_ops.reshape(values, _array_ops.stack([-1, values_size]))
    op_type = "UpperBound" if side == "right" else "LowerBound"
    output = _ops.apply_op(op_type, [sequence_2d, values_2d],
                           {"out_type": _dtypes.as_dtype(out_type)}, name=name).outputs[0]
    return _array_ops.reshape(output, _array_ops.shape(values))


@tf_export("math.bincount", "bincount")
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32, name=None):
    """How often each value in [0, max(arr)] occurs in the int32 tensor arr (or the sum of the
    weights of its occurrences), with at least minlength and at most maxlength bins."""
    with _ops.name_scope(name, "bincount", [arr, weights, minlength, maxlength]):
        arr = _ops.convert_to_tensor(arr, dtype=_dtypes.int32, name="arr")
        nonempty = _math_ops.cast(_array_ops.size(arr) > 0, _dtypes.int32)
        output_size = nonempty * (_reduction_ops.reduce_max(arr) + 1)
        if minlength is not None:
            output_size = _math_ops.maximum(minlength, output_size)
        if maxlength is not None:
            output_size = _math_ops.minimum(maxlength, output_size)
        if weights is not None:
            weights = _ops.convert_to_tensor(weights, name="weights")
            return _array_ops.unsorted_segment_sum(weights, arr, output_size)
        weights = _ops.constant([], _dtypes.as_dtype(dtype))
        return _ops.apply_op("Bincount", [arr, output_size, weights]).outputs[0]


@tf_export("histogram_fixed_width")
def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """Counts of `values` in nbins equal bins spanning value_range = [lo, hi]; values below lo
    count in the first bin and values from hi on in the last."""
    with _ops.name_scope(name, "histogram_fixed_width", [values, value_range, nbins]) as scope:
        values = _ops.convert_to_tensor(values, name="values")
        value_range = _ops.convert_to_tensor(value_range, dtype=values.dtype,
                                             name="value_range")
        nbins = _ops.convert_to_tensor(nbins, dtype=_dtypes.int32, name="nbins")
        return _outputs("HistogramFixedWidth", [values, value_range, nbins], scope,
                        {"dtype": _dtypes.as_dtype(dtype)})[0]


@tf_export("unravel_index")
def unravel_index(indices, dims, name=None):
    """The coordinates of flat `indices` in a row-major tensor of shape `dims`: [len(dims)] for
    a scalar index, [len(dims), n] for a vector of n."""
    with _ops.name_scope(name, "UnravelIndex", [indices, dims]) as scope:
        indices = _ops.convert_to_tensor(indices, preferred_dtype=_dtypes.int32, name="indices")
        dims = _ops.convert_to_tensor(dims, dtype=indices.dtype, name="dims")
        return _outputs("UnravelIndex", [indices, dims], scope)[0]
