"""tf.keras.losses: per-sample loss functions and the Loss classes that reduce them.

A loss function maps (y_true, y_pred) to one value per sample (the last axis reduced); a Loss
object weights those by `sample_weight` and reduces them, by default to their sum over the
batch size ("sum_over_batch_size"), as Keras does.
"""

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export


def match_ranks(y_true, y_pred):
    """Keras's squeeze_or_expand: labels of shape (n,) against predictions of shape (n, 1)
    gain an axis; labels of shape (n, 1) against predictions of shape (n,) lose one."""
    true_rank, pred_rank = y_true.shape.ndims, y_pred.shape.ndims
    if true_rank is None or pred_rank is None:
        return y_true, y_pred
    if true_rank == pred_rank - 1 and y_pred.shape.as_list()[-1] == 1:
        y_true = tf.expand_dims(y_true, -1)
    elif pred_rank == true_rank - 1 and y_true.shape.as_list()[-1] == 1:
        y_true = tf.squeeze(y_true, [-1])
    return y_true, y_pred


def _prepare(y_true, y_pred):
    y_pred = tf.convert_to_tensor(y_pred)
    y_true = tf.cast(tf.convert_to_tensor(y_true), y_pred.dtype)
    return match_ranks(y_true, y_pred)


def _export(*names):
    return tf_export(*[f"keras.losses.{n}" for n in names],
                     *[f"keras.metrics.{n}" for n in names])


@_export("mean_squared_error", "mse", "MSE")
def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.square(y_pred - y_true), axis=-1)


@_export("mean_absolute_error", "mae", "MAE")
def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.abs(y_pred - y_true), axis=-1)


@_export("mean_absolute_percentage_error", "mape", "MAPE")
def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = tf.abs((y_true - y_pred) / tf.maximum(tf.abs(y_true), K.epsilon()))
    return 100.0 * tf.reduce_mean(diff, axis=-1)


@_export("mean_squared_logarithmic_error", "msle", "MSLE")
def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    first = tf.log(tf.maximum(y_pred, K.epsilon()) + 1.0)
    second = tf.log(tf.maximum(y_true, K.epsilon()) + 1.0)
    return tf.reduce_mean(tf.square(first - second), axis=-1)


@_export("binary_crossentropy")
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y_true,
                                                                      logits=y_pred), axis=axis)
    eps = K.epsilon()
    y_pred = tf.clip_by_value(y_pred, eps, 1.0 - eps)
    bce = y_true * tf.log(y_pred + eps) + (1.0 - y_true) * tf.log(1.0 - y_pred + eps)
    return tf.reduce_mean(-bce, axis=axis)


@_export("categorical_crossentropy")
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        classes = tf.cast(tf.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=y_pred,
                                                          axis=axis)
    y_pred = y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True)
    y_pred = tf.clip_by_value(y_pred, K.epsilon(), 1.0 - K.epsilon())
    return -tf.reduce_sum(y_true * tf.log(y_pred), axis=axis)


@_export("sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1,
                                    ignore_class=None):
    y_pred = tf.convert_to_tensor(y_pred)
    y_true = tf.convert_to_tensor(y_true)
    if y_true.shape.ndims is not None and y_true.shape.ndims == y_pred.shape.ndims:
        y_true = tf.squeeze(y_true, [-1])
    labels = tf.cast(y_true, tf.int64)
    logits = y_pred
    if not from_logits:
        probs = tf.clip_by_value(y_pred, K.epsilon(), 1.0 - K.epsilon())
        logits = tf.log(probs)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


@_export("kl_divergence", "kullback_leibler_divergence", "kld", "KLD")
def kl_divergence(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = tf.clip_by_value(y_true, K.epsilon(), 1.0)
    y_pred = tf.clip_by_value(y_pred, K.epsilon(), 1.0)
    return tf.reduce_sum(y_true * tf.log(y_true / y_pred), axis=-1)


@_export("hinge")
def hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


@_export("poisson")
def poisson(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(y_pred - y_true * tf.log(y_pred + K.epsilon()), axis=-1)


@_export("cosine_similarity")
def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = tf.nn.l2_normalize(y_true, axis=axis)
    y_pred = tf.nn.l2_normalize(y_pred, axis=axis)
    return -tf.reduce_sum(y_true * y_pred, axis=axis)


@tf_export("keras.losses.huber", "keras.losses.huber_loss")
def huber(y_true, y_pred, delta=1.0):
    y_true, y_pred = _prepare(y_true, y_pred)
    error = y_pred - y_true
    abs_error = tf.abs(error)
    quadratic = tf.minimum(abs_error, delta)
    linear = abs_error - quadratic
    return tf.reduce_mean(0.5 * tf.square(quadratic) + delta * linear, axis=-1)


@tf_export("keras.losses.log_cosh", "keras.losses.logcosh")
def log_cosh(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    x = y_pred - y_true
    return tf.reduce_mean(x + tf.nn.softplus(-2.0 * x) - tf.log(2.0), axis=-1)


# --- Loss objects --------------------------------------------------------------------------
@tf_export("keras.losses.Reduction")
class Reduction:
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)


def reduce_weighted(losses, sample_weight, reduction):
    """Weights per-sample losses and reduces them as `reduction` says."""
    if sample_weight is not None:
        sample_weight = tf.cast(sample_weight, losses.dtype)
        if sample_weight.shape.ndims is not None and losses.shape.ndims is not None:
            while sample_weight.shape.ndims > losses.shape.ndims:
                sample_weight = tf.squeeze(sample_weight, [-1])
        losses = losses * sample_weight
    if reduction == Reduction.NONE:
        return losses
    total = tf.reduce_sum(losses)
    if reduction == Reduction.SUM:
        return total
    return total / tf.cast(tf.size(losses), losses.dtype)


@tf_export("keras.losses.Loss")
class Loss:
    def __init__(self, reduction=Reduction.AUTO, name=None):
        if reduction not in Reduction.all():
            raise ValueError(f"Invalid Reduction Key: {reduction}. Expected keys are "
                             f"\"{Reduction.all()}\"")
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        with tf.name_scope(self.name or type(self).__name__):
            losses = self.call(y_true, y_pred)
            reduction = Reduction.SUM_OVER_BATCH_SIZE if self.reduction == Reduction.AUTO \
                else self.reduction
            return reduce_weighted(losses, sample_weight, reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError("Must be implemented in subclasses.")

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("keras.losses.LossFunctionWrapper")
class LossFunctionWrapper(Loss):
    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = dict(self._fn_kwargs)
        config.update(super().get_config())
        return config


def _loss_class(class_name, fn, default_name, **defaults):
    def __init__(self, *args, reduction=Reduction.AUTO, name=default_name, **kwargs):
        options = dict(defaults)
        for key, value in zip(defaults, args):
            options[key] = value
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{class_name}.__init__() got an unexpected keyword argument "
                            f"'{sorted(unknown)[0]}'")
        options.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, **options)

    def from_config(cls, config):
        return cls(**config)

    cls = type(class_name, (LossFunctionWrapper,),
               {"__init__": __init__, "from_config": classmethod(from_config),
                "__module__": __name__})
    return tf_export(f"keras.losses.{class_name}")(cls)


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error,
                                "mean_absolute_error")
MeanAbsolutePercentageError = _loss_class("MeanAbsolutePercentageError",
                                          mean_absolute_percentage_error,
                                          "mean_absolute_percentage_error")
MeanSquaredLogarithmicError = _loss_class("MeanSquaredLogarithmicError",
                                          mean_squared_logarithmic_error,
                                          "mean_squared_logarithmic_error")
BinaryCrossentropy = _loss_class("BinaryCrossentropy", binary_crossentropy,
                                 "binary_crossentropy", from_logits=False,
                                 label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = _loss_class("CategoricalCrossentropy", categorical_crossentropy,
                                      "categorical_crossentropy", from_logits=False,
                                      label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _loss_class("SparseCategoricalCrossentropy",
                                            sparse_categorical_crossentropy,
                                            "sparse_categorical_crossentropy",
                                            from_logits=False)
KLDivergence = _loss_class("KLDivergence", kl_divergence, "kl_divergence")
Huber = _loss_class("Huber", huber, "huber_loss", delta=1.0)
Hinge = _loss_class("Hinge", hinge, "hinge")
Poisson = _loss_class("Poisson", poisson, "poisson")
LogCosh = _loss_class("LogCosh", log_cosh, "log_cosh")
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, "cosine_similarity",
                               axis=-1)

_FUNCTIONS = {fn.__name__: fn for fn in (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, binary_crossentropy, categorical_crossentropy,
    sparse_categorical_crossentropy, kl_divergence, hinge, poisson, cosine_similarity, huber,
    log_cosh)}
_ALIASES = {"mse": mean_squared_error, "MSE": mean_squared_error, "mae": mean_absolute_error,
            "MAE": mean_absolute_error, "mape": mean_absolute_percentage_error,
            "MAPE": mean_absolute_percentage_error, "msle": mean_squared_logarithmic_error,
            "MSLE": mean_squared_logarithmic_error, "kld": kl_divergence, "KLD": kl_divergence,
            "kullback_leibler_divergence": kl_divergence, "huber_loss": huber,
            "logcosh": log_cosh}
_CLASSES = {cls.__name__: cls for cls in (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, BinaryCrossentropy, CategoricalCrossentropy,
    SparseCategoricalCrossentropy, KLDivergence, Huber, Hinge, Poisson, LogCosh,
    CosineSimilarity)}


@tf_export("keras.losses.serialize")
def serialize(loss):
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return getattr(loss, "__name__", str(loss))


@tf_export("keras.losses.deserialize")
def deserialize(name, custom_objects=None):
    objects = dict(_FUNCTIONS)
    objects.update(_ALIASES)
    objects.update(_CLASSES)
    return deserialize_keras_object(name, objects, custom_objects,
                                    printable_module_name="loss function")


@tf_export("keras.losses.get")
def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier}")
