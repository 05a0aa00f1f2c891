"""The SessionRunHooks TF1 ships in tf.train: stopping at a step, logging tensors, counting
steps, NaN checks, checkpoints, feeds and final ops, each as TensorFlow defines it."""

import os
import time

import numpy as np

from flowstone import errors
from flowstone.client.timeline import Timeline
from flowstone.framework import ops as _ops
from flowstone.framework.tf_protos import SessionLog, Summary
from flowstone.platform import tf_logging as logging
from flowstone.protos import RunOptions
from flowstone.summary.writer import FileWriterCache
from flowstone.train.optimizer import get_global_step
from flowstone.train.session_run_hook import SessionRunArgs, SessionRunHook
from flowstone.util.tf_export import tf_export


@tf_export("train.SecondOrStepTimer")
class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one of them)."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_secs and every_steps should be provided.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self):
        self._last_time = None
        self._last_step = None

    def should_trigger_for_step(self, step):
        """Whether `step` is due: the first step always is, then after enough time or steps."""
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Records a trigger at `step`; returns (seconds, steps) since the previous one, or
        (None, None) for the first."""
        now = time.time()
        if self._last_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self):
        return self._last_step


def _require_global_step(hook_name):
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


@tf_export("train.StopAtStepHook")
class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or `num_steps` past the step
    the session started at)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = _require_global_step("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        # The fetched value is from before this run's increment.
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


@tf_export("train.LoggingTensorHook")
class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a list or a dict of names to tensors or tensor names)
    every `every_n_iter` runs or `every_n_secs` seconds, and/or at the end."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = [getattr(t, "name", t) for t in tensors]
            tensors = {getattr(t, "name", t): t for t in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._log_at_end = at_end
        self._timer = None if only_log_at_end else SecondOrStepTimer(every_secs=every_n_secs,
                                                                     every_steps=every_n_iter)

    def begin(self):
        graph = _ops.get_default_graph()
        self._current = {tag: graph.as_graph_element(t) if isinstance(t, str) else t
                         for tag, t in self._tensors.items()}
        self._iter_count = 0
        if self._timer is not None:
            self._timer.reset()

    def before_run(self, run_context):
        self._should_trigger = (self._timer is not None and
                                self._timer.should_trigger_for_step(self._iter_count))
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log(self, values):
        if self._formatter is not None:
            logging.info(self._formatter(values))
            return
        stats = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count) \
            if self._timer is not None else (None, None)
        if elapsed is not None:
            logging.info("%s (%.3f sec)", stats, elapsed)
        else:
            logging.info("%s", stats)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._current))


@tf_export("train.StepCounterHook")
class StepCounterHook(SessionRunHook):
    """Logs global steps per second every `every_n_steps` steps or `every_n_secs` seconds, and
    writes it as the summary 'global_step/sec' to `summary_writer` or the cached FileWriter of
    `output_dir`."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._output_dir = output_dir
        self._summary_writer = summary_writer

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _require_global_step("StepCounter")
        self._summary_tag = f"{self._global_step_tensor.op.name}/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            elapsed_secs, elapsed_steps = self._timer.update_last_triggered_step(step)
            if elapsed_secs:
                steps_per_sec = elapsed_steps / elapsed_secs
                logging.info("global_step/sec: %g", steps_per_sec)
                if self._summary_writer is not None:
                    summary = Summary(value=[Summary.Value(tag=self._summary_tag,
                                                           simple_value=steps_per_sec)])
                    self._summary_writer.add_summary(summary, step)


@tf_export("train.NanLossDuringTrainingError")
class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


@tf_export("train.NanTensorHook")
class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or, with fail_on_nan_loss=False, logs and stops) when
    the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(message)
                raise NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


@tf_export("train.CheckpointSaverListener")
class CheckpointSaverListener:
    """Callbacks around each save of a CheckpointSaverHook."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        """Returning True asks the training loop to stop."""

    def end(self, session, global_step_value):
        pass


@tf_export("train.CheckpointSaverHook")
class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint when the session starts, every `save_secs` seconds or `save_steps`
    steps, and at the end. As TensorFlow's, it also writes the graph and a SessionLog
    CHECKPOINT per save to the cached FileWriter of `checkpoint_dir`, for TensorBoard; the
    graph.pbtxt file is not written (see docs/COMPAT.md)."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step_tensor))
        # Written here, not in begin: other hooks' begin may still add to the graph.
        self._summary_writer.add_graph(_ops.get_default_graph())
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        step = int(run_values.results) + 1
        if self._timer.should_trigger_for_step(step):
            # The fetched step is from before this run's increment: read the new one.
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = _ops.get_collection(_ops.GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {_ops.GraphKeys.SAVERS}. Please add a "
                               "saver to the collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {_ops.GraphKeys.SAVERS}. "
                               "Please indicate which one to use by passing it to the "
                               "constructor.")
        return savers[0]

    def _save(self, session, step):
        """Saves; returns True when a listener asks to stop."""
        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. "
                             "listener: %s", listener)
                stop = True
        return stop


@tf_export("train.SummarySaverHook")
class SummarySaverHook(SessionRunHook):
    """Writes the summaries of `summary_op` (or the scaffold's) every `save_steps` steps or
    `save_secs` seconds, at the global step, to `summary_writer` or the cached FileWriter of
    `output_dir`; a SessionLog START marks the first run."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _require_global_step("SummarySaverHook")

    def _summary_ops(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context):
        # Until the first run the step is unknown, so that run always writes.
        self._request_summary = (self._next_step is None or
                                 self._timer.should_trigger_for_step(self._next_step))
        fetches = {"global_step": self._global_step_tensor}
        if self._request_summary and self._summary_ops() is not None:
            fetches["summary"] = self._summary_ops()
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()


@tf_export("train.FeedFnHook")
class FeedFnHook(SessionRunHook):
    """Feeds the dict `feed_fn()` returns into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


@tf_export("train.FinalOpsHook")
class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` when the session ends; their values are `final_ops_values`."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


@tf_export("train.GlobalStepWaiterHook")
class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches `wait_until_step` (another worker
    advances it)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _require_global_step("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.",
                     self._wait_until_step)
        while int(run_context.session.run(self._global_step_tensor)) < self._wait_until_step:
            time.sleep(0.5)
        self._worker_is_started = True
        return None


@tf_export("train.ProfilerHook")
class ProfilerHook(SessionRunHook):
    """Traces a run every `save_steps` steps or `save_secs` seconds and writes its Chrome trace
    timeline to `output_dir/timeline-<global step>.json` (open in chrome://tracing or Perfetto).
    Needs a global step."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._global_step_tensor = None
        self._next_step = None
        self._traced = False

    def begin(self):
        self._next_step = None
        self._global_step_tensor = _require_global_step("ProfilerHook")

    def before_run(self, run_context):
        # The first run only learns the global step; later runs are traced when the timer is due.
        self._traced = (self._next_step is not None
                        and self._timer.should_trigger_for_step(self._next_step))
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._traced else None
        return SessionRunArgs({"global_step": self._global_step_tensor}, options=options)

    def after_run(self, run_context, run_values):
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None:
            # The timer starts at the first run, so the first timeline comes a period later.
            self._timer.update_last_triggered_step(global_step - 1)
        if self._traced:
            # The fetched step may have been read before or after this run's increment; the
            # file is named after the step the run reached, read again as TensorFlow does.
            global_step = int(run_context.session.run(self._global_step_tensor))
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, run_values.run_metadata.step_stats)
        self._next_step = global_step + 1

    def _save(self, step, step_stats):
        path = self._output_file.format(step)
        logging.info("Saving timeline for %d into '%s'.", step, path)
        trace = Timeline(step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        with open(path, "w") as f:
            f.write(trace)
