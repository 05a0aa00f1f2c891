"""tf.SparseTensor: a tensor given by the indices of its non-default entries, their values and
its dense shape (three tensors), and tf.SparseTensorValue, what a session returns for one."""

import collections

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.util.tf_export import tf_export


@tf_export("SparseTensorValue")
class SparseTensorValue(collections.namedtuple("SparseTensorValue",
                                               ["indices", "values", "dense_shape"])):
    """The numpy value of a SparseTensor."""


@tf_export("SparseTensor", "sparse.SparseTensor")
class SparseTensor:
    """indices: int64 [N, rank], values: [N], dense_shape: int64 [rank]. Fetching it from a
    session gives a SparseTensorValue."""

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values,
                   sparse_tensor_value.dense_shape)

    def __init__(self, indices, values, dense_shape):
        with _ops.name_scope(None, "SparseTensor"):
            self._indices = _ops.convert_to_tensor(indices, dtype=_dtypes.int64, name="indices")
            self._values = _ops.convert_to_tensor(values, name="values")
            self._dense_shape = _ops.convert_to_tensor(dense_shape, dtype=_dtypes.int64,
                                                       name="dense_shape")
        if self._indices.shape.ndims not in (None, 2):
            raise ValueError(f"indices must be a matrix [N, rank], got shape "
                             f"{self._indices.shape}")
        if self._values.shape.ndims not in (None, 1):
            raise ValueError(f"values must be a vector [N], got shape {self._values.shape}")
        if self._dense_shape.shape.ndims not in (None, 1):
            raise ValueError(f"dense_shape must be a vector, got shape {self._dense_shape.shape}")
        self._shape_hint = None  # a static shape set_shape gave

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)
    op = property(lambda self: self._values.op)

    @property
    def shape(self):
        """The static dense shape, as far as the dense_shape tensor is known while building,
        merged with what set_shape said."""
        if hasattr(self._dense_shape, "numpy"):  # eager: the value itself
            return TensorShape([int(d) for d in self._dense_shape.numpy()])
        op = self._dense_shape.op
        if op.type == "Const":
            return TensorShape([int(d) for d in np.asarray(op.get_attr("value"))])
        rank = self._dense_shape.shape[0] if self._dense_shape.shape.ndims == 1 else None
        known = TensorShape(None) if rank is None else TensorShape([None] * int(rank))
        return known if self._shape_hint is None else known.merge_with(self._shape_hint)

    def set_shape(self, shape):
        """Narrows the static dense shape (a dataset element's SparseTensorSpec gives it);
        ValueError when it contradicts what is known."""
        self._shape_hint = self.shape.merge_with(as_shape(shape))

    def get_shape(self):
        return self.shape

    def _fetch_components(self):
        """What a session fetches for this, and how it rebuilds the result from their values."""
        return ([self._indices, self._values, self._dense_shape],
                lambda values: SparseTensorValue(*values))

    def eval(self, feed_dict=None, session=None):
        from flowstone.client.session import get_default_session
        session = session or get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit "
                             "session to `eval(session=sess)`")
        return session.run(self, feed_dict)

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")
