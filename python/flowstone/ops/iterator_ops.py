"""tf.data.Iterator (TF1's graph-mode iterators) over the C++ iterator ops (src/ops/data).

The iterator's state lives in the session: IteratorV2 names a slot, MakeIterator (the
initializer) starts it over a dataset, IteratorGetNext reads it and raises OutOfRangeError
"End of sequence" at the end. make_one_shot_iterator's OneShotIterator starts itself on first use
from a function that builds the dataset.
"""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.func_graph import FuncGraph, function_base_name
from flowstone.ops import dataset_structure as structure
from flowstone.util.tf_export import tf_export


@tf_export("data.Iterator")
class Iterator:
    """A position in a dataset, owned by the session that runs `initializer` or `get_next`."""

    def __init__(self, iterator_resource, initializer, output_types, output_shapes,
                 output_classes=None):
        self._handle = iterator_resource
        self._initializer = initializer
        self._element_spec = structure.spec_from_types(output_types, output_shapes,
                                                       output_classes)

    @classmethod
    def _from_spec(cls, iterator_resource, initializer, element_spec):
        iterator = cls(iterator_resource, initializer, structure.types_of(element_spec),
                       structure.shapes_of(element_spec))
        iterator._element_spec = element_spec
        return iterator

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An iterator of the given structure, not bound to a dataset: make_initializer(dataset)
        gives an op that starts it over `dataset`."""
        spec = structure.spec_from_types(output_types, output_shapes, output_classes)
        handle = _iterator_handle(spec, shared_name)
        return Iterator._from_spec(handle, None, spec)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """A feedable iterator: it reads the iterator whose `string_handle()` value is fed to
        `string_handle` (a scalar string placeholder), which must have this structure."""
        spec = structure.spec_from_types(output_types, output_shapes, output_classes)
        string_handle = _ops.convert_to_tensor(string_handle, dtype=_dtypes.string)
        handle = _ops.apply_op("IteratorFromStringHandleV2", [string_handle], {
            "output_types": structure.type_attrs(spec),
            "output_shapes": structure.shape_attrs(spec),
        }, name="IteratorFromStringHandleV2").outputs[0]
        return Iterator._from_spec(handle, None, spec)

    def string_handle(self, name=None):
        """A scalar string tensor naming this iterator, to feed to a from_string_handle
        iterator in the same session."""
        return _ops.apply_op("IteratorToStringHandle", [self._handle], {},
                             name=name or "IteratorToStringHandle").outputs[0]

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def output_types(self):
        return structure.types_of(self._element_spec)

    @property
    def output_shapes(self):
        return structure.shapes_of(self._element_spec)

    @property
    def output_classes(self):
        return structure.classes_of(self._element_spec)

    def make_initializer(self, dataset, name=None):
        """An op that (re)starts this iterator at the beginning of `dataset`."""
        mine = structure.flatten(self._element_spec)
        theirs = structure.flatten(dataset.element_spec)
        if [(type(s), s.dtype) for s in mine] != [(type(s), s.dtype) for s in theirs]:
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with "
                            f"output types {dataset.output_types!r}.")
        for a, b in zip(mine, theirs):
            if not a.shape.is_compatible_with(b.shape):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} "
                                f"but got dataset with output shapes {dataset.output_shapes!r}.")
        return _make_iterator(dataset, self._handle, name)

    def get_next(self, name=None):
        """The next element as a structure of tensors; running them past the end raises
        OutOfRangeError."""
        outputs = _ops.apply_op("IteratorGetNext", [self._handle], {
            "output_types": structure.type_attrs(self._element_spec),
            "output_shapes": structure.shape_attrs(self._element_spec),
        }, name=name or "IteratorGetNext").outputs
        return structure.from_tensor_list(self._element_spec, outputs)


def _iterator_handle(spec, shared_name):
    return _ops.apply_op("IteratorV2", [], {
        "shared_name": shared_name or "",
        "output_types": structure.type_attrs(spec),
        "output_shapes": structure.shape_attrs(spec),
    }, name="Iterator").outputs[0]


def _make_iterator(dataset, handle, name):
    graph = _ops.get_default_graph()
    return _ops.apply_op("MakeIterator", [dataset._variant_in(graph), handle], {},
                         name=name or "MakeIterator")


def make_initializable(dataset, shared_name=None):
    handle = _iterator_handle(dataset.element_spec, shared_name)
    initializer = _make_iterator(dataset, handle, None)
    return Iterator._from_spec(handle, initializer, dataset.element_spec)


class _DatasetFactory(FuncGraph):
    """The body of a one-shot iterator's dataset_factory. It takes no inputs, so an outer constant
    the dataset uses is copied in by value; any other outer tensor is an error (TF's rule)."""

    def _capture(self, tensor, op_type=None):
        if tensor.graph is self:
            return tensor
        if tensor.op.type != "Const":
            raise ValueError(f"Failed to capture {tensor.name} ({tensor.op.type}) by value for "
                             "make_one_shot_iterator: a one-shot iterator's dataset can use only "
                             "constants. Use make_initializable_iterator() for a dataset that "
                             "depends on placeholders or variables.")
        value = tensor.op.get_attr("value")
        if tensor.dtype == _dtypes.string:
            value = np.asarray(value, dtype=object)  # a scalar string comes back as bytes
        with self.as_default():
            return _ops.apply_op("Const", [], {"value": value, "dtype": tensor.dtype},
                                 name="Const").outputs[0]


def make_one_shot(dataset):
    graph = _ops.get_default_graph()
    body = _DatasetFactory(function_base_name(graph, "make_dataset"), graph)
    variant = dataset._variant_in(body)
    body.add_to_library([], [variant])
    spec = dataset.element_spec
    handle = _ops.apply_op("OneShotIterator", [], {
        "dataset_factory": body.name,
        "output_types": structure.type_attrs(spec),
        "output_shapes": structure.shape_attrs(spec),
    }, name="OneShotIterator").outputs[0]
    return Iterator._from_spec(handle, None, spec)


@tf_export("data.make_one_shot_iterator")
def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


@tf_export("data.make_initializable_iterator")
def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


@tf_export("data.get_output_types")
def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


@tf_export("data.get_output_shapes")
def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


@tf_export("data.get_output_classes")
def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
