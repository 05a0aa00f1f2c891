"""ModeKeys and EstimatorSpec: what a model_fn is called with and what it returns."""

import collections

import flowstone as tf
from flowstone.estimator import export as _export
from flowstone.util.tf_export import tf_export

# The key under which Estimator.evaluate reports the mean of the loss.
LOSS_METRIC_KEY = "loss"
# The key of the mean loss per example that canned heads report.
AVERAGE_LOSS_METRIC_KEY = "average_loss"


@tf_export("estimator.ModeKeys")
class ModeKeys:
    """The mode a model_fn is called in."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _as_tensor_or_op(value, what):
    if isinstance(value, (tf.Tensor, tf.Operation)):
        return value
    raise TypeError(f"{what} must be Tensor or Operation, given: {value}")


def _check_eval_metric_ops(eval_metric_ops):
    checked = {}
    for key, value in (eval_metric_ops or {}).items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                            f"given: {value} for key: {key}")
        checked[key] = value
    return checked


@tf_export("estimator.EstimatorSpec")
class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """The ops and objects a model_fn returns for one mode. TRAIN needs `loss` and `train_op`,
    EVAL needs `loss`, PREDICT needs `predictions`."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode} unrecognized.")
        if train_op is None and mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        if train_op is not None:
            train_op = _as_tensor_or_op(train_op, "train_op")
        if loss is None:
            if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
                raise ValueError("Missing loss.")
        else:
            loss = _as_tensor_or_op(loss, "loss")
            if loss.shape.ndims not in (None, 0) and loss.shape.num_elements() != 1:
                raise ValueError(f"Loss must be scalar, given: {loss}")
            loss = tf.reshape(loss, []) if loss.shape.ndims else loss
        if predictions is None:
            if mode == ModeKeys.PREDICT:
                raise ValueError("Missing predictions.")
            predictions = {}
        elif isinstance(predictions, dict):
            predictions = {k: _as_tensor_or_op(v, f"predictions[{k}]")
                           for k, v in predictions.items()}
        else:
            predictions = _as_tensor_or_op(predictions, "predictions")
        eval_metric_ops = _check_eval_metric_ops(eval_metric_ops)
        if export_outputs is not None:
            if not isinstance(export_outputs, dict):
                raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
            for key, output in export_outputs.items():
                if not isinstance(output, _export.ExportOutput):
                    raise TypeError(f"Values in export_outputs must be ExportOutput objects. "
                                    f"Given: {{{key!r}: {output!r}}}")
        if scaffold is not None and not isinstance(scaffold, tf.train.Scaffold):
            raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
        hooks = {}
        for name, value in (("training_chief_hooks", training_chief_hooks),
                            ("training_hooks", training_hooks),
                            ("evaluation_hooks", evaluation_hooks),
                            ("prediction_hooks", prediction_hooks)):
            value = tuple(value or ())
            for hook in value:
                if not isinstance(hook, tf.train.SessionRunHook):
                    raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
            hooks[name] = value
        return super().__new__(cls, mode=mode, predictions=predictions, loss=loss,
                               train_op=train_op, eval_metric_ops=eval_metric_ops,
                               export_outputs=export_outputs, scaffold=scaffold or
                               tf.train.Scaffold(), **hooks)
