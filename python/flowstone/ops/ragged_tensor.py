"""tf.RaggedTensor: a tensor whose rows have different lengths, as a composite of tensors (the
design of tf.SparseTensor, see docs/architecture/ragged-tensors.md): `values` (a Tensor, or a
RaggedTensor for more ragged dimensions) and `row_splits`, the int64 (or int32) offsets of each
row in `values`. Row i is values[row_splits[i]:row_splits[i + 1]]. A session fetches one as a
RaggedTensorValue (numpy components); the per-element work (to_tensor, to_sparse, gather,
range) is done by C++ ops (src/ops/array/ragged_ops.cc), everything else composes ordinary ops
on the components. tf.ragged's functions are in flowstone/ops/ragged_ops.py."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, check_ops, manip_ops, math_ops, math_reductions,
                           partition_ops, reduction_ops, scan_ops)
from flowstone.ops.basic_ops import identity as _identity
from flowstone.util.tf_export import tf_export


def _partition(value, name):
    """A row partition argument as a tensor: int64 unless it is a tensor or a numpy array of
    its own integer dtype (TensorFlow's dtype hint)."""
    if isinstance(value, (_ops.Tensor, np.ndarray)):
        return _ops.convert_to_tensor(value, name=name)
    return _ops.convert_to_tensor(value, dtype=_dtypes.int64, name=name)


@tf_export("ragged.RaggedTensorValue")
class _NestedRows:
    """What RaggedTensor and RaggedTensorValue share: values nested in row partitions, read
    through every level (a subclass's `values` may itself be of that subclass)."""

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)
    dtype = property(lambda self: self.flat_values.dtype)

    @property
    def flat_values(self):
        values = self._values
        while isinstance(values, type(self)):
            values = values.values
        return values

    @property
    def nested_row_splits(self):
        splits, rt = [], self
        while isinstance(rt, type(self)):
            splits.append(rt.row_splits)
            rt = rt.values
        return tuple(splits)

    @property
    def ragged_rank(self):
        return len(self.nested_row_splits)


class RaggedTensorValue(_NestedRows):
    """The numpy value of a RaggedTensor: values (a numpy array or a RaggedTensorValue) and
    row_splits."""

    def __init__(self, values, row_splits):
        self._values = values
        self._row_splits = np.asarray(row_splits)

    @property
    def shape(self):
        inner = np.shape(self.flat_values)[1:]
        return (len(self._row_splits) - 1,) + (None,) * self.ragged_rank + tuple(inner)

    def to_list(self):
        """The rows as nested Python lists."""
        values = (self._values.to_list() if isinstance(self._values, RaggedTensorValue)
                  else np.asarray(self._values).tolist())
        return [values[self._row_splits[i]:self._row_splits[i + 1]]
                for i in range(len(self._row_splits) - 1)]

    def __repr__(self):
        return (f"tf.RaggedTensorValue(values={self._values!r}, "
                f"row_splits={self._row_splits!r})")

    def __str__(self):
        return f"<tf.RaggedTensorValue {self.to_list()}>"


@tf_export("RaggedTensor")
class RaggedTensor(_NestedRows):
    """A tensor with ragged dimensions: `values` partitioned into rows by `row_splits`."""

    def __init__(self, values, row_splits, internal=False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the factory "
                             "methods instead (e.g., RaggedTensor.from_row_lengths())")
        self._values = values
        self._row_splits = row_splits

    # --- Factories -----------------------------------------------------------------------------

    @classmethod
    def _from_splits(cls, values, row_splits, validate=True):
        if not isinstance(values, RaggedTensor):
            values = _ops.convert_to_tensor(values, name="values")
            if values.shape.ndims == 0:
                raise ValueError("values must have rank >= 1, got a scalar")
        row_splits = _partition(row_splits, "row_splits")
        if row_splits.dtype not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"row_splits must be int32 or int64, got {row_splits.dtype.name}")
        if row_splits.shape.ndims not in (None, 1):
            raise ValueError(f"row_splits must be a vector, got shape {row_splits.shape}")
        if isinstance(values, RaggedTensor) and values.row_splits.dtype != row_splits.dtype:
            raise ValueError("dtype mismatch between row_splits and the values' row_splits: "
                             f"{row_splits.dtype.name} vs {values.row_splits.dtype.name}; use "
                             "RaggedTensor.with_row_splits_dtype")
        return cls(values, row_splits, internal=True)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromRowSplits"):
            return cls._from_splits(values, row_splits, validate)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromRowLengths"):
            lengths = _partition(row_lengths, "row_lengths")
            return cls._from_splits(values, _lengths_to_splits(lengths), validate)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromRowStarts"):
            starts = _partition(row_starts, "row_starts")
            count = _first_dim(values, starts.dtype)
            return cls._from_splits(values, array_ops.concat([starts, [count]], 0), validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromRowLimits"):
            limits = _partition(row_limits, "row_limits")
            zero = _ops.convert_to_tensor([0], dtype=limits.dtype)
            return cls._from_splits(values, array_ops.concat([zero, limits], 0), validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromValueRowIds"):
            rowids = _partition(value_rowids, "value_rowids")
            return cls._from_splits(values, rowids_to_splits(rowids, nrows), validate)

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None, validate=True,
                                name=None):
        with _ops.name_scope(name, "RaggedFromUniformRowLength"):
            return cls._from_splits(
                values, _uniform_splits(values, uniform_row_length, nrows), validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromNestedRowSplits"):
            result = flat_values
            for splits in reversed(list(nested_row_splits)):
                result = cls._from_splits(result, splits, validate)
            return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate=True):
        with _ops.name_scope(name, "RaggedFromNestedRowLengths"):
            result = flat_values
            for lengths in reversed(list(nested_row_lengths)):
                result = cls.from_row_lengths(result, lengths, validate=validate)
            return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None,
                                 name=None, validate=True):
        nested_value_rowids = list(nested_value_rowids)
        nested_nrows = list(nested_nrows) if nested_nrows is not None else \
            [None] * len(nested_value_rowids)
        with _ops.name_scope(name, "RaggedFromNestedValueRowIds"):
            result = flat_values
            for rowids, nrows in reversed(list(zip(nested_value_rowids, nested_nrows))):
                result = cls.from_value_rowids(result, rowids, nrows, validate=validate)
            return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None,
                    row_splits_dtype=_dtypes.int64):
        with _ops.name_scope(name, "RaggedFromTensor"):
            return _from_tensor(tensor, lengths, padding, ragged_rank,
                                           _dtypes.as_dtype(row_splits_dtype))

    @classmethod
    def from_sparse(cls, st_input, name=None, row_splits_dtype=_dtypes.int64):
        with _ops.name_scope(name, "RaggedFromSparse"):
            return _from_sparse(st_input, _dtypes.as_dtype(row_splits_dtype))

    # --- Components (values, row_splits, flat_values, ... are _NestedRows') -----------------

    @property
    def graph(self):
        return self._row_splits.graph

    @property
    def shape(self):
        """[nrows, None for each ragged dimension, the flat values' inner dimensions]."""
        splits = self._row_splits.shape
        nrows = None if splits.ndims is None or splits[0] is None else splits[0] - 1
        inner = self.flat_values.shape
        if inner.ndims is None:
            return TensorShape(None)
        return TensorShape([nrows] + [None] * self.ragged_rank + inner.as_list()[1:])

    def get_shape(self):
        return self.shape

    def numpy(self):
        """The rows as a numpy object array of numpy arrays (eager only), as TensorFlow's."""
        rows = self.to_list()
        out = np.empty(len(rows), dtype=object)
        for i, row in enumerate(rows):
            out[i] = np.array(row, dtype=self.dtype.as_numpy_dtype)
        return out

    # --- Row partitions ------------------------------------------------------------------------

    def nrows(self, out_type=None, name=None):
        with _ops.name_scope(name, "RaggedNRows"):
            return _splits_nrows(self._row_splits, out_type or self._row_splits.dtype)

    def row_starts(self, name=None):
        with _ops.name_scope(name, "RaggedRowStarts"):
            return self._row_splits[:-1]

    def row_limits(self, name=None):
        with _ops.name_scope(name, "RaggedRowLimits"):
            return self._row_splits[1:]

    def row_lengths(self, axis=1, name=None):
        with _ops.name_scope(name, "RaggedRowLengths"):
            return _row_lengths(self, axis)

    def nested_row_lengths(self, name=None):
        with _ops.name_scope(name, "RaggedNestedRowLengths"):
            return tuple(rt.row_lengths() for rt in self._nested())

    def value_rowids(self, name=None):
        with _ops.name_scope(name, "RaggedValueRowIds"):
            return splits_to_rowids(self._row_splits)

    def nested_value_rowids(self, name=None):
        with _ops.name_scope(name, "RaggedNestedValueRowIds"):
            return tuple(rt.value_rowids() for rt in self._nested())

    def _nested(self):
        rt = self
        while isinstance(rt, RaggedTensor):
            yield rt
            rt = rt.values

    def bounding_shape(self, axis=None, name=None, out_type=None):
        with _ops.name_scope(name, "RaggedBoundingBox"):
            return _bounding_shape(self, axis, out_type or self._row_splits.dtype)

    # --- Derived ragged tensors ----------------------------------------------------------------

    def with_values(self, new_values):
        if not isinstance(new_values, RaggedTensor):
            new_values = _ops.convert_to_tensor(new_values, name="values")
        return RaggedTensor(new_values, self._row_splits, internal=True)

    def with_flat_values(self, new_values):
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        dtype = _dtypes.as_dtype(dtype)
        if dtype not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"dtype must be int32 or int64, got {dtype.name}")
        if self._row_splits.dtype == dtype:
            return self
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(dtype)
        return RaggedTensor(values, math_ops.cast(self._row_splits, dtype), internal=True)

    def merge_dims(self, outer_axis, inner_axis):
        return _merge_dims(self, outer_axis, inner_axis)

    # --- Conversions ---------------------------------------------------------------------------

    def to_tensor(self, default_value=None, name=None, shape=None):
        with _ops.name_scope(name, "RaggedToTensor"):
            return _to_tensor(self, default_value, shape)

    def to_sparse(self, name=None):
        with _ops.name_scope(name, "RaggedToSparse"):
            return _to_sparse(self)

    def to_list(self):
        """The rows as nested Python lists (eager mode; a session's RaggedTensorValue has one
        too)."""
        if not _ops.executing_eagerly():
            raise ValueError("RaggedTensor.to_list() is only supported in eager mode; in graph "
                             "mode, evaluate the RaggedTensor first (sess.run(rt).to_list())")
        return self._eager_value().to_list()

    def _eager_value(self):
        splits = [s.numpy() for s in self.nested_row_splits]
        result = self.flat_values.numpy()
        for s in reversed(splits):
            result = RaggedTensorValue(result, s)
        return result

    def _fetch_components(self):
        """What a session fetches for this (the nested row splits, then the flat values), and
        how it rebuilds a RaggedTensorValue from their values."""
        splits = list(self.nested_row_splits)

        def rebuild(values):
            result = values[-1]
            for s in reversed(values[:-1]):
                result = RaggedTensorValue(result, s)
            return result
        return splits + [self.flat_values], rebuild

    def _feed_components(self, value):
        """The component values of a fed RaggedTensorValue (or nested lists), in
        _fetch_components' order."""
        if not isinstance(value, RaggedTensorValue):
            value = nested_lists_value(value, ragged_rank=self.ragged_rank,
                                               row_splits_dtype=self._row_splits.dtype)
        if value.ragged_rank != self.ragged_rank:
            raise ValueError(f"Cannot feed a value of ragged_rank {value.ragged_rank} to a "
                             f"RaggedTensor of ragged_rank {self.ragged_rank}")
        return list(value.nested_row_splits) + [value.flat_values]

    def eval(self, feed_dict=None, session=None):
        from flowstone.client.session import get_default_session
        session = session or get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit "
                             "session to `eval(session=sess)`")
        return session.run(self, feed_dict)

    def __repr__(self):
        if _ops.executing_eagerly() and hasattr(self.flat_values, "numpy"):
            return f"<tf.RaggedTensor {self.to_list()}>"
        return f"tf.RaggedTensor(values={self._values}, row_splits={self._row_splits})"

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    def __len__(self):
        raise TypeError("len is not well defined for symbolic RaggedTensors; use rt.nrows()")


# --- Row partitions as tensors -------------------------------------------------------------------

def _first_dim(value, dtype):
    """The size of the first dimension of a Tensor or RaggedTensor, as a scalar of `dtype`."""
    if isinstance(value, RaggedTensor):
        return value.nrows(out_type=dtype)
    return array_ops.shape(value, out_type=dtype)[0]


def _splits_nrows(splits, dtype):
    return math_ops.cast(array_ops.shape(splits, out_type=splits.dtype)[0] - 1, dtype)


def with_outer_dims(rt, tensor):
    """rt (a row per element of `tensor`, flattened) nested in uniform dimensions for the
    outer dimensions of `tensor` (of known rank)."""
    shape = array_ops.shape(tensor, out_type=rt.row_splits.dtype)
    for axis in reversed(range(1, tensor.shape.ndims)):
        rt = RaggedTensor.from_uniform_row_length(rt, shape[axis], validate=False)
    return rt


def _lengths_to_splits(lengths):
    if lengths.dtype not in (_dtypes.int32, _dtypes.int64):
        lengths = math_ops.cast(lengths, _dtypes.int64)
    zero = _ops.convert_to_tensor([0], dtype=lengths.dtype)
    return array_ops.concat([zero, scan_ops.cumsum(lengths)], 0)


def rowids_to_splits(rowids, nrows=None):
    """Row splits from sorted row ids: each row's count, summed (nrows: last id + 1 unless
    given)."""
    if rowids.dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError(f"value_rowids must be int32 or int64, got {rowids.dtype.name}")
    if nrows is None:
        last = array_ops.concat([_ops.convert_to_tensor([-1], dtype=rowids.dtype), rowids], 0)
        nrows = last[-1] + 1
    nrows = _ops.convert_to_tensor(nrows, dtype=rowids.dtype, name="nrows")
    counts = array_ops.unsorted_segment_sum(array_ops.ones_like(rowids), rowids, nrows)
    return _lengths_to_splits(counts)


def splits_to_rowids(splits):
    """The row of each value: how many row limits are <= its position."""
    count = math_ops.cast(splits[-1], splits.dtype)
    positions = array_ops.range(_ops.convert_to_tensor(0, dtype=splits.dtype), count)
    rowids = _ops.apply_op("UpperBound", [array_ops.expand_dims(splits[1:], 0),
                                          array_ops.expand_dims(positions, 0)],
                           {"out_type": splits.dtype}).outputs[0]
    return array_ops.reshape(rowids, [-1])


def _uniform_splits(values, length, nrows):
    # The splits' dtype: the values' partitions', a length tensor's, else int64 (TF's default).
    if isinstance(values, RaggedTensor):
        dtype = values.row_splits.dtype
    elif isinstance(length, _ops.Tensor) and length.dtype in (_dtypes.int32, _dtypes.int64):
        dtype = length.dtype
    else:
        dtype = _dtypes.int64
    length = math_ops.cast(_ops.convert_to_tensor(length, name="uniform_row_length"), dtype)
    if nrows is None:
        total = _first_dim(values, dtype)
        nrows = total // math_ops.maximum(length, _ops.convert_to_tensor(1, dtype=dtype))
    nrows = math_ops.cast(_ops.convert_to_tensor(nrows), dtype)
    return array_ops.range(_ops.convert_to_tensor(0, dtype=dtype), nrows + 1) * length


def _row_lengths(rt, axis):
    if axis == 0:
        return rt.nrows()
    if axis == 1:
        return rt.row_splits[1:] - rt.row_splits[:-1]
    if isinstance(rt.values, RaggedTensor):
        return rt.with_values(_row_lengths(rt.values, axis - 1))
    shape = array_ops.shape(rt.values, out_type=rt.row_splits.dtype)
    return rt.with_values(array_ops.fill(shape[:axis - 1], shape[axis - 1]))


def _bounding_shape(rt, axis, out_type):
    out_type = _dtypes.as_dtype(out_type)
    dims = [rt.nrows(out_type=out_type)]
    for level in rt._nested():
        lengths = level.row_splits[1:] - level.row_splits[:-1]
        longest = reduction_ops.reduce_max(array_ops.concat(
            [_ops.convert_to_tensor([0], dtype=lengths.dtype), lengths], 0))
        dims.append(math_ops.cast(longest, out_type))
    inner = array_ops.shape(rt.flat_values, out_type=out_type)[1:]
    shape = array_ops.concat([array_ops.stack(dims), inner], 0)
    return shape if axis is None else shape[axis]


# --- Conversions ---------------------------------------------------------------------------------

def _to_tensor(rt, default_value, shape):
    values = rt.flat_values
    if default_value is None:
        default_value = np.zeros((), values.dtype.as_numpy_dtype) \
            if values.dtype != _dtypes.string else b""
    default_value = _ops.convert_to_tensor(default_value, dtype=values.dtype,
                                           name="default_value")
    splits = list(rt.nested_row_splits)
    if shape is None:
        shape = -1  # the natural shape: each dimension as long as its longest row
    elif isinstance(shape, TensorShape) or (isinstance(shape, (list, tuple)) and
                                           any(d is None for d in shape)):
        shape = [-1 if d is None else d for d in TensorShape(shape).as_list()]
    shape = _ops.convert_to_tensor(shape, dtype=splits[0].dtype, name="shape")
    return _ops.apply_op("RaggedTensorToTensor", [shape, values, default_value, splits], {
        "row_partition_types": ["ROW_SPLITS"] * len(splits)}).outputs[0]


def _to_sparse(rt):
    op = _ops.apply_op("RaggedTensorToSparse", [list(rt.nested_row_splits), rt.flat_values])
    return SparseTensor(*op.outputs)


def _from_tensor(tensor, lengths, padding, ragged_rank, splits_dtype):
    tensor = _ops.convert_to_tensor(tensor, name="tensor")
    rank = tensor.shape.ndims
    if rank is not None and not 0 < ragged_rank < rank:
        raise ValueError(f"ragged_rank must be in [1, {rank}) for a tensor of rank {rank}, got "
                         f"{ragged_rank}")
    if lengths is not None and padding is not None:
        raise ValueError("Specify lengths or padding, but not both")
    shape = array_ops.shape(tensor, out_type=splits_dtype)
    if ragged_rank > 1:
        if lengths is not None or padding is not None:
            raise ValueError("Flowstone's from_tensor takes lengths or padding only with "
                             "ragged_rank=1 (see docs/COMPAT.md)")
        inner = _from_tensor(array_ops.reshape(tensor, array_ops.concat(
            [[-1], shape[2:]], 0)), None, None, ragged_rank - 1, splits_dtype)
        return RaggedTensor._from_splits(inner, _uniform_splits(inner, shape[1], shape[0]))
    nrows, ncols = shape[0], shape[1]
    if padding is not None:
        padding = _ops.convert_to_tensor(padding, dtype=tensor.dtype, name="padding")
        keep = math_ops.not_equal(tensor, padding)
        if rank is not None and rank > 2:
            keep = math_reductions.reduce_any(keep, axis=list(range(2, rank)))
        # A row's length ends at its last element that is not padding (0 for a row of
        # padding, or of no columns: the maximum over nothing is clamped).
        positions = array_ops.range(_ops.convert_to_tensor(1, dtype=splits_dtype), ncols + 1)
        lengths = math_ops.maximum(reduction_ops.reduce_max(
            math_ops.cast(keep, splits_dtype) * positions, axis=1), 0)
    if lengths is None:
        flat = array_ops.reshape(tensor, array_ops.concat([[-1], shape[2:]], 0))
        return RaggedTensor._from_splits(flat, _uniform_splits(flat, ncols, nrows))
    lengths = math_ops.cast(_ops.convert_to_tensor(lengths, name="lengths"), splits_dtype)
    lengths = math_ops.minimum(lengths, ncols)
    mask = manip_ops.sequence_mask(lengths, ncols)
    return RaggedTensor._from_splits(partition_ops.boolean_mask(tensor, mask),
                                     _lengths_to_splits(lengths))



def _from_sparse(st, splits_dtype):
    if not isinstance(st, SparseTensor):
        raise TypeError(f"st_input must be a SparseTensor, got {type(st).__name__}")
    if st.indices.shape.ndims is not None and st.indices.shape[1] not in (None, 2):
        raise ValueError(f"from_sparse takes a 2-D SparseTensor, got rank {st.indices.shape[1]} "
                         "(TensorFlow's limit too)")
    rowids = math_ops.cast(st.indices[:, 0], splits_dtype)
    splits = rowids_to_splits(rowids, math_ops.cast(st.dense_shape[0], splits_dtype))
    # Right-ragged, as TensorFlow requires: each row's columns are 0, 1, ... in order.
    positions = array_ops.range(array_ops.size(rowids, out_type=splits_dtype)) - \
        array_ops.gather(splits, rowids)
    checked = check_ops.Assert(math_reductions.reduce_all(math_ops.equal(
        math_ops.cast(st.indices[:, 1], splits_dtype), positions)), [
        "SparseTensor is not right-ragged (each row's column indices must be 0, 1, ... in "
        "order); sparse.reorder it, or build the RaggedTensor from its values and row ids"])
    with _ops.control_dependencies([checked]):
        return RaggedTensor._from_splits(_identity(st.values), splits)


def nested_lists_value(pylist, dtype=None, ragged_rank=None, inner_shape=None,
                    row_splits_dtype=_dtypes.int64):
    """A RaggedTensorValue of nested Python lists (rows of any length): its row splits at each
    of `ragged_rank` levels (all but the innermost list level by default)."""
    if isinstance(pylist, RaggedTensorValue):
        return pylist
    np_splits = _dtypes.as_dtype(row_splits_dtype).as_numpy_dtype
    depth = list_depth(pylist)
    if inner_shape is not None:
        depth = max(depth, 1 + len(inner_shape))
    if ragged_rank is None:
        ragged_rank = max(depth - 1 - (len(inner_shape) if inner_shape else 0), 0)
    if depth > 0 and not 0 < ragged_rank < depth:
        raise ValueError(f"ragged_rank must be in [1, {depth}) for nested lists of depth "
                         f"{depth}, got {ragged_rank}")
    levels, rows = [], pylist
    for _ in range(ragged_rank):
        splits, flat = [0], []
        for row in rows:
            flat.extend(row)
            splits.append(len(flat))
        levels.append(np.array(splits, np_splits))
        rows = flat
    # What is left are the flat values: scalars, or uniform lists of the inner shape.
    as_dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    np_dtype = None if as_dtype is None else (
        object if as_dtype == _dtypes.string else as_dtype.as_numpy_dtype)
    values = np.array(rows, dtype=np_dtype)
    if values.dtype.kind in "USO" and (as_dtype is None or as_dtype == _dtypes.string):
        values = np.array([v.encode() if isinstance(v, str) else v for v in values.ravel()],
                          dtype=object).reshape(values.shape)
    elif dtype is None and values.dtype == np.float64:
        values = values.astype(np.float32)
    elif dtype is None and values.dtype == np.int64 and values.size == 0:
        values = values.astype(np.float32)  # TensorFlow's dtype for no values
    elif dtype is None and values.dtype == np.int64 and (
            values.size == 0 or np.abs(values).max() < 2**31):
        values = values.astype(np.int32)  # Python ints are int32 when they fit, as in TF
    if inner_shape is not None and values.size == 0:
        values = values.reshape((0,) + tuple(inner_shape))
    result = values
    for splits in reversed(levels):
        result = RaggedTensorValue(result, splits)
    return result


def list_depth(value):
    """How deeply lists nest in `value`, following a non-empty list at each level if any."""
    depth = 0
    while isinstance(value, (list, tuple)):
        depth += 1
        inner = [v for v in value if isinstance(v, (list, tuple))]
        value = next((v for v in inner if len(v)), inner[0] if inner else None)
    return depth


# --- Gathering rows ------------------------------------------------------------------------------

def gather_rows(rt, indices):
    """RaggedGather: the rows `indices` (a vector) of rt, as a RaggedTensor."""
    indices = _ops.convert_to_tensor(indices, name="indices")
    splits = list(rt.nested_row_splits)
    rank = indices.shape.ndims if indices.shape.ndims is not None else 1
    op = _ops.apply_op("RaggedGather", [splits, rt.flat_values, indices], {
        "OUTPUT_RAGGED_RANK": rank - 1 + len(splits)})
    return RaggedTensor.from_nested_row_splits(op.outputs[-1], op.outputs[:-1], validate=False)


def same_partitions(first, *others):
    """The assertions (run-time checks) that ragged tensors have the first one's row splits at
    every level; a ValueError at once when their ragged ranks differ."""
    checks = []
    for other in others:
        if other.ragged_rank != first.ragged_rank:
            raise ValueError(f"Ragged operands must have the same ragged_rank, got "
                             f"{first.ragged_rank} and {other.ragged_rank}")
        checks += [check_ops.assert_equal(a, b, message="Inputs must have identical ragged "
                                          "splits")
                   for a, b in zip(first.nested_row_splits, other.nested_row_splits)
                   if a is not b]
    return checks


# --- merge_dims ----------------------------------------------------------------------------------

def _merge_dims(rt, outer_axis, inner_axis):
    rank = rt.shape.ndims
    if rank is not None:
        outer_axis = outer_axis + rank if outer_axis < 0 else outer_axis
        inner_axis = inner_axis + rank if inner_axis < 0 else inner_axis
    if not 0 <= outer_axis <= inner_axis:
        raise ValueError(f"Expected outer_axis ({outer_axis}) to be less than or equal to "
                         f"inner_axis ({inner_axis})")
    if outer_axis == inner_axis:
        return rt
    if outer_axis == 0:
        return _merge_leading(rt, inner_axis)
    if outer_axis == 1:
        # The rows keep their places; their elements' partitions below are composed into one.
        values, splits = rt.values, rt.row_splits
        for _ in range(inner_axis - outer_axis):
            if isinstance(values, RaggedTensor):
                splits = array_ops.gather(values.row_splits, splits)
                values = values.values
            else:
                shape = array_ops.shape(values, out_type=splits.dtype)
                splits = splits * shape[1]
                values = array_ops.reshape(values, array_ops.concat([[-1], shape[2:]], 0))
        return RaggedTensor._from_splits(values, splits, validate=False)
    return rt.with_values(_merge_any(rt.values, outer_axis - 1, inner_axis - 1))


def _merge_any(value, outer, inner):
    if isinstance(value, RaggedTensor):
        return _merge_dims(value, outer, inner)
    shape = array_ops.shape(value)
    return array_ops.reshape(value, array_ops.concat(
        [shape[:outer], [-1], shape[inner + 1:]], 0))


def _merge_leading(rt, inner_axis):
    """Dimensions 0..inner_axis of rt as one: each ragged level dropped merges two."""
    result = rt
    while inner_axis > 0:
        if not isinstance(result, RaggedTensor):
            return _merge_any(result, 0, inner_axis)
        result, inner_axis = result.values, inner_axis - 1
    return result
