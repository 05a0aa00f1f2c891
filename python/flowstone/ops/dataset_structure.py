"""Element structures of tf.data: TensorSpec and the nesting rules datasets use.

tf.data nests tuples (and namedtuples) and dicts; a list is a single component (a tensor), as in
TensorFlow, so `from_tensor_slices([1, 2, 3])` has one int32 component.
"""

import collections.abc as _abc

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.util.tf_export import tf_export


@tf_export("TensorSpec")
class TensorSpec:
    """The dtype and (partial) shape of one tensor of a structure."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, other):
        if isinstance(other, TensorSpec):
            return self._dtype == other._dtype and self._shape.is_compatible_with(other._shape)
        return self._dtype == other.dtype and self._shape.is_compatible_with(other.shape)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype == other._dtype and
                self._shape.as_proto_dims() == other._shape.as_proto_dims() and
                self._name == other._name)

    def __hash__(self):
        return hash((self._dtype, str(self._shape)))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"


@tf_export("data.DatasetSpec")
class DatasetSpec:
    """A component that is itself a dataset (a window of Dataset.window): a scalar variant
    holding a dataset of elements `element_spec`."""

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec):
        self._element_spec = element_spec

    element_spec = property(lambda self: self._element_spec)
    dtype = property(lambda self: _dtypes.variant)
    shape = property(lambda self: TensorShape([]))

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash(repr(self._element_spec))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, TensorShape([]))"


def _is_structure(value):
    return isinstance(value, (tuple, _abc.Mapping))


def flatten(structure):
    """The components of an element structure, in order (dict keys sorted)."""
    if isinstance(structure, _abc.Mapping):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack(structure, flat):
    """`flat` components arranged like `structure`."""
    flat = list(flat)
    result, used = _pack(structure, flat, 0)
    if used != len(flat):
        raise ValueError(f"Structure {structure!r} has {used} components, got {len(flat)}.")
    return result


def _pack(structure, flat, index):
    if isinstance(structure, _abc.Mapping):
        out = {}
        for key in sorted(structure):
            out[key], index = _pack(structure[key], flat, index)
        return type(structure)(out) if type(structure) is not dict else out, index
    if isinstance(structure, tuple):
        items = []
        for item in structure:
            value, index = _pack(item, flat, index)
            items.append(value)
        if hasattr(type(structure), "_fields"):
            return type(structure)(*items), index
        return tuple(items), index
    return flat[index], index + 1


def normalize(value):
    """A user's element value with lists made tensors, as tf.data reads them: the nesting is of
    tuples and dicts only."""
    if isinstance(value, _abc.Mapping):
        return {key: normalize(v) for key, v in value.items()}
    if isinstance(value, tuple):
        items = [normalize(v) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else tuple(items)
    return value


def to_tensors(value, name="component"):
    """`value` (a nested structure) with every component converted to a tensor."""
    flat = [_ops.convert_to_tensor(v, name=f"{name}_{i}")
            for i, v in enumerate(flatten(normalize(value)))]
    return pack(normalize(value), flat)


def spec_of(tensors):
    """The TensorSpec structure of a structure of tensors."""
    return pack(tensors, [TensorSpec(t.shape, t.dtype) for t in flatten(tensors)])


def types_of(spec):
    return pack(spec, [s.dtype for s in flatten(spec)])


def shapes_of(spec):
    return pack(spec, [s.shape for s in flatten(spec)])


def classes_of(spec):
    return pack(spec, [_ops.Tensor for _ in flatten(spec)])


def spec_from_types(output_types, output_shapes=None):
    """A TensorSpec structure from TF1's output_types and output_shapes structures."""
    types = flatten(output_types)
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(types)
    else:
        shapes = flatten_up_to(output_types, output_shapes)
    return pack(output_types, [TensorSpec(as_shape(s), t) for t, s in zip(types, shapes)])


def flatten_up_to(structure, value):
    """`value` flattened as far as `structure` nests (a shape given as a list stays one)."""
    if isinstance(structure, _abc.Mapping):
        return [leaf for key in sorted(structure) for leaf in flatten_up_to(structure[key],
                                                                            value[key])]
    if isinstance(structure, tuple):
        if len(structure) != len(value):
            raise ValueError(f"The two structures don't have the same number of elements: "
                             f"{structure!r} and {value!r}.")
        return [leaf for s, v in zip(structure, value) for leaf in flatten_up_to(s, v)]
    return [value]


def shape_attrs(spec):
    """output_shapes attr values for the components of `spec`."""
    return [s.shape.as_proto_dims() for s in flatten(spec)]


def type_attrs(spec):
    return [s.dtype for s in flatten(spec)]
