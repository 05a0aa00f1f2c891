"""DNNLinearCombinedClassifier and DNNLinearCombinedRegressor ("wide & deep"): the sum of a
linear model's logits (scope "linear", FTRL) and a DNN's (scope "dnn", Adagrad), each part
trained by its own optimizer."""

import flowstone as tf
from flowstone.estimator.canned import head as head_lib
from flowstone.estimator.canned import optimizers
from flowstone.estimator.canned.dnn import (_check_features, _check_hidden_units,
                                            _no_batch_norm, _only_sum_reduction, dnn_logits)
from flowstone.estimator.canned.linear import linear_learning_rate, linear_logits
from flowstone.estimator.estimator import Estimator
from flowstone.util.tf_export import tf_export

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


class _CombinedEstimator(Estimator):
    def __init__(self, head, model_dir, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
                 dnn_dropout, config, warm_start_from, linear_sparse_combiner):
        linear_feature_columns = list(linear_feature_columns or [])
        dnn_feature_columns = list(dnn_feature_columns or [])
        if not linear_feature_columns and not dnn_feature_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                             "defined.")
        if dnn_feature_columns:
            dnn_hidden_units = _check_hidden_units(dnn_hidden_units)

        def model_fn(features, labels, mode, config):
            del config
            _check_features(features)
            parts = []  # (logits, optimizer, scope)
            if dnn_feature_columns:
                with tf.variable_scope("dnn", values=tuple(features.values())) as scope:
                    logits = dnn_logits(features, mode, dnn_feature_columns, dnn_hidden_units,
                                        head.logits_dimension, dnn_activation_fn, dnn_dropout)
                parts.append((logits, optimizers.get_optimizer_instance(
                    dnn_optimizer, _DNN_LEARNING_RATE), scope.name))
            if linear_feature_columns:
                with tf.variable_scope("linear", values=tuple(features.values())) as scope:
                    logits = linear_logits(features, linear_feature_columns,
                                           head.logits_dimension, linear_sparse_combiner)
                parts.append((logits, optimizers.get_optimizer_instance(
                    linear_optimizer, linear_learning_rate(len(linear_feature_columns),
                                                           _LINEAR_LEARNING_RATE)), scope.name))
            logits = tf.add_n([p[0] for p in parts])

            def train_op_fn(loss):
                updates = []
                for _, optimizer, scope_name in parts:
                    variables = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES,
                                                  scope=scope_name + "/")
                    updates.append(optimizer.minimize(loss, var_list=variables))
                with tf.control_dependencies([tf.group(*updates)]):
                    return tf.assign_add(tf.train.get_global_step(), 1).op

            return head.create_estimator_spec(
                features, mode, logits, labels, train_op_fn=train_op_fn,
                regularization_losses=tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


@tf_export("estimator.DNNLinearCombinedClassifier")
class DNNLinearCombinedClassifier(_CombinedEstimator):
    """A wide & deep classifier."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=tf.losses.Reduction.SUM,
                 batch_norm=False, linear_sparse_combiner="sum"):
        _only_sum_reduction(loss_reduction)
        _no_batch_norm(batch_norm)
        del input_layer_partitioner
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                         dnn_activation_fn, dnn_dropout, config, warm_start_from,
                         linear_sparse_combiner)


@tf_export("estimator.DNNLinearCombinedRegressor")
class DNNLinearCombinedRegressor(_CombinedEstimator):
    """A wide & deep regressor."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=tf.losses.Reduction.SUM,
                 batch_norm=False, linear_sparse_combiner="sum"):
        _only_sum_reduction(loss_reduction)
        _no_batch_norm(batch_norm)
        del input_layer_partitioner
        head = head_lib.RegressionHead(label_dimension, weight_column)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                         dnn_activation_fn, dnn_dropout, config, warm_start_from,
                         linear_sparse_combiner)
