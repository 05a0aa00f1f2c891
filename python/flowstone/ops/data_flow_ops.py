"""TF1's queues (tf.queue.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue) over the C++ queue ops
(src/ops/io/queue_ops.cc).

A queue op makes the queue in the session the first time it runs and outputs its handle; every
method adds an op on that handle. The queue itself lives in the session, so its blocking (a
dequeue on an empty queue, an enqueue on a full one) happens in C++ without the GIL, and a closed
session or a RunOptions timeout cancels it.
"""

import collections.abc
import itertools

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape, as_shape
from flowstone.ops import random_ops
from flowstone.util.tf_export import tf_export


def _as_shapes(shapes, count, unknown_rank_ok=False):
    if shapes is None:
        return None
    shapes = [as_shape(s) for s in shapes]
    if len(shapes) != count:
        raise ValueError(f"Queue shapes must have the same length as dtypes: {len(shapes)} "
                         f"shapes for {count} dtypes")
    if not unknown_rank_ok and any(s.rank is None for s in shapes):
        raise ValueError(f"Queue shapes must have a known rank, got {shapes}")
    return shapes


@tf_export("queue.QueueBase", "io.QueueBase", "QueueBase")
class QueueBase:
    """A queue of tuples of tensors, each component of one dtype (and, when given, one shape)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = list(dtypes)
        self._shapes = shapes if shapes is not None else [TensorShape(None)] * len(dtypes)
        if names is not None:
            names = list(names)
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
        self._names = names
        self._queue_ref = queue_ref
        self._name = "queue" if _ops.executing_eagerly() else queue_ref.op.name

    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self):
        return self._name

    @property
    def dtypes(self):
        return self._dtypes

    @property
    def shapes(self):
        return self._shapes

    @property
    def names(self):
        return self._names

    def _op_name(self, name, default):
        return name or f"{self._name}_{default}"

    def _flatten(self, vals):
        """The components of `vals` (a dict with names, a tuple/list, or one value) as tensors."""
        if self._names is not None:
            if not isinstance(vals, dict):
                raise ValueError("Queue with names requires a dictionary to enqueue")
            if sorted(vals) != sorted(self._names):
                raise ValueError(f"Keys in dictionary to enqueue {sorted(vals)} do not match "
                                 f"the names of the queue {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        elif isinstance(vals, dict):
            raise ValueError("Queue without names cannot enqueue a dictionary")
        if not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Enqueue expects {len(self._dtypes)} components, got {len(vals)}")
        return [_ops.convert_to_tensor(v, dtype=dt, name=f"component_{i}")
                for i, (v, dt) in enumerate(zip(vals, self._dtypes))]

    def _pack(self, tensors):
        if self._names is not None:
            return dict(zip(self._names, tensors))
        return tensors[0] if len(tensors) == 1 else list(tensors)

    def enqueue(self, vals, name=None):
        """An op that adds one element, blocking while the queue is full."""
        tensors = self._flatten(vals)
        for t, shape in zip(tensors, self._shapes):
            t.shape.assert_is_compatible_with(shape)
        return _ops.apply_op("QueueEnqueueV2", [self._queue_ref, tensors],
                             name=self._op_name(name, "enqueue"))

    def enqueue_many(self, vals, name=None):
        """An op that adds the rows (dimension 0) of `vals` as elements."""
        tensors = self._flatten(vals)
        for t, shape in zip(tensors, self._shapes):
            if t.shape.rank == 0:
                raise ValueError(f"enqueue_many needs components with a batch dimension, got "
                                 f"shape {t.shape}")
            if t.shape.rank is not None:
                t.shape[1:].assert_is_compatible_with(shape)
        return _ops.apply_op("QueueEnqueueManyV2", [self._queue_ref, tensors],
                             name=self._op_name(name, "EnqueueMany"))

    def _dequeue(self, op_type, inputs, batch_dim, name, default):
        op = _ops.apply_op(op_type, [self._queue_ref] + inputs,
                           {"component_types": self._dtypes},
                           name=self._op_name(name, default))
        outputs = list(op.outputs)
        for t, shape in zip(outputs, self._shapes):
            if shape.rank is None:
                continue
            t.set_shape(shape if batch_dim is False
                        else TensorShape([batch_dim]).concatenate(shape))
        return self._pack(outputs)

    def dequeue(self, name=None):
        """One element; running it blocks until there is one, and raises OutOfRangeError once
        the queue is closed and empty."""
        return self._dequeue("QueueDequeueV2", [], False, name, "Dequeue")

    def dequeue_many(self, n, name=None):
        """n elements stacked along a new first dimension."""
        n_tensor = _ops.convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        static_n = n if isinstance(n, int) else None
        return self._dequeue("QueueDequeueManyV2", [n_tensor], static_n, name, "DequeueMany")

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but a closed queue gives the fewer elements it has left."""
        n_tensor = _ops.convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        return self._dequeue("QueueDequeueUpToV2", [n_tensor], None, name, "DequeueUpTo")

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op that closes the queue: later enqueues fail, dequeues drain what is left."""
        return _ops.apply_op("QueueCloseV2", [self._queue_ref],
                             {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                             name=self._op_name(name, "Close"))

    def is_closed(self, name=None):
        return _ops.apply_op("QueueIsClosedV2", [self._queue_ref],
                             name=self._op_name(name, "IsClosed")).outputs[0]

    def size(self, name=None):
        return _ops.apply_op("QueueSizeV2", [self._queue_ref],
                             name=self._op_name(name, "Size")).outputs[0]


_eager_queues = itertools.count()


def _queue_op(op_type, dtypes, shapes, capacity, shared_name, name, extra=None):
    attrs = {"component_types": list(dtypes), "capacity": int(capacity)}
    if shapes is not None:
        attrs["shapes"] = [s.as_proto_dims() for s in shapes]
    if not shared_name and _ops.executing_eagerly():
        # Eager ops have no unique node names to key the queue by: each queue gets its own.
        shared_name = f"{name}_eager_{next(_eager_queues)}"
    if shared_name:
        attrs["shared_name"] = shared_name
    attrs.update(extra or {})
    return _ops.apply_op(op_type, [], attrs, name=name).outputs[0]


def _dtypes_of(dtypes, names):
    if isinstance(dtypes, collections.abc.Mapping):
        raise TypeError("Queue dtypes must be a list of dtypes")
    if isinstance(dtypes, _dtypes.DType) or not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    dtypes = [_dtypes.as_dtype(d) for d in dtypes]
    if names is not None and isinstance(names, str):
        names = [names]
    return dtypes, names


@tf_export("queue.FIFOQueue", "FIFOQueue")
class FIFOQueue(QueueBase):
    """Elements come out in the order they went in."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        dtypes, names = _dtypes_of(dtypes, names)
        shapes = _as_shapes(shapes, len(dtypes))
        ref = _queue_op("FIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


@tf_export("queue.PaddingFIFOQueue", "io.PaddingFIFOQueue", "PaddingFIFOQueue")
class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose shapes may have unknown (None) dimensions; dequeue_many pads each
    batch's elements to the largest of them, with zeros (empty strings)."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        dtypes, names = _dtypes_of(dtypes, names)
        if shapes is None:
            raise ValueError("PaddingFIFOQueue requires shapes (with None for dimensions that "
                             "vary)")
        shapes = _as_shapes(shapes, len(dtypes))
        ref = _queue_op("PaddingFIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


@tf_export("queue.PriorityQueue", "io.PriorityQueue", "PriorityQueue")
class PriorityQueue(QueueBase):
    """Tuples of an int64 scalar priority and `types` components; the lowest priority comes out
    first (equal priorities in the order they went in). Every component needs a shape."""

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None,
                 name="priority_queue"):
        types, names = _dtypes_of(types, names)
        if shapes is None:
            raise ValueError("PriorityQueue requires shapes, one per type (the priority's is "
                             "added)")
        shapes = _as_shapes(shapes, len(types))
        ref = _queue_op("PriorityQueueV2", types, shapes, capacity, shared_name, name)
        if names is not None:
            names = ["priority"] + list(names)  # as the components that come out
        super().__init__([_dtypes.int64] + types, [TensorShape([])] + shapes, names, ref)


@tf_export("queue.RandomShuffleQueue", "io.RandomShuffleQueue", "RandomShuffleQueue")
class RandomShuffleQueue(QueueBase):
    """Elements come out in a random order; while open, the queue keeps at least
    `min_after_dequeue` elements to mix from."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,
                 shared_name=None, name="random_shuffle_queue"):
        dtypes, names = _dtypes_of(dtypes, names)
        shapes = _as_shapes(shapes, len(dtypes))
        seed1, seed2 = random_ops.get_seed(seed)
        extra = {"min_after_dequeue": int(min_after_dequeue), "seed": seed1 or 0,
                 "seed2": seed2 or 0}
        ref = _queue_op("RandomShuffleQueueV2", dtypes, shapes, capacity, shared_name, name,
                        extra)
        super().__init__(dtypes, shapes, names, ref)
