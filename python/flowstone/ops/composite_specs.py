"""tf.SparseTensorSpec, tf.RaggedTensorSpec and tf.type_spec_from_value: the TypeSpecs of the
composite values (framework/type_spec.py says what a TypeSpec does).

In a dataset a SparseTensor is one variant tensor [3] (SerializeSparse with out_type=variant: its
three tensors, unserialized) and a RaggedTensor one scalar variant (RaggedTensorToVariant). Batching
stacks them; DeserializeSparse and RaggedTensorFromVariant read a stack as one value whose first
dimensions are the stack's, so a batch of SparseTensors is a SparseTensor of one more dimension
(its dense shape the largest of the batch) and a batch of RaggedTensors one more ragged dimension.
"""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor, SparseTensorValue
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.framework.type_spec import TensorSpec, TypeSpec, most_specific_shape
from flowstone.ops.ragged_tensor import RaggedTensor, RaggedTensorValue
from flowstone.util.tf_export import tf_export

# A composite's tensor list: one variant of a shape the batching decides.
_VARIANT_SPEC = TensorSpec(None, _dtypes.variant)


def _static(tensor, shape):
    """`tensor` with its static shape narrowed to `shape` (graph tensors only)."""
    if not hasattr(tensor, "numpy"):
        tensor.set_shape(shape)
    return tensor


@tf_export("SparseTensorSpec")
class SparseTensorSpec(TypeSpec):
    """The type of a SparseTensor: its dense shape (partial) and its values' dtype."""

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape=None, dtype=_dtypes.float32):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    value_type = property(lambda self: SparseTensor)

    @classmethod
    def from_value(cls, value):
        if isinstance(value, SparseTensorValue):
            return cls(np.asarray(value.dense_shape).tolist(),
                       _dtypes.as_dtype(np.asarray(value.values).dtype))
        return cls(value.shape, value.dtype)

    def _spec_of_value(self, value):
        if isinstance(value, (SparseTensor, SparseTensorValue)):
            return SparseTensorSpec.from_value(value)
        return None

    def _compatible_kind(self, other):
        return self._dtype == other._dtype

    def _relaxed(self, other):
        return SparseTensorSpec(most_specific_shape(self._shape, other._shape), self._dtype)

    @property
    def _rank(self):
        return self._shape.ndims

    @property
    def _component_specs(self):
        rank = self._rank
        return [TensorSpec([None, rank], _dtypes.int64), TensorSpec([None], self._dtype),
                TensorSpec([rank], _dtypes.int64)]

    def _to_components(self, value):
        value = SparseTensor.from_value(value)
        return [value.indices, value.values, value.dense_shape]

    def _from_components(self, tensors):
        indices, values, dense_shape = tensors
        if self._rank is not None:
            _static(indices, [None, self._rank])
            _static(dense_shape, [self._rank])
        result = SparseTensor(indices, values, dense_shape)
        if not hasattr(dense_shape, "numpy"):
            result.set_shape(self._shape)
        return result

    @property
    def _flat_tensor_specs(self):
        return [_VARIANT_SPEC]

    def _serialize(self, op_type, value):
        value = SparseTensor.from_value(value)
        return [_ops.apply_op(op_type, [value.indices, value.values, value.dense_shape], {
            "out_type": _dtypes.variant}, name=op_type).outputs[0]]

    def _to_tensor_list(self, value):
        return self._serialize("SerializeSparse", value)

    def _to_batched_tensor_list(self, value):
        if self._rank == 0:
            raise ValueError("Unbatching a sparse tensor is only supported for rank >= 1")
        return self._serialize("SerializeManySparse", value)

    def _from_tensor_list(self, tensors):
        op = _ops.apply_op("DeserializeSparse", [tensors[0]], {
            "dtype": self._dtype, "Tserialized": _dtypes.variant}, name="DeserializeSparse")
        return self._from_components(op.outputs)

    def _batch(self, batch_size):
        return SparseTensorSpec(TensorShape([batch_size]).concatenate(self._shape), self._dtype)

    def _unbatch(self):
        if self._rank == 0:
            raise ValueError("Unbatching a sparse tensor is only supported for rank >= 1")
        return SparseTensorSpec(self._shape[1:] if self._rank is not None else None, self._dtype)

    def __eq__(self, other):
        return (type(other) is SparseTensorSpec and self._dtype == other._dtype and
                self._shape.as_proto_dims() == other._shape.as_proto_dims())

    def __hash__(self):
        return hash(("SparseTensorSpec", self._dtype, str(self._shape)))

    def __repr__(self):
        return f"SparseTensorSpec({self._shape!r}, {self._dtype!r})"


@tf_export("RaggedTensorSpec")
class RaggedTensorSpec(TypeSpec):
    """The type of a RaggedTensor: shape (ragged dimensions None), dtype, ragged_rank (the
    number of ragged dimensions, default rank - 1) and the row splits' dtype. With ragged_rank
    0 the value is a dense Tensor (what a dataset's slices of a ragged tensor of ragged_rank 1
    are)."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype")

    def __init__(self, shape=None, dtype=_dtypes.float32, ragged_rank=None,
                 row_splits_dtype=_dtypes.int64, flat_values_spec=None):
        if flat_values_spec is not None:
            raise NotImplementedError("RaggedTensorSpec's flat_values_spec is not supported; "
                                      "give shape and dtype")
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._row_splits_dtype = _dtypes.as_dtype(row_splits_dtype)
        if self._row_splits_dtype not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"row_splits_dtype must be int32 or int64, got "
                             f"{self._row_splits_dtype.name}")
        rank = self._shape.ndims
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = rank - 1
        if not isinstance(ragged_rank, int) or ragged_rank < 0:
            raise TypeError(f"ragged_rank must be a non-negative int, got {ragged_rank!r}")
        if rank is not None and ragged_rank >= rank:
            raise ValueError(f"ragged_rank must be less than rank ({rank}), got {ragged_rank}")
        self._ragged_rank = ragged_rank

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ragged_rank = property(lambda self: self._ragged_rank)
    row_splits_dtype = property(lambda self: self._row_splits_dtype)
    flat_values_spec = property(lambda self: None)

    @property
    def value_type(self):
        return RaggedTensor if self._ragged_rank > 0 else _ops.Tensor

    @classmethod
    def from_value(cls, value):
        if isinstance(value, RaggedTensorValue):
            return cls(value.shape, _dtypes.as_dtype(np.asarray(value.flat_values).dtype),
                       value.ragged_rank, _dtypes.as_dtype(value.row_splits.dtype))
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits.dtype)

    def _spec_of_value(self, value):
        if isinstance(value, (RaggedTensor, RaggedTensorValue)):
            return RaggedTensorSpec.from_value(value)
        if isinstance(value, _ops.Tensor) and self._ragged_rank == 0:
            return RaggedTensorSpec(value.shape, value.dtype, 0, self._row_splits_dtype)
        return None

    def _compatible_kind(self, other):
        return (self._dtype == other._dtype and self._ragged_rank == other._ragged_rank and
                self._row_splits_dtype == other._row_splits_dtype)

    def _relaxed(self, other):
        return RaggedTensorSpec(most_specific_shape(self._shape, other._shape), self._dtype,
                                self._ragged_rank, self._row_splits_dtype)

    @property
    def _component_specs(self):
        """The flat values, then the row splits outermost first (TensorFlow's order)."""
        if self._shape.ndims is None:
            values = TensorSpec(None, self._dtype)
        else:
            values = TensorSpec([None] + self._shape.as_list()[self._ragged_rank + 1:],
                                self._dtype)
        if self._ragged_rank == 0:
            return [TensorSpec(self._shape, self._dtype)]
        nrows = self._shape[0] if self._shape.ndims else None
        first = TensorSpec([None if nrows is None else nrows + 1], self._row_splits_dtype)
        return [values, first] + [TensorSpec([None], self._row_splits_dtype)] * (
            self._ragged_rank - 1)

    def _to_components(self, value):
        if self._ragged_rank == 0:
            return [_ops.convert_to_tensor(value)]
        return [value.flat_values] + list(value.nested_row_splits)

    def _from_components(self, tensors):
        if self._ragged_rank == 0:
            return tensors[0]
        return RaggedTensor.from_nested_row_splits(tensors[0], tensors[1:], validate=False)

    @property
    def _flat_tensor_specs(self):
        return [_VARIANT_SPEC]

    def _encode(self, value, batched):
        if self._ragged_rank == 0:
            splits, values = [], _ops.convert_to_tensor(value, dtype=self._dtype)
        else:
            splits, values = list(value.nested_row_splits), value.flat_values
        return [_ops.apply_op("RaggedTensorToVariant", [splits, values], {
            "RAGGED_RANK": len(splits), "Tvalues": self._dtype,
            "Tsplits": self._row_splits_dtype, "batched_input": batched},
            name="RaggedTensorToVariant").outputs[0]]

    def _to_tensor_list(self, value):
        return self._encode(value, False)

    def _to_batched_tensor_list(self, value):
        # The rows of a ragged_rank-0 value are dense (its _unbatch is a TensorSpec).
        if self._ragged_rank == 0:
            return [_ops.convert_to_tensor(value, dtype=self._dtype)]
        return self._encode(value, True)

    def _from_tensor_list(self, tensors):
        # input_ragged_rank -1: each encoded value has ragged_rank minus the encoding's rank
        # (a batch of n is a vector of n), read at run time.
        outputs = _ops.apply_op("RaggedTensorFromVariant", [tensors[0]], {
            "input_ragged_rank": -1, "output_ragged_rank": self._ragged_rank,
            "Tvalues": self._dtype, "Tsplits": self._row_splits_dtype},
            name="RaggedTensorFromVariant").outputs
        values, splits = outputs[-1], list(outputs[:-1])
        if self._shape.ndims is not None:
            inner = self._shape.as_list()[self._ragged_rank + 1:]
            _static(values, self._shape if self._ragged_rank == 0 else [None] + inner)
        return self._from_components([values] + splits)

    def _batch(self, batch_size):
        return RaggedTensorSpec(TensorShape([batch_size]).concatenate(self._shape), self._dtype,
                                self._ragged_rank + 1, self._row_splits_dtype)

    def _unbatch(self):
        if self._shape.ndims == 0:
            raise ValueError("Unbatching a ragged tensor requires rank >= 1")
        if self._ragged_rank == 0:
            return TensorSpec(self._shape[1:] if self._shape.ndims is not None else None,
                              self._dtype)
        return RaggedTensorSpec(self._shape[1:] if self._shape.ndims is not None else None,
                                self._dtype, self._ragged_rank - 1, self._row_splits_dtype)

    def __eq__(self, other):
        return (type(other) is RaggedTensorSpec and self._compatible_kind(other) and
                self._shape.as_proto_dims() == other._shape.as_proto_dims())

    def __hash__(self):
        return hash(("RaggedTensorSpec", self._dtype, str(self._shape), self._ragged_rank))

    def __repr__(self):
        return (f"RaggedTensorSpec({self._shape!r}, {self._dtype!r}, {self._ragged_rank}, "
                f"{self._row_splits_dtype!r})")


@tf_export("type_spec_from_value")
def type_spec_from_value(value):
    """The TypeSpec of `value`: a tensor's TensorSpec, a SparseTensor's SparseTensorSpec, a
    RaggedTensor's RaggedTensorSpec (also for their numpy values), a numpy array's or Python
    number's TensorSpec."""
    if isinstance(value, TypeSpec):
        raise TypeError(f"type_spec_from_value takes a value, got the TypeSpec {value!r}")
    if isinstance(value, (SparseTensor, SparseTensorValue)):
        return SparseTensorSpec.from_value(value)
    if isinstance(value, (RaggedTensor, RaggedTensorValue)):
        return RaggedTensorSpec.from_value(value)
    if isinstance(value, _ops.Tensor):
        return TensorSpec.from_tensor(value)
    spec = getattr(value, "_type_spec", None)  # a Dataset's DatasetSpec
    if spec is not None:
        return spec
    try:
        array = np.asarray(value)
        if array.dtype == object and not all(isinstance(v, (bytes, str)) for v in array.flat):
            raise TypeError
        dtype = _dtypes.string if array.dtype.kind in "OSU" else _dtypes.as_dtype(array.dtype)
        if not isinstance(value, np.ndarray) and dtype in (_dtypes.int64, _dtypes.float64):
            # Python numbers convert as tf.constant converts them.
            dtype = _dtypes.int32 if dtype == _dtypes.int64 else _dtypes.float32
    except TypeError:
        raise TypeError(f"Could not build a TypeSpec for {value!r} of unsupported type "
                        f"{type(value)}.") from None
    return TensorSpec(array.shape, dtype)
