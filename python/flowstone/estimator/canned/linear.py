"""LinearClassifier and LinearRegressor: tf.feature_column.linear_model under the "linear"
scope (linear/linear_model/<column>/weights, linear/linear_model/bias_weights), trained with
FTRL by default."""

import math

import flowstone as tf
from flowstone.estimator.canned import head as head_lib
from flowstone.estimator.canned import optimizers
from flowstone.estimator.canned.dnn import _check_features, _only_sum_reduction
from flowstone.estimator.estimator import Estimator
from flowstone.util.tf_export import tf_export

_LEARNING_RATE = 0.2


def linear_learning_rate(num_feature_columns, cap=_LEARNING_RATE):
    """TensorFlow's default: 1/sqrt(number of columns), at most `cap`."""
    return min(cap, 1.0 / math.sqrt(num_feature_columns))


def linear_logits(features, feature_columns, units, sparse_combiner):
    """The logits of a linear model in the current variable scope."""
    return tf.feature_column.linear_model(features, feature_columns, units=units,
                                          sparse_combiner=sparse_combiner)


class _LinearEstimator(Estimator):
    def __init__(self, head, feature_columns, model_dir, optimizer, config, warm_start_from,
                 sparse_combiner):
        feature_columns = list(feature_columns)
        if not feature_columns:
            raise ValueError("feature_columns must not be empty.")

        def model_fn(features, labels, mode, config):
            del config
            _check_features(features)
            opt = optimizers.get_optimizer_instance(
                optimizer, linear_learning_rate(len(feature_columns)))
            with tf.variable_scope("linear", values=tuple(features.values())):
                logits = linear_logits(features, feature_columns, head.logits_dimension,
                                       sparse_combiner)
            return head.create_estimator_spec(
                features, mode, logits, labels, optimizer=opt,
                regularization_losses=tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


@tf_export("estimator.LinearClassifier")
class LinearClassifier(_LinearEstimator):
    """Logistic (or softmax) regression over feature columns."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None,
                 partitioner=None, warm_start_from=None,
                 loss_reduction=tf.losses.Reduction.SUM, sparse_combiner="sum"):
        _only_sum_reduction(loss_reduction)
        del partitioner
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary)
        super().__init__(head, feature_columns, model_dir, optimizer, config, warm_start_from,
                         sparse_combiner)


@tf_export("estimator.LinearRegressor")
class LinearRegressor(_LinearEstimator):
    """Linear regression over feature columns."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=tf.losses.Reduction.SUM, sparse_combiner="sum"):
        _only_sum_reduction(loss_reduction)
        del partitioner
        head = head_lib.RegressionHead(label_dimension, weight_column)
        super().__init__(head, feature_columns, model_dir, optimizer, config, warm_start_from,
                         sparse_combiner)
