"""`for element in dataset:` while executing eagerly.

Datasets are descriptions that build their ops into whichever graph asks (DatasetV1._variant_in),
and their functions (map, filter, interleave) are graph functions. So an eager iteration builds
the pipeline once, with an iterator over it, into a private graph, and runs that graph in a
session of its own, as tf.function does: the C++ pipeline threads and the cached plans are the
graph-mode ones, and each element comes back as eager tensors without a numpy copy. Eager tensors
the pipeline reads (a from_tensor_slices of eager values, a tensor a map function captures) are
Placeholders of the private graph, fed once when the iterator starts.
"""

import numpy as np

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import dataset_structure as structure
from flowstone.ops import iterator_ops
from flowstone.util.tf_export import tf_export


class PipelineGraph(_ops.Graph):
    """A private graph for a dataset built while executing eagerly; the eager tensors its ops
    read become Placeholders (`eager_inputs`, in the order first read)."""

    feeds_eager_tensors = True

    def __init__(self):
        super().__init__()
        self._eager_inputs = {}  # id(EagerTensor) -> (that tensor, Placeholder)

    @property
    def eager_inputs(self):
        return list(self._eager_inputs.values())

    def _capture_eager(self, tensor, op_type=None):
        found = self._eager_inputs.get(id(tensor))
        if found is None:
            with self.as_default(), self.control_dependencies(None):
                placeholder = _ops.apply_op("Placeholder", [], {
                    "dtype": tensor.dtype, "shape": tensor.shape}, name="eager_input").outputs[0]
            found = self._eager_inputs[id(tensor)] = (tensor, placeholder)
        return found[1]


class EagerIterator:
    """An iterator over a dataset while executing eagerly (what `iter(dataset)` returns): each
    `next()` is one element as a structure of EagerTensors; the end raises StopIteration."""

    def __init__(self, dataset):
        graph = PipelineGraph()
        spec = dataset.element_spec
        with graph.as_default():
            handle = iterator_ops._iterator_handle(spec, None)
            start = iterator_ops._make_iterator(dataset, handle, None)
            outputs = _ops.apply_op("IteratorGetNext", [handle], {
                "output_types": structure.type_attrs(spec),
                "output_shapes": structure.shape_attrs(spec),
            }, name="IteratorGetNext").outputs
            # Composites are decoded here, in the pipeline graph; their components come back.
            outputs = structure.to_components(spec, structure.from_tensor_list(spec, outputs))
        self._spec = spec
        try:
            self._session = _C.Session.create(graph._c, {})
            inputs = graph.eager_inputs
            start_callable = self._session.make_callable(
                [p._as_node_output() for _, p in inputs], [], [start._node])
            self._next = self._session.make_callable([], [t._as_node_output() for t in outputs],
                                                     [])
            start_callable.call_eager([t._handle for t, _ in inputs])
        except _C.StatusError as e:
            raise _errors.from_status_error(e) from None
        self._done = False

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def get_next(self):
        """The next element; past the end, tf.errors.OutOfRangeError as in TF."""
        try:
            handles = self._next.call_eager([])
        except _C.StatusError as e:
            raise _errors.from_status_error(e) from None
        return structure.from_components(self._spec, [_eager.EagerTensor(h) for h in handles])

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            return self.get_next()
        except _errors.OutOfRangeError:
            self._done = True
            raise StopIteration from None

    next = __next__


def run_once(dataset, build):
    """The EagerTensors of `build(variant)` (a tensor or a list of them, made from the dataset's
    variant tensor) run once while executing eagerly: Dataset.cardinality() and
    get_single_element() build their op into a private graph over the pipeline, as iteration
    does, and run it in a session of their own."""
    graph = PipelineGraph()
    with graph.as_default():
        outputs = build(dataset._variant_in(graph))
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)
    session = None
    try:
        session = _C.Session.create(graph._c, {})
        inputs = graph.eager_inputs
        run = session.make_callable([p._as_node_output() for _, p in inputs],
                                    [t._as_node_output() for t in outputs], [])
        handles = run.call_eager([t._handle for t, _ in inputs])
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None
    finally:
        if session is not None:
            session.close()
    values = [_eager.EagerTensor(h) for h in handles]
    return values[0] if single else values


@tf_export("data.NumpyIterator")
class NumpyIterator:
    """An iterator over a dataset's elements as numpy values, in the element's structure (what
    Dataset.as_numpy_iterator() returns)."""

    def __init__(self, dataset):
        self._iterator = EagerIterator(dataset)
        self._spec = dataset.element_spec

    def __iter__(self):
        return self

    def __next__(self):
        element = next(self._iterator)
        return structure.pack(self._spec, [_to_numpy(t) for t in structure.flatten(element)])

    next = __next__

    def __repr__(self):
        return f"NumpyIterator(iterator={self._iterator!r})"


def _to_numpy(tensor):
    if isinstance(tensor, SparseTensor):
        # As TensorFlow's: a SparseTensor's numpy value is its dense array.
        dense = np.zeros(tensor.dense_shape.numpy(), tensor.dtype.as_numpy_dtype)
        dense[tuple(tensor.indices.numpy().T)] = tensor.values.numpy()
        return dense
    value = tensor.numpy()
    if isinstance(value, np.ndarray):
        value.setflags(write=False)  # TF's arrays may share the tensor's buffer
    return value
