"""tf.estimator.train_and_evaluate with TrainSpec and EvalSpec, in one local process: train
until max_steps, evaluating (and exporting) after checkpoint saves at most every
`throttle_secs`, and once more at the end."""

import collections
import os
import time

import flowstone as tf
from flowstone.estimator.estimator import checkpoint_global_step
from flowstone.util.tf_export import tf_export


@tf_export("estimator.TrainSpec")
class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    """The training half of train_and_evaluate."""

    def __new__(cls, input_fn, max_steps=None, hooks=None):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()))


@tf_export("estimator.EvalSpec")
class EvalSpec(collections.namedtuple("EvalSpec", [
        "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs",
        "throttle_secs"])):
    """The evaluation half of train_and_evaluate."""

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        if exporters is None:
            exporters = ()
        elif isinstance(exporters, Exporter):
            exporters = (exporters,)
        exporters = tuple(exporters)
        names = [e.name for e in exporters]
        if len(set(names)) != len(names):
            raise ValueError(f"`exporters` must have unique names. Given: {names}")
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()), exporters,
                               start_delay_secs, throttle_secs)


@tf_export("estimator.Exporter")
class Exporter:
    """Exports a model after an evaluation."""

    @property
    def name(self):
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, as_text):
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._as_text = as_text

    name = property(lambda self: self._name)

    def _export(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            as_text=self._as_text,
                                            checkpoint_path=checkpoint_path)


@tf_export("estimator.FinalExporter")
class FinalExporter(_SavedModelExporter):
    """Exports a SavedModel after the final evaluation only."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        if assets_extra:
            raise NotImplementedError("FinalExporter(assets_extra=...) is not supported.")
        super().__init__(name, serving_input_receiver_fn, as_text)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        return self._export(estimator, export_path, checkpoint_path)


@tf_export("estimator.LatestExporter")
class LatestExporter(_SavedModelExporter):
    """Exports a SavedModel after each evaluation, keeping the newest `exports_to_keep`."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        if assets_extra:
            raise NotImplementedError("LatestExporter(assets_extra=...) is not supported.")
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        super().__init__(name, serving_input_receiver_fn, as_text)
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        path = self._export(estimator, export_path, checkpoint_path)
        if self._exports_to_keep:
            stamps = sorted((int(d) for d in os.listdir(export_path) if d.isdigit()))
            for stamp in stamps[:-self._exports_to_keep]:
                tf.io.gfile.rmtree(os.path.join(export_path, str(stamp)))
        return path


class _Evaluator:
    """Runs the EvalSpec's evaluation (and exporters) on a checkpoint."""

    def __init__(self, estimator, eval_spec):
        self._estimator, self._eval_spec = estimator, eval_spec
        self.last_result, self.export_results = None, []
        self._last_step = None

    def evaluate(self, is_the_final_export):
        estimator, spec = self._estimator, self._eval_spec
        checkpoint = estimator.latest_checkpoint()
        if checkpoint is None:
            tf.logging.info("Skip the current checkpoint eval due to no checkpoint.")
            return
        step = checkpoint_global_step(checkpoint)
        if step == self._last_step and not is_the_final_export:
            return
        result = estimator.evaluate(spec.input_fn, steps=spec.steps, hooks=list(spec.hooks),
                                    checkpoint_path=checkpoint, name=spec.name)
        self._last_step = step
        self.last_result = result
        for exporter in spec.exporters:
            export_path = os.path.join(estimator.model_dir, "export", exporter.name)
            path = exporter.export(estimator, export_path, checkpoint, result,
                                   is_the_final_export)
            if path is not None:
                self.export_results.append(path)


class _EvalAfterSaveListener(tf.train.CheckpointSaverListener):
    """Evaluates after a checkpoint save once `throttle_secs` have passed since the last."""

    def __init__(self, evaluator, throttle_secs, start_delay_secs):
        self._evaluator = evaluator
        self._throttle_secs = throttle_secs
        self._next_time = time.time() + start_delay_secs

    def begin(self):
        self._first_step = None

    def after_save(self, session, global_step_value):
        # The save when the session starts holds no new training.
        if self._first_step is None:
            self._first_step = global_step_value
            return False
        if time.time() >= self._next_time:
            self._next_time = time.time() + self._throttle_secs
            self._evaluator.evaluate(is_the_final_export=False)
        return False


@tf_export("estimator.train_and_evaluate")
def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains `estimator` to train_spec.max_steps (or the end of its input), evaluating on
    eval_spec along the way and at the end. Returns (the final evaluation's metrics, the export
    paths)."""
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                        f"{type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                        f"{type(eval_spec)}")
    evaluator = _Evaluator(estimator, eval_spec)
    listener = _EvalAfterSaveListener(evaluator, eval_spec.throttle_secs, 0)
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                    max_steps=train_spec.max_steps, saving_listeners=[listener])
    evaluator.evaluate(is_the_final_export=True)
    return evaluator.last_result, evaluator.export_results
