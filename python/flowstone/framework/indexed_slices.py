"""tf.IndexedSlices: rows `indices` of a tensor of shape `dense_shape`, with their `values`
(the form TensorFlow gives sparse gradients). Flowstone's gradients are dense tensors, so this
only comes from user code; a session fetches it as an IndexedSlicesValue, and an op taking it as
a tensor gets its dense value, as in TensorFlow."""

import collections

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])


@tf_export("IndexedSlices")
class IndexedSlices:
    """values [N, ...], indices [N] (the rows they hold), dense_shape (optional)."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = _ops.convert_to_tensor(values, name="values")
        self._indices = _ops.convert_to_tensor(indices, name="indices")
        if not self._indices.dtype.is_integer:
            raise TypeError(f"indices must be integers, got {self._indices.dtype!r}")
        self._dense_shape = None if dense_shape is None else _ops.convert_to_tensor(
            dense_shape, dtype=_dtypes.int64 if not isinstance(dense_shape, _ops.Tensor)
            else None, name="dense_shape")

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    name = property(lambda self: self._values.name)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)

    @property
    def shape(self):
        """The dense static shape: the values' shape with an unknown first dimension, unless
        dense_shape is a constant."""
        if self._dense_shape is not None and self._dense_shape.op.type == "Const":
            from flowstone.framework.tensor_shape import TensorShape
            return TensorShape([int(d) for d in self._dense_shape.op.get_attr("value")])
        return self._values.shape

    def _fetch_components(self):
        parts = [self._values, self._indices]
        if self._dense_shape is not None:
            parts.append(self._dense_shape)
        return parts, lambda values: IndexedSlicesValue(*values, *([None] * (3 - len(values))))

    def __repr__(self):
        return (f"IndexedSlices(indices={self._indices!r}, values={self._values!r}"
                + (f", dense_shape={self._dense_shape!r})" if self._dense_shape is not None
                   else ")"))


@tf_export("convert_to_tensor_or_indexed_slices")
def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """An IndexedSlices as it is (its dtype checked against `dtype`), anything else as a
    Tensor."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Incompatible tensor conversion requested to dtype "
                             f"{_dtypes.as_dtype(dtype).name} for IndexedSlices with dtype "
                             f"{value.dtype.name}")
        return value
    return _ops.convert_to_tensor(value, dtype=dtype, name=name)


def _indexed_slices_to_tensor(value, dtype=None, name=None, as_ref=False):
    """The dense tensor an IndexedSlices stands for (rows of repeated indices add up), as
    TensorFlow converts it; it needs a dense_shape."""
    del as_ref
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(f"Incompatible tensor conversion requested to `dtype` {dtype.name} for "
                         f"IndexedSlices ({value!r}) with dtype {value.dtype.name}")
    if value.dense_shape is None:
        raise ValueError("Tensor conversion requested for IndexedSlices for argument `value` "
                         f"without dense_shape: {value!r}")
    from flowstone.ops import array_ops
    return array_ops.unsorted_segment_sum(value.values, value.indices, value.dense_shape[0],
                                          name=name)


_ops.register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)
