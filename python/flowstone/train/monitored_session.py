"""tf.train.Scaffold, the session creators and the monitored sessions: a session that runs
hooks around every run() and stops cleanly at the end of the input."""

from flowstone import errors
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops, variables
from flowstone.protos import RunMetadata, RunOptions
from flowstone.summary import summary_ops
from flowstone.train.basic_hooks import CheckpointSaverHook, StepCounterHook, SummarySaverHook
from flowstone.train.coordinator import Coordinator
from flowstone.train.queue_runner import start_queue_runners
from flowstone.train.saver import Saver
from flowstone.train.session_manager import SessionManager
from flowstone.train.session_run_hook import (SessionRunArgs, SessionRunContext,
                                              SessionRunValues)
from flowstone.util.tf_export import tf_export

def _merge_run_options(options, hook_options):
    """The caller's RunOptions with each hook's trace level, deadline and OOM report merged in
    (highest trace level, longest deadline, any report)."""
    merged = RunOptions()
    if options is not None:
        merged.CopyFrom(options)
    for extra in hook_options:
        merged.trace_level = max(merged.trace_level, extra.trace_level)
        merged.timeout_in_ms = max(merged.timeout_in_ms, extra.timeout_in_ms)
        merged.report_tensor_allocations_upon_oom = (
            merged.report_tensor_allocations_upon_oom or extra.report_tensor_allocations_upon_oom)
    return merged


# The "argument not given" marker of MonitoredTrainingSession's save_* arguments.
USE_DEFAULT = object()


@tf_export("train.Scaffold")
class Scaffold:
    """The ops a monitored session needs to create and check a model: init, ready and local init
    ops, and a saver. finalize() fills in the missing ones from the graph's collections or the
    defaults, then finalizes the graph."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            init_op = init_op or copy_from_scaffold.init_op
            init_feed_dict = init_feed_dict or copy_from_scaffold.init_feed_dict
            init_fn = init_fn or copy_from_scaffold._user_init_fn
            ready_op = ready_op or copy_from_scaffold.ready_op
            ready_for_local_init_op = (ready_for_local_init_op or
                                       copy_from_scaffold.ready_for_local_init_op)
            local_init_op = local_init_op or copy_from_scaffold.local_init_op
            local_init_feed_dict = local_init_feed_dict or copy_from_scaffold.local_init_feed_dict
            summary_op = summary_op or copy_from_scaffold.summary_op
            saver = saver or copy_from_scaffold.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one op in `collection_key`, or `default_constructor()` added to it."""
        elements = _ops.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f"More than one item in the collection \"{collection_key}\". "
                                   f"Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item "
                                   f"to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            _ops.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """Initializes the local variables."""
        return basic_ops.group(variables.local_variables_initializer())

    def finalize(self):
        """Creates the missing ops and finalizes the graph; returns self."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", _ops.GraphKeys.INIT_OP,
                lambda: basic_ops.group(variables.global_variables_initializer()))
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", _ops.GraphKeys.READY_OP, variables.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", _ops.GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: variables.report_uninitialized_variables(
                    variables.global_variables(), name="report_uninitialized_variables_1"))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", _ops.GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default(
                "summary_op", _ops.GraphKeys.SUMMARY_OP, summary_ops.merge_all)
        if self._saver is None:
            self._saver = Scaffold.get_or_default(
                "saver", _ops.GraphKeys.SAVERS, lambda: Saver(sharded=True, allow_empty=True))
        _ops.get_default_graph().finalize()
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)


@tf_export("train.SessionCreator")
class SessionCreator:
    """Makes the session a MonitoredSession wraps."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}.")


class _ScaffoldSessionCreator(SessionCreator):
    def __init__(self, scaffold, master, config):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config

    def _session_manager(self):
        scaffold = self._scaffold
        return SessionManager(local_init_op=scaffold.local_init_op,
                              local_init_feed_dict=scaffold.local_init_feed_dict,
                              ready_op=scaffold.ready_op,
                              ready_for_local_init_op=scaffold.ready_for_local_init_op,
                              graph=_ops.get_default_graph())


@tf_export("train.ChiefSessionCreator")
class ChiefSessionCreator(_ScaffoldSessionCreator):
    """Creates a session restored from `checkpoint_dir`'s latest checkpoint, or initialized."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        return self._session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict, init_fn=self._scaffold.init_fn)


@tf_export("train.WorkerSessionCreator")
class WorkerSessionCreator(_ScaffoldSessionCreator):
    """Creates a session once the chief has initialized the model."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        sess = self._session_manager().wait_for_session(self._master, config=self._config,
                                                        max_wait_secs=self._max_wait_secs)
        if sess is None:
            raise errors.DeadlineExceededError(
                None, None, f"Session was not ready after waiting {self._max_wait_secs} secs.")
        return sess


class _StepContext:
    """What run_step_fn's step_fn receives: the raw session, a run that calls the hooks, and a
    way to end the loop."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        raise StopIteration("step_fn has requested the iterations to stop.")


class _MonitoredSession:
    """The session, the hooks around each run, and clean stopping."""

    def __init__(self, session_creator, hooks, stop_grace_period_secs):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._graph = _ops.get_default_graph()
        self._sess = (session_creator or ChiefSessionCreator()).create_session()
        self._coord = Coordinator()
        # As TF's session creator: the graph's queue runners fill their queues from the start;
        # close() stops them through the coordinator before closing the session.
        if self._graph.get_collection(_ops.GraphKeys.QUEUE_RUNNERS):
            start_queue_runners(sess=self._sess, coord=self._coord)
        self._stop_grace_period_secs = stop_grace_period_secs
        self._should_stop = False
        self._closed = False
        for hook in self._hooks:
            hook.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self):
        return self._closed or self._should_stop or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` with the hooks' fetches and feeds added; returns the caller's
        values."""
        if self._closed:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        all_fetches = {"caller": fetches}
        all_feeds = dict(feed_dict or {})
        user_feeds = set(all_feeds)
        hook_options = []
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.options is not None:
                hook_options.append(request.options)
            if request.fetches is not None:
                all_fetches[hook] = request.fetches
            for key, value in (request.feed_dict or {}).items():
                if key in user_feeds:
                    raise RuntimeError("Same tensor is fed by a SessionRunHook and user.")
                if key in all_feeds:
                    raise RuntimeError("Same tensor is fed by two hooks.")
                all_feeds[key] = value
        if hook_options:
            # As in TensorFlow: the strictest of the caller's and the hooks' options, and a
            # RunMetadata for the hooks to read when the caller passed none.
            options = _merge_run_options(options, hook_options)
            run_metadata = run_metadata if run_metadata is not None else RunMetadata()
        outputs = self._sess.run(all_fetches, feed_dict=all_feeds or None, options=options,
                                 run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(results=outputs.get(hook), options=options,
                                                     run_metadata=run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def run_step_fn(self, step_fn):
        """Calls step_fn(step_context); its request_stop() ends the loop (should_stop())."""
        try:
            return step_fn(_StepContext(self._sess, self.run))
        except StopIteration:
            self._should_stop = True
            return None

    def close(self):
        self._close_internal(None)

    def _close_internal(self, exception_type):
        if self._closed:
            return
        try:
            if exception_type is None:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            self._closed = True
            try:
                self._coord.request_stop()
                self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                                 ignore_live_threads=True)
            finally:
                self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        # The end of the input (OutOfRangeError, StopIteration) ends training cleanly.
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


@tf_export("train.MonitoredSession")
class MonitoredSession(_MonitoredSession):
    """A session created by `session_creator` (by default a ChiefSessionCreator) that calls
    `hooks` around each run. Leaving its `with` block on OutOfRangeError closes it cleanly.
    Unlike TensorFlow's, it does not re-create the session after an AbortedError (see
    docs/COMPAT.md)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, stop_grace_period_secs)


@tf_export("train.SingularMonitoredSession")
class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession with its own ChiefSessionCreator, and access to the raw session."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(
            scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess()


def _default(value, default):
    return default if value is USE_DEFAULT else value


@tf_export("train.MonitoredTrainingSession")
def MonitoredTrainingSession(  # noqa: N802 - TensorFlow's name
        master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,
        chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
        save_summaries_secs=USE_DEFAULT, config=None, stop_grace_period_secs=120,
        log_step_count_steps=100, max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
        summary_dir=None, save_graph_def=True):
    """A MonitoredSession for training: on the chief, it restores or initializes the model, saves
    checkpoints into `checkpoint_dir` (every 600 seconds unless save_checkpoint_steps/secs say
    otherwise), logs steps per second and writes the graph's summaries (merge_all) into
    `summary_dir` (default: checkpoint_dir) every 100 steps unless save_summaries_steps/secs say
    otherwise; other workers wait for the chief."""
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    save_checkpoint_steps = _default(save_checkpoint_steps, None)
    save_checkpoint_secs = _default(save_checkpoint_secs, None)
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    save_summaries_steps = _default(save_summaries_steps, None)
    save_summaries_secs = _default(save_summaries_secs, None)
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks=hooks, stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master,
                                  config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir and log_step_count_steps and log_step_count_steps > 0:
        all_hooks.append(StepCounterHook(output_dir=summary_dir,
                                         every_n_steps=log_step_count_steps))
    if summary_dir and ((save_summaries_steps and save_summaries_steps > 0) or
                        (save_summaries_secs and save_summaries_secs > 0)):
        all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                          save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0) or
                           (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
