"""The heads of the canned estimators (TensorFlow 1.15's v1 heads): from logits and labels,
the loss (summed over the batch: losses.Reduction.SUM), the predictions, the eval metrics and
the export outputs of an EstimatorSpec."""

import flowstone as tf
from flowstone.estimator import export as _export
from flowstone.estimator.model_fn import AVERAGE_LOSS_METRIC_KEY, EstimatorSpec, ModeKeys


class PredictionKeys:
    """Keys of the canned estimators' prediction dicts."""
    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"


class MetricKeys:
    """Keys of the canned estimators' eval metrics."""
    LOSS_MEAN = AVERAGE_LOSS_METRIC_KEY
    ACCURACY = "accuracy"
    ACCURACY_BASELINE = "accuracy_baseline"
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    LABEL_MEAN = "label/mean"
    PREDICTION_MEAN = "prediction/mean"
    PRECISION = "precision"
    RECALL = "recall"


def _weights(features, weight_column):
    """The [batch, 1] float example weights: features[weight_column], or 1."""
    if weight_column is None:
        return 1.0
    key = weight_column if isinstance(weight_column, str) else weight_column.key
    if key not in features:
        raise ValueError(f"weight_column {key!r} is not in features (keys: {sorted(features)}).")
    weights = tf.cast(tf.convert_to_tensor(features[key]), tf.float32)
    if weights.shape.ndims == 1:
        weights = weights[:, None]
    return weights


def _labels_2d(labels, dimension):
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                         "troubleshooting steps: Check that your data contain your label "
                         "feature. Check that your input_fn properly parses and returns labels.")
    if isinstance(labels, dict):
        raise ValueError(f"labels must be a Tensor for a single head, given a dict with keys "
                         f"{sorted(labels)}.")
    labels = tf.convert_to_tensor(labels)
    if labels.shape.ndims == 1:
        labels = labels[:, None]
    if labels.shape.ndims is not None and labels.shape[1] is not None and \
            int(labels.shape[1]) != dimension:
        raise ValueError(f"Mismatched label shape. Expected labels dimension={dimension}.  "
                         f"Received {int(labels.shape[1])}. Suggested Fix: If your classifier "
                         f"expects one-hot encoding label, check your n_classes argument to the "
                         f"estimator and/or the shape of your label. Otherwise, check the shape "
                         f"of your label.")
    return labels


class _Head:
    logits_dimension = None

    def __init__(self, weight_column):
        self._weight_column = weight_column

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None):
        """The EstimatorSpec for `mode`; TRAIN minimizes with `optimizer` or `train_op_fn`."""
        with tf.name_scope("head"):
            logits = tf.convert_to_tensor(logits)
            predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self._export_outputs(predictions))
            weights = _weights(features, self._weight_column)
            label_ids = self._label_ids(labels)
            unreduced = self._unreduced_loss(label_ids, logits)
            training_loss = tf.reduce_sum(unreduced * weights, name="training_loss")
            if regularization_losses:
                loss = tf.add_n([training_loss] + list(regularization_losses))
            else:
                loss = training_loss
            if mode == ModeKeys.EVAL:
                with tf.name_scope("metrics"):
                    metrics = self._eval_metric_ops(label_ids, predictions, unreduced, weights)
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=metrics)
            if train_op_fn is not None:
                train_op = train_op_fn(loss)
            elif optimizer is not None:
                train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


class _ClassificationHead(_Head):
    def __init__(self, n_classes, weight_column, label_vocabulary):
        super().__init__(weight_column)
        if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: "
                             f"{type(label_vocabulary)}")
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(f"label_vocabulary has {len(label_vocabulary)} entries, but "
                             f"n_classes is {n_classes}.")
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary

    def _label_ids(self, labels):
        labels = _labels_2d(labels, 1)
        if self._label_vocabulary is not None:
            if labels.dtype != tf.string:
                raise ValueError("Labels dtype should be string if there is a vocabulary. "
                                 f"Given: {labels.dtype}")
            vocab = tf.constant(list(self._label_vocabulary))
            matches = tf.equal(labels[:, :, None], vocab)
            check = tf.debugging.Assert(tf.reduce_all(tf.reduce_any(matches, -1)), [
                f"Labels must be in the label_vocabulary {list(self._label_vocabulary)}",
                labels])
            with tf.control_dependencies([check]):
                return tf.argmax(tf.cast(matches, tf.int32), -1)
        if labels.dtype == tf.string:
            raise ValueError("Labels dtype should be integer. Instead got string; pass "
                             "label_vocabulary to use string labels.")
        ids = tf.cast(labels, tf.int64)
        check = tf.debugging.Assert(tf.reduce_all(tf.logical_and(
            tf.greater_equal(ids, 0), tf.less(ids, self._n_classes))), [
                f"Labels must be in [0, n_classes - 1] = [0, {self._n_classes - 1}]", ids])
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def _class_names(self, class_ids):
        if self._label_vocabulary is not None:
            return tf.gather(tf.constant(list(self._label_vocabulary)), class_ids)
        return tf.as_string(class_ids)

    def _add_class_predictions(self, predictions, class_ids):
        batch = tf.shape(class_ids)[0]
        all_ids = tf.tile(tf.range(self._n_classes)[None, :], [batch, 1])
        predictions[PredictionKeys.CLASS_IDS] = class_ids
        predictions[PredictionKeys.CLASSES] = self._class_names(class_ids)
        predictions[PredictionKeys.ALL_CLASS_IDS] = all_ids
        predictions[PredictionKeys.ALL_CLASSES] = self._class_names(tf.cast(all_ids, tf.int64))
        return predictions

    def _export_outputs(self, predictions):
        batch = tf.shape(predictions[PredictionKeys.PROBABILITIES])[0]
        names = self._class_names(tf.range(self._n_classes, dtype=tf.int64))
        classification = _export.ClassificationOutput(
            scores=predictions[PredictionKeys.PROBABILITIES],
            classes=tf.tile(names[None, :], [batch, 1]))
        return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: classification,
                "classification": classification,
                "predict": _export.PredictOutput(predictions)}


class BinaryClassHead(_ClassificationHead):
    """Two classes: one logit, sigmoid cross-entropy."""

    logits_dimension = 1

    def __init__(self, weight_column=None, label_vocabulary=None):
        super().__init__(2, weight_column, label_vocabulary)

    def _predictions(self, logits):
        two_class_logits = tf.concat([tf.zeros_like(logits), logits], 1)
        class_ids = tf.argmax(two_class_logits, axis=1)[:, None]
        return self._add_class_predictions({
            PredictionKeys.LOGITS: logits,
            PredictionKeys.LOGISTIC: tf.sigmoid(logits),
            PredictionKeys.PROBABILITIES: tf.nn.softmax(two_class_logits),
        }, class_ids)

    def _unreduced_loss(self, label_ids, logits):
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(label_ids, tf.float32),
                                                       logits=logits)

    def _eval_metric_ops(self, label_ids, predictions, unreduced, weights):
        weights = tf.ones_like(unreduced) * weights
        labels = tf.cast(label_ids, tf.float32)
        logistic = predictions[PredictionKeys.LOGISTIC]
        class_ids = predictions[PredictionKeys.CLASS_IDS]
        label_mean = tf.metrics.mean(labels, weights, name=MetricKeys.LABEL_MEAN)
        mean_value, mean_update = label_mean
        return {
            MetricKeys.LOSS_MEAN: tf.metrics.mean(unreduced, weights, name="average_loss"),
            MetricKeys.ACCURACY: tf.metrics.accuracy(label_ids, class_ids, weights,
                                                     name=MetricKeys.ACCURACY),
            MetricKeys.PRECISION: tf.metrics.precision(label_ids, class_ids, weights,
                                                       name=MetricKeys.PRECISION),
            MetricKeys.RECALL: tf.metrics.recall(label_ids, class_ids, weights,
                                                 name=MetricKeys.RECALL),
            MetricKeys.PREDICTION_MEAN: tf.metrics.mean(logistic, weights,
                                                        name=MetricKeys.PREDICTION_MEAN),
            MetricKeys.LABEL_MEAN: label_mean,
            MetricKeys.ACCURACY_BASELINE: (tf.maximum(mean_value, 1 - mean_value),
                                           tf.maximum(mean_update, 1 - mean_update)),
            MetricKeys.AUC: tf.metrics.auc(label_ids, logistic, weights, curve="ROC",
                                           name=MetricKeys.AUC),
            MetricKeys.AUC_PR: tf.metrics.auc(label_ids, logistic, weights, curve="PR",
                                              name=MetricKeys.AUC_PR),
        }


class MultiClassHead(_ClassificationHead):
    """n_classes > 2: one logit per class, softmax cross-entropy."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None):
        if n_classes is None or n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}")
        super().__init__(n_classes, weight_column, label_vocabulary)
        self.logits_dimension = n_classes

    def _predictions(self, logits):
        class_ids = tf.argmax(logits, axis=1)[:, None]
        return self._add_class_predictions({
            PredictionKeys.LOGITS: logits,
            PredictionKeys.PROBABILITIES: tf.nn.softmax(logits),
        }, class_ids)

    def _unreduced_loss(self, label_ids, logits):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_ids[:, 0],
                                                              logits=logits)[:, None]

    def _eval_metric_ops(self, label_ids, predictions, unreduced, weights):
        weights = tf.ones_like(unreduced) * weights
        return {
            MetricKeys.LOSS_MEAN: tf.metrics.mean(unreduced, weights, name="average_loss"),
            MetricKeys.ACCURACY: tf.metrics.accuracy(
                label_ids, predictions[PredictionKeys.CLASS_IDS], weights,
                name=MetricKeys.ACCURACY),
        }


def classification_head(n_classes, weight_column=None, label_vocabulary=None):
    """The head of a classifier with `n_classes` classes (binary for 2)."""
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    if n_classes == 2:
        return BinaryClassHead(weight_column, label_vocabulary)
    return MultiClassHead(n_classes, weight_column, label_vocabulary)


class RegressionHead(_Head):
    """`label_dimension` real values, squared error."""

    def __init__(self, label_dimension=1, weight_column=None):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(weight_column)
        self.logits_dimension = label_dimension

    def _predictions(self, logits):
        return {PredictionKeys.PREDICTIONS: logits}

    def _label_ids(self, labels):
        labels = _labels_2d(labels, self.logits_dimension)
        if labels.dtype == tf.string:
            raise ValueError("Regression labels must be numbers, got strings.")
        return tf.cast(labels, tf.float32)

    def _unreduced_loss(self, labels, logits):
        return tf.squared_difference(labels, logits)

    def _eval_metric_ops(self, labels, predictions, unreduced, weights):
        weights = tf.ones_like(unreduced) * weights
        return {
            MetricKeys.LOSS_MEAN: tf.metrics.mean(unreduced, weights, name="average_loss"),
            MetricKeys.PREDICTION_MEAN: tf.metrics.mean(predictions[PredictionKeys.PREDICTIONS],
                                                        weights,
                                                        name=MetricKeys.PREDICTION_MEAN),
            MetricKeys.LABEL_MEAN: tf.metrics.mean(labels, weights, name=MetricKeys.LABEL_MEAN),
        }

    def _export_outputs(self, predictions):
        value = predictions[PredictionKeys.PREDICTIONS]
        regression = _export.RegressionOutput(value) if self.logits_dimension == 1 else None
        outputs = {"predict": _export.PredictOutput(predictions)}
        if regression is not None:
            outputs[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY] = regression
            outputs["regression"] = regression
        return outputs
