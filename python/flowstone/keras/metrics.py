"""tf.keras.metrics: stateful metrics whose state lives in variables of the model's graph.

`update_state` builds the ops that accumulate one batch, `result` reads the value, and
`reset_state` zeroes the variables. Training fetches the updates and results in the same run as
the optimizer step, so a step is still one session call.
"""

import numpy as np

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras import losses as losses_module
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.naming import to_snake_case
from flowstone.util.tf_export import tf_export


@tf_export("keras.metrics.Metric")
class Metric:
    def __init__(self, name=None, dtype=None, **kwargs):
        self.name = name or to_snake_case(type(self).__name__)
        self.dtype = dtype or K.floatx()
        self._variables = []

    def add_weight(self, name, shape=(), dtype=None, initializer="zeros", **kwargs):
        graph = tf.get_default_graph()
        with graph.name_scope(None), graph.control_dependencies(None):
            value = np.zeros(shape, dtype=tf.as_dtype(dtype or self.dtype).as_numpy_dtype)
            variable = tf.Variable(value, name=f"{self.name}/{name}", trainable=False,
                                   collections=[tf.GraphKeys.LOCAL_VARIABLES])
        K.track_variable(variable)
        self._variables.append(variable)
        return variable

    variables = property(lambda self: list(self._variables))
    weights = variables

    def __call__(self, *args, **kwargs):
        update = self.update_state(*args, **kwargs)
        with tf.control_dependencies([update]):
            return self.result()

    def reset_state(self):
        K.batch_set_value([(v, np.zeros(v.shape.as_list(), v.dtype.as_numpy_dtype))
                           for v in self._variables])

    reset_states = reset_state

    def update_state(self, *args, **kwargs):
        raise NotImplementedError("Must be implemented in subclasses.")

    def result(self):
        raise NotImplementedError("Must be implemented in subclasses.")

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _weighted(values, sample_weight):
    values = tf.cast(values, K.floatx())
    if sample_weight is None:
        return values, tf.cast(tf.size(values), K.floatx())
    sample_weight = tf.cast(sample_weight, values.dtype)
    if sample_weight.shape.ndims is not None and values.shape.ndims is not None:
        while sample_weight.shape.ndims > values.shape.ndims:
            sample_weight = tf.squeeze(sample_weight, [-1])
        while sample_weight.shape.ndims < values.shape.ndims:
            sample_weight = tf.expand_dims(sample_weight, -1)
    sample_weight = sample_weight * tf.ones_like(values)
    return values * sample_weight, tf.reduce_sum(sample_weight)


@tf_export("keras.metrics.Mean")
class Mean(Metric):
    """The (weighted) mean of every value passed to update_state."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        values, count = _weighted(values, sample_weight)
        return tf.group(self.total.assign_add(tf.reduce_sum(values), read_value=False),
                        self.count.assign_add(count, read_value=False))

    def result(self):
        return tf.div_no_nan(self.total.read_value(), self.count.read_value())


@tf_export("keras.metrics.Sum")
class Sum(Metric):
    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")

    def update_state(self, values, sample_weight=None):
        values, _ = _weighted(values, sample_weight)
        return self.total.assign_add(tf.reduce_sum(values), read_value=False)

    def result(self):
        return self.total.read_value()


@tf_export("keras.metrics.MeanMetricWrapper")
class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred)` over every sample seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(values, sample_weight)

    def get_config(self):
        config = dict(self._fn_kwargs)
        config.update(super().get_config())
        return config


# --- functions -----------------------------------------------------------------------------
@tf_export("keras.metrics.binary_accuracy")
def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_true, y_pred = losses_module.match_ranks(tf.convert_to_tensor(y_true),
                                               tf.convert_to_tensor(y_pred))
    predicted = tf.cast(tf.greater(y_pred, threshold), y_pred.dtype)
    return tf.reduce_mean(tf.cast(tf.equal(tf.cast(y_true, y_pred.dtype), predicted),
                                  K.floatx()), axis=-1)


@tf_export("keras.metrics.categorical_accuracy")
def categorical_accuracy(y_true, y_pred):
    return tf.cast(tf.equal(tf.argmax(y_true, -1), tf.argmax(y_pred, -1)), K.floatx())


def _sparse_labels(y_true, y_pred):
    y_true = tf.convert_to_tensor(y_true)
    if y_true.shape.ndims is not None and y_true.shape.ndims == y_pred.shape.ndims:
        y_true = tf.squeeze(y_true, [-1])
    return tf.cast(y_true, tf.int64)


@tf_export("keras.metrics.sparse_categorical_accuracy")
def sparse_categorical_accuracy(y_true, y_pred):
    y_pred = tf.convert_to_tensor(y_pred)
    labels = _sparse_labels(y_true, y_pred)
    return tf.cast(tf.equal(labels, tf.argmax(y_pred, -1)), K.floatx())


@tf_export("keras.metrics.top_k_categorical_accuracy")
def top_k_categorical_accuracy(y_true, y_pred, k=5):
    return tf.cast(tf.nn.in_top_k(y_pred, tf.cast(tf.argmax(y_true, -1), tf.int32), k),
                   K.floatx())


@tf_export("keras.metrics.sparse_top_k_categorical_accuracy")
def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    y_pred = tf.convert_to_tensor(y_pred)
    labels = tf.cast(_sparse_labels(y_true, y_pred), tf.int32)
    return tf.cast(tf.nn.in_top_k(y_pred, labels, k), K.floatx())


def _wrapper_class(class_name, fn, default_name, **defaults):
    def __init__(self, name=default_name, dtype=None, **kwargs):
        options = dict(defaults)
        options.update(kwargs)
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **options)

    def from_config(cls, config):
        return cls(**config)

    cls = type(class_name, (MeanMetricWrapper,), {"__init__": __init__, "__module__": __name__,
                                                   "from_config": classmethod(from_config)})
    return tf_export(f"keras.metrics.{class_name}")(cls)


Accuracy = _wrapper_class(
    "Accuracy", lambda t, p: tf.cast(tf.equal(*losses_module.match_ranks(
        tf.cast(t, p.dtype), p)), K.floatx()), "accuracy")
BinaryAccuracy = _wrapper_class("BinaryAccuracy", binary_accuracy, "binary_accuracy",
                                threshold=0.5)
CategoricalAccuracy = _wrapper_class("CategoricalAccuracy", categorical_accuracy,
                                     "categorical_accuracy")
SparseCategoricalAccuracy = _wrapper_class("SparseCategoricalAccuracy",
                                           sparse_categorical_accuracy,
                                           "sparse_categorical_accuracy")
TopKCategoricalAccuracy = _wrapper_class("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                         "top_k_categorical_accuracy", k=5)
SparseTopKCategoricalAccuracy = _wrapper_class("SparseTopKCategoricalAccuracy",
                                               sparse_top_k_categorical_accuracy,
                                               "sparse_top_k_categorical_accuracy", k=5)
MeanSquaredError = _wrapper_class("MeanSquaredError", losses_module.mean_squared_error,
                                  "mean_squared_error")
MeanAbsoluteError = _wrapper_class("MeanAbsoluteError", losses_module.mean_absolute_error,
                                   "mean_absolute_error")
BinaryCrossentropy = _wrapper_class("BinaryCrossentropy", losses_module.binary_crossentropy,
                                    "binary_crossentropy", from_logits=False)
CategoricalCrossentropy = _wrapper_class("CategoricalCrossentropy",
                                         losses_module.categorical_crossentropy,
                                         "categorical_crossentropy", from_logits=False)
SparseCategoricalCrossentropy = _wrapper_class("SparseCategoricalCrossentropy",
                                               losses_module.sparse_categorical_crossentropy,
                                               "sparse_categorical_crossentropy",
                                               from_logits=False)


# --- confusion-matrix metrics ----------------------------------------------------------------
class _Thresholded(Metric):
    """Counts of true/false positives/negatives at each threshold, for binary predictions."""

    _COUNTS = ()

    def __init__(self, thresholds, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.thresholds = [float(t) for t in thresholds]
        for count in self._COUNTS:
            setattr(self, count, self.add_weight(count, shape=(len(self.thresholds),)))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = tf.reshape(tf.cast(y_pred, K.floatx()), [-1, 1])
        y_true = tf.reshape(tf.cast(tf.cast(y_true, tf.bool), K.floatx()), [-1, 1])
        above = tf.cast(tf.greater(y_pred, tf.constant([self.thresholds], K.floatx())),
                        K.floatx())
        weight = 1.0 if sample_weight is None else tf.reshape(
            tf.cast(sample_weight, K.floatx()), [-1, 1])
        counts = {"true_positives": above * y_true, "false_positives": above * (1.0 - y_true),
                  "true_negatives": (1.0 - above) * (1.0 - y_true),
                  "false_negatives": (1.0 - above) * y_true}
        return tf.group(*[getattr(self, c).assign_add(tf.reduce_sum(counts[c] * weight, 0),
                                                      read_value=False)
                          for c in self._COUNTS])

    def _read(self, count):
        return getattr(self, count).read_value()


@tf_export("keras.metrics.Precision")
class Precision(_Thresholded):
    _COUNTS = ("true_positives", "false_positives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise NotImplementedError("Precision(top_k=..., class_id=...) is not supported.")
        self.init_thresholds = thresholds
        super().__init__([0.5] if thresholds is None else np.atleast_1d(thresholds),
                         name=name, dtype=dtype)

    def result(self):
        tp = self._read("true_positives")
        value = tf.div_no_nan(tp, tp + self._read("false_positives"))
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {"thresholds": self.init_thresholds, "top_k": None, "class_id": None,
                **super().get_config()}


@tf_export("keras.metrics.Recall")
class Recall(_Thresholded):
    _COUNTS = ("true_positives", "false_negatives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise NotImplementedError("Recall(top_k=..., class_id=...) is not supported.")
        self.init_thresholds = thresholds
        super().__init__([0.5] if thresholds is None else np.atleast_1d(thresholds),
                         name=name, dtype=dtype)

    def result(self):
        tp = self._read("true_positives")
        value = tf.div_no_nan(tp, tp + self._read("false_negatives"))
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {"thresholds": self.init_thresholds, "top_k": None, "class_id": None,
                **super().get_config()}


@tf_export("keras.metrics.AUC")
class AUC(_Thresholded):
    """Area under the ROC (or PR) curve by a Riemann sum over `num_thresholds` thresholds,
    the trapezoidal rule ('interpolation' for ROC) as Keras's default."""

    _COUNTS = ("true_positives", "false_positives", "true_negatives", "false_negatives")

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        if num_thresholds <= 1:
            raise ValueError("Argument `num_thresholds` must be an integer > 1. Received: "
                             f"num_thresholds={num_thresholds}")
        if curve not in ("ROC", "PR"):
            raise ValueError(f'Invalid AUC curve value: "{curve}". Expected values are '
                             "[ROC, PR]")
        self.num_thresholds, self.curve = num_thresholds, curve
        self.summation_method, self._from_logits = summation_method, from_logits
        eps = 1e-7
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([0.0 - eps] + inner + [1.0 + eps], name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self._from_logits:
            y_pred = tf.sigmoid(y_pred)
        return super().update_state(y_true, y_pred, sample_weight)

    def result(self):
        tp, fp = self._read("true_positives"), self._read("false_positives")
        tn, fn = self._read("true_negatives"), self._read("false_negatives")
        if self.curve == "ROC":
            x = tf.div_no_nan(fp, fp + tn)
            y = tf.div_no_nan(tp, tp + fn)
        else:
            x = tf.div_no_nan(tp, tp + fn)
            y = tf.div_no_nan(tp, tp + fp)
        if self.summation_method == "minoring":
            heights = tf.minimum(y[:-1], y[1:])
        elif self.summation_method == "majoring":
            heights = tf.maximum(y[:-1], y[1:])
        else:
            heights = (y[:-1] + y[1:]) / 2.0
        return tf.reduce_sum((x[:-1] - x[1:]) * heights)

    def get_config(self):
        return {"num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method, **super().get_config()}


@tf_export("keras.metrics.MeanIoU")
class MeanIoU(Metric):
    """Mean over classes of |pred ∩ true| / |pred ∪ true|, from a confusion matrix."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        self.sparse_y_true, self.sparse_y_pred, self.axis = sparse_y_true, sparse_y_pred, axis
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        shape=(self.num_classes, self.num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self.sparse_y_true:
            y_true = tf.argmax(y_true, self.axis)
        if not self.sparse_y_pred:
            y_pred = tf.argmax(y_pred, self.axis)
        true_hot = tf.one_hot(tf.cast(tf.reshape(y_true, [-1]), tf.int32), self.num_classes)
        pred_hot = tf.one_hot(tf.cast(tf.reshape(y_pred, [-1]), tf.int32), self.num_classes)
        if sample_weight is not None:
            true_hot = true_hot * tf.reshape(tf.cast(sample_weight, K.floatx()), [-1, 1])
        return self.total_cm.assign_add(tf.matmul(true_hot, pred_hot, transpose_a=True),
                                        read_value=False)

    def result(self):
        cm = self.total_cm.read_value()
        rows, cols = tf.reduce_sum(cm, 1), tf.reduce_sum(cm, 0)
        diag = tf.diag_part(cm)
        denominator = rows + cols - diag
        present = tf.reduce_sum(tf.cast(tf.not_equal(denominator, 0.0), K.floatx()))
        return tf.div_no_nan(tf.reduce_sum(tf.div_no_nan(diag, denominator)), present)

    def get_config(self):
        return {"num_classes": self.num_classes, **super().get_config()}


_FUNCTIONS = {fn.__name__: fn for fn in (binary_accuracy, categorical_accuracy,
                                         sparse_categorical_accuracy,
                                         top_k_categorical_accuracy,
                                         sparse_top_k_categorical_accuracy)}
_CLASSES = {cls.__name__: cls for cls in (
    Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError,
    BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Precision,
    Recall, AUC, MeanIoU)}


@tf_export("keras.metrics.serialize")
def serialize(metric):
    if isinstance(metric, Metric):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    return getattr(metric, "__name__", str(metric))


@tf_export("keras.metrics.deserialize")
def deserialize(config, custom_objects=None):
    objects = dict(losses_module._FUNCTIONS)
    objects.update(losses_module._ALIASES)
    objects.update(_FUNCTIONS)
    objects.update(_CLASSES)
    return deserialize_keras_object(config, objects, custom_objects,
                                    printable_module_name="metric function")


@tf_export("keras.metrics.get")
def get(identifier):
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier}")
