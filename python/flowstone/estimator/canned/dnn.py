"""DNNClassifier and DNNRegressor: feature columns through input_layer, fully connected hidden
layers and a logits layer, with TensorFlow's variable names (dnn/hiddenlayer_0/kernel, ...,
dnn/logits/bias)."""

import flowstone as tf
from flowstone.estimator.canned import head as head_lib
from flowstone.estimator.canned import optimizers
from flowstone.estimator.estimator import Estimator
from flowstone.estimator.model_fn import ModeKeys
from flowstone.util.tf_export import tf_export

_LEARNING_RATE = 0.05


def _dense_layer(net, units, activation, scope_name):
    with tf.variable_scope(scope_name, values=(net,)):
        kernel = tf.get_variable("kernel", [int(net.shape[-1]), units],
                                 initializer=tf.glorot_uniform_initializer())
        bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
        net = tf.nn.bias_add(tf.matmul(net, kernel), bias)
        return activation(net) if activation is not None else net


def dnn_logits(features, mode, feature_columns, hidden_units, logits_dimension, activation_fn,
               dropout):
    """The logits of the DNN in the current variable scope."""
    with tf.variable_scope("input_from_feature_columns", values=tuple(features.values())):
        net = tf.feature_column.input_layer(features, feature_columns)
    for layer_id, units in enumerate(hidden_units):
        net = _dense_layer(net, units, activation_fn, f"hiddenlayer_{layer_id}")
        if dropout is not None and mode == ModeKeys.TRAIN:
            net = tf.nn.dropout(net, rate=dropout)
    return _dense_layer(net, logits_dimension, None, "logits")


def _check_features(features):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}")


def _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns, optimizer,
                  activation_fn, dropout):
    _check_features(features)
    optimizer = optimizers.get_optimizer_instance(optimizer, _LEARNING_RATE)
    with tf.variable_scope("dnn", values=tuple(features.values())):
        logits = dnn_logits(features, mode, feature_columns, hidden_units,
                            head.logits_dimension, activation_fn, dropout)
    return head.create_estimator_spec(
        features, mode, logits, labels, optimizer=optimizer,
        regularization_losses=tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))


def _check_hidden_units(hidden_units):
    if not hidden_units or any(int(u) < 1 for u in hidden_units):
        raise ValueError(f"hidden_units must be a non-empty list of positive sizes, given: "
                         f"{hidden_units}")
    return [int(u) for u in hidden_units]


class _DNNEstimator(Estimator):
    def __init__(self, head, hidden_units, feature_columns, model_dir, optimizer, activation_fn,
                 dropout, config, warm_start_from):
        hidden_units = _check_hidden_units(hidden_units)
        feature_columns = list(feature_columns)

        def model_fn(features, labels, mode, config):
            del config
            return _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                                 optimizer, activation_fn, dropout)

        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


@tf_export("estimator.DNNClassifier")
class DNNClassifier(_DNNEstimator):
    """A feed-forward classifier: softmax (sigmoid for 2 classes) over a DNN's logits."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=tf.losses.Reduction.SUM,
                 batch_norm=False):
        _only_sum_reduction(loss_reduction)
        _no_batch_norm(batch_norm)
        del input_layer_partitioner
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer,
                         activation_fn, dropout, config, warm_start_from)


@tf_export("estimator.DNNRegressor")
class DNNRegressor(_DNNEstimator):
    """A feed-forward regressor: a DNN's outputs under squared error."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=tf.nn.relu,
                 dropout=None, input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=tf.losses.Reduction.SUM, batch_norm=False):
        _only_sum_reduction(loss_reduction)
        _no_batch_norm(batch_norm)
        del input_layer_partitioner
        head = head_lib.RegressionHead(label_dimension, weight_column)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer,
                         activation_fn, dropout, config, warm_start_from)


def _only_sum_reduction(loss_reduction):
    if loss_reduction != tf.losses.Reduction.SUM:
        raise NotImplementedError(f"Canned estimators sum the loss over the batch "
                                  f"(losses.Reduction.SUM, TensorFlow 1's default); "
                                  f"loss_reduction={loss_reduction!r} is not supported.")


def _no_batch_norm(batch_norm):
    if batch_norm:
        raise NotImplementedError("DNN estimators with batch_norm=True are not supported.")
