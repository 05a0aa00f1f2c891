"""Element structures of tf.data: the nesting rules datasets use, and how an element's values
become the tensors of the C++ datasets.

tf.data nests tuples (and namedtuples) and dicts; a list is a single component (a tensor), as in
TensorFlow, so `from_tensor_slices([1, 2, 3])` has one int32 component. A leaf of an element spec
is a TypeSpec (framework/type_spec.py): a TensorSpec, a composite's (SparseTensorSpec,
RaggedTensorSpec: one variant tensor each in the datasets) or a window's DatasetSpec. The C++
datasets see the leaves' tensor lists (`flat_tensor_specs`, `to_tensor_list`); Python turns them
back into values (`from_tensor_list`) where an element reaches the user: a traced function's
arguments, get_next, get_single_element, reduce.
"""

import collections.abc as _abc

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor, SparseTensorValue
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.framework.type_spec import TensorSpec, TypeSpec
from flowstone.ops.composite_specs import (RaggedTensorSpec, SparseTensorSpec,
                                           type_spec_from_value)
from flowstone.ops.ragged_tensor import RaggedTensor, RaggedTensorValue
from flowstone.util.tf_export import tf_export

__all__ = ["TensorSpec", "DatasetSpec", "SparseTensorSpec", "RaggedTensorSpec",
           "type_spec_from_value"]


@tf_export("data.DatasetSpec")
class DatasetSpec(TypeSpec):
    """A component that is itself a dataset (a window of Dataset.window): a scalar variant
    holding a dataset of elements `element_spec`. Its tensor list is that variant (the traced
    function that receives it wraps it as a Dataset)."""

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec):
        self._element_spec = element_spec

    element_spec = property(lambda self: self._element_spec)
    dtype = property(lambda self: _dtypes.variant)
    shape = property(lambda self: TensorShape([]))

    @property
    def _flat_tensor_specs(self):
        return [TensorSpec([], _dtypes.variant)]

    _component_specs = _flat_tensor_specs

    def _to_tensor_list(self, value):
        return [value]

    def _from_tensor_list(self, tensors):
        return tensors[0]

    _to_components = _to_tensor_list
    _from_components = _from_tensor_list

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash(repr(self._element_spec))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, TensorShape([]))"


def _is_tuple(value):
    """A tuple of the structure (a SparseTensorValue, a namedtuple, is one value)."""
    return isinstance(value, tuple) and not isinstance(value, SparseTensorValue)


def flatten(structure):
    """The components of an element structure, in order (dict keys sorted)."""
    if isinstance(structure, _abc.Mapping):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if _is_tuple(structure):
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
    if _is_tuple(structure):
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
    if _is_tuple(value):
        items = [normalize(v) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else tuple(items)
    return value


def as_value(value, name="component"):
    """One component as a tensor, or as the SparseTensor or RaggedTensor it is (their numpy
    values included)."""
    if isinstance(value, (SparseTensor, RaggedTensor)):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if isinstance(value, RaggedTensorValue):
        splits = [_ops.convert_to_tensor(s, name=f"{name}_row_splits")
                  for s in value.nested_row_splits]
        return RaggedTensor.from_nested_row_splits(
            _ops.convert_to_tensor(value.flat_values, name=f"{name}_flat_values"), splits)
    return _ops.convert_to_tensor(value, name=name)


def to_tensors(value, name="component"):
    """`value` (a nested structure) with every component converted to a tensor (or composite)."""
    flat = [as_value(v, name=f"{name}_{i}") for i, v in enumerate(flatten(normalize(value)))]
    return pack(normalize(value), flat)


def spec_of(tensors):
    """The TypeSpec structure of a structure of tensors and composites."""
    return pack(tensors, [_spec_of_leaf(t) for t in flatten(tensors)])


def _spec_of_leaf(value):
    if isinstance(value, (SparseTensor, RaggedTensor)):
        return type_spec_from_value(value)
    return TensorSpec(value.shape, value.dtype)


def is_composite(spec):
    return isinstance(spec, (SparseTensorSpec, RaggedTensorSpec))


def flat_tensor_specs(spec):
    """The TensorSpecs of the tensors the C++ datasets hold for elements of `spec`."""
    return [t for leaf in flatten(spec) for t in leaf._flat_tensor_specs]


def to_tensor_list(spec, value):
    """The tensors of `value` (a structure of `spec`) as a dataset holds them."""
    return [t for leaf, v in zip(flatten(spec), flatten_up_to(spec, value))
            for t in leaf._to_tensor_list(v)]


def to_batched_tensor_list(spec, value):
    """The tensors of `value` whose first dimension is each row's (for unbatch and
    from_tensor_slices)."""
    return [t for leaf, v in zip(flatten(spec), flatten_up_to(spec, value))
            for t in leaf._to_batched_tensor_list(v)]


def _unflatten(spec, tensors, count, build):
    """The value of `spec` whose leaves `build(leaf, tensors)` makes from consecutive runs of
    `tensors`, `count(leaf)` long."""
    tensors, values = list(tensors), []
    for leaf in flatten(spec):
        n = count(leaf)
        values.append(build(leaf, tensors[:n]))
        tensors = tensors[n:]
    return pack(spec, values)


def from_tensor_list(spec, tensors):
    """The element of `spec` a dataset's tensors hold."""
    return _unflatten(spec, tensors, lambda leaf: len(leaf._flat_tensor_specs),
                      lambda leaf, ts: leaf._from_tensor_list(ts))


def to_components(spec, value):
    """The component tensors of `value` (a SparseTensor's three, a tensor itself): what a
    session fetches, or a tf.function passes, for it."""
    return [t for leaf, v in zip(flatten(spec), flatten_up_to(spec, value))
            for t in leaf._to_components(v)]


def from_components(spec, tensors):
    """The value of `spec` whose component tensors (to_components) are `tensors`."""
    return _unflatten(spec, tensors, lambda leaf: len(leaf._component_specs),
                      lambda leaf, ts: leaf._from_components(ts))


def batch_spec(spec, batch_size):
    """The element spec of batches of `batch_size` (None: unknown) elements of `spec`."""
    return pack(spec, [leaf._batch(batch_size) for leaf in flatten(spec)])


def unbatch_spec(spec):
    return pack(spec, [leaf._unbatch() for leaf in flatten(spec)])


def types_of(spec):
    return pack(spec, [s.dtype for s in flatten(spec)])


def shapes_of(spec):
    return pack(spec, [s.shape for s in flatten(spec)])


def classes_of(spec):
    """TF1's output_classes: Tensor, SparseTensor, or (as TensorFlow's) the spec itself for the
    kinds TF1 had no class for (RaggedTensorSpec)."""
    return pack(spec, [SparseTensor if isinstance(s, SparseTensorSpec) else
                       s if isinstance(s, RaggedTensorSpec) else _ops.Tensor
                       for s in flatten(spec)])


def spec_from_types(output_types, output_shapes=None, output_classes=None):
    """A spec structure from TF1's output_types, output_shapes and output_classes structures
    (a class SparseTensor makes a SparseTensorSpec; a TypeSpec among the classes, as
    get_output_classes gives for ragged components, is that component's spec)."""
    types = flatten(output_types)
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(types)
    else:
        shapes = flatten_up_to(output_types, output_shapes)
    classes = ([None] * len(types) if output_classes is None
               else flatten_up_to(output_types, output_classes))
    return pack(output_types, [
        c if isinstance(c, TypeSpec) else
        SparseTensorSpec(as_shape(s), t) if c is SparseTensor else TensorSpec(as_shape(s), t)
        for t, s, c in zip(types, shapes, classes)])


def flatten_up_to(structure, value):
    """`value` flattened as far as `structure` nests (a shape given as a list stays one)."""
    if isinstance(structure, _abc.Mapping):
        return [leaf for key in sorted(structure) for leaf in flatten_up_to(structure[key],
                                                                            value[key])]
    if _is_tuple(structure):
        if len(structure) != len(value):
            raise ValueError(f"The two structures don't have the same number of elements: "
                             f"{structure!r} and {value!r}.")
        return [leaf for s, v in zip(structure, value) for leaf in flatten_up_to(s, v)]
    return [value]


def shape_attrs(spec):
    """output_shapes attr values for the dataset tensors of `spec`."""
    return [s.shape.as_proto_dims() for s in flat_tensor_specs(spec)]


def type_attrs(spec):
    return [s.dtype for s in flat_tensor_specs(spec)]
