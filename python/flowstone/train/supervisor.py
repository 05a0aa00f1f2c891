"""tf.train.Supervisor: TF1's training harness before MonitoredTrainingSession.

It finds or makes the init, ready and summary ops, a Saver, the global step and a summary writer
for `logdir`; `managed_session()` restores the latest checkpoint in `logdir` (or initializes),
writes the graph, and starts the standard services beside the training loop, each a LooperThread
of the Supervisor's Coordinator: a checkpoint every `save_model_secs`, summaries and
`global_step/sec` every `save_summaries_secs`, and the graph's queue runners. Leaving the block
stops them (an OutOfRangeError inside it is a clean end, as for the Coordinator), saves nothing
more, and closes the session.
"""

import contextlib
import os
import time

from flowstone.framework import ops as _ops
from flowstone.platform import tf_logging as logging
from flowstone.framework.tf_protos import SessionLog, Summary
from flowstone.train import coordinator as _coordinator
from flowstone.train import optimizer as _optimizer
from flowstone.train import queue_runner as _queue_runner
from flowstone.train import saver as _saver
from flowstone.train import session_manager as _session_manager
from flowstone.util.tf_export import tf_export


def _first_in_collection(key):
    items = _ops.get_collection(key)
    if len(items) > 1:
        raise RuntimeError(f"More than one item in the {key} collection")
    return items[0] if items else None


@tf_export("train.Supervisor")
class Supervisor:
    """TF1's Supervisor (TensorFlow's arguments and defaults); one process, one chief."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        self._graph = graph or _ops.get_default_graph()
        with self._graph.as_default():
            self._ready_op = self._default(ready_op, _ops.GraphKeys.READY_OP,
                                           _report_uninitialized)
            self._ready_for_local_init_op = self._default(
                ready_for_local_init_op, _ops.GraphKeys.READY_FOR_LOCAL_INIT_OP, lambda: None)
            self._init_op = self._default(init_op, _ops.GraphKeys.INIT_OP,
                                          _global_variables_initializer)
            self._local_init_op = self._default(local_init_op, _ops.GraphKeys.LOCAL_INIT_OP,
                                                _local_init)
            self._summary_op = self._default(summary_op, _ops.GraphKeys.SUMMARY_OP,
                                             _merge_all_summaries)
            self._saver = self._default(saver, _ops.GraphKeys.SAVERS, _default_saver)
            self._global_step = (_optimizer.get_global_step(self._graph)
                                 if global_step is Supervisor.USE_DEFAULT else global_step)
        self._is_chief = is_chief
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        if summary_writer is Supervisor.USE_DEFAULT:
            from flowstone.summary.writer import FileWriter
            summary_writer = FileWriter(logdir) if (logdir and is_chief) else None
        self._summary_writer = summary_writer
        if self._summary_op is not None and self._summary_writer is None and is_chief:
            self._summary_op = None  # nowhere to write summaries
        self._session_manager = session_manager or _session_manager.SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options)
        self._coord = _coordinator.Coordinator()
        self._started_threads = []
        self._graph_written = False
        # As in TensorFlow: the graph is complete once the Supervisor exists; a training loop
        # that adds ops by mistake (a leak, one op per step) fails at once.
        self._graph.finalize()

    @staticmethod
    def _default(value, collection, make):
        """`value`, unless USE_DEFAULT: then the collection's op, else a new one added to it."""
        if value is not Supervisor.USE_DEFAULT:
            return value
        found = _first_in_collection(collection)
        if found is None:
            found = make()
            if found is not None:
                _ops.add_to_collection(collection, found)
        return found

    # --- properties, as TensorFlow names them --------------------------------------------------
    coord = property(lambda self: self._coord)
    session_manager = property(lambda self: self._session_manager)
    is_chief = property(lambda self: self._is_chief)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # --- sessions ------------------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """The chief restores or initializes a session (and writes the graph); others wait for
        the model to be ready. Then the standard services and queue runners start."""
        if self._coord.should_stop():  # a Supervisor reused after a stop
            self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                logging.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            logging.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A session for the block; an exception in the block stops the services and is
        re-raised (OutOfRangeError ends the block cleanly); the session is closed after."""
        sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                start_standard_services=start_standard_services)
        try:
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, which re-raises
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                try:
                    sess.close()
                except Exception:  # noqa: BLE001 - a session that failed to close is gone
                    pass

    def _write_graph(self):
        if self._graph_written or not self._is_chief or not self._logdir:
            return
        from flowstone.ops.graph_io import write_graph
        write_graph(self._graph.as_graph_def(add_shapes=True), self._logdir, "graph.pbtxt")
        if self._summary_writer is not None:
            self._summary_writer.add_graph(self._graph)
        self._graph_written = True

    # --- services ------------------------------------------------------------------------------
    def start_standard_services(self, sess):
        """Starts the checkpoint, summary and step-counter threads the arguments ask for;
        returns them."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only "
                               "chief supervisors can write events.")
        threads = []
        if self._logdir and self._summary_writer is not None and self._save_summaries_secs:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._logdir and self._saver is not None and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        self._started_threads.extend(threads)
        return threads

    def start_queue_runners(self, sess, queue_runners=None):
        """Starts the graph's queue runners (or the given ones) under this Supervisor's
        Coordinator; returns their threads."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(_ops.GraphKeys.QUEUE_RUNNERS)
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True,
                                                 start=True))
        self._started_threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Starts a LooperThread calling `target` every `timer_interval_secs` until the stop."""
        looper = _coordinator.LooperThread(self._coord, timer_interval_secs, target=target,
                                           args=args, kwargs=kwargs)
        looper.start()
        self._started_threads.append(looper)
        return looper

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Requests a stop, joins the services and queue runners (re-raising the exception a
        stop was requested with) and closes the summary writer."""
        self._coord.request_stop()
        try:
            self._coord.join(self._started_threads + list(threads or []),
                             stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            self._started_threads = []
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.add_session_log(_session_log_stop(), None)
                self._summary_writer.close()

    def request_stop(self, ex=None):
        self._coord.request_stop(ex=ex)

    def should_stop(self):
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None):
        """Writes a summary computed by the training loop, at the global step if none given."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self._summary_writer.add_summary(summary, global_step)


# --- the default ops ------------------------------------------------------------------------------
def _report_uninitialized():
    from flowstone.ops import variables
    return variables.report_uninitialized_variables()


def _global_variables_initializer():
    from flowstone.ops import variables
    return variables.global_variables_initializer()


def _local_init():
    from flowstone.ops import basic_ops, lookup_initializers, variables
    return basic_ops.group(variables.local_variables_initializer(),
                           lookup_initializers.tables_initializer())


def _merge_all_summaries():
    from flowstone import summary
    return summary.merge_all()


def _default_saver():
    from flowstone.ops import variables
    if not variables.global_variables():
        return None
    return _saver.Saver()


def _session_log_stop():
    return SessionLog(status=SessionLog.STOP)


# --- the standard services ------------------------------------------------------------------------
class _SummaryThread(_coordinator.LooperThread):
    """Runs the summary op and writes its result every save_summaries_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        self._sv.summary_writer.add_summary(summary, None if step is None else int(step))


class _StepCounterThread(_coordinator.LooperThread):
    """Writes `global_step/sec` every save_summaries_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._last_time = None
        self._last_step = None

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = int(self._sess.run(self._sv.global_step))

    def run_loop(self):
        now = time.time()
        step = int(self._sess.run(self._sv.global_step))
        elapsed = now - self._last_time
        if elapsed > 0 and step != self._last_step:
            rate = (step - self._last_step) / elapsed
            tag = f"{self._sv.global_step.op.name}/sec"
            self._sv.summary_writer.add_summary(
                Summary(value=[Summary.Value(tag=tag, simple_value=rate)]), step)
            logging.log_first_n(logging.INFO, "%s: %g", 10, tag, rate)
        self._last_time, self._last_step = now, step


class _CheckpointThread(_coordinator.LooperThread):
    """Saves a checkpoint in logdir every save_model_secs (the first at once)."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        logging.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
