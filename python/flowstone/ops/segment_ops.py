"""Segment reductions: tf.math.segment_* (sorted ids), tf.math.unsorted_segment_* and
tf.sparse.segment_* (rows chosen by indices). The kernels are in src/ops/array/segment_ops.cc;
unsorted_segment_mean and _sqrt_n are composed from UnsortedSegmentSum, as in TensorFlow."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.util.tf_export import tf_export


def _op(op_type, inputs, scope, attrs=None):
    """Adds the op named exactly after the enclosing name scope, as TensorFlow's wrappers do."""
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/") or op_type,
                         exact_name=bool(scope)).outputs[0]


def _ids(value, name="segment_ids"):
    return _ops.convert_to_tensor(value, preferred_dtype=_dtypes.int32, name=name)


def _sorted_segment(op_type, data, segment_ids, name):
    with _ops.name_scope(name, op_type, [data, segment_ids]) as scope:
        data = _ops.convert_to_tensor(data, name="data")
        return _op(op_type, [data, _ids(segment_ids)], scope)


def _unsorted_segment(op_type, data, segment_ids, num_segments, name):
    with _ops.name_scope(name, op_type, [data, segment_ids, num_segments]) as scope:
        data = _ops.convert_to_tensor(data, name="data")
        num_segments = _ops.convert_to_tensor(num_segments, preferred_dtype=_dtypes.int32,
                                              name="num_segments")
        return _op(op_type, [data, _ids(segment_ids), num_segments], scope)


@tf_export("math.segment_sum", "segment_sum")
def segment_sum(data, segment_ids, name=None):
    """Sums of the rows of data in each segment; segment_ids are sorted, one per row."""
    return _sorted_segment("SegmentSum", data, segment_ids, name)


@tf_export("math.segment_mean", "segment_mean")
def segment_mean(data, segment_ids, name=None):
    """Means of the rows of data in each segment (sorted ids); empty segments give 0."""
    return _sorted_segment("SegmentMean", data, segment_ids, name)


@tf_export("math.segment_max", "segment_max")
def segment_max(data, segment_ids, name=None):
    """Maxima of the rows of data in each segment (sorted ids); empty segments give 0."""
    return _sorted_segment("SegmentMax", data, segment_ids, name)


@tf_export("math.segment_min", "segment_min")
def segment_min(data, segment_ids, name=None):
    """Minima of the rows of data in each segment (sorted ids); empty segments give 0."""
    return _sorted_segment("SegmentMin", data, segment_ids, name)


@tf_export("math.segment_prod", "segment_prod")
def segment_prod(data, segment_ids, name=None):
    """Products of the rows of data in each segment (sorted ids); empty segments give 1."""
    return _sorted_segment("SegmentProd", data, segment_ids, name)


@tf_export("math.unsorted_segment_max", "unsorted_segment_max")
def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """Maxima by segment id into num_segments rows; empty segments give the lowest value."""
    return _unsorted_segment("UnsortedSegmentMax", data, segment_ids, num_segments, name)


@tf_export("math.unsorted_segment_min", "unsorted_segment_min")
def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """Minima by segment id into num_segments rows; empty segments give the largest value."""
    return _unsorted_segment("UnsortedSegmentMin", data, segment_ids, num_segments, name)


@tf_export("math.unsorted_segment_prod", "unsorted_segment_prod")
def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """Products by segment id into num_segments rows; empty segments give 1."""
    return _unsorted_segment("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def _segment_sizes(data, segment_ids, num_segments):
    """The number of rows in each segment, at least 1, shaped [num_segments, 1, ...] to
    broadcast over the rows of the sums (TensorFlow's _unsorted_segment_N)."""
    ones = _array_ops.ones_like(segment_ids, dtype=data.dtype)
    sizes = _array_ops.unsorted_segment_sum(ones, segment_ids, num_segments)
    row_rank = _array_ops.rank(data) - _array_ops.rank(segment_ids)
    shape = _array_ops.concat([[-1], _array_ops.ones([row_rank], _dtypes.int32)], 0)
    return _math_ops.maximum(_array_ops.reshape(sizes, shape), 1)


def _unsorted_segment_scaled(data, segment_ids, num_segments, name, default_name, scale):
    with _ops.name_scope(name, default_name, [data, segment_ids, num_segments]):
        data = _ops.convert_to_tensor(data, name="data")
        segment_ids = _ids(segment_ids)
        sums = _array_ops.unsorted_segment_sum(data, segment_ids, num_segments)
        result = sums / scale(_segment_sizes(data, segment_ids, num_segments))
        result.set_shape(sums.shape)  # the sizes broadcast over the rows of the sums
        return result


@tf_export("math.unsorted_segment_mean", "unsorted_segment_mean")
def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Means by segment id into num_segments rows; empty segments give 0."""
    return _unsorted_segment_scaled(data, segment_ids, num_segments, name,
                                    "UnsortedSegmentMean", lambda n: n)


@tf_export("math.unsorted_segment_sqrt_n", "unsorted_segment_sqrt_n")
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sums by segment id divided by the square root of each segment's size."""
    return _unsorted_segment_scaled(data, segment_ids, num_segments, name,
                                    "UnsortedSegmentSqrtN", _math_ops.sqrt)


def _sparse_segment(op_type, data, indices, segment_ids, name, num_segments, sparse_gradient):
    with _ops.name_scope(name, op_type, [data, indices, segment_ids]) as scope:
        data = _ops.convert_to_tensor(data, name="data")
        indices = _ids(indices, "indices")
        segment_ids = _ids(segment_ids)
        if num_segments is None:
            return _op(op_type, [data, indices, segment_ids], scope,
                       {"sparse_gradient": bool(sparse_gradient)})
        # num_segments rows: the segments up to the last id, then zero rows.
        result = _op(op_type, [data, indices, segment_ids], "",
                     {"sparse_gradient": bool(sparse_gradient)})
        missing = num_segments - _array_ops.shape(result)[0]
        row_rank = _array_ops.rank(data) - 1
        paddings = _array_ops.concat(
            [_array_ops.reshape(_array_ops.stack([0, missing]), [1, 2]),
             _array_ops.zeros(_array_ops.stack([row_rank, 2]), _dtypes.int32)], 0)
        return _array_ops.pad(result, paddings)


@tf_export("sparse_segment_sum", "sparse.segment_sum")
def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None,
                       sparse_gradient=False):
    """Sums of the rows data[indices[k]] by sorted segment id segment_ids[k]."""
    return _sparse_segment("SparseSegmentSum", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)


@tf_export("sparse_segment_mean", "sparse.segment_mean")
def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None,
                        sparse_gradient=False):
    """Means of the rows data[indices[k]] by sorted segment id segment_ids[k]."""
    return _sparse_segment("SparseSegmentMean", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)


@tf_export("sparse_segment_sqrt_n", "sparse.segment_sqrt_n")
def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None,
                          sparse_gradient=False):
    """Sums of the rows data[indices[k]] by sorted segment id, divided by sqrt(segment size)."""
    return _sparse_segment("SparseSegmentSqrtN", data, indices, segment_ids, name, num_segments,
                           sparse_gradient)
