"""tf.estimator.Estimator: a model_fn trained, evaluated, used for prediction and exported, each
time in a fresh graph that restores the latest checkpoint of model_dir."""

import inspect
import os
import tempfile

import numpy as np

import flowstone as tf
from flowstone.estimator import export as _export
from flowstone.estimator import warm_starting
from flowstone.estimator.model_fn import LOSS_METRIC_KEY, EstimatorSpec, ModeKeys
from flowstone.estimator.run_config import RunConfig
from flowstone.util.tf_export import tf_export

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


def _fn_args(fn):
    """The argument names of a function, a functools.partial or a callable object."""
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def _verify_model_fn_args(model_fn, params):
    args = set(_fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params "
                         f"({params}) is passed to Estimator.")
    if params is None and "params" in args:
        tf.logging.warning("Estimator's model_fn (%s) includes params argument, but params are "
                           "not passed to Estimator.", model_fn)
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


class _DatasetInitializerHook(tf.train.SessionRunHook):
    """Initializes the iterator of an input_fn's Dataset when the session starts."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def _check_hooks_type(hooks):
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, tf.train.SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _parse_input_fn_result(result):
    """(features, labels, hooks) from what an input_fn returned: a Dataset of (features, labels)
    or features, a (features, labels) tuple, or features alone."""
    hooks = []
    if isinstance(result, tf.data.Dataset):
        iterator = tf.data.make_initializable_iterator(result)
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


class _StopAfterNEvalsHook(tf.train.SessionRunHook):
    """Stops evaluation after `num_evals` runs."""

    def __init__(self, num_evals):
        self._num_evals = num_evals
        self._evals_completed = 0

    def after_run(self, run_context, run_values):
        self._evals_completed += 1
        if self._evals_completed >= self._num_evals:
            run_context.request_stop()


@tf_export("estimator.Estimator")
class Estimator:
    """Trains, evaluates and serves the model `model_fn(features, labels, mode, params,
    config)` builds, keeping its checkpoints in `model_dir`."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
        model_dir = None if model_dir is None else os.fspath(model_dir)
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError(f"model_dir are set both in constructor and `RunConfig`, but with "
                             f"different values. In constructor: '{model_dir}', in `RunConfig`: "
                             f"'{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if not model_dir:
            model_dir = tempfile.mkdtemp()
            tf.logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = dict(params or {})
        self._warm_start_settings = warm_starting.warm_start_settings(warm_start_from)

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: self._config)
    params = property(lambda self: dict(self._params))

    @property
    def model_fn(self):
        """model_fn as a function of (features, labels, mode, config), params bound."""
        return self._call_model_fn

    # --- checkpoints -----------------------------------------------------------------------

    def latest_checkpoint(self):
        """The path of the latest checkpoint in model_dir, or None."""
        return tf.train.latest_checkpoint(self._model_dir)

    def get_variable_names(self):
        """The names of the variables in the latest checkpoint."""
        self._require_checkpoint()
        return [name for name, _ in tf.train.list_variables(self._model_dir)]

    def get_variable_value(self, name):
        """The value of variable `name` in the latest checkpoint."""
        self._require_checkpoint()
        return tf.train.load_variable(self._model_dir, name)

    def eval_dir(self, name=None):
        """Where evaluate(name=name) writes its results: model_dir/eval or eval_<name>."""
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    def _require_checkpoint(self):
        if self.latest_checkpoint() is None:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")

    # --- building ----------------------------------------------------------------------------

    def _call_input_fn(self, input_fn, mode):
        args = _fn_args(input_fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self._config
        with tf.device("/cpu:0"):
            return _parse_input_fn_result(input_fn(**kwargs))

    def _call_model_fn(self, features, labels, mode, config):
        args = _fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec. Given: {type(spec)}")
        return spec

    def _new_graph(self):
        graph = tf.Graph()
        with graph.as_default():
            if self._config.tf_random_seed is not None:
                tf.set_random_seed(self._config.tf_random_seed)
        return graph

    # --- train -------------------------------------------------------------------------------

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains until `input_fn`'s data ends, for `steps` more steps or up to global step
        `max_steps`, resuming from model_dir's latest checkpoint. Returns self."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            latest = self.latest_checkpoint()
            if latest is not None and checkpoint_global_step(latest) >= max_steps:
                tf.logging.info("Skipping training since max_steps has already saved.")
                return self
        hooks = _check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(tf.train.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        tf.logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        config = self._config
        os.makedirs(self._model_dir, exist_ok=True)
        with self._new_graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            features, labels, input_hooks = self._call_input_fn(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, config)
            if self._warm_start_settings is not None and self.latest_checkpoint() is None:
                self._warm_start_settings.apply()
            scaffold = _scaffold_with_saver(spec.scaffold, config)
            worker_hooks = list(hooks) + input_hooks + list(spec.training_hooks) + [
                tf.train.NanTensorHook(spec.loss),
            ]
            if config.log_step_count_steps:
                worker_hooks.append(tf.train.LoggingTensorHook(
                    {"loss": spec.loss, "step": global_step},
                    every_n_iter=config.log_step_count_steps))
            chief_hooks = list(spec.training_chief_hooks)
            if config.save_checkpoints_steps or config.save_checkpoints_secs:
                chief_hooks.append(tf.train.CheckpointSaverHook(
                    self._model_dir, save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps, scaffold=scaffold,
                    listeners=saving_listeners))
            # As TensorFlow's Estimator: the loss is always summarized for TensorBoard.
            if not any(s.op.name == "loss" for s in tf.get_collection(tf.GraphKeys.SUMMARIES)):
                tf.summary.scalar("loss", spec.loss)
            loss = None
            any_step_done = False
            # Summaries go where MonitoredTrainingSession writes them (save_summaries_steps),
            # the one place that turns them on.
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=self._model_dir, scaffold=scaffold, hooks=worker_hooks,
                    chief_only_hooks=chief_hooks, save_checkpoint_secs=0,
                    save_summaries_steps=config.save_summary_steps, config=config.session_config,
                    max_wait_secs=config.session_creation_timeout_secs,
                    log_step_count_steps=config.log_step_count_steps) as session:
                while not session.should_stop():
                    _, loss = session.run([spec.train_op, spec.loss])
                    any_step_done = True
            if not any_step_done:
                tf.logging.warning("Training with estimator made no steps. Perhaps input is "
                                   "empty or misspecified.")
            return loss

    # --- evaluate ----------------------------------------------------------------------------

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """The metrics of the model in model_dir's latest checkpoint (or `checkpoint_path`) over
        `input_fn`'s data (or its first `steps` batches): eval_metric_ops, "loss" (the mean of
        the batch losses) and "global_step". Also written under model_dir/eval[_name]."""
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            tf.logging.info("Could not find trained model in model_dir: %s, running "
                            "initialization to evaluate.", self._model_dir)
        with self._new_graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            features, labels, input_hooks = self._call_input_fn(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self._config)
            if LOSS_METRIC_KEY in spec.eval_metric_ops:
                raise ValueError(f"Metric with name \"{LOSS_METRIC_KEY}\" is not allowed, because "
                                 "Estimator already defines a default metric with the same name.")
            metrics = dict(spec.eval_metric_ops)
            metrics[LOSS_METRIC_KEY] = tf.metrics.mean(spec.loss)
            update_op = tf.group(*[update for _, update in metrics.values()])
            final_ops = {key: value for key, (value, _) in metrics.items()}
            final_ops[tf.GraphKeys.GLOBAL_STEP] = global_step
            all_hooks = _check_hooks_type(hooks) + input_hooks + list(spec.evaluation_hooks)
            if steps is not None:
                all_hooks.append(_StopAfterNEvalsHook(steps))
            final_hook = tf.train.FinalOpsHook(final_ops)
            all_hooks.append(final_hook)
            creator = tf.train.ChiefSessionCreator(
                scaffold=spec.scaffold, checkpoint_filename_with_path=checkpoint_path,
                config=self._config.session_config)
            with tf.train.MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    session.run(update_op)
        results = {key: _scalar(value) for key, value in final_hook.final_ops_values.items()}
        _export.write_eval_results(self.eval_dir(name), results,
                                   results[tf.GraphKeys.GLOBAL_STEP])
        tf.logging.info("Saving dict for global step %d: %s", results[tf.GraphKeys.GLOBAL_STEP],
                        ", ".join(f"{k} = {v}" for k, v in sorted(results.items())))
        return results

    # --- predict -----------------------------------------------------------------------------

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields the predictions of model_dir's latest checkpoint for `input_fn`'s features:
        one example at a time (a dict when predictions is a dict), or whole batches."""
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            tf.logging.info("Could not find trained model in model_dir: %s, running "
                            "initialization to predict.", self._model_dir)
        with self._new_graph().as_default():
            tf.train.get_or_create_global_step()
            features, _, input_hooks = self._call_input_fn(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self._config)
            predictions = _selected_predictions(spec.predictions, predict_keys)
            creator = tf.train.ChiefSessionCreator(
                scaffold=spec.scaffold, checkpoint_filename_with_path=checkpoint_path,
                config=self._config.session_config)
            all_hooks = _check_hooks_type(hooks) + input_hooks + list(spec.prediction_hooks)
            with tf.train.MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(values, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}

    # --- export ------------------------------------------------------------------------------

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                           as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Writes a SavedModel (tag "serve") of the PREDICT graph fed by
        `serving_input_receiver_fn`, with model_dir's latest checkpoint, into a new
        timestamped directory of `export_dir_base`; returns its path as bytes."""
        if serving_input_receiver_fn is None:
            raise ValueError("An input_receiver_fn must be defined.")
        if assets_extra:
            raise NotImplementedError("export_saved_model(assets_extra=...) is not supported.")
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError("export_saved_model exports the PREDICT graph only.")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        export_dir = _export.timestamped_export_dir(os.fspath(export_dir_base))
        with self._new_graph().as_default():
            tf.train.get_or_create_global_step()
            receiver = serving_input_receiver_fn()
            spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT, self._config)
            signatures = _export.build_all_signature_defs(
                receiver.receiver_tensors, spec.export_outputs, spec.predictions,
                receiver.receiver_tensors_alternatives)
            with tf.Session(config=self._config.session_config) as session:
                saver = spec.scaffold.saver or tf.train.Saver(sharded=True)
                saver.restore(session, checkpoint_path)
                builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
                builder.add_meta_graph_and_variables(
                    session, [tf.saved_model.tag_constants.SERVING],
                    signature_def_map=signatures, main_op=tf.tables_initializer(),
                    saver=saver)
                builder.save(as_text)
        return export_dir.encode()

    export_savedmodel = export_saved_model


def checkpoint_global_step(checkpoint_path):
    """The global step saved in a checkpoint."""
    return int(tf.train.load_variable(checkpoint_path, tf.GraphKeys.GLOBAL_STEP))


def _scalar(value):
    """A numpy scalar for a 0-d result (as TensorFlow's evaluate returns), else the array."""
    value = np.asarray(value)
    return value[()] if value.ndim == 0 else value


def _selected_predictions(predictions, predict_keys):
    if predict_keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    if isinstance(predict_keys, str):
        predict_keys = [predict_keys]
    selected = {key: value for key, value in predictions.items() if key in predict_keys}
    if not selected:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, "
                         f"provided {list(predict_keys)}.")
    return selected


def _batch_length(values):
    lengths = {key: np.shape(value)[0] if np.ndim(value) else None
               for key, value in values.items()}
    if any(n is None for n in lengths.values()) or len(set(lengths.values())) != 1:
        raise ValueError(f"Batch length of predictions should be same. The lengths are "
                         f"{lengths}; set yield_single_examples=False to get whole batches.")
    return next(iter(lengths.values()))


def _scaffold_with_saver(scaffold, config):
    """`scaffold` with a saver that keeps config.keep_checkpoint_max checkpoints."""
    if scaffold.saver is not None or tf.get_collection(tf.GraphKeys.SAVERS):
        return scaffold
    saver = tf.train.Saver(sharded=True, max_to_keep=config.keep_checkpoint_max,
                           keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                           save_relative_paths=True)
    return tf.train.Scaffold(saver=saver, copy_from_scaffold=scaffold)
