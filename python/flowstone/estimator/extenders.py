"""tf.estimator.add_metrics: an Estimator like another, whose evaluation also reports the
metrics a metric_fn adds."""

from flowstone.estimator.estimator import Estimator, _fn_args
from flowstone.estimator.model_fn import ModeKeys
from flowstone.util.tf_export import tf_export

_VALID_METRIC_FN_ARGS = {"features", "labels", "predictions", "config"}


@tf_export("estimator.add_metrics")
def add_metrics(estimator, metric_fn):
    """A new Estimator over the same model_dir and config whose EVAL spec also has the
    {name: (value, update_op)} that metric_fn(labels, predictions, features, config) returns
    (it takes any of those arguments)."""
    args = set(_fn_args(metric_fn))
    unexpected = sorted(args - _VALID_METRIC_FN_ARGS)
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: "
                         f"{unexpected}")

    def model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        available = {"features": features, "labels": labels, "predictions": spec.predictions,
                     "config": config}
        metrics = metric_fn(**{name: available[name] for name in args})
        if not isinstance(metrics, dict):
            raise TypeError(f"metric_fn should return a dict of (value, update_op) tuples, "
                            f"given: {metrics}")
        return spec._replace(eval_metric_ops={**spec.eval_metric_ops, **metrics})

    return Estimator(model_fn, model_dir=estimator.model_dir, config=estimator.config,
                     warm_start_from=estimator._warm_start_settings)
