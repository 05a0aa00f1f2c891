"""tf.train.QueueRunner: Python threads that keep running a queue's enqueue ops, and
start_queue_runners, which starts those of the graph's QUEUE_RUNNERS collection.

Each thread calls sess.run(enqueue_op) in a loop; the blocking happens in C++ without the GIL.
The loop ends when the enqueue raises OutOfRangeError (its input, such as a filename queue, is
closed and drained): the last thread to end closes the queue, so its consumers drain it and then
get OutOfRangeError in turn. With a Coordinator, one more thread waits for a stop request and then
closes the queue with cancel_pending_enqueues, which wakes enqueues blocked on a full queue; any
other error is handed to coord.request_stop(), so coord.join() re-raises it.
"""

import threading

from flowstone import errors
from flowstone.client.session import get_default_session
from flowstone.framework import ops as _ops
from flowstone.platform import tf_logging as logging
from flowstone.util.tf_export import tf_export


@tf_export("train.QueueRunner", "train.queue_runner.QueueRunner")
class QueueRunner:
    """Runs `enqueue_ops` (one thread each) to fill `queue`."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner from a QueueRunnerDef is not supported")
        del import_scope
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (cancel_op if cancel_op is not None
                           else queue.close(cancel_pending_enqueues=True))
        self._queue_closed_exception_types = tuple(
            queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session = {}  # id(session) -> enqueue threads still running
        self._exceptions_raised = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def queue_closed_exception_types(self):
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self):
        """The exceptions the threads raised when they ran without a coordinator."""
        return self._exceptions_raised

    @property
    def name(self):
        return self._queue.name

    def _run(self, sess, enqueue_op, coord):
        decremented = False
        try:
            while not (coord and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[id(sess)] -= 1
                        decremented = True
                        last = self._runs_per_session[id(sess)] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 - the session may be closing
                            logging.vlog(1, "Ignored exception: %s", str(e))
                    return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, as TF does
            if coord:
                coord.request_stop(e)
            else:
                logging.error("Exception in QueueRunner: %s", str(e))
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[id(sess)] -= 1

    def _close_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may be closed already
            logging.vlog(1, "Ignored exception: %s", str(e))

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The threads that run the enqueue ops in `sess` (and, with `coord`, one that closes
        the queue on a stop request), registered with `coord`. Returns [] when this runner's
        threads already run in `sess`."""
        with self._lock:
            if self._runs_per_session.get(id(sess), 0) > 0:
                return []
            self._runs_per_session[id(sess)] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            name=f"QueueRunnerThread-{self.name}-close"))
        for t in threads:
            if coord:
                coord.register_thread(t)
            t.daemon = daemon
            if start:
                t.start()
        return threads


@tf_export("train.add_queue_runner", "train.queue_runner.add_queue_runner")
def add_queue_runner(qr, collection=_ops.GraphKeys.QUEUE_RUNNERS):
    """Adds `qr` to the graph's QUEUE_RUNNERS collection (start_queue_runners starts them)."""
    _ops.add_to_collection(collection, qr)


@tf_export("train.start_queue_runners", "train.queue_runner.start_queue_runners")
def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=_ops.GraphKeys.QUEUE_RUNNERS):
    """Starts the threads of every queue runner in `collection` of the session's graph; returns
    them (join them with coord.join())."""
    if _ops.executing_eagerly():
        raise RuntimeError("Queues are not compatible with eager execution.")
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.train.start_queue_runners(sess=sess)")
    graph = getattr(sess, "graph", None) or _ops.get_default_graph()
    threads = []
    for qr in graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
