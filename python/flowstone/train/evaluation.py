"""Evaluating a checkpoint once: the eval-step counter, a hook that stops after N evaluation
steps, and evaluate_once (TensorFlow keeps these private in its training/evaluation.py; TF1
exposes them as tf.contrib.training.* and tf_slim uses them)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops, init_ops, variable_scope
from flowstone.platform import tf_logging
from flowstone.train import basic_hooks, monitored_session
from flowstone.train.session_run_hook import SessionRunArgs, SessionRunHook


def get_or_create_eval_step():
    """The graph's int64 evaluation-step counter, a local variable in tf.GraphKeys.EVAL_STEP."""
    graph = _ops.get_default_graph()
    existing = graph.get_collection(_ops.GraphKeys.EVAL_STEP)
    if len(existing) == 1:
        return existing[0]
    if len(existing) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return variable_scope.get_variable(
        "eval_step", shape=[], dtype=_dtypes.int64, initializer=init_ops.zeros_initializer(),
        trainable=False, collections=[_ops.GraphKeys.LOCAL_VARIABLES, _ops.GraphKeys.EVAL_STEP])


class StopAfterNEvalsHook(SessionRunHook):
    """Requests a stop once the eval step reaches `num_evals` (None: never)."""

    def __init__(self, num_evals, log_progress=True):
        self._num_evals = num_evals
        self._log_progress = log_progress
        self._eval_step = None

    def _set_evals_completed_tensor(self, updated_eval_step):
        self._eval_step = updated_eval_step

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._eval_step})

    def after_run(self, run_context, run_values):
        completed = run_values.results["evals_completed"]
        if self._log_progress:
            tf_logging.info("Evaluation [%d/%s]", completed, self._num_evals)
        if self._num_evals is not None and completed >= self._num_evals:
            run_context.request_stop()


def evaluate_once(checkpoint_path, master="", scaffold=None, eval_ops=None, feed_dict=None,
                  final_ops=None, final_ops_feed_dict=None, hooks=None, config=None):
    """Restores `checkpoint_path`, runs `eval_ops` until a hook stops (or the input ends), and
    returns the values of `final_ops` computed at the end."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks or [])
    if eval_ops is not None:
        if isinstance(eval_ops, dict):
            dependencies = list(eval_ops.values())
        elif isinstance(eval_ops, (list, tuple)):
            dependencies = list(eval_ops)
        else:
            dependencies = [eval_ops]
        with _ops.control_dependencies(dependencies):
            updated = eval_step.assign_add(1)
        for hook in hooks:
            if isinstance(hook, StopAfterNEvalsHook):
                hook._set_evals_completed_tensor(updated)
        eval_ops = [eval_ops, updated]
    else:
        eval_ops = basic_ops.identity(eval_step.read_value())
    final_hook = basic_hooks.FinalOpsHook(final_ops, final_ops_feed_dict)
    hooks.append(final_hook)
    tf_logging.info("Starting evaluation of %s", checkpoint_path)
    creator = monitored_session.ChiefSessionCreator(
        scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
        config=config)
    with monitored_session.MonitoredSession(session_creator=creator, hooks=hooks) as session:
        while not session.should_stop():
            session.run(eval_ops, feed_dict)
    tf_logging.info("Finished evaluation of %s", checkpoint_path)
    return final_hook.final_ops_values
