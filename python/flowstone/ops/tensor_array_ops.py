"""tf.TensorArray, as TensorFlow 2 builds it in graphs: a value-semantics TensorList in a variant
tensor (the `flow`). Every write returns a new TensorArray whose flow is the updated list; reads
take the flow they are called on. Gradients flow through the list ops."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.ops import list_ops as _list_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops.basic_ops import identity as _identity
from flowstone.ops.basic_ops import no_op as _no_op
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


def _check_dtype(value, dtype):
    if value.dtype != dtype:
        raise ValueError(f"TensorArray dtype is {dtype.name} but Op is trying to write dtype "
                         f"{value.dtype.name}.")


@tf_export("TensorArray")
class TensorArray:
    """A list of tensors of one dtype, written and read by index inside a graph.

    `dynamic_size=True` lets writes grow it; `element_shape` (and, with `infer_shape`, the first
    write) fixes the shape every element must have. `clear_after_read` is accepted and has no
    effect, as in TensorFlow 2's graph TensorArray: a value may be read any number of times.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if flow is None and size is None and not dynamic_size:
            raise ValueError("Size must be provided if handle or flow is not provided.")
        if handle is not None:
            raise ValueError("TensorArray handles are not used here: pass flow instead "
                             "(TensorArray(dtype, flow=ta.flow)).")
        self._dtype = _dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        # Shared with every TensorArray derived from this one, so a shape learnt from one write
        # holds for later reads of any of them (as in TensorFlow).
        self._element_shape = [as_shape(element_shape) if element_shape is not None
                               else TensorShape(None)]
        self._size = size
        if flow is not None:
            self._flow = flow
            return
        with _ops.name_scope(name, "TensorArrayV2", [size]) as scope:
            # The list op takes the scope's own name ("TensorArrayV2:0"), as in TensorFlow.
            self._flow = _ops.apply_op("TensorListReserve", [
                _list_ops.build_element_shape(self._element_shape[0]),
                _ops.convert_to_tensor(0 if size is None else size, _dtypes.int32)],
                {"element_dtype": self._dtype}, name=scope.rstrip("/"), exact_name=True).outputs[0]

    flow = property(lambda self: self._flow)
    dtype = property(lambda self: self._dtype)
    dynamic_size = property(lambda self: self._dynamic_size)
    element_shape = property(lambda self: self._element_shape[0])

    @property
    def handle(self):
        """The flow, as TensorFlow 2's graph TensorArray has no separate handle."""
        return self._flow

    def _with_flow(self, flow):
        derived = TensorArray.__new__(TensorArray)
        derived.__dict__.update(self.__dict__)
        derived._flow = flow
        return derived

    def _check_element_shape(self, shape):
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape}")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def identity(self):
        """A TensorArray whose flow runs after this one's (for control dependencies)."""
        return self._with_flow(_identity(self._flow))

    def grad(self, source, flow=None, name=None):
        raise NotImplementedError(
            "TensorArray.grad builds TensorFlow 1's gradient TensorArrays; here gradients flow "
            "through the TensorArray's ops: use tf.gradients on the values read from it.")

    def read(self, index, name=None):
        with _ops.name_scope(name, "TensorArrayV2Read", [self._flow, index]):
            value = _list_ops.tensor_list_get_item(self._flow, index, self._dtype,
                                                   element_shape=self.element_shape,
                                                   name=name)
        return value

    def write(self, index, value, name=None):
        with _ops.name_scope(name, "TensorArrayV2Write", [self._flow, index, value]):
            value = _ops.convert_to_tensor(value, preferred_dtype=self._dtype)
            _check_dtype(value, self._dtype)
            self._check_element_shape(value.shape)
            flow = _list_ops.tensor_list_set_item(
                self._flow, index, value, resize_if_index_out_of_bounds=self._dynamic_size,
                name=name)
        return self._with_flow(flow)

    def stack(self, name=None):
        with _ops.name_scope(name, "TensorArrayV2Stack", [self._flow]):
            num_elements = self._size if isinstance(self._size, int) and not self._dynamic_size \
                else -1
            return _list_ops.tensor_list_stack(self._flow, self._dtype,
                                               num_elements=num_elements,
                                               element_shape=self.element_shape, name=name)

    # gather and concat open no name scope, as in TensorFlow.
    def gather(self, indices, name=None):
        return _list_ops.tensor_list_gather(self._flow, indices, self._dtype,
                                            element_shape=self.element_shape, name=name)

    def concat(self, name=None):
        return _list_ops.tensor_list_concat(self._flow, self._dtype,
                                            element_shape=self.element_shape, name=name)

    def unstack(self, value, name=None):
        with _ops.name_scope(name, "TensorArrayUnstack", [self._flow, value]):
            value = _ops.convert_to_tensor(value, preferred_dtype=self._dtype)
            _check_dtype(value, self._dtype)
            self._check_element_shape(value.shape[1:])
            flow = _list_ops.tensor_list_from_tensor(value, element_shape=value.shape[1:],
                                                     name=name)
        return self._with_flow(flow)

    def scatter(self, indices, value, name=None):
        with _ops.name_scope(name, "TensorArrayScatter", [self._flow, value, indices]):
            value = _ops.convert_to_tensor(value, preferred_dtype=self._dtype)
            _check_dtype(value, self._dtype)
            self._check_element_shape(value.shape[1:])
            flow = _list_ops.tensor_list_scatter(value, indices, input_handle=self._flow,
                                                 name=name)
        return self._with_flow(flow)

    def split(self, value, lengths, name=None):
        with _ops.name_scope(name, "TensorArraySplit", [self._flow, value, lengths]):
            value = _ops.convert_to_tensor(value, preferred_dtype=self._dtype)
            _check_dtype(value, self._dtype)
            lengths = _ops.convert_to_tensor(lengths)
            if lengths.dtype != _dtypes.int64:
                lengths = _math_ops.cast(lengths, _dtypes.int64)
            element_shape = TensorShape(None) if value.shape.rank is None \
                else TensorShape([None]).concatenate(value.shape[1:])
            flow = _list_ops.tensor_list_split(value, element_shape, lengths, name=name)
        return self._with_flow(flow)

    def size(self, name=None):
        if not self._dynamic_size and self._size is not None:
            return _ops.convert_to_tensor(self._size, _dtypes.int32)
        return _list_ops.tensor_list_length(self._flow, name=name or "TensorListLength")

    def close(self, name=None):
        return _no_op(name=name or "TensorArrayClose")


def to_flows(structure):
    """`structure` with each TensorArray replaced by its flow (for loop variables)."""
    return nest.map_structure(lambda v: v.flow if isinstance(v, TensorArray) else v, structure)


def from_flows(template, structure):
    """`structure` (shaped like `template`) with a TensorArray, like the one in `template`, over
    each flow where `template` holds a TensorArray."""
    return nest.map_structure(
        lambda t, v: t._with_flow(v) if isinstance(t, TensorArray) else v, template, structure,
        check_types=False)

