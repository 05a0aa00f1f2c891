"""Conformance cases for the queue ops (see op_cases.py). A queue lives in the session, so each
case builds a queue, fills it and reads it back in one run, ordered by control dependencies.
tests/python/test_queues.py covers blocking, closing, cancellation, shuffling and padding; the
readers, which need files, are tested there too."""

import numpy as np

import flowstone as tf
from op_cases import Case, rand

X = rand(4, 3)


def _after(deps, make):
    with tf.control_dependencies(deps if isinstance(deps, list) else [deps]):
        return make()


def _round_trip(queue_class, **kwargs):
    """The op whose output is `x` enqueued as rows and dequeued as one batch."""
    def build(x):
        q = queue_class(dtypes=[tf.float64], shapes=[[3]], **kwargs)
        return tf.identity(_after(q.enqueue_many([x]), lambda: q.dequeue_many(4))).op
    return build


def _one(x):
    q = tf.FIFOQueue(5, tf.float64)
    return tf.identity(_after(q.enqueue([x]), q.dequeue)).op


def _up_to_after_close(x):
    q = tf.FIFOQueue(10, tf.float64, shapes=[[3]])
    close = _after(q.enqueue_many([x]), q.close)
    return tf.identity(_after(close, lambda: q.dequeue_up_to(10))).op


def _size(x):
    q = tf.FIFOQueue(10, tf.float64, shapes=[[3]])
    return tf.identity(_after(q.enqueue_many([x]), q.size)).op


def _is_closed(x):
    q = tf.FIFOQueue(10, tf.float64, shapes=[[3]])
    close = _after(q.enqueue_many([x]), q.close)
    return tf.identity(_after(close, q.is_closed)).op


def _shuffled_single_row(x):
    q = tf.RandomShuffleQueue(5, 0, tf.float64, shapes=[[3]], seed=1)
    return tf.identity(_after(q.enqueue_many([x[:1]]), q.dequeue)).op


def _by_priority(x):
    """Rows enqueued with priorities [2, 0, 3, 1] come out as rows 1, 3, 0, 2."""
    q = tf.PriorityQueue(10, [tf.float64], shapes=[[3]])
    enqueue = q.enqueue_many([tf.constant([2, 0, 3, 1], tf.int64), x])
    return tf.identity(_after(enqueue, lambda: q.dequeue_many(4))[1]).op


CASES = [
    Case("FIFOQueueV2", [X], lambda x: x, build=_round_trip(tf.FIFOQueue, capacity=10)),
    Case("PaddingFIFOQueueV2", [X], lambda x: x,
         build=_round_trip(tf.PaddingFIFOQueue, capacity=10)),
    Case("RandomShuffleQueueV2", [X], lambda x: x[0], build=_shuffled_single_row),
    Case("QueueEnqueueManyV2", [X], lambda x: x, build=_round_trip(tf.FIFOQueue, capacity=10)),
    Case("QueueDequeueManyV2", [X], lambda x: x, build=_round_trip(tf.FIFOQueue, capacity=10)),
    Case("QueueEnqueueV2", [X], lambda x: x, build=_one),
    Case("QueueDequeueV2", [X], lambda x: x, build=_one),
    Case("QueueDequeueUpToV2", [X], lambda x: x, build=_up_to_after_close),
    Case("QueueCloseV2", [X], lambda x: x, build=_up_to_after_close),
    Case("QueueSizeV2", [X], lambda x: np.int32(4), build=_size),
    Case("QueueIsClosedV2", [X], lambda x: np.bool_(True), build=_is_closed),
    Case("PriorityQueueV2", [X], lambda x: x[[1, 3, 0, 2]], build=_by_priority),
]

_READERS = "tests/python/test_queues.py (readers over queues of files the test writes)"
EXEMPT = {
    "TextLineReaderV2": _READERS,
    "TFRecordReaderV2": _READERS,
    "WholeFileReaderV2": _READERS,
    "FixedLengthRecordReaderV2": _READERS,
    "ReaderReadV2": _READERS,
    "ReaderReadUpToV2": _READERS,
    "ReaderNumRecordsProducedV2": _READERS,
    "ReaderNumWorkUnitsCompletedV2": _READERS,
    "ReaderResetV2": _READERS,
    "ResourceCountUpTo": "tests/python/test_queues.py (tf.train.limit_epochs counts with it)",
}
