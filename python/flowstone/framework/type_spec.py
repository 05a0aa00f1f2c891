"""tf.TypeSpec and tf.TensorSpec: the type of a value that tf.data and tf.function pass around.

A TypeSpec says how its value becomes tensors in two ways, TensorFlow's:
- components (`_component_specs`, `_to_components`, `_from_components`): the value's own tensors
  (a SparseTensor's indices, values and dense_shape), what a tf.function signature takes;
- a tensor list (`_flat_tensor_specs`, `_to_tensor_list`, `_from_tensor_list`): what a dataset
  element holds. For a composite it is one variant tensor encoding the whole value, so that every
  C++ dataset moves, stacks and slices composites as ordinary tensors; batching stacks the
  encodings and the batched spec (`_batch`) decodes the stack as a value of one more dimension.
  `_to_batched_tensor_list` encodes each row of the value separately, for unbatch and
  from_tensor_slices.
The composite specs are in ops/composite_specs.py; a TensorSpec is its own single component.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.util.tf_export import tf_export


@tf_export("TypeSpec")
class TypeSpec:
    """The type of a value made of tensors: its Python class, dtypes and static shapes."""

    __slots__ = ()

    @property
    def value_type(self):
        raise NotImplementedError(f"{type(self).__name__} does not name its value type")

    def is_compatible_with(self, spec_or_value):
        """Whether a value of `spec_or_value`'s type could have this type."""
        other = spec_or_value if isinstance(spec_or_value, TypeSpec) else \
            self._spec_of_value(spec_or_value)
        if other is None or type(other) is not type(self):
            return False
        return self._compatible_fields(other)

    def most_specific_compatible_type(self, other):
        """The most specific spec compatible with both (shapes relaxed where they differ);
        ValueError when they differ in kind or dtype."""
        if type(other) is not type(self) or not self._compatible_kind(other):
            raise ValueError(f"No TypeSpec is compatible with both {self} and {other}")
        return self._relaxed(other)

    # Subclasses give the encodings the module docstring names and, where their values vary
    # in shape, these three: the spec of a value (None when not of this kind), whether all but
    # the shape agree, and the spec with the shape both have.
    def _spec_of_value(self, value):
        return None

    def _compatible_kind(self, other):
        return self == other

    def _relaxed(self, other):
        return self

    def _compatible_fields(self, other):
        return self._compatible_kind(other) and self.shape.is_compatible_with(other.shape)

    def __ne__(self, other):
        return not self == other


@tf_export("TensorSpec")
class TensorSpec(TypeSpec):
    """The dtype and (partial) shape of one tensor of a structure."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    value_type = property(lambda self: _ops.Tensor)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @classmethod
    def from_spec(cls, spec, name=None):
        return cls(spec.shape, spec.dtype, name if name is not None else spec.name)

    def is_compatible_with(self, other):
        if isinstance(other, TypeSpec) and not isinstance(other, TensorSpec):
            return False
        # A composite value (SparseTensor, RaggedTensor: fetched as components) is no tensor.
        if hasattr(other, "_fetch_components"):
            return False
        if not hasattr(other, "dtype") or not hasattr(other, "shape"):
            return False
        return self._dtype == other.dtype and self._shape.is_compatible_with(
            as_shape(other.shape))

    def _compatible_kind(self, other):
        return self._dtype == other._dtype

    def _relaxed(self, other):
        return TensorSpec(most_specific_shape(self._shape, other._shape), self._dtype)

    # A tensor is its own component and tensor list.
    @property
    def _component_specs(self):
        return [self]

    _flat_tensor_specs = _component_specs

    def _to_components(self, value):
        return [value]

    def _from_components(self, tensors):
        return tensors[0]

    _to_tensor_list = _to_batched_tensor_list = _to_components
    _from_tensor_list = _from_components

    def _batch(self, batch_size):
        return TensorSpec(TensorShape([batch_size]).concatenate(self._shape), self._dtype)

    def _unbatch(self):
        return TensorSpec(self._shape[1:] if self._shape.ndims is not None else None,
                          self._dtype)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype == other._dtype and
                self._shape.as_proto_dims() == other._shape.as_proto_dims() and
                self._name == other._name)

    def __hash__(self):
        return hash((self._dtype, str(self._shape)))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"


def most_specific_shape(a, b):
    """The shape both `a` and `b` have: dimensions that differ become unknown."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])
