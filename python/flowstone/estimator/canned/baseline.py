"""BaselineClassifier and BaselineRegressor: logits that ignore the features, one learned bias
per class or label dimension (baseline/bias), so that they learn the label distribution (or
mean) that other models should beat."""

import flowstone as tf
from flowstone.estimator.canned import head as head_lib
from flowstone.estimator.canned import optimizers
from flowstone.estimator.canned.dnn import _check_features, _only_sum_reduction
from flowstone.estimator.estimator import Estimator
from flowstone.util.tf_export import tf_export

_LEARNING_RATE = 0.3


def _batch_size(features):
    for value in features.values():
        if isinstance(value, tf.SparseTensor):
            return tf.cast(value.dense_shape[0], tf.int32)
        return tf.shape(value)[0]
    raise ValueError("Baseline estimators need at least one feature to know the batch size.")


class _BaselineEstimator(Estimator):
    def __init__(self, head, model_dir, optimizer, config):
        def model_fn(features, labels, mode, config):
            del config
            _check_features(features)
            opt = optimizers.get_optimizer_instance(optimizer, _LEARNING_RATE)
            with tf.variable_scope("baseline", values=tuple(features.values())):
                bias = tf.get_variable("bias", [head.logits_dimension],
                                       initializer=tf.zeros_initializer())
                logits = tf.tile(bias[None, :], [_batch_size(features), 1])
            return head.create_estimator_spec(features, mode, logits, labels, optimizer=opt)

        super().__init__(model_fn, model_dir=model_dir, config=config)


@tf_export("estimator.BaselineClassifier")
class BaselineClassifier(_BaselineEstimator):
    """Predicts the class distribution of the training labels, whatever the features."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, loss_reduction=tf.losses.Reduction.SUM):
        _only_sum_reduction(loss_reduction)
        super().__init__(head_lib.classification_head(n_classes, weight_column,
                                                      label_vocabulary),
                         model_dir, optimizer, config)


@tf_export("estimator.BaselineRegressor")
class BaselineRegressor(_BaselineEstimator):
    """Predicts the mean of the training labels, whatever the features."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None, loss_reduction=tf.losses.Reduction.SUM):
        _only_sum_reduction(loss_reduction)
        super().__init__(head_lib.RegressionHead(label_dimension, weight_column), model_dir,
                         optimizer, config)
